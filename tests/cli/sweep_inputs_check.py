"""A study's folder keeps the hash of each model and wafer file the study names (spec.json's `inputs`): a sweep
resumed after one was edited is refused in one line (it ran the rest of the points with the new file, mixing two
models in one study), --summarize and report say the file changed, and it runs again once the file is restored;
a spec.json whose point count was edited is refused by --summarize; a study naming no model keeps the default
model's hash.

Usage: sweep_inputs_check.py WAFER_EMU OUTDIR CONFIGS_DIR
"""
import json, os, shutil, subprocess, sys

exe, out, configs = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
p = lambda n: os.path.join(out, n)
fails = []
shutil.copy(os.path.join(configs, "models", "test", "tiny-llama.json"), p("mm.json"))
original = open(p("mm.json")).read()
json.dump({"schema": 1, "fixed": {"wafer": "tiny", "model": "mm.json", "context": 64}, "axes": {"hop_latency": [1, 2, 3]}},
          open(p("s.json"), "w"))


def sweep(*args):
    return subprocess.run([exe, "sweep"] + list(args), capture_output=True, text=True, timeout=300, cwd=out)


r = sweep("--spec", "s.json", "--out", "o", "--point", "0")
if r.returncode != 0:
    fails.append(f"point 0: exit {r.returncode} {r.stderr!r}")
inputs = json.load(open(p("o/spec.json"))).get("inputs", {})
if list(inputs) != ["model mm.json"]:
    fails.append(f"spec.json's inputs: {inputs}")
cfg = json.loads(original)
cfg["intermediate_size"] = cfg["intermediate_size"] // 2
json.dump(cfg, open(p("mm.json"), "w"))
r = sweep("--spec", "s.json", "--out", "o")
if r.returncode != 2 or "ran with model mm.json of other content" not in r.stderr or r.stderr.count("\n") != 1:
    fails.append(f"resumed with the model edited: exit {r.returncode}, {r.stderr!r}")
if len(open(p("o/points.jsonl")).readlines()) != 1:
    fails.append("resumed with the model edited: points were added")
# --summarize and report say the file changed (a wafer file's clock edited made them call the untouched points edited).
for args, remedy in ((["--summarize", "o"], "restore the file to summarise them"), (["report", "o"], "restore the file to draw them")):
    r = subprocess.run([exe] + (["sweep"] if args[0] == "--summarize" else []) + args + (["--out", "o.html"] if args[0] == "report" else []),
                       capture_output=True, text=True, timeout=300, cwd=out)
    if r.returncode != 2 or "ran with model mm.json of other content" not in r.stderr or remedy not in r.stderr:
        fails.append(f"{' '.join(args)} with the model edited: exit {r.returncode}, {r.stderr!r}")
open(p("mm.json"), "w").write(original)
r = sweep("--spec", "s.json", "--out", "o")
if r.returncode != 0 or len(open(p("o/points.jsonl")).readlines()) != 3:
    fails.append(f"resumed with the model restored: exit {r.returncode}, {r.stderr!r}")
spec = json.load(open(p("o/spec.json")))
spec["points"] = 99
json.dump(spec, open(p("o/spec.json"), "w"))
r = sweep("--summarize", "o")
if r.returncode != 2 or "says 99 points where its spec has 3 (edited?)" not in r.stderr:
    fails.append(f"--summarize of a spec.json edited: exit {r.returncode}, {r.stderr!r}")
# A study that names no model runs the default one, whose config is hashed too (it was not: nothing kept it).
json.dump({"schema": 1, "fixed": {"wafer": "tiny", "context": 64}, "axes": {"hop_latency": [1]}}, open(p("d.json"), "w"))
r = sweep("--spec", "d.json", "--out", "d", "--point", "0")  # (the 8B does not fit the tiny wafer: the point fails)
inputs = json.load(open(p("d/spec.json"))).get("inputs", {}) if os.path.exists(p("d/spec.json")) else {}
if list(inputs) != ["model llama-3.1-8b"] or r.returncode != 0:
    fails.append(f"a study naming no model: exit {r.returncode}, spec.json's inputs {inputs}")
for f in fails:
    print("FAIL:", f)
if fails:
    sys.exit(1)
print("ok: a study resumed with a model file edited is refused, and runs once it is restored")
