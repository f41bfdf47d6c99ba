# wafer-emu decode: good runs on the tiny wafer, the golden results of the tiny test model, big models
# accepted or refused by the mapper (mapping only: --dump-firmware stops before emulation, so these stay
# fast in debug and sanitizer builds), and every bad input as a one-line error with exit 2.
set(TINY --wafer tiny --model tiny-llama --context 64)
wafer_cli_test(decode_tiny --stdout "latency_cycles +[0-9]+ cycles" --stdout "tokens_per_s" --stdout "task_overhead"
  --stdout "sram_max" --stdout "colors_used" --stdout "emulation"
  --file ${OUT}/decode_tiny.json --no-file ${OUT}/decode_tiny.json.tmp -- ${WAFER_EMU} decode ${TINY} --json ${OUT}/decode_tiny.json)
wafer_cli_test(decode_tiny_cycle --stdout "fidelity +cycle" -- ${WAFER_EMU} decode ${TINY} --fidelity cycle)
wafer_cli_test(decode_tiny_batch --stdout "batch +4 sequences" -- ${WAFER_EMU} decode ${TINY} --batch 4)
# A pipeline's wafers have defect maps of their own; a map file given once is every wafer's (docs/mapping.md
# section 5), and the configuration says which.
wafer_cli_test(decode_defects_each_wafer --stdout "defects +generated: 100 per cm.2, seed 1, a map per wafer .seeds 1, [0-9]+. 5, 6 defects."
  -- ${WAFER_EMU} decode ${TINY} --wafers 2 --density 100)
add_test(NAME cli.decode_wafer_maps COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/wafer_maps_check.py ${WAFER_EMU}
  ${OUT}/wafer_maps)
# docs/decode-json.md lists every key path decode --json writes, checked both ways over the runs it names.
add_test(NAME cli.json_keys COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/json_keys_check.py ${WAFER_EMU}
  ${PROJECT_SOURCE_DIR}/docs/decode-json.md ${CMAKE_CURRENT_SOURCE_DIR}/data ${OUT}/json_keys)
# A task's delay of 0 after its trigger acts as 1, on both meshes (docs/timing.md, "Rules both models implement").
add_test(NAME cli.reaction COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/reaction_check.py ${WAFER_EMU} ${OUT}/reaction)
# No output written over an input or another output, however named (docs/architecture.md, outputs).
add_test(NAME cli.outputs_over_inputs COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/outputs_over_inputs_check.py ${WAFER_EMU}
  ${OUT}/outputs_over_inputs ${PROJECT_SOURCE_DIR}/configs)
# The tiles available are those repair left with a working router (this map leaves one without: 63 of 64;
# the count was the logical grid's whatever the repair). defect-aware uses 7 x 8 of them, the dead tile's column
# left out (48 until 2026-12-07, when the column beside it went too).
wafer_cli_test(decode_tiles_available --stdout "tiles_used +56 tiles" --stdout "tiles_available +63 tiles"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64 --placement defect-aware --density 300 --seed 2)
# A tile cut off by four failed links: every logical tile is on a healthy physical one (repair "complete"), but the
# placements that need every link refuse the map, so the configuration says how many links have no path.
wafer_cli_test(decode_repair_no_path --stdout "repair +row-shift: complete \\(4 logical links left without a healthy path\\)"
  --stdout "tiles_used +32 tiles" -- ${WAFER_EMU} decode ${TINY} --placement defect-aware --defects ${DATA}/defects_isolated.csv)
wafer_cli_test(decode_tiny_8bit --stdout "weight_bits +8 bits" -- ${WAFER_EMU} decode ${TINY} --weight-bits 8)
wafer_cli_test(decode_tiny_stream --stdout "weights +stream" -- ${WAFER_EMU} decode ${TINY} --weights stream)
wafer_cli_test(decode_tiny_defects --stdout "defects +generated" -- ${WAFER_EMU} decode ${TINY} --density 20 --seed 3)
# --defects-out: the generated map written out and read back decodes the same; bad input.
add_test(NAME cli.decode_defects_out COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/defects_out_check.py ${WAFER_EMU}
  ${OUT}/defects_out -- ${TINY} --density 100 --seed 3)
