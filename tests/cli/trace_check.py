#!/usr/bin/env python3
"""The Chrome trace of `wafer-emu decode --trace` checked against the step it came from.

trace_check.py WAFER_EMU OUTDIR

On the tiny wafer (one wafer, a pipeline of two, the whole-wafer meshgemv kernel, a --trace-window):
- the trace is valid JSON in object form, and every X event has name, ph, ts, dur, pid, tid;
- the spans of one track (pid, tid) nest, read as Perfetto's importer reads them (ts and dur each rounded to whole
  nanoseconds): each starts after the previous ended or lies inside it, exactly (it drops a span that does not);
- no event has pid 0 (Perfetto treats it as the kernel's idle process) or tid 0 (Perfetto takes it for the
  process's own track, tid = pid);
- the critical path's "layers" track (pid 1, tid 1) sums per layer to that layer's row of the
  results' breakdown.per_layer (total [us]), and its spans tile the step from 0 to the latency;
- the "operators" track's details (cycles by cause) sum per operator and cause to breakdown.per_op, the
  inter-wafer links' included;
- counters (ph C) exist per wafer for link utilisation, tiles busy and SRAM use, with numeric values, none
  after the step's end (the last interval ends with the step);
- with --trace-window only the window's tiles have tile tracks;
- a prefill in chunks names its critical path the last chunk's, and its tile tracks hold that chunk's every run;
- tracing changes no figure of the results (the JSON with and without --trace is the same but wall time).
"""
import json, os, re, subprocess, sys

import results

TINY = ["decode", "--wafer", "tiny", "--model", "tiny-llama", "--context", "64"]
EPS = 6e-4  # ts and dur are written on a whole-ns grid (µs with 3 decimals): half a ns each, and float noise


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(exe, args):
    r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"wafer-emu {' '.join(args)}: exit {r.returncode}\n{r.stderr}")


def strip(j):
    if isinstance(j, dict):
        return {k: strip(v) for k, v in j.items() if k != "wall_time"}
    if isinstance(j, list):
        return [strip(v) for v in j]
    return j


