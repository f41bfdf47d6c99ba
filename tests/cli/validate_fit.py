#!/usr/bin/env python3
"""`wafer-emu validate --fit` recovers parameter values it did not start from.

validate_fit.py WAFER_EMU CASES OUTDIR

The cases' "measured" values are generated here, with the emulator, at known parameter values (so the test
does not go stale when the timing model changes); the fit then starts elsewhere and must find them:
  1. task_overhead = 17, fitted from the default (read from `describe`) and from 40 and 0;
  2. task_overhead = 17 and vector_setup = 9 together from (10, 6) (nearly collinear on these cases: a narrow
     valley);
  3. --wafer-out writes {"preset": "tiny", "task_overhead": 17}, which `describe --wafer` accepts; with cases whose
     wafers set hop_latency 3, it writes that too (the fit's wafer: it wrote the preset and the fitted value only),
     and cases that set it to other values are refused;
  4. --max-iterations 1 stops before convergence: one-line error naming the parameter, exit 2, no output.
"""
import json, os, subprocess, sys

import results


def run(exe, *args):
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=300)


def generate(exe, cases, outdir, values, tag):
    """Case file whose measured values are the emulator's predictions at `values`."""
    gen = json.loads(json.dumps(cases))
    for c in gen["cases"]:
        c["wafer"] = {"preset": "tiny", **values}
    src = os.path.join(outdir, f"fit_{tag}_gen.json")
    out = os.path.join(outdir, f"fit_{tag}_gen_out.json")
    json.dump(gen, open(src, "w"), indent=1)
    r = run(exe, "validate", "--cases", src, "--json", out)
    if r.returncode != 0:
        sys.exit(f"FAIL: generating at {values}: exit {r.returncode}\n{r.stderr}")
    rows = results.rows(json.load(open(out))["cases"])
    fit = json.loads(json.dumps(cases))
    for c, row in zip(fit["cases"], rows):
        c["measured"]["value"] = row["predicted"]
    path = os.path.join(outdir, f"fit_{tag}.json")
    json.dump(fit, open(path, "w"), indent=1)
    return path


