#!/usr/bin/env python3
"""wafer-emu decode --step (a mixed step, docs/mapping.md section 3d) on the tiny wafer, against the steps it
generalises and its parts alone.

mixed_check.py WAFER_EMU OUTDIR

- a mixed step of B sequences 1@C is `decode --batch B --context C`: latency, breakdown (causes, per layer,
  per operator, work), SRAM and fabric figures identical;
- a mixed step of one sequence T@C is `decode --prefill T --context C` (one chunk): the same, also where
  C - T is no multiple of T;
- a prompt in chunks of c takes its tokens c at a time from its first (ceil(T / c) chunks, the last the
  remainder), each chunk the mixed step of its tokens at the context of its last, their latencies added; a
  chunk refused at its own context chunks the prompt again; --chunk N is a cap;
- adding a decode sequence to a step never makes it faster, and a mixed step costs at least the slower of
  its parts alone (the decode sequences as one step, the prefill chunk as another), and less than both
  one after another (the GEMV weights are read once for every token);
- the report (text, --json and the `report` page) says it is a mixed step and lists every sequence with its
  tokens and context.
"""
import json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import Checks, fresh_dir, rows  # noqa: E402

exe, out = sys.argv[1], fresh_dir(sys.argv[2])
check = Checks()


def decode_json(extra, name):
    path = os.path.join(out, name + ".json")
    r = subprocess.run([exe, "decode", "--wafer", "tiny", "--model", "tiny-llama"] + extra + ["--json", path],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print("FAIL:", extra, r.stderr)
        sys.exit(1)
    j = json.load(open(path))
    j["_stdout"] = r.stdout
    return j


def lat(j):
    return j["latency_cycles"]["value"]


def same_step(a, b, what):
    """Latency and every figure of the step (not the wall time nor how the step was computed)."""
    check(lat(a) == lat(b), f"{what}: latency {lat(a)} != {lat(b)}")
    check(a["latency_us"] == b["latency_us"], f"{what}: latency_us differs")
    for sec in ["breakdown", "sram", "fabric", "io"]:
        for k, v in a[sec].items():
            check(b[sec].get(k) == v, f"{what}: {sec}.{k} differs: {v} != {b[sec].get(k)}")


# (a) B sequences 1@C are the decode step of batch B at context C.
dec = decode_json(["--batch", "3", "--context", "64"], "batch3")
mix = decode_json(["--step", "1@64,1@64,1@64"], "step_1x3")
same_step(dec, mix, "1@64 x 3 vs --batch 3")
check(mix["config"]["batch"]["value"] == 3 and mix["config"]["context"]["value"] == 64, "config batch/context of the step")

# (b) one sequence T@C is the prefill step of T tokens at C.
pre = decode_json(["--prefill", "16", "--context", "64"], "prefill16")
check(pre["prefill"]["chunks"]["value"] == 1, "the 16-token prefill runs in one chunk")
one = decode_json(["--step", "16@64"], "step_16")
same_step(pre, one, "16@64 vs --prefill 16 --context 64")
# the same where the C - T positions cached are no multiple of T: still one chunk (not split at a multiple of T)
pre3 = decode_json(["--prefill", "3", "--context", "64"], "prefill3")
check(pre3["prefill"]["chunks"]["value"] == 1, f"the 3-token prefill at 64 runs in one chunk: {pre3['prefill']}")
same_step(pre3, decode_json(["--step", "3@64"], "step_3"), "3@64 vs --prefill 3 --context 64")

# (b3) a chunk that does not map at its own context, though c tokens map at the last one's (small-llama on small
# at 700: 34 tokens map there, 34 at 674 do not, the layers' bands cut otherwise), chunks the prompt again in
# the largest count that maps there: 60 tokens are 33@673 then 27@700 (refused before); and --chunk N is a cap:
# 50 where 48 fit is 48.
def small(extra, name):
    path = os.path.join(out, name + ".json")
    r = subprocess.run([exe, "decode", "--wafer", "small", "--model", "small-llama"] + extra + ["--json", path],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"{extra}: exit {r.returncode}: {r.stderr.strip()}")
    return json.load(open(path)) if r.returncode == 0 else None


again = small(["--prefill", "60", "--context", "700"], "again")
parts = [small(["--step", s], "again_" + s.replace("@", "_")) for s in ("33@673", "27@700")]
if again and all(parts):
    check([tuple(r[:3]) for r in again["prefill"]["per_chunk"]["rows"]] == [(0, 33, 673), (33, 27, 700)],
          f"60 tokens at 700: chunks {again['prefill']['per_chunk']['rows']}")
    check(lat(again) == sum(lat(x) for x in parts), f"60 tokens at 700: {lat(again)} cycles, the chunks alone "
          f"{[lat(x) for x in parts]}")
cap = decode_json(["--prefill", "64", "--context", "512", "--chunk", "50"], "chunk_cap")
check(cap["prefill"]["chunk_tokens"]["value"] == 48, f"--chunk 50 where 48 fit: {cap['prefill']['chunk_tokens']}")

# (b2) a prompt in chunks takes its tokens c at a time from its first, as a serving engine's chunked prefill:
# 8 tokens ending at 63 in chunks of 4 are 4@59 then 4@63 (ceil(8/4) = 2 chunks, whatever the 55 cached), and
# 10 ending at 64 are 4@58, 4@62, 2@64 (the last the remainder); the step's latency is theirs added.
for t, c, chunks in [(8, 63, [(0, 4, 59), (4, 4, 63)]), (10, 64, [(0, 4, 58), (4, 4, 62), (8, 2, 64)])]:
    j = decode_json(["--prefill", str(t), "--context", str(c), "--chunk", "4"], f"prefill{t}_{c}_chunk4")
    got = [tuple(r[:3]) for r in j["prefill"]["per_chunk"]["rows"]]
    check(got == chunks, f"--prefill {t} --context {c} --chunk 4: chunks {got}, expected {chunks}")
    parts = [lat(decode_json(["--step", f"{n}@{e}"], f"step_{n}_{e}")) for _, n, e in chunks]
    check([r[3] for r in j["prefill"]["per_chunk"]["rows"]] == parts and lat(j) == sum(parts),
          f"--prefill {t} --context {c} --chunk 4: {lat(j)} cycles, chunks {j['prefill']['per_chunk']['rows']}, "
          f"alone {parts}")

# (c) monotonic: more sequences never faster; a mixed step costs at least the slower of its parts.
d1 = decode_json(["--step", "1@64"], "d1")
d2 = decode_json(["--step", "1@64,1@32"], "d2")
m1 = decode_json(["--step", "1@64,16@64"], "m1")
m2 = decode_json(["--step", "1@64,1@32,16@64"], "m2")
m3 = decode_json(["--step", "1@64,1@32,1@48,16@64"], "m3")
check(lat(d1) <= lat(d2), f"1@64 {lat(d1)} > 1@64,1@32 {lat(d2)}")
check(lat(one) <= lat(m1) <= lat(m2) <= lat(m3), f"adding decode sequences made a step faster: {lat(one)}, {lat(m1)}, "
      f"{lat(m2)}, {lat(m3)}")
check(lat(m2) >= max(lat(d2), lat(one)), f"mixed {lat(m2)} < a part alone ({lat(d2)}, {lat(one)})")
check(lat(m2) < lat(d2) + lat(one), f"mixed {lat(m2)} >= its parts one after another {lat(d2)} + {lat(one)}")
check(lat(m2) > lat(one), f"three decode tokens cost nothing beside the chunk: {lat(m2)} == {lat(one)}")

# The report: a mixed step, every sequence listed with its tokens.
check("mixed step" in m2["_stdout"], "text output names a mixed step")
check(m2["config"]["step"] == "1@64,1@32,16@64", f"config.step: {m2['config'].get('step')}")
mx = m2["mixed"]
check(mx["sequences"]["value"] == 3 and mx["decode_sequences"]["value"] == 2 and mx["prefill_sequences"]["value"] == 1,
      f"sequence counts: {mx}")
check(mx["step_tokens"]["value"] == 18, f"step tokens: {mx['step_tokens']}")
got = [(r["sequence"], r["kind"], r["tokens"], r["context [tokens]"]) for r in rows(mx["per_sequence"])]
check(got == [(1, "decode", 1, 64), (2, "decode", 1, 32), (3, "prefill", 16, 64)], f"per_sequence: {got}")
check(abs(m2["tokens_per_s_aggregate"]["value"] - 18e6 / m2["latency_us"]["value"]) < 1e-6 * 18e6 / m2["latency_us"]["value"],
      "aggregate tokens/s")

# The report's page of a mixed step names it and lists its sequences.
page = os.path.join(out, "m2.html")
r = subprocess.run([exe, "report", os.path.join(out, "m2.json"), "--out", page], capture_output=True, text=True, timeout=120)
check(r.returncode == 0, f"report: {r.stderr}")
html = open(page).read() if r.returncode == 0 else ""
check("mixed step 1@64,1@32,16@64</h1>" in html, "the page's title names the mixed step")
check("18 new tokens of 3 sequences" in html, "the page's headline gives the step's tokens and sequences")
check("<td>3</td><td>prefill</td><td>16</td><td>64</td>" in html, "the page lists the sequences")

check.done(f"ok: 1@64 x3 = batch 3 ({lat(mix)} cycles), 16@64 = prefill 16 ({lat(one)}), decode 1@64,1@32 {lat(d2)}, "
           f"mixed 1@64,1@32,16@64 {lat(m2)}")
