#!/usr/bin/env python3
"""wafer-emu table on the tiny wafer, every format parsed back and checked against the step it came from.

table_check.py WAFER_EMU OUTDIR

- table.csv (tidy): a row's time equals the critical-path time of that operator in `decode --json` of the
  same phase, tokens, context and batch (decode: --context C --batch B; prefill: --prefill T --context C);
- the LLMServingSim bundle: the layer names exactly as that simulator looks them up (a name it does not
  know is timed at zero there), per-layer times in us from the same steps; moe.csv for an MoE model;
- Vidur's mlp.csv and attention.csv: its columns in its order, times in ms from the same steps;
- a prefill of one token is the decode step of the same sequence (latency and breakdown identical);
- prompts run in chunks, some shared between two prompts ending at the same context: each prompt's times
  and chunking equal `decode --prefill` of it alone;
- a pipeline of two wafers and streamed weights: each row decode's with the same --wafers or --weights.
"""
import csv, json, math, os, shutil, subprocess, sys

import results

exe, out = sys.argv[1], results.fresh_dir(sys.argv[2])
check = results.Checks()


def close(a, b, what, rel=1e-4):
    check(math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-9), f"{what}: {a} != {b}")


def run(args):
    r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print("FAIL:", " ".join(args), r.stderr)
        sys.exit(1)
    return r


def decode_json(extra, name):
    path = os.path.join(out, name + ".json")
    run(["decode", "--wafer", "tiny", "--model", MODEL] + extra + ["--json", path])
    return json.load(open(path))


def per_op(j):
    return {r["operator"]: r["total [cycles]"] for r in results.rows(j["breakdown"]["per_op"])}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


MODEL = "tiny-llama"
tables = os.path.join(out, "tables")
r = run(["table", "--wafer", "tiny", "--model", MODEL, "--contexts", "32,64", "--batches", "1,2",
         "--prefill-tokens", "4,16", "--out", tables])
check("table: [" in r.stderr and "/10]" in r.stderr, "progress on stderr: " + r.stderr[:200])
check(not any(n.startswith(".tables.tmp") for n in os.listdir(out)), "the temporary folder is gone")
L = 2  # tiny-llama's layers
us_per_cycle = None

tidy = rows(os.path.join(tables, "table.csv"))
check(list(tidy[0].keys()) == ["phase", "operator", "tokens", "context", "batch", "chunk_tokens", "chunks", "time_cycles",
                               "time_us", "layers", "per_layer_time_us"], f"table.csv columns {list(tidy[0].keys())}")
# decode 2 contexts x 2 batches; prefill 4 at 4, 32, 64 and 16 at 16, 32, 64
points = {(r["phase"], int(r["tokens"]), int(r["context"]), int(r["batch"])) for r in tidy}
check(len(points) == 10, f"10 points, got {sorted(points)}")


def tidy_of(phase, tokens, context, batch):
    return {r["operator"]: r for r in tidy if (r["phase"], int(r["tokens"]), int(r["context"]), int(r["batch"])) ==
            (phase, tokens, context, batch)}


steps = {
    ("decode", 2, 64, 2): decode_json(["--context", "64", "--batch", "2"], "d64b2"),
    ("decode", 1, 32, 1): decode_json(["--context", "32"], "d32b1"),
    ("decode", 2, 32, 2): decode_json(["--context", "32", "--batch", "2"], "d32b2"),
    ("prefill", 16, 64, 1): decode_json(["--prefill", "16", "--context", "64"], "p16c64"),
    ("prefill", 4, 4, 1): decode_json(["--prefill", "4"], "p4"),
    ("prefill", 16, 16, 1): decode_json(["--prefill", "16"], "p16"),
}
for key, j in steps.items():
    t = tidy_of(*key)
    us_per_cycle = j["latency_us"]["value"] / j["latency_cycles"]["value"]
    check(int(t["step"]["time_cycles"]) == j["latency_cycles"]["value"], f"{key} step {t['step']['time_cycles']}")
    for op, cyc in per_op(j).items():
        check(op in t and int(t[op]["time_cycles"]) == cyc, f"{key} {op}: table {t.get(op, {}).get('time_cycles')} decode {cyc}")
        close(t[op]["time_us"], cyc * us_per_cycle, f"{key} {op} us")
        layers = 2 * L if op == "layernorm" else L if op in ("qkv_proj", "rotary_emb", "attention", "o_proj", "gate_up_proj",
                                                                "act_fn", "down_proj") else 1
        close(t[op]["per_layer_time_us"], cyc * us_per_cycle / layers, f"{key} {op} per layer")


