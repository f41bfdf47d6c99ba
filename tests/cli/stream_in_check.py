#!/usr/bin/env python3
"""An input that is not a file is read or refused in one line, never waited on for ever (hw::read_input_file).

stream_in_check.py WAFER_EMU OUT_DIR

- a model config through a FIFO a process writes to (after the run opened it, and before): the same latency as from
  the file itself;
- a FIFO no process writes to: one line naming it, exit 2, in seconds (the run waited for a writer for ever);
- a FIFO whose writer closes it without writing: one line, exit 2;
- a FIFO whose writer stops half-way without closing it: one line, exit 2, after 10 s of silence (waited for ever);
- /dev/zero behind a link named *.csv as a defect map, and as a model config: "is a device", exit 2, at once (the
  map was read up to its 512 MiB limit first);
- an input read through a stream is not an output: /dev/stdin redirected from the model as --json (the results were
  appended to the model), a FIFO read as the model and given as --json (waited on for ever);
- what a resumed run reads back, a study's points.jsonl and table's journal, as a device or a FIFO, and a journal
  whose settings are no text: one line, exit 2 (memory filled, or exit 3);
- a study naming a FIFO as its wafer or model file: one line, exit 2, no study folder (one was left, without the
  file's hash, its points failed);
- `table` given a model through a pipe: one line, exit 2 (its journal hashes the model's bytes, and a pipe's bytes
  cannot be read twice: the hash read the pipe again and waited for ever).
"""
import json, os, shutil, subprocess, sys, threading, time

TINY = ["--wafer", "tiny", "--context", "64"]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = os.path.join(ROOT, "configs", "models", "test", "tiny-llama.json")


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def run(args):
    t0 = time.monotonic()
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    return r, time.monotonic() - t0


def refused(args, needle, what, most_s=30):
    r, s = run(args)
    lines = r.stderr.strip().splitlines()
    if r.returncode != 2 or len(lines) != 1 or needle not in lines[0]:
        fail(f"{what}: exit {r.returncode}, stderr {r.stderr!r} (expected one line holding {needle!r}, exit 2)")
    if s > most_s:
        fail(f"{what}: took {s:.1f} s")
    print(f"ok: {what}: {lines[0]} ({s:.2f} s)")


def fifo(base, name):
    p = os.path.join(base, name)
    if os.path.lexists(p):
        os.remove(p)
    os.mkfifo(p)
    return p


