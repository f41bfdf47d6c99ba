#!/usr/bin/env python3
"""Runs a command and checks how it ended. Used by ctest for end-to-end and bad-input tests.

expect.py [--exit N] [--stderr REGEX] [--stdout REGEX] [--one-line-error] [--no-file PATH]
          [--file PATH] [--timeout S] [--same-output-twice] -- COMMAND ARGS...
"""
import argparse, os, re, subprocess, sys

p = argparse.ArgumentParser()
p.add_argument("--exit", type=int, default=0)
p.add_argument("--stderr", action="append", default=[])
p.add_argument("--stdout", action="append", default=[])
p.add_argument("--one-line-error", action="store_true", help="stderr is exactly one line")
p.add_argument("--no-file", action="append", default=[], help="must not exist afterwards")
p.add_argument("--file", action="append", default=[], help="must exist afterwards")
p.add_argument("--timeout", type=float, default=120)
p.add_argument("--same-output-twice", action="store_true", help="run twice; stdout must match byte for byte")
p.add_argument("cmd", nargs=argparse.REMAINDER)
a = p.parse_args()
cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
for f in a.no_file + a.file:
    if os.path.exists(f):
        os.remove(f)

def run():
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        print(f"FAIL: timed out after {a.timeout}s (a hang): {cmd}")
        sys.exit(1)

r = run()
fails = []
if r.returncode != a.exit:
    fails.append(f"exit code {r.returncode}, expected {a.exit}")
if r.returncode < 0 or r.returncode >= 128:
    fails.append("killed by a signal (a crash)")
for rx in a.stderr:
    if not re.search(rx, r.stderr):
        fails.append(f"stderr does not match /{rx}/")
for rx in a.stdout:
    if not re.search(rx, r.stdout):
        fails.append(f"stdout does not match /{rx}/")
if a.one_line_error and len(r.stderr.strip().splitlines()) != 1:
    fails.append(f"stderr has {len(r.stderr.strip().splitlines())} lines, expected exactly one")
for f in a.no_file:
    if os.path.exists(f):
        fails.append(f"{f} exists (partial output)")
for f in a.file:
    if not os.path.exists(f):
        fails.append(f"{f} was not written")
if a.same_output_twice:
    r2 = run()
    if r2.stdout != r.stdout:
        fails.append("two runs with the same arguments printed different output")
print(f"$ {' '.join(cmd)}\nexit {r.returncode}\n--- stdout (first 40 lines)\n" +
      "\n".join(r.stdout.splitlines()[:40]) + f"\n--- stderr\n{r.stderr}")
if fails:
    print("FAIL: " + "; ".join(fails))
    sys.exit(1)
print("ok")
