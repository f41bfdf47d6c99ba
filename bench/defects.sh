#!/usr/bin/env bash
# Defect maps and repair at full-wafer scale (targets from issue 2: one wse3 map generated + repaired in
# well under 1 s; `defects --wafer wse3 --maps 1000` under 60 s and 1 GB peak RSS on the 2-core machine).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
: "${WAFER_EMU:?set by bench/run}" "${WAFER_BENCH_BIN:?set by bench/run}"

echo "-- one full wse3 map: generate + repair (median of 11 maps)"
"$WAFER_BENCH_BIN/bench_defects_one_map" 11
echo "-- wafer-emu defects --wafer wse3 --maps 1 (whole program, one map)"
measure 3 "$WAFER_EMU" defects --wafer wse3 --maps 1
echo "-- wafer-emu defects --wafer wse3 --maps 1000 (row-shift; --threads: the CPUs the process may use)"
measure 3 "$WAFER_EMU" defects --wafer wse3 --maps 1000
echo "-- the same on one thread"
measure 3 "$WAFER_EMU" defects --wafer wse3 --maps 1000 --threads 1
echo "-- wafer-emu defects --wafer wse3 --maps 1000 --model negbin --repair spare-rows-cols"
measure 1 "$WAFER_EMU" defects --wafer wse3 --maps 1000 --model negbin --repair spare-rows-cols
