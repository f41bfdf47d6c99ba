#!/usr/bin/env python3
"""`decode` with and without reuse (sim::StepOptions::reuse, `--no-reuse`) gives the same answer.

reuse_check.py WAFER_EMU OUT_DIR NAME REUSE -- DECODE-ARGS...

Runs `wafer-emu decode DECODE-ARGS` twice, with reuse (the default) and with --no-reuse, and compares the two
JSON results byte for byte once the `wall_time` section (host timing, and the emulation's cost: tasks
executed, wafers reused) is taken out. With --trace in DECODE-ARGS the two Chrome traces are compared too.
REUSE says what the run with reuse must show: `some` (fewer tasks executed than represented: the test
fails if reuse silently stopped applying), `none` (every task executed: a case where the symmetry is
broken), `unwatched` (none, and no run of layers was even watched for a repeat: too short to copy
anything), `some:N` (at least N layers copied), or `any`. The run with --no-reuse must always execute every task it represents.
"""
import os, sys

from decode_pair import differences, per_wafer_bad, run


def main():
    if len(sys.argv) < 6 or sys.argv[5] != "--":
        print(__doc__)
        return 2
    exe, out_dir, name, expect = sys.argv[1:5]
    least = 0
    if expect.startswith("some:"):
        expect, least = "some", int(expect[5:])
    args = sys.argv[6:]
    os.makedirs(out_dir, exist_ok=True)
    has_trace = "--trace" in args
    ta = os.path.join(out_dir, f"{name}.reuse.trace.json") if has_trace else None
    tb = os.path.join(out_dir, f"{name}.full.trace.json") if has_trace else None
    a, wa = run(exe, args, os.path.join(out_dir, f"{name}.reuse.json"), ta)
    b, wb = run(exe, args + ["--no-reuse"], os.path.join(out_dir, f"{name}.full.json"), tb)
    bad = differences(a, b, "reuse", "full ")
    bad += per_wafer_bad(a, wa, "reuse") + per_wafer_bad(b, wb, "--no-reuse")
    if has_trace:
        with open(ta, "rb") as f, open(tb, "rb") as g:
            if f.read() != g.read():
                bad.append("the Chrome traces differ")
    ex, rep = wa["tasks_executed"]["value"], wa["tasks_represented"]["value"]
    fex, frep = wb["tasks_executed"]["value"], wb["tasks_represented"]["value"]
    tasks_run = b["fabric"]["tasks_run"]["value"]
    if frep != tasks_run or rep != tasks_run:
        bad.append(f"tasks represented {rep} (reuse) / {frep} (full) != tasks_run {tasks_run}")
    if fex != frep:
        bad.append(f"--no-reuse executed {fex} tasks of {frep}")
    if expect == "some" and not ex < rep:
        bad.append(f"reuse expected, but {ex} tasks executed of {rep}")
    if expect in ("none", "unwatched") and ex != rep:
        bad.append(f"no reuse expected, but {ex} tasks executed of {rep}")
    watched = wa["layers_watched"]["value"]
    reused = wa["layers_reused"]["value"]
    if reused < least:
        bad.append(f"at least {least} layers should be copied, but {reused} were")
    if expect == "unwatched" and watched != 0:
        bad.append(f"no run of layers should be watched, but {watched} layers were")
    if wb["layers_watched"]["value"] != 0:
        bad.append(f"--no-reuse watched {wb['layers_watched']['value']} layers")
    if bad:
        print(f"FAIL {name}: " + "\n".join(bad))
        return 1
    print(f"ok {name}: identical; tasks executed {ex} of {rep} with reuse ({reused} layers copied, {watched} watched)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