# A device as an input is refused before it is read (/dev/zero was read until the kernel killed the process; a file
# beyond 256 MiB is refused once read that far: InputJson tests); a value holding a newline keeps the error on one line.
wafer_cli_test(decode_model_endless --exit 2 --one-line-error --stderr "/dev/zero: is a device, not a model config"
  -- ${WAFER_EMU} decode --wafer tiny --context 64 --model /dev/zero)
wafer_cli_test(decode_value_with_newline --exit 2 --one-line-error --stderr "unknown placement 'a.nb'"
  -- ${WAFER_EMU} decode ${TINY} "--placement=a\nb")
wafer_cli_test(decode_defects_out_alone --exit 2 --one-line-error --stderr "--defects-out needs --defects FILE or --density D"
  --no-file ${OUT}/do_alone.csv -- ${WAFER_EMU} decode ${TINY} --defects-out ${OUT}/do_alone.csv)
wafer_cli_test(decode_defects_out_ext --exit 2 --one-line-error --stderr "--defects-out .*do.txt: a defect map file ends in .csv or .json"
  --no-file ${OUT}/do.txt -- ${WAFER_EMU} decode ${TINY} --density 20 --defects-out ${OUT}/do.txt)
wafer_cli_test(decode_trace --file ${OUT}/decode_trace.json --no-file ${OUT}/decode_trace.json.tmp
  -- ${WAFER_EMU} decode ${TINY} --trace ${OUT}/decode_trace.json)
# The trace checked against the results (valid JSON, X events complete, spans nest, a layer's spans sum to
# its latency, counters per wafer, --trace-window tracks only the window), and its bad input.
add_test(NAME cli.decode_trace_check COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/trace_check.py ${WAFER_EMU} ${OUT}/trace_check)
wafer_cli_test(decode_trace_window_syntax --exit 2 --one-line-error --stderr "--trace-window '1-2,3': expected X0:X1,Y0:Y1"
  --no-file ${OUT}/tw.json -- ${WAFER_EMU} decode ${TINY} --trace ${OUT}/tw.json --trace-window 1-2,3)
wafer_cli_test(decode_trace_window_outside --exit 2 --one-line-error --stderr "--trace-window '6:8,0:1' is outside the 8x8 array"
  --no-file ${OUT}/tw.json -- ${WAFER_EMU} decode ${TINY} --trace ${OUT}/tw.json --trace-window 6:8,0:1)
wafer_cli_test(decode_trace_window_reversed --exit 2 --one-line-error --stderr "--trace-window '3:2,0:1': X0 must not exceed X1"
  -- ${WAFER_EMU} decode ${TINY} --trace ${OUT}/tw.json --trace-window 3:2,0:1)
wafer_cli_test(decode_trace_window_negative --exit 2 --one-line-error --stderr "--trace-window '-1:2,0:1' is outside"
  -- ${WAFER_EMU} decode ${TINY} --trace ${OUT}/tw.json --trace-window -1:2,0:1)
wafer_cli_test(decode_trace_window_alone --exit 2 --one-line-error --stderr "--trace-window needs --trace PATH"
  -- ${WAFER_EMU} decode ${TINY} --trace-window 0:1,0:1)
wafer_cli_test(decode_dump --stdout "task" -- ${WAFER_EMU} decode ${TINY} --dump-firmware 7,7)
# The fixed costs of route switches and collective synchronisation are causes of their own (core/executor.h):
# 2 switches of 4 cycles on the tiny model's critical path; a broadcast's root is marked in the firmware.
wafer_cli_test(decode_tiny_fixed_costs --stdout "color_switch +8 cycles" --stdout "collective_sync +0 cycles"
  -- ${WAFER_EMU} decode ${TINY})
wafer_cli_test(decode_dump_collective --stdout "send color  2 11 wavelets -> row \\(-7\\.\\.\\+0,\\+0\\) \\(starts a collective\\)"
  -- ${WAFER_EMU} decode ${TINY} --dump-firmware 7,1)
add_test(NAME cli.decode_golden COMMAND python3 ${PROJECT_SOURCE_DIR}/traces/golden/check_decode.py ${WAFER_EMU}
  ${PROJECT_SOURCE_DIR}/traces/golden/decode_tiny_llama.json)

