#!/usr/bin/env bash
# bench/memory_gate.sh: two study points that do not fit in memory together, swept with --jobs 2
# (docs/studies.md "Memory"): placement.json's MEMORY_GATE_PLACEMENT points (default whole-wafer, bands kernel;
# `square` runs meshgemv) of Llama-3.1-8B on wse3 at density 0.01, seeds 1 and 2, about 12-14 GiB each. Prints the
# sweep's exit status, wall time, each point's status, wait for memory and emulation time, and the workers' peak
# RSS. Without the gate a worker was killed by the kernel on the 24 GB machine. About 2-4 minutes.
set -euo pipefail
emu="${WAFER_EMU:?run through bench/run}"
placement="${MEMORY_GATE_PLACEMENT:-whole-wafer}"
kernel=bands
[ "$placement" = square ] && kernel=meshgemv
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat > "$dir/spec.json" <<JSON
{"schema": 1, "name": "memory-gate", "fixed": {"wafer": "wse3", "model": "llama-3.1-8b", "context": 4096, "batch": 1,
 "weights": "resident", "repair": "row-shift", "density": 0.01, "placement": "$placement", "kernel": "$kernel"},
 "axes": {"seed": {"from": 1, "count": 2}}}
JSON
rc=0
/usr/bin/time -f "%e %M" -o "$dir/time" "$emu" sweep --spec "$dir/spec.json" --out "$dir/out" --jobs 2 --quiet \
  >/dev/null 2>"$dir/err" || rc=$?
python3 - "$dir" "$rc" "$placement" <<'PY'
import json, sys
d, rc, placement = sys.argv[1], int(sys.argv[2]), sys.argv[3]
wall, rss = open(f"{d}/time").read().split()[-2:]
print(f"{placement}, 2 points, --jobs 2: exit {rc}, {float(wall):.1f} s, peak RSS of a worker {int(rss) / 2**20:.1f} GiB")
for l in sorted((json.loads(x) for x in open(f"{d}/out/points.jsonl")), key=lambda l: l["index"]):
    w = l["wall_s"]
    print(f"  point {l['index']}: {l['status']}, waited {w.get('memory_wait', 0):.1f} s for memory, "
          f"emulation {w.get('emulation', 0):.1f} s, total {w['total']:.1f} s"
          + (f", {l['failure']['reason']}" if l["status"] != "ok" else ""))
err = open(f"{d}/err").read().strip()
if err:
    print("  stderr: " + err.replace("\n", "\n  stderr: "))
PY
