#!/usr/bin/env python3
"""An output named as a stream is written to it, and an output through a symbolic link is written through the link
(traces::output_path): nothing is renamed over a device, a FIFO, a descriptor's name or a link.

stream_out_check.py WAFER_EMU OUT_DIR

- `--json /dev/stdout` into a pipe and into a regular file: the text, then the JSON, whole (the file's case: the
  JSON written through the process's own descriptor, after the text, not over it);
- `--json FIFO`: the JSON read from the FIFO by another reader; the FIFO still a FIFO, no FIFO.tmp;
- `--json LINK` (a symbolic link to a file): the link kept, its target holding the JSON; the same for a defect map,
  `decode --defects-out LINK.csv` and `defects --out LINK.json`;
- `--json /dev/fd/9` with descriptor 9 not open: one line, exit 2;
- `report --out /dev/stdout`: the page on stdout, no CSV files beside it;
- `defects --json /dev/stdout`: no journal beside it;
- /dev holds the same names after all of them, and /dev/stdout is what it was.
"""
import json, os, stat, subprocess, sys, threading

TINY = ["--wafer", "tiny", "--model", "tiny-llama", "--context", "64"]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def run(args, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(args, stderr=subprocess.PIPE, text=True, timeout=300, **kw)


def text_then_json(out, what):
    at = out.find("\n{")
    if at < 0:
        fail(f"{what}: no JSON after the text: {out[-300:]!r}")
    try:
        j = json.loads(out[at + 1:])
    except json.JSONDecodeError as e:
        fail(f"{what}: the JSON after the text does not parse ({e})")
    if "latency_us" not in out[:at] or j["schema_version"] != 2:
        fail(f"{what}: the text or the JSON is not the decode's")
    print(f"ok: {what}: the text, then the JSON")


def main():
    exe, base = sys.argv[1], sys.argv[2]
    os.makedirs(base, exist_ok=True)
    dev_before = sorted(os.listdir("/dev"))
    stdout_link = os.readlink("/dev/stdout") if os.path.islink("/dev/stdout") else None

    r = run([exe, "decode"] + TINY + ["--json", "/dev/stdout"])
    if r.returncode != 0:
        fail(f"--json /dev/stdout into a pipe: exit {r.returncode}: {r.stderr}")
    text_then_json(r.stdout, "--json /dev/stdout into a pipe")
    into = os.path.join(base, "stdout.txt")
    with open(into, "w") as f:
        r = run([exe, "decode"] + TINY + ["--json", "/dev/stdout"], stdout=f)
    if r.returncode != 0:
        fail(f"--json /dev/stdout into a file: exit {r.returncode}: {r.stderr}")
    text_then_json(open(into).read(), "--json /dev/stdout into a file")

    fifo = os.path.join(base, "results.fifo")
    if os.path.exists(fifo):
        os.remove(fifo)
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.update(text=open(fifo).read()))
    reader.start()
    r = run([exe, "decode"] + TINY + ["--json", fifo])
    if r.returncode != 0:
        open(fifo, "w").close()  # (lets the reader go)
        fail(f"--json FIFO: exit {r.returncode}: {r.stderr}")
    reader.join(60)
    if json.loads(got.get("text", "null") or "null") is None or not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        fail("--json FIFO: no JSON read from it, or it is no longer a FIFO")
    if os.path.exists(fifo + ".tmp"):
        fail("--json FIFO: left FIFO.tmp")
    print("ok: --json FIFO: the JSON read from the FIFO, the FIFO kept")

    target, link = os.path.join(base, "target.json"), os.path.join(base, "link.json")
    for p in (target, link):
        if os.path.lexists(p):
            os.remove(p)
    open(target, "w").write("{}\n")
    os.symlink("target.json", link)
    r = run([exe, "decode"] + TINY + ["--json", link])
    if r.returncode != 0 or not os.path.islink(link) or "latency_us" not in json.load(open(target)):
        fail(f"--json LINK: exit {r.returncode}, the link kept: {os.path.islink(link)}: {r.stderr}")
    print("ok: --json LINK: written through the link, the link kept")
    # A link to a file not there yet: that file is written, the link kept (the link itself was replaced by the file).
    target, link = os.path.join(base, "new_target.json"), os.path.join(base, "dangling.json")
    for p in (target, link):
        if os.path.lexists(p):
            os.remove(p)
    os.symlink("new_target.json", link)
    r = run([exe, "decode"] + TINY + ["--json", link])
    if r.returncode != 0 or not os.path.islink(link) or not os.path.exists(target) or "latency_us" not in json.load(open(target)):
        fail(f"--json DANGLING_LINK: exit {r.returncode}, the link kept: {os.path.islink(link)}, its target written: "
             f"{os.path.exists(target)}: {r.stderr}")
    print("ok: --json DANGLING_LINK: its target written, the link kept")

    for args, ext, what in ((["decode"] + TINY + ["--density", "100", "--seed", "3", "--defects-out"], "csv", "decode --defects-out"),
                            (["defects", "--wafer", "tiny", "--maps", "1", "--density", "100", "--out"], "json", "defects --out")):
        target, link = os.path.join(base, f"map_target.{ext}"), os.path.join(base, f"map_link.{ext}")
        for p in (target, link):
            if os.path.lexists(p):
                os.remove(p)
        open(target, "w").write("old\n")
        os.symlink(f"map_target.{ext}", link)
        r = run([exe] + args + [link])
        text = open(target).read()
        ok = "core" in text or "router" in text or "link" in text
        if r.returncode != 0 or not os.path.islink(link) or not ok or os.path.exists(link + ".tmp"):
            fail(f"{what} LINK.{ext}: exit {r.returncode}, the link kept: {os.path.islink(link)}, "
                 f"its target {text[:60]!r}: {r.stderr}")
        print(f"ok: {what} LINK.{ext}: the map written through the link, the link kept")

    r = run([exe, "decode"] + TINY + ["--json", "/dev/fd/9"])
    if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1 or "descriptor 9 is not open" not in r.stderr:
        fail(f"--json /dev/fd/9 (not open): exit {r.returncode}: {r.stderr!r}")
    print(f"ok: --json /dev/fd/9: {r.stderr.strip()}")

    dec = os.path.join(base, "decode.json")
    if run([exe, "decode"] + TINY + ["--json", dec]).returncode != 0:
        fail("decode --json for the report")
    csvs = lambda: [n for n in os.listdir(base) if n.endswith(".csv")]
    before = csvs()
    r = run([exe, "report", dec, "--out", "/dev/stdout"])
    if r.returncode != 0 or not r.stdout.startswith("<!DOCTYPE html>") or csvs() != before:
        fail(f"report --out /dev/stdout: exit {r.returncode}, page on stdout: {r.stdout[:15]!r}, CSVs {csvs()}")
    print("ok: report --out /dev/stdout: the page on stdout, no CSV files")

    r = run([exe, "defects", "--wafer", "tiny", "--maps", "30", "--json", "/dev/stdout"])
    if r.returncode != 0 or '"schema_version": 2' not in r.stdout:
        fail(f"defects --json /dev/stdout: exit {r.returncode}: {r.stderr}")

    if sorted(os.listdir("/dev")) != dev_before:
        fail(f"/dev changed: {sorted(set(os.listdir('/dev')) ^ set(dev_before))}")
    if (os.readlink("/dev/stdout") if os.path.islink("/dev/stdout") else None) != stdout_link:
        fail("/dev/stdout changed")
    print("ok: /dev as it was (no journal, no temporary file, no CSV), /dev/stdout as it was")
    return 0


if __name__ == "__main__":
    sys.exit(main())
