#!/usr/bin/env bash
# The report and the trace at full scale (issue 11): `report` of a full-wafer decode (wse3, Llama-3.1-8B,
# context 4096, 0.5 defects/cm^2 so the repair section is drawn): the page's render time (the report
# subcommand alone, median of 5), its size, and Chromium's time to lay it out and screenshot it when installed;
# then the default decode with and without --trace (median of 3 each): the overhead of writing the trace and
# the trace's size (target: under 20 %, under about 50 MB).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
: "${WAFER_EMU:?set by bench/run}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$WAFER_EMU" decode --wafer wse3 --model llama-3.1-8b --context 4096 --density 0.5 --seed 2 --json "$tmp/wse3.json" >/dev/null
echo "-- wafer-emu report (full-wafer decode results, $(du -k "$tmp/wse3.json" | cut -f1) KiB of JSON; median of 5)"
measure 5 "$WAFER_EMU" report "$tmp/wse3.json" --out "$tmp/wse3.html"
echo "page $(du -k "$tmp/wse3.html" | cut -f1) KiB, $(ls "$tmp"/wse3.*.csv | wc -l) CSV matrices"
if command -v chromium >/dev/null 2>&1; then
  prof=$(mktemp -d)
  echo "-- chromium --headless --screenshot of the page (1200 x 3600; median of 3)"
  measure 3 bash -c 'exec chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$1" \
    --screenshot="$2" --window-size=1200,3600 "file://$3" 2>/dev/null' _ "$prof" "$tmp/wse3.png" "$tmp/wse3.html"
  rm -rf "$prof"
fi

args=(decode --wafer wse3 --model llama-3.1-8b --context 4096)
echo "-- wafer-emu ${args[*]} (median of 3)"
measure 3 "$WAFER_EMU" "${args[@]}"
echo "-- the same with --trace (median of 3)"
measure 3 "$WAFER_EMU" "${args[@]}" --trace "$tmp/trace.json"
echo "trace $(du -m "$tmp/trace.json" | cut -f1) MiB, $(grep -c '"ph": "X"' "$tmp/trace.json") X events, $(grep -c '"ph": "C"' "$tmp/trace.json") counter samples"
