# wafer-emu sweep: studies of many decode points (docs/studies.md), on the tiny study only
# (configs/studies/tiny.json: tiny-llama on the 8 x 8 tiny wafer, 24 points, half of them refused by the mapper).
set(STUDY ${PROJECT_SOURCE_DIR}/configs/studies/tiny.json)
set(SWEEP_CHECK python3 ${CMAKE_CURRENT_SOURCE_DIR}/sweep_check.py)
set(SERR --exit 2 --one-line-error)

# End to end; --jobs 1 and --jobs 2 agree; a finished study runs nothing; another study is refused.
add_test(NAME cli.sweep_jobs COMMAND ${SWEEP_CHECK} jobs ${WAFER_EMU} ${STUDY} ${OUT}/sweep_jobs ${DATA}/sweep_other.json)
# Killed after a few points (SIGKILL), a half-written line added, restarted: every point exactly once.
# (tests/cli/data/sweep_long.json: 400 points on the tiny wafer, about 2 s, so that the kill lands part way.)
add_test(NAME cli.sweep_resume COMMAND ${SWEEP_CHECK} resume ${WAFER_EMU} ${DATA}/sweep_long.json ${OUT}/sweep_resume)
# As under `mpirun -n 3` (no MPI library: the ranks read the launcher's environment and share DIR/points.jsonl).
add_test(NAME cli.sweep_ranks COMMAND ${SWEEP_CHECK} ranks ${WAFER_EMU} ${STUDY} ${OUT}/sweep_ranks)
wafer_cli_test(sweep_ranks_jobs ${SERR} --stderr "--jobs does not apply under an MPI launcher" --no-file ${OUT}/sweep_bad
  -- env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 ${WAFER_EMU} sweep --spec ${STUDY} --out ${OUT}/sweep_bad --jobs 2)
wafer_cli_test(sweep_ranks_bad ${SERR} --stderr "PMI_RANK=2 / PMI_SIZE=2: not a rank and a size" --no-file ${OUT}/sweep_bad
  -- env PMI_RANK=2 PMI_SIZE=2 ${WAFER_EMU} sweep --spec ${STUDY} --out ${OUT}/sweep_bad)
# Under a real Open MPI mpirun, when one is installed (openmpi-bin; nothing is linked against MPI).
find_program(WAFER_MPIRUN NAMES mpirun)
if(WAFER_MPIRUN)
  execute_process(COMMAND ${WAFER_MPIRUN} --version OUTPUT_VARIABLE WAFER_MPIRUN_VERSION ERROR_QUIET)
  if(WAFER_MPIRUN_VERSION MATCHES "Open MPI|OpenRTE")
    add_test(NAME cli.sweep_mpirun COMMAND ${SWEEP_CHECK} mpirun ${WAFER_EMU} ${STUDY} ${OUT}/sweep_mpirun ${WAFER_MPIRUN})
  endif()
endif()
# Processes of one study take turns for memory (apps/memory_gate.h): a point waits while another process is
# admitted and both do not fit WAFER_EMU_MEMORY_MB, and not at the limit to the byte; --jobs 2 gives --jobs 1's lines.
add_test(NAME cli.sweep_memory COMMAND ${SWEEP_CHECK} memory ${WAFER_EMU} ${DATA}/sweep_memory.json ${OUT}/sweep_memory)
# A point's numbers equal `wafer-emu decode`'s for the same settings.
add_test(NAME cli.sweep_decode COMMAND ${SWEEP_CHECK} decode ${WAFER_EMU} ${STUDY} ${OUT}/sweep_decode)
# ... and for one deployment's KV cache at two contexts (kv_capacity: decode's --kv-capacity).
add_test(NAME cli.sweep_decode_kv_capacity COMMAND ${SWEEP_CHECK} decode ${WAFER_EMU} ${DATA}/sweep_kv_capacity.json ${OUT}/sweep_decode_kv_capacity)
# ... and for clustered maps: `decode --defect-model negbin --alpha A` generates the point's map.
add_test(NAME cli.sweep_decode_negbin COMMAND ${SWEEP_CHECK} decode ${WAFER_EMU} ${DATA}/sweep_negbin.json ${OUT}/sweep_decode_negbin)
# The summary's statistics on a known set of point results.
add_test(NAME cli.sweep_stats COMMAND ${SWEEP_CHECK} stats ${WAFER_EMU} ${STUDY} ${OUT}/sweep_stats)
wafer_cli_test(sweep_help --stdout "[-]-spec" --stdout "[-]-jobs" --stdout "[-]-summarize" -- ${WAFER_EMU} sweep --help)
# The shipped big study checks out (nothing is run: --point out of range is refused after the whole study is checked).
wafer_cli_test(sweep_defect_yield_checks --exit 2 --one-line-error --stderr "--point 400: the study .*defect-yield.json has points 0 to 399"
  --no-file ${OUT}/sweep_dy -- ${WAFER_EMU} sweep --spec ${PROJECT_SOURCE_DIR}/configs/studies/defect-yield.json --out ${OUT}/sweep_dy --point 400)

