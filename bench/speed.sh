#!/usr/bin/env bash
# The emulator's own speed (the speed issue, docs/timing.md "Speed of a decode step"): the default decode
# job (`decode`: Llama-3.1-8B on the full wse3 wafer, context 4096), run SPEED_RUNS times (default 5):
# median wall time and largest peak RSS of the whole process, the medians of the wall split the JSON
# reports (mapping, elaboration, emulation), the tasks run; then the instruction count of a small job
# under callgrind (repeatable where wall times drift), when valgrind is installed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
: "${WAFER_EMU:?set by bench/run}"
runs="${SPEED_RUNS:-5}"

args=(decode)
echo "-- wafer-emu ${args[*]} (wse3, llama-3.1-8b, context 4096; $runs runs)"
measure "$runs" "$WAFER_EMU" "${args[@]}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$runs"); do "$WAFER_EMU" "${args[@]}" --json "$tmp/run$i.json" >/dev/null; done
python3 - "$tmp" "$runs" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
js = [json.load(open(f"{d}/run{i}.json")) for i in range(1, n + 1)]
med = lambda k: statistics.median(j["wall_time"][k]["value"] for j in js)
print(f"wall split (medians of {n}): mapping {med('mapping'):.3f} s, elaboration {med('elaboration'):.3f} s, "
      f"emulation {med('emulation'):.3f} s")
f = js[0]["fabric"]
print(f"tasks run {f['tasks_run']['value']}, bursts {f['bursts']['value']}, "
      f"latency {js[0]['latency_cycles']['value']} cycles")
PY

small=(decode --wafer small --model small-llama --context 1024 --placement whole-wafer --kernel meshgemv)
echo "-- callgrind: wafer-emu ${small[*]}"
if command -v valgrind >/dev/null 2>&1; then
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$WAFER_EMU" "${small[@]}" >/dev/null 2>"$tmp/cg.log"
  total=$(awk '/refs:/ {print $NF}' "$tmp/cg.log")
  callgrind_annotate --inclusive=yes "$tmp/cg.out" >"$tmp/cg.txt" 2>/dev/null || true
  emul=$(awk '/Executor::run\(\)/ && !e {e = $1} END {print e}' "$tmp/cg.txt")
  echo "instructions: ${total} in all, ${emul:-?} in the emulation (Executor::run, inclusive)"
else
  echo "valgrind is not installed: no instruction count (Debian: apt-get install valgrind)"
fi
