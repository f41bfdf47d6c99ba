#!/usr/bin/env python3
"""Every results JSON is of one form (docs/results.md, schema_version 2).

results_form.py WAFER_EMU OUTDIR

Runs the subcommands that write tables (decode with defects, decode --prefill in chunks, decode --placement
auto, noc, sweep's summary and its DIR/summary.json, validate, validate --fit, describe, defects, table) and
walks each document: schema_version 2; no key holds '[' (no unit inside a key); every table is
{"columns": [{"name", "unit"}, ...], "rows": [...]} with rows of the column count; every figure is
{"value", "unit"}. Then a few tables by hand: per_layer has two columns named "total" (cycles and us), the
per-chunk and candidates tables exist, the text summary still prints "total [cycles]"; each table's rows
agree with the figures beside it (per_layer's totals sum to the latency).
"""
import json, math, os, shutil, subprocess, sys

import results

exe, out = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
data = os.path.join(here, "data")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
fails = []


def run(name, args):
    path = os.path.join(out, name + ".json")
    r = subprocess.run([exe] + args + ["--json", path], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"FAIL: wafer-emu {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return json.load(open(path)), r.stdout


def tables(j, where=""):
    if results.is_table(j):
        yield where, j
    elif isinstance(j, dict):
        for k, v in j.items():
            yield from tables(v, f"{where}/{k}")


TINY = ["--wafer", "tiny", "--model", "tiny-llama", "--context", "64"]
docs = {}
docs["decode"], text = run("decode", ["decode"] + TINY + ["--density", "20", "--seed", "3"])
docs["decode_prefill"], _ = run("decode_prefill", ["decode", "--wafer", "tiny", "--model", "tiny-llama", "--context",
                                                   "256", "--prefill", "256", "--chunk", "64"])
docs["decode_auto"], _ = run("decode_auto", ["decode"] + TINY + ["--placement", "auto"])
docs["decode_step"], _ = run("decode_step", ["decode", "--wafer", "tiny", "--model", "tiny-llama", "--step", "1@64,4@32"])
docs["noc"], _ = run("noc", ["noc", "--wafer", "tiny", "--cycles", "300", "--rate", "0.05", "--seed", "3"])
study = os.path.join(out, "study")
docs["sweep"], _ = run("sweep", ["sweep", "--spec", os.path.join(data, "sweep_placement_tiny.json"), "--out", study,
                                 "--quiet"])
docs["summary.json"] = json.load(open(os.path.join(study, "summary.json")))
docs["validate"], _ = run("validate", ["validate", "--cases", os.path.join(data, "validate_tiny.json")])
docs["validate_fit"], _ = run("validate_fit", ["validate", "--cases", os.path.join(data, "validate_tiny.json"),
                                               "--fit", "task_overhead", "--max-iterations", "50"])
docs["describe"], _ = run("describe", ["describe"])
docs["defects"], _ = run("defects", ["defects", "--wafer", "tiny", "--maps", "5"])
docs["table"], _ = run("table", ["table", "--wafer", "tiny", "--model", "tiny-llama", "--contexts", "32",
                                 "--batches", "1", "--prefill-tokens", "4", "--out", os.path.join(out, "tables")])

ntables = 0
for name, j in docs.items():
    for p in results.form_problems(j, name):
        fails.append(p)
    ntables += sum(1 for _ in tables(j))
want_tables = {"decode": ["/breakdown/per_layer", "/breakdown/per_op", "/breakdown/work_per_op", "/regions/layers"],
               "decode_prefill": ["/prefill/per_chunk"], "decode_auto": ["/search/candidates"],
               "decode_step": ["/mixed/per_sequence"],
               "noc": ["/most_loaded_links"], "sweep": ["/settings", "/placements", "/best_placement", "/sensitivity"],
               "validate": ["/cases"], "validate_fit": ["/fit/parameters", "/fit/residuals"],
               "describe": ["/parameters"]}
for name, want in want_tables.items():
    have = [w for w, _ in tables(docs[name])]
    for w in want:
        if w not in have:
            fails.append(f"{name}: no table {w} (tables: {have})")
if {k: v for k, v in docs["sweep"].items() if k not in ("points_run", "wall_time")} != docs["summary.json"]:
    fails.append("sweep --json and DIR/summary.json differ (beyond this run's points_run and wall_time)")

# By hand: per_layer's columns, and its rows against the figures beside them.
d = docs["decode"]
pl = d["breakdown"]["per_layer"]
cols = [(c["name"], c["unit"]) for c in pl["columns"]]
if cols[:4] != [("layer", ""), ("total", "cycles"), ("total", "us"), ("share", "%")]:
    fails.append(f"per_layer columns begin {cols[:4]}")
if ("compute", "cycles") not in cols:
    fails.append(f"per_layer has no compute column in cycles: {cols}")
rows = results.rows(pl)
lat = d["latency_cycles"]["value"]
if sum(r["total [cycles]"] for r in rows) != lat:
    fails.append(f"per_layer totals sum to {sum(r['total [cycles]'] for r in rows)}, the latency is {lat}")
if not math.isclose(sum(r["share [%]"] for r in rows), 100.0, rel_tol=1e-6):
    fails.append("per_layer shares do not sum to 100 %")
comp = sum(r["compute [cycles]"] for r in rows)
if comp != d["breakdown"]["compute"]["value"]:
    fails.append(f"per_layer compute sums to {comp}, breakdown.compute is {d['breakdown']['compute']['value']}")
# The text summary keeps its "name [unit]" headers.
if "total [cycles]" not in text or "share [%]" not in text:
    fails.append("the text summary lost its 'total [cycles]' / 'share [%]' headers")
# The CSV files keep "name [unit]" headers too (tools read them so).
head = open(os.path.join(study, "placements.csv")).readline()
if "mean [us]" not in head:
    fails.append(f"placements.csv header {head!r}")
# report reads the new form: the per-layer table of the page holds every layer.
page = os.path.join(out, "d.html")
r = subprocess.run([exe, "report", os.path.join(out, "decode.json"), "--out", page], capture_output=True, text=True,
                   timeout=120)
if r.returncode != 0:
    fails.append(f"report: exit {r.returncode}: {r.stderr}")
else:
    html = open(page, encoding="utf-8").read()
    for row in rows:
        cell = f"<td>{row['layer']}</td>"
        if cell not in html:
            fails.append(f"report: no row for {row['layer']!r}")
    if "compute" not in html:
        fails.append("report: no compute cause on the page")

for f in fails:
    print("FAIL: " + f)
if fails:
    sys.exit(1)
print(f"ok: {len(docs)} documents, {ntables} tables, every one of schema_version {results.SCHEMA_VERSION}'s form")
