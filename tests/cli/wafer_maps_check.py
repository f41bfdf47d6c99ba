"""The wafers of a pipeline have defect maps of their own (docs/mapping.md section 5).

- `decode --wafers 2 --density D --seed S` generates a map per wafer: wafer 0's is the map a single wafer of seed S
  has, wafer 1's another (`--defects-out` given once per wafer writes them);
- the two maps read back (`--defects` given once per wafer) give the same decode, every section but wall_time and
  config.defects;
- each wafer runs on its own map: its repair section (regions.wafer_K.repair) counts its own map's defects and
  detours, and its detour matrix adds up to them; with the maps swapped, each wafer's figures follow its map;
- a map given once is every wafer's (regions.repair, "the same on each of the 2 wafers"), and the same as that
  file given once per wafer;
- a study's point of two wafers at that density and seed has decode's latency, the two maps' defects and detours
  summed (each link once, as decode's repair sections count them), and each wafer's;
- each wafer's seed is given (config.defects), and wafer 1's map is a single decode's of that seed;
- a refusal one wafer's map causes names the wafer, a bad map file names --defects and the wafer, one --defects-out
  path for two wafers and an unknown repair scheme are refused before any map is written;
- bad counts of --defects and --defects-out are refused in one line.

Usage: wafer_maps_check.py WAFER_EMU OUTDIR
"""
import json, os, re, shutil, subprocess, sys

from decode_pair import differences, run

exe, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
p = lambda n: os.path.join(out, n)
fails = []
tiny = ["--wafer", "tiny", "--model", "tiny-llama", "--context", "64"]
gen = ["--density", "100", "--seed", "1"]


def matrix_sum(m):
    return sum(v for row in m["value"] for v in row if v is not None)


def maps_text(path):
    return [l for l in open(path) if not l.startswith("#")]


# Generated: a map per wafer, wafer 0's the single wafer's.
a, _ = run(exe, tiny + gen + ["--wafers", "2", "--defects-out", p("m0.csv"), "--defects-out", p("m1.csv")], p("a.json"), None)
run(exe, tiny + gen + ["--defects-out", p("single.csv")], p("single.json"), None)
if maps_text(p("m0.csv")) != maps_text(p("single.csv")):
    fails.append("wafer 0's map is not the map a single wafer of the same seed has")
if maps_text(p("m0.csv")) == maps_text(p("m1.csv")):
    fails.append("the two wafers have the same map")
if not re.search(r"a map per wafer \(seeds \d+, \d+; \d+, \d+ defects\)", a["config"]["defects"]):
    fails.append(f"config.defects does not give a map per wafer: {a['config']['defects']!r}")
if "repair" in a["regions"]:
    fails.append("maps of their own, yet a repair section for every wafer")

# Read back, one file per wafer: the same decode.
b, _ = run(exe, tiny + ["--wafers", "2", "--defects", p("m0.csv"), "--defects", p("m1.csv")], p("b.json"), None)
a2, b2 = dict(a), dict(b)
a2["config"], b2["config"] = dict(a["config"]), dict(b["config"])
a2["config"].pop("defects"), b2["config"].pop("defects")
fails += differences(a2, b2, "generated", "read back")


# Each wafer on its own map.
def wafer_repair(res, k):
    rp = res["regions"][f"wafer_{k}"]["repair"]
    return rp["defects"]["value"], rp["extra_hops"]["value"], matrix_sum(res["regions"][f"wafer_{k}"]["extra_hops"])


counts = [len(maps_text(p(f"m{k}.csv"))) - 1 for k in (0, 1)]  # (less the header line)
for k in (0, 1):
    defects, extra, cells = wafer_repair(a, k)
    if defects != counts[k]:
        fails.append(f"wafer {k}: {defects} defects in its repair section, its map holds {counts[k]}")
    if cells != extra:
        fails.append(f"wafer {k}: its detour matrix adds up to {cells} hops, its repair section says {extra}")
swapped, _ = run(exe, tiny + ["--wafers", "2", "--defects", p("m1.csv"), "--defects", p("m0.csv")], p("swapped.json"), None)
for k in (0, 1):
    if wafer_repair(swapped, k) != wafer_repair(a, 1 - k):
        fails.append(f"maps swapped: wafer {k}'s repair {wafer_repair(swapped, k)} is not the other map's {wafer_repair(a, 1 - k)}")
if wafer_repair(a, 0)[1] == wafer_repair(a, 1)[1]:
    fails.append("the two maps detour alike: choose a seed whose maps differ in detours")

# One map for every wafer.
once, _ = run(exe, tiny + ["--wafers", "2", "--defects", p("m1.csv")], p("once.json"), None)
twice, _ = run(exe, tiny + ["--wafers", "2", "--defects", p("m1.csv"), "--defects", p("m1.csv")], p("twice.json"), None)
if not once["config"]["defects"].endswith(", the same on each of the 2 wafers") or "repair" not in once["regions"]:
    fails.append(f"a map given once: {once['config']['defects']!r}, regions.repair {'repair' in once['regions']}")
for k in (0, 1):
    if once["regions"][f"wafer_{k}"]["extra_hops"] != twice["regions"][f"wafer_{k}"]["extra_hops"]:
        fails.append(f"wafer {k}: a map given once and the same map given twice detour otherwise")
if (once["latency_cycles"], once["breakdown"]) != (twice["latency_cycles"], twice["breakdown"]):
    fails.append("a map given once and the same map given once per wafer decode otherwise")

# A study's point of two wafers: decode's answer, the maps' sums.
spec = {"schema": 1, "name": "two wafers",
        "fixed": {"wafer": "tiny", "model": "tiny-llama", "context": 64, "wafers": 2, "density": 100, "seed": 1}}
