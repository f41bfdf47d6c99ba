#!/usr/bin/env python3
"""A resident step whose defects reorder a tile's inputs holds the task that would pass (docs/streaming.md "Order
on a tile").

held_order_check.py WAFER_EMU OUT_DIR

small-llama on the small wafer, layer-bands, 2 defects per cm^2 (seed 1): a repair detour delays tile (63,13)'s
layer input, and its neighbour's partial sum arrived first, so the reduction that adds the tile's own partial
(task 1, "after task 0") ran before the tile had made it: in the trace it started at 1.218 us, and task 0 ended at
1.455 us. Now
`fabric.tasks_held` is 1, and in the trace of that tile no task starts before the task whose output it reads ends
(its program, --dump-firmware, says which). The same run without defects holds nothing.
"""
import json, os, re, subprocess, sys

ARGS = ["decode", "--wafer", "small", "--model", "small-llama", "--context", "256", "--placement", "layer-bands"]
DEFECTS = ["--density", "2", "--seed", "1"]
TILE = (63, 13)


def run(exe, args):
    r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def held(path):
    return json.load(open(path))["fabric"]["tasks_held"]["value"]


def main():
    exe, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    path, trace = os.path.join(out, "held.json"), os.path.join(out, "held.trace.json")
    run(exe, ARGS + DEFECTS + ["--json", path, "--trace", trace, "--trace-window", f"{TILE[0]}:{TILE[0]},{TILE[1]}:{TILE[1]}"])
    program = run(exe, ARGS + DEFECTS + ["--dump-firmware", f"{TILE[0]},{TILE[1]}"])
    reads = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"task\s+(\d+):.*\bafter task (\d+)", program)}
    t = json.load(open(trace))
    events = t["traceEvents"] if isinstance(t, dict) else t
    runs = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "task":
            runs[int(e["args"]["detail"].split()[1])] = (e["ts"], e["ts"] + e["dur"])
    if not reads or not runs:
        print(f"FAIL: the test says nothing: {len(reads)} tasks with `after`, {len(runs)} runs in the trace")
        return 1
    for k, read in sorted(reads.items()):
        if k not in runs or read not in runs:
            print(f"FAIL: task {k} or the task {read} it reads did not run")
            return 1
        if runs[k][0] + 0.0005 < runs[read][1]:  # (the trace's times in us to 3 decimals)
            print(f"FAIL: task {k} starts at {runs[k][0]} us, before task {read}, whose output it reads, ends at {runs[read][1]} us")
            return 1
    if held(path) != 1:
        print(f"FAIL: tasks_held {held(path)}, not the 1 this map reorders")
        return 1
    print(f"ok: tile {TILE}: 1 task held; {len(reads)} tasks each start after the task whose output they read")
    clean = os.path.join(out, "clean.json")
    run(exe, ARGS + ["--json", clean])
    if held(clean) != 0:
        print(f"FAIL: without defects tasks_held is {held(clean)}")
        return 1
    print("ok: without defects nothing is held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
