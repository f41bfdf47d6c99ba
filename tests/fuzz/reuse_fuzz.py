#!/usr/bin/env python3
"""Differential fuzzing of the answers that must not depend on how a step is emulated.

reuse_fuzz.py WAFER_EMU OUT_DIR [CASES] [SEED] [STUDIES] [TABLES]

Each case is a `decode` on a small wafer drawn at random from a seeded generator: a wafer file (the tiny or the
small preset with another size, spares, hop, ramp and software costs), a model (a HuggingFace-shaped config with
random layers, widths and heads, or a shipped test model), context, batch, placement, kernel, allreduce and
group, weight precision and residency, a pipeline of wafers, the fidelity, and a defect map (none, Poisson or
clustered at a random density and seed). The case runs twice:
  - the fast way: reuse on (the default), the mesh and memory kept between steps (the default), `--threads` 1
    or 2 at random;
  - the slow way: `--no-reuse --no-cache --threads 1`.
The two JSON results must be equal byte for byte but for `wall_time` (tests/cli/decode_pair.py), and the slow
run must have executed every task it represents; a case refused (exit 2, one line on stderr) must be refused
both ways with the same line. Any other exit, or two lines on stderr, is a failure too. Each failing case is
printed as the two command lines that reproduce it.

Then STUDIES studies (default 0), each a `sweep` of a few points in one process: a wafer file and a model drawn
as above, and two or three axes drawn from the defect seed and density, context, batch, fidelity, placement
and hop latency, so that consecutive points share a defect map, a mapping or a mesh model, or do not. Each runs
three ways: with the cache (`--jobs 1`), with `--jobs 2`, and with `--no-cache`; their points.jsonl lines (but
`wall_s`) and summary.csv must be the same. A study the sweep refuses must be refused alike the three ways.

Then TABLES latency tables (default 0), each a `table` of random contexts, batches and prompt lengths on a wafer
file and a model drawn as above, made three ways (with the cache, `--jobs 2`, `--no-cache`): every file of the
three folders must be the same (but meta.yaml's time stamp, tests/cli/results.py), or the three refused with the
same error line.

tests/cli/reuse.cmake and tests/cli/threads.cmake pin chosen cases; this draws many more. A bounded run is in
./check (`fuzz.reuse`); `bench/run reuse_fuzz` runs a larger one (REUSE_FUZZ_CASES, REUSE_FUZZ_SEED).
"""
import json, os, random, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
from decode_pair import differences  # noqa: E402
from results import table_files  # noqa: E402


# Wafer parameters set now and then: (key, how often, the value drawn).
OPTIONAL_WAFER_PARAMETERS = [
    ("hop_latency", 0.3, lambda r: r.randint(1, 3)),
    ("ramp_latency", 0.3, lambda r: r.randint(0, 4)),
    ("task_overhead", 0.3, lambda r: r.randint(1, 200)),
    ("vector_setup", 0.3, lambda r: r.randint(0, 40)),
    ("color_switch", 0.3, lambda r: r.randint(0, 12)),
    ("collective_sync", 0.2, lambda r: r.randint(0, 8)),
    ("simd_width", 0.2, lambda r: r.choice([4, 8, 16])),
    ("stream_stage_latency", 0.2, lambda r: r.randint(0, 3)),
]
# The three ways a study or a table is made, which must give the same results (the last is the reference).
THREE_WAYS = (("cache", []), ("--jobs 2", ["--jobs", "2"]), ("--no-cache", ["--no-cache"]))


def wafer_file(rng, path, stages):
    preset = rng.choice(["tiny", "tiny", "small"])
    w = {"preset": preset, "name": f"fuzz-{preset}"}
    if preset == "tiny":
        w["logical_width"] = rng.randint(6, 24)
        w["logical_height"] = rng.randint(6, 24)
    else:
        w["logical_width"] = rng.randint(24, 72)
        w["logical_height"] = rng.randint(24, 72)
    if rng.random() < 0.7:  # (mostly rows enough for a band per stage: the placements that copy layers in space)
        w["logical_height"] = max(w["logical_height"], stages + rng.randint(0, 6))
    w["spare_cols"] = rng.randint(0, 3)
    w["spare_rows"] = rng.randint(0, 3)
    for key, chance, draw in OPTIONAL_WAFER_PARAMETERS:
        if rng.random() < chance:
            w[key] = draw(rng)
    with open(path, "w") as f:
        json.dump(w, f)
    return w


