#!/usr/bin/env bash
# bench/validate_clock.sh: the W cases of configs/validation/public.json (WaferLLM's decode on P x P WSE-2 cores,
# docs/fidelity.md) with their published tokens/s read at another clock (VALIDATE_CLOCK GHz, default 0.85, the
# CS-2's clock in the Cerebras SDK's benchmarks and in Luczynski et al.'s measurements; the cases' own is WaferLLM's
# 1.1), then task_overhead and vector_setup fitted to them (about 7 minutes in all on 2 cores). It prints validate's
# table at the defaults and the fit's, for the clock given and for 1.1 (VALIDATE_CLOCK_CONTROL=0 skips the
# control), so the residuals' drift with P under either reading can be compared (docs/fidelity.md "What remains
# unknown"). Run through bench/run.
set -euo pipefail
emu="${WAFER_EMU:?run through bench/run}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# The W cases' emulated layer by cause at the defaults, and each cause's slope per unit of P (decode with each
# case's wafer, model, context and mapping, as validate runs it).
python3 - "$here/configs/validation/public.json" "$emu" "$dir" <<'PY'
import json, subprocess, sys
src, emu, d = sys.argv[1:4]
rows = {}
for c in json.load(open(src))["cases"]:
    if not c["name"].startswith("W"):
        continue
    json.dump(c["wafer"], open(f"{d}/wafer.json", "w"))
    json.dump(c["model"], open(f"{d}/model.json", "w"))
    m = c["mapping"]
    subprocess.run([emu, "decode", "--wafer", f"{d}/wafer.json", "--model", f"{d}/model.json", "--context",
                    str(c["context"]), "--batch", str(c["batch"]), "--placement", m["placement"], "--kernel",
                    m["kernel"], "--allreduce", m["allreduce"], "--group", str(m["group"]), "--json", f"{d}/out.json"],
                   check=True, capture_output=True)
    t = json.load(open(f"{d}/out.json"))["breakdown"]["per_layer"]
    cols = [x["name"] + (" [us]" if x["unit"] == "us" else "") for x in t["columns"]]
    layer = dict(zip(cols, next(r for r in t["rows"] if r[0] == "layer 0")))
    rows[c["name"]] = {k: v for k, v in layer.items() if k not in ("layer", "total [us]", "share")}
names = sorted(rows)
causes = list(rows[names[0]])
print("-- the W cases' layer at the defaults, cycles by cause, and the slope per unit of P (420 to 660)")
print(f"{'cause':18s} " + " ".join(f"{n[:2] + n[-4:]:>9s}" for n in names) + "   W1 slope   W2 slope")
for k in causes:
    v = [rows[n][k] for n in names]
    s1, s2 = (v[2] - v[0]) / 240, (v[5] - v[3]) / 240
    print(f"{k:18s} " + " ".join(f"{x:9.0f}" for x in v) + f" {s1:10.2f} {s2:10.2f}")
PY
clocks="${VALIDATE_CLOCK:-0.85}"
[ "${VALIDATE_CLOCK_CONTROL:-1}" = 0 ] || clocks="$clocks 1.1"
for clock in $clocks; do
  python3 - "$here/configs/validation/public.json" "$dir/w$clock.json" "$clock" <<'PY'
import json, sys
src, out, clock = sys.argv[1], sys.argv[2], float(sys.argv[3])
cases = json.load(open(src))
cases["cases"] = [c for c in cases["cases"] if c["name"].startswith("W")]
for c in cases["cases"]:
    c["measured"]["clock_ghz"] = clock
cases["note"] = f"the W cases of {src.split('/')[-1]}, their tokens/s read at {clock} GHz (bench/validate_clock.sh)"
json.dump(cases, open(out, "w"), indent=1)
PY
  echo "-- the W cases at ${clock} GHz, the defaults"
  "$emu" validate --cases "$dir/w$clock.json" 2>/dev/null
  echo "-- the W cases at ${clock} GHz, task_overhead and vector_setup fitted"
  "$emu" validate --cases "$dir/w$clock.json" --fit task_overhead,vector_setup 2>/dev/null
done
