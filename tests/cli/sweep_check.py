#!/usr/bin/env python3
"""`wafer-emu sweep` end to end on the tiny study (configs/studies/tiny.json). docs/studies.md.

sweep_check.py MODE WAFER_EMU STUDY OUTDIR [OTHER_STUDY]

  jobs     --jobs 1 and --jobs 2 give the same lines (sorted by index, wall time left out), every point exactly
           once, the failures recorded with their reason, the summary files written; a finished study runs
           nothing again; another study into the same directory is refused and changes nothing.
  resume   a sweep killed (SIGKILL) after a few points, a half-written last line added, then restarted:
           every point exactly once, the same lines as an uninterrupted run.
  decode   every good point's numbers equal `wafer-emu decode`'s for the same settings; --point I gives the same lines.
  ranks    three processes as an MPI launcher starts them (rank and size in the environment) share the study
           out; the one that finishes it writes the summary.
  mpirun   the same under a real `mpirun -n 3` (Open MPI; MPIRUN as the 5th argument).
  stats    the summary of a known set of point results: mean, p5, p50, p95, max, failures by reason.
  summary  a points file written by hand for a study with a placement and a hop_latency axis
           (data/sweep_summary_known.json): per setting the percentiles, repair success rate, usable tiles and
           extra hops; the best placement per density and hop latency (a tie, a placement with a failed seed);
           the sensitivity slopes and elasticities, one of them computed by hand (19/28 us per cycle).
  memory   processes of a study take turns for memory (data/sweep_memory.json, apps/memory_gate.h): see
           mode_memory.
  study    a small study with a placement and a hop_latency axis (data/sweep_placement_tiny.json) run end to
           end: the placements and sensitivity tables agree with what the points file holds.
"""
import json, math, os, pty, re, shutil, signal, socket, subprocess, sys, time

import results


def run(args, timeout=600, check=True):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def lines_of(d):
    out = []
    with open(os.path.join(d, "points.jsonl")) as f:
        for line in f:
            out.append(json.loads(line))
    return out


def comparable(lines):
    rows = []
    for l in sorted(lines, key=lambda l: l["index"]):
        l = dict(l)
        l.pop("wall_s", None)
        rows.append(json.dumps(l, sort_keys=True))
    return rows


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    return path


def exactly_once(lines, total, what):
    idx = sorted(l["index"] for l in lines)
    if idx != list(range(total)):
        raise SystemExit(f"FAIL: {what}: indices {idx}, expected each of 0..{total - 1} exactly once")


def fnv1a(text):
    h = 1469598103934665603
    for b in text.encode():
        h = ((h ^ b) * 1099511628211) % (1 << 64)
    return f"{h:016x}"


def compact(j):
    return json.dumps(j, separators=(",", ":"), ensure_ascii=False)


def same_as_reference(d, ref, who):
    # The study run by `who` into d: every point once, the same lines and summary as one process into ref.
    want = comparable(lines_of(ref))
    lines = lines_of(d)
    exactly_once(lines, len(want), who)
    if comparable(lines) != want:
        raise SystemExit(f"FAIL: {who} give(s) other lines than one process")
    if open(os.path.join(d, "summary.csv")).read() != open(os.path.join(ref, "summary.csv")).read():
        raise SystemExit(f"FAIL: the summary written under {who} differs")
    print(f"{who}: {len(lines)} points, each once, the same lines and summary as one process")


