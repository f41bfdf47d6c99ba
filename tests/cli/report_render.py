#!/usr/bin/env python3
"""`wafer-emu report` pages rendered by headless Chromium: no console message, a picture that is not blank.

report_render.py WAFER_EMU OUTDIR

Makes a decode report (tiny wafer, generated defects) and a study report (configs/studies/tiny.json), renders
each with `chromium --headless --screenshot`, fails on any console line Chromium logs for the page (an
uncaught error, a resource it could not load) and on a PNG of fewer than MIN_COLOURS distinct colours (the
PNG is decoded here with zlib: no extra packages). Exits 77 (ctest SKIP_RETURN_CODE) with a message when
Chromium is not installed: scripts/install-deps installs it (Debian package `chromium`).
"""
import os, shutil, struct, subprocess, sys, tempfile, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIN_COLOURS = 64
SKIP = 77


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def png_colours(path):
    """Distinct pixel colours of an 8-bit RGB/RGBA (or grey) non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path}: not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace:
                fail(f"{path}: bit depth {depth}, interlace {interlace}: not handled")
            bpp = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
            if bpp is None:
                fail(f"{path}: colour type {ctype} not handled")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 2 == 0:  # every other row is plenty to count colours
            colours.update(bytes(line[i:i + bpp]) for i in range(0, stride, bpp * 2))
        prev = line
    return len(colours), w, h


def render(chromium, html, png):
    with tempfile.TemporaryDirectory() as prof:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-extensions", f"--user-data-dir={prof}", "--enable-logging=stderr", "--v=0",
               f"--screenshot={png}", "--window-size=1200,900", "file://" + os.path.abspath(html)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    log = r.stdout + r.stderr
    bad = [l for l in log.splitlines() if ":CONSOLE" in l or "Uncaught" in l or "net::ERR" in l]
    if r.returncode != 0:
        fail(f"chromium exit {r.returncode}\n{log}")
    if bad:
        fail(f"{html}: console messages while rendering:\n" + "\n".join(bad))
    if not os.path.exists(png):
        fail(f"{html}: no screenshot\n{log}")
    n, w, h = png_colours(png)
    print(f"{html}: {w}x{h} screenshot, {n} distinct colours")
    if n < MIN_COLOURS:
        fail(f"{png}: {n} distinct colours (< {MIN_COLOURS}): a blank page?")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    exe, out = sys.argv[1], sys.argv[2]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIPPED: chromium is not installed (scripts/install-deps installs the Debian package `chromium`)")
        return SKIP
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    p = lambda n: os.path.join(out, n)
    run = lambda args: subprocess.run([exe] + args, check=True, capture_output=True, timeout=300)
    run(["decode", "--wafer", "tiny", "--model", "tiny-llama", "--context", "64", "--density", "20", "--seed", "3",
         "--json", p("decode.json")])
    run(["report", p("decode.json"), "--out", p("decode.html")])
    render(chromium, p("decode.html"), p("decode.png"))
    run(["sweep", "--spec", os.path.join(ROOT, "configs", "studies", "tiny.json"), "--out", p("study")])
    run(["report", p("study"), "--out", p("study.html")])
    render(chromium, p("study.html"), p("study.png"))
    print("ok: both pages render without console messages and are not blank")
    return 0


if __name__ == "__main__":
    sys.exit(main())
