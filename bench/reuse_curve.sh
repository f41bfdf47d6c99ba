#!/usr/bin/env bash
# bench/reuse_curve.sh: how the emulation's cost grows with reuse (docs/timing.md "Reuse"), on a curve.
# A model of hidden 512 (tests/cli/data/reuse_small_8_layers.json with the layer count varied) mapped with
# the meshgemv kernel on a square of S x S tiles of the `small` wafer: for each layer count L and side S,
# the tasks the result represents, the tasks executed with reuse, the wall time with and without reuse
# (one run each: wall times on the shared machine are indicative; the task counts are exact), and whether
# the two results agree (JSON byte for byte but for wall_time). Run through bench/run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
emu="${WAFER_EMU:?run through bench/run}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
printf '%-7s %-6s %14s %14s %9s %10s %12s %6s\n' layers side represented executed "exec [%]" "reuse [s]" "no-reuse [s]" same
IFS=, read -r -a points <<<"${REUSE_CURVE_POINTS:-4x64,8x64,16x64,24x64,8x40,8x52}"  # LAYERSxSIDE,...
for point in "${points[@]}"; do
  L=${point%x*} S=${point#*x}
  python3 - "$here/tests/cli/data/reuse_small_8_layers.json" "$L" >"$dir/model.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m.pop("_comment", None)
m["num_hidden_layers"] = int(sys.argv[2])
print(json.dumps(m))
PY
  echo "{\"preset\": \"small\", \"name\": \"small-$S\", \"logical_width\": $S, \"logical_height\": $S}" >"$dir/wafer.json"
  args=(decode --wafer "$dir/wafer.json" --model "$dir/model.json" --context 512 --placement square --kernel meshgemv)
  t0=$(date +%s.%N); "$emu" "${args[@]}" --json "$dir/a.json" >/dev/null; t1=$(date +%s.%N)
  "$emu" "${args[@]}" --no-reuse --json "$dir/b.json" >/dev/null; t2=$(date +%s.%N)
  python3 - "$dir/a.json" "$dir/b.json" "$L" "$S" "$t0" "$t1" "$t2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
wa, _ = a.pop("wall_time"), b.pop("wall_time")
L, S = sys.argv[3:5]
t0, t1, t2 = map(float, sys.argv[5:8])
rep, ex = wa["tasks_represented"]["value"], wa["tasks_executed"]["value"]
same = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
print(f"{L:<7} {S:<6} {rep:>14,} {ex:>14,} {100 * ex / rep:>9.1f} {t1 - t0:>10.2f} {t2 - t1:>12.2f} {'yes' if same else 'NO':>6}")
PY
done
