"""decode --defects-out: the map a decode generated (--density, --seed), written out and read back with --defects,
gives the same decode (every section of the JSON but wall_time, and config.defects, which names the map's source),
in CSV and in JSON; a map copied from a file is written out as read.

Usage: defects_out_check.py WAFER_EMU OUTDIR -- DECODE_ARGS...
"""
import os, re, sys

from decode_pair import differences, run

exe, out = sys.argv[1], sys.argv[2]
args = sys.argv[sys.argv.index("--") + 1:]
os.makedirs(out, exist_ok=True)
fails = []


def without_generation(a):
    """The arguments less --density D and --seed S."""
    out, i = [], 0
    while i < len(a):
        if a[i] in ("--density", "--seed"):
            i += 2
            continue
        out.append(a[i])
        i += 1
    return out


read_args = without_generation(args)
for ext in ("csv", "json"):
    path = os.path.join(out, f"map.{ext}")
    if os.path.exists(path):
        os.remove(path)
    a, _ = run(exe, args + ["--defects-out", path], os.path.join(out, f"generated_{ext}.json"), None)
    if not os.path.exists(path):
        print(f"FAIL: --defects-out {path} wrote nothing")
        sys.exit(1)
    b, _ = run(exe, read_args + ["--defects", path], os.path.join(out, f"read_{ext}.json"), None)
    na = re.search(r"\((\d+) defects\)", a["config"]["defects"])
    nb = re.search(r"\((\d+) defects\)", b["config"]["defects"])
    if not na or not nb or na.group(1) != nb.group(1) or int(na.group(1)) == 0:
        fails.append(f"{ext}: defect counts {a['config']['defects']!r} against {b['config']['defects']!r}")
    a["config"].pop("defects"), b["config"].pop("defects")
    fails += [f"{ext}: {d}" for d in differences(a, b, "generated", "read back")]
    # Read back and written out again: the same file.
    again = os.path.join(out, f"again.{ext}")
    run(exe, read_args + ["--defects", path, "--defects-out", again], os.path.join(out, f"again_{ext}.json"), None)
    if open(path).read() != open(again).read():
        fails.append(f"{ext}: the map read from {path} and written out again differs")
for f in fails:
    print("FAIL:", f)
if fails:
    sys.exit(1)
print("ok: the generated map written out and read back gives the same decode (csv, json)")
