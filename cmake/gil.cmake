# Free-threaded CPython (PEP 703: python3.13t and later, Py_GIL_DISABLED) is
# refused at configure time. The hub's dispatch depth, thread table and code
# records, and the plugins' tables, are guarded by the GIL; without it they
# would race. Decided by a compile check of the headers, not by a name.
include(CheckCSourceCompiles)

# Fails the configuration when the Python headers in `include_dirs` define
# Py_GIL_DISABLED. `what` names the interpreter in the message.
function(ptk_require_gil include_dirs what)
  set(CMAKE_REQUIRED_INCLUDES ${include_dirs})
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles("#include <Python.h>\nint main(void) { return 0; }"
    PTK_PYTHON_H_COMPILES)
  if(NOT PTK_PYTHON_H_COMPILES)
    message(FATAL_ERROR "pytracekit: cannot compile against the Python headers "
      "in ${include_dirs} (${what}): install the development headers of that Python")
  endif()
  check_c_source_compiles("#include <Python.h>\n#ifdef Py_GIL_DISABLED\n#error free-threaded\n#endif\nint main(void) { return 0; }"
    PTK_PYTHON_HAS_GIL)
  if(NOT PTK_PYTHON_HAS_GIL)
    message(FATAL_ERROR "pytracekit: ${what} is a free-threaded build of CPython "
      "(its headers define Py_GIL_DISABLED). pytracekit relies on the GIL (the hub's "
      "dispatch state, thread table and code records, and the plugins' tables) and does "
      "not support free-threaded CPython yet. Configure with a build that has the GIL, "
      "e.g. -DPython3_EXECUTABLE=/path/to/python3.13 instead of python3.13t "
      "(docs/building.md, \"Free-threaded CPython\").")
  endif()
  message(STATUS "pytracekit: ${what} has the GIL (Py_GIL_DISABLED not defined)")
endfunction()
