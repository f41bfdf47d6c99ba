# wafer-emu validate: case files of measurements (docs/fidelity.md). Good runs on tiny cases (the test models
# on the 8 x 8 tiny wafer, Plans on a row), the fit recovering known values, the shipped public case file, and
# every bad input as a one-line error with exit 2 and no output file left behind.
set(VCASES ${DATA}/validate_tiny.json)
set(PUBLIC ${PROJECT_SOURCE_DIR}/configs/validation/public.json)

# Good runs. The collective and hop rows are hand-computed from the timing rules (docs/routing.md,
# docs/timing.md; hop 1, ramp 2, stage 2 on tiny): chain of 8 tiles, 4 wavelets: 7 x (1 + 4) + 6 x 2 + 3 = 50
# cycles against a "measured" 40 (+25 %); broadcast: 7 + 4 + 3 = 14 (0 %); tree: 7 + 2 x 3 x 2 + 3 x 3 + 2 x 2 =
# 32 against 40 (-20 %); one more hop: 1 cycle (0 %).
set(VROWS --stdout "chain-8x4 +collective_cycles +50 +40 +cycles +25\n" --stdout "bcast-8x4 +collective_cycles +14 +14 +cycles +0\n"
  --stdout "tree-8x4 +collective_cycles +32 +40 +cycles +-20\n"
  --stdout "hop +hop_cycles +1 +1 +cycles +0\n")
wafer_cli_test(validate_tiny ${VROWS} --stdout "tiny-step +step_cycles +[0-9]+ +4000 +cycles +-?[0-9.]+\n"
  --stdout "mean_abs_error +[0-9.]+ %" --same-output-twice
  --file ${OUT}/validate_tiny.json --no-file ${OUT}/validate_tiny.json.tmp -- ${WAFER_EMU} validate --cases ${VCASES} --json ${OUT}/validate_tiny.json)
wafer_cli_test(validate_tiny_cycle ${VROWS} --stdout "fidelity +cycle" -- ${WAFER_EMU} validate --cases ${VCASES} --fidelity cycle)
wafer_cli_test(validate_only --stdout "2 case\\(s\\)" --stdout "chain-8x4" --stdout "hop +hop_cycles"
  -- ${WAFER_EMU} validate --cases ${VCASES} --only "chain*,hop")
wafer_cli_test(validate_only_twice --exit 2 --one-line-error --stderr "--only 'hop,hop': names 'hop' twice"
  -- ${WAFER_EMU} validate --cases ${VCASES} --only "hop,hop")
wafer_cli_test(validate_check_no_cache --exit 2 --one-line-error --stderr "--check emulates nothing: --no-cache does not apply"
  -- ${WAFER_EMU} validate --cases ${VCASES} --check --no-cache)
wafer_cli_test(validate_help --stdout "[-]-cases" --stdout "[-]-fit" --stdout "[-]-wafer-out" -- ${WAFER_EMU} validate --help)
# The predictions equal what `decode` reports for the same points; the error column is what it says.
add_test(NAME cli.validate_matches_decode COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/validate_check.py ${WAFER_EMU} ${VCASES} ${OUT}/validate_check)
# The fit recovers task_overhead = 17 (and 17 / 9 with vector_setup) from measured values generated at them.
add_test(NAME cli.validate_fit COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/validate_fit.py ${WAFER_EMU} ${DATA}/validate_fit.json ${OUT}/validate_fit)

# The shipped public cases: the file and every case's settings check out; the collective and hop cases run
# (the WaferLLM cases need the meshgemv kernel: the mapper's refusal is reported like any other).
wafer_cli_test(validate_public_check --stdout "31 cases" --stdout "ok: the file parses" -- ${WAFER_EMU} validate --cases ${PUBLIC} --check)
wafer_cli_test(validate_public_collectives --stdout "L1-chain-P16-B1 +collective_cycles +[0-9]+ +91 +cycles"
  --stdout "L1-bcast-P512-B1024 +collective_cycles +[0-9]+ +1540 +cycles" --stdout "unit-hop +hop_cycles +1 +1 +cycles +0\n"
  -- ${WAFER_EMU} validate --cases ${PUBLIC} --only "L1-*,unit-*")

# Fit errors: one line naming the parameter, exit 2, no output.
set(VERR --exit 2 --one-line-error)
# (a refusal is the run's answer: no journal is left to resume from)
wafer_cli_test(validate_fit_insensitive ${VERR} --stderr "--fit 'task_overhead': no case is sensitive to it" --no-file ${OUT}/vfi.json
  --no-file ${OUT}/.vfi.json.partial.jsonl
  -- ${WAFER_EMU} validate --cases ${VCASES} --only "chain*,hop" --fit task_overhead --json ${OUT}/vfi.json)