def model_file(rng, path, shipped):
    """The model's path and its number of decoder layers."""
    if rng.random() < 0.25:
        names = ["tiny-llama.json", "small-llama.json", "tiny-moe.json", "tiny-qwen.json"]
        f = os.path.join(shipped, rng.choice(names))
        with open(f) as g:
            return f, json.load(g)["num_hidden_layers"]
    heads = rng.choice([2, 4, 8])
    head_dim = rng.choice([8, 16, 32, 64])
    kv = rng.choice([h for h in (1, 2, 4, 8) if heads % h == 0])
    hidden = heads * head_dim
    m = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": hidden, "intermediate_size": hidden * rng.choice([2, 3, 4]),
        "max_position_embeddings": 4096, "num_attention_heads": heads,
        "num_hidden_layers": rng.choice([rng.randint(1, 8), rng.randint(8, 40), rng.randint(8, 40)]),
        "num_key_value_heads": kv, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
        "tie_word_embeddings": rng.random() < 0.3, "torch_dtype": "bfloat16",
        "vocab_size": rng.choice([256, 512, 1024, 4096]),
    }
    with open(path, "w") as f:
        json.dump(m, f)
    return path, m["num_hidden_layers"]


def case_args(rng, out, i, shipped):
    mf, layers = model_file(rng, os.path.join(out, f"case{i}.model.json"), shipped)
    wf = os.path.join(out, f"case{i}.wafer.json")
    w = wafer_file(rng, wf, layers + 2)
    a = ["--wafer", wf, "--model", mf]
    shape = rng.random()
    if shape < 0.1:  # a mixed step (continuous batching)
        entries = [(rng.choice([1, 1, 4, 16]), rng.choice([16, 64, 200, 512])) for _ in range(rng.randint(1, 3))]
        a += ["--step", ",".join(f"{t}@{c}" for t, c in entries)]
        held = sum(c for _, c in entries)
    else:
        context = rng.choice([8, 16, 64, 100, 256, 512, 1024])
        a += ["--context", str(context)]
        held = context
        if rng.random() < 0.3:
            batch = rng.randint(2, 3)
            a += ["--batch", str(batch)]
            held *= batch
        if shape < 0.2:  # a prefill, chunked or not
            a += ["--prefill", str(rng.choice([t for t in (2, 4, 8, 32) if t <= context]))]
            if rng.random() < 0.5:
                a += ["--chunk", str(rng.choice([1, 2, 4]))]
    placement = rng.choice(["layer-bands", "layer-bands", "serpentine-bands", "defect-aware", "square", "whole-wafer"] +
                           (["auto"] if shape >= 0.2 else []))  # (a prefill or a mixed step maps a given placement)
    a += ["--placement", placement]
    if placement in ("square", "whole-wafer") and rng.random() < 0.6:
        a += ["--kernel", "meshgemv", "--allreduce", rng.choice(["chain", "centre", "tree"])]
        if rng.random() < 0.3:
            a += ["--group", str(rng.randint(1, 8))]
    if rng.random() < 0.15:  # a deployment's KV cache (docs/mapping.md 3e)
        a += ["--kv-capacity", str(held * rng.choice([1, 2, 4]) + rng.randint(0, 7))]
    if rng.random() < 0.2:
        a += ["--weight-bits", "8"]
    if rng.random() < 0.15:
        a += ["--weights", "stream"]
    if "meshgemv" not in a and rng.random() < 0.3:  # (meshgemv runs on one wafer)
        a += ["--wafers", str(rng.randint(2, 5))]
    if rng.random() < 0.1:
        a += ["--fidelity", "cycle"]
    if placement == "auto":
        a += ["--search-budget", str(rng.choice([0, 20000, 200000, 2000000]))]
    if rng.random() < 0.15:
        a += ["--trace", "TRACE"]
        if rng.random() < 0.5:
            a += ["--trace-window", f"0:{rng.randint(0, 8)},0:{rng.randint(0, 8)}"]
    if rng.random() < 0.6:
        cm2 = w["logical_width"] * w["logical_height"] * 0.0476731 / 100
        # about 0.2 to 6 defects on the wafer
        a += ["--density", f"{rng.uniform(0.2, 6) / cm2:.3f}", "--seed", str(rng.randint(1, 999))]
        if rng.random() < 0.4:
            a += ["--defect-model", "negbin", "--alpha", str(rng.choice([0.5, 1, 2, 4]))]
    return a


