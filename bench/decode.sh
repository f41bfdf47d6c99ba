#!/usr/bin/env bash
# The main job at full scale (issue 4): `decode --wafer wse3 --model llama-3.1-8b --context 4096`, approx
# fidelity, full wafer. Targets: under 10 s wall and under 4 GB peak RSS on the 2-core machine. Prints the
# median wall time and peak RSS over 3 runs, then one run's answer (latency, tokens/s, the cause split)
# and how its wall time split (mapping, elaboration, emulation).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
: "${WAFER_EMU:?set by bench/run}"

args=(decode --wafer wse3 --model llama-3.1-8b --context 4096)
echo "-- wafer-emu ${args[*]} (median of 3)"
measure 3 "$WAFER_EMU" "${args[@]}"
out=$(mktemp)
"$WAFER_EMU" "${args[@]}" --json "$out" >/dev/null
python3 - "$out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
v = lambda d, k: d[k]["value"]
b = j["breakdown"]
print(f"latency {v(j, 'latency_cycles')} cycles = {v(j, 'latency_us'):.1f} us/token, "
      f"{v(j, 'tokens_per_s'):.0f} tokens/s per user")
lat = v(j, "latency_cycles")
print("critical path: " + ", ".join(f"{k} {100 * v(b, k) / lat:.1f} %" for k in
      ["compute", "vector_setup", "task_overhead", "color_switch", "collective_sync", "network_transfer",
       "ramp", "network_wait", "weight_streaming"]))
w = j["wall_time"]
print(f"wall split: mapping {v(w, 'mapping'):.2f} s, elaboration {v(w, 'elaboration'):.2f} s, "
      f"emulation {v(w, 'emulation'):.2f} s")
f = j["fabric"]
print(f"tiles used {v(f, 'tiles_used')}, tasks {v(f, 'tasks_run')}, bursts {v(f, 'bursts')}, "
      f"SRAM max {v(j['sram'], 'sram_max')} B / mean {v(j['sram'], 'sram_mean'):.0f} B")
PY
rm -f "$out" "$out.tmp"

# The main job (`./run` with no arguments): the same decode with the mapping searched (--placement auto).
# Target (issue 8): under 5 s and 4 GB, search included.
echo "-- wafer-emu (no arguments: decode --placement auto; median of 3)"
measure 3 "$WAFER_EMU"
"$WAFER_EMU" | awk '/^    chosen |^    note |latency_cycles|^    mapping |^    emulation /'
