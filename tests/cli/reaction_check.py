"""A core reacts to an arrival the cycle after at the earliest (docs/timing.md, "Rules both models implement"):
a task's delay of 0 after its trigger (stream_stage_latency, task_overhead) acts as 1, on both meshes, as the
meshes' own Plans charge it. So a decode step with either at 0 is the step at 1, figure for figure (but the
echoed wafer file), while 2 is slower; and the two fidelities keep their gap at ramp_latency 0 too (until
2026-12-07 a relay forwarded in the cycle its input's head came with stream_stage_latency 0, and the cycle mesh
did so only at ramp_latency 1 and more: tiny-llama on tiny was 24 cycles faster with approx there, 8 slower
elsewhere).

Usage: reaction_check.py WAFER_EMU OUTDIR
"""
import json, os, subprocess, sys


def decode(exe, outdir, wafer, fidelity):
    name = "_".join(f"{k}{v}" for k, v in sorted(wafer.items()) if k != "preset") + "_" + fidelity
    wpath = os.path.join(outdir, name + ".wafer.json")
    with open(wpath, "w") as f:
        json.dump(wafer, f)
    out = os.path.join(outdir, name + ".json")
    r = subprocess.run([exe, "decode", "--wafer", wpath, "--model", "tiny-llama", "--context", "64", "--fidelity",
                        fidelity, "--json", out], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print(f"FAIL: exit {r.returncode}: {wafer} {fidelity}\n{r.stderr}")
        sys.exit(1)
    with open(out) as f:
        j = json.load(f)
    for k in ("wall_time", "config"):
        j.pop(k)
    return j


def main():
    exe, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    fails = []
    for ramp in (0, 2):
        lat = {}
        for fidelity in ("approx", "cycle"):
            for key in ("stream_stage_latency", "task_overhead"):
                runs = {v: decode(exe, outdir, {"preset": "tiny", "ramp_latency": ramp, key: v}, fidelity)
                        for v in (0, 1, 2)}
                if json.dumps(runs[0], sort_keys=True) != json.dumps(runs[1], sort_keys=True):
                    fails.append(f"{key} 0 and 1 differ (ramp {ramp}, {fidelity}): "
                                 f"{runs[0]['latency_cycles']['value']} against {runs[1]['latency_cycles']['value']}")
                if not runs[2]["latency_cycles"]["value"] > runs[1]["latency_cycles"]["value"]:
                    fails.append(f"{key} 2 is not slower than 1 (ramp {ramp}, {fidelity})")
                lat[(fidelity, key)] = runs[0]["latency_cycles"]["value"]
                print(f"ramp {ramp} {fidelity} {key}: " + ", ".join(
                    f"{v}: {runs[v]['latency_cycles']['value']}" for v in (0, 1, 2)))
        for key in ("stream_stage_latency", "task_overhead"):
            gap = lat[("approx", key)] - lat[("cycle", key)]
            if not 0 <= gap <= 16:
                fails.append(f"{key} 0, ramp {ramp}: approx - cycle = {gap} cycles (0 to 16 elsewhere)")
    for f in fails:
        print("FAIL:", f)
    sys.exit(1 if fails else 0)


main()