# Bad input: one line naming the file and the key, exit 2, nothing written.
wafer_cli_test(sweep_point_range ${SERR} --stderr "--point 24: the study .*tiny.json has points 0 to 23" --no-file ${OUT}/sweep_bad
  -- ${WAFER_EMU} sweep --spec ${STUDY} --out ${OUT}/sweep_bad --point 24)
wafer_cli_test(sweep_point_negative ${SERR} --stderr "--point -1: the study" --no-file ${OUT}/sweep_bad
  -- ${WAFER_EMU} sweep --spec ${STUDY} --out ${OUT}/sweep_bad --point -1)
wafer_cli_test(sweep_jobs_zero ${SERR} --stderr "--jobs 0 is outside" --no-file ${OUT}/sweep_bad -- ${WAFER_EMU} sweep --spec ${STUDY} --out ${OUT}/sweep_bad --jobs 0)
wafer_cli_test(sweep_shard ${SERR} --stderr "--shard '3/3': expected K/N" --no-file ${OUT}/sweep_bad -- ${WAFER_EMU} sweep --spec ${STUDY} --out ${OUT}/sweep_bad --shard 3/3)
wafer_cli_test(sweep_no_spec ${SERR} --stderr "--spec FILE is required" -- ${WAFER_EMU} sweep --out ${OUT}/sweep_bad)
wafer_cli_test(sweep_no_out ${SERR} --stderr "--out DIR is required" -- ${WAFER_EMU} sweep --spec ${STUDY})
wafer_cli_test(sweep_missing_file ${SERR} --stderr "nope.json: cannot open study file" --no-file ${OUT}/sweep_bad -- ${WAFER_EMU} sweep --spec ${DATA}/nope.json --out ${OUT}/sweep_bad)
wafer_cli_test(sweep_summarize_nothing ${SERR} --stderr "sweep_nothing/spec.json: cannot open" -- ${WAFER_EMU} sweep --summarize ${OUT}/sweep_nothing)
wafer_cli_test(sweep_out_parent ${SERR} --stderr "no-such-dir/d: cannot create the study directory" -- ${WAFER_EMU} sweep --spec ${STUDY} --out ${OUT}/no-such-dir/d)
foreach(case
    "top_key|sweep_bad_top_key.json: key 'colour': unknown key"
    "setting|sweep_bad_setting.json: key 'axes.placment': unknown setting"
    "empty_axis|sweep_bad_empty_axis.json: key 'axes.placement': is empty"
    "placement|sweep_bad_placement.json: key 'axes.placement\\[1\\]': unknown placement 'nowhere'"
    "kernel|sweep_bad_kernel.json: key 'axes.kernel\\[1\\]': 'gemm' is not one of bands, meshgemv"
    "model|sweep_bad_model.json: key 'axes.model\\[1\\]': unknown model 'gpt-9'"
    "repair|sweep_bad_repair.json: key 'axes.repair\\[0\\]': unknown repair scheme 'glue'"
    "allreduce|sweep_bad_allreduce.json: key 'axes.allreduce\\[0\\]': 'ring' is not one of chain, centre, tree"
    "wafer|sweep_bad_wafer.json: key 'fixed.wafer': unknown wafer preset 'wse9'"
    "param|sweep_bad_param.json: key 'axes.hop_latency\\[1\\]': 100000 is outside"
    "malformed|sweep_bad_malformed.json: malformed JSON at byte"
    "schema|sweep_bad_schema.json: key 'schema': 2 is not a schema this build reads"
    "both|sweep_bad_both.json: key 'axes.context': is also under \"fixed\""
    "seed_alone|sweep_bad_seed_alone.json: key 'axes.seed \\(point 0\\)': applies to generated defects"
    "type|sweep_bad_type.json: key 'axes.batch\\[0\\]': \"2\" must be a whole number"
    "range|sweep_bad_range.json: key 'axes.seed.count': 0 is outside"
    "range_from|sweep_bad_range_from.json: key 'axes.seed.from': 9223372036854775807 is outside"
    "range_huge|sweep_bad_range_huge.json: key 'axes.seed.from': 18446744073709551615 is outside"
    "seed_big|sweep_bad_seed_big.json: key 'axes.seed\\[2\\]': 9007199254740993 is outside \\[0, 2\\^53\\]"
    "seed_list|sweep_bad_seed_list.json: key 'axes.seed\\[1\\]': 9007199254740993 is outside \\[0, 2\\^53\\]"
    "allreduce_bands|sweep_bad_allreduce_bands.json: key 'axes.allreduce \\(point 0\\)': applies to kernel meshgemv"
    "alpha_poisson|sweep_bad_alpha_poisson.json: key 'fixed.alpha': applies to defect_model negbin"
    "axis_scalar|sweep_bad_axis_scalar.json: key 'axes.batch': 2 must be a list"
    "context|sweep_bad_context.json: key 'axes.context \\(point 1\\)': 513 is beyond tiny-llama's max_position_embeddings 512"
    "kv_capacity|sweep_bad_kv_capacity.json: key 'fixed.kv_capacity': 32 is fewer positions than the point's KV cache holds .64 = batch 1 x context 64."
    "twice|sweep_bad_twice.json: key 'axes.batch\\[2\\]': 1 is listed twice"
    "duplicate_key|sweep_bad_duplicate_key.json: key 'context' is given twice in one object"
    "joint_dup|sweep_bad_joint_dup.json: key 'axes.mapping\\[2\\]': {\"placement\":\"layer-bands\",\"kernel\":\"bands\"} is listed twice"
    "large|sweep_bad_large.json: key 'axes.seed': the study would have more than 100000 points"
    "fixed_list|sweep_bad_fixed_list.json: key 'fixed.context': a fixed setting is one value"
    "joint_keys|sweep_bad_joint_keys.json: key 'axes.mapping\\[1\\]': sets placement where the axis's first value sets placement, kernel"
    "joint_twice|sweep_bad_joint_twice.json: key 'axes.kernel': is swept by axis 'mapping' already"
    "joint_fixed|sweep_bad_joint_fixed.json: key 'axes.mapping\\[0\\].kernel': is also under \"fixed\""
    "joint_setting|sweep_bad_joint_setting.json: key 'axes.mapping\\[0\\].kernal': unknown setting"
    "joint_value|sweep_bad_joint_value.json: key 'axes.mapping\\[1\\]': \"square\" must be an object of settings"
    "joint_name|sweep_bad_joint_name.json: key 'axes.mapping\\[1\\].placement': unknown placement 'nowhere'"
    "joint_point|sweep_bad_joint_point.json: key 'axes.mapping.context \\(point 1\\)': 513 is beyond"
    "joint_type|sweep_bad_joint_type.json: key 'axes.mapping\\[0\\].batch': \"2\" must be a whole number")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 rx)
  wafer_cli_test(sweep_bad_${name} ${SERR} --stderr "${rx}" --no-file ${OUT}/sweep_bad_${name}
    -- ${WAFER_EMU} sweep --spec ${DATA}/sweep_bad_${name}.json --out ${OUT}/sweep_bad_${name})
