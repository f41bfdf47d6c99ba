#!/usr/bin/env python3
"""wafer-emu table --jobs N: the steps on N worker processes (apps/table_jobs.h), docs/tables.md.

table_jobs_check.py same WAFER_EMU OUTDIR
    a grid on the tiny wafer with chunked prompts (chunks shared between prompts) and points that do not map,
    with --jobs 1, 2 and 3: every file byte for byte (meta.yaml's time stamp aside), the same progress lines
    (one per point, in another order), the same point counts, steps_emulated and chunks_reused; nothing left in
    TMPDIR; prompts whose chunks are chunked again (a chunk refused at its own context) alike with --jobs 1
    and 2; the workers' folder a run stopped by a signal left in TMPDIR removed by the next run.
table_jobs_check.py kill WAFER_EMU OUTDIR
    a worker killed mid-run: exit 2, a one-line error naming the worker, no folder at --out and no temporary
    one beside it or in TMPDIR (the workers' memory table), no worker process left.
"""
import os, re, shutil, signal, subprocess, sys, time

from results import table_files


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


def figures(stdout):
    got = {}
    for k in ("points", "points_emulated", "points_not_mapped", "steps_emulated", "chunks_reused", "jobs"):
        m = re.search(rf"^\s*{k}\s+(\d+)", stdout, re.M)
        if not m:
            fail(f"no {k} in the report:\n{stdout}")
        got[k] = int(m.group(1))
    return got


def mode_same(exe, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    # Prompts of 256 and 512 run in chunks on the tiny wafer (chunks ending at 512 shared); batch 16 at
    # context 512 does not map.
    args = ["table", "--wafer", "tiny", "--model", "tiny-llama", "--contexts", "128,512", "--batches", "1,4,16",
            "--prefill-tokens", "16,256,512"]
    got = {}
    tmp = os.path.join(out, "tmp")  # (the workers' memory table goes in a folder of the run's own in TMPDIR)
    os.makedirs(tmp)
    for jobs in (1, 2, 3):
        d = os.path.join(out, f"jobs{jobs}")
        r = subprocess.run([exe] + args + ["--jobs", str(jobs), "--out", d], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, TMPDIR=tmp))
        if os.listdir(tmp):
            fail(f"--jobs {jobs}: left {os.listdir(tmp)} in TMPDIR")
        if r.returncode != 0:
            fail(f"--jobs {jobs}: exit {r.returncode}\n{r.stderr}")
        progress = sorted(re.sub(r"^table: \[\d+/", "table: [", re.sub(r" \(.*s in all\)$", "", l))
                          for l in r.stderr.splitlines())
        got[jobs] = (table_files(d), figures(r.stdout), progress)
        print(f"--jobs {jobs}: {len(got[jobs][0])} files, {got[jobs][1]}")
        if any(n.startswith(f".jobs{jobs}.tmp") for n in os.listdir(out)):
            fail(f"--jobs {jobs}: a temporary folder is left")
    ref_files, ref_fig, ref_progress = got[1]
    if ref_fig["points_not_mapped"] == 0 or ref_fig["chunks_reused"] == 0:
        fail(f"the grid should have points not mapped and chunks reused: {ref_fig}")
    if len(ref_progress) != ref_fig["points"]:
        fail(f"{len(ref_progress)} progress lines for {ref_fig['points']} points")
    if b"chunks" not in ref_files["table.csv"] or not ref_files["skipped.txt"]:
        fail("table.csv or skipped.txt is empty")
    for jobs in (2, 3):
        files, fig, progress = got[jobs]
        if sorted(files) != sorted(ref_files):
            fail(f"--jobs {jobs} writes other files: {sorted(files)} vs {sorted(ref_files)}")
        for k in ref_files:
            if files[k] != ref_files[k]:
                fail(f"--jobs {jobs}: {k} differs from --jobs 1's")
        for k in ("points", "points_emulated", "points_not_mapped", "steps_emulated", "chunks_reused"):
            if fig[k] != ref_fig[k]:
                fail(f"--jobs {jobs}: {k} {fig[k]}, --jobs 1 {ref_fig[k]}")
        if fig["jobs"] != jobs:
            fail(f"--jobs {jobs}: the report says jobs {fig['jobs']}")
        # The per-point time (one process) is not in the --jobs lines; the rest is the same.
        strip = lambda ls: [re.sub(r" \([0-9.]+ s, ", " (", l) for l in ls]
        if sorted(strip(progress)) != sorted(strip(ref_progress)):
            fail(f"--jobs {jobs}: other progress lines:\n" + "\n".join(progress) + "\n--jobs 1:\n" + "\n".join(ref_progress))
    # Prompts chunked again: at context 700 on small, 34 tokens map but a chunk of them at 674 does not (the
    # layers' bands are cut otherwise there), so 64 and 100 tokens run in chunks of 33 (docs/mapping.md 3c);
    # the workers' plans chunk them again as one process does: the same files, nothing skipped.
    args = ["table", "--wafer", "small", "--model", "small-llama", "--contexts", "700", "--batches", "1",
            "--prefill-tokens", "64,100"]
    files = {}
    for jobs in (1, 2):
        d = os.path.join(out, f"again{jobs}")
        r = subprocess.run([exe] + args + ["--jobs", str(jobs), "--out", d], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            fail(f"chunked again, --jobs {jobs}: exit {r.returncode}\n{r.stderr}")
        files[jobs] = table_files(d)
        if files[jobs]["skipped.txt"] or b"prefill,step,100,700,1,33,4," not in files[jobs]["table.csv"]:
            fail(f"chunked again, --jobs {jobs}: a point skipped or not in 4 chunks of 33:\n{r.stderr}")
    if files[1] != files[2]:
        fail("chunked again: --jobs 2 writes other files than --jobs 1")
    # The workers' folder of a run stopped by a signal (named with its process id) is removed by the next run,
    # not a live run's.
    tmp = os.path.join(out, "stale")
    os.makedirs(tmp)
    dead = subprocess.Popen(["true"])  # (a process id that is no longer alive)
    dead.wait()
    os.makedirs(os.path.join(tmp, f"wafer-emu-table-{dead.pid}-AbCdEf"))
    open(os.path.join(tmp, f"wafer-emu-table-{dead.pid}-AbCdEf", ".memory-host"), "w").close()
    os.makedirs(os.path.join(tmp, f"wafer-emu-table-{os.getpid()}-GhIjKl"))
    r = subprocess.run([exe] + args + ["--jobs", "2", "--out", os.path.join(out, "stale_out")], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, TMPDIR=tmp))
    if r.returncode != 0 or sorted(os.listdir(tmp)) != [f"wafer-emu-table-{os.getpid()}-GhIjKl"]:
        fail(f"a stopped run's folder: exit {r.returncode}, TMPDIR holds {sorted(os.listdir(tmp))}")
    print("ok")


