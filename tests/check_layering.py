#!/usr/bin/env python3
"""docs/design.md section 3: each folder includes only the layers it may use, and pure folders never SystemC."""
import pathlib, re, sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
LAYERS = ["hw", "noc/routing", "noc", "memory", "firmware", "core", "mapper", "traces", "sim", "apps"]
ALLOWED = {
    "hw": {"hw"},
    "noc/routing": {"hw", "noc/routing"},
    "noc": {"hw", "noc/routing", "noc"},
    "memory": {"hw", "memory"},
    "firmware": {"hw", "firmware"},
    "core": {"hw", "firmware", "noc", "noc/routing", "memory", "core"},
    "mapper": {"hw", "firmware", "noc/routing", "mapper"},
    "traces": {"hw", "traces"},
    "sim": set(LAYERS) - {"mapper", "apps"},
    "apps": set(LAYERS),
}
SYSTEMC_OK = {"noc", "memory", "core", "sim", "apps"}
inc = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)

def layer_of(path: str):
    for l in sorted(LAYERS, key=len, reverse=True):
        if path == l or path.startswith(l + "/"):
            return l
    return None

bad = []
for layer in LAYERS:
    d = root / layer
    if not d.is_dir():
        continue
    for f in d.rglob("*"):
        if f.suffix not in (".h", ".hpp", ".cpp", ".cc"):
            continue
        rel = f.relative_to(root).as_posix()
        if layer_of(rel) != layer:
            continue  # noc/routing files are checked as noc/routing, not noc
        for m in inc.finditer(f.read_text(errors="replace")):
            quoted, target = m.group(1) == '"', m.group(2)
            if target.split("/")[0] in ("systemc", "tlm", "systemc.h", "tlm.h", "tlm_utils"):
                if layer not in SYSTEMC_OK:
                    bad.append(f"{rel}: includes <{target}>, but {layer}/ must stay free of SystemC")
                continue
            tl = layer_of(target) if quoted else None
            if tl and tl not in ALLOWED[layer]:
                bad.append(f"{rel}: includes \"{target}\" ({tl}/), which {layer}/ may not use")
for b in bad:
    print(b)
print(f"layering: {len(bad)} violation(s)")
sys.exit(1 if bad else 0)
