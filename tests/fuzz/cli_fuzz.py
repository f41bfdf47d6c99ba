#!/usr/bin/env python3
"""Seeded mutation fuzzing of the parsers that live in the program itself (study files of `sweep`, case
files of `validate`), through the command line as a user meets them; and of the files `decode` takes (model
config, wafer file, defect map), each through a whole decode on the tiny wafer, so that what a mutant that parses
does to the mapper, the repair and the emulation is tried too (tests/fuzz/parsers_fuzz_test.cpp fuzzes their
parsers alone, many more mutants); and decode's JSON results as `report` reads them.

cli_fuzz.py WAFER_EMU SOURCE_DIR OUT_DIR [MUTANTS]

Each mutant of a shipped file must either be accepted or refused with exit 2 and exactly one line on stderr
(never an internal error, a crash, a hang). For the study and case files nothing is emulated: `sweep --point`
beyond any study's size stops after the whole study is checked; `validate --check` checks the cases only.
"""
import os, random, subprocess, sys

TOKENS = ["{", "}", "[", "]", ",", ":", '"', "-", "0", "1e309", "null", "true", "-1", "99999999999999999999", "\n",
          ",,", "x", " ", '"from"', '"count"', "[]", "{}"]


def mutate(s, rng):
    for _ in range(rng.randint(1, 4)):
        n = len(s)
        at = rng.randrange(n) if n else 0
        k = rng.randrange(6)
        if k == 0 and n:
            s = s[:at] + chr(rng.randrange(32, 127)) + s[at + 1:]
        elif k == 1:
            s = s[:at] + rng.choice(TOKENS) + s[at:]
        elif k == 2 and n:
            s = s[:at] + s[at + rng.randint(1, 8):]
        elif k == 3 and n:
            s = s[:at] + s[at:at + rng.randint(1, 32)] + s[at:]
        elif k == 4:
            s = s[:at]
        else:
            digits = [i for i, c in enumerate(s) if c.isdigit()]
            if digits:
                i = rng.choice(digits)
                s = s[:i] + str(rng.randrange(100000)) + s[i:]
    return s


def main():
    exe, src, out = sys.argv[1:4]
    mutants = int(sys.argv[4]) if len(sys.argv) > 4 else 200
    os.makedirs(out, exist_ok=True)
    rng = random.Random(7)
    sweep = lambda f: [exe, "sweep", "--spec", f, "--out", os.path.join(out, "study_out"), "--point", "1000000", "--quiet"]
    jobs = [
        ("study", os.path.join(src, "configs/studies/tiny.json"), sweep, mutants),
        # (a study with a joint axis: objects of settings as axis values)
        ("joint study", os.path.join(src, "tests/cli/data/sweep_joint_tiny.json"), sweep, mutants // 2),
        ("cases", os.path.join(src, "tests/cli/data/validate_tiny.json"), lambda f: [exe, "validate", "--cases", f, "--check"],
         mutants),
    ]
    # Decodes on the tiny wafer (a fraction of a second each under the sanitizers), a third as many mutants each.
    decode = lambda *a: lambda f: [exe, "decode", "--context", "64", *[f if x == "FILE" else x for x in a]]
    jobs += [
        ("model", os.path.join(src, "configs/models/test/tiny-llama.json"), decode("--wafer", "tiny", "--model", "FILE"),
         mutants // 3),
        ("moe model", os.path.join(src, "configs/models/test/tiny-moe.json"), decode("--wafer", "small", "--model", "FILE"),
         mutants // 3),
        ("wafer", os.path.join(src, "tests/cli/data/wafer_override.json"),
         decode("--wafer", "FILE", "--model", "tiny-llama"), mutants // 3),
        ("defects json", os.path.join(src, "tests/cli/data/defects_ok.json"),
         decode("--wafer", "tiny", "--model", "tiny-llama", "--defects", "FILE"), mutants // 3),
        ("defects csv", os.path.join(src, "tests/cli/data/defects_ok.csv"),
         decode("--wafer", "tiny", "--model", "tiny-llama", "--defects", "FILE"), mutants // 3),
        # (decode's results as `report` reads them back)
        ("results", os.path.join(src, "traces/golden/decode_tiny_llama.json"),
         lambda f: [exe, "report", "--in", f, "--out", os.path.join(out, "report.html")], mutants // 3),
    ]
    problems = []
    for what, seed, cmd, mutants in jobs:
        good = open(seed).read()
        counts = {0: 0, 2: 0}
        for i in range(mutants):
            f = os.path.join(out, f"{what.replace(' ', '_')}_{i}{os.path.splitext(seed)[1]}")  # (the seed's kind)
            with open(f, "w") as h:
                h.write(mutate(good, rng))
            try:
                r = subprocess.run(cmd(f), capture_output=True, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                problems.append(f"{what} mutant {i} ({f}): hung")
                continue
            lines = r.stderr.strip().splitlines()
            if r.returncode not in (0, 2) or "internal error" in r.stderr or (r.returncode == 2 and len(lines) != 1):
                problems.append(f"{what} mutant {i} ({f}): exit {r.returncode}, stderr {r.stderr[:300]!r}")
                continue
            counts[r.returncode] += 1
            os.remove(f)
        print(f"{what}: {mutants} mutants, {counts[2]} refused with a one-line error, {counts[0]} accepted")
        if counts[2] == 0:
            problems.append(f"{what}: no mutant was refused (the mutator does nothing)")
    if problems:
        print("FAIL:\n" + "\n".join(problems[:20]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
