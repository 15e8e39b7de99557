# The loader, the options, failure containment and the pytracekit command
# (included from tests/core/CMakeLists.txt). One CTest test per case.
foreach(case enoent_path enoent_name enoent_empty_options notso_path notso_name
             notso_empty notso_dir noentry null_entry abi_major abi_minor
             struct_size struct_size_tiny mask_no_on_event mask_ref_no_on_ref
             ref_unavailable mask_unknown_bit no_name option_unknown option_int
             option_int_no_value option_bool option_choice option_double
             option_quote options_valid init_fails init_raises init_widens_mask
             second_plugin_rejected module_codes)
  ptk_add_python_test(NAME core.loader.reject.${case} SCRIPT loader/test_reject.py ARGS ${case})
endforeach()
foreach(case not_in_cwd env_relative_ignored env_path cli_path order skip_non_files
             by_path default_counter)
  ptk_add_python_test(NAME core.loader.search.${case} SCRIPT loader/test_search.py ARGS ${case})
endforeach()
foreach(case nth_error nth_error_first nth_error_call nth_python nth_python_first
             nth_pycode nth_leak report_fails unwind_python unwind_leak unwind_error
             unwind_pycode exception_python exception_leak module_session)
  ptk_add_python_test(NAME core.loader.fail.${case} SCRIPT loader/test_fail.py ARGS ${case})
endforeach()