def check(trace_path, results_path, window=None):
    with open(trace_path) as f:
        tr = json.load(f)  # valid JSON or an exception (a failed test)
    res = json.load(open(results_path))
    if not isinstance(tr, dict) or not isinstance(tr.get("traceEvents"), list):
        fail(f"{trace_path}: not the object form {{\"traceEvents\": [...]}}")
    ev = tr["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    if not xs:
        fail(f"{trace_path}: no X events")
    for e in xs:
        for k in ("name", "ph", "ts", "dur", "pid", "tid"):
            if k not in e:
                fail(f"{trace_path}: X event without '{k}': {e}")
        if not isinstance(e["ts"], (int, float)) or not isinstance(e["dur"], (int, float)) or e["dur"] < 0:
            fail(f"{trace_path}: bad ts/dur: {e}")
    # Nesting per track.
    tracks = {}
    for e in xs:
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    ns = lambda x: int(round(x * 1000))  # (llround(x * 1000): as the importer reads ts and dur)
    for key, es in tracks.items():
        spans = sorted(((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e) for e in es), key=lambda s: (s[0], -s[1]))
        stack = []
        for b, end, e in spans:
            while stack and b >= stack[-1][1]:
                stack.pop()
            if stack and end > stack[-1][1]:
                fail(f"{trace_path}: track {key}: {e['name']} [{e['ts']}, +{e['dur']}] overlaps "
                     f"{stack[-1][2]['name']} [{stack[-1][2]['ts']}, +{stack[-1][2]['dur']}] without nesting")
            stack.append((b, end, e))
    if any(pid == 0 or tid == 0 for pid, tid in tracks) or any(e.get("pid") == 0 or e.get("tid") == 0 for e in ev):
        fail(f"{trace_path}: an event of pid 0 or tid 0")
    # The layers track sums to the breakdown per layer, and tiles the step.
    layers = sorted(tracks.get((1, 1), []), key=lambda e: e["ts"])
    if not layers:
        fail(f"{trace_path}: no critical-path layers track (pid 1, tid 1)")
    sums = {}
    for e in layers:
        sums[e["name"]] = sums.get(e["name"], 0.0) + e["dur"]
    want = {r["layer"]: r["total [us]"] for r in results.rows(res["breakdown"]["per_layer"])}
    for name, us in want.items():
        got = sums.get(name, 0.0)
        n = sum(1 for e in layers if e["name"] == name)
        if abs(got - us) > EPS * (n + 1) + 1e-9:
            fail(f"{trace_path}: layer '{name}': spans sum to {got} us, the results say {us} us")
    extra = set(sums) - set(want)
    if extra:
        fail(f"{trace_path}: spans of layers the results do not have: {sorted(extra)}")
    lat = res["latency_us"]["value"]
    if abs(layers[0]["ts"]) > EPS or abs(layers[-1]["ts"] + layers[-1]["dur"] - lat) > EPS * 4:
        fail(f"{trace_path}: layers span [{layers[0]['ts']}, {layers[-1]['ts'] + layers[-1]['dur']}], not [0, {lat}]")
    for a, b in zip(layers, layers[1:]):
        if abs(a["ts"] + a["dur"] - b["ts"]) > EPS * 2:
            fail(f"{trace_path}: a gap or overlap in the layers track between {a['name']} and {b['name']}")
    # The operators track's causes (args.detail, "cause N, ... cycles") sum per operator and cause to per_op.
    got = {}
    for e in tracks.get((1, 2), []):
        op = e["name"].split(" / ")[-1]
        for cause, n in re.findall(r"([a-z_]+) (\d+)", e["args"]["detail"]):
            got[(op, cause)] = got.get((op, cause), 0) + int(n)
    for r in results.rows(res["breakdown"]["per_op"]):
        for k, v in r.items():
            if k.endswith(" [cycles]") and k != "total [cycles]" and v != got.get((r["operator"], k[:-9]), 0):
                fail(f"{trace_path}: operator {r['operator']}: {k[:-9]} {got.get((r['operator'], k[:-9]), 0)} cycles "
                     f"in the operators track's details, {v} in the results")
    # Counters.
    wafers = res["config"]["wafers"]["value"]
    cs = [e for e in ev if e.get("ph") == "C"]
    late = [e for e in cs if e["ts"] > lat + EPS]
    if late:
        fail(f"{trace_path}: a counter sample at {late[0]['ts']} us, after the step's end at {lat} us")
    for pid in range(2, wafers + 2):
        for kind in ("link utilisation [%]", "tiles busy [%]", "SRAM use [%]"):
            mine = [e for e in cs if e.get("pid") == pid and e["name"].startswith(kind)]
            if not mine:
                fail(f"{trace_path}: wafer {pid - 2}: no '{kind}' counter")
            for e in mine:
                if not isinstance(e.get("args", {}).get("value"), (int, float)) or "ts" not in e:
                    fail(f"{trace_path}: bad counter event {e}")
    if not any(e["args"]["value"] > 0 for e in cs if e["name"].startswith("link utilisation")):
        fail(f"{trace_path}: every link utilisation sample is 0")
    # Tile tracks.
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    tiles = [n for (pid, tid), n in names.items() if pid >= 2 and n.startswith("tile (")]
    if not tiles:
        fail(f"{trace_path}: no tile tracks")
    if window:
        (x0, x1), (y0, y1) = window
        for n in tiles:
            x, y = map(int, re.match(r"tile \((\d+),(\d+)\)", n).groups())
            if not (x0 <= x <= x1 and y0 <= y <= y1):
                fail(f"{trace_path}: {n} has a track but is outside the window {window}")
    return len(xs), len(cs), len(tiles)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    exe, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    p = lambda n: os.path.join(out, n)
    run(exe, TINY + ["--json", p("plain.json")])
    run(exe, TINY + ["--json", p("traced.json"), "--trace", p("trace.json")])
    if strip(json.load(open(p("plain.json")))) != strip(json.load(open(p("traced.json")))):
        fail("--trace changed the results")
    print("one wafer: %d X events, %d counter samples, %d tile tracks" % check(p("trace.json"), p("traced.json")))
    run(exe, TINY + ["--wafers", "2", "--json", p("two.json"), "--trace", p("two_trace.json")])
    print("two wafers: %d X events, %d counter samples, %d tile tracks" % check(p("two_trace.json"), p("two.json")))
    run(exe, TINY + ["--placement", "whole-wafer", "--kernel", "meshgemv", "--json", p("mg.json"), "--trace", p("mg_trace.json")])
    print("meshgemv kernel: %d X events, %d counter samples, %d tile tracks" % check(p("mg_trace.json"), p("mg.json")))
    run(exe, TINY + ["--json", p("win.json"), "--trace", p("win_trace.json"), "--trace-window", "2:3,1:4"])
    x, c, t = check(p("win_trace.json"), p("win.json"), window=((2, 3), (1, 4)))
    print(f"window 2:3,1:4: {x} X events, {c} counter samples, {t} tile tracks")
    if t > 8:
        fail(f"window of 8 tiles has {t} tile tracks")
    # A prefill in chunks is traced as its last chunk, and the trace says so.
    run(exe, TINY + ["--prefill", "64", "--chunk", "16", "--json", p("pf.json"), "--trace", p("pf_trace.json")])
    ev = json.load(open(p("pf_trace.json")))["traceEvents"]
    name = [e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name" and e["pid"] == 1]
    if name != ["critical path of the last of 4 chunks (the results sum the chunks)"]:
        fail(f"a prefill of 4 chunks: the critical path's process is named {name}")
    # Its tile tracks are the last chunk's every run: the earlier chunks' runs counted against the tracks' cap of
    # 120,000 events, and 4 chunks of 34,169 runs on small showed 2,361 of its 4,096 tiles (some only in part).
    run(exe, ["decode", "--wafer", "small", "--model", "small-llama", "--context", "256", "--prefill", "16", "--chunk", "4",
              "--json", p("pf4.json"), "--trace", p("pf4_trace.json")])
    ev = json.load(open(p("pf4_trace.json")))["traceEvents"]
    tasks = sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") == "task")
    runs = json.load(open(p("pf4.json")))["fabric"]["tasks_run"]["value"]
    wafer = [e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name" and e["pid"] == 2]
    if tasks != runs or wafer != ["wafer 0 (every tile)"]:
        fail(f"a prefill of 4 chunks on small: {tasks} task events against the last chunk's {runs} runs; wafer 0 named {wafer}")
    print("ok: the traces are valid, nest, and sum to the results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
