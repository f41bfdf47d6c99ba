#!/usr/bin/env bash
# bench/waferllm.sh: one decoder layer of WaferLLM's Llama3-8B stand-in (hidden 4320, ffn 14400, one head of
# dim 4320, context 4320; WaferLLM Table 4) on a P x P square of WSE-2 tiles, mapped with the meshgemv
# kernel and each allreduce algorithm: the layer's cycles (critical path attributed to "layer 0") beside
# the published 12,732 / 13,742 / 15,323 cycles per layer at P = 420 / 540 / 660 (tokens/s of Table 4 at
# 1.1 GHz, 32 layers), the error, and the wall time of each run. Run through bench/run.
set -euo pipefail
emu="${WAFER_EMU:?run through bench/run}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat >"$dir/w1.json" <<'JSON'
{"model_type": "llama", "hidden_size": 4320, "intermediate_size": 14400, "num_attention_heads": 1,
 "num_key_value_heads": 1, "head_dim": 4320, "num_hidden_layers": 1, "vocab_size": 32000,
 "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
JSON
declare -A published=([420]=12732 [540]=13742 [660]=15323)
printf '%-7s %-5s %12s %12s %8s %8s\n' allreduce P "layer [cyc]" "published" "error" "wall [s]"
for algo in ${WAFERLLM_ALGOS:-tree centre chain}; do
  for P in ${WAFERLLM_SIZES:-420 540 660}; do
    echo "{\"preset\": \"wse2\", \"name\": \"wse2-$P\", \"logical_width\": $P, \"logical_height\": $P}" >"$dir/wafer.json"
    t0=$(date +%s.%N)
    "$emu" decode --wafer "$dir/wafer.json" --model "$dir/w1.json" --context 4320 --placement whole-wafer \
      --kernel meshgemv --allreduce "$algo" --json "$dir/out.json" >/dev/null
    t1=$(date +%s.%N)
    python3 - "$dir/out.json" "$algo" "$P" "${published[$P]}" "$t0" "$t1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
def find(o, key):
    if isinstance(o, dict):
        if key in o: return o[key]
        for v in o.values():
            r = find(v, key)
            if r is not None: return r
    elif isinstance(o, list):
        for v in o:
            r = find(v, key)
            if r is not None: return r
t = find(j, "per_layer")  # {"columns": [{"name", "unit"}, ...], "rows": [[...], ...]} (docs/results.md)
cols = [(c["name"], c["unit"]) for c in t["columns"]]
name, total = cols.index(("layer", "")), cols.index(("total", "cycles"))
layer = [r for r in t["rows"] if r[name] == "layer 0"][0][total]
pub = int(sys.argv[4])
print(f"{sys.argv[2]:<7} {sys.argv[3]:<5} {layer:>12} {pub:>12} {100.0 * (layer - pub) / pub:>+7.1f}% {float(sys.argv[6]) - float(sys.argv[5]):>8.1f}")
PY
  done
done
