#!/usr/bin/env python3
"""The points of one process share what does not change between them (apps/point_cache.h); nothing in the
results may depend on it. docs/studies.md "Processes".

cache_check.py sweep WAFER_EMU STUDY OUTDIR [KIND=N ...]
    the study with the cache (one process, and --jobs 2) and with --no-cache: the same lines (wall time
    aside), the same summary.csv; with the cache every kind of reuse happens at least once (the study is
    made for it: tests/cli/data/sweep_cache.json), without it none. KIND=N instead: in the one-process run
    exactly N points keep KIND (repair, mapping, mesh) and no point keeps a kind not given.
cache_check.py table WAFER_EMU OUTDIR
    `table` on the tiny wafer with and without --no-cache: every file of the folders byte for byte (but the
    time stamp in meta.yaml); with the cache the mesh model is reused, without it never.
"""
import json, os, re, shutil, subprocess, sys

from results import table_files


def run(args):
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def lines_of(d):
    with open(os.path.join(d, "points.jsonl")) as f:
        return sorted((json.loads(l) for l in f), key=lambda l: l["index"])


def comparable(lines):
    return [json.dumps({k: v for k, v in l.items() if k != "wall_s"}, sort_keys=True) for l in lines]


def mode_sweep(exe, study, out, expect=None):
    runs = {"cache": [], "cache, --jobs 2": ["--jobs", "2"], "--no-cache": ["--no-cache"]}
    got = {}
    for name, extra in runs.items():
        d = fresh(os.path.join(out, re.sub(r"[^a-z0-9]+", "_", name)))
        run([exe, "sweep", "--spec", study, "--out", d, "--quiet"] + extra)
        lines = lines_of(d)
        counts = {}  # kind -> points that kept it
        for l in lines:
            w = l["wall_s"]
            for k in ("total", "repair", "mapping"):
                if not isinstance(w.get(k), (int, float)):
                    raise SystemExit(f"FAIL: {name}: point {l['index']} has no wall_s.{k}")
            for k in w.get("kept", []):
                counts[k] = counts.get(k, 0) + 1
        kept = set(counts)
        if name == "--no-cache" and kept:
            raise SystemExit(f"FAIL: --no-cache kept {sorted(kept)}")
        if name == "cache" and expect is not None:
            if counts != expect:
                raise SystemExit(f"FAIL: with the cache, points kept {counts}; expected {expect}")
        elif name == "cache" and kept != {"repair", "mapping", "mesh"}:
            raise SystemExit(f"FAIL: with the cache, points kept {sorted(kept)}; the study should keep repair, mapping and mesh")
        got[name] = (comparable(lines), open(os.path.join(d, "summary.csv")).read())
        print(f"{name}: {len(lines)} points, kept {sorted(kept)}")
    ref = got["--no-cache"]
    for name, g in got.items():
        if g[0] != ref[0]:
            for a, b in zip(g[0], ref[0]):
                if a != b:
                    print(f"{name}:\n  {a}\n--no-cache:\n  {b}")
                    break
            raise SystemExit(f"FAIL: {name} gives other lines than --no-cache")
        if g[1] != ref[1]:
            raise SystemExit(f"FAIL: {name} gives another summary.csv than --no-cache")
    print("ok")


def mode_table(exe, out):
    # Chunked prompts (the tiny wafer holds 256 of them at most at once), two batches, two contexts.
    args = ["table", "--wafer", "tiny", "--model", "tiny-llama", "--contexts", "128,512", "--batches", "1,4",
            "--prefill-tokens", "16,256,512"]
    got, reused = {}, {}
    for name, extra in (("cache", []), ("--no-cache", ["--no-cache"])):
        d = fresh(os.path.join(out, "cache" if not extra else "no_cache"))
        r = run([exe] + args + ["--out", d] + extra)
        m = re.search(r"meshes_reused\s+(\d+)", r.stdout)
        if not m:
            raise SystemExit(f"FAIL: {name}: no meshes_reused in the report:\n{r.stdout}")
        reused[name] = int(m.group(1))
        got[name] = table_files(d)
        print(f"{name}: {len(got[name])} files, {reused[name]} steps on a reused mesh")
    if reused["cache"] == 0 or reused["--no-cache"] != 0:
        raise SystemExit(f"FAIL: meshes reused {reused}: expected some with the cache and none without")
    a, b = got["cache"], got["--no-cache"]
    if sorted(a) != sorted(b):
        raise SystemExit(f"FAIL: other files: {sorted(a)} vs {sorted(b)}")
    for k in a:
        if a[k] != b[k]:
            raise SystemExit(f"FAIL: {k} differs with and without the cache")
    print("ok")


def main():
    mode = sys.argv[1]
    if mode == "sweep":
        expect = dict((k, int(n)) for k, n in (a.split("=", 1) for a in sys.argv[5:])) if len(sys.argv) > 5 else None
        mode_sweep(sys.argv[2], sys.argv[3], sys.argv[4], expect)
    elif mode == "table":
        mode_table(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
