#!/usr/bin/env bash
# The mesh timing models (issue 3):
#  (1) uniform traffic on the small wafer (64 x 64, below saturation), approx and cycle in the same run:
#      wall time of each (median of 3), the ratio, and both mean latencies side by side;
#  (2) the full wse3 mesh: a row reduce over every row then a column broadcast over every column, 100
#      times, through noc::Network (bench_noc_wafer): wall time, mesh bytes per tile, peak RSS.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
: "${WAFER_EMU:?run through bench/run}" "${WAFER_BENCH_BIN:?run through bench/run}"

args=(noc --wafer small --pattern uniform --rate 0.01 --burst-wavelets 8 --cycles 2000)
echo "-- (1a) bench_noc_small: the same workload's Plan built once, each model's Mesh::execute timed in one process"
"$WAFER_BENCH_BIN/bench_noc_small" small 0.01 2000 21 3
echo "-- (1b) whole commands (process start-up, wafer setup and Plan generation included): wafer-emu ${args[*]}"
a=$(measure 3 "$WAFER_EMU" "${args[@]}" --fidelity approx)
c=$(measure 3 "$WAFER_EMU" "${args[@]}" --fidelity cycle)
echo "approx: $a"
echo "cycle:  $c"
la=$("$WAFER_EMU" "${args[@]}" --fidelity approx 2>/dev/null | awk '$1=="mean_latency"{print $2}')
lc=$("$WAFER_EMU" "${args[@]}" --fidelity cycle 2>/dev/null | awk '$1=="mean_latency"{print $2}')
ta=$(sed 's/.*median_s=\([^ ]*\).*/\1/' <<<"$a")
tc=$(sed 's/.*median_s=\([^ ]*\).*/\1/' <<<"$c")
awk -v ta="$ta" -v tc="$tc" -v la="$la" -v lc="$lc" 'BEGIN {
  printf "mean latency [cycles]: approx %s  cycle %s  (approx - cycle) / cycle = %+.2f %%\n", la, lc, 100 * (la - lc) / lc
  if (ta > 0) printf "speed: approx %.2f s, cycle %.2f s, approx is %.0fx faster (target >= 100x)\n", ta, tc, tc / ta
  else printf "speed: approx %.2f s (below the timer resolution), cycle %.2f s, ratio > %.0fx (target >= 100x)\n", ta, tc, tc / 0.01
}'
echo "   (/usr/bin/time has 10 ms resolution; process start-up and wafer setup are included in both)"

echo "-- (2) bench_noc_wafer wse3 100"
"$WAFER_BENCH_BIN/bench_noc_wafer" wse3 100
echo "   three runs: $(measure 3 "$WAFER_BENCH_BIN/bench_noc_wafer" wse3 100)  (targets: < 10 s, < 256 bytes/tile, < 1024 MiB)"
