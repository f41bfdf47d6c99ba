#!/usr/bin/env python3
"""The results do not depend on how much memory the machine has free, only on what fits in it.

memory_note_check.py WAFER_EMU OUT_DIR MB_A MB_B -- DECODE-ARGS...

Runs `wafer-emu decode DECODE-ARGS` with WAFER_EMU_MEMORY_MB=MB_A and =MB_B (two amounts that refuse the same
candidates of a --placement auto search) and compares the JSON results byte for byte but for `wall_time`; at
least one candidate must have been left out for memory, so the case exercises what the search says of it.
"""
import os, sys

from decode_pair import differences, run


def main():
    if len(sys.argv) < 6 or sys.argv[5] != "--":
        print(__doc__)
        return 2
    exe, out_dir, mb_a, mb_b = sys.argv[1:5]
    args = sys.argv[6:]
    os.makedirs(out_dir, exist_ok=True)
    results = []
    for mb in (mb_a, mb_b):
        os.environ["WAFER_EMU_MEMORY_MB"] = mb
        results.append(run(exe, args, os.path.join(out_dir, f"memory_{mb}.json"), None)[0])
    bad = differences(results[0], results[1], f"{mb_a} MiB", f"{mb_b} MiB")
    rows = results[0].get("search", {}).get("candidates", {}).get("rows", [])
    if not any("more than the memory available" in str(r[-1]) for r in rows):
        bad.append("no candidate was left out for memory: the case does not exercise it")
    if bad:
        print("FAIL: " + "\n".join(bad))
        return 1
    print(f"ok: the same results with {mb_a} and {mb_b} MiB available")
    return 0


if __name__ == "__main__":
    sys.exit(main())
