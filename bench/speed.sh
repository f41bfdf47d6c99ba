#!/usr/bin/env bash
# The emulator's own speed (the speed issue, docs/timing.md "Speed of a decode step"): the default decode
# job (`decode`: Llama-3.1-8B on the full wse3 wafer, context 4096), run SPEED_RUNS times (default 5):
# median wall time and largest peak RSS of the whole process, the medians of the wall split the JSON
# reports (mapping, elaboration, emulation), the tasks run (executed vs represented: reuse); then the
# whole-square mapping (`decode --placement square --kernel meshgemv`, SPEED_SQUARE_MODEL, default
# llama-3.1-8b, on wse3) with reuse and with --no-reuse (SPEED_FULL_RUNS runs, default 1), when the machine
# has the memory for it (estimated first from the centre tile's task count; skipped with the figure
# otherwise), then the same for SPEED_SQUARE_SMALL (default llama-3.2-1b), which fits; then the instruction
# count of a small job under callgrind (repeatable where wall times drift), when valgrind is installed.
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
w = js[0]["wall_time"]
print(f"tasks run {f['tasks_run']['value']}, bursts {f['bursts']['value']}, "
      f"latency {js[0]['latency_cycles']['value']} cycles; tasks executed {w['tasks_executed']['value']} "
      f"of {w['tasks_represented']['value']} represented")
PY

# summary DIR PREFIX N: medians of the wall split and the reuse figures of DIR/PREFIX1..N.json
summary() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, statistics, sys
d, p, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
js = [json.load(open(f"{d}/{p}{i}.json")) for i in range(1, n + 1)]
med = lambda k: statistics.median(j["wall_time"][k]["value"] for j in js)
w = js[0]["wall_time"]
print(f"  wall split (medians of {n}): mapping {med('mapping'):.3f} s, elaboration {med('elaboration'):.3f} s, "
      f"emulation {med('emulation'):.3f} s; tasks executed {w['tasks_executed']['value']} of "
      f"{w['tasks_represented']['value']} represented, layers reused {w['layers_reused']['value']}; "
      f"latency {js[0]['latency_cycles']['value']} cycles")
PY
}

# timed_runs N PREFIX CMD...: runs CMD N times with --json $tmp/PREFIXi.json; prints the median wall and the
# largest peak RSS of the whole process (as measure in lib.sh, but keeping each run's JSON).
timed_runs() {
  local n=$1 prefix=$2; shift 2
  local times=() rss=0 t r
  for i in $(seq "$n"); do
    /usr/bin/time -f '%e %M' -o "$tmp/time" "$@" --json "$tmp/$prefix$i.json" >/dev/null
    read -r t r < "$tmp/time"
    times+=("$t"); [ "$r" -gt "$rss" ] && rss=$r
  done
  local median; median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "  median_s=$median peak_rss_mib=$((rss / 1024)) runs=$n"
}

# square_job WAFER MODEL SIDE CX,CY: the whole-square meshgemv mapping of MODEL on WAFER (its square SIDE x
# SIDE, CX,CY a tile near its centre), with reuse and with --no-reuse.
square_job() {
  local wafer=$1 model=$2 side=$3 centre=$4
  local sq=(decode --wafer "$wafer" --model "$model" --placement square --kernel meshgemv)
  echo "-- wafer-emu ${sq[*]}"
  # Memory: the cores keep a 32-byte record per task slot and a 24-byte one per burst (about one per task),
  # for every task of the step without reuse (core::Executor::record_bytes; with reuse the copies' slots are
  # written out, most of their bursts not).
  local per_tile tiles need avail
  per_tile=$("$WAFER_EMU" "${sq[@]}" --dump-firmware "$centre" | awk 'NR == 1 {for (i = 1; i <= NF; ++i) if ($i ~ /^tasks;?$/) print $(i - 1)}')
  tiles=$((side * side))
  need=$((per_tile * tiles * 56 / 1048576))
  avail=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
  echo "  about $((per_tile * tiles)) tasks ($per_tile on the centre tile x $tiles tiles): about $need MiB of task and burst records; $avail MiB available"
  if [ "$need" -gt $((avail * 8 / 10)) ]; then
    echo "  skipped: needs more memory than this machine has available"
    return
  fi
  echo "  with reuse ($runs runs):"
  timed_runs "$runs" sq "$WAFER_EMU" "${sq[@]}"
  summary "$tmp" sq "$runs"
  local full="${SPEED_FULL_RUNS:-1}"
  echo "  --no-reuse ($full runs):"
  timed_runs "$full" full "$WAFER_EMU" "${sq[@]}" --no-reuse
  summary "$tmp" full "$full"
  python3 - "$tmp/sq1.json" "$tmp/full1.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for j in (a, b): j.pop("wall_time")
print("  results identical (but for wall_time):", json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True))
PY
}
square_job wse3 "${SPEED_SQUARE_MODEL:-llama-3.1-8b}" 762 381,586
# A square that fits this machine: Llama-3.2-1B on a 300 x 300 wse3.
echo '{"preset": "wse3", "name": "wse3-300x300", "logical_width": 300, "logical_height": 300, "spare_rows": 8, "spare_cols": 8}' >"$tmp/w300.json"
square_job "$tmp/w300.json" "${SPEED_SQUARE_SMALL:-llama-3.2-1b}" 300 150,150

small=(decode --wafer small --model small-llama --context 1024 --placement whole-wafer --kernel meshgemv)
echo "-- callgrind: wafer-emu ${small[*]}"
if command -v valgrind >/dev/null 2>&1; then
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$WAFER_EMU" "${small[@]}" >/dev/null 2>"$tmp/cg.log"
  total=$(awk '/refs:/ {print $NF}' "$tmp/cg.log")
  callgrind_annotate --inclusive=yes "$tmp/cg.out" >"$tmp/cg.txt" 2>/dev/null || true
  emul=$(awk '/Executor::run\(\)/ && !e {e = $1} END {print e}' "$tmp/cg.txt")
  echo "instructions: ${total} in all, ${emul:-?} in the emulation (Executor::run, inclusive)"
  # Reuse, counted: 8 layers on the small wafer's square, with and without.
  rep=(decode --wafer small --model "$here/../tests/cli/data/reuse_small_8_layers.json" --context 512 --placement square --kernel meshgemv)
  for mode in reuse no-reuse; do
    extra=(); [ "$mode" = no-reuse ] && extra=(--no-reuse)
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg2.out" "$WAFER_EMU" "${rep[@]}" "${extra[@]}" --json "$tmp/cg2.json" >/dev/null 2>"$tmp/cg2.log"
    total=$(awk '/refs:/ {print $NF}' "$tmp/cg2.log")
    tasks=$(python3 -c "import json,sys; w=json.load(open(sys.argv[1]))['wall_time']; print(w['tasks_executed']['value'], 'of', w['tasks_represented']['value'])" "$tmp/cg2.json")
    echo "-- callgrind ($mode): wafer-emu ${rep[*]}: ${total} instructions, tasks executed $tasks"
  done
else
  echo "valgrind is not installed: no instruction count (Debian: apt-get install valgrind)"
fi
