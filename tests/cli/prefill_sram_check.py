"""A prefill in chunks reports the fullest tile of any chunk (decode --json's sram.sram_max), not the last chunk's.

prefill_sram_check.py WAFER_EMU OUT_DIR

small-llama on `small`, whole-wafer, a prompt of 193 tokens in chunks of at most 64: the chunks end at 64, 128, 192
and 193. Each chunk run alone (`--prefill n --context end`) maps as it does inside the prompt; the prompt's sram_max
must be the largest of theirs, and larger than the last chunk's (one token): until 2026-12-08 it was the last's.
"""
import json, os, subprocess, sys

exe, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
BASE = ["--wafer", "small", "--model", "small-llama", "--placement", "whole-wafer"]


def sram_max(name, args):
    path = os.path.join(out, name + ".json")
    r = subprocess.run([exe, "decode"] + BASE + args + ["--json", path], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"FAIL: decode {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return json.load(open(path))["sram"]["sram_max"]["value"]


whole = sram_max("prompt", ["--prefill", "193", "--chunk", "64"])
alone = {end: sram_max(f"chunk_{end}", ["--prefill", str(n), "--context", str(end)])
         for n, end in ((64, 64), (64, 128), (64, 192), (1, 193))}
if whole != max(alone.values()) or whole <= alone[193]:
    sys.exit(f"FAIL: the prompt's sram_max {whole}; its chunks alone {alone}")
print(f"ok: sram_max {whole}, the chunks alone {alone}")
