#!/usr/bin/env python3
"""`decode`'s progress line (apps::TaskProgress): drawn on a terminal, counting every task of the step, and
changing nothing else.

progress_check.py WAFER_EMU OUT_DIR NAME -- DECODE-ARGS...

Runs `wafer-emu decode DECODE-ARGS --json` twice: once with stderr on a pseudo-terminal and
WAFER_EMU_PROGRESS_AFTER=0 (drawn from the start), once with stderr on a pipe. Checks that
- the pipe's stderr is empty (no terminal, no line);
- the terminal got the line, redrawn in place ("\\r"), at least twice (the first draw and the last), each draw
  "<what>: DONE of TOTAL tile tasks (P%), S s" with DONE never falling and TOTAL never changing, the last draw
  DONE = TOTAL, then a newline: every task the executors ran or copied, and every task of a wafer reused from
  another, was told (core::ExecOptions::progress, sim::StepOptions::progress);
- without --placement auto, TOTAL is the step's fabric.tasks_run (the tasks the result stands for; with --prefill,
  whose chunks each draw under their own words, "decode: prefill to position END of CONTEXT", the last chunk's, as
  the JSON's other figures are);
- both runs give the same results, byte for byte but for wall_time (the host's timing).
"""
import json, os, pty, re, subprocess, sys

from decode_pair import differences

DRAW = re.compile(r"^(decode: [a-z: 0-9]+?): (\d+) of (\d+) tile tasks \((\d+)%\), (\d+) s\x1b\[K$")


def run_on_pty(cmd, env):
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    err = b""
    while True:
        try:
            d = os.read(master, 65536)
        except OSError:  # (the terminal's other side closed: the program ended)
            break
        if not d:
            break
        err += d
    os.close(master)
    out = p.communicate(timeout=600)[0]
    return p.returncode, out, err.decode()


def main():
    if len(sys.argv) < 5 or sys.argv[4] != "--":
        print(__doc__)
        return 2
    exe, out_dir, name = sys.argv[1:4]
    args = sys.argv[5:]
    os.makedirs(out_dir, exist_ok=True)
    ja, jb = os.path.join(out_dir, f"{name}.tty.json"), os.path.join(out_dir, f"{name}.pipe.json")
    env = dict(os.environ, WAFER_EMU_PROGRESS_AFTER="0")
    rc, _, err = run_on_pty([exe, "decode"] + args + ["--json", ja], env)
    plain = dict(os.environ)
    plain.pop("WAFER_EMU_PROGRESS_AFTER", None)
    r = subprocess.run([exe, "decode"] + args + ["--json", jb], capture_output=True, text=True, timeout=600, env=plain)
    bad = []
    if rc != 0 or r.returncode != 0:
        print(f"FAIL: exit {rc} on a terminal, {r.returncode} on a pipe\n{err}\n{r.stderr}")
        return 1
    if r.stderr:
        bad.append(f"stderr on a pipe is not empty: {r.stderr!r}")
    # (a terminal turns "\n" into "\r\n")
    if not err.endswith("\r\n"):
        bad.append(f"the line does not end with a newline: {err[-80:]!r}")
    draws = [d for d in err.rstrip("\r\n").split("\r") if d]
    parsed = [DRAW.match(d) for d in draws]
    if len(draws) < 2:
        bad.append(f"{len(draws)} draws of the line, expected at least 2: {err!r}")
    for d, m in zip(draws, parsed):
        if not m:
            bad.append(f"a draw not of the form expected: {d!r}")
    if not bad:
        done = [int(m.group(2)) for m in parsed]
        # (a prefill's chunks each restart the count under words of their own: within a chunk it never falls)
        steps = [(m.group(1), int(m.group(3))) for m in parsed]
        for i in range(1, len(done)):
            if steps[i] == steps[i - 1] and done[i] < done[i - 1]:
                bad.append(f"the count fell: {done[i - 1]} then {done[i]} under {steps[i]}")
        if "--prefill" in args:
            context = args[args.index("--context") + 1]
            if steps[-1][0] != f"decode: prefill to position {context} of {context}":
                bad.append(f"the last draw is not the last chunk's: {steps[-1][0]!r}")
        elif len(set(steps)) != 1:
            bad.append(f"one line expected, drawn as {sorted(set(steps))}")
        total = steps[-1][1]
        if done[-1] != total:
            bad.append(f"the last draw counts {done[-1]} tasks of {total}")
        if int(parsed[-1].group(4)) != 100:
            bad.append(f"the last draw says {parsed[-1].group(4)}%")
    with open(ja) as f:
        a = json.load(f)
    with open(jb) as f:
        b = json.load(f)
    a.pop("wall_time"), b.pop("wall_time")
    bad += differences(a, b, "terminal", "pipe    ")
    if not bad and "auto" not in args:  # (a prefill's: its last chunk's)
        tasks_run = a["fabric"]["tasks_run"]["value"]
        if total != tasks_run:
            bad.append(f"the line's total {total} is not the step's fabric.tasks_run {tasks_run}")
    print(f"$ {exe} decode {' '.join(args)}\n--- the terminal's stderr\n{err!r}")
    if bad:
        print("FAIL: " + "\n".join(bad))
        return 1
    print(f"ok: {len(draws)} draws, {done[0]} .. {done[-1]} of {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
