# wafer-emu table: every format parsed back and checked against the steps it came from (table_check.py),
# and every bad input as a one-line error naming the option, exit 2, and no folder left at --out. (An empty
# list is given as "," here: ctest drops empty arguments.)
add_test(NAME cli.table_check COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/table_check.py ${WAFER_EMU} ${OUT}/table_check)
set(TT --wafer tiny --model tiny-llama)
wafer_cli_test(table_contexts_empty --exit 2 --one-line-error --stderr "--contexts is empty" --no-file ${OUT}/tbad1
  -- ${WAFER_EMU} table ${TT} --contexts , --out ${OUT}/tbad1)
wafer_cli_test(table_contexts_unsorted --exit 2 --one-line-error --stderr "--contexts '64,32': values must be sorted increasing"
  --no-file ${OUT}/tbad2 -- ${WAFER_EMU} table ${TT} --contexts 64,32 --out ${OUT}/tbad2)
wafer_cli_test(table_batch_zero --exit 2 --one-line-error --stderr "--batches '0,1': 0 must be at least 1" --no-file ${OUT}/tbad3
  -- ${WAFER_EMU} table ${TT} --batches 0,1 --out ${OUT}/tbad3)
wafer_cli_test(table_tokens_beyond --exit 2 --one-line-error
  --stderr "--prefill-tokens: 1024 is beyond tiny-llama's max_position_embeddings 512" --no-file ${OUT}/tbad4
  -- ${WAFER_EMU} table ${TT} --contexts 32 --prefill-tokens 16,1024 --out ${OUT}/tbad4)
wafer_cli_test(table_not_a_number --exit 2 --one-line-error --stderr "--batches '1,x': 'x' is not an integer" --no-file ${OUT}/tbad5
  -- ${WAFER_EMU} table ${TT} --batches 1,x --out ${OUT}/tbad5)
wafer_cli_test(table_unwritable --exit 2 --one-line-error --stderr "--out /dev/null/tables: cannot create a folder"
  -- ${WAFER_EMU} table ${TT} --contexts 32 --batches 1 --prefill-tokens 4 --out /dev/null/tables)
# (checked before the points: it was one "not mapped" line per point, then the error)
wafer_cli_test(table_placement_unknown --exit 2 --one-line-error --stderr "unknown placement 'bogus'" --no-file ${OUT}/tbad9
  -- ${WAFER_EMU} table ${TT} --contexts 32,64 --batches 1,2 --prefill-tokens 4 --placement bogus --out ${OUT}/tbad9)
wafer_cli_test(table_out_huge --exit 2 --one-line-error --stderr "99999999999999999999 is out of range" --no-file ${OUT}/tbad10
  -- ${WAFER_EMU} table ${TT} --contexts 99999999999999999999 --out ${OUT}/tbad10)
# Prefill rows alone make no serving table (per_sequence.csv was empty, max_num_seqs 0, exit 0); the points' progress
# lines come first.
wafer_cli_test(table_no_decode_maps --exit 2 --stderr "error: no decode point of the grid maps .only prefill points do.: decode tokens 65536"
  --no-file ${OUT}/tbad11 -- ${WAFER_EMU} table ${TT} --contexts 32 --batches 65536 --prefill-tokens 4 --out ${OUT}/tbad11)
# --json over the journal beside --out (it broke the next run's resume), --json inside an --out not made yet (its
# reason, not a missing folder), --out a link to nothing.
wafer_cli_test(table_json_journal --exit 2 --one-line-error --stderr "names the file --out .its journal. writes"
  --no-file ${OUT}/tbad12 -- ${WAFER_EMU} table ${TT} --contexts 32 --batches 1 --prefill-tokens 4 --out ${OUT}/tbad12
  --json ${OUT}/.tbad12.partial.jsonl)
wafer_cli_test(table_json_inside_new_out --exit 2 --one-line-error --stderr "lies in --out" --no-file ${OUT}/tbad13
  -- ${WAFER_EMU} table ${TT} --contexts 32 --batches 1 --prefill-tokens 4 --out ${OUT}/tbad13 --json ${OUT}/tbad13/s.json)
# --wafers and --weights as decode takes them (cli.table_check runs both); out of range or unknown: one line.
wafer_cli_test(table_wafers_zero --exit 2 --one-line-error --stderr "--wafers 0: use 1 to 64" --no-file ${OUT}/tbad14
  -- ${WAFER_EMU} table ${TT} --contexts 32 --wafers 0 --out ${OUT}/tbad14)
wafer_cli_test(table_wafers_many --exit 2 --one-line-error --stderr "--wafers 65: use 1 to 64" --no-file ${OUT}/tbad15
  -- ${WAFER_EMU} table ${TT} --contexts 32 --wafers 65 --out ${OUT}/tbad15)
