#!/usr/bin/env bash
# bench/cut_match.sh: could reuse at the grain of bands copy a defective wafer's layers (issues 9 and 10)? On
# a build with WAFER_EMU_CUT_LOG defined (build/cutlog, configured and built here: core/executor.cpp, "cut log"),
# every layer-bands step is watched as one run over all its bands, defects or not, no jump is taken, and each
# cut's description of the state is compared with the one before and with the defect-free wafer's template
# (the description at the default decode's first cut that repeats). Runs the default decode, then the one of
# CUT_MATCH_ARGS (default "--density 0.1 --seed 1": wse3's 50 defects), and prints per run the cuts whose state
# equals the template's: where a template kept across defective bands could jump.
# Slow the first time (a Release build of its own). Run through bench/run or alone.
set -euo pipefail
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
WAFER_EMU_CUT_LOG_LOAD="$dir/template.bin" "$emu" decode "${bad[@]}" 2>"$dir/bad.log" >/dev/null
python3 - "$dir/clean.log" "$dir/bad.log" "${CUT_MATCH_ARGS:---density 0.1 --seed 1}" <<'PY'
import sys
for path, what in ((sys.argv[1], "no defects"), (sys.argv[2], sys.argv[3])):
    cuts = [l.split() for l in open(path) if l.startswith("cut ")]
    # cut LAYER CYCLE WORDS EQ_PREV EQ_TEMPLATE
    prev = [int(c[1]) for c in cuts if c[4] == "1"]
    tmpl = [int(c[1]) for c in cuts if c[5] == "1"]
    sizes = sorted({int(c[3]) for c in cuts})
    print(f"{what}: {len(cuts)} cuts; equal to the one before at {len(prev)} (layers {prev}); "
          f"equal to the defect-free template at {len(tmpl)} (layers {tmpl}); description lengths "
          f"{sizes[0]:,}-{sizes[-1]:,} words")
PY
