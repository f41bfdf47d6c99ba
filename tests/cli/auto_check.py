#!/usr/bin/env python3
"""`decode --placement auto` on the tiny wafer, checked from its JSON (apps/search.h).

auto_check.py WAFER_EMU OUT_DIR

- every candidate is emulated, rejected with the mapper's reason, or says why it was not emulated;
- the chosen candidate is the one with the lowest emulated latency, and the step reported is exactly it
  (the same mapping emulated again gives the same cycles);
- a kernel with a closed form (meshgemv) is ranked by it: no candidate with a closed form was emulated while
  one with a lower closed form was skipped for the closed-form slots;
- on a MoE model the meshgemv candidates are rejected with the mapper's reason and a bands mapping is chosen.
"""
import json, os, subprocess, sys


def find(o, key):
    if isinstance(o, dict):
        if key in o:
            return o[key]
        for v in o.values():
            r = find(v, key)
            if r is not None:
                return r
    elif isinstance(o, list):
        for v in o:
            r = find(v, key)
            if r is not None:
                return r
    return None


def value(v):
    return v["value"] if isinstance(v, dict) and "value" in v else v


def run(exe, out, model):
    path = os.path.join(out, f"auto_{model}.json")
    r = subprocess.run([exe, "decode", "--wafer", "tiny", "--model", model, "--context", "64", "--placement", "auto",
                        "--json", path], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"FAIL: {model}: exit {r.returncode}: {r.stderr}")
    j = json.load(open(path))
    search = find(j, "search")
    rows = find(search, "candidates")
    rows = rows["rows"] if isinstance(rows, dict) else rows
    return j, value(find(search, "chosen")), rows


def main():
    exe, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    problems = []
    j, chosen, rows = run(exe, out, "tiny-llama")
    emulated = [r for r in rows if r["emulated [cycles]"] >= 0]
    if not emulated:
        problems.append("nothing emulated")
    for r in rows:
        st = r["status"]
        if r["emulated [cycles]"] < 0 and not (st.startswith("rejected: ") or st.startswith("not emulated: ")):
            problems.append(f"{r['candidate']}: no reason for not being emulated ({st!r})")
    best = min(emulated, key=lambda r: r["emulated [cycles]"])
    if best["emulated [cycles]"] != [r for r in rows if r["candidate"] == chosen][0]["emulated [cycles]"]:
        problems.append(f"chosen {chosen} is not the lowest emulated ({best['candidate']})")
    lat = value(find(j, "latency_cycles"))
    if lat != best["emulated [cycles]"]:
        problems.append(f"reported latency {lat} != the chosen candidate's emulated {best['emulated [cycles]']}")
    formula = [r for r in rows if r["predicted [cycles]"] >= 0]
    emu_f = [r["predicted [cycles]"] for r in formula if r["emulated [cycles]"] >= 0]
    skip_f = [r["predicted [cycles]"] for r in formula if "closed forms were" in r["status"]]
    if emu_f and skip_f and max(emu_f) > min(skip_f):
        problems.append(f"closed forms {emu_f} emulated while {skip_f} were skipped")
    _, chosen_moe, rows_moe = run(exe, out, "tiny-moe")
    if not chosen_moe.startswith("bands"):
        problems.append(f"tiny-moe chose {chosen_moe}")
    for r in rows_moe:
        if r["candidate"].startswith("meshgemv") and "dense models" not in r["status"]:
            problems.append(f"tiny-moe {r['candidate']}: {r['status']!r}")
    if problems:
        print("FAIL:\n" + "\n".join(problems))
        return 1
    print(f"ok: tiny-llama chose {chosen} ({lat} cycles) of {len(rows)} candidates; tiny-moe chose {chosen_moe}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
