#!/usr/bin/env bash
# approx vs the cycle reference from low load past saturation (uniform traffic, 16 x 16 and 32 x 32).
set -euo pipefail
: "${WAFER_BENCH_BIN:?run through bench/run}"
"$WAFER_BENCH_BIN/bench_noc_agreement" 16 32