# Llama-3.1-70B: refused resident on one wafer (with the mapper's reason), accepted streamed or on 4 wafers.
wafer_cli_test(decode_70b_resident --exit 2 --one-line-error --stderr "needs .* of SRAM per tile.*a tile has 48.0 KB.*try --weights stream or --wafers 4" --no-file ${OUT}/d70.json
  -- ${WAFER_EMU} decode --model llama-3.1-70b --json ${OUT}/d70.json)
wafer_cli_test(decode_70b_stream --stdout "tile \\(0,0\\)" -- ${WAFER_EMU} decode --model llama-3.1-70b --weights stream --dump-firmware 0,0)
wafer_cli_test(decode_70b_wafers --stdout "tile \\(0,0\\)" -- ${WAFER_EMU} decode --model llama-3.1-70b --wafers 4 --dump-firmware 0,0)

# Bad input.
wafer_cli_test(decode_context_zero --exit 2 --one-line-error --stderr "--context 0 must be at least 1" -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 0)
wafer_cli_test(decode_context_beyond --exit 2 --one-line-error --stderr "--context 513 is beyond tiny-llama's max_position_embeddings 512 \\(refused\\)"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 513)
wafer_cli_test(decode_batch_zero --exit 2 --one-line-error --stderr "--batch 0 must be at least 1" -- ${WAFER_EMU} decode ${TINY} --batch 0)
wafer_cli_test(decode_placement --exit 2 --one-line-error --stderr "nowhere" -- ${WAFER_EMU} decode ${TINY} --placement nowhere)
wafer_cli_test(decode_fidelity --exit 2 --one-line-error --stderr "exact" -- ${WAFER_EMU} decode ${TINY} --fidelity exact)
wafer_cli_test(decode_cycle_too_big --exit 2 --one-line-error --stderr "up to 128x128" -- ${WAFER_EMU} decode --fidelity cycle)
wafer_cli_test(decode_weight_bits --exit 2 --one-line-error --stderr "--weight-bits 4 must be 16 or 8" -- ${WAFER_EMU} decode ${TINY} --weight-bits 4)
wafer_cli_test(decode_wafers_zero --exit 2 --one-line-error --stderr "--wafers 0 must be between" -- ${WAFER_EMU} decode ${TINY} --wafers 0)
wafer_cli_test(decode_weights_mode --exit 2 --one-line-error --stderr "maybe" -- ${WAFER_EMU} decode ${TINY} --weights maybe)
wafer_cli_test(decode_unknown_model --exit 2 --one-line-error --stderr "unknown model 'gpt-9'" -- ${WAFER_EMU} decode --wafer tiny --model gpt-9)
wafer_cli_test(decode_bad_model_file --exit 2 --one-line-error --stderr "decode_bad_heads.json" -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_bad_heads.json)
# A Qwen-MoE shared expert is modelled; a config whose layer the graph does not build is refused naming the key; a
# sliding window bounds the context.
wafer_cli_test(decode_shared_expert --stdout "latency_us" --stdout "moe_router" -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_shared_expert.json --context 64)
wafer_cli_test(decode_sparse_step --exit 2 --one-line-error --stderr "decode_sparse_step.json: 'decoder_sparse_step' = 2: dense layers between the MoE ones"
  -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_sparse_step.json)
# Qwen3's per-head q/k norms: a decode and a prefill on the bands kernel; meshgemv refuses them.
wafer_cli_test(decode_qwen3 --stdout "latency_us" --stdout "rotary_emb" -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_qwen3.json --context 64)
wafer_cli_test(decode_qwen3_prefill --stdout "latency_us" -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_qwen3.json --context 64 --prefill 8)
wafer_cli_test(decode_qwen3_meshgemv --exit 2 --one-line-error --stderr "--kernel meshgemv maps models without per-head q/k norms"
  -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_qwen3.json --context 64 --kernel meshgemv --placement square)
wafer_cli_test(decode_window_at --stdout "latency_us" -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_window.json --context 64)
wafer_cli_test(decode_window_beyond --exit 2 --one-line-error --stderr "context 65 exceeds decode_window's sliding_window 64"
  -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_window.json --context 65)