def layer_us(key, op):
    c = per_op(steps[key]).get(op, 0) * us_per_cycle
    return c / (2 * L) if op == "layernorm" else c / L if op in ("qkv_proj", "rotary_emb", "attention", "o_proj",
                                                                 "gate_up_proj", "act_fn", "down_proj") else c


# ---- LLMServingSim ----
bundle = os.path.join(tables, "llmservingsim", "wafer-emu-tiny", "test", MODEL, "default")
meta = open(os.path.join(bundle, "meta.yaml")).read()
for k in ["profiler_version:", "vllm_version:", "gpu:", 'hardware: "wafer-emu-tiny"', "variant: default", 'model: "test/tiny-llama"',
          "tp_degrees: [1]", "profiled_at:", "engine_effective:", "max_num_batched_tokens: 16", "max_num_seqs: 2"]:
    check(k in meta, f"meta.yaml lacks {k}")
check(sorted(os.listdir(os.path.join(bundle, "tp1"))) == ["attention.csv", "dense.csv", "per_sequence.csv"],
      f"tp1 holds {os.listdir(os.path.join(bundle, 'tp1'))}")
dense = rows(os.path.join(bundle, "tp1", "dense.csv"))
check(list(dense[0].keys()) == ["layer", "tokens", "time_us"], "dense.csv columns")
# The names LLMServingSim looks up for a Llama model, exactly.
check({r["layer"] for r in dense} == {"embedding", "layernorm", "qkv_proj", "rotary_emb", "o_proj", "gate_up_proj", "act_fn",
                                      "down_proj", "final_layernorm"}, f"dense layers {sorted({r['layer'] for r in dense})}")
check(sorted({int(r["tokens"]) for r in dense}) == [1, 2, 4, 16], "dense tokens: decode batches 1, 2, prompts 4, 16")
source = {1: ("decode", 1, 32, 1), 2: ("decode", 2, 32, 2), 4: ("prefill", 4, 4, 1), 16: ("prefill", 16, 16, 1)}
for r in dense:
    close(r["time_us"], layer_us(source[int(r["tokens"])], r["layer"]), f"dense {r['layer']} {r['tokens']}")
ps = rows(os.path.join(bundle, "tp1", "per_sequence.csv"))
check(list(ps[0].keys()) == ["layer", "sequences", "time_us"], "per_sequence.csv columns")
check({r["layer"] for r in ps} == {"lm_head", "sampler"}, "per_sequence layers")
for r in ps:
    close(r["time_us"], layer_us(source[int(r["sequences"])], r["layer"]), f"per_sequence {r['layer']} {r['sequences']}")
att = rows(os.path.join(bundle, "tp1", "attention.csv"))
check(list(att[0].keys()) == ["prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us"], "attention.csv columns")
check(len(att) == 10, "attention.csv: one row per point")
# An attention row is what a simulator needs beside the rows of its tokens (dense.csv, at the smallest context) and
# sequences (per_sequence.csv; a prompt is one) to rebuild the step: the step less those rows, per layer. At a point
# whose own rows those are (decode at context 32, a prompt from scratch) it is attention's own time; at the others
# it also holds what the rest of the step changed with the context.
def rebuilt_steps(tp1):
    """Each attention row's point: (its time, the step rebuilt from the bundle's rows with it) in us."""
    dense_at, ps_at = {}, {}
    for r in rows(os.path.join(tp1, "dense.csv")):
        dense_at.setdefault(int(r["tokens"]), {})[r["layer"]] = float(r["time_us"])
    for r in rows(os.path.join(tp1, "per_sequence.csv")):
        ps_at.setdefault(int(r["sequences"]), {})[r["layer"]] = float(r["time_us"])
    per_layer = lambda op: 2 * L if op == "layernorm" else 1 if op in ("embedding", "final_layernorm") else L
    out = {}
    for r in rows(os.path.join(tp1, "attention.csv")):
        key = ("decode", int(r["n_decode"]), int(r["kv_decode"]), int(r["n_decode"])) if r["prefill_chunk"] == "0" \
            else ("prefill", int(r["prefill_chunk"]), int(r["prefill_chunk"]) + int(r["kv_prefill"]), 1)
        tokens, seqs, t = key[1], key[1] if key[0] == "decode" else 1, float(r["time_us"])
        out[key] = (t, sum(v * per_layer(op) for op, v in dense_at[tokens].items()) + sum(ps_at[seqs].values()) + L * t)
    return out


