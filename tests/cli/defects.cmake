# wafer-emu defects: good runs, determinism, files, and every bad input of the defects issue.
set(D ${DATA}/defects_)
# Good runs.
wafer_cli_test(defects_small --stdout "success_rate" --stdout "zero_defect_analytic" --stdout "repair_analytic"
  --same-output-twice -- ${WAFER_EMU} defects --wafer small --maps 30 --density 3 --seed 7)
wafer_cli_test(defects_negbin_spare_rows_cols --stdout "spare-rows-cols" --stdout "alpha +0.5" --same-output-twice
  -- ${WAFER_EMU} defects --wafer small --maps 20 --density 5 --model negbin --alpha 0.5 --repair spare-rows-cols --seed 3)
wafer_cli_test(defects_wse3 --stdout "physical_tiles +969624" --stdout "mean" -- ${WAFER_EMU} defects --maps 2)
wafer_cli_test(defects_json --file ${OUT}/defects.json --no-file ${OUT}/defects.json.tmp
  -- ${WAFER_EMU} defects --wafer tiny --maps 5 --json ${OUT}/defects.json)
wafer_cli_test(defects_out_csv --file ${OUT}/defects_map.csv --no-file ${OUT}/defects_map.csv.tmp
  -- ${WAFER_EMU} defects --wafer small --maps 2 --density 10 --out ${OUT}/defects_map.csv)
wafer_cli_test(defects_out_json --file ${OUT}/defects_map.json -- ${WAFER_EMU} defects --wafer small --maps 1 --density 10 --out ${OUT}/defects_map.json)
wafer_cli_test(defects_in_csv --stdout "complete +yes" --stdout "extra_hops_per_link_max +3 hops" --stdout "router_defects +1"
  -- ${WAFER_EMU} defects --wafer tiny --in ${D}ok.csv)
wafer_cli_test(defects_in_json --stdout "complete +yes" --stdout "link_defects +1" -- ${WAFER_EMU} defects --wafer tiny --in ${D}ok.json)
wafer_cli_test(defects_in_convert --file ${OUT}/defects_converted.json -- ${WAFER_EMU} defects --wafer tiny --in ${D}ok.csv --out ${OUT}/defects_converted.json)
wafer_cli_test(defects_in_unrepairable --stdout "complete +no" --stdout "reason +2 physical rows" --stdout "usable_rectangle +7 x 8"
  -- ${WAFER_EMU} defects --wafer tiny --in ${D}unrepairable.csv)
wafer_cli_test(defects_help --stdout "[-]-density" --stdout "row-shift, spare-rows-cols" -- ${WAFER_EMU} defects --help)

# Bad input: one line naming the problem, exit 2, no partial output.
set(ERR --exit 2 --one-line-error)
wafer_cli_test(defects_unknown_scheme ${ERR} --stderr "unknown repair scheme 'magic' .known: row-shift, spare-rows-cols" -- ${WAFER_EMU} defects --wafer tiny --repair magic)
wafer_cli_test(defects_unknown_model ${ERR} --stderr "unknown defect model 'gauss'" -- ${WAFER_EMU} defects --wafer tiny --model gauss)
wafer_cli_test(defects_unknown_preset ${ERR} --stderr "unknown wafer preset 'wse9'" -- ${WAFER_EMU} defects --wafer wse9)
wafer_cli_test(defects_huge_wafer ${ERR} --stderr "'logical_(width|height)' = 1000000 is outside" -- ${WAFER_EMU} defects --wafer ${DATA}/bad_huge.json)
wafer_cli_test(defects_malformed_wafer ${ERR} --stderr "bad_malformed.json: malformed JSON" -- ${WAFER_EMU} defects --wafer ${DATA}/bad_malformed.json)
wafer_cli_test(defects_negative_density ${ERR} --stderr "defect density -0.1 per cm.2 must be finite and >= 0" -- ${WAFER_EMU} defects --wafer tiny --density=-0.1)
wafer_cli_test(defects_nan_density ${ERR} --stderr "defect density nan per cm.2 must be finite" -- ${WAFER_EMU} defects --wafer tiny --density nan)
wafer_cli_test(defects_inf_density ${ERR} --stderr "defect density inf per cm.2 must be finite" -- ${WAFER_EMU} defects --wafer tiny --density inf)
wafer_cli_test(defects_absurd_density ${ERR} --stderr "puts .* defects on average on a wafer of 81 tiles" -- ${WAFER_EMU} defects --wafer tiny --density 1e12)
wafer_cli_test(defects_zero_alpha ${ERR} --stderr "alpha = 0 must be finite and > 0" -- ${WAFER_EMU} defects --wafer tiny --model negbin --alpha 0)
wafer_cli_test(defects_negative_alpha ${ERR} --stderr "alpha = -2 must be finite and > 0" -- ${WAFER_EMU} defects --wafer tiny --alpha=-2)
wafer_cli_test(defects_nan_alpha ${ERR} --stderr "alpha = nan must be finite" -- ${WAFER_EMU} defects --wafer tiny --alpha nan)
wafer_cli_test(defects_inf_alpha ${ERR} --stderr "alpha = inf must be finite" -- ${WAFER_EMU} defects --wafer tiny --alpha inf)
wafer_cli_test(defects_alpha_poisson ${ERR} --stderr "--alpha applies to --model negbin" -- ${WAFER_EMU} defects --wafer tiny --alpha 3)
wafer_cli_test(defects_zero_maps ${ERR} --stderr "--maps 0 is outside .1, 1000000." -- ${WAFER_EMU} defects --wafer tiny --maps 0)
wafer_cli_test(defects_negative_maps ${ERR} --stderr "--maps -5 is outside" -- ${WAFER_EMU} defects --wafer tiny --maps=-5)
wafer_cli_test(defects_absurd_maps ${ERR} --stderr "--maps 1000000000000 is outside" -- ${WAFER_EMU} defects --wafer tiny --maps 1000000000000)
wafer_cli_test(defects_text_maps ${ERR} --stderr "argument .'many'. for option '--maps' is invalid" -- ${WAFER_EMU} defects --wafer tiny --maps many)
wafer_cli_test(defects_bad_seed ${ERR} --stderr "--seed '-3' must be a whole number" -- ${WAFER_EMU} defects --wafer tiny --seed=-3)
wafer_cli_test(defects_out_unwritable ${ERR} --stderr "no-such-dir/m.csv: cannot write output file" --no-file ${OUT}/no-such-dir
  -- ${WAFER_EMU} defects --wafer tiny --out ${OUT}/no-such-dir/m.csv)