wafer_cli_test(decode_missing_field --exit 2 --one-line-error --stderr "decode_missing_hidden.json.*hidden_size" -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_missing_hidden.json)
wafer_cli_test(decode_dump_outside --exit 2 --one-line-error --stderr "--dump-firmware 8,0 is outside the 8x8 array" -- ${WAFER_EMU} decode ${TINY} --dump-firmware 8,0)
wafer_cli_test(decode_dump_malformed --exit 2 --one-line-error --stderr "expected X,Y" -- ${WAFER_EMU} decode ${TINY} --dump-firmware 3)
# Digits only, as coordinates are printed: a sign or a space anywhere is refused alike (sscanf took "+1,+1" and " 1,1"
# but refused "1,1 "); a number of any length passes the parse and meets the array's bound, said as given.
set(n 0)
foreach(bad "+1,1" "1,+1" " 1,1" "1, 1" "1,1 " "1,1@" "1,1@+1" "1,1@1@1" "-1,0" "1,,1" "0x1,1" "1,1@1 ")
  math(EXPR n "${n} + 1")
  wafer_cli_test(decode_dump_form_${n} --exit 2 --one-line-error --stderr "--dump-firmware '.*': expected X,Y or X,Y@WAFER"
    -- ${WAFER_EMU} decode ${TINY} "--dump-firmware=${bad}")
endforeach()
wafer_cli_test(decode_dump_far_wafer --exit 2 --one-line-error --stderr "--dump-firmware 0,0@99999999999 is outside the pipeline of 1 wafer "
  -- ${WAFER_EMU} decode ${TINY} --dump-firmware 0,0@99999999999)
wafer_cli_test(decode_dump_leading_zeros --stdout "tile .7,7.: program" -- ${WAFER_EMU} decode ${TINY} --dump-firmware 07,007@0)
wafer_cli_test(decode_both_defects --exit 2 --one-line-error --stderr "not both" -- ${WAFER_EMU} decode ${TINY} --density 1 --defects x.csv)
# The generated defects' model (a sweep's defect_model and alpha; cli.sweep_decode_negbin compares the numbers).
wafer_cli_test(decode_negbin --stdout "defects +generated: 40 per cm\\^2, negative binomial with alpha 0.5, seed 2"
  -- ${WAFER_EMU} decode ${TINY} --density 40 --defect-model negbin --alpha 0.5 --seed 2)
wafer_cli_test(decode_alpha_poisson --exit 2 --one-line-error --stderr "--alpha applies to --defect-model negbin"
  -- ${WAFER_EMU} decode ${TINY} --density 1 --alpha 2)
wafer_cli_test(decode_model_alone --exit 2 --one-line-error --stderr "--defect-model applies to generated defects: give --density D too"
  -- ${WAFER_EMU} decode ${TINY} --defect-model negbin)
wafer_cli_test(decode_model_unknown --exit 2 --one-line-error --stderr "--defect-model: unknown defect model 'zipf' \\(known: poisson, negbin\\)"
  -- ${WAFER_EMU} decode ${TINY} --density 1 --defect-model zipf)
wafer_cli_test(decode_alpha_zero --exit 2 --one-line-error --stderr "alpha = 0 must be finite and > 0"
  -- ${WAFER_EMU} decode ${TINY} --density 1 --defect-model negbin --alpha 0)
wafer_cli_test(decode_repair --exit 2 --one-line-error --stderr "unknown repair scheme 'glue'" -- ${WAFER_EMU} decode ${TINY} --repair glue)
# Options that change nothing are refused rather than ignored: a repair scheme without defects, a run's settings
# where only one tile's program is printed; validate's --no-cache with --check, a case named twice.
wafer_cli_test(decode_repair_alone --exit 2 --one-line-error --stderr "--repair applies to defects: give --defects FILE or --density D too"
  -- ${WAFER_EMU} decode ${TINY} --repair spare-rows-cols)
wafer_cli_test(decode_dump_no_reuse --exit 2 --one-line-error --stderr "--dump-firmware prints one tile's program and stops: --no-reuse does not apply"
  -- ${WAFER_EMU} decode ${TINY} --dump-firmware 0,0 --no-reuse)
# A pipeline's wafer K's tile (its wafers differ in stages and, with defects, in maps).
wafer_cli_test(decode_dump_wafer --stdout "^wafer 1 of 2: tile .0,0.: program" --stdout "layer 1 / "
  -- ${WAFER_EMU} decode ${TINY} --wafers 2 --dump-firmware 0,0@1)
