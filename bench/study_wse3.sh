#!/usr/bin/env bash
# bench/study_wse3.sh: the rate of a real study (issue 10): a slice of configs/studies/defect-yield.json
# (bench/data/defect-yield-slice.json: Llama-3.1-8B on wse3, negative-binomial defects at 0.1 per cm^2, alpha 2,
# STUDY_WSE3_SEEDS seeds, default 6) swept with --jobs 1 and then --jobs 2: wall time, points per minute, the
# ratio, the median point's wall time and the peak RSS. Run through bench/run. STUDY_WSE3_ARGS: more sweep options (e.g. --no-cache, to see the
# points built from scratch). STUDY_WSE3_MPI=1: as 1 and 2 ranks of Open MPI's mpirun instead of --jobs.
# STUDY_WSE3_FULL=1: the shipped study itself instead (configs/studies/defect-yield.json, 400 points: 4
# densities x 2 alphas x 50 seeds) with --jobs 2 only (STUDY_WSE3_FULL_JOBS), once: wall time, points per
# minute, and per density and alpha the median point and its split (about 5 minutes).
# Either way, with two CPUs or more and taskset (util-linux) at hand, it then times one point alone on CPU 0 and on
# CPU 1 (`decode` with the slice's first point's settings, --threads 1, pinned, STUDY_WSE3_CPU_RUNS each, default 3,
# alternated): the user time of each CPU's median run, and what the two CPUs allow two workers at most against one
# on the faster CPU, 1 + fast / slow (on the 2-core VM the two have differed by up to 40 %, either way round from
# one hour to the next: docs/timing.md "What the goals left would take"). STUDY_WSE3_CPU_RUNS=0: not timed.
set -euo pipefail
emu="${WAFER_EMU:?run through bench/run}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cpu_speeds() {
  local runs="${STUDY_WSE3_CPU_RUNS:-3}" t
  [ "$runs" -gt 0 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ] || return 0
  t="$(mktemp -d)"
  for ((i = 0; i < runs; i++)); do
    for cpu in $((i % 2)) $((1 - i % 2)); do
      taskset -c "$cpu" /usr/bin/time -f "%U" -a -o "$t/cpu$cpu" "$emu" decode --density 0.1 --seed 1 \
        --defect-model negbin --alpha 2 --placement layer-bands --threads 1 >/dev/null
    done
  done
  python3 - "$t" <<'PY'
import statistics, sys
u = [statistics.median(float(x) for x in open(f"{sys.argv[1]}/cpu{c}").read().split()) for c in (0, 1)]
fast, slow = min(u), max(u)
print(f"one point alone, user time: CPU 0 {u[0]:.2f} s, CPU 1 {u[1]:.2f} s (medians); two workers at most "
      f"{1 + fast / slow:.2f}x one on the faster CPU")
PY
  rm -rf "$t"
}
if [ "${STUDY_WSE3_FULL:-0}" = 1 ]; then
  jobs="${STUDY_WSE3_FULL_JOBS:-2}"
  dir="$(mktemp -d)"
  trap 'rm -rf "$dir"' EXIT
  /usr/bin/time -f "%e %U %S" -o "$dir/time" "$emu" sweep --spec "$here/../configs/studies/defect-yield.json" \
    --out "$dir/out" --jobs "$jobs" --quiet >/dev/null
  python3 - "$dir" "$jobs" <<'PY'
import collections, json, statistics, sys
d, jobs = sys.argv[1], sys.argv[2]
wall, user, sys_ = (float(x) for x in open(f"{d}/time").read().split())
lines = [json.loads(l) for l in open(f"{d}/out/points.jsonl")]
ok = sum(l["status"] == "ok" for l in lines)
print(f"defect-yield study, --jobs {jobs}: {len(lines)} points ({ok} ok) in {wall:.1f} s ({wall / 60:.2f} min; "
      f"CPU {user + sys_:.1f} s): {60 * len(lines) / wall:.1f} points/min")
by = collections.defaultdict(list)
for l in lines:
    by[(l["settings"]["density"], l["settings"]["alpha"])].append(l)
med = lambda xs: statistics.median(xs) if xs else float("nan")
print("density alpha  median point [s]  repair  mapping  elaboration  emulation  median defects")
for (den, alpha), ls in sorted(by.items()):
    w = [l["wall_s"] for l in ls]
    print(f"{den:7} {alpha:5} {med([x['total'] for x in w]):16.2f} {med([x['repair'] for x in w]):7.3f} "
          f"{med([x['mapping'] for x in w]):8.3f} {med([x['elaboration'] for x in w]):12.3f} "
          f"{med([x['emulation'] for x in w]):10.2f} {med([l['repair']['defects'] for l in ls if 'repair' in l]):15}")
print(f"all points: median {med([l['wall_s']['total'] for l in lines]):.2f} s")
PY
  cpu_speeds
  exit 0
fi
seeds="${STUDY_WSE3_SEEDS:-6}"
read -r -a extra <<<"${STUDY_WSE3_ARGS:-}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# (bench/data/defect-yield-slice.json with its seed count set: the slice bench/ab.sh's sweep jobs take as it is)
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["axes"]["seed"]["count"] = int(sys.argv[2]); json.dump(s, open(sys.argv[3], "w"))' \
  "$here/data/defect-yield-slice.json" "$seeds" "$dir/study.json"
for jobs in 1 2; do
  if [ "${STUDY_WSE3_MPI:-0}" = 1 ]; then  # as ranks of Open MPI's mpirun rather than --jobs workers
    launch=(mpirun -n "$jobs" --oversubscribe)
    [ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
    /usr/bin/time -f "%e %M" -o "$dir/time$jobs" "${launch[@]}" "$emu" sweep --spec "$dir/study.json" --out "$dir/out$jobs" \
      --quiet "${extra[@]}" >/dev/null
  else
    /usr/bin/time -f "%e %M" -o "$dir/time$jobs" "$emu" sweep --spec "$dir/study.json" --out "$dir/out$jobs" --jobs "$jobs" \
      --quiet "${extra[@]}" >/dev/null
  fi
done
python3 - "$dir" "$seeds" "${STUDY_WSE3_MPI:-0}" <<'PY'
import json, statistics, sys
d, n, mpi = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
rate = {}
for jobs in (1, 2):
    wall, rss = open(f"{d}/time{jobs}").read().split()
    lines = [json.loads(l) for l in open(f"{d}/out{jobs}/points.jsonl")]
    ok = sum(l["status"] == "ok" for l in lines)
    point = statistics.median(l["wall_s"]["total"] for l in lines)
    rate[jobs] = 60 * n / float(wall)
    print(f"{'ranks' if mpi else '--jobs'} {jobs}: {n} points ({ok} ok) in {float(wall):.2f} s: {rate[jobs]:.1f} points/min; median point "
          f"{point:.2f} s; peak RSS {int(rss) // 1024} MiB")
print(f"scaling with 2 {'ranks' if mpi else 'jobs'}: {rate[2] / rate[1]:.2f}x; the 400-point study at that rate: {400 / rate[2]:.1f} min")
PY
cpu_speeds