attention_at = {}
for key, (t, rebuilt) in rebuilt_steps(os.path.join(bundle, "tp1")).items():
    attention_at[key] = t
    if key[2] == 32 if key[0] == "decode" else key[1] == key[2]:  # its own rows
        close(t, tidy_of(*key)["attention"]["per_layer_time_us"], f"attention.csv vs table {key}")
        if key in steps:
            close(t, layer_us(key, "attention"), f"attention.csv {key}")
    close(rebuilt, tidy_of(*key)["step"]["time_us"], f"attention.csv {key}: the step rebuilt from the rows", rel=1e-9)
# On tiny the rest of the step does not change with the context: every row above is attention's own time. On
# small it does (the mapper gives the head fewer tiles as the KV cache grows): decode of one sequence at 2048 is
# rebuilt from the rows at 128 and an attention row other than attention's own time there, and a prompt of 16 from
# scratch from the decode batch of 16's rows (16 tokens too). (Until 2026-12-07 every attention row was attention's
# own time: a streamed step of small-llama at batch 16 and context 2048 was rebuilt 4x too short.)
small = os.path.join(out, "small_tables")
run(["table", "--wafer", "small", "--model", "small-llama", "--contexts", "128,2048", "--batches", "1,16",
     "--prefill-tokens", "16", "--out", small])
s_tidy = rows(os.path.join(small, "table.csv"))
s_of = lambda key, op: float(next(r["time_us"] for r in s_tidy if (r["phase"], int(r["tokens"]), int(r["context"]),
                                                                   int(r["batch"]), r["operator"]) == key + (op,)))
s_att = rebuilt_steps(os.path.join(small, "llmservingsim", "wafer-emu-small", "test", "small-llama", "default", "tp1"))
for key, (t, rebuilt) in s_att.items():
    close(rebuilt, s_of(key, "step"), f"small: attention.csv {key}: the step rebuilt from the rows", rel=1e-9)
check(len(s_att) == 6, f"small: 6 points map (decode of 16 at 2048 does not): {sorted(s_att)}")
close(s_att[("decode", 1, 128, 1)][0], s_of(("decode", 1, 128, 1), "attention") / L, "small: decode at 128 is its own rows'")
for key in [("decode", 1, 2048, 1), ("prefill", 16, 16, 1)]:
    check(not math.isclose(s_att[key][0], s_of(key, "attention") / L, rel_tol=1e-6),
          f"small: {key}'s attention row holds more than attention's own time")

# One deployment for every point (--kv-capacity max: the KV cache of the grid's largest step, batch 4 x context 2048,
# reserved at every point): every point lies on the same placement, so every decode operator but attention takes the
# same time at every context for a batch, and the exporters' attention rows are attention's own time (the rest of the
# step no longer changes with the context); each step is decode's with --kv-capacity 8192, operator for operator.
dep = os.path.join(out, "deployed_tables")
run(["table", "--wafer", "small", "--model", "small-llama", "--contexts", "128,2048", "--batches", "1,4",
     "--prefill-tokens", "16", "--kv-capacity", "max", "--out", dep, "--json", dep + ".json"])
check(json.load(open(dep + ".json"))["kv_capacity"]["value"] == 8192, "deployed: the summary's kv_capacity")
d_tidy = rows(os.path.join(dep, "table.csv"))
d_of = lambda key, op: next(r for r in d_tidy if (r["phase"], int(r["tokens"]), int(r["context"]), int(r["batch"]),
                                                   r["operator"]) == key + (op,))
