#!/usr/bin/env python3
"""docs/decode-json.md lists every key path `decode --json` writes: checked both ways.

json_keys_check.py WAFER_EMU DOC DATA_DIR OUTDIR

Runs `decode ARGS --json` for every row of the page's last table ("The runs this page is checked against";
`cli/data/` is DATA_DIR, TRACE a file in OUTDIR) and fails on a key path a result has that the page does not list
(or with a unit the page does not give it), and on a path the page lists that no result has. Paths as the page
writes them: sections joined by '.', a table's column as table[column name], wafer_<k> and note_<n> for the numbered
keys.
"""
import json, os, re, subprocess, sys


def kind_of(v):
    if isinstance(v, dict):
        keys = set(v)
        if keys == {"value", "unit"}:
            return "matrix" if isinstance(v["value"], list) else "figure"
        if keys == {"columns", "rows"} and isinstance(v["columns"], list):
            return "table"
        return "section"
    return "text" if isinstance(v, str) else "other"


def normalise(path):
    path = re.sub(r"(^|\.)wafer_\d+(?=\.|\[|$)", r"\1wafer_<k>", path)
    return re.sub(r"^note_\d+$", "note_<n>", path)


def walk(d, prefix, out):
    """path -> set of units (an empty set for sections and text)."""
    for k, v in d.items():
        p = normalise(prefix + k)
        kind = kind_of(v)
        units = out.setdefault(p, set())
        if kind == "section":
            walk(v, p + ".", out)
        elif kind in ("figure", "matrix"):
            units.add(v["unit"])
        elif kind == "table":
            for c in v["columns"]:
                out.setdefault(f"{p}[{c['name']}]", set()).add(c["unit"])
    return out


def reference(doc):
    """The page's key tables: path -> set of units (None: no unit, a section, table or text)."""
    ref = {}
    for line in open(doc, encoding="utf-8"):
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4:
            continue
        unit = cells[1]
        for w in ("(section)", "(table)", "(matrix)", "(text)", "(integer)"):
            unit = unit.replace(w, "")
        unit = unit.strip()
        units = None if not unit else {"" if u.strip() == '""' else u.strip() for u in unit.split(",")}
        for p in re.findall(r"`([^`]+)`", cells[0]):
            ref[p] = units if ref.get(p) is None else ref[p] | (units or set())
    return ref


def runs(doc):
    text = open(doc, encoding="utf-8").read()
    table = text[text.index("## The runs this page is checked against"):]
    out = []
    for line in table.splitlines():
        m = re.match(r"\| (\w+) \| `([^`]+)`", line)
        if m:
            out.append((m.group(1), m.group(2).split()))
    return out


def main():
    exe, doc, data, outdir = sys.argv[1:5]
    os.makedirs(outdir, exist_ok=True)
    ref = reference(doc)
    todo = runs(doc)
    if len(todo) < 20 or len(ref) < 150:
        print(f"FAIL: the page gives {len(todo)} runs and {len(ref)} key paths: not read")
        return 1
    fails, seen = [], set()
    for name, args in todo:
        args = [a.replace("cli/data/", data.rstrip("/") + "/") for a in args]
        args = [os.path.join(outdir, name + ".trace.json") if a == "TRACE" else a for a in args]
        out = os.path.join(outdir, name + ".json")
        r = subprocess.run([exe, "decode"] + args + ["--json", out], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            fails.append(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
            continue
        got = walk(json.load(open(out)), "", {})
        for p, units in sorted(got.items()):
            seen.add(p)
            if p not in ref:
                fails.append(f"{name}: {p} ({', '.join(sorted(units)) or 'no unit'}) is not on the page")
            elif ref[p] is not None and units - ref[p]:
                fails.append(f"{name}: {p} has unit {sorted(units - ref[p])}, the page says {sorted(ref[p])}")
    for p in sorted(set(ref) - seen):
        fails.append(f"{p} is on the page but in no result")
    for f in fails:
        print("FAIL:", f)
    print(f"{len(todo)} runs, {len(seen)} key paths, all on the page" if not fails else f"{len(fails)} failures")
    return 1 if fails else 0


sys.exit(main())
