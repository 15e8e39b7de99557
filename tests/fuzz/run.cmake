# Runs one fuzz target for a bounded time from a fresh work corpus and the
# seed corpus; fails on any finding (crash, leak, abort, sanitizer report).
#   cmake -DFUZZER=... -DWORK=... -DSEEDS=... -DSECONDS=... -DARTIFACTS=... -P run.cmake
if(NOT EXISTS ${FUZZER})
  message(FATAL_ERROR "${FUZZER} was not built (cmake --build . --target ptk_fuzz_targets)")
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=LD_PRELOAD
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
    LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan.supp
    ${FUZZER} -max_total_time=${SECONDS} -max_len=4096 -print_final_stats=1
    -artifact_prefix=${ARTIFACTS} ${WORK} ${SEEDS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" execs "${err}")
string(REGEX MATCH "stat::new_units_added: *[0-9]+" added "${err}")
message(STATUS "${FUZZER}: ${execs}, ${added}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the fuzz target found a problem (exit ${rc}); the input is "
    "saved as ${ARTIFACTS}*\n${err}")
endif()