for b in (1, 4):
    at = {c: {r["operator"]: r["time_cycles"] for r in d_tidy if r["phase"] == "decode" and int(r["batch"]) == b
              and int(r["context"]) == c and r["operator"] not in ("attention", "step")} for c in (128, 2048)}
    check(at[128] == at[2048] and len(at[128]) > 5, f"deployed, batch {b}: operators other than attention differ "
          f"with the context: {at}")
    path = os.path.join(out, f"deployed_{b}.json")
    run(["decode", "--wafer", "small", "--model", "small-llama", "--context", "2048", "--batch", str(b),
         "--kv-capacity", "8192", "--json", path])
    j = json.load(open(path))
    check(j["config"]["kv_capacity"]["value"] == 8192, "deployed: decode's config.kv_capacity")
    key = ("decode", b, 2048, b)
    check(int(d_of(key, "step")["time_cycles"]) == j["latency_cycles"]["value"], f"deployed {key}: the step")
    for op, cyc in per_op(j).items():
        check(int(d_of(key, op)["time_cycles"]) == cyc, f"deployed {key} {op}")
d_att = rebuilt_steps(os.path.join(dep, "llmservingsim", "wafer-emu-small", "test", "small-llama", "default", "tp1"))
for key, (t, rebuilt) in d_att.items():
    close(rebuilt, float(d_of(key, "step")["time_us"]), f"deployed: attention.csv {key}: the step rebuilt", rel=1e-9)
    if key[0] == "decode":
        close(t, float(d_of(key, "attention")["time_us"]) / L, f"deployed: {key}'s attention row is attention's own")
check(len([k for k in d_att if k[0] == "decode"]) == 4, f"deployed: every decode point maps: {sorted(d_att)}")
d_meta = open(os.path.join(dep, "llmservingsim", "wafer-emu-small", "test", "small-llama", "default", "meta.yaml")).read()
check(d_meta.endswith("# wafer-emu: every point mapped with a KV cache reserved for 8192 positions (--kv-capacity): one "
                      "placement\n"), f"deployed: meta.yaml's comment: {d_meta!r}")
check("# wafer-emu" not in open(os.path.join(small, "llmservingsim", "wafer-emu-small", "test", "small-llama", "default",
                                             "meta.yaml")).read(), "a table without --kv-capacity says it has one")

# meta.yaml's names are YAML strings, quoted: a wafer named 'tiny: v2 #a' (a plain ': ' made the file no YAML; a
# plain ' #' would start a comment and cut the name short).
def table_on(wafer, name):
    """A one-point table (decode and a 16-token prompt at context 64) on a wafer file of `wafer`'s settings."""
    path = os.path.join(out, name + ".json")
    with open(path, "w") as f:
        json.dump(wafer, f)
    d = os.path.join(out, name + "_tables")
    run(["table", "--wafer", path, "--model", MODEL, "--contexts", "64", "--batches", "1", "--prefill-tokens", "16",
         "--out", d])
    return d


odd = table_on({"preset": "tiny", "name": 'tiny: v2 #a "b"'}, "odd")
odd_meta = open(os.path.join(odd, "llmservingsim", 'wafer-emu-tiny: v2 #a "b"', "test", MODEL, "default",
                             "meta.yaml")).read()
for k in ['gpu: "wafer-emu-tiny: v2 #a \\"b\\""\n', 'hardware: "wafer-emu-tiny: v2 #a \\"b\\""\n']:
    check(k in odd_meta, f"odd wafer name: meta.yaml lacks {k!r}: {odd_meta!r}")

# Times in the shortest digits that read back as the same double, never in exponent form: on a 1 MHz clock a step's
# microseconds are its cycles (six significant digits wrote 1,132,327 as 1.13233e+06), and Vidur's milliseconds of tiny's
# operators are small (2.3e-06 would be exponent form).
slow = table_on({"preset": "tiny", "name": "tiny-slow", "clock_ghz": 0.001}, "slow")
for r in rows(os.path.join(slow, "table.csv")):
    check(float(r["time_us"]) == float(r["time_cycles"]), f"slow clock: {r['operator']} {r['time_us']} us for "
          f"{r['time_cycles']} cycles")
for dirpath, _, files in os.walk(slow):
    for name in files:
        if name.endswith(".csv"):
            for r in rows(os.path.join(dirpath, name)):
                for k, v in r.items():
                    check("e+" not in v and "e-" not in v, f"{name} {k}: {v} in exponent form")
fast = table_on({"preset": "tiny", "name": "tiny-fast", "clock_ghz": 100}, "fast")
fast_mlp = rows(os.path.join(fast, "vidur", "mlp.csv"))
check(any(0 < float(r["time_stats.attn_rope.mean"]) < 1e-4 for r in fast_mlp), "vidur: a time below 1e-4 ms to print")
for r in fast_mlp:
    for k, v in r.items():
        check("e+" not in v and "e-" not in v, f"vidur mlp.csv {k}: {v} in exponent form")

