# How the `pytracekit` command links libpython.
#
# The command embeds the interpreter. When the interpreter's own executable
# has libpython linked in statically (Debian's /usr/bin/python3), linking the
# command against the shared libpython instead runs the traced program on a
# slower build of the same interpreter: every call between libpython's
# functions through the PLT, every thread-state read through __tls_get_addr.
# On Debian's 3.11 that was 0.3-0.4x of a bare run more than the same plugin
# inside /usr/bin/python3 (bench/README.md, coverage). So the command links the
# static library the interpreter itself was linked from, when there is one.
#
#   PTK_STATIC_LIBPYTHON=AUTO  static when the interpreter is a static build
#                              and its libpythonX.Y.a links and runs (default)
#   PTK_STATIC_LIBPYTHON=ON    static, or a configure error saying why not
#   PTK_STATIC_LIBPYTHON=OFF   the shared libpython (Python3::Python)
#
# Sets PTK_LIBPYTHON_STATIC (TRUE/FALSE); ptk_link_libpython(target) links
# a target that embeds the interpreter the chosen way.
set(PTK_STATIC_LIBPYTHON AUTO CACHE STRING
  "Link the pytracekit command against a static libpython: AUTO, ON or OFF")
set_property(CACHE PTK_STATIC_LIBPYTHON PROPERTY STRINGS AUTO ON OFF)

set(PTK_LIBPYTHON_STATIC FALSE)
set(_ptk_why "")
set(_ptk_kind "")
if(PTK_STATIC_LIBPYTHON STREQUAL "OFF")
  set(_ptk_why "PTK_STATIC_LIBPYTHON=OFF")
elseif(PTK_SANITIZE)
  set(_ptk_why "sanitizer build")
else()
  # Is libpython a shared object mapped into the interpreter's own process?
  # (sysconfig cannot tell: Debian's Py_ENABLE_SHARED describes its
  # libpython.so, not its statically linked python3.)
  execute_process(COMMAND ${PTK_PYTHON_EXECUTABLE} -c [=[
import os, sys, sysconfig
shared = any("libpython" in l for l in open("/proc/self/maps"))
lib = os.path.join(sysconfig.get_config_var("LIBPL") or "",
                   sysconfig.get_config_var("LIBRARY") or "")
libs = " ".join(sysconfig.get_config_var(k) or "" for k in ("MODLIBS", "LIBS", "SYSLIBS"))
print("shared" if shared else "static")
print(lib)
print(libs)
]=]
    OUTPUT_VARIABLE _ptk_out RESULT_VARIABLE _ptk_rc ERROR_QUIET)
  string(REPLACE "\n" ";" _ptk_lines "${_ptk_out}")
  list(LENGTH _ptk_lines _ptk_n)
  if(NOT _ptk_rc EQUAL 0 OR _ptk_n LESS 3)
    set(_ptk_why "could not ask the interpreter (/proc/self/maps, sysconfig)")
  else()
    list(GET _ptk_lines 0 _ptk_kind)
    list(GET _ptk_lines 1 _ptk_archive)
    list(GET _ptk_lines 2 _ptk_syslibs)
    separate_arguments(_ptk_syslibs UNIX_COMMAND "${_ptk_syslibs}")
    if(_ptk_kind STREQUAL "shared")
      set(_ptk_why "the interpreter itself runs on the shared libpython")
    elseif(NOT _ptk_archive MATCHES "\\.a$" OR NOT EXISTS "${_ptk_archive}")
      set(_ptk_why "no static libpython (${_ptk_archive})")
    else()
      # Links and runs? Every object of the archive (extension modules and
      # plugins use what the command itself does not), symbols exported to
      # them, and no PIE: such archives are not built position-independent.
      set(_ptk_static_link
        -no-pie "-Wl,--whole-archive" "${_ptk_archive}" "-Wl,--no-whole-archive"
        "-Wl,--export-dynamic" ${_ptk_syslibs})
      set(_ptk_src ${CMAKE_BINARY_DIR}/CMakeFiles/ptk_static_libpython.c)
      file(WRITE ${_ptk_src} [=[
#include <Python.h>
int main(void)
{
    Py_Initialize();
    int rc = PyRun_SimpleString("import math, _json; assert math.sqrt(4.0) == 2.0");
    return Py_FinalizeEx() < 0 ? 1 : rc != 0;
}
]=])
      try_run(_ptk_run_rc _ptk_compile_ok ${CMAKE_BINARY_DIR}/ptk_static_libpython
        ${_ptk_src}
        CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${Python3_INCLUDE_DIRS}"
                    "-DCMAKE_POSITION_INDEPENDENT_CODE=OFF"
        COMPILE_DEFINITIONS -fno-pie
        LINK_LIBRARIES ${_ptk_static_link}
        COMPILE_OUTPUT_VARIABLE _ptk_log RUN_OUTPUT_VARIABLE _ptk_run_log)
      if(NOT _ptk_compile_ok)
        set(_ptk_why "linking ${_ptk_archive} failed")
      elseif(NOT _ptk_run_rc EQUAL 0)
        set(_ptk_why "a program linked with ${_ptk_archive} did not run: ${_ptk_run_log}")
      else()
        set(PTK_LIBPYTHON_STATIC TRUE)
      endif()
    endif()
  endif()
endif()

# The interpreter's executable has libpython linked in, and the command
# could not do the same: the command then runs programs by that executable
# (its start-up hook: tools/pytracekit.c, docs/building.md) instead of the
# embedded, slower shared libpython. PTK_EXEC_INTERPRETER (0/1) is the
# command's default.
set(PTK_EXEC_INTERPRETER 0)
if(NOT PTK_LIBPYTHON_STATIC AND _ptk_kind STREQUAL "static")
  set(PTK_EXEC_INTERPRETER 1)
  message(STATUS "pytracekit: the command runs programs by ${PTK_PYTHON_EXECUTABLE} itself (statically linked; the shared libpython is slower)")
endif()

if(PTK_LIBPYTHON_STATIC)
  set(PTK_LIBPYTHON_STATIC_LINK ${_ptk_static_link})
  message(STATUS "pytracekit: the command links ${_ptk_archive} (as the interpreter does)")
else()
  if(PTK_STATIC_LIBPYTHON STREQUAL "ON")
    message(FATAL_ERROR "PTK_STATIC_LIBPYTHON=ON, but: ${_ptk_why}")
  endif()
  message(STATUS "pytracekit: the command links the shared libpython (${_ptk_why})")
endif()

function(ptk_link_libpython target)
  if(PTK_LIBPYTHON_STATIC)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(${target} PRIVATE -fno-pie)
    target_include_directories(${target} PRIVATE ${Python3_INCLUDE_DIRS})
    target_link_libraries(${target} PRIVATE ${PTK_LIBPYTHON_STATIC_LINK})
  else()
    target_link_libraries(${target} PRIVATE Python3::Python)
  endif()
endfunction()
