# The loader, the options, failure containment and the pytracekit command
# (included from tests/core/CMakeLists.txt). One CTest test per case.
foreach(case enoent_path enoent_name enoent_empty_options notso_path notso_name
             notso_empty notso_dir notso_truncated noentry null_entry abi_major abi_minor
             struct_size struct_size_tiny mask_no_on_event mask_ref_no_on_ref
             ref_unavailable mask_unknown_bit no_name option_unknown option_int
             option_int_no_value option_bool option_choice option_double
             option_quote option_after_quote options_valid option_value_with_slash init_fails init_raises init_widens_mask
             second_plugin_rejected module_codes)
  ptk_add_python_test(NAME core.loader.reject.${case} SCRIPT loader/test_reject.py ARGS ${case})
endforeach()
foreach(case not_in_cwd env_relative_ignored env_path cli_path order skip_non_files
             by_path default_counter inside_prefix)
  ptk_add_python_test(NAME core.loader.search.${case} SCRIPT loader/test_search.py ARGS ${case})
endforeach()
foreach(case nth_error nth_error_first nth_error_call nth_python nth_python_first
             nth_pycode nth_leak report_fails report_fails_status unwind_python unwind_leak unwind_error
             unwind_pycode exception_python exception_leak c_exception_python
             c_exception_error in_a_thread two_sessions module_session)
  ptk_add_python_test(NAME core.loader.fail.${case} SCRIPT loader/test_fail.py ARGS ${case})
endforeach()
foreach(case exit_status exit_message uncaught uncaught_in_code keyboard_interrupt_raised
             keyboard_interrupt_signal script_form script_elsewhere script_after_dashdash
             script_named_like_option
             module_form package_main_form code_form stdin_form missing_script
             missing_module program_output_unchanged hub_work_not_traced launcher_not_traced
             os_exit_in_atexit os_exit_direct_and_child own_hook_noted launch_modes
             runner_not_traced_exec start_error_exec)
  ptk_add_python_test(NAME core.loader.program.${case} SCRIPT loader/test_program.py ARGS ${case})
endforeach()
foreach(case unknown_option threads_bogus threads_valid backend_bogus backend_valid no_program missing_value
             list_plugins list_plugins_paths version help_text)
  ptk_add_python_test(NAME core.loader.usage.${case} SCRIPT loader/test_usage.py ARGS ${case})
endforeach()
foreach(case under_a_file in_proc passes_access_but_unwritable too_long_cleaned
             two_instances_one_file is_a_file read_only_dir nested_created
             relative_fixed_at_start atomic_reports report_mode)
  ptk_add_python_test(NAME core.loader.outdir.${case} SCRIPT loader/test_outdir.py ARGS ${case})
endforeach()