def fitted(exe, path, fit, outdir, tag, extra=()):
    out = os.path.join(outdir, f"fit_{tag}_result.json")
    if os.path.exists(out):
        os.remove(out)
    r = run(exe, "validate", "--cases", path, "--fit", fit, "--json", out, *extra)
    if r.returncode != 0:
        sys.exit(f"FAIL: --fit {fit}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    j = json.load(open(out))
    return {p["parameter"]: p for p in results.rows(j["fit"]["parameters"])}, j


def default(exe, outdir, param):
    out = os.path.join(outdir, "describe_tiny.json")
    r = run(exe, "describe", "--wafer", "tiny", "--json", out)
    if r.returncode != 0:
        sys.exit(f"FAIL: describe: exit {r.returncode}\n{r.stderr}")
    return [p for p in results.rows(json.load(open(out))["parameters"]) if p["parameter"] == param][0]["tiny"]


def main():
    exe, cases_file, outdir = sys.argv[1:4]
    os.makedirs(outdir, exist_ok=True)
    cases = json.load(open(cases_file))
    fails = []

    # 1. One parameter, from three starts.
    path = generate(exe, cases, outdir, {"task_overhead": 17}, "t17")
    for start in ("", "=40", "=0"):
        params, j = fitted(exe, path, "task_overhead" + start, outdir, "t17" + start.strip("="))
        p = params["task_overhead"]
        # (a start of 0 is taken as 1: task_overhead 0 acts as 1, core::CostModel::react)
        want_start = {"": default(exe, outdir, "task_overhead"), "=40": 40, "=0": 1}[start]
        if p["start"] != want_start:
            fails.append(f"task_overhead{start}: started at {p['start']}, expected {want_start}")
        if p["fitted"] != 17:
            fails.append(f"task_overhead{start}: fitted {p['fitted']}, expected 17")
        if j["fit"]["mean_abs_error_before"]["value"] <= 1.0:
            fails.append(f"task_overhead{start}: the start was already a fit (test says nothing)")
        for row in results.rows(j["fit"]["residuals"]):
            if abs(row["error after [%]"]) > 1e-9:
                fails.append(f"task_overhead{start}: case {row['case']} still off by {row['error after [%]']} %")
        print(f"task_overhead{start or ' (default start)'}: {p['start']} -> {p['fitted']} in "
              f"{j['fit']['iterations']['value']} iterations, {j['fit']['evaluations']['value']} evaluations")

    # 2. Two parameters at once.
    path2 = generate(exe, cases, outdir, {"task_overhead": 17, "vector_setup": 9}, "t17v9")
    params, j = fitted(exe, path2, "task_overhead=10,vector_setup=6", outdir, "t17v9")
    got = (params["task_overhead"]["fitted"], params["vector_setup"]["fitted"])
    if got != (17, 9):
        fails.append(f"task_overhead,vector_setup: fitted {got}, expected (17, 9)")
    print(f"task_overhead,vector_setup: (10, 6) -> {got} in {j['fit']['iterations']['value']} iterations")

    # 3. The wafer file.
    wafer = os.path.join(outdir, "fit_wafer.json")
    for f in (wafer, wafer + ".tmp"):
        if os.path.exists(f):
            os.remove(f)
    fitted(exe, path, "task_overhead", outdir, "wafer", ("--wafer-out", wafer))
    if os.path.exists(wafer + ".tmp"):
        fails.append("--wafer-out left its .tmp behind")
    w = json.load(open(wafer))
    if w != {"preset": "tiny", "task_overhead": 17}:
        fails.append(f"--wafer-out wrote {w}")
    r = run(exe, "describe", "--wafer", wafer, "--json", os.path.join(outdir, "fit_describe.json"))
    if r.returncode != 0 or "task_overhead" not in r.stdout:
        fails.append(f"describe --wafer {wafer}: exit {r.returncode}: {r.stderr}")
    else:
        d = json.load(open(os.path.join(outdir, "fit_describe.json")))
        row = [p for p in results.rows(d["parameters"]) if p["parameter"] == "task_overhead"]
        if not row or row[0].get("fit_wafer") != 17:
            fails.append(f"describe --wafer shows task_overhead as {row}, expected 17 in column fit_wafer")

    # 3b. What the cases' wafers set is kept in the file.
    cases3 = json.loads(json.dumps(cases))
    for c in cases3["cases"]:
        c["wafer"] = {"preset": "tiny", "hop_latency": 3}
    path3 = generate(exe, cases3, outdir, {"hop_latency": 3, "task_overhead": 17}, "h3t17")
    wafer3 = os.path.join(outdir, "fit_wafer_h3.json")
    fitted(exe, path3, "task_overhead", outdir, "wafer_h3", ("--wafer-out", wafer3))
    w = json.load(open(wafer3))
    if w != {"preset": "tiny", "hop_latency": 3, "task_overhead": 17}:
        fails.append(f"--wafer-out with hop_latency 3 in the cases' wafers wrote {w}")
    mixed = json.load(open(path3))
    mixed["cases"][0]["wafer"]["hop_latency"] = 2
    path_mixed = os.path.join(outdir, "fit_mixed.json")
    json.dump(mixed, open(path_mixed, "w"), indent=1)
    r = run(exe, "validate", "--cases", path_mixed, "--fit", "task_overhead", "--wafer-out", wafer3 + ".mixed")
    lines = r.stderr.strip().splitlines()
    if r.returncode != 2 or len(lines) != 1 or "sets 'hop_latency' to another value than" not in r.stderr:
        fails.append(f"--wafer-out with cases of different hop_latency: exit {r.returncode}, stderr {r.stderr!r}")
    print(f"--wafer-out keeps the cases' hop_latency: {w}")

    # 4. No convergence within the cap.
    out = os.path.join(outdir, "fit_cap.json")
    capwafer = os.path.join(outdir, "fit_cap_wafer.json")
    for f in (out, out + ".tmp", capwafer, capwafer + ".tmp"):
        if os.path.exists(f):
            os.remove(f)
    r = run(exe, "validate", "--cases", path, "--fit", "task_overhead", "--max-iterations", "1", "--json", out,
            "--wafer-out", capwafer)
    lines = r.stderr.strip().splitlines()
    if r.returncode != 2 or len(lines) != 1 or "'task_overhead'" not in r.stderr or "no convergence" not in r.stderr:
        fails.append(f"--max-iterations 1: exit {r.returncode}, stderr {r.stderr!r}")
    for f in (out, out + ".tmp", capwafer, capwafer + ".tmp"):
        if os.path.exists(f):
            fails.append(f"--max-iterations 1 left {f} behind")

    for f in fails:
        print("FAIL: " + f)
    if fails:
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