# A tile repair left without a working router says so (it printed "idle (no program)" alone).
wafer_cli_test(decode_dump_dead_tile --stdout "idle .no program." --stdout "tile .7,3.: repair left it without a working router"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64 --placement defect-aware --density 400 --seed 2
  --dump-firmware 7,3)
wafer_cli_test(decode_dump_no_such_wafer --exit 2 --one-line-error --stderr "--dump-firmware 0,0@2 is outside the pipeline of 2 wafers .wafers 0 to 1."
  -- ${WAFER_EMU} decode ${TINY} --wafers 2 --dump-firmware 0,0@2)
wafer_cli_test(decode_dump_fidelity --exit 2 --one-line-error --stderr "--fidelity does not apply"
  -- ${WAFER_EMU} decode ${TINY} --dump-firmware 0,0 --fidelity cycle)
wafer_cli_test(decode_trace_unwritable --exit 2 --one-line-error --stderr "cannot write output file: its folder .*no-such-dir does not exist" -- ${WAFER_EMU} decode ${TINY} --trace ${OUT}/no-such-dir/t.json)

# Streamed weights on a mesh where they matter: finishes (the fabric leg of each StreamIn is analytic,
# docs/streaming.md) and reports a non-zero weight-streaming share of the step.
wafer_cli_test(decode_small_stream --timeout 300 --stdout "weights +stream" --stdout "weight_streaming +[1-9][0-9]* cycles +[0-9.]+ % of the step"
  --stdout "edge_channel_bandwidth" -- ${WAFER_EMU} decode --wafer small --model llama-3.2-1b --context 512 --weights stream)

# The meshgemv kernel (docs/mapping.md section 3b): runs on the whole wafer with each allreduce algorithm;
# refusals and bad values as one-line errors.
wafer_cli_test(decode_meshgemv --stdout "kernel +meshgemv" --stdout "allreduce +tree" --stdout "latency_cycles +[0-9]+ cycles"
  -- ${WAFER_EMU} decode ${TINY} --placement whole-wafer --kernel meshgemv)
wafer_cli_test(decode_meshgemv_centre --stdout "allreduce +centre"
  -- ${WAFER_EMU} decode ${TINY} --placement whole-wafer --kernel meshgemv --allreduce centre --fidelity cycle)
wafer_cli_test(decode_meshgemv_bands --exit 2 --one-line-error --stderr "use --placement whole-wafer"
  -- ${WAFER_EMU} decode ${TINY} --kernel meshgemv)
wafer_cli_test(decode_meshgemv_moe --exit 2 --one-line-error --stderr "dense models"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-moe --context 64 --placement whole-wafer --kernel meshgemv)
wafer_cli_test(decode_bad_kernel --exit 2 --one-line-error --stderr "--kernel 'gemm': expected bands or meshgemv"
  -- ${WAFER_EMU} decode ${TINY} --kernel gemm)
wafer_cli_test(decode_bad_allreduce --exit 2 --one-line-error --stderr "--allreduce 'ring': expected chain, centre or tree"
  -- ${WAFER_EMU} decode ${TINY} --kernel meshgemv --allreduce ring)
wafer_cli_test(decode_bad_group --exit 2 --one-line-error --stderr "--group -1"
  -- ${WAFER_EMU} decode ${TINY} --kernel meshgemv --group -1)

# --placement auto (apps/search.h): the candidate table, the choice, the reported step is the chosen one.
add_test(NAME cli.decode_auto COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/auto_check.py ${WAFER_EMU} ${OUT}/auto)
wafer_cli_test(decode_auto_table --stdout "chosen +meshgemv" --stdout "not emulated: the 2 best closed forms were"
  --stdout "bands / layer-bands" -- ${WAFER_EMU} decode ${TINY} --placement auto)
wafer_cli_test(decode_auto_bad_budget --exit 2 --one-line-error --stderr "--search-budget -3 must be at least 0"
  -- ${WAFER_EMU} decode ${TINY} --placement auto --search-budget -3)
# With no budget nothing is emulated: the best closed form is chosen, and says so.
wafer_cli_test(decode_auto_no_budget --stdout "chosen_by +closed form" --stdout "chosen +meshgemv"
  -- ${WAFER_EMU} decode ${TINY} --placement auto --search-budget 0)
