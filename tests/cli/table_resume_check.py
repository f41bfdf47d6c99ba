#!/usr/bin/env python3
"""`table` resumes a run that was stopped, from its journal (`.<out>.partial.jsonl` beside --out).

table_resume_check.py WAFER_EMU OUT_DIR JOBS

With --jobs JOBS:
- a table run in one go (the reference);
- the same table killed (SIGKILL to its process group) once its journal holds two points, and a half-written
  line added to the journal as a process killed mid-line leaves it: nothing at --out, the journal kept;
- the same command again: it says it resumes, its JSON counts the points taken from the journal (every whole line,
  the half line dropped), the files are the reference's byte for byte (meta.yaml's time stamp aside), and the
  journal is gone;
- refusals, each one line and exit 2, nothing at --out, the journal left as it was: a journal of other settings, a
  journal another process holds (locked), a damaged line before the last, records no run writes (a negative
  operator time, a latency its operators do not sum to, no phase, a point twice with other figures); but a journal
  of no point (a run stopped before its first) of other settings is started afresh.
"""
import fcntl, filecmp, json, os, re, shutil, subprocess, sys

from journal_util import fail, journal_of, killed_when, refused, whole_lines

ARGS = ["--wafer", "small", "--model", "small-llama", "--contexts", "128,512,2048", "--batches", "1,4,16",
        "--prefill-tokens", "16,256,2048"]


def table(exe, out, jobs, extra=(), check=True):
    r = subprocess.run([exe, "table"] + ARGS + list(extra) + ["--jobs", str(jobs), "--out", out, "--json", out.rstrip("/") + ".json"],
                       capture_output=True, text=True, timeout=600)
    if check and r.returncode != 0:
        fail(f"exit {r.returncode}: {r.stderr}")
    return r


def lines_of(path):
    with open(path) as f:
        return f.read().splitlines()