# ---- Vidur ----
ops = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm", "mlp_up_proj",
       "mlp_act", "mlp_down_proj", "add"]
stat = lambda op: [f"time_stats.{op}.{s}" for s in ("min", "max", "mean", "median", "std")]
mlp = rows(os.path.join(tables, "vidur", "mlp.csv"))
cols = sum((stat(o) for o in ops), []) + ["n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp",
                                          "num_tokens", "num_tensor_parallel_workers"]
check(list(mlp[0].keys()) == cols, f"vidur mlp.csv columns {list(mlp[0].keys())}")
ours = {"emb": "embedding", "input_layernorm": "layernorm", "attn_pre_proj": "qkv_proj", "attn_rope": "rotary_emb",
        "attn_post_proj": "o_proj", "post_attention_layernorm": "layernorm", "mlp_up_proj": "gate_up_proj",
        "mlp_act": "act_fn", "mlp_down_proj": "down_proj"}
for r in mlp:
    key = source[int(r["num_tokens"])]
    check((r["n_head"], r["n_kv_head"], r["n_embd"], r["n_expanded_embd"], r["vocab_size"]) == ("4", "2", "64", "128", "256"),
          "vidur mlp.csv model columns")
    for o, m in ours.items():
        close(r[f"time_stats.{o}.mean"], layer_us(key, m) / 1e3, f"vidur mlp {o} {key}")
        check(r[f"time_stats.{o}.min"] == r[f"time_stats.{o}.median"] == r[f"time_stats.{o}.max"], "deterministic stats")
va = rows(os.path.join(tables, "vidur", "attention.csv"))
cols = stat("attn_prefill") + stat("attn_decode") + ["n_embd", "n_q_head", "n_kv_head", "block_size",
                                                      "num_tensor_parallel_workers", "max_model_len", "batch_size",
                                                      "prefill_chunk_size", "kv_cache_size", "is_prefill", "attention_backend"]
check(list(va[0].keys()) == cols, f"vidur attention.csv columns {list(va[0].keys())}")
for r in va:
    pre = r["is_prefill"] == "True"
    key = ("prefill", int(r["prefill_chunk_size"]), int(r["prefill_chunk_size"]) + int(r["kv_cache_size"]), 1) if pre else \
        ("decode", int(r["batch_size"]), int(r["kv_cache_size"]), int(r["batch_size"]))
    check(pre or r["prefill_chunk_size"] == "0", "decode rows have prefill_chunk_size 0")
    close(r["time_stats.attn_prefill.mean" if pre else "time_stats.attn_decode.mean"], attention_at[key] / 1e3,
          f"vidur attention {key}: LLMServingSim's row")

# ---- a prefill of one token is the decode step ----
a, b = decode_json(["--context", "64"], "dec64"), decode_json(["--prefill", "1", "--context", "64"], "pre1c64")
check(a["latency_cycles"] == b["latency_cycles"], f"prefill 1 {b['latency_cycles']} != decode {a['latency_cycles']}")
for k in ["per_op", "per_layer"]:
    check(a["breakdown"][k] == b["breakdown"][k], f"prefill 1: breakdown {k} differs")
for k, v in a["breakdown"].items():
    if k not in ("per_op", "per_layer", "work_per_op"):
        check(b["breakdown"][k] == v, f"prefill 1: {k} differs")

# ---- chunked prompts: chunks shared between prompts ending at the same context give the times of the
# prompts emulated alone (decode --prefill), chunking included ----
# (a prompt's chunks take its tokens c at a time from its first, c the largest that maps at its context: two
# prompts ending at 256 whose lengths differ by c share the shorter one's chunks)
c256 = decode_json(["--prefill", "256", "--context", "256"], "chunk_at_256")["prefill"]["chunk_tokens"]["value"]
check(1 < c256 < 128, f"256 tokens at 256 run in chunks of {c256}: the case below needs chunks")
ch = os.path.join(out, "chunked")
r = run(["table", "--wafer", "tiny", "--model", MODEL, "--contexts", "256", "--batches", "1", "--prefill-tokens",
         f"128,{128 + c256}", "--out", ch, "--json", os.path.join(out, "chunked.json")])