# A run keeps a record per tile task (core::Executor::record_bytes): a job whose records exceed the memory
# available is refused before it allocates them. The tiny job's 651 tasks need about 52 KB: refused under a
# limit of 0 MiB, run under 1 MiB; a limit that is not a number is an error naming the variable.
wafer_cli_test(decode_memory_refused --exit 2 --one-line-error
  --stderr "the step would not fit in memory: wafer 0 runs 651 tile tasks.*WAFER_EMU_MEMORY_MB overrides"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64)
set_tests_properties(cli.decode_memory_refused PROPERTIES ENVIRONMENT "WAFER_EMU_MEMORY_MB=0")
wafer_cli_test(decode_memory_enough --stdout "tasks_run +651 tasks" -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64)
set_tests_properties(cli.decode_memory_enough PROPERTIES ENVIRONMENT "WAFER_EMU_MEMORY_MB=1")
wafer_cli_test(decode_memory_variable --exit 2 --one-line-error --stderr "WAFER_EMU_MEMORY_MB '1e3' is not a whole number of MiB"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64)
set_tests_properties(cli.decode_memory_variable PROPERTIES ENVIRONMENT "WAFER_EMU_MEMORY_MB=1e3")

# decode --prefill T (docs/mapping.md section 3c): a prompt in chunks reports the chunking; bad input.
wafer_cli_test(decode_prefill_zero --exit 2 --one-line-error --stderr "--prefill 0 must be at least 1"
  -- ${WAFER_EMU} decode ${TINY} --prefill 0)
wafer_cli_test(decode_prefill_beyond --exit 2 --one-line-error --stderr "--prefill 65 is more tokens than --context 64 holds"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64 --prefill 65)
wafer_cli_test(decode_prefill_meshgemv --exit 2 --one-line-error --stderr "--prefill is emitted for --kernel bands only"
  -- ${WAFER_EMU} decode ${TINY} --prefill 4 --kernel meshgemv --placement whole-wafer)
wafer_cli_test(decode_chunk_alone --exit 2 --one-line-error --stderr "--chunk needs --prefill T" -- ${WAFER_EMU} decode ${TINY} --chunk 4)
wafer_cli_test(decode_prefill_chunks --stdout "ttft_us" --stdout "chunk_tokens +8 tokens" --stdout "chunks +4 chunks"
  -- ${WAFER_EMU} decode ${TINY} --prefill 32 --chunk 8)
# A streamed prefill whose last chunk (20 tokens) streams nothing where the chunks of 40 do: the mapping's
# streamed bytes are said to be the last chunk's, and what the port carried is the whole step's.
wafer_cli_test(decode_prefill_stream_io --stdout "streamed_bytes_per_step +0 bytes +the last chunk's mapping"
  --stdout "memoryx_bytes +[1-9][0-9]* bytes +the MemoryX port carried, the whole step"
  -- ${WAFER_EMU} decode --wafer small --model small-llama --prefill 100 --context 700 --weights stream --chunk 40)

# A prompt in chunks: sram_max is the fullest tile of any chunk (each chunk run alone against the prompt).
add_test(NAME cli.decode_prefill_sram COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/prefill_sram_check.py ${WAFER_EMU}
  ${OUT}/prefill_sram)

# decode --kv-capacity N (docs/mapping.md section 3e): a deployment's KV cache reserved; at least what the step holds.
wafer_cli_test(decode_kv_capacity_report --stdout "kv_capacity +256 tokens" -- ${WAFER_EMU} decode ${TINY} --kv-capacity 256)
wafer_cli_test(decode_kv_capacity_zero --exit 2 --one-line-error --stderr "--kv-capacity 0 must be at least 1"
  -- ${WAFER_EMU} decode ${TINY} --kv-capacity 0)
wafer_cli_test(decode_kv_capacity_short --exit 2 --one-line-error
  --stderr "--kv-capacity 100 is fewer positions than the step's KV cache holds .128 = batch 2 x context 64."
  -- ${WAFER_EMU} decode ${TINY} --batch 2 --kv-capacity 100)
