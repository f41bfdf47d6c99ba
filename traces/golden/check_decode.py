#!/usr/bin/env python3
"""The end-to-end decode step of the tiny test model against its golden results.json.

check_decode.py WAFER_EMU GOLDEN [--update]

Runs `wafer-emu decode --wafer tiny --model tiny-llama --context 64 --json OUT` and compares every figure
of OUT with GOLDEN exactly (the emulator is deterministic), except the `wall_time` section (host timing).
With --update it (re)writes GOLDEN on purpose instead: do that only when a change of the timing model or
the mapper is intended, and say so in the commit message. (`ctest -R cli.decode_golden` runs the check;
`python3 traces/golden/check_decode.py build/debug/apps/wafer-emu traces/golden/decode_tiny_llama.json
--update` regenerates.)
"""
import json, os, subprocess, sys, tempfile

ARGS = ["decode", "--wafer", "tiny", "--model", "tiny-llama", "--context", "64"]


def strip(j):
    if isinstance(j, dict):
        return {k: strip(v) for k, v in j.items() if k != "wall_time"}
    if isinstance(j, list):
        return [strip(v) for v in j]
    return j


def diff(a, b, path="", out=None):
    out = [] if out is None else out
    if type(a) != type(b):
        out.append(f"{path}: {a!r} != golden {b!r}")
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: {'missing' if k not in a else 'not in golden'}")
            else:
                diff(a[k], b[k], f"{path}/{k}", out)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} entries != golden {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {a!r} != golden {b!r}")
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    exe, golden = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "results.json")
        r = subprocess.run([exe] + ARGS + ["--json", out], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            print(f"FAIL: exit {r.returncode}\n{r.stderr}")
            return 1
        got = strip(json.load(open(out)))
    if "--update" in sys.argv:
        with open(golden, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {golden}")
        return 0
    want = json.load(open(golden))
    problems = diff(got, want)
    for p in problems[:40]:
        print(p)
    if problems:
        print(f"FAIL: {len(problems)} figure(s) differ from {golden} (regenerate with --update only on purpose)")
        return 1
    print("ok: every figure matches the golden results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
