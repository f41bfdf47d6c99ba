#!/usr/bin/env python3
"""`defects` sums its maps the same on any number of threads, and resumes a study that was stopped from its journal
(`.<json>.partial.jsonl` beside --json).

defects_resume_check.py WAFER_EMU OUT_DIR

- the study in one go with --threads 1 (the reference; it leaves no journal) and with --threads 2: the same output
  and JSON, byte for byte;
- the study killed (SIGKILL) on one thread once its journal holds a record of its sums (the first comes after a
  second: a window of about 1.5 s in a release build), and a half-written line added as a process killed mid-line
  leaves it: no JSON written, the journal kept;
- refusals, each one line and exit 2, no JSON written, the journal left as it was: a journal of other settings (another
  repair scheme), a journal another process holds (locked), a damaged line before the last, a record whose sums
  no run could make;
- the same command again with --threads 2: it says from how many maps it resumes, its output and JSON are the
  reference's byte for byte, and the journal is gone.
"""
import fcntl, json, os, re, shutil, subprocess, sys

from journal_util import fail, journal_of, killed_when, refused

ARGS = ["defects", "--wafer", "small", "--density", "3", "--seed", "11", "--maps", "60000"]


def run(exe, json_path, extra=(), check=True):
    r = subprocess.run([exe] + ARGS + list(extra) + ["--json", json_path], capture_output=True, text=True, timeout=900)
    if check and r.returncode != 0:
        fail(f"exit {r.returncode}: {r.stderr}")
    return r


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    exe, base = sys.argv[1], sys.argv[2]
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    ref, two, part = (os.path.join(base, n) for n in ("ref.json", "two.json", "part.json"))
    a = run(exe, ref, ["--threads", "1"])
    b = run(exe, two, ["--threads", "2"])
    if os.path.exists(journal_of(ref)) or os.path.exists(journal_of(two)):
        fail("a study in one go left its journal")
    if a.stdout != b.stdout or open(ref, "rb").read() != open(two, "rb").read():
        fail("--threads 1 and --threads 2 give different figures")
    print("ok: --threads 1 and 2 give the same output and JSON")

    # Killed once its journal holds a record of its sums.
    killed_when([exe] + ARGS + ["--threads", "1", "--json", part], part, 2, "a record of its sums: too few maps")
    if os.path.exists(part):
        fail(f"{part} exists after the kill")
    lines = open(journal_of(part)).read().splitlines()
    done_before = json.loads(lines[-1])["maps"]
    if not 0 < done_before < 60000:
        fail(f"the journal's last record holds {done_before} maps of 60000")
    with open(journal_of(part), "a") as f:
        f.write('{"complete": 12, "extra_hops": 3')  # (a line cut short)

    # The refusals, the journal left as it is.
    other = os.path.join(base, "other.json")
    shutil.copy(journal_of(part), journal_of(other))
    refused(lambda: run(exe, other, ["--repair", "spare-rows-cols"], check=False), other,
            r"--json: the journal .* is of a defect study with other settings", "other settings")
    os.remove(journal_of(other))
    with open(journal_of(part)) as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        refused(lambda: run(exe, part, check=False), part, r"--json: another defect study run holds its journal",
                "a journal held")
    damaged = os.path.join(base, "damaged.json")
    with open(journal_of(damaged), "w") as f:
        f.write("\n".join([lines[0], "{not json", lines[1]]) + "\n")
    refused(lambda: run(exe, damaged, check=False), damaged, r"has a damaged line 2", "a damaged line")
    os.remove(journal_of(damaged))
    # A record whose sums no run could make (more zero-defect maps than maps): refused, not taken (it gave a
    # fraction above 1).
    edited = os.path.join(base, "edited.json")
    # (and sums beyond the wafer: 9e15 usable tiles gave a mean of 4.5e12 on a wafer of 893,064, 9e9 failed tiles one
    # above the physical grid's, no links with 1e15 extra hops a mean of 2e6 hops a link; a key missing was said in the
    # JSON library's words)
    for name, edit, want in (("zero", lambda r: r.update(zero=r["maps"] + 5), r"its zero-defect count cannot come from the maps it counts"),
                             ("usable", lambda r: r.update(sum_usable=9e15), r"its usable tiles cannot come from the maps it counts"),
                             ("failed", lambda r: r.update(sum_failed_tiles=9e9), r"its failed tiles cannot come from the maps it counts"),
                             ("no links", lambda r: r.update(links=0, no_path=0, extra_hops=10**15), r"its hop counts cannot come from the maps it counts"),
                             ("longest", lambda r: r.update(max_extra=10**9), r"its hop counts cannot come from the maps it counts"),
                             ("links", lambda r: r.update(links=10**15), r"its link counts cannot come from the maps it counts"),
                             ("missing", lambda r: r.pop("maps"), r"does not fit this study \(no 'maps'\)"),
                             ("text", lambda r: r.update(links="many"), r"\('links' is \"many\", no count\)")):
        rec = json.loads(lines[-1])
        edit(rec)
        with open(journal_of(edited), "w") as f:
            f.write("\n".join([lines[0], json.dumps(rec)]) + "\n")
        refused(lambda: run(exe, edited, check=False), edited, want, f"a record edited ({name})")
        os.remove(journal_of(edited))

    # Resumed, on two threads.
    r = run(exe, part, ["--threads", "2"])
    if not re.search(rf"defects: resuming from .*: {done_before} of 60000 maps done before", r.stderr):
        fail(f"no line saying it resumes from {done_before} maps: {r.stderr}")
    if os.path.exists(journal_of(part)):
        fail("the journal is left after the JSON is in place")
    if r.stdout != a.stdout or open(part, "rb").read() != open(ref, "rb").read():
        fail("the resumed study's figures differ from the reference's")
    print(f"ok: killed after {done_before} of 60000 maps, resumed to the same output and JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
