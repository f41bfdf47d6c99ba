#!/usr/bin/env bash
# bench/square_classes.sh: how many timing classes the tiles of a square region fall into (issue 9: "cost grows
# with the number of distinct classes"; reuse over a square is in time, docs/timing.md "How the cost grows").
# Runs Llama-3.2-1B with the meshgemv kernel on the square of a 300 x 300 wse3 (as bench/speed.sh) with a Chrome
# trace whose per-tile tracks cover one whole row and then one whole column (SQUARE_CLASSES_WINDOWS), and prints
# per window: the tiles, how many distinct schedules they run up to a constant offset (every task's start and end
# less the tile's first start: tiles of one class could be timed once and copied), and how many distinct
# sequences of task durations (the work alone, whatever the waits). Run through bench/run (or set WAFER_EMU).
set -euo pipefail
emu="${WAFER_EMU:?run through bench/run}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
read -r -a windows <<<"${SQUARE_CLASSES_WINDOWS:-0:299,140:140 150:150,0:299}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat >"$dir/w300.json" <<'JSON'
{"preset": "wse3", "name": "wse3-300x300", "logical_width": 300, "logical_height": 300, "spare_rows": 8, "spare_cols": 8}
JSON
for w in "${windows[@]}"; do
  "$emu" decode --wafer "$dir/w300.json" --model llama-3.2-1b --placement square --kernel meshgemv \
    --trace "$dir/t-$w.json" --trace-window "$w" >/dev/null
done
PYTHONPATH="$here" python3 - "$dir" "${windows[@]}" <<'PY'
import sys
from tile_tracks import tile_runs
d, windows = sys.argv[1], sys.argv[2:]
print("Llama-3.2-1B, meshgemv on the square of a 300 x 300 wse3: tiles of a window by their schedules")
print("window              tiles  tasks/tile  schedules up to an offset  duration sequences")
for w in windows:
    runs = tile_runs(f"{d}/t-{w}.json")
    shapes, works = set(), set()
    for r in runs.values():
        r.sort()
        shapes.add(tuple((a - r[0][0], b - r[0][0]) for a, b in r))
        works.add(tuple(b - a for a, b in r))
    tasks = sorted(len(r) for r in runs.values())
    print(f"{w:18} {len(runs):6} {tasks[len(tasks) // 2]:11} {len(shapes):26} {len(works):19}")
PY