def study_file(rng, out, i, shipped):
    mf, layers = model_file(rng, os.path.join(out, f"study{i}.model.json"), shipped)
    w = wafer_file(rng, os.path.join(out, f"study{i}.wafer.json"), layers + 2)
    cm2 = w["logical_width"] * w["logical_height"] * 0.0476731 / 100
    axes = {
        "seed": {"from": rng.randint(1, 500), "count": rng.randint(1, 3)},
        "density": sorted({round(rng.uniform(0.2, 5) / cm2, 3) for _ in range(rng.randint(1, 2))} | {0}),
        "context": sorted({rng.choice([16, 64, 128, 256, 512]) for _ in range(rng.randint(1, 3))}),
        "batch": [1, 2],
        "fidelity": ["approx", "cycle"],
        "placement": rng.sample(["layer-bands", "serpentine-bands", "defect-aware", "square", "whole-wafer"], 2),
        "hop_latency": [1, 2],
    }
    chosen = rng.sample(sorted(axes), rng.randint(2, 3))
    study = {"schema": 1, "name": f"fuzz{i}", "fixed": {"wafer": f"study{i}.wafer.json", "model": mf},
             "axes": {k: axes[k] for k in chosen}}
    if "context" not in chosen:
        study["fixed"]["context"] = rng.choice([16, 64, 256])
    if "density" not in chosen and ("seed" in chosen or rng.random() < 0.5):  # (a seed needs a density)
        study["fixed"]["density"] = round(rng.uniform(0.2, 5) / cm2, 3)
    path = os.path.join(out, f"study{i}.json")
    with open(path, "w") as f:
        json.dump(study, f)
    return path


def sweep(exe, spec, d, extra):
    r = subprocess.run([exe, "sweep", "--spec", spec, "--out", d, "--quiet"] + extra, capture_output=True, text=True,
                       timeout=1200)
    if r.returncode != 0:
        return r.returncode, r.stderr, None
    with open(os.path.join(d, "points.jsonl")) as f:
        lines = sorted((json.loads(l) for l in f), key=lambda l: l["index"])
    with open(os.path.join(d, "summary.csv")) as f:
        summary = f.read()
    return 0, r.stderr, ([json.dumps({k: v for k, v in l.items() if k != "wall_s"}, sort_keys=True) for l in lines],
                         summary)