wafer_cli_test(defects_out_extension ${ERR} --stderr "--out .*m.txt: a defect map file ends in .csv or .json" --no-file ${OUT}/m.txt
  -- ${WAFER_EMU} defects --wafer tiny --out ${OUT}/m.txt)
wafer_cli_test(defects_json_unwritable ${ERR} --stderr "cannot write output file" --no-file ${OUT}/defects_never.csv
  -- ${WAFER_EMU} defects --wafer tiny --json ${OUT}/no-such-dir/x.json --out ${OUT}/defects_never.csv)
wafer_cli_test(defects_in_with_maps ${ERR} --stderr "--maps does not apply with --in" -- ${WAFER_EMU} defects --wafer tiny --in ${D}ok.csv --maps 3)
wafer_cli_test(defects_in_missing ${ERR} --stderr "nope.csv: cannot open defect map" -- ${WAFER_EMU} defects --wafer tiny --in ${D}nope.csv)
# Bad defect files: the message names file and line (CSV) or entry (JSON); --out is never written.
foreach(case
    "out_of_range.csv|defects_out_of_range.csv:3: core defect at .9, 2. is outside the physical grid 9 x 9"
    "duplicate.csv|defects_duplicate.csv:4: duplicate core defect at .1, 1."
    "unknown_kind.csv|defects_unknown_kind.csv:2: unknown defect kind 'blob'"
    "garbage.csv|defects_garbage.csv:3: expected 'kind,x,y.,dir.', got 'this is not a defect'"
    "link_leaves.csv|defects_link_leaves.csv:2: link defect at .8, 2. towards E leaves the physical grid"
    "malformed.json|defects_malformed.json: malformed JSON"
    "duplicate.json|defects_duplicate.json: defects.1.: duplicate core defect"
    "duplicate_key.json|defects_duplicate_key.json: key 'x' is given twice in one object"
    "out_of_range.json|defects_out_of_range.json: defects.1.: core defect at .1, 10. is outside"
    "unknown_kind.json|defects_unknown_kind.json: defects.0.: unknown defect kind \"wire\""
    "unknown_key.json|defects_unknown_key.json: unknown key 'extra'")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 file)
  list(GET parts 1 rx)
  string(REPLACE "." "_" tname "${file}")
  wafer_cli_test(defects_bad_${tname} ${ERR} --stderr "${rx}" --no-file ${OUT}/defects_bad_${tname}.csv
    -- ${WAFER_EMU} defects --wafer tiny --in ${D}${file} --out ${OUT}/defects_bad_${tname}.csv)
endforeach()

# The maps on any number of threads give the same figures, and a study stopped part way resumes from its journal
# (.<json>.partial.jsonl): the same output and JSON as a run in one go; a journal of other settings, one another run
# holds, or one with a damaged line is refused (defects_resume_check.py).
add_test(NAME cli.defects_resume COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/defects_resume_check.py ${WAFER_EMU} ${OUT}/defects_resume)
wafer_cli_test(defects_zero_threads ${ERR} --stderr "--threads 0 is outside .1, 1024." -- ${WAFER_EMU} defects --wafer tiny --threads 0)
wafer_cli_test(defects_in_with_threads ${ERR} --stderr "--threads does not apply with --in" -- ${WAFER_EMU} defects --wafer tiny --in ${D}ok.csv --threads 2)
wafer_cli_test(defects_density_named ${ERR} --stderr "--density: defect density -1 per cm.2 must be finite" -- ${WAFER_EMU} defects --wafer tiny --density -1)
# A seed of 2^63 or more is shown as given (it was shown as a negative number, -1 for 2^64 - 1, in the text and the
# JSON, so the run could not be repeated from its results).
wafer_cli_test(defects_seed_max --stdout "seed +18446744073709551615"
  -- ${WAFER_EMU} defects --wafer tiny --maps 1 --seed 18446744073709551615)