endforeach()
# A range of 100,000 seeds is refused at once (found by fuzzing, tests/fuzz/cli_fuzz.py with another seed: the
# check for values listed twice compared every pair, 17 s for this file in a release build, minutes under the
# sanitizers; the limit is a generous guard against that, not a speed goal).
set_tests_properties(cli.sweep_bad_large PROPERTIES TIMEOUT 10)

# The summary's tables on a points file written by hand (placements, the best per density, sensitivity slopes).
add_test(NAME cli.sweep_summary COMMAND ${SWEEP_CHECK} summary ${WAFER_EMU} ${DATA}/sweep_summary_known.json ${OUT}/sweep_summary)
# A small study with a placement axis and a hop_latency axis, end to end on the tiny wafer.
add_test(NAME cli.sweep_study_tables COMMAND ${SWEEP_CHECK} study ${WAFER_EMU} ${DATA}/sweep_placement_tiny.json ${OUT}/sweep_study)
# A joint axis (each placement with its kernel) beside density and hop_latency axes: the summary's tables, with the
# placements side by side across kernels, and every good point equal to `decode` with its settings.
add_test(NAME cli.sweep_joint_tables COMMAND ${SWEEP_CHECK} study ${WAFER_EMU} ${DATA}/sweep_joint_tiny.json ${OUT}/sweep_joint)
add_test(NAME cli.sweep_joint_decode COMMAND ${SWEEP_CHECK} decode ${WAFER_EMU} ${DATA}/sweep_joint_tiny.json ${OUT}/sweep_joint_decode)

