#!/usr/bin/env bash
# bench/watch_cost.sh: what watching a run of alike layers for reuse costs, against what a copied layer saves
# (core::Executor::kMinSpaceGroups, docs/timing.md "The shortest run watched"). Each job runs with reuse and
# with --no-reuse (one thread, so each wafer's emulation is its own), WATCH_RUNS times (default 2); per
# emulated wafer of each run it prints:
#   cuts: wall_time.per_wafer's reuse_cuts (describing, comparing, the jump);
#   group: what emulating one copied layer costs, from the --no-reuse run (its seconds per task times the
#          tasks the copies stand for, over the layers copied);
#   watch: the seconds reuse spent beyond the tasks it executed, the cuts and the tracking of the windows
#          between them (emulation with reuse - (emulation without - the copied tasks' share of it)), and
#          the same in groups.
# WATCH_JOBS: jobs separated by ';', each the arguments of one decode (default: the default decode, Mixtral
# on 3 wafers, the 70B on 4, and the 8B with defects at 0.05 per cm^2, seed 2, whose runs of 4 and 5 groups
# are watched only by a build that watches runs that short). Run it with WAFER_EMU set to such a build to
# see what the short runs cost.
set -euo pipefail
: "${WAFER_EMU:?set by bench/run}"
runs="${WATCH_RUNS:-2}"
jobs="${WATCH_JOBS:-decode;decode --model mixtral-8x7b --wafers 3;decode --model llama-3.1-70b --wafers 4;decode --density 0.05 --seed 2}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
IFS=';' read -ra list <<< "$jobs"
for j in "${list[@]}"; do
  read -ra args <<< "$j"
  echo "-- wafer-emu ${args[*]} --threads 1 ($runs runs each way)"
  for i in $(seq "$runs"); do
    "$WAFER_EMU" "${args[@]}" --threads 1 --json "$tmp/a.json" >/dev/null
    "$WAFER_EMU" "${args[@]}" --threads 1 --no-reuse --json "$tmp/b.json" >/dev/null
    python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
def rows(name):
    w = json.load(open(f"{d}/{name}.json"))["wall_time"]["per_wafer"]
    cols = [c["name"] for c in w["columns"]]
    return [dict(zip(cols, r)) for r in w["rows"]]
for a, b in zip(rows("a"), rows("b")):
    if a["reused_from"] >= 0:
        continue
    line = (f"  wafer {a['wafer']}: emulation {a['emulation']:.3f} s, --no-reuse {b['emulation']:.3f} s; "
            f"layers watched {a['layers_watched']}, copied {a['layers_reused']}; cuts {a['reuse_cuts']:.3f} s")
    if a["layers_reused"] > 0:
        per_task = b["emulation"] / b["tasks_executed"]
        saved = (a["tasks_represented"] - a["tasks_executed"]) * per_task
        group = saved / a["layers_reused"]
        watch = a["emulation"] - (b["emulation"] - saved)
        line += f"; group {group:.3f} s; watch {watch:.3f} s = {watch / group:.1f} groups"
    elif a["layers_watched"] > 0:
        line += f"; watch {a['emulation'] - b['emulation']:+.3f} s (nothing copied)"
    print(line)
PY
  done
done
