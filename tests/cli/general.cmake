# General behaviour of the program and the wafer files.
wafer_cli_test(help --stdout "describe" -- ${WAFER_EMU} --help)
wafer_cli_test(unknown_subcommand --exit 2 --one-line-error --stderr "unknown subcommand 'frobnicate'" -- ${WAFER_EMU} frobnicate)
wafer_cli_test(unknown_option --exit 2 --one-line-error --stderr "unrecognised option|unrecognized option" -- ${WAFER_EMU} describe --bogus 1)
# No guessing: an option's prefix is refused (it was taken as the one option it began, --con as --context), the
# whole name taken.
wafer_cli_test(option_prefix --exit 2 --one-line-error --stderr "unrecognised option '--con'|unrecognized option '--con'"
  -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --con 64)
wafer_cli_test(option_whole --stdout "latency" -- ${WAFER_EMU} decode --wafer tiny --model tiny-llama --context 64)
wafer_cli_test(describe --stdout "simd_width" --stdout "wse3" --same-output-twice -- ${WAFER_EMU} describe)
wafer_cli_test(describe_json --file ${OUT}/describe.json --no-file ${OUT}/describe.json.tmp -- ${WAFER_EMU} describe --json ${OUT}/describe.json)
wafer_cli_test(wafer_file_override --stdout "simd_width +[^ ]+ +16" -- ${WAFER_EMU} describe --wafer ${DATA}/wafer_override.json)
wafer_cli_test(wafer_file_ramp --stdout "ramp_latency +cycles +0 " -- ${WAFER_EMU} describe --wafer ${DATA}/wafer_ramp.json)
wafer_cli_test(wafer_ramp_range --exit 2 --one-line-error --stderr "bad_ramp.json: 'ramp_latency' = 1001 is outside \\[0, 1000\\] cycles"
  -- ${WAFER_EMU} describe --wafer ${DATA}/bad_ramp.json)
wafer_cli_test(unknown_preset --exit 2 --one-line-error --stderr "unknown wafer preset 'wse9'" -- ${WAFER_EMU} describe --wafer wse9)
wafer_cli_test(wafer_malformed --exit 2 --one-line-error --stderr "bad_malformed.json: malformed JSON" -- ${WAFER_EMU} describe --wafer ${DATA}/bad_malformed.json)
wafer_cli_test(wafer_unknown_key --exit 2 --one-line-error --stderr "bad_unknown_key.json: unknown key 'simd_widht'" -- ${WAFER_EMU} describe --wafer ${DATA}/bad_unknown_key.json)
wafer_cli_test(wafer_missing --exit 2 --one-line-error --stderr "missing required field.*clock_ghz" -- ${WAFER_EMU} describe --wafer ${DATA}/bad_missing.json)
wafer_cli_test(wafer_zero --exit 2 --one-line-error --stderr "'logical_width' = 0 is outside" -- ${WAFER_EMU} describe --wafer ${DATA}/bad_zero.json)
wafer_cli_test(wafer_negative --exit 2 --one-line-error --stderr "'logical_height' = -4 is outside" -- ${WAFER_EMU} describe --wafer ${DATA}/bad_negative.json)
wafer_cli_test(wafer_fraction --exit 2 --one-line-error --stderr "'logical_width' = 8.5 must be a whole number" -- ${WAFER_EMU} describe --wafer ${DATA}/bad_fraction.json)
wafer_cli_test(wafer_huge --exit 2 --one-line-error --stderr "'logical_(width|height)' = 1000000 is outside" -- ${WAFER_EMU} describe --wafer ${DATA}/bad_huge.json)
wafer_cli_test(wafer_type --exit 2 --one-line-error --stderr "'clock_ghz' must be a number" -- ${WAFER_EMU} describe --wafer ${DATA}/bad_type.json)
# A key given twice in one object of an input file is an error naming it, in every kind of input file read as JSON
# (hw::parse_input_json): the parser would keep the last and silently drop the other; see also sweep, validate and
# defects' duplicate_key cases.
wafer_cli_test(wafer_duplicate_key --exit 2 --one-line-error --stderr "bad_duplicate_key.json: key 'hop_latency' is given twice in one object"
  -- ${WAFER_EMU} describe --wafer ${DATA}/bad_duplicate_key.json)
wafer_cli_test(model_duplicate_key --exit 2 --one-line-error
  --stderr "decode_duplicate_key.json: key 'num_hidden_layers' is given twice in one object"
  -- ${WAFER_EMU} decode --wafer tiny --model ${DATA}/decode_duplicate_key.json --context 64)
wafer_cli_test(wafer_missing_file --exit 2 --one-line-error --stderr "nope.json: cannot open wafer file" -- ${WAFER_EMU} describe --wafer ${DATA}/nope.json)
wafer_cli_test(json_unwritable --exit 2 --one-line-error --stderr "cannot write output file" -- ${WAFER_EMU} describe --json ${OUT}/no-such-dir/x.json)
# WAFER_EMU_HUGE_PAGES (noc/big_array.h): any value but 1, 0 or nothing is refused before anything runs (describe
# allocates no big array: the check is main's, up front).
wafer_cli_test(huge_pages_bad --exit 2 --one-line-error --stderr "WAFER_EMU_HUGE_PAGES must be 1 \\(huge pages\\), 0 \\(none\\) or unset.*not 'yes'"
  -- ${WAFER_EMU} describe)
set_tests_properties(cli.huge_pages_bad PROPERTIES ENVIRONMENT "WAFER_EMU_HUGE_PAGES=yes")
