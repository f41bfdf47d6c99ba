#!/usr/bin/env python3
"""`validate` resumes a run that was stopped from its journal (`.<json>.partial.jsonl` beside --json): the predictions
made before are taken from it, not emulated again, and the fit goes the same way.

validate_resume_check.py WAFER_EMU CASES OUT_DIR

- the fit in one go (the reference; it leaves no journal);
- the same fit killed (SIGKILL) once its journal holds 30 predictions, and a half-written line added as a process
  killed mid-line leaves it: no JSON written, the journal kept;
- refusals, each one line and exit 2, no JSON written, the journal left as it was: a journal of other settings (the
  cycle fidelity), a journal another process holds (locked), a damaged line before the last, records no run writes
  (a prediction that is no positive figure, none, a case not of the file, one predicted twice otherwise);
- the same command again: it says how many predictions it takes from the journal (every whole line, the half line
  dropped), its output and JSON are the reference's byte for byte, and the journal is gone;
- without --fit, a prediction in the journal (the case at its own wafer) is taken as it is, not emulated again.
"""
import fcntl, json, os, re, shutil, subprocess, sys

import results
from journal_util import fail, journal_of, killed_when, refused, whole_lines

FIT = ["--fit", "task_overhead=40,vector_setup=3"]


def run(exe, cases, json_path, extra=(), check=True):
    r = subprocess.run([exe, "validate", "--cases", cases] + list(extra) + ["--json", json_path], capture_output=True,
                       text=True, timeout=900)
    if check and r.returncode != 0:
        fail(f"exit {r.returncode}: {r.stderr}")
    return r


def killed_after(exe, cases, path, extra, records):
    killed_when([exe, "validate", "--cases", cases] + extra + ["--json", path], path, records + 1,
                f"{records} predictions: too few")
    if os.path.exists(path):
        fail(f"{path} exists after the kill")
    done = whole_lines(journal_of(path)) - 1
    with open(journal_of(path), "a") as f:
        f.write('{"case": "r-step", "values": {"task_ov')  # (a line cut short)
    return done


def resumed(exe, cases, path, extra, done, ref, ref_run, what):
    r = run(exe, cases, path, extra)
    if not re.search(rf"validate: resuming from .*: {done} predictions made before", r.stderr):
        fail(f"{what}: no line saying it takes {done} predictions from the journal: {r.stderr}")
    if os.path.exists(journal_of(path)):
        fail(f"{what}: the journal is left after the JSON is in place")
    if r.stdout != ref_run.stdout or open(path, "rb").read() != open(ref, "rb").read():
        fail(f"{what}: the resumed run's results differ from the reference's")
    print(f"ok: {what}: killed after {done} predictions, resumed to the same output and JSON")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    exe, cases, base = sys.argv[1:4]
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    ref, part = os.path.join(base, "ref.json"), os.path.join(base, "part.json")
    a = run(exe, cases, ref, FIT)
    if os.path.exists(journal_of(ref)):
        fail("a run in one go left its journal")
    done = killed_after(exe, cases, part, FIT, 30)
    lines = open(journal_of(part)).read().splitlines()

    other = os.path.join(base, "other.json")
    shutil.copy(journal_of(part), journal_of(other))
    refused(lambda: run(exe, cases, other, FIT + ["--fidelity", "cycle"], check=False), other,
            r"--json: the journal .* is of a validation with other settings", "other settings")
    os.remove(journal_of(other))
    with open(journal_of(part)) as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        refused(lambda: run(exe, cases, part, FIT, check=False), part, r"--json: another validation run holds its journal",
                "a journal held")
    damaged = os.path.join(base, "damaged.json")
    with open(journal_of(damaged), "w") as f:
        f.write("\n".join([lines[0], "{not json", lines[1]]) + "\n")
    refused(lambda: run(exe, cases, damaged, FIT, check=False), damaged, r"has a damaged line 2", "a damaged line")
    os.remove(journal_of(damaged))
    # Records no run writes, refused in the command's words (not the JSON reader's): a prediction that is no positive
    # figure (-5 was taken, and the fit's residuals showed -100 %), a record without its prediction, a case not of
    # the file, the same case and values predicted twice otherwise.
    rec = json.loads(lines[1])
    for bad, pattern, what in (([dict(rec, predicted=-5.0)], r"line 2: case '.*' predicted -5.0, not a positive figure", "a negative prediction"),
                               ([{k: v for k, v in rec.items() if k != "predicted"}], r"line 2: a record without its case, values and prediction", "no prediction"),
                               ([dict(rec, case="nobody")], r"line 2: case 'nobody' is not one of", "a case not of the file"),
                               ([rec, dict(rec, predicted=rec["predicted"] * 2)], r"line 3: case '.*' at .* predicted twice", "a prediction twice")):
        edited = os.path.join(base, "edited.json")
        with open(journal_of(edited), "w") as f:
            f.write("\n".join([lines[0]] + [json.dumps(b) for b in bad]) + "\n")
        refused(lambda: run(exe, cases, edited, FIT, check=False), edited, pattern, what)
        os.remove(journal_of(edited))

    resumed(exe, cases, part, FIT, done, ref, a, "--fit")

    # Without --fit, the cases at their own wafers: a prediction in the journal (values {}) is taken as it is, not
    # emulated again (a journal with the reference's settings line and one record, of a made-up prediction).
    ref1, part1 = os.path.join(base, "ref1.json"), os.path.join(base, "part1.json")
    run(exe, cases, ref1)
    with open(journal_of(part1), "w") as f:
        f.write(lines[0] + "\n" + json.dumps({"case": "r-layer", "values": {}, "predicted": 12345.5}) + "\n")
    r = run(exe, cases, part1)
    if not re.search(r"validate: resuming from .*: 1 predictions made before", r.stderr) or os.path.exists(journal_of(part1)):
        fail(f"without --fit: no line saying it takes 1 prediction from the journal, or the journal left: {r.stderr}")
    want = {row["case"]: row["predicted"] for row in results.rows(json.load(open(ref1))["cases"])}
    got = {row["case"]: row["predicted"] for row in results.rows(json.load(open(part1))["cases"])}
    want["r-layer"] = 12345.5
    if got != want:
        fail(f"without --fit: predictions {got}, expected {want}")
    print("ok: without --fit, the journal's prediction taken as it is, the others emulated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