def run_studies(exe, out, studies, rng, shipped):
    failures, points, points_ok = [], 0, 0
    for i in range(studies):
        spec = study_file(rng, out, i, shipped)
        got = {}
        for name, extra in THREE_WAYS:
            d = os.path.join(out, f"study{i}.{name.strip('-').replace(' ', '')}")
            shutil.rmtree(d, ignore_errors=True)
            got[name] = sweep(exe, spec, d, extra)
        ref = got["--no-cache"]
        bad = []
        for name, g in got.items():
            if g[0] != ref[0] or (g[0] != 0 and g[1] != ref[1]):
                bad.append(f"{name}: exit {g[0]} ({g[1].strip()[:200]!r}); "
                           f"--no-cache: exit {ref[0]} ({ref[1].strip()[:200]!r})")
            elif g[0] == 0 and g[2][0] != ref[2][0]:
                pairs = [(a, b) for a, b in zip(g[2][0], ref[2][0]) if a != b]
                diff = pairs[0] if pairs else (f"{len(g[2][0])} lines", f"{len(ref[2][0])} lines")
                bad.append(f"{name} gives other lines than --no-cache:\n    {diff[0][:400]}\n    {diff[1][:400]}")
            elif g[0] == 0 and g[2][1] != ref[2][1]:
                bad.append(f"{name} gives another summary.csv than --no-cache")
        if ref[0] not in (0, 2) or (ref[0] == 2 and ref[1].count("\n") != 1):
            bad.append(f"exit {ref[0]}, stderr {ref[1].strip()[:300]!r}")
        ok = sum('"status": "ok"' in l for l in ref[2][0]) if ref[0] == 0 else 0
        if ref[0] == 0:
            points += len(ref[2][0])
            points_ok += ok
        status = "FAIL" if bad else ("refused" if ref[0] != 0 else f"same ({len(ref[2][0])} points, {ok} ok)")
        print(f"study {i}: {status}", flush=True)
        if bad:
            failures.append(f"study {i} ({spec}, run with sweep --spec {spec} --out DIR [--jobs 2 | --no-cache]):\n  " +
                            "\n  ".join(bad))
    return failures, points, points_ok


def run_tables(exe, out, tables, rng, shipped):
    failures, made = [], 0
    for i in range(tables):
        mf, layers = model_file(rng, os.path.join(out, f"table{i}.model.json"), shipped)
        wf = os.path.join(out, f"table{i}.wafer.json")
        wafer_file(rng, wf, layers + 2)
        contexts = sorted({rng.choice([32, 64, 128, 256, 512, 1024]) for _ in range(rng.randint(1, 3))})
        batches = sorted({rng.randint(1, 4) for _ in range(rng.randint(1, 2))})
        prompts = sorted({rng.choice([4, 16, 32, 128]) for _ in range(rng.randint(1, 2))})
        args = ["table", "--wafer", wf, "--model", mf, "--contexts", ",".join(map(str, contexts)), "--batches",
                ",".join(map(str, batches)), "--prefill-tokens", ",".join(map(str, prompts)),
                "--placement", rng.choice(["layer-bands", "layer-bands", "serpentine-bands", "square"])]
        if rng.random() < 0.2:
            args += ["--weight-bits", "8"]
        if rng.random() < 0.3:  # one deployment for every point
            args += ["--kv-capacity", "max"]
        got = {}
        for name, extra in THREE_WAYS:
            d = os.path.join(out, f"table{i}.{name.strip('-').replace(' ', '')}")
            shutil.rmtree(d, ignore_errors=True)
            r = subprocess.run([exe] + args + ["--out", d] + extra, capture_output=True, text=True, timeout=1200)
            # (a refused grid notes each point on stderr as it goes, in the workers' order, then one error line)
            last = r.stderr.strip().split("\n")[-1] if r.returncode else ""
            got[name] = (r.returncode, last, table_files(d) if r.returncode == 0 else None)
        ref = got["--no-cache"]
        bad = []
        for name, g in got.items():
            if g[:2] != ref[:2]:
                bad.append(f"{name}: exit {g[0]} ({g[1].strip()[:200]!r}); "
                           f"--no-cache: exit {ref[0]} ({ref[1].strip()[:200]!r})")
            elif g[0] == 0 and g[2] != ref[2]:
                files = sorted(k for k in set(g[2]) | set(ref[2]) if g[2].get(k) != ref[2].get(k))
                bad.append(f"{name} gives other files than --no-cache: {files[:5]}")
        if ref[0] not in (0, 2) or (ref[0] == 2 and not ref[1].startswith("wafer-emu table: error: ")):
            bad.append(f"exit {ref[0]}, stderr {ref[1].strip()[:300]!r}")
        made += ref[0] == 0
        status = "FAIL" if bad else ("refused" if ref[0] != 0 else "same")
        print(f"table {i}: {status}", flush=True)
        if bad:
            failures.append(f"table {i} (wafer-emu {' '.join(args)} --out DIR [--jobs 2 | --no-cache]):\n  " +
                            "\n  ".join(bad))
    return failures, made