wafer_cli_test(decode_kv_capacity_mixed_short --exit 2 --one-line-error
  --stderr "--kv-capacity 90 is fewer positions than the step's KV cache holds .96 over its sequences' contexts."
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64,8@32 --kv-capacity 90)
wafer_cli_test(decode_kv_capacity_beyond_sram --exit 2 --one-line-error --stderr "with a KV cache reserved for 2000000 positions.*, or a smaller --kv-capacity"
  -- ${WAFER_EMU} decode ${TINY} --kv-capacity 2000000)
wafer_cli_test(decode_kv_capacity_beyond_sram_streamed --exit 2 --one-line-error
  --stderr "even with its weights streamed.*reserved for 2000000 positions.*, or a smaller --kv-capacity"
  -- ${WAFER_EMU} decode ${TINY} --kv-capacity 2000000 --weights stream)
wafer_cli_test(decode_kv_capacity_prefill --stdout "kv_capacity +512 tokens" --stdout "chunks +4 chunks"
  -- ${WAFER_EMU} decode ${TINY} --prefill 32 --chunk 8 --kv-capacity 512)

# decode --step (a mixed step, docs/mapping.md section 3d): the uniform steps it generalises, its parts alone
# (mixed_check.py), the report, and bad input.
add_test(NAME cli.decode_mixed_check COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/mixed_check.py ${WAFER_EMU} ${OUT}/mixed_check)
wafer_cli_test(decode_mixed_report --stdout "mixed step" --stdout "step +1@64,8@32" --stdout "step_tokens +9 tokens"
  --stdout "per_sequence" --stdout "prefill_sequences +1 sequences" -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64,8@32)
# (through a shell: CMake drops an empty argument)
wafer_cli_test(decode_step_empty --exit 2 --one-line-error --stderr "--step is empty: give its value"
  -- sh -c "${WAFER_EMU} decode --wafer tiny --model tiny-llama --step ''")
wafer_cli_test(decode_step_zero --exit 2 --one-line-error --stderr "--step entry '0@64' .sequence 2.: tokens and context must be at least 1"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64,0@64)
wafer_cli_test(decode_step_beyond_context --exit 2 --one-line-error
  --stderr "--step entry '65@64' .sequence 1.: 65 new tokens are more than its context 64 holds"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 65@64)
wafer_cli_test(decode_step_malformed --exit 2 --one-line-error --stderr "--step entry '1x64' .sequence 2.: expected TOKENS@CONTEXT"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64,1x64)
wafer_cli_test(decode_step_trailing --exit 2 --one-line-error --stderr "--step entry '' .sequence 2.: expected TOKENS@CONTEXT"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64,)
wafer_cli_test(decode_step_max_position --exit 2 --one-line-error
  --stderr "--step entry '1@1024' .sequence 2. is beyond tiny-llama's max_position_embeddings 512"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64,1@1024)
wafer_cli_test(decode_step_prefill --exit 2 --one-line-error --stderr "--step and --prefill: give one"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64 --prefill 4)
wafer_cli_test(decode_step_batch --exit 2 --one-line-error --stderr "--step and --batch: give one"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64 --batch 2)
wafer_cli_test(decode_step_context --exit 2 --one-line-error --stderr "--step and --context: give one"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64 --context 64)
wafer_cli_test(decode_step_meshgemv --exit 2 --one-line-error --stderr "--step is emitted for --kernel bands only"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64 --kernel meshgemv --placement whole-wafer)
wafer_cli_test(decode_step_auto --exit 2 --one-line-error --stderr "--step maps with a given --placement, not auto"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64 --placement auto)
wafer_cli_test(decode_step_sram --exit 2 --one-line-error
  --stderr "--step 1@64,1@64,256@256 does not fit in SRAM: at most [0-9]+ of the 256 tokens of sequence 3 .256@256. fit beside the others.*the first being --step 1@64,1@64,[0-9]+@[0-9]+"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --step 1@64,1@64,256@256)
# An output path that is a folder is refused before the step runs (it passed the up-front probe and failed only at
# the end, at the rename, leaving PATH.tmp behind): --json, --trace, and report's --out.
wafer_cli_test(decode_json_folder --exit 2 --one-line-error --stderr "${OUT}: is a folder" --stderr "give the path of a file to write"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64 --json ${OUT})
wafer_cli_test(decode_trace_folder --exit 2 --one-line-error --stderr "a/: is a folder" --stderr "give the path of a file to write"
  --no-file ${OUT}/a/.tmp -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64 --trace ${OUT}/a/)
