# wafer-emu report (docs/report.md): the pages as documents (SVGs, nothing outside the page, CSVs = the
# results), rendered by headless Chromium (skipped with a message where it is not installed), bad input.
add_test(NAME cli.report_check COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/report_check.py ${WAFER_EMU} ${OUT}/report_check)
add_test(NAME cli.report_render COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/report_render.py ${WAFER_EMU} ${OUT}/report_render)
set_tests_properties(cli.report_render PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

wafer_cli_test(report_decode --stdout "page_bytes" --file ${OUT}/rep_tiny.html --file ${OUT}/rep_tiny.wafer_0.tile_busy.csv
  --no-file ${OUT}/rep_tiny.html.tmp -- ${WAFER_EMU} report ${OUT}/decode_tiny.json --out ${OUT}/rep_tiny.html)
set_tests_properties(cli.decode_tiny PROPERTIES FIXTURES_SETUP decode_tiny_json)
set_tests_properties(cli.report_decode PROPERTIES FIXTURES_REQUIRED decode_tiny_json)
wafer_cli_test(report_no_results --exit 2 --one-line-error --stderr "report_no_results: holds no results"
  --no-file ${OUT}/rep_bad.html -- ${WAFER_EMU} report ${DATA}/report_no_results --out ${OUT}/rep_bad.html)
wafer_cli_test(report_empty_points --exit 2 --one-line-error --stderr "report_empty_points/points.jsonl: holds no results"
  --no-file ${OUT}/rep_bad.html -- ${WAFER_EMU} report ${DATA}/report_empty_points --out ${OUT}/rep_bad.html)
wafer_cli_test(report_schema --exit 2 --one-line-error --stderr "report_schema9/spec.json: not a spec.json of this build's studies"
  --no-file ${OUT}/rep_bad.html -- ${WAFER_EMU} report ${DATA}/report_schema9 --out ${OUT}/rep_bad.html)
wafer_cli_test(report_malformed --exit 2 --one-line-error --stderr "report_bad.json: malformed JSON"
  --no-file ${OUT}/rep_bad.html -- ${WAFER_EMU} report ${DATA}/report_bad.json --out ${OUT}/rep_bad.html)
wafer_cli_test(report_not_decode --exit 2 --one-line-error --stderr "wafer_override.json: not the results of wafer-emu decode"
  --no-file ${OUT}/rep_bad.html -- ${WAFER_EMU} report ${DATA}/wafer_override.json --out ${OUT}/rep_bad.html)
wafer_cli_test(report_missing --exit 2 --one-line-error --stderr "nope.json: no such file or folder"
  --no-file ${OUT}/rep_bad.html -- ${WAFER_EMU} report ${DATA}/nope.json --out ${OUT}/rep_bad.html)
wafer_cli_test(report_no_input --exit 2 --one-line-error --stderr "--in RESULTS.json\\|DIR is required"
  -- ${WAFER_EMU} report --out ${OUT}/rep_bad.html)
wafer_cli_test(report_unwritable --exit 2 --one-line-error --stderr "no-such-dir/r.html: cannot write output file"
  --no-file ${OUT}/no-such-dir/r.html -- ${WAFER_EMU} report ${DATA}/report_schema9 --out ${OUT}/no-such-dir/r.html)
wafer_cli_test(report_results_version --exit 2 --one-line-error
  --stderr "report_schema_version.json: results of schema_version 99 \\(this wafer-emu reads 2\\).*rerun decode --json"
  --no-file ${OUT}/rep_bad.html -- ${WAFER_EMU} report ${DATA}/report_schema_version.json --out ${OUT}/rep_bad.html)
# Results of schema_version 1 (tables as rows of "name [unit]" keys) are refused, not misread.
wafer_cli_test(report_results_v1 --exit 2 --one-line-error
  --stderr "report_schema_v1.json: results of schema_version 1 \\(this wafer-emu reads 2\\).*rerun decode --json"
  --no-file ${OUT}/rep_bad.html -- ${WAFER_EMU} report ${DATA}/report_schema_v1.json --out ${OUT}/rep_bad.html)