wafer_cli_test(validate_fit_singular ${VERR} --stderr "--fit 'vector_setup': these cases do not tell it apart" --no-file ${OUT}/vfs.json
  --no-file ${OUT}/.vfs.json.partial.jsonl
  -- ${WAFER_EMU} validate --cases ${VCASES} --only tiny-step --fit task_overhead,vector_setup --json ${OUT}/vfs.json)
wafer_cli_test(validate_fit_published ${VERR} --stderr "--fit 'hop_latency': it has a published value" -- ${WAFER_EMU} validate --cases ${VCASES} --fit hop_latency)
wafer_cli_test(validate_fit_clock ${VERR} --stderr "--fit 'clock_ghz': it has a published value" -- ${WAFER_EMU} validate --cases ${VCASES} --fit task_overhead,clock_ghz)
wafer_cli_test(validate_fit_unknown ${VERR} --stderr "--fit 'warp_speed': unknown parameter" -- ${WAFER_EMU} validate --cases ${VCASES} --fit warp_speed)
wafer_cli_test(validate_fit_twice ${VERR} --stderr "--fit 'task_overhead': named twice" -- ${WAFER_EMU} validate --cases ${VCASES} --fit task_overhead,task_overhead)
wafer_cli_test(validate_fit_start ${VERR} --stderr "--fit 'task_overhead': the start -3 is outside" -- ${WAFER_EMU} validate --cases ${VCASES} --fit task_overhead=-3)
wafer_cli_test(validate_fit_set_by_case ${VERR} --stderr "--fit 'task_overhead': case 'c1' sets it in its wafer"
  -- ${WAFER_EMU} validate --cases ${DATA}/validate_bad_fit_set.json --fit task_overhead)
wafer_cli_test(validate_iterations_alone ${VERR} --stderr "--max-iterations applies to --fit"
  -- ${WAFER_EMU} validate --cases ${VCASES} --max-iterations 3)
wafer_cli_test(validate_wafer_out_alone ${VERR} --stderr "--wafer-out needs --fit" -- ${WAFER_EMU} validate --cases ${VCASES} --wafer-out ${OUT}/vwo.json)
wafer_cli_test(validate_wafer_out_unwritable ${VERR} --stderr "no-such-dir/w.json: cannot write output file"
  -- ${WAFER_EMU} validate --cases ${VCASES} --fit task_overhead --wafer-out ${OUT}/no-such-dir/w.json)
# The journal beside --json is an output too: --wafer-out over it was written, then removed with the journal.
wafer_cli_test(validate_wafer_out_journal ${VERR} --stderr "--json .its journal. .*vj.json.partial.jsonl names the file --wafer-out writes"
  -- ${WAFER_EMU} validate --cases ${VCASES} --fit task_overhead --json ${OUT}/vj.json --wafer-out ${OUT}/.vj.json.partial.jsonl)
wafer_cli_test(validate_check_fit ${VERR} --stderr "--check emulates nothing" -- ${WAFER_EMU} validate --cases ${VCASES} --check --fit task_overhead)
wafer_cli_test(validate_no_cases ${VERR} --stderr "--cases FILE is required" -- ${WAFER_EMU} validate)
wafer_cli_test(validate_missing_file ${VERR} --stderr "nope.json: cannot open case file" -- ${WAFER_EMU} validate --cases ${DATA}/nope.json)
wafer_cli_test(validate_only_nothing ${VERR} --stderr "--only 'zzz': no case of .* is named so" -- ${WAFER_EMU} validate --cases ${VCASES} --only zzz)
wafer_cli_test(validate_fidelity ${VERR} --stderr "unknown fidelity 'exact'" -- ${WAFER_EMU} validate --cases ${VCASES} --fidelity exact)

