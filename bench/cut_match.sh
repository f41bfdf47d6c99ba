#!/usr/bin/env bash
# bench/cut_match.sh: could reuse at the grain of bands copy a defective wafer's layers (issues 9 and 10)? On
# a build with WAFER_EMU_CUT_LOG defined (build/cutlog, configured and built here: core/executor.cpp, "cut log"),
# every layer-bands step is watched as one run over all its bands, defects or not, no jump is taken, and each
# cut's description of the state is compared with the one before and with the defect-free wafer's template
# (the description at the default decode's first cut that repeats). Runs the default decode, then the one of
# CUT_MATCH_ARGS (default "--density 0.1 --seed 1": wse3's 50 defects), and prints per run the cuts whose state
# equals the template's: where a template kept across defective bands could jump. Each cut's line also says which
# of the bands from two before the cut's to the cut's own are clean (no fault, no repaired link of another
# length), and the script tallies, per such pattern, the cuts equal to the template.
# CUT_MATCH_TRIM=Y (physical rows, e.g. "300 600") also runs the same map without its defects above row Y and
# prints, cut by cut, whether the two steps' states (the descriptions' hashes) are equal: how far back the state
# at a cut depends on the wafer (docs/timing.md, "What a cut's state depends on").
# Slow the first time (a Release build of its own). Run through bench/run or alone.
set -euo pipefail
for y in ${CUT_MATCH_TRIM:-}; do  # (checked before the build and the runs)
  [[ "$y" =~ ^[0-9]+$ ]] || { echo "cut_match.sh: CUT_MATCH_TRIM: '$y' is not a row number" >&2; exit 2; }
done
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$here/build/cutlog"
[ -f "$build/build.ninja" ] ||
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DCMAKE_CXX_FLAGS=-DWAFER_EMU_CUT_LOG >/dev/null
cmake --build "$build" --target wafer-emu >/dev/null
emu="$build/apps/wafer-emu"
export WAFER_EMU_CONFIGS="${WAFER_EMU_CONFIGS:-$here/configs/models}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
read -r -a bad <<<"${CUT_MATCH_ARGS:---density 0.1 --seed 1}"
WAFER_EMU_CUT_LOG_SAVE="$dir/template.bin" "$emu" decode 2>"$dir/clean.log" >/dev/null
WAFER_EMU_CUT_LOG_LOAD="$dir/template.bin" "$emu" decode "${bad[@]}" --defects-out "$dir/map.csv" \
  2>"$dir/bad.log" >/dev/null
trims=()
for y in ${CUT_MATCH_TRIM:-}; do
  { sed -n 2p "$dir/map.csv"; tail -n +3 "$dir/map.csv" | awk -F, -v y="$y" '$3 >= y'; } >"$dir/map_$y.csv"
  "$emu" decode --defects "$dir/map_$y.csv" 2>"$dir/trim_$y.log" >/dev/null
  trims+=("$y")
done
python3 - "$dir" "${CUT_MATCH_ARGS:---density 0.1 --seed 1}" "${trims[@]}" <<'PY'
import sys
from collections import Counter
d, args, trims = sys.argv[1], sys.argv[2], sys.argv[3:]
def cuts_of(path):
    # cut LAYER CYCLE WORDS EQ_PREV EQ_TEMPLATE CLEAN HASH (CLEAN: bands g-2, g-1, g; 1 clean, 0 not, - outside)
    return [l.split() for l in open(path) if l.startswith("cut ")]
for path, what in ((f"{d}/clean.log", "no defects"), (f"{d}/bad.log", args)):
    cuts = cuts_of(path)
    prev = [int(c[1]) for c in cuts if c[4] == "1"]
    tmpl = [int(c[1]) for c in cuts if c[5] == "1"]
    sizes = sorted({int(c[3]) for c in cuts})
    print(f"{what}: {len(cuts)} cuts; equal to the one before at {len(prev)} (layers {prev}); "
          f"equal to the defect-free template at {len(tmpl)} (layers {tmpl}); description lengths "
          f"{sizes[0]:,}-{sizes[-1]:,} words")
bad = cuts_of(f"{d}/bad.log")
print("cuts by their bands two before to their own (1 clean, 0 not; the run's first two and last cuts left out): "
      "equal to the template / all")
tally = Counter((c[6], c[5]) for c in bad[2:-1])
for pat in sorted({p for p, _ in tally}):
    print(f"  {pat}: {tally[(pat, '1')]} / {tally[(pat, '0')] + tally[(pat, '1')]}")
base = {c[1]: c for c in bad}
for y in trims:
    other = {c[1]: c for c in cuts_of(f"{d}/trim_{y}.log")}
    cells = [f"{k}:{base[k][6]}/{other[k][6]}{'=' if base[k][7] == other[k][7] else 'x'}"
             for k in sorted(base, key=int) if k in other]
    print(f"without the defects above physical row {y} (layer:bands here/there, = the same state):")
    print("  " + " ".join(cells))
PY
