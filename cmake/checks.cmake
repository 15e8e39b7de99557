# Features of the Python being built against, decided by compile checks
# (never by version numbers). Results go into lib/ptk_config.h.
include(CheckCSourceCompiles)
include(${CMAKE_CURRENT_LIST_DIR}/gil.cmake)
ptk_require_gil("${Python3_INCLUDE_DIRS}" "${Python3_EXECUTABLE}")

set(CMAKE_REQUIRED_INCLUDES ${Python3_INCLUDE_DIRS})
set(CMAKE_REQUIRED_LIBRARIES Python3::Python)
set(CMAKE_REQUIRED_QUIET ON)

macro(ptk_check var body)
  check_c_source_compiles("#define PY_SSIZE_T_CLEAN\n#include <Python.h>\nint main(void) { ${body}; return 0; }" ${var})
  message(STATUS "pytracekit: ${var} = ${${var}}")
endmacro()

ptk_check(PTK_HAVE_SETPROFILE_ALLTHREADS "PyEval_SetProfileAllThreads(NULL, NULL); PyEval_SetTraceAllThreads(NULL, NULL)")
ptk_check(PTK_HAVE_PRIVATE_SETPROFILE_TSTATE "_PyEval_SetProfile(NULL, NULL, NULL); _PyEval_SetTrace(NULL, NULL, NULL)")
ptk_check(PTK_HAVE_REFTRACER "void *d; PyRefTracer t = PyRefTracer_GetTracer(&d); PyRefTracer_SetTracer(t, d); (void)PyRefTracer_CREATE; (void)PyRefTracer_DESTROY")
ptk_check(PTK_HAVE_REFTRACER_TRACKER_REMOVED "int e = PyRefTracer_TRACKER_REMOVED; (void)e")
ptk_check(PTK_HAVE_UNSTABLE_CODE_EXTRA "void *x; PyUnstable_Eval_RequestCodeExtraIndex(NULL); PyUnstable_Code_GetExtra(NULL, 0, &x)")
# The calling thread's thread state, NULL without an error when it has none
# (3.13+). 3.15 imports site (and so a followed child's sitecustomize)
# before Py_IsInitialized() says 1: lib/session/life.c also takes a thread state as
# proof that Python runs. Without it, Py_IsInitialized() alone (before 3.15
# it is 1 by then).
ptk_check(PTK_HAVE_THREADSTATE_GETUNCHECKED "PyThreadState *t = PyThreadState_GetUnchecked(); (void)t")
ptk_check(PTK_HAVE_ENTER_TRACING "PyThreadState_EnterTracing(NULL); PyThreadState_LeaveTracing(NULL)")
ptk_check(PTK_HAVE_GETEXCEPTION "PyObject *e = PyErr_GetRaisedException(); PyErr_SetRaisedException(e)")
ptk_check(PTK_HAVE_TSTATE_CURRENT_EXCEPTION "PyThreadState *t = PyThreadState_Get(); (void)t->current_exception")
# sys.monitoring (PEP 669): code objects carry its instrumentation state.
# The running interpreter frame, readable without making a frame object.
ptk_check(PTK_HAVE_TSTATE_CURRENT_FRAME "struct _PyInterpreterFrame *f = PyThreadState_Get()->current_frame; (void)PyUnstable_InterpreterFrame_GetLasti(f)")
ptk_check(PTK_HAVE_TSTATE_CFRAME "struct _PyInterpreterFrame *f = PyThreadState_Get()->cframe->current_frame; (void)PyUnstable_InterpreterFrame_GetLasti(f)")
# Reading a small int without a call (3.12+).
ptk_check(PTK_HAVE_LONG_COMPACT "PyLongObject *o = (PyLongObject *)PyLong_FromLong(1); long v = PyUnstable_Long_IsCompact(o) ? (long)PyUnstable_Long_CompactValue(o) : 0; (void)v")
# Tracing is a check of the thread's c_tracefunc at every instruction
# (cframe->use_tracing, before 3.12): lib/backends/legacy.c can park the trace
# function while code no filter selects runs. Later versions instrument
# the code instead.
ptk_check(PTK_HAVE_CFRAME_USE_TRACING "PyThreadState *t = PyThreadState_Get(); (void)t->cframe->use_tracing")
# sys.monitoring (PEP 669). The monitoring backend (lib/backends/monitoring.c) uses
# it only through its Python API and public C API, and is always compiled;
# whether it can run is decided by behaviour, when a session starts. No
# public macro says an interpreter has sys.monitoring (the private
# _PY_MONITORING_EVENTS checked here before is gone from 3.14), so the
# interpreter being built against is asked here the question the backend
# asks at start (cmake/monitoring_probe.py mirrors mon_init()): the build
# registers the NAME@monitoring tests where it says yes.
execute_process(COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/monitoring_probe.py
  RESULT_VARIABLE _ptk_mon_rc OUTPUT_VARIABLE _ptk_mon_out ERROR_VARIABLE _ptk_mon_out
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
if(_ptk_mon_rc EQUAL 0)
  set(PTK_HAVE_SYS_MONITORING 1)
else()
  set(PTK_HAVE_SYS_MONITORING "")
  message(STATUS "pytracekit: no monitoring backend: ${_ptk_mon_out}")
endif()
message(STATUS "pytracekit: PTK_HAVE_SYS_MONITORING = ${PTK_HAVE_SYS_MONITORING}")
# The interpreter's frame evaluation hook (PEP 523) and the internal frame
# it is handed (its code object and globals): lib/backends/frame_hook.c. With
# PTK_HAVE_CFRAME_USE_TRACING, the legacy backend runs code no filter
# selects with both of the thread's hooks empty (docs/backends.md).
check_c_source_compiles("#define Py_BUILD_CORE 1
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <internal/pycore_frame.h>
static PyObject *h(PyThreadState *t, struct _PyInterpreterFrame *f, int x) {
  PyCodeObject *c = f->f_code; PyObject *g = f->f_globals; (void)c; (void)g;
  return _PyEval_EvalFrameDefault(t, f, x); }
int main(void) {
  PyInterpreterState *i = PyInterpreterState_Get();
  _PyInterpreterState_SetEvalFrameFunc(i, h);
  return _PyInterpreterState_GetEvalFrameFunc(i) == h; }" PTK_HAVE_FRAME_HOOK)
message(STATUS "pytracekit: PTK_HAVE_FRAME_HOOK = ${PTK_HAVE_FRAME_HOOK}")

# The time-stamp counter and CPUID (x86-64 with GCC or Clang): the hub's
# clock reads the TSC where it is invariant and cheaper than clock_gettime
# (lib/core/clock.c); elsewhere it reads clock_gettime.
check_c_source_compiles("#include <x86intrin.h>
#include <cpuid.h>
#include <stdatomic.h>
int main(void) {
  unsigned int a, b, c, d;
  _Atomic unsigned long long x = 0;
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0) { return 1; }
  unsigned long long t = __rdtsc();
  unsigned __int128 p = (unsigned __int128)t * t;
  atomic_store_explicit(&x, (unsigned long long)(p >> 64), memory_order_release);
  return (int)atomic_load_explicit(&x, memory_order_acquire) & (int)(d >> 8) & 1; }" PTK_HAVE_RDTSC)
message(STATUS "pytracekit: PTK_HAVE_RDTSC = ${PTK_HAVE_RDTSC}")

unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_LIBRARIES)