# Bad case files: the message names the file, the case and the key; exit 2; --json is never written.
foreach(case
    "malformed|validate_bad_malformed.json: malformed JSON at byte"
    "top_key|validate_bad_top_key.json: key 'extra': unknown key"
    "schema|validate_bad_schema.json: key 'schema': 2 is not a schema this build reads"
    "empty|validate_bad_empty.json: key 'cases': is empty"
    "case_key|validate_bad_case_key.json: case 'c1': key 'colour': unknown key"
    "other_kind_key|validate_bad_other_kind_key.json: case 'c1': key 'tiles': does not apply to a step_cycles case"
    "measured_key|validate_bad_measured_key.json: case 'c1': key 'measured.layers': does not apply to a step_cycles case"
    "mapping_key|validate_bad_mapping_key.json: case 'c1': key 'mapping.placment': unknown key"
    "wafer_key|validate_bad_wafer_key.json: case 'c1': key 'wafer': unknown key 'simd_widht'"
    "no_value|validate_bad_no_value.json: case 'c1': key 'measured.value': missing"
    "no_unit|validate_bad_no_unit.json: case 'c1': key 'measured.unit': missing"
    "unit|validate_bad_unit.json: case 'c1': key 'measured.unit': 'tokens/s' does not match kind step_cycles"
    "value_zero|validate_bad_value_zero.json: case 'c1': key 'measured.value': 0 is outside \\[1e-06, 1e\\+15\\]"
    "value_tiny|validate_bad_value_tiny.json: case 'c1': key 'measured.value': 1e-300 is outside \\[1e-06, 1e\\+15\\]"
    "value_huge|validate_bad_value_huge.json: case 'c1': key 'measured.value': 1e\\+308 is outside \\[1e-06, 1e\\+15\\]"
    "name_newline|validate_bad_name_newline.json: case #1: key 'name': \"a.nb\" must be one line of text"
    "kind|validate_bad_kind.json: case 'c1': key 'measured.kind': unknown kind 'latency'"
    "type|validate_bad_type.json: case 'c1': key 'context': \"64\" must be a whole number"
    "no_model|validate_bad_no_model.json: case 'c1': key 'model': missing"
    "model_name|validate_bad_model_name.json: case 'c1': key 'model': unknown model 'gpt-9'"
    "inline_model|validate_bad_inline_model.json: case 'c1': key 'model': inline config: missing required field 'hidden_size'"
    "context|validate_bad_context.json: case 'c1': key 'context': 513 is beyond the model's max_position_embeddings 512"
    "allreduce_bands|validate_bad_allreduce_bands.json: case 'c1': key 'mapping.allreduce': applies to kernel meshgemv"
    "placement|validate_bad_placement.json: case 'c1': key 'mapping.placement': unknown placement 'nowhere'"
    "refused|validate_bad_refused.json: case 'c1': the mapper refuses it: layer-bands needs one row of tiles per stage"
    "duplicate|validate_bad_duplicate.json: case 'c1': key 'name': another case has the same name"
    "duplicate_key|validate_bad_duplicate_key.json: key 'value' is given twice in one object"
    "collective|validate_bad_collective.json: case 'c2': key 'collective': unknown collective 'scatter'"
    "tiles|validate_bad_tiles.json: case 'c2': key 'tiles': 9 tiles do not fit in a row"
    "no_name|validate_bad_no_name.json: case #1: key 'name': missing"
    "no_source|validate_bad_no_source.json: case 'c1': key 'source': missing")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 rx)
  wafer_cli_test(validate_bad_${name} ${VERR} --stderr "${rx}" --no-file ${OUT}/validate_bad_${name}.json
    --no-file ${OUT}/validate_bad_${name}.json.tmp
    -- ${WAFER_EMU} validate --cases ${DATA}/validate_bad_${name}.json --json ${OUT}/validate_bad_${name}.json)
endforeach()
# A case too big for the cycle model is refused before anything runs (the first case fits, the second does not).
wafer_cli_test(validate_bad_wide_cycle ${VERR} --stderr "validate_bad_wide_cycle.json: case 'c3': --fidelity cycle handles meshes up to 128x128"
  --no-file ${OUT}/validate_bad_wide_cycle.json
  -- ${WAFER_EMU} validate --cases ${DATA}/validate_bad_wide_cycle.json --fidelity cycle --json ${OUT}/validate_bad_wide_cycle.json)
# The ramps' latency has a published value (docs/timing.md): it is not fitted.
wafer_cli_test(validate_fit_ramp --exit 2 --one-line-error --stderr "--fit 'ramp_latency': it has a published value"
  -- ${WAFER_EMU} validate --cases ${VCASES} --fit ramp_latency)

# A run stopped part way resumes from its journal (.<json>.partial.jsonl): the predictions made before taken from it,
# the same output and JSON as a run in one go; a journal of other settings, one another run holds, or one with a
# damaged line is refused (validate_resume_check.py).
add_test(NAME cli.validate_resume COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/validate_resume_check.py ${WAFER_EMU}
  ${DATA}/validate_resume.json ${OUT}/validate_resume)
