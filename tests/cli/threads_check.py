#!/usr/bin/env python3
"""`decode --threads N` gives the answer of `--threads 1` (sim::StepOptions::threads).

threads_check.py WAFER_EMU OUT_DIR NAME N EXPECT -- DECODE-ARGS...

Runs `wafer-emu decode DECODE-ARGS` with --threads 1 and with --threads N and compares the two JSON results
byte for byte once the `wall_time` section (host timing and how the result was computed) is taken out; with
--trace in DECODE-ARGS the two Chrome traces too. EXPECT says how many wafers the run with N threads must
report emulating at once (wall_time.threads): a number, so that a case that should run side by side and
silently went back to one after the other fails. The run with --threads 1 must report 1.
N `default`: the second run without --threads (decode's default: the CPUs the process may use; with two or more,
a `--placement auto` search emulates its candidates one at a time with a core to spare: apps/search.h).
"""
import os, sys

from decode_pair import differences, per_wafer_bad, run


def main():
    if len(sys.argv) < 7 or sys.argv[6] != "--":
        print(__doc__)
        return 2
    exe, out_dir, name, n, expect = sys.argv[1:6]
    args = sys.argv[7:]
    os.makedirs(out_dir, exist_ok=True)
    has_trace = "--trace" in args
    ta = os.path.join(out_dir, f"{name}.1.trace.json") if has_trace else None
    tb = os.path.join(out_dir, f"{name}.{n}.trace.json") if has_trace else None
    a, wa = run(exe, args + ["--threads", "1"], os.path.join(out_dir, f"{name}.1.json"), ta)
    b, wb = run(exe, args + ([] if n == "default" else ["--threads", n]), os.path.join(out_dir, f"{name}.{n}.json"), tb)
    bad = differences(a, b, "1 thread  ", f"{n} threads")
    bad += per_wafer_bad(a, wa, "1 thread") + per_wafer_bad(b, wb, f"{n} threads")
    if has_trace:
        with open(ta, "rb") as f, open(tb, "rb") as g:
            if f.read() != g.read():
                bad.append("the Chrome traces differ")
    if wa["threads"]["value"] != 1:
        bad.append(f"--threads 1 reported {wa['threads']['value']} wafers at once")
    if wb["threads"]["value"] != int(expect):
        bad.append(f"--threads {n} reported {wb['threads']['value']} wafers at once, expected {expect}")
    for k in ("tasks_executed", "tasks_represented", "wafers_reused", "layers_reused"):
        if wa[k]["value"] != wb[k]["value"]:
            bad.append(f"{k}: {wa[k]['value']} with 1 thread, {wb[k]['value']} with {n}")
    if bad:
        print(f"FAIL {name}: " + "\n".join(bad))
        return 1
    print(f"ok {name}: the same answer with 1 and {n} threads ({wb['threads']['value']} wafers at once)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
