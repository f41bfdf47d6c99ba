"""What the resume tests of `table`, `defects` and `validate` share: where a run's journal lies, its whole lines, a
run killed once its journal holds some, and a run its journal refuses."""
import os, re, signal, subprocess, sys, time


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def journal_of(path):
    """The journal beside an output file or folder (apps::Journal::beside)."""
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.partial.jsonl")


def whole_lines(path):  # (those ended by a newline: a line being written is not one yet)
    with open(path) as f:
        return f.read().count("\n")


def killed_when(argv, path, lines, what):
    """Runs argv and kills its process group (SIGKILL) once the journal of `path` holds `lines` whole lines."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 600
    while time.time() < deadline and p.poll() is None:
        if os.path.exists(journal_of(path)) and whole_lines(journal_of(path)) >= lines:
            break
        time.sleep(0.001)
    if p.poll() is not None:
        fail(f"the run ended (exit {p.returncode}) before its journal held {what}")
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def refused(run, path, pattern, what):
    """run() must be refused: exit 2 and one line matching `pattern`, nothing at `path`, the journal as it was."""
    before = open(journal_of(path), "rb").read()
    r = run()
    if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1 or not re.search(pattern, r.stderr):
        fail(f"{what}: expected exit 2 and one line matching /{pattern}/, got exit {r.returncode}: {r.stderr!r}")
    if os.path.exists(path):
        fail(f"{what}: {path} was written")
    if open(journal_of(path), "rb").read() != before:
        fail(f"{what}: the journal was changed")
    print(f"ok: {what}: {r.stderr.strip()}")