summary = json.load(open(os.path.join(out, "chunked.json")))
check(summary["chunks_reused"]["value"] > 0, f"no chunk reused: {summary}")
ctidy = rows(os.path.join(ch, "table.csv"))
for t, c in [(128, 256), (128 + c256, 256), (128, 128)]:
    j = decode_json(["--prefill", str(t), "--context", str(c)], f"chunked_{t}_{c}")
    row = [x for x in ctidy if (x["phase"], x["operator"], x["tokens"], x["context"]) == ("prefill", "step", str(t), str(c))]
    check(len(row) == 1 and int(row[0]["time_cycles"]) == j["latency_cycles"]["value"],
          f"chunked prefill {t} at {c}: table {row} decode {j['latency_cycles']}")
    check(len(row) == 1 and int(row[0]["chunks"]) == j["prefill"]["chunks"]["value"] and
          int(row[0]["chunk_tokens"]) == j["prefill"]["chunk_tokens"]["value"], f"chunking of {t} at {c}")
    for op, cyc in per_op(j).items():
        x = [y for y in ctidy if (y["phase"], y["operator"], y["tokens"], y["context"]) == ("prefill", op, str(t), str(c))]
        check(len(x) == 1 and int(x[0]["time_cycles"]) == cyc, f"chunked prefill {t} at {c} {op}")
check(any(int(x["chunks"]) > 1 for x in ctidy), "some prompt is chunked")

# ---- an MoE model: moe.csv, and dense.csv without the expert MLP ----
moe = os.path.join(out, "moe")
run(["table", "--wafer", "tiny", "--model", "tiny-moe", "--contexts", "32", "--batches", "1", "--prefill-tokens", "4",
     "--out", moe])
mb = os.path.join(moe, "llmservingsim", "wafer-emu-tiny", "test", "tiny-moe", "default", "tp1")
check(sorted(os.listdir(mb)) == ["attention.csv", "dense.csv", "moe.csv", "per_sequence.csv"], f"MoE bundle {os.listdir(mb)}")
mrows = rows(os.path.join(mb, "moe.csv"))
check(list(mrows[0].keys()) == ["tokens", "activated_experts", "time_us"] and {r["activated_experts"] for r in mrows} == {"2"},
      "moe.csv columns and top-k")
check("gate_up_proj" not in {r["layer"] for r in rows(os.path.join(mb, "dense.csv"))}, "MoE dense.csv has no expert MLP")
# (Vidur's mlp.csv has no router or expert columns: not written for an MoE model, where its layers would lack the router)
check(not os.path.exists(os.path.join(moe, "vidur")), "no vidur/ for an MoE model")

# ---- the bundle's <org>/<model> is the model as HuggingFace names it, from the config's path ----
hf = os.path.join(out, "acme", "Tiny-Model")
os.makedirs(hf, exist_ok=True)
shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configs", "models", "test",
                         "tiny-llama.json"), os.path.join(hf, "config.json"))
named = os.path.join(out, "named")
run(["table", "--wafer", "tiny", "--model", os.path.join(hf, "config.json"), "--contexts", "32", "--batches", "1",
     "--prefill-tokens", "4", "--out", named])
nb = os.path.join(named, "llmservingsim", "wafer-emu-tiny", "acme", "Tiny-Model", "default")
check(os.path.isdir(os.path.join(nb, "tp1")), f"a downloaded model's folder ORG/NAME/config.json: no bundle at {nb}")
check('model: "acme/Tiny-Model"\n' in open(os.path.join(nb, "meta.yaml")).read() if os.path.isdir(nb) else False,
      "meta.yaml's model is acme/Tiny-Model")

# ... from where the file lies, not as typed: config.json from inside its folder, ../config.json from below it
# (they gave local/ and local/.. as the model).
os.makedirs(os.path.join(hf, "sub"), exist_ok=True)
for where, arg, name in [(hf, "config.json", "named_here"), (os.path.join(hf, "sub"), "../config.json", "named_below")]:
    r = subprocess.run([exe, "table", "--wafer", "tiny", "--model", arg, "--contexts", "32", "--batches", "1",
                        "--prefill-tokens", "4", "--out", os.path.join(out, name)], capture_output=True, text=True,
                       timeout=300, cwd=where)
    meta = os.path.join(out, name, "llmservingsim", "wafer-emu-tiny", "acme", "Tiny-Model", "default", "meta.yaml")
    check(r.returncode == 0 and os.path.isfile(meta), f"--model {arg} run in {where}: no bundle at {meta}: {r.stderr}")