def writer(path, text, delay):
    def go():
        time.sleep(delay)
        with open(path, "w") as f:  # (waits for the reader, then writes)
            f.write(text)
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def latency(args, what):
    r, _ = run(args + ["--json", "/dev/stdout"])
    if r.returncode != 0:
        fail(f"{what}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout[r.stdout.find("\n{") + 1:])["latency_cycles"]["value"]


def main():
    exe, base = sys.argv[1], sys.argv[2]
    os.makedirs(base, exist_ok=True)
    text = open(MODEL).read()
    want = latency([exe, "decode"] + TINY + ["--model", MODEL], "the model from its file")

    for delay, when in ((0.3, "after the run opened it"), (0.0, "before")):
        f = fifo(base, "model.json")
        t = writer(f, text, delay)
        got = latency([exe, "decode"] + TINY + ["--model", f], f"a model through a FIFO written {when}")
        t.join(10)
        if got != want:
            fail(f"a model through a FIFO written {when}: {got} cycles against {want} from the file")
        print(f"ok: a model through a FIFO written {when}: {got} cycles, as from the file")

    # A defect map through a pipe (`--defects <(...)`: a name without .csv or .json) is read by its content, as
    # CSV or JSON (it was refused: "a defect map file ends in .csv or .json").
    for fmt in ("csv", "json"):
        m = os.path.join(base, f"map.{fmt}")
        r, _ = run([exe, "defects", "--wafer", "tiny", "--density", "5", "--maps", "1", "--seed", "1", "--out", m])
        if r.returncode != 0:
            fail(f"defects --out {m}: exit {r.returncode}: {r.stderr}")
        mtext = open(m).read()
        args = [exe, "decode"] + TINY + ["--model", "tiny-llama", "--defects"]
        want_map = latency(args + [m], f"a {fmt} defect map from its file")
        f = fifo(base, "map")
        t = writer(f, mtext, 0.0)
        got = latency(args + [f], f"a {fmt} defect map through a FIFO")
        t.join(10)
        if got != want_map:
            fail(f"a {fmt} defect map through a FIFO: {got} cycles against {want_map} from the file")
        f = fifo(base, "map")
        t = writer(f, mtext, 0.0)
        counts = []
        for src in (m, f):
            r, _ = run([exe, "defects", "--wafer", "tiny", "--in", src, "--json", "/dev/stdout"])
            if r.returncode != 0:
                fail(f"defects --in a {fmt} map {src}: exit {r.returncode}: {r.stderr}")
            counts.append(json.loads(r.stdout[r.stdout.find("\n{") + 1:])["map"]["defects"]["value"])
        t.join(10)
        if counts[0] < 1 or counts[1] != counts[0]:
            fail(f"defects --in a {fmt} map: {counts[1]} defects through a FIFO, {counts[0]} from the file")
        print(f"ok: a {fmt} defect map through a FIFO: {got} cycles, as from the file; defects --in reads it")

    f = fifo(base, "model.json")
    refused([exe, "decode"] + TINY + ["--model", f], "a pipe no process wrote to within 2 s", "a FIFO no process writes to", 20)
    f = fifo(base, "model.json")
    t = threading.Thread(target=lambda: open(f, "w").close(), daemon=True)
    t.start()
    refused([exe, "decode"] + TINY + ["--model", f], "a pipe closed with nothing written to it", "a FIFO closed unwritten", 20)
    t.join(10)
    # A writer that stops half-way without closing: refused after 10 s of silence (it was waited on for ever).
    f = fifo(base, "model.json")
    stop = threading.Event()
    def half():
        with open(f, "w") as w:
            w.write(text[:100])
            w.flush()
            stop.wait(60)
    t = threading.Thread(target=half, daemon=True)
    t.start()
    refused([exe, "decode"] + TINY + ["--model", f], "a pipe silent for 10 s after 100 bytes", "a FIFO whose writer stops half-way", 30)
    stop.set()
    t.join(10)

    z = os.path.join(base, "zero.csv")
    if os.path.lexists(z):
        os.remove(z)
    os.symlink("/dev/zero", z)
    refused([exe, "decode"] + TINY + ["--model", "tiny-llama", "--defects", z], "zero.csv: is a device, not a defect map",
            "/dev/zero behind a link named *.csv as a defect map", 10)
    refused([exe, "decode"] + TINY + ["--model", "/dev/zero"], "/dev/zero: is a device, not a model config",
            "/dev/zero as a model config", 10)

    # An input read through a stream is not written over as an output: /dev/stdin redirected from the model config
    # (the results were appended to it), a FIFO read as the model (its writing was waited on for ever).
    m = os.path.join(base, "m.json")
    open(m, "w").write(text)
    with open(m) as inp:
        t0 = time.monotonic()
        r = subprocess.run([exe, "decode"] + TINY + ["--model", "/dev/stdin", "--json", "/dev/stdin"], stdin=inp,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if r.returncode != 2 or "it is not written over" not in r.stderr or open(m).read() != text:
        fail(f"--json /dev/stdin over the model read from it: exit {r.returncode}, {r.stderr!r}, model kept: {open(m).read() == text}")
    print(f"ok: --json /dev/stdin over the model read from it: {r.stderr.strip()}")
    f = fifo(base, "both.json")
    t = writer(f, text, 0.0)
    refused([exe, "decode"] + TINY + ["--model", f, "--json", f], "it is not written over", "a FIFO read as the model and given as --json", 20)
    t.join(10)

    # What a resumed run reads back: a study's points and a journal that are a device or a FIFO (/dev/zero was read
    # until the memory ran out; a FIFO failed to seek, "internal error", exit 3), a journal whose settings are no text
    # (exit 3).
    st = os.path.join(base, "st")
    if os.path.isdir(st):
        shutil.rmtree(st)
    r, _ = run([exe, "sweep", "--spec", os.path.join(ROOT, "configs", "studies", "tiny.json"), "--out", st, "--point", "0"])
    if r.returncode != 0:
        fail(f"sweep --point 0: exit {r.returncode}: {r.stderr}")
    pts = os.path.join(st, "points.jsonl")
    for kind in ("/dev/zero", "fifo"):
        os.remove(pts)
        if kind == "fifo":
            os.mkfifo(pts)
        else:
            os.symlink(kind, pts)
        for args in (["sweep", "--summarize", st], ["report", st, "--out", os.path.join(base, "st.html")],
                     ["sweep", "--spec", os.path.join(ROOT, "configs", "studies", "tiny.json"), "--out", st, "--point", "1"]):
            refused([exe] + args, "points.jsonl: is not a file", f"{args[0]} {args[1]} with points.jsonl a {kind}", 10)
    tj = os.path.join(base, "tj")
    journal = os.path.join(base, ".tj.partial.jsonl")
    table = [exe, "table", "--wafer", "tiny", "--model", "tiny-llama", "--contexts", "32", "--batches", "1",
             "--prefill-tokens", "4", "--out", tj]
    for kind in ("/dev/zero", "fifo", "settings"):
        if os.path.lexists(journal):
            os.remove(journal)
        if kind == "fifo":
            os.mkfifo(journal)
        elif kind == "settings":
            open(journal, "w").write('{"settings": 5}\n{"phase": "decode"}\n')
        else:
            os.symlink(kind, journal)
        refused(table, "is not a file" if kind != "settings" else "is of a table with other settings",
                f"table with its journal a {kind}", 10)
    os.remove(journal)

    # A study naming a FIFO as its wafer or model file: refused before any folder is made (a study folder was left
    # without the file's hash, its points failed).
    for key in ("wafer", "model"):
        f = fifo(base, key + "-pipe.json")
        spec = os.path.join(base, key + "-study.json")
        fixed = {"wafer": "tiny", "model": MODEL, "context": 64}
        fixed[key] = f
        json.dump({"schema": 1, "fixed": fixed, "axes": {"hop_latency": [1, 2]}}, open(spec, "w"))
        so = os.path.join(base, key + "-study")
        refused([exe, "sweep", "--spec", spec, "--out", so], f"{key} {f} is a pipe", f"a study naming a FIFO as its {key}", 10)
        if os.path.exists(so):
            fail(f"a study naming a FIFO as its {key}: left {so}")

    f = fifo(base, "table-model.json")
    t = writer(f, text, 0.0)
    refused([exe, "table", "--wafer", "tiny", "--model", f, "--contexts", "64", "--prefill-tokens", "64", "--out",
             os.path.join(base, "table")], "not a file: its bytes are hashed", "table given a model through a pipe", 20)
    t.join(10)


if __name__ == "__main__":
    main()