def mode_jobs(exe, study, out, other):
    total = None
    got = {}
    for jobs in (1, 2):
        d = fresh(os.path.join(out, f"jobs{jobs}"))
        r = run([exe, "sweep", "--spec", study, "--out", d, "--jobs", str(jobs)])
        spec = json.load(open(os.path.join(d, "spec.json")))
        total = spec["points"]
        lines = lines_of(d)
        exactly_once(lines, total, f"--jobs {jobs}")
        # The hashes are FNV-1a over compact JSON: the study's without "note", a point's over its settings.
        spec_in = json.load(open(study))
        spec_in.pop("note", None)
        if spec["study"] != fnv1a(compact(spec_in)):
            raise SystemExit(f"FAIL: study hash {spec['study']}, expected {fnv1a(compact(spec_in))}")
        axes = []
        for k, v in spec_in.get("axes", {}).items():
            axes.append((k, [v["from"] + i for i in range(v["count"])] if isinstance(v, dict) else v))
        for l in lines:
            want, rest = dict(spec_in.get("fixed", {})), l["index"]
            picks = []
            for k, vs in reversed(axes):
                picks.append((k, vs[rest % len(vs)]))
                rest //= len(vs)
            want.update(reversed(picks))
            if list(l["settings"].items()) != list(want.items()):
                raise SystemExit(f"FAIL: point {l['index']}: settings {l['settings']}, expected {want} (last axis fastest)")
            if l["hash"] != fnv1a(compact(l["settings"])) or l["study"] != spec["study"]:
                raise SystemExit(f"FAIL: point {l['index']}: hash {l['hash']}, expected {fnv1a(compact(l['settings']))}")
        got[jobs] = comparable(lines)
        for f in ("summary.csv", "summary.json"):
            if not os.path.exists(os.path.join(d, f)):
                raise SystemExit(f"FAIL: --jobs {jobs}: {f} not written")
        if f"{total} of {total} points done" not in r.stdout:
            raise SystemExit(f"FAIL: --jobs {jobs}: the summary does not say all points are done:\n{r.stdout}")
        ok = [l for l in lines if l["status"] == "ok"]
        bad = [l for l in lines if l["status"] == "failed"]
        if not ok or not bad:
            raise SystemExit(f"FAIL: the tiny study should have good and failing points ({len(ok)} ok, {len(bad)} failed)")
        for l in bad:
            if l["failure"]["stage"] != "map" or not l["failure"]["reason"]:
                raise SystemExit(f"FAIL: point {l['index']}: unexpected failure {l['failure']}")
        if not any("use --placement whole-wafer" in l["failure"]["reason"] for l in bad):
            raise SystemExit("FAIL: the meshgemv points of the tiny study should be refused by the mapper")
        for l in ok:
            for k in ("hash", "settings", "latency_cycles", "latency_us", "tokens_per_s", "breakdown_cycles", "repair",
                      "usable_tiles", "extra_hops", "wall_s"):
                if k not in l:
                    raise SystemExit(f"FAIL: point {l['index']} has no '{k}'")
            if sum(l["breakdown_cycles"].values()) != l["latency_cycles"]:
                raise SystemExit(f"FAIL: point {l['index']}: the breakdown does not sum to the latency")
        print(f"--jobs {jobs}: {len(lines)} points, {len(ok)} ok, {len(bad)} failed")
    csvs = [open(os.path.join(out, f"jobs{j}", "summary.csv")).read() for j in (1, 2)]
    if csvs[0] != csvs[1]:
        raise SystemExit("FAIL: summary.csv differs between --jobs 1 and --jobs 2")
    if got[1] != got[2]:
        for a, b in zip(got[1], got[2]):
            if a != b:
                print(f"--jobs 1: {a}\n--jobs 2: {b}")
                break
        raise SystemExit("FAIL: --jobs 1 and --jobs 2 differ")
    # Finished: a second run runs nothing and appends nothing.
    d = os.path.join(out, "jobs2")
    before = open(os.path.join(d, "points.jsonl")).read()
    r = run([exe, "sweep", "--spec", study, "--out", d, "--jobs", "2"])
    if "points_run" not in r.stdout or not any(l.split()[:2] == ["points_run", "0"] for l in r.stdout.splitlines()):
        raise SystemExit(f"FAIL: a finished study ran points again:\n{r.stdout}")
    if open(os.path.join(d, "points.jsonl")).read() != before:
        raise SystemExit("FAIL: a finished study's points.jsonl changed")
    # Another study into the same directory: refused, one line, exit 2, nothing changed.
    r = run([exe, "sweep", "--spec", other, "--out", d], check=False)
    if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1 or "never mixed" not in r.stderr:
        raise SystemExit(f"FAIL: another study into the directory: exit {r.returncode}\n{r.stderr}")
    if open(os.path.join(d, "points.jsonl")).read() != before:
        raise SystemExit("FAIL: another study changed points.jsonl")
    print("ok")


