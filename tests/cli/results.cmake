# The results' JSON (docs/results.md): every subcommand's --json and a study's summary.json of one form,
# schema_version 2 (tables as name+unit columns and rows of cells; no unit inside a key).
add_test(NAME cli.results_form COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/results_form.py ${WAFER_EMU} ${OUT}/results_form)
set_tests_properties(cli.results_form PROPERTIES TIMEOUT 600)
