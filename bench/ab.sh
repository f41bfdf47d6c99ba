#!/usr/bin/env bash
# Two builds of wafer-emu on the same jobs, in interleaved pairs (old, new, new, old, old, new, ...: this VM
# drifts by tens of percent over minutes, so only runs taken side by side compare; and the first run of a pair
# pays more system time, the pages the second finds freed by the first, so the order alternates): per job the
# medians of wall, user and system time, the largest peak RSS of each, the wall and user ratios, the same pair by
# pair with a sign test (whether the new build won more pairs than chance would give), and whether the two
# answers are the same (the --json results compared whole but for wall_time).
# AB_CALLGRIND=1 (valgrind installed): also each build's instruction count on each job, the one figure this VM
# repeats exactly (a minute or more per job and build under callgrind).
# AB_CACHEGRIND=1: also each build's last-level data misses under cachegrind's cache simulation (as exact a
# figure, for changes that move memory rather than instructions; AB_CACHEGRIND_LL=size,assoc,line sets the
# simulated last level, e.g. 33554432,16,64 for a 32 MiB L3, else cachegrind's own guess). The simulation models
# no prefetching, hardware or software: a miss a prefetch hides is counted all the same, so a change that only
# prefetches earlier shows nothing here, and one that reads less shows its full worth.
# AB_OLD: the other binary (required; e.g. a build of main in a worktree); the new one is WAFER_EMU (bench/run).
# AB_RUNS: pairs per job (default 5). AB_JOBS: jobs separated by ';', each the arguments of one wafer-emu
# command (default: the default decode; the 50-defect decode; Llama-3.1-70B on 4 wafers, one thread).
# A job may be a sweep (`sweep --spec FILE --jobs 1`): each run gets a fresh --out folder; the medians of the wall
# time and emulation of its points that ran are printed too (per build, the median over its runs), and the answers
# compared are the points' results but for their wall times, in index order.
# Example: AB_OLD=/tmp/base/build/release/apps/wafer-emu AB_JOBS='decode;decode --density 0.1 --seed 1' bench/run ab
# A study's point: AB_JOBS="sweep --spec bench/data/defect-yield-slice.json --jobs 1" (the slice bench/study_wse3.sh
# sweeps).
set -euo pipefail
: "${WAFER_EMU:?set by bench/run}"
: "${AB_OLD:?AB_OLD: the binary to compare against}"
runs="${AB_RUNS:-5}"
jobs="${AB_JOBS:-decode;decode --density 0.1 --seed 1;decode --model llama-3.1-70b --wafers 4 --threads 1}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A sweep's output arguments (into `out`): a fresh folder $1 each run, since a sweep into a folder of finished
# points skips them; none for any other job.
sweep_out() {
  out=()
  if [ "$sweep" = 1 ]; then rm -rf "$1"; out=(--out "$1" --quiet); fi
}

IFS=';' read -ra list <<< "$jobs"
for j in "${list[@]}"; do
  read -ra args <<< "$j"
  echo "-- wafer-emu ${args[*]} ($runs interleaved pairs, old = $AB_OLD)"
  : > "$tmp/old.t"; : > "$tmp/new.t"; : > "$tmp/old.pt"; : > "$tmp/new.pt"
  sweep=0; [ "${args[0]}" = sweep ] && sweep=1
  for i in $(seq "$runs"); do
    order="old new"; [ $((i % 2)) = 0 ] && order="new old"
    for which in $order; do
      bin=$AB_OLD; [ "$which" = new ] && bin=$WAFER_EMU
      sweep_out "$tmp/$which.out"
      [ "$sweep" = 1 ] || out=(--json "$tmp/$which.json")
      if ! /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$bin" "${args[@]}" "${out[@]}" >/dev/null 2>"$tmp/err"; then
        echo "  $which failed: $(tail -1 "$tmp/err")"
        continue 3
      fi
      cat "$tmp/t" >> "$tmp/$which.t"
      if [ "$sweep" = 1 ]; then  # this run's median point that ran (a failed one has no emulation): wall, emulation
        python3 -c 'import json, statistics as st, sys
p = [l["wall_s"] for l in map(json.loads, open(sys.argv[1])) if l["status"] == "ok"]
print(*(st.median(w[k] for w in p) if p else "nan" for k in ("total", "emulation")))' \
          "$tmp/$which.out/points.jsonl" >> "$tmp/$which.pt"
      fi
    done
  done
  python3 - "$tmp" "$sweep" <<'PY'
import json, statistics, sys
d, sweep = sys.argv[1], sys.argv[2] == "1"
def rows(w):  # per run: wall, user, system, peak RSS (KiB)
    return [list(map(float, l.split())) for l in open(f"{d}/{w}.t") if l.strip()]
def load(rs):
    return {k: statistics.median(r[i] for r in rs) for i, k in enumerate(("wall", "user", "sys"))}, max(r[3] for r in rs)
