# cmake -DPTK_SOURCE_DIR=... -DWORK=... -DFREE_THREADED=ON|OFF -P check.cmake
# Writes stand-in Python headers (pyconfig.h defines Py_GIL_DISABLED when
# FREE_THREADED), configures tests/core/gil against them, and checks that a
# free-threaded build is refused with the message and a default one passes.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/include)
if(FREE_THREADED)
  file(WRITE ${WORK}/include/pyconfig.h "#define Py_GIL_DISABLED 1\n")
else()
  file(WRITE ${WORK}/include/pyconfig.h "/* default build */\n")
endif()
file(WRITE ${WORK}/include/Python.h "#include \"pyconfig.h\"\n")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${PTK_SOURCE_DIR}/tests/core/gil -B ${WORK}/build
    -DPTK_SOURCE_DIR=${PTK_SOURCE_DIR} -DFAKE_INCLUDE=${WORK}/include
    -DFAKE_NAME=python3.13t
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \n]+" " " all "${out} ${err}")
if(FREE_THREADED)
  if(rc EQUAL 0)
    message(FATAL_ERROR "a free-threaded Python was accepted:\n${out}\n${err}")
  endif()
  foreach(needle "python3.13t is a free-threaded build of CPython"
                 "(its headers define Py_GIL_DISABLED)"
                 "does not support free-threaded CPython yet")
    string(FIND "${all}" "${needle}" at)
    if(at LESS 0)
      message(FATAL_ERROR "the refusal does not say '${needle}':\n${out}\n${err}")
    endif()
  endforeach()
else()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "a default Python was refused:\n${out}\n${err}")
  endif()
  string(FIND "${all}" "has the GIL" at)
  if(at LESS 0)
    message(FATAL_ERROR "no status line:\n${out}\n${err}")
  endif()
endif()
message(STATUS "ok")
