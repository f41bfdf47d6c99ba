#!/usr/bin/env bash
# bench/reuse_fuzz.sh: decodes drawn at random on small wafers, each run the fast way (reuse, the kept mesh,
# one or two threads) and the slow way (--no-reuse --no-cache --threads 1), which must give the same answers
# (tests/fuzz/reuse_fuzz.py; ./check runs 150 of them as fuzz.reuse). REUSE_FUZZ_CASES cases (default 2000)
# from seed REUSE_FUZZ_SEED (default 100), then REUSE_FUZZ_STUDIES small studies (default 100) swept with the
# cache, with --jobs 2 and with --no-cache, which must give the same lines, then REUSE_FUZZ_TABLES latency
# tables (default 50) made the same three ways, which must give the same files; prints the summaries and each
# failing case's command lines.
set -euo pipefail
: "${WAFER_EMU:?set by bench/run}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/tests/fuzz/reuse_fuzz.py" "$WAFER_EMU" "$tmp" "${REUSE_FUZZ_CASES:-2000}" "${REUSE_FUZZ_SEED:-100}" \
  "${REUSE_FUZZ_STUDIES:-100}" "${REUSE_FUZZ_TABLES:-50}" | grep -v -E '^(case|study|table) [0-9]+: (same|refused)'
