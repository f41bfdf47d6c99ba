# wafer-emu noc: synthetic traffic on the mesh (issue 3). Good runs and every bad input (one line, exit 2).
set(NOC ${WAFER_EMU} noc --wafer tiny --cycles 300)
wafer_cli_test(noc_approx --stdout "bursts_delivered +[1-9]" --stdout "mean_latency" --stdout "p99_latency"
  --stdout "accepted_throughput" --stdout "link_wait_share" --stdout "most_loaded_links" --same-output-twice
  -- ${NOC} --rate 0.05 --seed 3)
wafer_cli_test(noc_cycle --stdout "fidelity +cycle" --stdout "bursts_delivered +[1-9]" --same-output-twice
  -- ${NOC} --rate 0.05 --seed 3 --fidelity cycle)
wafer_cli_test(noc_json --file ${OUT}/noc.json --no-file ${OUT}/noc.json.tmp
  -- ${NOC} --pattern row-reduce --rate 0.1 --json ${OUT}/noc.json)
wafer_cli_test(noc_column_broadcast --stdout "bursts_delivered +[1-9]" -- ${NOC} --pattern column-broadcast --rate 0.02)
wafer_cli_test(noc_hotspot --stdout "bursts_delivered +[1-9]" -- ${NOC} --pattern hotspot --rate 0.05 --fidelity cycle)
wafer_cli_test(noc_transpose --stdout "bursts_delivered +[1-9]" -- ${NOC} --pattern transpose --rate 0.05)
wafer_cli_test(noc_neighbour --stdout "bursts_delivered +[1-9]" -- ${NOC} --pattern neighbour --rate 0.05)
wafer_cli_test(noc_density --stdout "repair_complete" --stdout "bursts_delivered" -- ${NOC} --density 2 --seed 5)
wafer_cli_test(noc_defect_file --stdout "defects +1 defects" --stdout "stretched_links" --same-output-twice
  -- ${NOC} --defects ${DATA}/noc_one_defect.csv --rate 0.05)

wafer_cli_test(noc_rate_high --exit 2 --one-line-error --stderr "--rate 1.5 is outside \\[0, 1\\]" -- ${NOC} --rate 1.5)
wafer_cli_test(noc_rate_negative --exit 2 --one-line-error --stderr "--rate -0.1 is outside \\[0, 1\\]" -- ${NOC} --rate=-0.1)
wafer_cli_test(noc_cycles_zero --exit 2 --one-line-error --stderr "--cycles 0 is outside" -- ${WAFER_EMU} noc --wafer tiny --cycles 0)
wafer_cli_test(noc_cycles_negative --exit 2 --one-line-error --stderr "--cycles -5 is outside" -- ${WAFER_EMU} noc --wafer tiny --cycles=-5)
wafer_cli_test(noc_burst_zero --exit 2 --one-line-error --stderr "--burst-wavelets 0 is outside" -- ${NOC} --burst-wavelets 0)
wafer_cli_test(noc_burst_negative --exit 2 --one-line-error --stderr "--burst-wavelets -8 is outside" -- ${NOC} --burst-wavelets=-8)
wafer_cli_test(noc_unknown_pattern --exit 2 --one-line-error --stderr "unknown pattern 'tornado' \\(known: uniform, transpose"
  -- ${NOC} --pattern tornado)
wafer_cli_test(noc_unknown_fidelity --exit 2 --one-line-error --stderr "unknown fidelity 'exact'" -- ${NOC} --fidelity exact)
wafer_cli_test(noc_cycle_too_large --exit 2 --one-line-error --timeout 20 --no-file ${OUT}/noc_large.json
  --stderr "cycle fidelity supports meshes up to 128 x 128 tiles.*wafer 'wse3' is 762 x 1172"
  -- ${WAFER_EMU} noc --wafer wse3 --fidelity cycle --json ${OUT}/noc_large.json)
wafer_cli_test(noc_cut_mesh --exit 2 --one-line-error --stderr "tile \\([0-9]+,[0-9]+\\) cannot reach \\([0-9]+,[0-9]+\\)"
  --no-file ${OUT}/noc_cut.json -- ${NOC} --defects ${DATA}/noc_cut.csv --rate 0.1 --json ${OUT}/noc_cut.json)
wafer_cli_test(noc_defects_and_density --exit 2 --one-line-error --stderr "not both"
  -- ${NOC} --defects ${DATA}/noc_one_defect.csv --density 1)
wafer_cli_test(noc_defects_missing --exit 2 --one-line-error --stderr "nope.csv" -- ${NOC} --defects ${DATA}/nope.csv)
wafer_cli_test(noc_too_much_traffic --exit 2 --one-line-error --stderr "route edges \\(limit"
  -- ${WAFER_EMU} noc --wafer wse3 --rate 1 --burst-wavelets 1 --cycles 1000)
# Nothing delivered, no latency: nan (null in the JSON), not 0 cycles.
wafer_cli_test(noc_nothing_delivered --stdout "bursts_delivered +0 bursts" --stdout "mean_latency +nan cycles +no burst delivered"
  --stdout "p99_latency +nan cycles" -- ${WAFER_EMU} noc --wafer tiny --rate 0)
# The progress line's total drawn once while the mesh drains (it was drawn at every tick of the drain).
wafer_cli_test(noc_progress_total_once --stderr "^(?![\\s\\S]*\\(100%\\)[\\s\\S]*\\(100%\\))[\\s\\S]*\\(100%\\)"
  -- ${WAFER_EMU} noc --wafer tiny --fidelity cycle --cycles 20000 --rate 0.9)
# A run that injects nothing says why (a tile's first burst is due after burst / rate cycles), not only nan.
wafer_cli_test(noc_nothing_injected --stdout "no burst delivered: a tile injects a burst of 1000000 wavelets every 100000000 cycles"
  -- ${WAFER_EMU} noc --wafer tiny --burst-wavelets 1000000)
wafer_cli_test(noc_nothing_injected_rare --stdout "wavelets every 8e\\+300 cycles on average at rate 1e-300"
  -- ${WAFER_EMU} noc --wafer tiny --rate 1e-300)
# Traffic that deadlocks on the cycle model (column broadcasts whose branches wait on each other where they fork,
# docs/routing.md) is said in one line, at once (an internal error after a million cycles, or no end on `small`);
# the same traffic below the rate runs.
wafer_cli_test(noc_deadlock --exit 2 --one-line-error --stderr "column-broadcast traffic at --rate 0.1 deadlocks on the cycle model: at cycle [0-9]+, [0-9]+ wavelets wait"
  -- ${WAFER_EMU} noc --wafer tiny --fidelity cycle --pattern column-broadcast --rate 0.1)
wafer_cli_test(noc_no_deadlock --stdout "bursts_delivered +[1-9]" -- ${WAFER_EMU} noc --wafer tiny --fidelity cycle --pattern column-broadcast --rate 0.01)
wafer_cli_test(noc_seed_max --stdout "seed +18446744073709551615" -- ${NOC} --seed 18446744073709551615)