# ... and through /dev/stdin redirected from the file (it gave dev/stdin).
with open(os.path.join(hf, "config.json")) as f:
    r = subprocess.run([exe, "table", "--wafer", "tiny", "--model", "/dev/stdin", "--contexts", "32", "--batches", "1",
                        "--prefill-tokens", "4", "--out", os.path.join(out, "named_stdin")], stdin=f, capture_output=True,
                       text=True, timeout=300)
meta = os.path.join(out, "named_stdin", "llmservingsim", "wafer-emu-tiny", "acme", "Tiny-Model", "default", "meta.yaml")
check(r.returncode == 0 and os.path.isfile(meta), f"--model /dev/stdin from a file: no bundle at {meta}: {r.stderr}")

# --out a link to an empty folder: the files land in the folder, the link is kept (it was replaced by a folder).
os.makedirs(os.path.join(out, "empty_target"))
os.symlink("empty_target", os.path.join(out, "via_link"))
run(["table", "--wafer", "tiny", "--model", "tiny-llama", "--contexts", "32", "--batches", "1", "--prefill-tokens", "4",
     "--out", os.path.join(out, "via_link")])
check(os.path.islink(os.path.join(out, "via_link")), "--out through a link: the link is kept")
check(os.path.isfile(os.path.join(out, "empty_target", "table.csv")), "--out through a link: the files are in its folder")

# A pipeline of wafers and streamed weights (--wafers, --weights, as decode takes them): each row is decode's with the
# same options, the pipeline's transfers among the tidy rows (inter_wafer, egress) and left out of the exporters'
# layer times; the bundle's hardware names the pipeline ("-x2"), its variant the streaming.
STREAMED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "stream_mid_llama.json")
for name, model, extra, hardware, org, variant in (
        ("pipeline", MODEL, ["--wafers", "2"], "wafer-emu-tiny-x2", "test", "default"),
        ("streamed", STREAMED, ["--weights", "stream"], "wafer-emu-tiny", "data", "stream")):
    d = os.path.join(out, name)
    run(["table", "--wafer", "tiny", "--model", model, "--contexts", "16", "--batches", "1,2", "--prefill-tokens", "4",
         "--out", d] + extra)
    tidy2 = rows(os.path.join(d, "table.csv"))
    for key, args in ((("decode", 1, 16, 1), ["--context", "16"]), (("decode", 2, 16, 2), ["--context", "16", "--batch", "2"]),
                      (("prefill", 4, 16, 1), ["--prefill", "4", "--context", "16"])):
        path = os.path.join(out, f"{name}_{key[0]}_{key[1]}.json")
        run(["decode", "--wafer", "tiny", "--model", model, "--json", path] + args + extra)
        j = json.load(open(path))
        t = {r["operator"]: r for r in tidy2 if (r["phase"], int(r["tokens"]), int(r["context"]), int(r["batch"])) == key}
        check(int(t["step"]["time_cycles"]) == j["latency_cycles"]["value"], f"{name} {key} step {t['step']['time_cycles']}")
        for op, cyc in per_op(j).items():
            check(op in t and int(t[op]["time_cycles"]) == cyc, f"{name} {key} {op}: table {t.get(op, {}).get('time_cycles')} decode {cyc}")
        if name == "pipeline":
            check(per_op(j).get("inter_wafer", 0) > 0 and "inter_wafer" in t, f"{name} {key}: no inter_wafer time")
        else:
            check(j["breakdown"]["weight_streaming"]["value"] > 0, f"{name} {key}: nothing streamed")
    b = os.path.join(d, "llmservingsim", hardware, org, os.path.splitext(os.path.basename(model))[0], variant)
    check(os.path.isfile(os.path.join(b, "tp1", "dense.csv")), f"{name}: no bundle at {b}")
    if os.path.isdir(b):
        check(f'hardware: "{hardware}"\n' in open(os.path.join(b, "meta.yaml")).read() and
              f"variant: {variant}\n" in open(os.path.join(b, "meta.yaml")).read(), f"{name}: meta.yaml's hardware or variant")
        check(not {"inter_wafer", "egress"} & {r["layer"] for r in rows(os.path.join(b, "tp1", "dense.csv"))},
              f"{name}: the pipeline's transfers among the layers LLMServingSim looks up")

check.done("table formats agree with the steps they came from")
