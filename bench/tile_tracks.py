"""Helpers for the bench scripts that read a decode's Chrome trace (bench/defect_locality.sh,
bench/square_classes.sh): its per-tile tracks (docs/report.md, --trace-window)."""
import json
from collections import defaultdict

CLOCK_MHZ = 1100  # trace times are in us at the wse3 clock, 1.1 GHz


def tile_runs(path):
    """Per tile track name ("tile (x,y)"): its task runs as (start, end) in cycles, in trace order."""
    ev = json.load(open(path))["traceEvents"]
    name = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("pid") == 2 and e["name"] == "thread_name"}
    out = defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("pid") == 2:  # per-tile tracks (wafer 0)
            out[name[e["tid"]]].append((round(e["ts"] * CLOCK_MHZ), round((e["ts"] + e["dur"]) * CLOCK_MHZ)))
    return out
