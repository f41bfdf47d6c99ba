#!/usr/bin/env bash
# bench/threads.sh: the wafers of a pipeline emulated side by side (decode --threads N, docs/timing.md
# "Wafers side by side"): for each multi-wafer job of the speed issue, --threads 1 and --threads THREADS_N
# (default 2), whole process: median wall, user and system time, the largest peak RSS, how many runs paid
# more than a second of system time, and whether the two answers are the same (the JSON but for wall_time).
# THREADS_ORDER=pairs (default): THREADS_RUNS (default 5) interleaved pairs; blocks: two rounds of THREADS_RUNS
# runs of each setting in a row. On a VM whose host takes back memory a process freed, a run that needs more
# memory than the run before it pays for faulting the rest in (system time), which pairs charge to the larger
# setting every time; blocks show both states. THREADS_ONLY=a,b picks jobs by name (70b, mixtral, 405b).
# Run through bench/run.
set -euo pipefail
: "${WAFER_EMU:?set by bench/run}"
runs="${THREADS_RUNS:-5}" n="${THREADS_N:-2}" order="${THREADS_ORDER:-pairs}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
job() {
  local name=$1; shift
  if [ -n "${THREADS_ONLY:-}" ] && [[ ",${THREADS_ONLY}," != *",$name,"* ]]; then return; fi
  echo "-- $name: wafer-emu $* --threads 1 | $n ($order)"
  one() {
    local t=$1; shift
    /usr/bin/time -a -o "$tmp/$name.$t.time" -f '%e %U %S %M' "$WAFER_EMU" "$@" --threads "$t" --json "$tmp/$name.$t.json" >/dev/null
  }
  if [ "$order" = blocks ]; then
    for _ in 1 2; do for t in 1 "$n"; do for _ in $(seq "$runs"); do one "$t" "$@"; done; done; done
  else
    for _ in $(seq "$runs"); do for t in 1 "$n"; do one "$t" "$@"; done; done
  fi
  python3 - "$tmp" "$name" "$n" <<'PY'
import json, statistics, sys
d, name, n = sys.argv[1:4]
def load(t):
    rows = [list(map(float, l.split())) for l in open(f"{d}/{name}.{t}.time")]
    j = json.load(open(f"{d}/{name}.{t}.json"))
    return rows, j.pop("wall_time"), j
r1, w1, j1 = load("1")
rn, wn, jn = load(n)
med = lambda rows, i: statistics.median(r[i] for r in rows)
for t, rows, w in (("1", r1, w1), (n, rn, wn)):
    print(f"  --threads {t}: wall {med(rows, 0):.2f} s (min {min(r[0] for r in rows):.2f}, max {max(r[0] for r in rows):.2f}), "
          f"user {med(rows, 1):.2f} s, system {med(rows, 2):.2f} s ({sum(r[2] > 1 for r in rows)} of {len(rows)} runs over 1 s), "
          f"peak RSS {max(r[3] for r in rows) / 1024 / 1024:.2f} GB; {w['threads']['value']} wafers at once")
print(f"  wall ratio {med(r1, 0) / med(rn, 0):.2f}x; the same answer: {'yes' if j1 == jn else 'NO'}")
PY
}
job 70b decode --model llama-3.1-70b --wafers 4
job mixtral decode --model mixtral-8x7b --wafers 3
job 405b decode --model llama-3.1-405b --wafers 24
