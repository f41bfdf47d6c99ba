"""What reuse_check.py and threads_check.py share: run `decode` to a JSON file, and compare two results.

run(exe, args, out, trace) runs `wafer-emu decode ARGS --json OUT` (with --trace's path replaced by `trace` when
given), exits the test on failure, and returns the result and its `wall_time` section apart.
differences(a, b, name_a, name_b) lists the sections in which two results differ, byte for byte (the same
serialisation of both: sorted keys, no whitespace freedom).
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