json.dump(spec, open(p("two.json"), "w"))
r = subprocess.run([exe, "sweep", "--spec", p("two.json"), "--out", p("study")], capture_output=True, text=True, timeout=300)
if r.returncode != 0:
    fails.append(f"sweep: exit {r.returncode}: {r.stderr}")
else:
    line = json.loads(open(p("study/points.jsonl")).readline())
    if line["latency_cycles"] != a["latency_cycles"]["value"]:
        fails.append(f"the study's point: {line['latency_cycles']} cycles, decode {a['latency_cycles']['value']}")
    rep = line["repair"]
    extra = [wafer_repair(a, k)[1] for k in (0, 1)]
    if rep["defects"] != sum(counts) or rep["extra_hops"] != sum(extra) or line["extra_hops"] != sum(extra):
        fails.append(f"the study's point: {rep['defects']} defects and {rep['extra_hops']} extra hops, the maps "
                     f"{sum(counts)} and {sum(extra)}")
    each = [(w["defects"], w["extra_hops"]) for w in rep.get("per_wafer", [])]
    if each != [(counts[k], extra[k]) for k in (0, 1)]:
        fails.append(f"the study's point per wafer: {each}")

# A point whose repair fails on every wafer names each of them in its reason, not the first alone.
spec = {"schema": 1, "name": "three dense wafers",
        "fixed": {"wafer": "tiny", "model": "tiny-llama", "context": 64, "wafers": 3, "density": 1000, "seed": 1}}
json.dump(spec, open(p("dense.json"), "w"))
r = subprocess.run([exe, "sweep", "--spec", p("dense.json"), "--out", p("dense")], capture_output=True, text=True, timeout=300)
line = json.loads(open(p("dense/points.jsonl")).readline()) if os.path.exists(p("dense/points.jsonl")) else {}
rep = line.get("repair", {})
if [w["complete"] for w in rep.get("per_wafer", [])] != [False] * 3:
    fails.append(f"the dense study's point: per_wafer {rep.get('per_wafer')} (every wafer's repair should fail)")
elif [rep.get("reason", "").count(f"wafer {k}: ") for k in range(3)] != [1, 1, 1]:
    fails.append(f"the dense study's point's reason does not name each failed wafer once: {rep.get('reason')!r}")

# Each wafer's own seed is given: wafer 1's map alone is a single decode of that seed.
m = re.search(r"seeds (\d+), (\d+);", a["config"]["defects"])
if not m or m.group(1) != "1":
    fails.append(f"config.defects does not give each wafer's seed: {a['config']['defects']!r}")
else:
    run(exe, tiny + ["--density", "100", "--seed", m.group(2), "--defects-out", p("alone1.csv")], p("alone1.json"), None)
    if maps_text(p("alone1.csv")) != maps_text(p("m1.csv")):
        fails.append(f"wafer 1's map is not the map of its seed {m.group(2)} alone")

# A refusal that one wafer's map causes names the wafer; a map file's error names the option and the wafer.
refusals = [(tiny + ["--wafers", "2", "--defects", p("m0.csv"), "--defects", p("dead.csv")], "wafer 1: layer-bands needs"),
            (tiny + ["--wafers", "2", "--defects", p("m0.csv"), "--defects", p("empty.csv")], "--defects (wafer 1's map): "),
            (tiny + ["--wafers", "2"] + gen + ["--defects-out", p("d.csv"), "--defects-out", p("d.csv")],
             "--defects-out " + p("d.csv") + " is given for wafers 0 and 1"),
            (tiny + ["--wafers", "2"] + gen + ["--repair", "glue", "--defects-out", p("g0.csv"), "--defects-out", p("g1.csv")],
             "unknown repair scheme 'glue'")]
# (two rows of three dead routers: more rows to shift than tiny's one spare row)
open(p("dead.csv"), "w").write("kind,x,y,dir\n" + "".join(f"router,{x},{y}\n" for x in range(3) for y in (0, 2)))
open(p("empty.csv"), "w").write("")
for args, msg in refusals:
    r = subprocess.run([exe, "decode"] + args, capture_output=True, text=True, timeout=300)
    if r.returncode != 2 or msg not in r.stderr or r.stderr.count("\n") != 1:
        fails.append(f"{' '.join(args)}: exit {r.returncode}, {r.stderr!r} (expected '{msg}')")
for f in ("d.csv", "g0.csv", "g1.csv"):
    if os.path.exists(p(f)):
        fails.append(f"a refused decode wrote {f}")

# Bad counts.
for args, msg in [(["--defects", p("m0.csv")] * 3, "--defects given 3 times for 2 wafers"),
                  (gen + ["--defects-out", p("x.csv")], "--defects-out given once for 2 wafers with defect maps of their own"),
                  (["--defects", p("m0.csv"), "--defects-out", p("x.csv"), "--defects-out", p("y.csv")],
                   "--defects-out given twice for one defect map")]:
    r = subprocess.run([exe, "decode"] + tiny + ["--wafers", "2"] + args, capture_output=True, text=True, timeout=300)
    if r.returncode != 2 or msg not in r.stderr or r.stderr.count("\n") != 1:
        fails.append(f"{' '.join(args)}: exit {r.returncode}, {r.stderr!r}")
for f in fails:
    print("FAIL:", f)
if fails:
    sys.exit(1)
print(f"ok: a map per wafer ({counts[0]} and {counts[1]} defects, {wafer_repair(a, 0)[1]} and {wafer_repair(a, 1)[1]} "
      "extra hops), each wafer on its own; read back, swapped, shared and in a study alike")
