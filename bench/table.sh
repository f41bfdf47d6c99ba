#!/usr/bin/env bash
# wafer-emu table at full scale (issue 11): Llama-3.1-8B on wse3 over the issue's grid (contexts 128, 512,
# 2048, 8192; batches 1, 2, 4, 8, 16; prompts 16, 128, 512, 2048): wall time and peak RSS of one run
# (target: under 3 minutes on the 2-core machine), the points emulated and not mapped, and the chunking of
# the prompts (from the progress lines). TABLE_PROGRESS=FILE keeps the progress lines.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
: "${WAFER_EMU:?set by bench/run}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(table --wafer wse3 --model llama-3.1-8b --contexts 128,512,2048,8192 --batches 1,2,4,8,16
      --prefill-tokens 16,128,512,2048)
echo "-- wafer-emu ${args[*]} (one run)"
/usr/bin/time -f 'wall_s=%e peak_rss_kib=%M' -o "$tmp/time" "$WAFER_EMU" "${args[@]}" --out "$tmp/t" \
  >"$tmp/stdout" 2>"$tmp/progress"
cat "$tmp/time"
[ -n "${TABLE_PROGRESS:-}" ] && cp "$tmp/progress" "$TABLE_PROGRESS"
grep -E 'points|steps_emulated|chunks_reused|wall_time' "$tmp/stdout" || true
echo "prefill points in chunks:"
grep -E 'prefill .* chunks of' "$tmp/progress" || echo "  none"
echo "rows: $(($(wc -l < "$tmp/t/table.csv") - 1)) in table.csv; not mapped: $(wc -l < "$tmp/t/skipped.txt")"
