#!/usr/bin/env bash
# The jobs of the speed issue (docs/timing.md "Reuse"), each run JOBS_RUNS times (default 3): median wall
# time (with the medians of its user and system time: a system time near the user time marks a run bound by the
# kernel zeroing fresh pages, which on this VM can change from one run to the next) and largest peak RSS of the
# whole process, the medians of the wall split (mapping, elaboration,
# emulation), tile tasks executed against represented, layers and wafers reused, and the answer's latency.
# Jobs: the default decode (8B on wse3, layer-bands), the main job (no arguments: --placement auto),
# Mixtral on 3 wafers, Llama-3.1-70B on 4, Llama-3.1-405B on 24, the whole-wafer and whole-square
# mappings of the 8B (refused up front when their task records exceed the memory: the refusal is printed; both
# fit a 24 GB machine and run about 1 and 1.5-2 minutes, so those two run JOBS_LONG_RUNS times, default 1),
# and the default decode at 0.1 defects per cm^2 (about 50 defects on wse3) and at 2 per cm^2 (about 1,000)
# against the defect-free run, the default decode with --no-reuse, and the 1B's square on a 300 x 300 wafer (a
# small stand-in for the whole square). JOBS_ONLY=a,b picks jobs by name. With JOBS_CALLGRIND=1 (and valgrind
# installed) also the instruction counts of the default decode and of the 50-defect one. Last, the defective runs'
# and --no-reuse's wall medians as ratios to the default decode's.
set -euo pipefail
: "${WAFER_EMU:?set by bench/run}"
runs="${JOBS_RUNS:-3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# job NAME ARGS...: the figures of `wafer-emu ARGS` over $runs runs.
# (RUNS=N before the name: N runs instead of $runs)
job() {
  local n=$runs
  if [[ $1 == RUNS=* ]]; then n=${1#RUNS=}; shift; fi
  local name=$1; shift
  if [ -n "${JOBS_ONLY:-}" ] && [[ ",${JOBS_ONLY}," != *",$name,"* ]]; then return; fi
  echo "-- $name: wafer-emu $* ($n runs)"
  local times=() users=() systems=() rss=0 t r u sy
  for i in $(seq "$n"); do
    if ! /usr/bin/time -f '%e %M %U %S' -o "$tmp/time" "$WAFER_EMU" "$@" --json "$tmp/$name$i.json" >/dev/null 2>"$tmp/err"; then
      echo "  refused: $(tail -1 "$tmp/err")"
      return
    fi
    read -r t r u sy < "$tmp/time"
    times+=("$t"); users+=("$u"); systems+=("$sy"); [ "$r" -gt "$rss" ] && rss=$r
  done
  python3 - "$tmp" "$name" "$n" "$rss" "${times[*]}" "${users[*]}" "${systems[*]}" <<'PY'
import json, statistics, sys
d, name, n, rss = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
times = sorted(float(t) for t in sys.argv[5].split())
user = statistics.median(float(t) for t in sys.argv[6].split())
system = statistics.median(float(t) for t in sys.argv[7].split())
js = [json.load(open(f"{d}/{name}{i}.json")) for i in range(1, n + 1)]
w = js[0]["wall_time"]
med = lambda k: statistics.median(j["wall_time"][k]["value"] for j in js)
v = lambda k: w[k]["value"] if k in w else 0
open(f"{d}/{name}.median", "w").write(f"{statistics.median(times)}\n")  # (for the ratios at the end)
print(f"  wall median {statistics.median(times):.2f} s (min {times[0]:.2f}, max {times[-1]:.2f}; user {user:.2f} s, "
      f"system {system:.2f} s, medians), peak RSS {rss / 1024 / 1024:.2f} GB")
print(f"  split (medians): mapping {med('mapping'):.3f} s, elaboration {med('elaboration'):.3f} s, "
      f"emulation {med('emulation'):.3f} s")
print(f"  tasks executed {v('tasks_executed'):,} of {v('tasks_represented'):,} represented; layers reused "
      f"{v('layers_reused')}, wafers reused {v('wafers_reused')}; latency {js[0]['latency_cycles']['value']:,} cycles")
PY
}

job default decode
job main decode --placement auto
job mixtral decode --model mixtral-8x7b --wafers 3
job 70b decode --model llama-3.1-70b --wafers 4
job 405b decode --model llama-3.1-405b --wafers 24
long_runs="${JOBS_LONG_RUNS:-1}"
job "RUNS=$long_runs" whole_wafer decode --placement whole-wafer
job "RUNS=$long_runs" whole_square decode --placement square --kernel meshgemv
job defects_50 decode --density 0.1 --seed 1
job defects_1000 decode --density 2 --seed 1
# A pipeline at 0.1 defects/cm^2: each wafer has a map of its own (docs/mapping.md section 5), so no wafer is
# another's and each is emulated with every task of its defective bands.
job 70b_defects decode --model llama-3.1-70b --wafers 4 --density 0.1 --seed 1
# The default decode with every task emulated: what the 50-defect run costs (it emulates every task too).
job no_reuse decode --no-reuse
# The whole square's kind of step in seconds rather than minutes: Llama-3.2-1B's square on a 300 x 300 wse3
# (every layer's tasks on every tile, the meshgemv kernel), for work on that per-task cost (docs/timing.md
# "What the goals left would take").
job square_300 decode --wafer "$(dirname "${BASH_SOURCE[0]}")/data/wse3-300x300.json" --model llama-3.2-1b \
  --placement square --kernel meshgemv

# The goals stated as ratios to the defect-free decode (issue 9: the 50-defect run at most 2x), from the medians above.
for name in defects_50 defects_1000 no_reuse; do
  if [ -f "$tmp/default.median" ] && [ -f "$tmp/$name.median" ]; then
    awk -v n="$name" -v a="$(cat "$tmp/$name.median")" -v b="$(cat "$tmp/default.median")" \
      'BEGIN {printf "-- %s / default: %.2fx (wall medians %.2f / %.2f s)\n", n, a / b, a, b}'
  fi
done

if [ "${JOBS_CALLGRIND:-0}" = 1 ] && command -v valgrind >/dev/null; then
  # (the defective run emulates every task: the inner loop's cost without reuse)
  for args in "" "--density 0.1 --seed 1"; do
    echo "-- instruction count of decode ${args:-(default)} (callgrind)"
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$WAFER_EMU" decode $args >/dev/null 2>"$tmp/cg.err"
    grep -E "Collected" "$tmp/cg.err" | sed 's/^==[0-9]*== /  /'
  done
fi
