#!/usr/bin/env python3
"""`wafer-emu validate` predicts what `wafer-emu decode` measures, and its error column is what it says.

validate_check.py WAFER_EMU CASES OUTDIR

For every decode case of CASES (tests/cli/data/validate_tiny.json) the same point runs through
`wafer-emu decode --json`, and the prediction must equal the figure the kind names:
  step_cycles   = latency_cycles
  layer_cycles  = mean of the per_layer rows "layer N" (critical path cycles)
  tokens_per_s  = clock_ghz x 1e9 / (layers x layer_cycles)
Every row's error must be 100 (predicted - measured) / measured and mean_abs_error their mean magnitude.
"""
import json, math, os, subprocess, sys

import results


def main():
    exe, cases_file, outdir = sys.argv[1:4]
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, "check_validate.json")
    r = subprocess.run([exe, "validate", "--cases", cases_file, "--json", out], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print(f"FAIL: validate exit {r.returncode}\n{r.stderr}")
        return 1
    rows = {row["case"]: row for row in results.rows(json.load(open(out))["cases"])}
    report = json.load(open(out))
    cases = json.load(open(cases_file))["cases"]
    fails = []
    for c in cases:
        kind = c["measured"]["kind"]
        if kind not in ("step_cycles", "layer_cycles", "tokens_per_s"):
            continue
        model = c["model"]
        if isinstance(model, dict):
            path = os.path.join(outdir, f"check_{c['name']}_model.json")
            json.dump(model, open(path, "w"))
            model = path
        args = [exe, "decode", "--wafer", c["wafer"]["preset"], "--model", model, "--context", str(c["context"]),
                "--batch", str(c.get("batch", 1))]
        m = c.get("mapping", {})
        for key, opt in (("placement", "--placement"), ("weight_bits", "--weight-bits"), ("kernel", "--kernel"),
                         ("weights", "--weights")):
            if key in m:
                args += [opt, str(m[key])]
        dj = os.path.join(outdir, f"check_{c['name']}_decode.json")
        d = subprocess.run(args + ["--json", dj], capture_output=True, text=True, timeout=300)
        if d.returncode != 0:
            fails.append(f"{c['name']}: decode exit {d.returncode}: {d.stderr}")
            continue
        dec = json.load(open(dj))
        layers = [row["total [cycles]"] for row in results.rows(dec["breakdown"]["per_layer"]) if row["layer"].startswith("layer ")]
        layer = sum(layers) / len(layers)
        want = {"step_cycles": dec["latency_cycles"]["value"], "layer_cycles": layer,
                "tokens_per_s": c["measured"].get("clock_ghz", 1.1) * 1e9 / (c["measured"].get("layers", 1) * layer)}[kind]
        got = rows[c["name"]]["predicted"]
        if not math.isclose(got, want, rel_tol=1e-12):
            fails.append(f"{c['name']}: validate predicts {got}, decode gives {want} ({kind})")
        print(f"{c['name']}: {kind} validate {got} decode {want}")
    errs = []
    for name, row in rows.items():
        e = 100.0 * (row["predicted"] - row["measured"]) / row["measured"]
        errs.append(abs(e))
        if not math.isclose(row["error [%]"], e, rel_tol=1e-12, abs_tol=1e-12):
            fails.append(f"{name}: error {row['error [%]']} %, expected {e} %")
    mae = report["mean_abs_error"]
    if mae["unit"] != "%" or not math.isclose(mae["value"], sum(errs) / len(errs), rel_tol=1e-12):
        fails.append(f"mean_abs_error {mae}, expected {sum(errs) / len(errs)} %")
    for f in fails:
        print("FAIL: " + f)
    if fails:
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
