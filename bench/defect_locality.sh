#!/usr/bin/env bash
# bench/defect_locality.sh: how far one defect's effect on the schedule reaches (evidence for reuse around a
# defect, issues 9 and 10). Runs the default decode (Llama-3.1-8B on wse3, layer-bands) without defects and
# with one (DEFECT_LOCALITY_DEFECT, default "router,25,138": physical x, y), each with a Chrome trace whose
# per-tile tracks cover a window of rows around it (DEFECT_LOCALITY_WINDOWS, default the west and the east
# 100 columns of rows 100-199), and prints per row of each window how its tiles' task runs compare with the
# defect-free run's: "shift D" when every task of the tile starts and ends D cycles later, else "varied"; and
# per window the tiles of each kind in all, and the varied tiles' commonest delays task by task ("62x1 64x7": the
# first task 62 cycles late, the next seven 64). DEFECT_LOCALITY_ARGS: the defective run's decode options instead of
# the one defect (e.g. "--density 0.1 --seed 1", the wafer's 50 defects: how much of a realistic defective step
# is the defect-free one shifted, the bound on what reuse by rows could copy).
# Run through bench/run (or set WAFER_EMU).
set -euo pipefail
emu="${WAFER_EMU:?run through bench/run}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
defect="${DEFECT_LOCALITY_DEFECT:-router,25,138}"
read -r -a windows <<<"${DEFECT_LOCALITY_WINDOWS:-0:98,100:199 662:761,100:199}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
printf 'kind,x,y,dir\n%s\n' "$defect" >"$dir/one.csv"
read -r -a bad <<<"${DEFECT_LOCALITY_ARGS:---defects $dir/one.csv}"
what="${DEFECT_LOCALITY_ARGS:-one defect ($defect)}"
for w in "${windows[@]}"; do
  "$emu" decode --trace "$dir/clean-$w.json" --trace-window "$w" >/dev/null
  "$emu" decode "${bad[@]}" --trace "$dir/defect-$w.json" --trace-window "$w" >/dev/null
done
PYTHONPATH="$here" python3 - "$dir" "$what" "${windows[@]}" <<'PY'
import re, sys
from collections import Counter, defaultdict
from tile_tracks import tile_runs as runs
d, defect, windows = sys.argv[1], sys.argv[2], sys.argv[3:]

print(f"{defect} against no defect, per row: how the tiles' task runs moved (cycles)")
for w in windows:
    clean, bad = runs(f"{d}/clean-{w}.json"), runs(f"{d}/defect-{w}.json")
    rows = defaultdict(Counter)
    phases = Counter()  # varied tiles: their tasks' start delays in task order, runs of one delay merged
    for tile, a in clean.items():
        y = int(re.findall(r"\d+", tile)[1])
        a, b = sorted(a), sorted(bad.get(tile, []))
        if len(a) != len(b):
            rows[y]["other task count"] += 1
            continue
        shifts = {q[0] - p[0] for p, q in zip(a, b)} | {q[1] - p[1] for p, q in zip(a, b)}
        rows[y][f"shift {shifts.pop()}" if len(shifts) == 1 else "varied"] += 1
        if len(shifts) > 1:
            seq = []
            for p, q in zip(a, b):
                if not seq or seq[-1][0] != q[0] - p[0]:
                    seq.append([q[0] - p[0], 0])
                seq[-1][1] += 1
            phases[" ".join(f"{dl}x{n}" for dl, n in seq)] += 1
    kinds = Counter()
    for c in rows.values():
        for n, k in c.items():
            kinds["shifted (or not moved)" if n.startswith("shift") else n] += k
    total = sum(kinds.values())
    print(f"window {w}: {len(clean)} tiles; " + ", ".join(f"{n} {k} ({100 * k / total:.1f} %)" for n, k in sorted(kinds.items())))
    last = None
    for y in sorted(rows):  # runs of rows alike printed once
        k = ", ".join(f"{n} {c}" for n, c in sorted(rows[y].items()))
        if k != last:
            print(f"  from row {y}: {k} tiles")
            last = k
    for seq, n in phases.most_common(3):  # (a delay D for N tasks in a row: DxN)
        print(f"  varied: {n} tiles start their tasks late by {seq}")
PY
