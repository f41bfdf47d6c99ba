#!/usr/bin/env python3
"""An output that names an input or another output is refused before any work, in one line naming both options,
and the file it names is left as it was (apps::check_apart); streams may be shared. An empty output path (or an empty
validate --only) is one line too, before any work, and leaves nothing behind (ctest drops empty arguments, so it is checked here).

paths_apart_check.py WAFER_EMU OUT_DIR

Each case ran with exit 0 on the build before and wrote over the file: a results file over the model config it
read, a trace over the JSON, a defect map over the JSON or the map read, a summary over a study's points, a JSON
inside the folder a table replaces.
"""
import os, shutil, subprocess, sys

TINY = ["--wafer", "tiny", "--model", "tiny-llama", "--context", "64"]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def run(args, cwd):
    return subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


def main():
    exe, base = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    here = os.path.dirname(os.path.abspath(__file__))
    configs = os.path.join(here, "..", "..", "configs", "models")
    shutil.copy(os.path.join(configs, "test", "tiny-llama.json"), os.path.join(base, "model.json"))
    shutil.copy(os.path.join(here, "data", "validate_resume.json"), os.path.join(base, "cases.json"))
    os.symlink("model.json", os.path.join(base, "link.json"))
    # Files the cases read or write: made first, so that a case that wrote over one is seen.
    if run([exe, "decode"] + TINY + ["--json", "results.json"], base).returncode != 0:
        fail("decode --json results.json")
    if run([exe, "defects", "--wafer", "tiny", "--density", "100", "--out", "map.csv"], base).returncode != 0:
        fail("defects --out map.csv")
    study = os.path.join(base, "study")
    spec = os.path.join(base, "spec.json")
    with open(spec, "w") as f:
        f.write('{"schema": 1, "fixed": {"wafer": "tiny", "model": "tiny-llama", "context": 64}, "axes": {"batch": [1, 2]}}\n')
    if run([exe, "sweep", "--spec", spec, "--out", study, "--quiet"], base).returncode != 0:
        fail("sweep --spec spec.json --out study")

    cases = [
        (["decode"] + TINY[:2] + ["--model", "model.json", "--context", "64", "--json", "model.json"],
         "--json model.json names the file --model reads", "model.json"),
        (["decode"] + TINY[:2] + ["--model", "model.json", "--context", "64", "--json", "link.json"],
         "--json link.json names the file --model reads", "model.json"),
        (["decode"] + TINY + ["--json", "results.json", "--trace", "./results.json"],
         "--trace ./results.json names the file --json writes", "results.json"),
        (["decode"] + TINY + ["--density", "100", "--defects-out", "map.csv", "--json", "sub/../map.csv"],
         "--defects-out map.csv names the file --json writes", "map.csv"),
        (["decode"] + TINY + ["--defects", "map.csv", "--json", "map.csv"], "--json map.csv names the file --defects reads",
         "map.csv"),
        (["defects", "--wafer", "tiny", "--in", "map.csv", "--json", "map.csv"], "--json map.csv names the file --in reads",
         "map.csv"),
        (["defects", "--wafer", "tiny", "--density", "10", "--out", "map.csv", "--json", "map.csv"],
         "--json map.csv names the file --out writes", "map.csv"),
        (["validate", "--cases", "cases.json", "--json", "cases.json"], "--json cases.json names the file --cases reads",
         "cases.json"),
        (["validate", "--cases", "cases.json", "--fit", "task_overhead", "--wafer-out", "cases.json"],
         "--wafer-out cases.json names the file --cases reads", "cases.json"),
        (["report", "results.json", "--out", "results.json"], "--out results.json names the file --in reads", "results.json"),
        (["sweep", "--spec", "spec.json", "--out", "study", "--json", "spec.json"], "--json spec.json names the file --spec reads",
         "spec.json"),
        (["sweep", "--summarize", "study", "--json", "study/points.jsonl"],
         "--json study/points.jsonl names the file --summarize reads", "study/points.jsonl"),
        (["table", "--wafer", "tiny", "--model", "tiny-llama", "--contexts", "64", "--batches", "1", "--prefill-tokens",
          "64", "--out", "tables", "--json", "tables/x.json"], "--json tables/x.json lies in --out tables", None),
        (["describe", "--wafer", "wafer.json", "--json", "wafer.json"], "--json wafer.json names the file --wafer reads",
         "wafer.json"),
    ]
    with open(os.path.join(base, "wafer.json"), "w") as f:
        f.write('{"preset": "tiny"}\n')
    os.makedirs(os.path.join(base, "sub"))
    os.makedirs(os.path.join(base, "tables"))  # (an empty folder: --out takes one)
    for args, message, kept in cases:
        before = open(os.path.join(base, kept), "rb").read() if kept else None
        r = run([exe] + args, base)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or message not in r.stderr:
            fail(f"{' '.join(args)}: exit {r.returncode}, stderr {r.stderr!r} (expected one line with {message!r})")
        if kept and open(os.path.join(base, kept), "rb").read() != before:
            fail(f"{' '.join(args)}: {kept} changed")
        print(f"ok: {' '.join(args)}: {lines[0]}")
    if os.listdir(os.path.join(base, "tables")):
        fail("table wrote into its --out folder")

    for args, message in ((["decode"] + TINY + ["--json", ""], "--json is empty"),
                          (["table", "--wafer", "tiny", "--model", "tiny-llama", "--contexts", "64", "--batches", "1",
                            "--prefill-tokens", "64", "--out", ""], "--out is empty"),
                          (["validate", "--cases", "cases.json", "--only", ""], "--only is empty")):
        before = sorted(os.listdir(base))
        r = run([exe] + args, base)
        if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1 or message not in r.stderr:
            fail(f"{' '.join(args)}: exit {r.returncode}, stderr {r.stderr!r}")
        if sorted(os.listdir(base)) != before:
            fail(f"{' '.join(args)}: left {sorted(set(os.listdir(base)) - set(before))}")
        print(f"ok: {' '.join(args)}: {r.stderr.strip()}")

    # Streams may be shared: the text, the trace and the JSON one after the other.
    r = run([exe, "decode"] + TINY + ["--json", "/dev/stdout", "--trace", "/dev/stdout"], base)
    if r.returncode != 0 or '"schema_version": 2' not in r.stdout or "traceEvents" not in r.stdout:
        fail(f"--json /dev/stdout --trace /dev/stdout: exit {r.returncode}: {r.stderr}")
    print("ok: --json /dev/stdout --trace /dev/stdout: both written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