def same_files(a, b):
    bad = []
    for root, _, files in os.walk(a):
        for name in files:
            fa = os.path.join(root, name)
            fb = os.path.join(b, os.path.relpath(fa, a))
            if not os.path.exists(fb):
                bad.append(f"{fb} missing")
            elif name == "meta.yaml":
                strip = lambda p: [l for l in lines_of(p) if not l.startswith("profiled_at:")]
                if strip(fa) != strip(fb):
                    bad.append(f"{name} differs")
            elif not filecmp.cmp(fa, fb, shallow=False):
                bad.append(f"{os.path.relpath(fa, a)} differs")
    count = lambda d: sum(len(f) for _, _, f in os.walk(d))
    if count(a) != count(b):
        bad.append(f"{count(a)} files against {count(b)}")
    return bad


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    exe, base, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    full, part = os.path.join(base, "full"), os.path.join(base, "part")
    table(exe, full, jobs)
    if os.path.exists(journal_of(full)):
        fail("a run in one go left its journal")
    points = json.load(open(full + ".json"))["points"]["value"]
    # (--out with a trailing slash names the same folder: its journal and temporary folder lie beside it)
    slash = os.path.join(base, "slash")
    table(exe, slash + "/", jobs)
    if sorted(os.listdir(slash)) != sorted(os.listdir(full)) or os.path.exists(journal_of(slash)):
        fail(f"--out {slash}/ holds {sorted(os.listdir(slash))}, the journal left: {os.path.exists(journal_of(slash))}")
    bad = same_files(full, slash)
    if bad:
        fail(f"--out {slash}/ differs: " + "; ".join(bad))

    # Killed once two points are in its journal.
    killed_when([exe, "table"] + ARGS + ["--jobs", str(jobs), "--out", part], part, 3, "two points: the grid is too small")
    if os.path.exists(part):
        fail(f"{part} exists after the kill")
    left = lambda: [n for n in os.listdir(base) if n.startswith(".part.tmp-")]
    if not left():
        fail("the killed run left no temporary folder: the check that a resumed run removes it tests nothing")
    done_before = whole_lines(journal_of(part)) - 1
    if not 2 <= done_before < points:
        fail(f"the journal holds {done_before} points of {points}")
    with open(journal_of(part), "a") as f:
        f.write('{"phase": "decode", "tokens": 1, "cont')  # (a line cut short)

    # The refusals, the journal left as it is.
    other = os.path.join(base, "other")
    shutil.copy(journal_of(part), journal_of(other))
    refused(lambda: table(exe, other, jobs, ["--placement", "serpentine-bands"], check=False), other,
            r"is of a table with other settings", "other settings")
    os.remove(journal_of(other))
    with open(journal_of(part)) as f:
        held = f.fileno()
        fcntl.flock(held, fcntl.LOCK_EX)
        refused(lambda: table(exe, part, jobs, check=False), part, r"another table run holds its journal", "a journal held")
    damaged = os.path.join(base, "damaged")
    lines = lines_of(journal_of(part))
    with open(journal_of(damaged), "w") as f:
        f.write("\n".join([lines[0], "{not json", lines[1]]) + "\n")
    refused(lambda: table(exe, damaged, jobs, check=False), damaged, r"has a damaged line 2", "a damaged line")
    os.remove(journal_of(damaged))
    # Records no run writes, each refused in the table's words (not the JSON reader's): a negative operator time (it
    # was taken, and table.csv printed 2^64 - 5), a latency its operators do not sum to, a record without its phase,
    # a second record of a point with other figures.
    rec = next(json.loads(l) for l in lines[1:] if '"ops"' in l)
    neg = dict(rec, ops=[[rec["ops"][0][0], -5]] + rec["ops"][1:])
    off = dict(rec, latency=rec["latency"] + 1)
    nophase = {k: v for k, v in rec.items() if k != "phase"}
    twice = dict(rec, latency=rec["latency"] + 7, ops=[[rec["ops"][0][0], rec["ops"][0][1] + 7]] + rec["ops"][1:])
    for bad, pattern, what in ((neg, r"line 2: an operator's entry \[.*,-5\] that is no \[name, cycles\]", "a negative time"),
                               (off, r"line 2: operators' cycles that sum to \d+, not its latency", "a latency edited"),
                               (nophase, r"line 2: a record without a 'phase' name", "a record without its phase"),
                               (twice, r"line 3: a second record of a point, with other figures", "a point recorded twice")):
        edited = os.path.join(base, "edited")
        with open(journal_of(edited), "w") as f:
            f.write("\n".join([lines[0], json.dumps(rec if bad is twice else bad)] + ([json.dumps(bad)] if bad is twice else [])) + "\n")
        refused(lambda: table(exe, edited, jobs, check=False), edited, pattern, what)
        os.remove(journal_of(edited))

    # A point that takes less than the rows of its tokens and sequences (taken at the smallest context) would need a
    # negative attention row: it writes 0, says so on stderr and counts it in attention_rows_at_zero. No emulated
    # table has reached it; a journal's record of a decode step at context 512 whose every operator took a cycle does.
    if jobs == 1:
        short = os.path.join(base, "short")
        dec = next(json.loads(l) for l in lines[1:] if '"ops"' in l and json.loads(l).get("phase") == "decode")
        fast = dict(dec, context=512, ops=[[name, 1] for name, _ in dec["ops"]], latency=len(dec["ops"]))
        with open(journal_of(short), "w") as f:
            f.write("\n".join([lines[0], json.dumps(fast)]) + "\n")
        r = table(exe, short, jobs)
        zero = json.load(open(short + ".json"))["attention_rows_at_zero"]["value"]
        att = [l for l in lines_of(os.path.join(short, "llmservingsim", "wafer-emu-small", "test", "small-llama", "default",
                                                "tp1", "attention.csv"))
               if l.startswith(f"0,0,{dec['batch']},512,")]
        if zero != 1 or "1 point(s) take less time than the rows of their tokens" not in r.stderr or att != [f"0,0,{dec['batch']},512,0"]:
            fail(f"a point shorter than its rows: attention_rows_at_zero {zero}, its row {att}, stderr {r.stderr!r}")
        print(f"ok: a point shorter than its rows writes {att[0]} and is counted")

    # A journal of no point (a run stopped before its first) is started afresh, whatever its settings.
    fresh = os.path.join(base, "fresh")
    with open(journal_of(fresh), "w") as f:
        f.write(json.dumps({"settings": "another table's"}) + "\n")
    r = table(exe, fresh, jobs)
    if "resuming" in r.stderr or os.path.exists(journal_of(fresh)) or same_files(full, fresh):
        fail(f"a journal of no point was not started afresh: {r.stderr}")
    print("ok: a journal of no point started afresh")

    # Resumed.
    r = table(exe, part, jobs)
    if not re.search(rf"table: resuming from .*: {done_before} of {points} points done before", r.stderr):
        fail(f"no line saying it resumes {done_before} points: {r.stderr}")
    resumed = json.load(open(part + ".json"))["points_resumed"]["value"]
    if resumed != done_before:
        fail(f"points_resumed {resumed}, the journal held {done_before}")
    if os.path.exists(journal_of(part)):
        fail("the journal is left after the tables are in place")
    if left():
        fail(f"the killed run's temporary folder is left after the resumed run: {left()}")
    bad = same_files(full, part)
    if bad:
        fail("the resumed tables differ from the reference: " + "; ".join(bad))
    print(f"ok: killed after {done_before} of {points} points, resumed to the same files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
