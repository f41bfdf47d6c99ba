# The results' JSON (docs/results.md): every subcommand's --json and a study's summary.json of one form,
# schema_version 2 (tables as name+unit columns and rows of cells; no unit inside a key).
add_test(NAME cli.results_form COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/results_form.py ${WAFER_EMU} ${OUT}/results_form)
set_tests_properties(cli.results_form PROPERTIES TIMEOUT 600)

# An output named as a stream (/dev/stdout into a pipe or a file, a FIFO, /dev/fd/N) is written to it and one through a
# symbolic link through the link: nothing renamed over them, no journal, temporary file or CSV put in /dev.
# Inputs that are not files: a pipe read, one nothing is written to and a device refused in one line (cli.stream_inputs).
add_test(NAME cli.stream_inputs COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/stream_in_check.py ${WAFER_EMU} ${OUT}/stream_inputs)
add_test(NAME cli.stream_outputs COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/stream_out_check.py ${WAFER_EMU} ${OUT}/stream_outputs)

# An output that names an input or another output (through links or "..") is refused before any work, one line naming
# both options, the file left as it was; streams may be shared (apps::check_apart).
add_test(NAME cli.paths_apart COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/paths_apart_check.py ${WAFER_EMU} ${OUT}/paths_apart)
