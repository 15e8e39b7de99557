# cmake -DDOXYGEN=... -DDOXYFILE=... -DOUT=... -P run-doxygen.cmake
# Builds the API reference and fails on any Doxygen warning or error, and if
# the main page or a header's page is missing from the output.
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
execute_process(COMMAND "${DOXYGEN}" "${DOXYFILE}"
  WORKING_DIRECTORY "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
  message(FATAL_ERROR "doxygen failed (exit ${rc}):\n${out}\n${err}")
endif()
foreach(page index.html plugin_8h.html session_8h.html event_8h.html)
  if(NOT EXISTS "${OUT}/html/${page}")
    message(FATAL_ERROR "doxygen produced no html/${page}")
  endif()
endforeach()
message(STATUS "API reference built without warnings in ${OUT}/html")
