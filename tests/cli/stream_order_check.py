#!/usr/bin/env python3
"""A step that streams its weights ends after its weights have arrived (docs/streaming.md "Order on a tile").

stream_order_check.py WAFER_EMU OUT_DIR MODEL

A model too large for the tiny wafer, every stage streamed, on three placements: the step's latency is at least the
time the busiest edge channel carries bytes (every streamed byte feeds the step's result, and a channel starts at the
step's start), and at least the MemoryX port's busy time. With a tile's reduction free to run before its own GEMV had
its weights, whole-wafer reported 199.3 us against the channel's 253.2 us.

And no task of the step ends after it (its trace): small-llama on tiny, whole-wafer, where a bottom-row tile's merge of
its west neighbour's argmax ran before its own argmax, which waited on partial sums whose weights came late; the
step ended at 2002.6 us, before the busiest channel's 2025.8 us, while 55 tasks ran on up to 2192.6 us.
"""
import json, os, subprocess, sys


def main():
    exe, out, model = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(out, exist_ok=True)
    for placement in ("whole-wafer", "layer-bands", "serpentine-bands"):
        path = os.path.join(out, f"{placement}.json")
        r = subprocess.run([exe, "decode", "--wafer", "tiny", "--model", model, "--context", "16", "--weights", "stream",
                            "--placement", placement, "--json", path], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(f"FAIL: {placement}: exit {r.returncode}: {r.stderr}")
            return 1
        j = json.load(open(path))
        lat = j["latency_us"]["value"]
        io = j["io"]
        channel, port = io["edge_channel_busy_max"]["value"], io["memoryx_busy"]["value"]
        if io["streamed_bytes_per_step"]["value"] <= 0:
            print(f"FAIL: {placement}: nothing streamed (the test says nothing)")
            return 1
        if lat < channel or lat < port:
            print(f"FAIL: {placement}: the step ends at {lat} us, before the busiest channel's {channel} us "
                  f"(port {port} us) of weights")
            return 1
        print(f"ok: {placement}: {lat:.1f} us >= the busiest channel's {channel:.1f} us, the port's {port:.1f} us")
    path, trace = os.path.join(out, "head.json"), os.path.join(out, "head.trace.json")
    r = subprocess.run([exe, "decode", "--wafer", "tiny", "--model", "small-llama", "--context", "64", "--weights", "stream",
                        "--placement", "whole-wafer", "--json", path, "--trace", trace], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        print(f"FAIL: small-llama: exit {r.returncode}: {r.stderr}")
        return 1
    j = json.load(open(path))
    lat, channel = j["latency_us"]["value"], j["io"]["edge_channel_busy_max"]["value"]
    t = json.load(open(trace))
    events = t["traceEvents"] if isinstance(t, dict) else t
    tasks = [e for e in events if e.get("ph") == "X" and e.get("cat") == "task"]
    last = max(e["ts"] + e["dur"] for e in tasks)
    if not tasks or lat < channel or last > lat + 0.001:  # (the trace's times in us to 3 decimals)
        print(f"FAIL: small-llama: the step ends at {lat} us; the busiest channel's last byte {channel} us, the last of "
              f"{len(tasks)} tasks ends {last} us")
        return 1
    print(f"ok: small-llama whole-wafer: {lat:.1f} us >= the channel's {channel:.1f} us and the last task's end {last:.3f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
