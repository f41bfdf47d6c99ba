#!/usr/bin/env python3
"""`wafer-emu report` pages checked as documents, and their CSV matrices against the results.

report_check.py WAFER_EMU OUTDIR

- decode on the tiny wafer with generated defects, then `report`: the page parses as HTML with balanced
  tags, holds the SVG pictures (placement, heatmaps, the physical wafer, the cause bars), references
  nothing outside itself (no http:// or https://, no src=, no <script>, no <link>), and every heatmap CSV
  beside it has the matrix of the results' regions section (same shape, same numbers);
- a latency beyond 10^7 cycles shown whole, one that is not a number refused; a prefill in chunks titled so, with its time to first token and its
  chunks;
- a pipeline of two wafers: a section and CSVs per wafer; with one map, the repair counts said to be each wafer's;
  with maps of their own, a repair section and CSVs per wafer;
- a study folder (configs/studies/tiny.json): the distribution picture and a row per setting, means to 6 digits;
  its points read as the summary reads them (settings the study's at a line's index, the first line of an index,
  a line of another study or beyond its points refused);
- a CSV that cannot be written (a folder in its place): one line, exit 2, and neither the page nor the CSVs written
  before it left behind (they were).
"""
import csv, html.parser, json, math, os, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VOID = {"meta", "br", "img", "hr", "input", "link", "wbr", "col", "area", "base", "source", "rect", "circle", "line", "path"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Doc(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.count, self.errors, self.labels = [], {}, [], []

    def handle_starttag(self, tag, attrs):
        self.count[tag] = self.count.get(tag, 0) + 1
        a = dict(attrs)
        if tag == "svg" and "aria-label" in a:
            self.labels.append(a["aria-label"])
        for k, v in attrs:
            if k in ("src", "href") or (v and ("url(" in v)):
                self.errors.append(f"<{tag} {k}={v!r}> refers to something outside the page")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.count[tag] = self.count.get(tag, 0) + 1
        a = dict(attrs)
        if tag == "svg" and "aria-label" in a:
            self.labels.append(a["aria-label"])

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
        else:
            self.stack.pop()


def check_page(path, want_labels):
    text = open(path, encoding="utf-8").read()
    for bad in ("http://", "https://", "<script", "<link", "@import", "<iframe", "<img"):
        if bad in text:
            fail(f"{path}: contains {bad!r} (the page must stand alone)")
    if not text.startswith("<!DOCTYPE html>"):
        fail(f"{path}: no <!DOCTYPE html>")
    d = Doc()
    d.feed(text)
    d.close()
    if d.errors or d.stack:
        fail(f"{path}: {d.errors[:5]} unclosed {d.stack}")
    for label in want_labels:
        if label not in d.labels:
            fail(f"{path}: no SVG '{label}' (has {d.labels})")
    return d


def read_csv(path):
    with open(path) as f:
        return [[float(c) if c else math.nan for c in row] for row in csv.reader(f)]


def same(a, b):
    return (math.isnan(a) and (b is None or math.isnan(b))) or (b is not None and abs(a - b) <= 1e-9 * max(1, abs(b)))


def check_csv(path, matrix):
    got = read_csv(path)
    want = matrix["value"]
    if len(got) != len(want) or any(len(g) != len(w) for g, w in zip(got, want)):
        fail(f"{path}: {len(got)} rows x {len(got[0]) if got else 0}, the results have {len(want)} x {len(want[0])}")
    for y, (g, w) in enumerate(zip(got, want)):
        for x, (a, b) in enumerate(zip(g, w)):
            if not same(a, b):
                fail(f"{path}: row {y} column {x}: {a} != {b} in the results")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    exe, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    p = lambda n: os.path.join(out, n)

    def run(args):
        r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            fail(f"wafer-emu {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
        return r

    tiny = ["decode", "--wafer", "tiny", "--model", "tiny-llama", "--context", "64"]
    run(tiny + ["--density", "20", "--seed", "3", "--json", p("d.json")])
    run(["report", "--in", p("d.json"), "--out", p("d.html")])
    res = json.load(open(p("d.json")))
    reg = res["regions"]
    w0 = reg["wafer_0"]
    if len(w0["link_utilisation"]["value"]) != reg["rows"]["value"] or len(w0["link_utilisation"]["value"][0]) != reg["columns"]["value"]:
        fail("regions: matrix shape differs from rows x columns")
    if sum(sum(r) for r in w0["tiles_used"]["value"]) != res["fabric"]["tiles_used"]["value"]:
        fail("regions: tiles_used cells do not add up to fabric.tiles_used")
    d = check_page(p("d.html"), ["placement", "Link utilisation", "Tiles busy", "SRAM use", "defects and repair",
                                 "critical path by cause", "critical path per layer"])
    for key in ("link_utilisation", "tile_busy", "sram_use", "tiles_used", "extra_hops", "layer"):
        check_csv(p(f"d.wafer_0.{key}.csv"), w0[key])
    for key in ("defect_map", "spares_used", "displaced"):
        check_csv(p(f"d.repair.{key}.csv"), reg["repair"][key])
    ndef = sum(sum(r) for r in reg["repair"]["defect_map"]["value"])
    if ndef != reg["repair"]["defects"]["value"]:
        fail(f"repair: the defect map holds {ndef} defects, the count says {reg['repair']['defects']['value']}")
    print(f"decode page: {d.count.get('svg', 0)} SVGs, {d.count.get('rect', 0)} rects; CSVs match the results")

    # Cycles are shown whole whatever their size (a step beyond 10^7 cycles was shown to 3 digits).
    big = json.loads(json.dumps(res))  # (its figures kept consistent: the µs at the clock, the causes' sums, the rates)
    more = 37896844 - big["latency_cycles"]["value"]
    big["breakdown"]["compute"]["value"] += more
    for t in ("per_layer", "per_op"):
        names = [c["name"] for c in big["breakdown"][t]["columns"]]
        row = big["breakdown"][t]["rows"][0]
        row[names.index("total")] += more
        row[names.index("compute")] += more
    big["latency_cycles"] = {"value": 37896844, "unit": "cycles"}
    big["latency_us"]["value"] = 37896844 / (big["config"]["clock"]["value"] * 1e3)
    big["tokens_per_s"]["value"] = 1e6 / big["latency_us"]["value"]
    json.dump(big, open(p("big.json"), "w"))
    run(["report", p("big.json"), "--out", p("big.html")])
    if "(37896844 cycles)" not in open(p("big.html"), encoding="utf-8").read():
        fail("a latency of 37,896,844 cycles is not shown whole")

    # A latency that is no whole count of cycles is no decode result: refused in one line (it was shown as "-").
    bad = dict(res)
    bad["latency_cycles"] = {"value": "12", "unit": "cycles"}
    json.dump(bad, open(p("bad.json"), "w"))
    r = subprocess.run([exe, "report", p("bad.json"), "--out", p("bad.html")], capture_output=True, text=True, timeout=300)
    if r.returncode != 2 or "latency_cycles is not" not in r.stderr or r.stderr.count("\n") != 1 or os.path.exists(p("bad.html")):
        fail(f"a string latency: exit {r.returncode}, {r.stderr!r}")

    # Results edited by hand into a form decode never writes are refused in one line (each was drawn: a latency of
    # "fast" as "-", -5 µs, a 1 x 1 heatmap where the regions are 8 x 8, a string cell, a count of -1 rows, a short
    # table row).
    def edited(name, change, base=None):
        e = json.loads(json.dumps(res if base is None else base))
        change(e)
        json.dump(e, open(p(name + ".json"), "w"))
        r = subprocess.run([exe, "report", p(name + ".json"), "--out", p(name + ".html")], capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 2 or "(edited?)" not in r.stderr or r.stderr.count("\n") != 1 or os.path.exists(p(name + ".html")):
            fail(f"results edited ({name}): exit {r.returncode}, {r.stderr!r}")
    edited("e_latency", lambda e: e["latency_us"].update(value="fast"))
    edited("e_negative", lambda e: e["latency_us"].update(value=-5))
    edited("e_shape", lambda e: e["regions"]["wafer_0"]["tile_busy"].update(value=[[1]]))
    edited("e_cell", lambda e: e["regions"]["wafer_0"]["sram_use"]["value"][0].__setitem__(0, "x"))
    edited("e_rows", lambda e: e["regions"]["rows"].update(value=-1))
    edited("e_row", lambda e: e["breakdown"]["per_layer"]["rows"][0].pop())
    edited("e_physical", lambda e: e["regions"]["repair"]["defect_map"].update(value=[[0, 1], [1, 0]]))
    # Figures that disagree with each other (each was drawn): a cause of -1, "x" or one cycle more than the path's
    # (the causes sum to the latency), a per-layer cell "x", a latency of 1e308 µs for the same cycles, a wafer's
    # regions deleted or added, the wafer count edited.
    edited("e_cause_negative", lambda e: e["breakdown"]["compute"].update(value=-1))
    edited("e_cause_text", lambda e: e["breakdown"]["compute"].update(value="x"))
    edited("e_cause_sum", lambda e: e["breakdown"]["compute"].update(value=e["breakdown"]["compute"]["value"] + 1))
    edited("e_count", lambda e: e["breakdown"]["path_tasks"].update(value=1.5))
    edited("e_layer_cell", lambda e: e["breakdown"]["per_layer"]["rows"][0].__setitem__(1, "x"))
    edited("e_layer_negative", lambda e: e["breakdown"]["per_op"]["rows"][0].__setitem__(4, -3))
    edited("e_us", lambda e: e["latency_us"].update(value=1e308))
    edited("e_clock", lambda e: e["config"]["clock"].update(value=2.2))
    edited("e_wafer_gone", lambda e: e["regions"].pop("wafer_0"))
    edited("e_wafer_added", lambda e: e["regions"].__setitem__("wafer_1", e["regions"]["wafer_0"]))
    edited("e_wafers", lambda e: e["config"]["wafers"].update(value=2))
    # ... causes of 2^63 + c that wrap to the latency when summed, a row's total not its causes', the rows doubled,
    # the tokens per second doubled, a clock of 1e-300 GHz with its latency in µs to match (each was drawn).
    def wrap(e):
        c = e["breakdown"]
        c["compute"]["value"] += 2**63
        c["vector_setup"]["value"] += 2**63
    edited("e_wrap", wrap)
    edited("e_row_total", lambda e: e["breakdown"]["per_op"]["rows"][0].__setitem__(1, e["breakdown"]["per_op"]["rows"][0][1] + 1))
    edited("e_rows_twice", lambda e: e["breakdown"]["per_layer"].update(rows=e["breakdown"]["per_layer"]["rows"] * 2))
    edited("e_tokens", lambda e: e["tokens_per_s"].update(value=2 * e["tokens_per_s"]["value"]))
    def slow_clock(e):
        e["config"]["clock"]["value"] = 1e-300
        e["latency_us"]["value"] = e["latency_cycles"]["value"] / 1e-297
    edited("e_clock_slow", slow_clock)
    # Heatmap cells no run writes (each was drawn, its scale stretched to them: link use of -5 % or 500 %, a layer
    # index no layer has, more tiles used than a cell holds) and repair maps whose cells do not sum to the counts.
    def cell(key, v, section=lambda e: e["regions"]["wafer_0"]):
        return lambda e: section(e)[key]["value"][0].__setitem__(0, v)
    edited("e_util_negative", cell("link_utilisation", -5))
    edited("e_util_over", cell("link_utilisation", 500))
    edited("e_busy_over", cell("tile_busy", 100.5))
    edited("e_sram_over", cell("sram_use", 101))
    edited("e_layer_index", cell("layer", 99))
    edited("e_layer_fraction", cell("layer", 0.5))
    edited("e_tiles_over", cell("tiles_used", reg["cell_side"]["value"] ** 2 + 1))
    edited("e_hops_negative", cell("extra_hops", -1))
    rp = lambda e: e["regions"]["repair"]
    edited("e_defect_cell", cell("defect_map", reg["repair"]["defect_map"]["value"][0][0] + 1, rp))
    edited("e_defects_count", lambda e: rp(e)["defects"].update(value=rp(e)["defects"]["value"] + 1))
    edited("e_spares_cell", cell("spares_used", 2, rp))
    edited("e_displaced_count", lambda e: rp(e)["displaced_tiles"].update(value=rp(e)["displaced_tiles"]["value"] + 1))
    # (and at the bounds, results as decode writes them: every percentage at 0 and 100, an idle cell)
    at_bounds = json.loads(json.dumps(res))
    for key in ("link_utilisation", "tile_busy", "sram_use"):
        at_bounds["regions"]["wafer_0"][key]["value"][0][0] = 100
        at_bounds["regions"]["wafer_0"][key]["value"][0][1] = 0
    at_bounds["regions"]["wafer_0"]["layer"]["value"][0][0] = -1
    json.dump(at_bounds, open(p("bounds.json"), "w"))
    run(["report", p("bounds.json"), "--out", p("bounds.html")])
    # Unedited results of the search (decode --placement auto) are drawn: its candidates table holds -1 for a figure
    # a candidate has not (they were refused as edited).
    run(tiny + ["--placement", "auto", "--json", p("auto.json")])
    run(["report", p("auto.json"), "--out", p("auto.html")])

    # A prefill in chunks: named so, its time to first token and its chunks as the results give them.
    run(tiny + ["--prefill", "64", "--chunk", "16", "--json", p("pf.json")])
    run(["report", p("pf.json"), "--out", p("pf.html")])
    check_page(p("pf.html"), ["placement"])
    pf, text = json.load(open(p("pf.json"))), open(p("pf.html"), encoding="utf-8").read()
    if "<h1>tiny-llama on tiny: prefill of 64 tokens at context 64</h1>" not in text:
        fail("the prefill page is not titled as a prefill")
    if f"({pf['latency_cycles']['value']} cycles) for 64 tokens a sequence in 4 chunk(s) of at most 16" not in text:
        fail("the prefill page's headline")
    for row in pf["prefill"]["per_chunk"]["rows"]:
        if f"<tr><td>{row[0]}</td><td>{row[1]}</td><td>{row[2]}</td><td>{row[3]}</td>" not in text:
            fail(f"the prefill page has no row for chunk {row}")
    # Chunks and sequences that disagree with the step are refused (each was drawn as edited): a chunk's tokens, its
    # cycles, its µs, its place in the prompt, a chunk deleted, the time to first token; a mixed step's sequence's
    # tokens or rate, a sequence deleted.
    chunk = lambda e: e["prefill"]["per_chunk"]["rows"][1]
    edited("e_chunk_tokens", lambda e: chunk(e).__setitem__(1, chunk(e)[1] - 1), pf)
    edited("e_chunk_cycles", lambda e: chunk(e).__setitem__(3, chunk(e)[3] + 1), pf)
    edited("e_chunk_us", lambda e: chunk(e).__setitem__(4, chunk(e)[4] * 2), pf)
    edited("e_chunk_first", lambda e: chunk(e).__setitem__(0, 0), pf)
    edited("e_chunk_gone", lambda e: e["prefill"]["per_chunk"]["rows"].pop(), pf)
    edited("e_ttft", lambda e: e["ttft_us"].update(value=1.0), pf)
    edited("e_prefill_gone", lambda e: e.pop("prefill"), pf)
    run(["decode", "--wafer", "small", "--model", "small-llama", "--step", "32@128,1@64", "--json", p("mx.json")])
    mx = json.load(open(p("mx.json")))
    run(["report", p("mx.json"), "--out", p("mx.html")])
    seq = lambda e: e["mixed"]["per_sequence"]["rows"][0]
    edited("e_seq_tokens", lambda e: seq(e).__setitem__(2, seq(e)[2] + 1), mx)
    edited("e_seq_rate", lambda e: seq(e).__setitem__(4, seq(e)[4] + 1), mx)
    edited("e_seq_gone", lambda e: e["mixed"]["per_sequence"]["rows"].pop(), mx)
    edited("e_mixed_gone", lambda e: e.pop("mixed"), mx)
    edited("e_mixed_added", lambda e: e.__setitem__("mixed", mx["mixed"]))
    print("prefill and mixed pages: chunks and sequences that disagree with the step refused")

    # Two wafers with one map (a file given once): the counts are said to be each wafer's.
    run(tiny + ["--density", "20", "--seed", "3", "--defects-out", p("map3.csv")])
    run(tiny + ["--wafers", "2", "--defects", p("map3.csv"), "--json", p("two.json")])
    run(["report", p("two.json"), "--out", p("two.html")])
    check_page(p("two.html"), ["placement", "Link utilisation"])
    if "the counts below are each of the 2 wafers'" not in open(p("two.html"), encoding="utf-8").read():
        fail("two wafers: the repair counts are not said to be each wafer's")
    for k in (0, 1):
        if not os.path.exists(p(f"two.wafer_{k}.link_utilisation.csv")):
            fail(f"two wafers: no heatmap CSV for wafer {k}")
    print("two wafers: a section and CSVs per wafer")
    # Two wafers with maps of their own (generated): each wafer's physical wafer, its counts and CSVs.
    run(tiny + ["--wafers", "2", "--density", "100", "--seed", "1", "--json", p("own.json")])
    run(["report", p("own.json"), "--out", p("own.html")])
    own, text = json.load(open(p("own.json"))), open(p("own.html"), encoding="utf-8").read()
    if "repair" in own["regions"] or "Each wafer has a defect map of its own" not in text:
        fail("maps of their own: the page or the results speak of one map")
    for k in (0, 1):
        rp = own["regions"][f"wafer_{k}"]["repair"]
        if f"<h3>Wafer {k}</h3>" not in text:
            fail(f"maps of their own: no repair section for wafer {k}")
        for key in ("defect_map", "spares_used", "displaced"):
            check_csv(p(f"own.wafer_{k}.repair.{key}.csv"), rp[key])
        if f"<tr><td>defects</td><td>{rp['defects']['value']} defects</td></tr>" not in text:
            fail(f"maps of their own: wafer {k}'s defect count is not on the page")
    print("two wafers, a map each: a repair section and CSVs per wafer")

    run(["sweep", "--spec", os.path.join(ROOT, "configs", "studies", "tiny.json"), "--out", p("study")])
    run(["report", p("study"), "--out", p("study.html")])
    d = check_page(p("study.html"), ["latency distributions", "causes per setting"])
    text = open(p("study.html"), encoding="utf-8").read()
    if text.count("<tr>") < 1 + 8:  # header + 8 settings of the tiny study
        fail(f"study page: {text.count('<tr>')} table rows, expected a header and 8 settings")
    # (its latencies to 6 digits: a setting's mean and percentiles differ in the 5th)
    summary = json.load(open(p("study/summary.json")))
    means = [r[summary["settings"]["columns"].index({"name": "mean", "unit": "us"})] for r in summary["settings"]["rows"]]
    for m in means:
        if isinstance(m, float) and math.isfinite(m) and f"<td>{m:.6g}</td>" not in text:
            fail(f"study page: no cell {m:.6g} (a setting's mean)")
    print(f"study page: {d.count.get('svg', 0)} SVGs, {d.count.get('circle', 0)} points plotted")

    # The points are read as sweep --summarize reads them: a line's settings are the study's at its index (a second
    # line of an index: the same page), and a line of another study or beyond its points is refused in one line.
    def page_of(lines, name):
        d2 = p(name)
        shutil.copytree(p("study"), d2)
        open(os.path.join(d2, "points.jsonl"), "w").write("".join(lines))
        return subprocess.run([exe, "report", d2, "--out", p(name + ".html")], capture_output=True, text=True, timeout=300)
    orig = open(p("study/points.jsonl")).readlines()
    first = json.loads(orig[0])
    def same_page(name):
        a = open(p("study.html"), encoding="utf-8").read().replace(p("study"), "DIR")
        b = open(p(name + ".html"), encoding="utf-8").read().replace(p(name), "DIR")
        return a == b
    dup = dict(first, latency_us=1e6, status="ok")
    r = page_of(orig + [json.dumps(dup) + "\n"], "study_dup")
    if r.returncode != 0 or not same_page("study_dup"):
        fail(f"a second line of point {first['index']}: exit {r.returncode}, or another page ({r.stderr.strip()})")
    for name, bad, want in (("study_other", dict(first, study="0123456789abcdef"), "a point of study"),
                            ("study_beyond", dict(first, index=10**6), "is outside the study's")):
        r = page_of(orig[:2] + [json.dumps(bad) + "\n"] + orig[2:], name)
        if r.returncode != 2 or want not in r.stderr or r.stderr.count("\n") != 1:
            fail(f"{name}: exit {r.returncode}, {r.stderr!r}")
    # A line edited in place is refused by both, in one line (each was summarised or drawn as it stood: a status
    # "weird" a failure, a hash not its settings', a negative usable tile count into the mean, repair ok "yes" a
    # success, settings naming another placement, a latency of 1e308 µs or 1 % more for the same cycles (not their
    # time at the point's wafer clock), tile, defect or hop counts below 0 or disagreeing, a failure on an ok point,
    # a failure stage no run writes or no reason, causes deleted or not
    # summing to the latency, a failure without its reason).
    ok_first = next(json.loads(l) for l in orig if json.loads(l)["status"] == "ok")
    failed_first = next(json.loads(l) for l in orig if json.loads(l)["status"] == "failed")
    no_breakdown = dict(ok_first)
    no_breakdown.pop("breakdown_cycles")
    cause = next(iter(ok_first["breakdown_cycles"]))
    for name, bad in (("weird", dict(ok_first, status="weird")), ("hash", dict(ok_first, hash="0")),
                      ("usable", dict(ok_first, usable_tiles=-5)),
                      ("complete", dict(ok_first, repair=dict(ok_first["repair"], complete="yes"))),
                      ("cycles", dict(ok_first, latency_cycles=12.5)),
                      ("settings", dict(ok_first, settings=dict(ok_first["settings"], placement="whole-wafer"))),
                      ("us", dict(ok_first, latency_us=1e308)), ("breakdown", no_breakdown),
                      ("us_near", dict(ok_first, latency_us=ok_first["latency_us"] * 1.01)),
                      ("sum", dict(ok_first, breakdown_cycles=dict(ok_first["breakdown_cycles"],
                                                                   **{cause: ok_first["breakdown_cycles"][cause] + 1}))),
                      ("failure", {k: v for k, v in dict(ok_first, status="failed").items() if k != "failure"}),
                      ("wrap", dict(ok_first, breakdown_cycles=dict(ok_first["breakdown_cycles"], **{
                          c: v + 2**63 for c, v in list(ok_first["breakdown_cycles"].items())[:2]}))),
                      ("tiles", dict(ok_first, tiles_used=-3)),
                      ("defects", dict(ok_first, repair=dict(ok_first["repair"], defects=-5))),
                      ("hops", dict(ok_first, extra_hops=ok_first["extra_hops"] + 1)),
                      ("ok_failure", dict(ok_first, failure={"stage": "map", "reason": "x"})),
                      ("stage", dict(failed_first, failure=dict(failed_first["failure"], stage="bogus"))),
                      ("reason", dict(failed_first, failure=dict(failed_first["failure"], reason="")))):
        lines = [json.dumps(bad) + "\n" if json.loads(l)["index"] == bad["index"] else l for l in orig]
        r = page_of(lines, "study_" + name)
        s = subprocess.run([exe, "sweep", "--summarize", p("study_" + name)], capture_output=True, text=True, timeout=300)
        for what, res in (("report", r), ("sweep --summarize", s)):
            if res.returncode != 2 or "(edited?)" not in res.stderr or res.stderr.count("\n") != 1:
                fail(f"{what} of a line edited ({name}): exit {res.returncode}, {res.stderr!r}")
    # Lines no run writes are refused by both alike (report skipped a blank line that the summary called damage, and
    # took an index of 7.0 for one beyond the study's points; a key given twice, the last one read, was taken by both).
    twice = orig[0].rstrip("\n")[:-1] + ', "status": "failed"}\n'
    for name, lines, want in (("blank", orig[:1] + ["\n"] + orig[1:], "not JSON before the last line"),
                              ("index", [json.dumps(dict(first, index=float(first["index"]))) + "\n"] + orig[1:],
                               "not a point line"),
                              ("twice", [twice] + orig[1:], "key 'status' is given twice in one line (edited?)")):
        r = page_of(lines, "study_" + name)
        s = subprocess.run([exe, "sweep", "--summarize", p("study_" + name)], capture_output=True, text=True, timeout=300)
        for what, res in (("report", r), ("sweep --summarize", s)):
            if res.returncode != 2 or want not in res.stderr or res.stderr.count("\n") != 1:
                fail(f"{what} of a line no run writes ({name}): exit {res.returncode}, {res.stderr!r}")
    print("study page: points read as the summary reads them; lines edited in place refused")

    # A study with a joint axis (each placement with its kernel): the kernel is swept, so it is in the labels.
    run(["sweep", "--spec", os.path.join(ROOT, "tests", "cli", "data", "sweep_joint_tiny.json"), "--out", p("joint")])
    run(["report", p("joint"), "--out", p("joint.html")])
    check_page(p("joint.html"), ["latency distributions", "causes per setting"])
    text = open(p("joint.html"), encoding="utf-8").read()
    for label in ("layer-bands, 0 /cm², hop_latency 1, kernel bands", "square, 200 /cm², hop_latency 3, kernel meshgemv"):
        if label not in text:
            fail(f"joint study page: no setting labelled '{label}' (a joint axis's settings are swept)")
    print("joint study page: its settings labelled with the joint axis's kernel")

    os.makedirs(p("e.wafer_0.sram_use.csv"))  # (written after the layer, link and busy ones)
    before = sorted(os.listdir(out))
    r = subprocess.run([exe, "report", p("d.json"), "--out", p("e.html")], capture_output=True, text=True, timeout=300)
    if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1:
        fail(f"report with a folder in a CSV's place: exit {r.returncode}, stderr {r.stderr!r}")
    if sorted(os.listdir(out)) != before:
        fail(f"report with a folder in a CSV's place left {sorted(set(os.listdir(out)) - set(before))}")
    print(f"a CSV not written: {r.stderr.strip()}; nothing left behind")
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