# (64 passes the option's check and meets the mapper's: tiny-llama has 4 stages)
wafer_cli_test(table_wafers_max --exit 2 --stderr "error: no point of the grid maps: .*64 wafers for 4 stages" --no-file ${OUT}/tbad17
  -- ${WAFER_EMU} table ${TT} --contexts 32 --batches 1 --prefill-tokens 4 --wafers 64 --out ${OUT}/tbad17)
wafer_cli_test(table_weights_unknown --exit 2 --one-line-error --stderr "weights" --no-file ${OUT}/tbad16
  -- ${WAFER_EMU} table ${TT} --contexts 32 --weights bogus --out ${OUT}/tbad16)
# --kv-capacity N|max: one number at least the grid's largest step holds, or max.
wafer_cli_test(table_kv_capacity_short --exit 2 --one-line-error --no-file ${OUT}/tbad18
  --stderr "--kv-capacity 100 is fewer positions than the grid's largest step holds .128 = batch 2 x context 64."
  -- ${WAFER_EMU} table ${TT} --contexts 32,64 --batches 1,2 --prefill-tokens 4 --kv-capacity 100 --out ${OUT}/tbad18)
wafer_cli_test(table_kv_capacity_prompt --exit 2 --one-line-error --no-file ${OUT}/tbad19
  --stderr "--kv-capacity 64 is fewer positions than the grid's largest step holds .128, a prompt's context."
  -- ${WAFER_EMU} table ${TT} --contexts 32,64 --batches 1 --prefill-tokens 128 --kv-capacity 64 --out ${OUT}/tbad19)
wafer_cli_test(table_kv_capacity_huge --exit 2 --one-line-error --no-file ${OUT}/tbad22
  --stderr "--kv-capacity 1099511627777: must be between 1 and 2.40 positions"
  -- ${WAFER_EMU} table ${TT} --contexts 32 --prefill-tokens 4 --kv-capacity 1099511627777 --out ${OUT}/tbad22)
wafer_cli_test(table_kv_capacity_list --exit 2 --one-line-error --stderr "--kv-capacity 1,2: give one number, or max"
  --no-file ${OUT}/tbad20 -- ${WAFER_EMU} table ${TT} --contexts 32 --prefill-tokens 4 --kv-capacity 1,2 --out ${OUT}/tbad20)
wafer_cli_test(table_kv_capacity_word --exit 2 --one-line-error --stderr "--kv-capacity 'most': 'most' is not an integer"
  --no-file ${OUT}/tbad21 -- ${WAFER_EMU} table ${TT} --contexts 32 --prefill-tokens 4 --kv-capacity most --out ${OUT}/tbad21)
wafer_cli_test(table_out_missing --exit 2 --one-line-error --stderr "--out DIR is required" -- ${WAFER_EMU} table ${TT})
# The same files with and without --no-cache (apps/point_cache.h: the mesh model and memory kept between points).
add_test(NAME cli.table_cache COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cache_check.py table ${WAFER_EMU} ${OUT}/table_cache)
# --jobs N: the same files for 1, 2 and 3 workers; a killed worker ends the run (exit 2, nothing written, no
# worker left); --jobs out of range (table_jobs_check.py).
add_test(NAME cli.table_jobs COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/table_jobs_check.py same ${WAFER_EMU} ${OUT}/table_jobs)
add_test(NAME cli.table_jobs_kill COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/table_jobs_check.py kill ${WAFER_EMU} ${OUT}/table_jobs_kill)
wafer_cli_test(table_jobs_zero --exit 2 --one-line-error --stderr "--jobs 0 is outside" --no-file ${OUT}/tbad6
  -- ${WAFER_EMU} table ${TT} --contexts 32 --batches 1 --prefill-tokens 4 --jobs 0 --out ${OUT}/tbad6)
wafer_cli_test(table_jobs_negative --exit 2 --one-line-error --stderr "--jobs -3 is outside" --no-file ${OUT}/tbad7
  -- ${WAFER_EMU} table ${TT} --contexts 32 --batches 1 --prefill-tokens 4 --jobs -3 --out ${OUT}/tbad7)
wafer_cli_test(table_jobs_many --exit 2 --one-line-error --stderr "--jobs 1025 is outside" --no-file ${OUT}/tbad8
  -- ${WAFER_EMU} table ${TT} --contexts 32 --batches 1 --prefill-tokens 4 --jobs 1025 --out ${OUT}/tbad8)
wafer_cli_test(table_jobs_not_a_number --exit 2 --one-line-error --stderr "jobs" --no-file ${OUT}/tbad9
  -- ${WAFER_EMU} table ${TT} --contexts 32 --batches 1 --prefill-tokens 4 --jobs two --out ${OUT}/tbad9)
# A table killed part way resumes from its journal to the same files, one process or two; a journal of other
# settings, one another run holds, or one with a damaged line is refused (table_resume_check.py).
add_test(NAME cli.table_resume COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/table_resume_check.py ${WAFER_EMU} ${OUT}/table_resume 1)
add_test(NAME cli.table_resume_jobs COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/table_resume_check.py ${WAFER_EMU} ${OUT}/table_resume_jobs 2)
