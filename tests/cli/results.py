"""Reading wafer-emu's results JSON (`--json PATH` of every subcommand, a study's summary.json) in the tests.

The form is docs/results.md, schema_version 2: a figure is {"value": v, "unit": u}; a table is
{"columns": [{"name": n, "unit": u}, ...], "rows": [[cell, ...], ...]}; a matrix is {"value": [[...]], "unit": u}.
"""

SCHEMA_VERSION = 2


def header(column):
    """A column's header as the text summary and the CSV files spell it: "name [unit]", or "name"."""
    return f"{column['name']} [{column['unit']}]" if column["unit"] else column["name"]


def is_table(o):
    return isinstance(o, dict) and set(o) == {"columns", "rows"}


def rows(table):
    """A table's rows as dicts keyed by header ("total [cycles]", "layer"). Fails on a table of another form,
    or with two columns of one name and unit."""
    if not is_table(table):
        raise SystemExit(f"FAIL: not a table of schema_version {SCHEMA_VERSION}: {str(table)[:200]}")
    heads = [header(c) for c in table["columns"]]
    if len(set(heads)) != len(heads):
        raise SystemExit(f"FAIL: a table with two columns of one name and unit: {heads}")
    return [dict(zip(heads, r)) for r in table["rows"]]


def form_problems(j, where="", top=True):
    """Every departure of a results document from the form above: a key holding '[' (a unit in a key), a table
    without name+unit columns or with a row of another length, a figure without its unit, a wrong version."""
    out = []
    if top:
        if not isinstance(j, dict) or j.get("schema_version") != SCHEMA_VERSION:
            out.append(f"{where}: schema_version {j.get('schema_version') if isinstance(j, dict) else None}, "
                       f"expected {SCHEMA_VERSION}")
    if isinstance(j, dict):
        for k in j:
            if "[" in k or "]" in k:
                out.append(f"{where}/{k}: a unit in a key")
        if is_table(j):
            cols = j["columns"]
            if not isinstance(cols, list) or not isinstance(j["rows"], list):
                out.append(f"{where}: columns and rows are not lists")
                return out
            for c in cols:
                if not (isinstance(c, dict) and set(c) == {"name", "unit"} and isinstance(c["name"], str)
                        and isinstance(c["unit"], str) and c["name"] and "[" not in c["name"]):
                    out.append(f"{where}: column {c!r} is not {{name, unit}}")
            pairs = [(c.get("name"), c.get("unit")) for c in cols if isinstance(c, dict)]
            if len(set(pairs)) != len(pairs):
                out.append(f"{where}: two columns of one name and unit: {pairs}")
            for i, r in enumerate(j["rows"]):
                if not isinstance(r, list) or len(r) != len(cols):
                    out.append(f"{where}/rows[{i}]: not a list of {len(cols)} cells: {str(r)[:120]}")
                elif any(isinstance(x, (dict, list)) for x in r):
                    out.append(f"{where}/rows[{i}]: a cell is not a number, text or null")
                elif ("unit", "") not in pairs:  # (a column without a unit holds text, counts or indexes: whole
                    for c, x in zip(pairs, r):      # numbers; unless a `unit` column gives each row's)
                        if c[1] == "" and isinstance(x, float) and not x.is_integer():
                            out.append(f"{where}/rows[{i}]: column {c[0]!r} has no unit but holds {x}")
                            break
            return out
        if "value" in j and set(j) != {"value", "unit"}:
            out.append(f"{where}: a figure with keys {sorted(j)} (expected value and unit)")
        if "value" in j:
            return out
        for k, v in j.items():
            if k != "schema_version":
                out += form_problems(v, f"{where}/{k}", False)
    elif isinstance(j, list):
        out.append(f"{where}: a list outside a table or a figure")
        for i, v in enumerate(j):
            out += form_problems(v, f"{where}[{i}]", False)
    return out


def table_files(d):
    """Every file a `table --out` folder holds, by path relative to it, as bytes; meta.yaml's time stamp
    (profiled_at, the only figure that differs from run to run) blanked."""
    import os, re
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            text = open(p, "rb").read()
            if n == "meta.yaml":
                text = re.sub(rb"profiled_at: .*", b"profiled_at: -", text)
            out[os.path.relpath(p, d)] = text
    return out


def fresh_dir(path):
    """An empty folder at `path` (whatever was there removed)."""
    import os, shutil
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


class Checks:
    """A script's checks: check(cond, what) notes each failure; done(ok_message) reports them all and exits 1,
    or prints ok_message."""

    def __init__(self):
        self.fails = []

    def __call__(self, cond, what):
        if not cond:
            self.fails.append(what)

    def done(self, ok_message):
        import sys
        if self.fails:
            print("FAIL:\n  " + "\n  ".join(self.fails))
            sys.exit(1)
        print(ok_message)
