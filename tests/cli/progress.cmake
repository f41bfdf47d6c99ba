# decode's progress line on a terminal (apps::TaskProgress): each case runs `decode` with stderr on a
# pseudo-terminal (the line drawn from the start) and on a pipe (no line), and checks that the line counts
# every task of the step, copies and reused wafers included, and that the results are the same
# (progress_check.py).
set(PROGRESS_CHECK python3 ${CMAKE_CURRENT_SOURCE_DIR}/progress_check.py ${WAFER_EMU} ${OUT}/progress)
function(progress_test name)
  add_test(NAME cli.progress_${name} COMMAND ${PROGRESS_CHECK} ${name} -- ${ARGN})
endfunction()
# Every task emulated.
progress_test(tiny --wafer tiny --model tiny-llama --context 64 --no-reuse)
# A pipeline whose middle wafers are reused from another (their tasks told at once).
progress_test(tiny_wafers4 --wafer tiny --model tiny-llama --context 64 --wafers 4)
# Reuse in time (a jump copies layers on the same tiles) and in space (bands copied).
progress_test(small_square --wafer small --model ${DATA}/reuse_small_8_layers.json --context 512 --placement square
  --kernel meshgemv)
progress_test(small40_bands --wafer small --model ${DATA}/reuse_small_40_layers.json --context 512)
# The search's candidates, emulated together under one line.
progress_test(tiny_auto --wafer tiny --model tiny-llama --context 64 --placement auto)
# A delay that is not a number of seconds is an error naming the variable, on a terminal or not.
wafer_cli_test(progress_variable --exit 2 --one-line-error
  --stderr "WAFER_EMU_PROGRESS_AFTER 'soon' is not a number of seconds from 0 to 1e6"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64)
set_tests_properties(cli.progress_variable PROPERTIES ENVIRONMENT "WAFER_EMU_PROGRESS_AFTER=soon")
# A prefill in chunks: one line, its words and count renewed chunk by chunk, ending with the last chunk's.
progress_test(tiny_prefill_chunks --wafer tiny --model tiny-llama --context 64 --prefill 16 --chunk 4)