oldr, newr = rows("old"), rows("new")
(o, orss), (n, nrss) = load(oldr), load(newr)
for w, m, rss in (("old", o, orss), ("new", n, nrss)):
    print(f"  {w}: wall {m['wall']:.3f} s, user {m['user']:.3f} s, system {m['sys']:.3f} s (medians), peak RSS {rss / 1024:.0f} MiB")
ratio = lambda a, b: f"{a / b:.3f}" if b else "-"  # (a job too short for the clock: no ratio)
print(f"  new / old: wall {ratio(n['wall'], o['wall'])}, user {ratio(n['user'], o['user'])}")
# Pair by pair (the two runs of a pair side by side in time, so the drift mostly cancels): the median of the
# ratios, and how many pairs the new build won, with the two-sided sign test's p (the chance of a split at
# least that lopsided between two builds of equal speed). Below 0.05 is a difference; above, noise.
from math import comb
def paired(i):
    pairs = [(a[i], b[i]) for a, b in zip(oldr, newr) if a[i] != b[i]]
    wins, m = sum(b < a for a, b in pairs), len(pairs)
    p = min(1.0, 2 * sum(comb(m, k) for k in range(min(wins, m - wins) + 1)) / 2 ** m) if m else 1.0
    rs = [b[i] / a[i] for a, b in zip(oldr, newr) if a[i] > 0]
    ratio = statistics.median(rs) if rs else float("nan")
    return ratio, wins, m, p
for i, k in ((0, "wall"), (1, "user")):
    ratio, wins, m, p = paired(i)
    verdict = "a difference" if p < 0.05 else "within the noise"
    print(f"  {k}, pair by pair: median ratio {ratio:.3f}, new faster in {wins} of {m} pairs (sign test p = {p:.2f}: {verdict})")
res = []
for w in ("old", "new"):
    if sweep:  # the points but for their wall times, in index order
        pts = [json.loads(l) for l in open(f"{d}/{w}.out/points.jsonl")]
        for p in pts:
            p.pop("wall_s", None)
        res.append(sorted(pts, key=lambda p: p["index"]))
        runs = [list(map(float, l.split())) for l in open(f"{d}/{w}.pt") if l.strip()]
        print(f"  {w}: median point {statistics.median(r[0] for r in runs):.3f} s, its emulation "
              f"{statistics.median(r[1] for r in runs):.3f} s (medians over the runs of each run's median point that ran)")
        continue
    j = json.load(open(f"{d}/{w}.json"))
    j.pop("wall_time", None)
    res.append(j)
print("  answers: " + ("the same" if res[0] == res[1] else "DIFFER"))
PY
  if [ "${AB_CALLGRIND:-0}" = 1 ] && command -v valgrind >/dev/null; then
    for which in old new; do
      bin=$AB_OLD; [ "$which" = new ] && bin=$WAFER_EMU
      sweep_out "$tmp/vg.out"
      valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$bin" "${args[@]}" "${out[@]}" >/dev/null 2>"$tmp/cg.err"
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg.err" > "$tmp/$which.ir"
    done
    python3 -c "import sys; o, n = (int(open(f).read()) for f in sys.argv[1:]); print(f'  instructions (callgrind): old {o / 1e9:.3f} G, new {n / 1e9:.3f} G, new / old {n / o:.4f}')" "$tmp/old.ir" "$tmp/new.ir"
  fi
  if [ "${AB_CACHEGRIND:-0}" = 1 ] && command -v valgrind >/dev/null; then
    read -ra ll <<< "${AB_CACHEGRIND_LL:+--LL=$AB_CACHEGRIND_LL}"
    for which in old new; do
      bin=$AB_OLD; [ "$which" = new ] && bin=$WAFER_EMU
      sweep_out "$tmp/vg.out"
      valgrind --tool=cachegrind --cache-sim=yes "${ll[@]}" --cachegrind-out-file=/dev/null "$bin" "${args[@]}" "${out[@]}" >/dev/null 2>"$tmp/$which.cg"
    done
    python3 - "$tmp" <<'PY'
import re, sys
def misses(path):  # the summary's last-level data misses: reads, writes
    t = open(path).read()
    m = re.search(r"LLd misses:\s+([\d,]+)\s+\(\s*([\d,]+) rd\s+\+\s+([\d,]+) wr", t)
    if not m:
        sys.exit(f"  cachegrind: no summary in {path}: {t.strip().splitlines()[-1] if t.strip() else 'no output'}")
    return [int(x.replace(",", "")) for x in m.groups()[1:]]
(orr, ow), (nr, nw) = misses(f"{sys.argv[1]}/old.cg"), misses(f"{sys.argv[1]}/new.cg")
ratio = lambda n, o: f"{n / o:.3f}" if o else "-"
print(f"  last-level data misses (cachegrind): reads old {orr / 1e6:.2f} M, new {nr / 1e6:.2f} M ({ratio(nr, orr)}); "
      f"writes old {ow / 1e6:.2f} M, new {nw / 1e6:.2f} M ({ratio(nw, ow)})")
PY
  fi
done