def children(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append(int(d))
    return kids


def alive(pid):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def mode_kill(exe, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tables = os.path.join(out, "tables")
    tmp = os.path.join(out, "tmp")
    os.makedirs(tmp)
    # About a second or two of steps on the small wafer.
    p = subprocess.Popen([exe, "table", "--wafer", "small", "--model", "small-llama", "--contexts", "128,512,2048",
                          "--batches", "1,4,16", "--prefill-tokens", "16,256,2048", "--jobs", "2", "--out", tables],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, TMPDIR=tmp))
    deadline = time.time() + 30
    kids = []
    while time.time() < deadline and len(kids) < 2 and p.poll() is None:
        kids = children(p.pid)
        time.sleep(0.002)
    if len(kids) < 2:
        p.kill()
        fail(f"no two workers seen (exit {p.poll()})")
    time.sleep(0.2)
    os.kill(kids[0], signal.SIGKILL)
    try:
        stdout, stderr = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("table did not end after a worker was killed (a hang)")
    print(stderr.strip())
    if p.returncode != 2:
        fail(f"exit {p.returncode}, expected 2 (did the run end before the kill?)\n{stderr}")
    lines = stderr.strip().splitlines()
    errors = [l for l in lines if not l.startswith("table: [")]
    if len(errors) != 1 or not re.search(r"error: --jobs: worker \d of 2 \(pid \d+\) was killed by signal 9", errors[0]):
        fail(f"expected one error line naming the killed worker, got {errors}")
    if os.path.exists(tables) or any(n.startswith(".tables.tmp") for n in os.listdir(out)) or os.listdir(tmp):
        fail(f"a folder is left: {os.listdir(out)}, in TMPDIR {os.listdir(tmp)}")
    left = [k for k in kids if alive(k)] + [k for k in children(p.pid) if alive(k)]
    if left:
        fail(f"worker processes left: {left}")
    print("ok")


def main():
    mode, exe, out = sys.argv[1], sys.argv[2], sys.argv[3]
    {"same": mode_same, "kill": mode_kill}[mode](exe, out)


if __name__ == "__main__":
    main()