def run(exe, args, json_out):
    args = [json_out[:-5] + ".trace.json" if x == "TRACE" else x for x in args]
    try:
        r = subprocess.run([exe, "decode"] + args + ["--json", json_out], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "timed out after 600 s", None
    result = None
    if r.returncode == 0:
        with open(json_out) as f:
            result = json.load(f)
    return r.returncode, r.stderr, result


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    exe, out = sys.argv[1], sys.argv[2]
    cases = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    studies = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    tables = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    shipped = os.path.join(HERE, "..", "..", "configs", "models", "test")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed)
    failures, refused, ran, some_reuse = [], 0, 0, 0
    for i in range(cases):
        args = case_args(rng, out, i, shipped)
        fast = args + ["--threads", str(rng.randint(1, 2))]
        slow = args + ["--no-reuse", "--no-cache", "--threads", "1"]
        ca, ea, ja = run(exe, fast, os.path.join(out, f"case{i}.fast.json"))
        cb, eb, jb = run(exe, slow, os.path.join(out, f"case{i}.slow.json"))
        bad = []
        for name, code, err in (("fast", ca, ea), ("slow", cb, eb)):
            if code not in (0, 2) or (code == 2 and err.count("\n") != 1) or (code == 0 and err.strip()):
                bad.append(f"{name} way: exit {code}, stderr {err.strip()[:300]!r}")
        if not bad and ca != cb:
            bad.append(f"exit {ca} the fast way, {cb} the slow way: {ea.strip()[:200]!r} / {eb.strip()[:200]!r}")
        if not bad and ca == 2:
            refused += 1
            if ea != eb:
                bad.append(f"refused with other lines: {ea.strip()!r} / {eb.strip()!r}")
        if not bad and ca == 0:
            ran += 1
            wa, wb = ja.pop("wall_time"), jb.pop("wall_time")
            bad += differences(ja, jb, "fast", "slow")
            if wb["tasks_executed"]["value"] != wb["tasks_represented"]["value"]:
                bad.append(f"--no-reuse executed {wb['tasks_executed']['value']} of "
                           f"{wb['tasks_represented']['value']} tasks")
            if wa["tasks_represented"]["value"] != jb["fabric"]["tasks_run"]["value"]:
                bad.append("the fast way represents another number of tasks than the step ran")
            if "TRACE" in args:
                with open(os.path.join(out, f"case{i}.fast.trace.json"), "rb") as f, \
                     open(os.path.join(out, f"case{i}.slow.trace.json"), "rb") as g:
                    if f.read() != g.read():
                        bad.append("the Chrome traces differ")
            if wa["tasks_executed"]["value"] < wa["tasks_represented"]["value"]:
                some_reuse += 1
        status = "FAIL" if bad else ("refused" if ca == 2 else "same")
        print(f"case {i}: {status}", flush=True)
        if bad:
            cmd = lambda a: " ".join(["wafer-emu", "decode"] + ["out.trace.json" if x == "TRACE" else x for x in a])
            failures.append(f"case {i}:\n  {cmd(fast)}\n  {cmd(slow)}\n  " + "\n  ".join(bad))
    print(f"{cases} cases (seed {seed}): {ran} ran both ways, {some_reuse} of them copying work the fast way; "
          f"{refused} refused alike both ways; {len(failures)} failed")
    if studies:
        study_failures, points, points_ok = run_studies(exe, out, studies, rng, shipped)
        print(f"{studies} studies: {points} points swept three ways ({points_ok} of them emulated, the others failed "
              f"alike); {len(study_failures)} failed")
        failures += study_failures
    if tables:
        table_failures, made = run_tables(exe, out, tables, rng, shipped)
        print(f"{tables} tables: {made} made three ways, the others refused alike; {len(table_failures)} failed")
        failures += table_failures
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
