#!/usr/bin/env python3
"""`decode --placement auto` on the tiny wafer, checked from its JSON (apps/search.h).

auto_check.py WAFER_EMU OUT_DIR

- every candidate is emulated, rejected with the mapper's reason, or says why it was not emulated;
- the chosen candidate is the one with the lowest emulated latency, and the step reported is exactly it:
  the results equal those of `decode` run with the chosen placement, kernel, allreduce and group (all but
  the search section and the wall time), since the search's own emulation of it is what is reported;
- a candidate whose firmware equals one already emulated is not emulated again and reports its cycles;
- a kernel with a closed form (meshgemv) is ranked by it: no candidate with a closed form was emulated while
  one with a lower closed form was skipped for the closed-form slots;
- on a MoE model the meshgemv candidates are rejected with the mapper's reason and a bands mapping is chosen.
"""
import json, os, subprocess, sys

import results


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
    rows = results.rows(rows)
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
    cfg = j["config"]
    direct = os.path.join(out, "auto_direct.json")
    # (--allreduce and --group only for the meshgemv kernel: decode refuses them with the bands one)
    mesh = ["--allreduce", cfg["allreduce"], "--group", str(value(cfg["group"]))] if cfg["kernel"] == "meshgemv" else []
    r = subprocess.run([exe, "decode", "--wafer", "tiny", "--model", "tiny-llama", "--context", "64", "--placement",
                        cfg["placement"], "--kernel", cfg["kernel"]] + mesh + ["--json", direct],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        problems.append(f"the chosen mapping run directly: exit {r.returncode}: {r.stderr}")
    else:
        d = json.load(open(direct))
        a = {k: v for k, v in j.items() if k not in ("search", "wall_time")}
        d = {k: v for k, v in d.items() if k != "wall_time"}
        if json.dumps(a, sort_keys=True) != json.dumps(d, sort_keys=True):
            problems.append("the results differ from those of the chosen mapping run directly")
    same = [r for r in rows if r["status"].startswith("the same firmware as ")]
    if not same:
        problems.append("no candidate was found to have the same firmware as another (defect-aware = layer-bands "
                        "on a perfect wafer)")
    for r in same:
        twin = r["status"][len("the same firmware as "):].split(":")[0]
        t = [x for x in rows if x["candidate"] == twin]
        if not t or t[0]["emulated [cycles]"] != r["emulated [cycles]"] or r["emulated [cycles]"] < 0:
            problems.append(f"{r['candidate']}: says it has {twin}'s firmware but not its emulated cycles")
    formula = [r for r in rows if r["predicted [cycles]"] >= 0]
    emu_f = [r["predicted [cycles]"] for r in formula if r["emulated [cycles]"] >= 0]
    skip_f = [r["predicted [cycles]"] for r in formula if "closed forms were" in r["status"]]
    if emu_f and skip_f and max(emu_f) > min(skip_f):
        problems.append(f"closed forms {emu_f} emulated while {skip_f} were skipped")
    # The closed form against each meshgemv candidate's own emulation (decode with that mapping): within 10 %. Its
    # blocking levels are the done tile's Complete tasks, which its program sum already holds; charging them again
    # (until 2026-12-08) put the tree with groups of 3 at +29 % and one with groups of 1, whose firmware times as
    # centre's, 19 % above centre's closed form. What it leaves out (the attention segment's allreduce, the head's reductions)
    # keeps it some 6 % low.
    pred = {}
    for r in formula:
        parts = r["candidate"].split(" / ")
        algo = parts[2].split(",")[0]
        group = parts[2].split("groups of ")[1] if "groups of " in parts[2] else "0"
        group = "0" if group == "sqrt(line)" else group
        path = os.path.join(out, f"mesh_{parts[1]}_{algo}_{group}.json")
        d = subprocess.run([exe, "decode", "--wafer", "tiny", "--model", "tiny-llama", "--context", "64", "--placement",
                            parts[1], "--kernel", "meshgemv", "--allreduce", algo, "--group", group, "--json", path],
                           capture_output=True, text=True, timeout=300)
        if d.returncode != 0:
            problems.append(f"{r['candidate']} run directly: exit {d.returncode}: {d.stderr}")
            continue
        emu = value(find(json.load(open(path)), "latency_cycles"))
        if r["emulated [cycles]"] >= 0 and r["emulated [cycles]"] != emu:
            problems.append(f"{r['candidate']}: emulated {r['emulated [cycles]']} in the search, {emu} run directly")
        err = (r["predicted [cycles]"] - emu) / emu
        print(f"{r['candidate']}: closed form {r['predicted [cycles]']}, emulated {emu} ({100 * err:+.1f} %)")
        if abs(err) > 0.10:
            problems.append(f"{r['candidate']}: closed form {r['predicted [cycles]']} against {emu} emulated "
                            f"({100 * err:+.1f} %)")
        pred[(parts[1], algo, group)] = r["predicted [cycles]"]
    for (place, algo, group), p in pred.items():
        if algo == "tree" and group == "1" and (place, "centre", "0") in pred and p != pred[(place, "centre", "0")]:
            problems.append(f"{place}: the tree of groups of 1 reduces as centre does, but its closed form is {p} "
                            f"against centre's {pred[(place, 'centre', '0')]}")
    if not any(k[1] == "tree" and k[2] == "1" for k in pred):
        problems.append(f"no tree of groups of 1 among the candidates: {sorted(pred)}")
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