# Every shipped study checks out without running (sweep --check: every point resolved, nothing written).
set(WAFER_STUDY_POINTS_tiny 24)
set(WAFER_STUDY_POINTS_defect-yield 400)
set(WAFER_STUDY_POINTS_placement 150)
set(WAFER_STUDY_POINTS_sensitivity 27)
file(GLOB WAFER_STUDIES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/configs/studies/*.json)
foreach(s IN LISTS WAFER_STUDIES)
  get_filename_component(n ${s} NAME_WE)
  set(points "[0-9]+")
  if(DEFINED WAFER_STUDY_POINTS_${n})
    set(points ${WAFER_STUDY_POINTS_${n}})
  endif()
  wafer_cli_test(sweep_check_study_${n} --stdout "checked, ${points} points" -- ${WAFER_EMU} sweep --check --spec ${s})
endforeach()
wafer_cli_test(sweep_check_bad ${SERR} --stderr "sweep_bad_placement.json: key 'axes.placement\\[1\\]': unknown placement"
  -- ${WAFER_EMU} sweep --check --spec ${DATA}/sweep_bad_placement.json)
wafer_cli_test(sweep_check_out ${SERR} --stderr "--check reads the study only. --out does not apply" --no-file ${OUT}/sweep_bad
  -- ${WAFER_EMU} sweep --check --spec ${STUDY} --out ${OUT}/sweep_bad)
wafer_cli_test(sweep_check_no_spec ${SERR} --stderr "--check needs --spec FILE" -- ${WAFER_EMU} sweep --check)

# placement "auto" is decode's search at every point: each good point equals `decode --placement auto` with
# the same settings (defects included), and records the chosen candidate.
add_test(NAME cli.sweep_auto_decode COMMAND ${SWEEP_CHECK} decode ${WAFER_EMU} ${DATA}/sweep_auto.json ${OUT}/sweep_auto)

# The points of a process share what does not change between them (apps/point_cache.h: the repaired defect map,
# the mapping, the mesh model, freed memory): the lines equal --no-cache's, with one process and with --jobs 2,
# and every kind of reuse happens (tests/cli/data/sweep_cache.json); each point of that study equals `decode`.
add_test(NAME cli.sweep_cache COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cache_check.py sweep ${WAFER_EMU}
  ${DATA}/sweep_cache.json ${OUT}/sweep_cache)
add_test(NAME cli.sweep_cache_decode COMMAND ${SWEEP_CHECK} decode ${WAFER_EMU} ${DATA}/sweep_cache.json ${OUT}/sweep_cache_decode)
# Defect maps that differ by seed and repair completely share one mapping on a placement that reads no links
# (mapper::mapping_reads_links): layer-bands' three later seeds keep the first one's, defect-aware's none, and
# no repair or mesh is kept (every fabric differs); the lines equal --no-cache's and each equals `decode`.
add_test(NAME cli.sweep_cache_seeds COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cache_check.py sweep ${WAFER_EMU}
  ${DATA}/sweep_cache_seeds.json ${OUT}/sweep_cache_seeds mapping=3)
add_test(NAME cli.sweep_cache_seeds_decode COMMAND ${SWEEP_CHECK} decode ${WAFER_EMU} ${DATA}/sweep_cache_seeds.json
  ${OUT}/sweep_cache_seeds_decode)
# Pipelines in a study: a whole run gives each point's wafers the CPUs (side by side, as decode does), --point
# one thread; the same lines either way, and decode's numbers (data/sweep_wafers_tiny.json).
add_test(NAME cli.sweep_wafers_decode COMMAND ${SWEEP_CHECK} decode ${WAFER_EMU} ${DATA}/sweep_wafers_tiny.json ${OUT}/sweep_wafers)
# A study resumed after a model file it names was edited is refused (spec.json's `inputs`); restored, it runs.
add_test(NAME cli.sweep_inputs COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/sweep_inputs_check.py ${WAFER_EMU}
  ${OUT}/sweep_inputs ${PROJECT_SOURCE_DIR}/configs)
