#!/usr/bin/env bash
# wafer-emu table at full scale (issue 11): Llama-3.1-8B on wse3 over the issue's grid (contexts 128, 512,
# 2048, 8192; batches 1, 2, 4, 8, 16; prompts 16, 128, 512, 2048), with --jobs 1 and with --jobs 2 (target:
# under 3 minutes on the 2-core machine): wall time of each run, peak RSS and CPU time of the parent and of
# each worker process, the points emulated and not mapped, the chunking of the prompts (from the progress lines), and
# whether the two runs wrote the same files (meta.yaml's time stamp aside). TABLE_PROGRESS=FILE keeps the
# progress lines of the last run; TABLE_JOBS="2" (say) runs only those (in the order given).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
: "${WAFER_EMU:?set by bench/run}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(table --wafer wse3 --model llama-3.1-8b --contexts 128,512,2048,8192 --batches 1,2,4,8,16
      --prefill-tokens 16,128,512,2048)
# Peak RSS and CPU time of every process of a run: each one's VmHWM and utime + stime from /proc, sampled
# every half second while it runs (a worker's last sample is at most that before it ends). On a shared
# machine the wall time depends on the others' load; the CPU time much less.
watch_procs() {  # watch_procs PID OUTFILE
  local root=$1 out=$2 tick
  tick=$(getconf CLK_TCK)
  declare -A hwm cpu
  while kill -0 "$root" 2>/dev/null; do
    for p in "$root" $(pgrep -P "$root" 2>/dev/null || true); do
      local v c
      v=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
      c=$(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$p/stat" 2>/dev/null || true)
      [ -n "$v" ] && hwm[$p]=$v
      [ -n "$c" ] && cpu[$p]=$c
    done
    sleep 0.5
  done
  for p in "${!hwm[@]}"; do
    echo "pid $p peak_rss_kib=${hwm[$p]} cpu_s=$(awk "BEGIN {printf \"%.1f\", ${cpu[$p]:-0} / $tick}")"
  done | sort >"$out"
}
for jobs in ${TABLE_JOBS:-1 2}; do
  echo "-- wafer-emu ${args[*]} --jobs $jobs"
  "$WAFER_EMU" "${args[@]}" --jobs "$jobs" --out "$tmp/t$jobs" >"$tmp/stdout$jobs" 2>"$tmp/progress$jobs" &
  pid=$!
  start=$(date +%s.%N)
  watch_procs "$pid" "$tmp/rss$jobs" &
  watcher=$!
  rc=0
  wait "$pid" || rc=$?
  end=$(date +%s.%N)
  wait "$watcher" || true
  echo "jobs=$jobs exit=$rc wall_s=$(awk "BEGIN {printf \"%.1f\", $end - $start}")"
  echo "peak RSS and CPU time per process (parent pid $pid; the others its workers), load average: $(cut -d" " -f1-3 /proc/loadavg)"
  sed 's/^/  /' "$tmp/rss$jobs"
  [ "$rc" = 0 ] || { tail -3 "$tmp/progress$jobs"; exit 1; }
  grep -E 'points|steps_emulated|chunks_reused|meshes_reused|wall_time' "$tmp/stdout$jobs" || true
  echo "prefill points in chunks:"
  grep -E 'prefill .* chunks of' "$tmp/progress$jobs" || echo "  none"
  echo "rows: $(($(wc -l < "$tmp/t$jobs/table.csv") - 1)) in table.csv; not mapped: $(wc -l < "$tmp/t$jobs/skipped.txt")"
done
if [ -n "${TABLE_PROGRESS:-}" ]; then cp "$tmp/progress$jobs" "$TABLE_PROGRESS"; fi  # the last run's
if [ -d "$tmp/t1" ] && [ -d "$tmp/t2" ]; then
  if diff -r -I '^profiled_at:' "$tmp/t1" "$tmp/t2" >/dev/null; then echo "--jobs 1 and --jobs 2: the same files"
  else echo "--jobs 1 and --jobs 2: the files DIFFER"; exit 1; fi
fi
