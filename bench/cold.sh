#!/usr/bin/env bash
# bench/cold.sh: what a single run pays for its memory with and without transparent huge pages (noc/big_array.h,
# WAFER_EMU_HUGE_PAGES). `decode COLD_ARGS` (default: the default decode) is run COLD_RUNS times (default 5) in
# each of four ways, interleaved round by round so that drift of the machine falls on all four alike:
#   cold          after COLD_PAUSE seconds idle (default 8), WAFER_EMU_HUGE_PAGES unset (the default: the system's
#                 policy, 4 KiB pages on a system whose policy is "madvise", but for a large job, which gets huge
#                 pages, apps::kLargeJobRecords, and where the probe measures huge pages cheaper,
#                 noc::huge_page_probe);
#   cold, huge    the same with WAFER_EMU_HUGE_PAGES=1 (the blocks advised MADV_HUGEPAGE), or with the value
#                 COLD_OTHER gives (0: advised none, the default's other side for a large job);
#   warm          right after a run of the same kind;
#   warm, huge    right after a run with the variable set (what back-to-back benchmark runs measure).
# Prints per way the median wall time of the whole process and of elaboration and emulation, and peak RSS.
# Run through bench/run.
set -euo pipefail
emu="${WAFER_EMU:?run through bench/run}"
runs="${COLD_RUNS:-5}"
pause="${COLD_PAUSE:-8}"
read -r -a args <<<"${COLD_ARGS:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# one WAY HUGE: a run of `decode`, its wall time and RSS and the JSON's split appended to $tmp/WAY
one() {
  local way=$1 huge=$2
  if [ "$huge" = 1 ]; then export WAFER_EMU_HUGE_PAGES="${COLD_OTHER:-1}"; else unset WAFER_EMU_HUGE_PAGES; fi
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$emu" decode "${args[@]}" --json "$tmp/out.json" >/dev/null
  unset WAFER_EMU_HUGE_PAGES
  python3 - "$tmp/out.json" "$(cat "$tmp/time")" >>"$tmp/$way" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["wall_time"]
print(sys.argv[2], w["elaboration"]["value"], w["emulation"]["value"])
PY
}
for _ in $(seq "$runs"); do
  sleep "$pause"; one cold 0; one warm 0
  sleep "$pause"; one cold_huge 1; one warm_huge 1
done
python3 - "$tmp" "$runs" "$pause" "${args[*]}" "${COLD_OTHER:-1}" <<'PY'
import statistics, sys
d, runs, pause, args, other = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
print(f"decode {args or '(default)'}: {runs} runs each way, medians; cold = after {pause} s idle")
print(f"{'way':<12} {'wall [s]':>9} {'elaboration':>12} {'emulation':>10} {'peak RSS':>9}")
set_ = "huge" if other == "1" else f"={other}"  # (the second way's name: huge pages, or the variable's value)
names = {"cold": "cold", "cold_huge": f"cold, {set_}", "warm": "warm", "warm_huge": f"warm, {set_}"}
for way in ("cold", "cold_huge", "warm", "warm_huge"):
    rows = [[float(x) for x in l.split()] for l in open(f"{d}/{way}")]
    med = lambda i: statistics.median(r[i] for r in rows)
    print(f"{names[way]:<12} {med(0):9.2f} {med(2):12.3f} {med(3):10.3f} {max(r[1] for r in rows) / 1024:6.0f} MiB")
PY