wafer_cli_test(report_out_folder --exit 2 --one-line-error --stderr "${OUT}: is a folder" --stderr "give the path of a file to write"
  -- ${WAFER_EMU} report ${CMAKE_CURRENT_SOURCE_DIR}/data/report_schema9 --out ${OUT})
# A negative seed is refused, not taken as 2^64 - 1 (a std::uint64_t option read "-1" so); the largest seed is taken.
wafer_cli_test(decode_negative_seed --exit 2 --one-line-error --stderr "--seed '-1' must be a whole number in .0, 2.64."
  -- ${WAFER_EMU} decode ${TINY} --density 20 --seed=-1)
wafer_cli_test(decode_largest_seed --stdout "seed 18446744073709551615"
  -- ${WAFER_EMU} decode ${TINY} --density 20 --seed 18446744073709551615)
wafer_cli_test(noc_negative_seed --exit 2 --one-line-error --stderr "--seed '-1' must be a whole number in .0, 2.64."
  -- ${WAFER_EMU} noc --wafer tiny --seed=-1)
# An option that applies to another choice is refused rather than ignored (the step would not be the one asked for;
# each ran with exit 0 and the same output as without it on the build before).
set(DERR --exit 2 --one-line-error)
wafer_cli_test(decode_allreduce_bands ${DERR} --stderr "--allreduce applies to --kernel meshgemv"
  -- ${WAFER_EMU} decode ${TINY} --allreduce chain)
wafer_cli_test(decode_group_bands ${DERR} --stderr "--group applies to --kernel meshgemv" -- ${WAFER_EMU} decode ${TINY} --group 3)
wafer_cli_test(decode_kernel_auto ${DERR} --stderr "--kernel does not apply with --placement auto: the search chooses it"
  -- ${WAFER_EMU} decode ${TINY} --placement auto --kernel meshgemv)
wafer_cli_test(decode_budget_not_auto ${DERR} --stderr "--search-budget applies to --placement auto"
  -- ${WAFER_EMU} decode ${TINY} --search-budget 5)
wafer_cli_test(decode_seed_alone ${DERR} --stderr "--seed applies to generated defects: give --density D too"
  -- ${WAFER_EMU} decode ${TINY} --seed 12abc)
wafer_cli_test(decode_dump_json ${DERR} --stderr "--dump-firmware prints one tile's program and stops: --json does not apply"
  --no-file ${OUT}/decode_dump.json -- ${WAFER_EMU} decode ${TINY} --dump-firmware 0,0 --json ${OUT}/decode_dump.json)
wafer_cli_test(decode_stray_word ${DERR} --stderr "unexpected argument 'extra' .options start with --."
  -- ${WAFER_EMU} decode ${TINY} extra)
wafer_cli_test(defects_stray_word ${DERR} --stderr "unexpected argument 'extra'" -- ${WAFER_EMU} defects --wafer tiny extra)
# (the same value with the meshgemv kernel: taken)
wafer_cli_test(decode_allreduce_meshgemv --stdout "allreduce +chain"
  -- ${WAFER_EMU} decode ${TINY} --placement whole-wafer --kernel meshgemv --allreduce chain)
# Said as given: a coordinate beyond an int (it was said as -1), a prefill's context named as the prefill (it was
# named --context, which was not given).
wafer_cli_test(decode_dump_huge ${DERR} --stderr "--dump-firmware 18446744073709551616,0 is outside the 8x8 array"
  -- ${WAFER_EMU} decode ${TINY} --dump-firmware 18446744073709551616,0)
wafer_cli_test(decode_prefill_beyond_model ${DERR} --stderr "--prefill .the context. 513 is beyond tiny-llama's max_position_embeddings 512"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --prefill 513)
# A step that streams its weights ends after they have arrived: a tile's tasks do not pass one waiting for its
# weights (docs/streaming.md "Order on a tile").
add_test(NAME cli.stream_order COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/stream_order_check.py ${WAFER_EMU}
  ${OUT}/stream_order ${DATA}/stream_mid_llama.json)
# So does a resident step whose repair detour delays a tile's input and not its neighbour's partial sum.
add_test(NAME cli.held_order COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/held_order_check.py ${WAFER_EMU} ${OUT}/held_order)
