"""No output is written over a file the run reads or another output, however it is named (a one-line error, exit 2,
the file as it was):

- decode --json over the config of a shipped model given by its name (the configs copied into OUTDIR, found through
  WAFER_EMU_CONFIGS, so that a failure cannot touch the repository's);
- sweep --json over a model config the study names by a path relative to it, and over the study's summary.csv;
- report --out over a study's summary.csv, report --json over a CSV the report writes beside its page;
- sweep --summarize --json and report --out/--json over the study file or the model its folder's spec.json names;
- a hard link to an input, refused before the run;
- two outputs through a link whose target does not exist yet;
- an empty path, refused naming its option.

Usage: outputs_over_inputs_check.py WAFER_EMU OUTDIR CONFIGS_DIR
"""
import hashlib, json, os, shutil, socket, subprocess, sys

exe, out, configs = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
p = lambda n: os.path.join(out, n)
shutil.copytree(configs, p("configs"))
env = dict(os.environ, WAFER_EMU_CONFIGS=p("configs/models"))
fails = []
digest = lambda f: hashlib.sha256(open(f, "rb").read()).hexdigest() if os.path.exists(f) else None


def refused(args, protected, words):
    before = digest(protected)
    r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=300, env=env, cwd=out)
    if r.returncode != 2 or words not in r.stderr or r.stderr.count("\n") != 1:
        fails.append(f"{' '.join(args)}: exit {r.returncode}, {r.stderr!r} (expected '{words}')")
    if digest(protected) != before:
        fails.append(f"{' '.join(args)}: {protected} was written over")


def ok(args):
    r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=300, env=env, cwd=out)
    if r.returncode != 0:
        fails.append(f"{' '.join(args)}: exit {r.returncode}, {r.stderr!r}")


tiny = ["--wafer", "tiny", "--model", "tiny-llama", "--context", "64"]
shipped = p("configs/models/test/tiny-llama.json")
refused(["decode"] + tiny + ["--json", shipped], shipped, "names the file --model reads")

shutil.copy(shipped, p("mymodel.json"))
json.dump({"schema": 1, "fixed": {"wafer": "tiny", "model": "mymodel.json", "context": 64}}, open(p("s.json"), "w"))
refused(["sweep", "--spec", "s.json", "--out", "study", "--json", "mymodel.json"], p("mymodel.json"),
        "--json mymodel.json names the file --spec (its model mymodel.json) reads")
ok(["sweep", "--spec", "s.json", "--out", "study"])
refused(["sweep", "--summarize", "study", "--json", "study/summary.csv"], p("study/summary.csv"), "names the file --summarize writes")
refused(["report", "--in", "study", "--out", "study/summary.csv"], p("study/summary.csv"), "names the file the study's sweep writes")
# The study file and the model it names, read back from the folder's spec.json: --summarize's --json and report's
# --out were written over them (exit 0); the workers' memory table is the sweep's too.
refused(["sweep", "--summarize", "study", "--json", "s.json"], p("s.json"), "names the file --summarize (the study file) reads")
refused(["sweep", "--summarize", "study", "--json", "mymodel.json"], p("mymodel.json"),
        "names the file --summarize (the study's model mymodel.json) reads")
refused(["report", "--in", "study", "--out", "s.json"], p("s.json"), "names the file --in (the study file) reads")
refused(["report", "--in", "study", "--json", "mymodel.json"], p("mymodel.json"), "(the study's model mymodel.json) reads")
memory_table = "study/.memory-" + socket.gethostname()
refused(["report", "--in", "study", "--out", memory_table], p(memory_table), "the study's sweep writes")

# A hard link to an input is the input, refused before the run (it was refused only when written, after the run).
os.link(p("mymodel.json"), p("hard.json"))
refused(["decode", "--wafer", "tiny", "--model", "mymodel.json", "--context", "64", "--json", "hard.json"], p("mymodel.json"),
        "--json hard.json names the file --model reads")
refused(["sweep", "--spec", "s.json", "--out", "study_hard", "--json", "hard.json"], p("mymodel.json"),
        "--json hard.json names the file --spec (its model mymodel.json) reads")

ok(["decode"] + tiny + ["--json", "r.json"])
os.makedirs(p("rr"))
refused(["report", "--in", "r.json", "--out", "rr/b.html", "--json", "rr/b.wafer_0.layer.csv"], p("rr/b.wafer_0.layer.csv"),
        "names the file --out (a CSV beside the page) writes")
if os.listdir(p("rr")):
    fails.append(f"a refused report wrote {os.listdir(p('rr'))}")

os.symlink("o.json", p("olink.json"))
refused(["decode"] + tiny + ["--json", "o.json", "--trace", "olink.json"], p("o.json"), "names the file --json writes")
# An empty path names its option (CMake cannot pass an empty argument, so these are here).
# Every option alike, before anything is read ("sweep --summarize ''" said "spec.json: cannot open", "report ''" ":
# no such file or folder", "decode --defects-out ''" "a defect map file ends in .csv or .json").
for args, words in ((["decode"] + tiny + ["--json", ""], "--json is empty: give its value"),
                    (["decode"] + tiny + ["--defects", ""], "--defects is empty"),
                    (["decode"] + tiny + ["--density", "1", "--seed", "1", "--defects-out", ""], "--defects-out is empty"),
                    (["decode"] + tiny[:2] + ["--model", ""], "--model is empty"),
                    (["decode", "--wafer", ""], "--wafer is empty"),
                    (["sweep", "--spec", "s.json", "--out", ""], "--out is empty"),
                    (["sweep", "--summarize", ""], "--summarize is empty"),
                    (["sweep", "--spec", ""], "--spec is empty"),
                    (["report", ""], "--in is empty"),
                    (["defects", "--wafer", "tiny", "--in", ""], "--in is empty"),
                    (["validate", "--cases", ""], "--cases is empty"),
                    (["table", "--wafer", "tiny", "--model", "tiny-llama", "--contexts", ""], "--contexts is empty"),
                    # (a name of blanks only: --json ' ' wrote a file named by a space)
                    (["decode"] + tiny + ["--json", " "], "--json ' ': a file name of blanks only"),
                    (["decode"] + tiny + ["--trace", "\t"], "a file name of blanks only")):
    r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=300, env=env, cwd=out)
    if r.returncode != 2 or words not in r.stderr or r.stderr.count("\n") != 1:
        fails.append(f"{args}: exit {r.returncode}, {r.stderr!r} (expected '{words}')")
for f in fails:
    print("FAIL:", f)
if fails:
    sys.exit(1)
print("ok: no output written over an input (a shipped model, a study's model) or another output (a study's summary, "
      "a report's CSV, through a link)")
