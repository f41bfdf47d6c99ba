"""What reuse_check.py and threads_check.py share: run `decode` to a JSON file, and compare two results.

run(exe, args, out, trace) runs `wafer-emu decode ARGS --json OUT` (with --trace's path replaced by `trace` when
given), exits the test on failure, and returns the result and its `wall_time` section apart.
differences(a, b, name_a, name_b) lists the sections in which two results differ, byte for byte (the same
serialisation of both: sorted keys, no whitespace freedom).
per_wafer_bad(result, wall, name) lists what is wrong with wall_time.per_wafer: a row per wafer of the
configuration, whose tasks, layers and seconds in reuse's cuts add up to the totals (the cuts within the
emulation, none without a run watched), a wafer reused from another counted as such and costing nothing.
"""
import json, subprocess, sys


def run(exe, args, out, trace):
    a = list(args)
    if trace:
        a[a.index("--trace") + 1] = trace
    r = subprocess.run([exe, "decode"] + a + ["--json", out], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(f"FAIL: exit {r.returncode}: {' '.join(a)}\n{r.stderr}")
        sys.exit(1)
    with open(out) as f:
        j = json.load(f)
    return j, j.pop("wall_time")


def differences(a, b, name_a, name_b):
    if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True):
        return []
    out = []
    for k in sorted(set(a) | set(b)):
        if json.dumps(a.get(k), sort_keys=True) != json.dumps(b.get(k), sort_keys=True):
            out.append(f"section {k!r} differs:\n  {name_a} {json.dumps(a.get(k), sort_keys=True)[:400]}\n"
                       f"  {name_b} {json.dumps(b.get(k), sort_keys=True)[:400]}")
    return out


def per_wafer_bad(result, wall, name):
    t = wall["per_wafer"]
    cols = [c["name"] for c in t["columns"]]
    rows = [dict(zip(cols, r)) for r in t["rows"]]
    bad = []
    wafers = result["config"]["wafers"]["value"]
    if [r["wafer"] for r in rows] != list(range(wafers)):
        bad.append(f"{name}: per_wafer has wafers {[r['wafer'] for r in rows]}, expected 0..{wafers - 1}")
    for key in ("tasks_executed", "tasks_represented", "layers_reused", "layers_watched"):
        total = sum(r[key] for r in rows)
        if total != wall[key]["value"]:
            bad.append(f"{name}: per_wafer {key} adds up to {total}, wall_time.{key} is {wall[key]['value']}")
    cuts = sum(r["reuse_cuts"] for r in rows)
    if abs(cuts - wall["reuse_cuts"]["value"]) > 1e-6 * max(1.0, cuts):
        bad.append(f"{name}: per_wafer reuse_cuts adds up to {cuts}, wall_time.reuse_cuts is {wall['reuse_cuts']['value']}")
    if max([r["reuse_lists"] for r in rows], default=0) != wall["reuse_lists"]["value"]:
        bad.append(f"{name}: per_wafer reuse_lists peaks at {max(r['reuse_lists'] for r in rows)}, wall_time.reuse_lists is {wall['reuse_lists']['value']}")
    if sum(r["reuse_given_up"] for r in rows) != wall["reuse_given_up"]["value"]:
        bad.append(f"{name}: per_wafer reuse_given_up adds up to {sum(r['reuse_given_up'] for r in rows)}, wall_time.reuse_given_up is {wall['reuse_given_up']['value']}")
    copies = [r for r in rows if r["reused_from"] >= 0]
    if len(copies) != wall["wafers_reused"]["value"]:
        bad.append(f"{name}: {len(copies)} wafers reused in per_wafer, wall_time.wafers_reused is {wall['wafers_reused']['value']}")
    for r in rows:
        copy = r["reused_from"] >= 0
        if copy and (r["reused_from"] >= r["wafer"] or r["elaboration"] != 0 or r["emulation"] != 0 or r["tasks_executed"] != 0
                     or r["reuse_cuts"] != 0 or r["reuse_lists"] != 0):
            bad.append(f"{name}: wafer {r['wafer']} reused from {r['reused_from']} but built or ran something: {r}")
        if not copy and (r["emulation"] <= 0 or r["tasks_executed"] <= 0):
            bad.append(f"{name}: wafer {r['wafer']} emulated but shows no emulation time or task: {r}")
        # (the cuts are part of the emulation, and there are none without a run watched)
        # (nor lists, nor a cap reached)
        if (r["layers_watched"] == 0 and (r["reuse_lists"] != 0 or r["reuse_given_up"] != 0)) or r["reuse_given_up"] not in (0, 1):
            bad.append(f"{name}: wafer {r['wafer']} kept {r['reuse_lists']} bytes of reuse lists (given up: {r['reuse_given_up']}) "
                       f"with {r['layers_watched']} layers watched: {r}")
        if r["reuse_cuts"] < 0 or r["reuse_cuts"] > r["emulation"] or (r["layers_watched"] == 0 and r["reuse_cuts"] != 0):
            bad.append(f"{name}: wafer {r['wafer']} spent {r['reuse_cuts']} s in cuts, emulation {r['emulation']} s, "
                       f"{r['layers_watched']} layers watched: {r}")
    return bad
