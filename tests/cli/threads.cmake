# Wafers of a pipeline emulated side by side (decode --threads N, sim::StepOptions::threads): each case runs
# with 1 and with N threads and compares the JSON results byte for byte but for the wall_time section, and
# checks how many wafers ran at once (threads_check.py), so a case that should run side by side and went back
# to one after the other fails.
set(THREADS_CHECK python3 ${CMAKE_CURRENT_SOURCE_DIR}/threads_check.py ${WAFER_EMU} ${OUT}/threads)
set(TINY_T --wafer tiny --model tiny-llama --context 64)
set(SMALL_T --wafer small --model ${DATA}/reuse_small_8_layers.json --context 512)
function(threads_test name n expect)
  add_test(NAME cli.threads_${name} COMMAND ${THREADS_CHECK} ${name} ${n} ${expect} -- ${ARGN})
endfunction()
# Two wafers (embedding, head): both at once. Four: the middle two run the same step, so wafers 0, 1 and 3
# are emulated, two at a time; three threads take all three.
threads_test(wafers2 2 2 ${TINY_T} --wafers 2)
threads_test(wafers4 2 2 ${TINY_T} --wafers 4)
threads_test(wafers4_3 3 3 ${TINY_T} --wafers 4)
threads_test(wafers4_no_reuse 2 2 ${TINY_T} --wafers 4 --no-reuse)
threads_test(wafers4_defects 2 2 ${TINY_T} --wafers 4 --density 20 --seed 3)
threads_test(wafers3_cycle 2 2 ${TINY_T} --wafers 3 --fidelity cycle)
# Layers copied within each wafer (reuse in space) while the wafers run side by side.
threads_test(small_wafers2 2 2 ${SMALL_T} --wafers 2)
threads_test(small_wafers2_square 2 2 ${SMALL_T} --wafers 2 --placement square)
threads_test(small_wafers3_batch2 2 2 ${SMALL_T} --wafers 3 --batch 2)
threads_test(small40_wafers5 2 2 --wafer small --model ${DATA}/reuse_small_40_layers.json --context 512 --wafers 5)
# The mapping search (--placement auto): the candidates it emulates run side by side (sim::Simulator::run_batch),
# the same table of candidates, the same choice, the same answer.
threads_test(auto 2 2 ${TINY_T} --placement auto)
threads_test(auto_defects 2 2 ${TINY_T} --placement auto --density 20 --seed 3)
threads_test(auto_wafers2 3 3 ${TINY_T} --placement auto --wafers 2)
threads_test(small_auto 2 2 ${SMALL_T} --placement auto)
# Without --threads (the CPUs the process may use, two on the CI machine): the candidates are mapped on two
# threads and emulated one at a time, each with the core to spare (its slots faulted in behind it, its region
# totals on two threads): the same answer as one thread.
threads_test(auto_default default 1 ${TINY_T} --placement auto)
threads_test(auto_defects_default default 1 ${TINY_T} --placement auto --density 20 --seed 3)
threads_test(small_auto_default default 1 ${SMALL_T} --placement auto)
# One after the other all the same: a trace keeps tiles wafer by wafer; streamed weights share the MemoryX
# port in simulated time (the 1B streams on small); one wafer has nothing to run beside it.
threads_test(wafers4_trace 2 1 ${TINY_T} --wafers 4 --trace TRACE)
threads_test(small_wafers2_stream 2 1 --wafer small --model llama-3.2-1b --context 512 --wafers 2 --weights stream)
threads_test(one_wafer 2 1 ${TINY_T})
wafer_cli_test(threads_zero --exit 2 --one-line-error --stderr "--threads 0 is outside" -- ${WAFER_EMU} decode ${TINY_T} --threads 0)
wafer_cli_test(threads_huge --exit 2 --one-line-error --stderr "--threads 5000 is outside" -- ${WAFER_EMU} decode ${TINY_T} --threads 5000)
# Wafers at once hold their task records at once: with memory for one wafer's records and not two
# (WAFER_EMU_MEMORY_MB; each wafer keeps 6-7 MiB, counted from its image by core::Executor::record_bytes, and
# the two 13-14 MiB together), one after the other, the same answer.
threads_test(small_wafers2_memory 2 1 ${SMALL_T} --wafers 2)
set_tests_properties(cli.threads_small_wafers2_memory PROPERTIES ENVIRONMENT WAFER_EMU_MEMORY_MB=9)
# What the search says of a candidate left out for memory names its task records, not what the machine has free
# (which changes from run to run): the same results with 8 and 16 MiB available (memory_note_check.py; the
# whole-wafer bands candidate keeps about 20 MB of records, the layer-bands ones 2-3 MB).
add_test(NAME cli.auto_memory_note COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/memory_note_check.py ${WAFER_EMU}
         ${OUT}/memory_note 8 16 -- ${SMALL_T} --placement auto)