def mode_resume(exe, study, out):
    ref = fresh(os.path.join(out, "reference"))
    run([exe, "sweep", "--spec", study, "--out", ref])
    want = comparable(lines_of(ref))
    d = os.path.join(out, "killed")
    path = os.path.join(d, "points.jsonl")
    for attempt in range(3):  # a loaded machine may let the sweep finish before the test looks: try again
        fresh(d)
        p = subprocess.Popen([exe, "sweep", "--spec", study, "--out", d], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            if os.path.exists(path) and open(path).read().count("\n") >= 3:
                break
            time.sleep(0.002)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()
        n = open(path).read().count("\n")
        if p.returncode == -signal.SIGKILL and n < len(want):
            break
        print(f"attempt {attempt + 1}: the sweep ended (exit {p.returncode}, {n} points) before the kill")
    else:
        raise SystemExit("FAIL: the sweep always finished before the test could kill it")
    # A writer killed mid-line leaves a partial last line: the restart must cut it off.
    with open(path, "a") as f:
        f.write('{"study": "' + json.load(open(os.path.join(d, "spec.json")))["study"] + '", "index": 0, "sta')
    print(f"killed after {n} points; a partial line appended")
    # A reader leaves the partial line to the next run: --summarize reads the whole lines and cuts nothing off.
    before = open(path).read()
    run([exe, "sweep", "--summarize", d])
    if open(path).read() != before:
        raise SystemExit("FAIL: sweep --summarize changed points.jsonl")
    # A temporary file of a run killed before its rename (its process gone) is removed by the next run.
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = os.path.join(d, f"summary.csv.tmp.{gone.pid}")
    open(stale, "w").write("half a summary")
    run([exe, "sweep", "--spec", study, "--out", d, "--jobs", "2"])
    if os.path.exists(stale):
        raise SystemExit(f"FAIL: {stale}, a killed run's temporary file, is still there after the restart")
    lines = lines_of(d)
    exactly_once(lines, len(want), "after the restart")
    if comparable(lines) != want:
        raise SystemExit("FAIL: the restarted study differs from an uninterrupted one")
    print(f"restarted: {len(lines)} points, each once, as an uninterrupted run")
    print("ok")


def mode_ranks(exe, study, out):
    # As under `mpirun -n 3`: three processes started together, each told its rank by the launcher's environment.
    ref = fresh(os.path.join(out, "reference"))
    run([exe, "sweep", "--spec", study, "--out", ref])
    d = fresh(os.path.join(out, "ranks"))
    procs = []
    for rank in range(3):
        env = dict(os.environ, OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE="3")
        procs.append(subprocess.Popen([exe, "sweep", "--spec", study, "--out", d], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    for rank, (p, (o, e)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            raise SystemExit(f"FAIL: rank {rank}: exit {p.returncode}\n{o}\n{e}")
        if f"(rank {rank} of 3)" not in o:
            raise SystemExit(f"FAIL: rank {rank} does not say which rank it ran:\n{o}")
    same_as_reference(d, ref, "three ranks")
    print("ok")


def mode_mpirun(exe, study, out, mpirun):
    # A real launcher: Open MPI's mpirun with 3 ranks (run as root, on fewer cores than ranks in CI).
    ref = fresh(os.path.join(out, "reference"))
    run([exe, "sweep", "--spec", study, "--out", ref])
    d = fresh(os.path.join(out, "mpirun"))
    r = run([mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "3", exe, "sweep", "--spec", study, "--out", d])
    for rank in range(3):
        if f"(rank {rank} of 3)" not in r.stdout:
            raise SystemExit(f"FAIL: rank {rank} of mpirun -n 3 did not run its shard:\n{r.stdout}\n{r.stderr}")
    same_as_reference(d, ref, "mpirun -n 3")
    print("ok")


def decode_args(s):
    args = []
    for k, opt in (("wafer", "--wafer"), ("model", "--model"), ("context", "--context"), ("batch", "--batch"),
                   ("kv_capacity", "--kv-capacity"), ("placement", "--placement"), ("kernel", "--kernel"), ("allreduce", "--allreduce"), ("group", "--group"),
                   ("weights", "--weights"), ("weight_bits", "--weight-bits"), ("wafers", "--wafers"),
                   ("fidelity", "--fidelity"), ("density", "--density"), ("seed", "--seed"), ("repair", "--repair")):
        if k in s:
            args += [opt, str(s[k])]
    if s.get("defect_model", "poisson") != "poisson":  # (decode takes --alpha with a clustered model only)
        args += ["--defect-model", s["defect_model"]] + (["--alpha", str(s["alpha"])] if "alpha" in s else [])
    return args


def mode_decode(exe, study, out):
    # Every good point of a whole run against `decode` with the same settings; two of them again through --point.
    whole = fresh(os.path.join(out, "whole"))
    run([exe, "sweep", "--spec", study, "--out", whole])
    lines = sorted(lines_of(whole), key=lambda l: l["index"])
    good = [l for l in lines if l["status"] == "ok"]
    if len(good) < 2 or not any(l["repair"]["extra_hops"] > 0 for l in good):
        raise SystemExit("FAIL: the tiny study should have good points with repaired (longer) links")
    for line in good:
        i, s = line["index"], dict(line["settings"])
        wafer_keys = [k for k in s if k not in ("wafer", "model", "context", "batch", "kv_capacity", "placement", "kernel", "allreduce",
                                               "group", "weights", "weight_bits", "wafers", "fidelity", "density", "seed",
                                               "repair", "defect_model", "alpha")]
        args = decode_args(s)
        if wafer_keys:  # wafer parameter overrides: a wafer file
            wf = os.path.join(out, f"wafer_{i}.json")
            json.dump(dict({"preset": s["wafer"]}, **{k: s[k] for k in wafer_keys}), open(wf, "w"))
            args[args.index("--wafer") + 1] = wf
        dj = os.path.join(out, f"decode_{i}.json")
        run([exe, "decode"] + args + ["--json", dj])
        dec = json.load(open(dj))
        pairs = [("latency_cycles", dec["latency_cycles"]["value"], line["latency_cycles"]),
                 ("latency_us", dec["latency_us"]["value"], line["latency_us"]),
                 ("tokens_per_s", dec["tokens_per_s"]["value"], line["tokens_per_s"]),
                 ("tiles_used", dec["fabric"]["tiles_used"]["value"], line["tiles_used"])]
        for cause, cycles in line["breakdown_cycles"].items():
            pairs.append((cause, dec["breakdown"][cause]["value"], cycles))
        for name, want, got in pairs:
            if not math.isclose(float(want), float(got), rel_tol=1e-12):
                raise SystemExit(f"FAIL: point {i} ({s}): {name} {got}, decode gives {want}")
        print(f"point {i} {s}: {line['latency_cycles']} cycles, extra hops {line['repair']['extra_hops']}, as decode")
    # A study of clustered maps: decode without the model (Poisson maps of the same seeds) must give other numbers
    # somewhere, or the comparison above could not tell the models apart.
    clustered = [l for l in good if l["settings"].get("defect_model", "poisson") != "poisson"]
    if clustered:
        differs = False
        for line in clustered:
            s = {k: v for k, v in line["settings"].items() if k not in ("defect_model", "alpha")}
            dj = os.path.join(out, f"poisson_{line['index']}.json")
            r = subprocess.run([exe, "decode"] + decode_args(s) + ["--json", dj], capture_output=True, text=True)
            if r.returncode != 0 or json.load(open(dj))["latency_cycles"]["value"] != line["latency_cycles"]:
                differs = True
                break
        if not differs:
            raise SystemExit("FAIL: Poisson maps of the same seeds give the clustered points' latencies")
    d = fresh(os.path.join(out, "points"))
    for line in (good[0], good[-1]):
        run([exe, "sweep", "--spec", study, "--out", d, "--point", str(line["index"])])
    if comparable(lines_of(d)) != comparable([good[0], good[-1]]):
        raise SystemExit("FAIL: --point gives other lines than the whole run")
    print("ok")


def pct(xs, p):
    xs = sorted(xs)
    h = p / 100 * (len(xs) - 1)
    lo = math.floor(h)
    if lo + 1 >= len(xs):
        return xs[-1]
    return xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


def mode_stats(exe, study, out):
    d = fresh(os.path.join(out, "stats"))
    run([exe, "sweep", "--spec", study, "--out", d, "--point", "0"])
    spec = json.load(open(os.path.join(d, "spec.json")))
    total, sid = spec["points"], spec["study"]
    # Known results: point i takes about 1 + i^2 / 7 us (whole cycles at 1.1 GHz; seeds differ), except every 4th point, which fails with one of two
    # reasons that differ only in numbers (counted together), and the points of the last setting, which are left out.
    lines, expect = [], {}
    for i in range(total - 3):
        s = {"index": i, "study": sid, "hash": point_hash(json.load(open(study)), i),
             "settings": point_settings(json.load(open(study)), i)}
        key = i // 3
        if i % 4 == 3:
            s.update(status="failed", failure={"stage": "map", "reason": f"needs {i} rows, has {i + 1}"})
            expect.setdefault(key, {"us": [], "fail": 0})["fail"] += 1
        else:
            cycles = round((1 + i * i / 7) * 1100)
            us = cycles / 1100  # (the cycles' time at the wafer's 1.1 GHz; the causes sum to the latency)
            s.update(status="ok", latency_us=us, latency_cycles=cycles, breakdown_cycles={"compute": cycles})
            expect.setdefault(key, {"us": [], "fail": 0})["us"].append(us)
        lines.append(json.dumps(s))
    open(os.path.join(d, "points.jsonl"), "w").write("\n".join(lines) + "\n")
    sj = os.path.join(out, "stats_summary.json")
    r = run([exe, "sweep", "--summarize", d, "--json", sj])
    rep = json.load(open(sj))
    rows = results.rows(rep["settings"])
    if len(rows) != total // 3:
        raise SystemExit(f"FAIL: {len(rows)} settings, expected {total // 3}")
    for key, row in enumerate(rows):
        e = expect.get(key, {"us": [], "fail": 0})
        if row["done"] != len(e["us"]) + e["fail"] or row["ok"] != len(e["us"]) or row["failed"] != e["fail"]:
            raise SystemExit(f"FAIL: setting {key}: counts {row}, expected {e}")
        if e["fail"] and row["failures"] != f"{e['fail']} x map: needs # rows, has #":
            raise SystemExit(f"FAIL: setting {key}: failures '{row['failures']}'")
        if e["us"]:
            want = {"mean [us]": sum(e["us"]) / len(e["us"]), "p5 [us]": pct(e["us"], 5), "p50 [us]": pct(e["us"], 50),
                    "p95 [us]": pct(e["us"], 95), "max [us]": max(e["us"])}
            for k, v in want.items():
                if not math.isclose(row[k], v, rel_tol=1e-12):
                    raise SystemExit(f"FAIL: setting {key}: {k} {row[k]}, expected {v}")
        elif row["mean [us]"] is not None:
            raise SystemExit(f"FAIL: setting {key} has no good point but a mean {row['mean [us]']}")
    if rep["points_done"]["value"] != total - 3:
        raise SystemExit(f"FAIL: points_done {rep['points_done']}")
    csv = open(os.path.join(d, "summary.csv")).read().splitlines()
    if len(csv) != len(rows) + 1 or not csv[0].startswith("kernel,hop_latency,density,points,done,ok,failed,mean [us]"):
        raise SystemExit(f"FAIL: summary.csv:\n" + "\n".join(csv[:3]))
    # Exact percentiles on a known set: seeds of 1, 2, 3, 4, 5 us -> p5 1.2, p50 3, p95 4.8.
    if not (math.isclose(pct([5, 1, 4, 2, 3], 5), 1.2) and math.isclose(pct([1, 2, 3, 4, 5], 95), 4.8)):
        raise SystemExit("FAIL: the test's own percentile")
    print(r.stdout)
    # A point ok without a latency a step could have (a string was counted a failure "? : ?", -1e308 went into the
    # mean): refused, one line.
    for bad in ("fast", -1e308, 0):
        last = json.loads(lines[-1])
        last.update(status="ok", latency_us=bad)
        with open(os.path.join(d, "points.jsonl"), "w") as f:
            f.write("\n".join(lines[:-1] + [json.dumps(last)]) + "\n")
        rr = subprocess.run([exe, "sweep", "--summarize", d], capture_output=True, text=True, timeout=120)
        if rr.returncode != 2 or len(rr.stderr.strip().splitlines()) != 1 or "is ok but holds no latency" not in rr.stderr:
            raise SystemExit(f"FAIL: a point ok with latency_us {bad}: exit {rr.returncode}: {rr.stderr!r}")
    print("ok")


# ---- the summary, computed again here from the points (independently of the program) ----------------------

PARAMS = {"hop_latency", "task_overhead", "stream_stage_latency", "vector_setup", "ramp_latency", "sram_bytes"}


def axes_of(spec_in):
    return [(k, [v["from"] + i for i in range(v["count"])] if isinstance(v, dict) else v)
            for k, v in spec_in.get("axes", {}).items()]


def settings_at(axes, i):
    picks = {}
    for k, vs in reversed(axes):
        picks[k] = vs[i % len(vs)]
        i //= len(vs)
    return picks


def point_settings(spec_in, i):
    """The settings a run writes for point i: the study's fixed ones first, then the axes in file order (a joint
    axis's object flattened)."""
    s, picks = dict(spec_in.get("fixed", {})), settings_at(axes_of(spec_in), i)
    for k, _ in axes_of(spec_in):
        if isinstance(picks[k], dict):
            s.update(picks[k])
        else:
            s[k] = picks[k]
    return s


def point_hash(spec_in, i):
    """The hash a run writes for point i: of its settings (point_settings) as compact JSON."""
    return fnv1a(compact(point_settings(spec_in, i)))


def cell(v):
    # (a joint axis's value, an object of settings: its values joined by '/', as the summary writes it; a number a
    # number, as the points' settings hold it: until 2026-12-07 the summary wrote every axis's value as text)
    if isinstance(v, dict):
        return "/".join(x if isinstance(x, str) else json.dumps(x) for x in v.values())
    return v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else json.dumps(v)


def placement_axis(spec_in):
    """The axis that sweeps the placement: "placement", or a joint axis whose objects set it; None if none."""
    for k, vs in axes_of(spec_in):
        if k == "placement" or (isinstance(vs[0], dict) and "placement" in vs[0]):
            return k
    return None


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def expected_groups(spec_in, by_index):
    axes = axes_of(spec_in)
    total = 1
    for _, vs in axes:
        total *= len(vs)
    names = [k for k, _ in axes if k != "seed"]
    groups = {}
    for i in range(total):
        s = settings_at(axes, i)
        key = tuple(json.dumps(s[k]) for k in names)
        g = groups.setdefault(key, {"key": {k: s[k] for k in names}, "points": 0, "done": 0, "us": [], "failed": 0,
                                    "repair": [], "usable": [], "hops": []})
        g["points"] += 1
        l = by_index.get(i)
        if l is None:
            continue
        g["done"] += 1
        if isinstance(l.get("repair"), dict) and "complete" in l["repair"]:
            g["repair"].append(bool(l["repair"]["complete"]))
        if "usable_tiles" in l:
            g["usable"].append(l["usable_tiles"])
        if "extra_hops" in l:
            g["hops"].append(l["extra_hops"])
        if l["status"] == "ok":
            g["us"].append(l["latency_us"])
        else:
            g["failed"] += 1
    return names, list(groups.values())


def close(a, b, what, rel=1e-9):
    if a is None or b is None:
        if a is not None or b is not None:
            raise SystemExit(f"FAIL: {what}: {a}, expected {b}")
        return
    if not math.isclose(a, b, rel_tol=rel, abs_tol=1e-12):
        raise SystemExit(f"FAIL: {what}: {a}, expected {b}")


def sensitivity_rows(rep):
    return results.rows(rep["sensitivity"]) if "sensitivity" in rep else []


def check_summary(spec_in, by_index, rep, d):
    """Every figure of the three tables against this file's own computation. Returns (best, slopes)."""
    names, groups = expected_groups(spec_in, by_index)
    rows = results.rows(rep["settings"])
    if len(rows) != len(groups):
        raise SystemExit(f"FAIL: {len(rows)} settings, expected {len(groups)}")
    for g, row in zip(groups, rows):
        what = f"setting {g['key']}"
        for k in names:
            if row[k] != cell(g["key"][k]):
                raise SystemExit(f"FAIL: {what}: column {k} is {row[k]}")
        if (row["points"], row["done"], row["ok"], row["failed"]) != (g["points"], g["done"], len(g["us"]), g["failed"]):
            raise SystemExit(f"FAIL: {what}: counts {row}")
        us = g["us"]
        close(row["mean [us]"], mean(us), what + " mean")
        for p in (5, 50, 95):
            close(row[f"p{p} [us]"], pct(us, p) if us else None, f"{what} p{p}")
        close(row["max [us]"], max(us) if us else None, what + " max")
        close(row["repair ok [%]"], 100 * sum(g["repair"]) / len(g["repair"]) if g["repair"] else None, what + " repair ok")
        close(row["usable tiles [tiles]"], mean(g["usable"]), what + " usable tiles")
        close(row["extra hops [hops]"], mean(g["hops"]), what + " extra hops")
    best = {}
    pa = placement_axis(spec_in)
    if pa:
        others = [k for k in names if k != pa]
        sets = {}
        for g in groups:
            sets.setdefault(tuple(json.dumps(g["key"][k]) for k in others), []).append(g)
        prow = iter(results.rows(rep["placements"]))
        brow = iter(results.rows(rep["best_placement"]))
        for key, gs in sets.items():
            ranked = [g for g in gs if g["done"] == g["points"] and len(g["us"]) == g["points"]]
            order = {id(g): n for n, g in enumerate(gs)}
            ranked.sort(key=lambda g: (mean(g["us"]), pct(g["us"], 50), order[id(g)]))
            b = ranked[0] if ranked else None
            best[key] = cell(b["key"][pa]) if b else None
            for g in gs:
                row = next(prow)
                what = f"placements {g['key']}"
                if row["placement"] != cell(g["key"][pa]) or any(row[k] != cell(g["key"][k]) for k in others):
                    raise SystemExit(f"FAIL: {what}: row {row}")
                close(row["mean [us]"], mean(g["us"]), what + " mean")
                close(row["p50 [us]"], pct(g["us"], 50) if g["us"] else None, what + " p50")
                close(row["vs best [%]"], 100 * (mean(g["us"]) / mean(b["us"]) - 1) if b and g["us"] else None, what + " vs best")
                if (row["best"] == "best") != (g is b):
                    raise SystemExit(f"FAIL: {what}: marked '{row['best']}', the best is {best[key]}")
                if g not in ranked and not row["best"].startswith("not ranked"):
                    raise SystemExit(f"FAIL: {what}: has failed or missing seeds but is marked '{row['best']}'")
            row = next(brow)
            if row["best"] != (best[key] or "-"):
                raise SystemExit(f"FAIL: best placement for {key}: {row['best']}, expected {best[key]}")
            if b:
                close(row["mean [us]"], mean(b["us"]), f"best for {key}")
    slopes = {}
    params = [k for k, vs in axes_of(spec_in) if k in PARAMS and len(vs) >= 2]
    srows = iter(sensitivity_rows(rep))
    for prm in params:
        others = [k for k in names if k != prm]
        sets = {}
        for g in groups:
            sets.setdefault(tuple(json.dumps(g["key"][k]) for k in others), []).append(g)
        for key, gs in sets.items():
            pts = [(g["key"][prm], mean(g["us"])) for g in gs if g["us"]]
            row = next(srows)
            what = f"sensitivity to {prm} at {key}"
            if row["parameter"] != prm or row[prm] != "swept" or any(row[k] != cell(gs[0]["key"][k]) for k in others):
                raise SystemExit(f"FAIL: {what}: row {row}")
            if len(pts) < 2:
                if row["slope [us per unit]"] is not None:
                    raise SystemExit(f"FAIL: {what}: a slope from fewer than two values")
                slopes[(prm, key)] = None
                continue
            mx, my = mean([x for x, _ in pts]), mean([y for _, y in pts])
            slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
            close(row["slope [us per unit]"], slope, what + " slope")
            close(row["elasticity [% per %]"], slope * mx / my, what + " elasticity")
            slopes[(prm, key)] = (slope, slope * mx / my)
    if next(srows, None) is not None:
        raise SystemExit("FAIL: more sensitivity rows than parameter axes x settings")
    for f, n in (("summary.csv", len(groups)), ("placements.csv", len(groups) if pa else None),
                 ("sensitivity.csv", len(sensitivity_rows(rep)) if params else None)):
        path = os.path.join(d, f)
        if n is None:
            if os.path.exists(path):
                raise SystemExit(f"FAIL: {f} written for a study without its axis")
            continue
        if not os.path.exists(path) or len(open(path).read().splitlines()) != n + 1:
            raise SystemExit(f"FAIL: {f}: missing or not {n} rows")
    return best, slopes


def mode_summary(exe, study, out):
    d = fresh(os.path.join(out, "summary"))
    run([exe, "sweep", "--spec", study, "--out", d, "--point", "0"])
    spec = json.load(open(os.path.join(d, "spec.json")))
    spec_in = json.load(open(study))
    axes = axes_of(spec_in)
    # Latencies (us, exact in binary): at density 100, layer-bands 10 + h/4, defect-aware 10, 10.5, 12 at h = 1, 2, 4
    # (so a tie with layer-bands at h = 2, which layer-bands wins on the p50), serpentine-bands fastest but its
    # seed 4 fails; at density 200, layer-bands 12 + h/4 with seeds 3 and 4 failed, defect-aware 11 + h/2,
    # serpentine-bands every seed failed. Seeds spread around the mean by e (mean 0).
    e1, e2 = [-0.25, 0, 0, 0.25], [-0.75, 0.25, 0.25, 0.25]
    lines, by_index = [], {}
    for i in range(spec["points"]):
        s = settings_at(axes, i)
        den, pl, h, seed = s["density"], s["placement"], s["hop_latency"], s["seed"]
        k = seed - 1
        us, fail = None, None
        if den == 100:
            if pl == "layer-bands":
                us = 10 + h / 4 + e1[k]
            elif pl == "defect-aware":
                us = {1: 10, 2: 10.5, 4: 12}[h] + e2[k]
            else:
                us, fail = (8 + h / 4 + e1[k], None) if seed != 4 else (None, "row 4 has 2 failed tiles")
        else:
            if pl == "layer-bands":
                us, fail = (12 + h / 4 + e1[k], None) if seed < 3 else (None, f"row {seed} has {seed + 1} failed tiles")
            elif pl == "defect-aware":
                us = 11 + h / 2 + e1[k]
            else:
                fail = f"needs {seed + 8} rows, has {seed}"
        l = {"study": spec["study"], "index": i, "hash": point_hash(spec_in, i), "settings": point_settings(spec_in, i),
             "repair": {"defects": seed, "complete": not (den == 200 and seed == 4)},
             "usable_tiles": 64 - seed if den == 100 else 60 - 2 * seed, "extra_hops": seed * (1 if den == 100 else 3)}
        if us is not None:
            l.update(status="ok", latency_us=us, latency_cycles=round(us * 1100), breakdown_cycles={"compute": round(us * 1100)})
        else:
            l.update(status="failed", failure={"stage": "map", "reason": fail})
        lines.append(json.dumps(l))
        by_index[i] = l
    open(os.path.join(d, "points.jsonl"), "w").write("\n".join(lines) + "\n")
    sj = os.path.join(out, "summary_known.json")
    r = run([exe, "sweep", "--summarize", d, "--json", sj])
    rep = json.load(open(sj))
    best, slopes = check_summary(spec_in, by_index, rep, d)
    # By hand: the best placements, the 19/28 slope, the repair rate at 200 and one row's percentiles.
    want = {("100", "1"): "defect-aware", ("100", "2"): "layer-bands", ("100", "4"): "layer-bands",
            ("200", "1"): "defect-aware", ("200", "2"): "defect-aware", ("200", "4"): "defect-aware"}
    for key, pl in want.items():
        if best[key] != pl:
            raise SystemExit(f"FAIL: best placement at density {key[0]}, hop latency {key[1]}: {best[key]}, expected {pl}")
    b = {(r_["density"], r_["hop_latency"]): r_ for r_ in results.rows(rep["best_placement"])}
    if "tie on the mean with defect-aware (lower p50 wins)" not in b[(100, 2)]["note"]:
        raise SystemExit(f"FAIL: the tie at density 100, hop latency 2 is not named: {b[(100, 2)]}")
    pr = {(r_["density"], r_["hop_latency"], r_["placement"]): r_ for r_ in results.rows(rep["placements"])}
    if pr[(100, 1, "serpentine-bands")]["best"] != "not ranked: 1 of 4 seeds failed":
        raise SystemExit(f"FAIL: serpentine-bands with a failed seed: {pr[(100, 1, 'serpentine-bands')]}")
    s = {(r_["density"], r_["placement"]): r_ for r_ in results.rows(rep["sensitivity"])}
    close(s[(100, "defect-aware")]["slope [us per unit]"], 19 / 28, "slope by hand (defect-aware, density 100)", 1e-12)
    close(s[(100, "layer-bands")]["slope [us per unit]"], 0.25, "slope by hand (layer-bands, density 100)", 1e-12)
    close(s[(100, "layer-bands")]["elasticity [% per %]"], 0.25 * (7 / 3) / (31.75 / 3), "elasticity by hand", 1e-12)
    close(s[(200, "defect-aware")]["slope [us per unit]"], 0.5, "slope by hand (defect-aware, density 200)", 1e-12)
    if s[(200, "serpentine-bands")]["slope [us per unit]"] is not None:
        raise SystemExit("FAIL: a slope for a placement with no good point")
    st = {(r_["density"], r_["placement"], r_["hop_latency"]): r_ for r_ in results.rows(rep["settings"])}
    row = st[(200, "layer-bands", 1)]
    close(row["repair ok [%]"], 75.0, "repair ok by hand", 1e-12)
    close(row["p50 [us]"], 12.25 - 0.125, "p50 by hand (12, 12.25)", 1e-12)
    close(row["usable tiles [tiles]"], 55.0, "usable tiles by hand (58, 56, 54, 52)", 1e-12)
    close(row["extra hops [hops]"], 7.5, "extra hops by hand (3, 6, 9, 12)", 1e-12)
    if row["failures"] != "2 x map: row # has # failed tiles":
        raise SystemExit(f"FAIL: failures {row['failures']}")
    row = st[(100, "layer-bands", 1)]  # 10, 10.25, 10.25, 10.5
    close(row["p5 [us]"], 10.0375, "p5 by hand", 1e-12)
    close(row["p95 [us]"], 10.4625, "p95 by hand", 1e-12)
    for word in ("placements", "best_placement", "sensitivity", "not ranked"):
        if word not in r.stdout:
            raise SystemExit(f"FAIL: the printed summary has no '{word}':\n{r.stdout}")
    print(r.stdout)
    print("ok")


def mode_study(exe, study, out):
    d = fresh(os.path.join(out, "study"))
    sj = os.path.join(out, "study_summary.json")
    run([exe, "sweep", "--spec", study, "--out", d, "--jobs", "2", "--json", sj])
    spec_in = json.load(open(study))
    by_index = {l["index"]: l for l in lines_of(d)}
    rep = json.load(open(sj))
    best, slopes = check_summary(spec_in, by_index, rep, d)
    if not any(best.values()):
        raise SystemExit(f"FAIL: no placement ranked anywhere: {rep['best_placement']}")
    good = [v for v in slopes.values() if v is not None]
    if not good or any(sl <= 0 for sl, _ in good):
        raise SystemExit(f"FAIL: the latency should grow with the hop latency: {slopes}")
    # Density 0: a perfect map, every repair complete, no extra hop.
    for row in results.rows(rep["settings"]):
        if row["density"] == "0" and (row["repair ok [%]"] != 100 or row["extra hops [hops]"] != 0):
            raise SystemExit(f"FAIL: density 0: {row}")
    print(f"best placements: {best}")
    print(f"slopes and elasticities: {slopes}")
    print("ok")


def gate_table(d):
    """The memory table of this host's processes of the study in `d` (apps/memory_gate.h)."""
    host = "".join(c if c.isalnum() or c in "._-" else "_" for c in socket.gethostname()) or "localhost"
    return os.path.join(d, ".memory-" + host)


def start_time(pid):
    text = open(f"/proc/{pid}/stat").read()
    return int(text[text.rindex(")") + 2:].split()[19])  # field 22


def gate_rows(d):
    path = gate_table(d)
    if not os.path.exists(path):
        return []
    return [l.split() for l in open(path) if l.strip() and not l.startswith("#")]


def mode_memory(exe, study, out):
    """Processes of one study take turns for memory (apps/memory_gate.h), under WAFER_EMU_MEMORY_MB=9: a point's
    records (one small wafer at a time, 6-7 MiB) fit and two points' do not. Another process is played by a
    `sleep` whose line the test writes into the table: a point waits while it is admitted and its need and the
    point's exceed 9 MiB, and runs at once when they fit (both sides of the limit, to the byte); it waits while
    the other is idle and does not fit; a line of a process that is gone, or of one that waits, holds nothing
    back; a point that does not fit alone is refused as `decode` refuses it. On a terminal, --jobs 2's progress
    line counts the workers waiting for memory. Then --jobs 2 gives --jobs 1's lines, and every process takes its
    line out of the table when it ends."""
    limit = 9 << 20
    env = dict(os.environ, WAFER_EMU_MEMORY_MB="9")

    def with_other(name, state, need, seconds, point=0, mb="9", since=1):
        d = fresh(os.path.join(out, name))
        run([exe, "sweep", "--spec", study, "--out", d, "--point", "3"])  # (creates the study directory)
        other = subprocess.Popen(["sleep", str(seconds)])
        try:
            with open(gate_table(d), "w") as f:
                f.write(f"{other.pid} {start_time(other.pid)} {state} {need} 0 0 {since}\n")
            t0 = time.time()
            seen = []  # this point's own lines in the table while it runs
            p = subprocess.Popen([exe, "sweep", "--spec", study, "--out", d, "--point", str(point)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(env, WAFER_EMU_MEMORY_MB=mb))
            while p.poll() is None:
                seen += [r for r in gate_rows(d) if r[0] == str(p.pid)]
                time.sleep(0.05)
            wall = time.time() - t0
            o, e = p.communicate()
            if p.returncode != 0:
                raise SystemExit(f"FAIL: {name}: exit {p.returncode}\n{o}\n{e}")
        finally:
            other.kill()
            other.wait()
        line = [l for l in lines_of(d) if l["index"] == point][0]
        return line, wall, seen

    # The point's need, from its own line while it waits for an admitted process it cannot run beside.
    line, wall, seen = with_other("held", "admitted", 4 << 20, 1.5)
    waits = [r for r in seen if r[2] == "waiting"]
    if line["status"] != "ok" or line["wall_s"]["memory_wait"] < 1.0 or not waits:
        raise SystemExit(f"FAIL: beside an admitted process needing 4 MiB the point should wait until it ends: "
                         f"{line['status']}, waited {line['wall_s']['memory_wait']} s, its table lines {seen}")
    need = int(waits[0][3])
    if not (6 << 20) <= need <= (7 << 20):
        raise SystemExit(f"FAIL: the point asked for {need} bytes, expected one small wafer's records (6-7 MiB)")
    print(f"held back: need {need} bytes, waited {line['wall_s']['memory_wait']:.2f} s")
    # The limit: the other's need and this point's exactly 9 MiB run at once; one byte more waits.
    line, wall, _ = with_other("fits", "admitted", limit - need, 3)
    if line["status"] != "ok" or line["wall_s"]["memory_wait"] != 0 or wall > 2.5:
        raise SystemExit(f"FAIL: {need} + {limit - need} bytes fit 9 MiB: waited {line['wall_s']['memory_wait']} s")
    line, wall, _ = with_other("over", "admitted", limit - need + 1, 1.5)
    if line["status"] != "ok" or line["wall_s"]["memory_wait"] < 1.0:
        raise SystemExit(f"FAIL: {need} + {limit - need + 1} bytes exceed 9 MiB: waited {line['wall_s']['memory_wait']} s")
    print("the limit: at it runs at once, one byte over waits")
    # An idle process may hold memory it keeps: the point waits for it (it would fit were the other gone).
    line, wall, _ = with_other("idle", "idle", 0, 1.5, mb="6")
    if line["status"] != "failed" or line["wall_s"]["memory_wait"] < 1.0:
        raise SystemExit(f"FAIL: beside an idle process the point should wait, then be refused alone: {line}")
    # Alone it does not fit: refused as decode refuses it, with no wait.
    line, wall, _ = with_other("alone", "gone", 0, 0.1, mb="6")
    if line["status"] != "failed" or line["wall_s"]["memory_wait"] != 0 or \
            "the step would not fit in memory" not in line["failure"]["reason"]:
        raise SystemExit(f"FAIL: a point that does not fit alone should be refused at once: {line}")
    # A line of a process that waits (it keeps nothing) holds nothing back, nor does one of a process gone.
    line, wall, _ = with_other("waiter", "waiting", 1 << 40, 3)
    if line["status"] != "ok" or line["wall_s"]["memory_wait"] != 0 or wall > 2.5:
        raise SystemExit(f"FAIL: a waiting process held the point back: {line['wall_s']}")
    d = fresh(os.path.join(out, "dead"))
    run([exe, "sweep", "--spec", study, "--out", d, "--point", "3"])
    other = subprocess.Popen(["sleep", "0"])
    st = start_time(other.pid)
    other.wait()
    with open(gate_table(d), "w") as f:
        f.write(f"{other.pid} {st} admitted {1 << 40} 0 0 0\n")
    r = subprocess.run([exe, "sweep", "--spec", study, "--out", d, "--point", "0"], capture_output=True, text=True,
                       env=env, timeout=60)
    line = [l for l in lines_of(d) if l["index"] == 0][0]
    if r.returncode != 0 or line["status"] != "ok" or line["wall_s"]["memory_wait"] != 0:
        raise SystemExit(f"FAIL: the line of a process that is gone held the point back: {line}")
    print("idle: waits; waiting or gone: holds nothing back; alone and too large: refused")
    # On a terminal, the progress line of --jobs 2 says how many workers wait for memory (both, while the
    # other process is admitted with 4 MiB).
    d = fresh(os.path.join(out, "progress"))
    run([exe, "sweep", "--spec", study, "--out", d, "--point", "3"])
    other = subprocess.Popen(["sleep", "2"])
    try:
        with open(gate_table(d), "w") as f:
            f.write(f"{other.pid} {start_time(other.pid)} admitted {4 << 20} 0 0 1\n")
        master, slave = pty.openpty()
        p = subprocess.Popen([exe, "sweep", "--spec", study, "--out", d, "--jobs", "2"], stdout=subprocess.DEVNULL,
                             stderr=slave, env=env)
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # (EIO: the terminal's other side is closed)
                break
            if not chunk:
                break
            shown += chunk
        os.close(master)
        p.wait(timeout=60)
    finally:
        other.kill()
        other.wait()
    text = shown.decode(errors="replace")
    if p.returncode != 0 or not re.search(r"sweep: \d+/4 points \(0 failed\).*, [12] waiting for memory", text):
        raise SystemExit(f"FAIL: the progress line should show the workers waiting for memory (exit {p.returncode}):\n{text}")
    print("progress: " + re.findall(r"[12] waiting for memory", text)[0])
    # Two workers under the same limit: the same lines as one; the table empty once they end.
    got = {}
    for jobs in (1, 2):
        d = fresh(os.path.join(out, f"jobs{jobs}"))
        subprocess.run([exe, "sweep", "--spec", study, "--out", d, "--jobs", str(jobs)], check=True, capture_output=True,
                       env=env, timeout=120)
        lines = lines_of(d)
        exactly_once(lines, 4, f"--jobs {jobs} under 9 MiB")
        if any(l["status"] != "ok" for l in lines):
            raise SystemExit(f"FAIL: --jobs {jobs} under 9 MiB: a point failed: {[l.get('failure') for l in lines]}")
        if gate_rows(d):
            raise SystemExit(f"FAIL: --jobs {jobs}: lines left in the memory table: {gate_rows(d)}")
        got[jobs] = comparable(lines)
    if got[1] != got[2]:
        raise SystemExit("FAIL: --jobs 1 and --jobs 2 differ under a memory limit")
    print("ok")


def main():
    mode, exe, study, out = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    if mode == "jobs":
        mode_jobs(exe, study, out, sys.argv[5])
    elif mode == "resume":
        mode_resume(exe, study, out)
    elif mode == "decode":
        mode_decode(exe, study, out)
    elif mode == "ranks":
        mode_ranks(exe, study, out)
    elif mode == "mpirun":
        mode_mpirun(exe, study, out, sys.argv[5])
    elif mode == "stats":
        mode_stats(exe, study, out)
    elif mode == "summary":
        mode_summary(exe, study, out)
    elif mode == "study":
        mode_study(exe, study, out)
    elif mode == "memory":
        mode_memory(exe, study, out)
    else:
        raise SystemExit(f"unknown mode {mode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
