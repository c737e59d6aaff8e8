#!/usr/bin/env python3
"""Generates the result tables of README.md and docs/benchmarks.md from the
CSVs committed under docs/benchmark-results/, so the docs cannot drift from
the data.

  python3 scripts/bench_report.py           rewrite every generated table in place
  python3 scripts/bench_report.py --check   regenerate in memory; exit 1 (with a diff) on any difference
  python3 scripts/bench_report.py --list    each table's name and the files it reads
  /usr/bin/python3 scripts/bench_report.py --plots
                                            also redraw docs/figures (needs matplotlib)

A generated table sits in a document between two markers:

  <!-- bench_report: NAME -->
  ...                      (everything here is replaced)
  <!-- /bench_report -->

and ends with a "Measured on / at / with" line taken from the machine.txt
beside its CSVs. A new run replaces the folder a table reads (TABLES below),
and the script regenerates the table. A marker naming an unknown table, an
unclosed marker, a missing file or a malformed CSV stops the script with a
message naming it (exit 2). Each figure (FIGURES) records in its PNG a
digest of the folders it was drawn from; --check fails on a figure whose
data changed since. Standard library only, except --plots (matplotlib and
scripts/plot_benchmarks.py).
"""
import argparse
import csv
import difflib
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "benchmark-results")
DOCS = ["README.md", os.path.join("docs", "benchmarks.md")]
MARKER = re.compile(r"<!-- bench_report: (\S+) -->\n(.*?)<!-- /bench_report -->", re.S)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class ReportError(Exception):
    pass


# ---------------------------------------------------------------------------
# Reading


def path_of(rel):
    p = os.path.join(RESULTS, rel)
    if not os.path.exists(p):
        raise ReportError("missing %s (docs/benchmark-results/%s)" % (p, rel))
    return p


def read_rows(rel):
    """Rows of one CSV as dicts; every row must have the header's width."""
    p = path_of(rel)
    with open(p, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if not header:
            raise ReportError("%s: empty file" % p)
        rows = []
        for n, fields in enumerate(reader, start=2):
            if not fields:
                continue
            if len(fields) != len(header):
                raise ReportError("%s:%d: %d fields, the header has %d" % (p, n, len(fields), len(header)))
            rows.append(dict(zip(header, fields)))
    if not rows:
        raise ReportError("%s: no data rows" % p)
    return rows


def number(row, column, where):
    try:
        return float(row[column])
    except (KeyError, ValueError):
        raise ReportError("%s: column %r is %r, not a number" % (where, column, row.get(column)))


def machine(rel):
    """(date, cpu, git) from a run's machine.txt ('# tool DATE', '# Model name: X', '# git: Y')."""
    p = path_of(rel)
    date = cpu = git = None
    for line in open(p):
        line = line.strip()
        if line.startswith("# Model name:"):
            cpu = line.split(":", 1)[1].strip()
        elif line.startswith("# git:"):
            git = line.split(":", 1)[1].strip().replace(" (modified)", "")
        elif date is None and re.match(r"# \S+ \d{4}-\d\d-\d\d", line):
            date = line.split()[2][:10]
    if not (date and cpu and git):
        raise ReportError("%s: needs '# tool DATE', '# Model name:' and '# git:' lines" % p)
    if "zen5" in rel:
        cpu += " (Zen 5)"
    return date, cpu, git


def measured(sources, command, extra=""):
    """The line under a table: where, when, at which commit and with what."""
    runs, cpus = [], []
    for rel in sources:
        date, cpu, git = machine(rel)
        if (date, git, cpu) not in runs:
            runs.append((date, git, cpu))
            cpus.append(cpu)
    if len(set(cpus)) == 1:
        where = "a 2-core %s VM, %s" % (cpus[0], "; ".join("%s at %s" % r[:2] for r in runs))
    else:
        where = "2-core VMs, %s" % "; ".join("%s at %s (%s)" % r for r in runs)
    return "Measured on %s, with `%s`%s." % (where, command, extra)


def md(header, rows, right_from=1):
    out = ["| " + " | ".join(header) + " |",
           "| " + " | ".join("---" if i < right_from else "---:" for i in range(len(header))) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def ratio_text(x):
    return "%.2fx" % x


def span(values):
    lo, hi = min(values), max(values)
    return ratio_text(lo) if "%.2f" % lo == "%.2f" % hi else "%.2f–%.2fx" % (lo, hi)


def rate(r):
    import dynet_table
    return dynet_table.rate(r)


def goal_text(value, goal):
    return "≥ %.1fx: met" % goal if value >= goal else "≥ %.1fx: **not met**" % goal


# ---------------------------------------------------------------------------
# Against the real DyNet (bench_dynet.sh CSVs, read with dynet_table's reader)

DYNET_TREE_LSTM = ["zen5-2026-12-07/tree-lstm-adam-2core-rtt", "zen5-2026-12-07/tree-lstm-adagrad-2core-b63a7e5"]
DYNET_LM = ["zen5-2026-12-07/lstm"]
DYNET_TREE_FC = ["zen5-2026-12-07/tree-fc-run1", "zen5-2026-12-07/tree-fc-run2", "zen5-2026-12-07/tree-fc-run3"]
DYNET_MEMORY = "zen5-2026-12-07/memory-whole-epoch"


def dynet_points(folders):
    """{(workload, cell or sizes, optimizer, hidden, batch): {strategy [+ ' 2c']: row}} over folders."""
    import dynet_table
    points = {}
    for folder in folders:
        rows = dynet_table.rows_of(path_of(folder))
        if not rows:
            raise ReportError("no CSV in docs/benchmark-results/%s" % folder)
        dynet_table.points_of(rows, points)
    return points


def over(a, b):
    return float(a["samples_per_s"]) / float(b["samples_per_s"])


def tree_lstm_goal(batch):
    return 1.5 if batch <= 16 else 1.2


def table_dynet_tree_lstm():
    rows = []
    for key, p in sorted(dynet_points(DYNET_TREE_LSTM).items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][3], kv[0][4])):
        _, cell, opt, h, b = key
        s, ab, dn, s2 = p["sylva"], p["dynet-autobatch"], p.get("dynet"), p.get("sylva 2c")
        one = over(s, ab)
        two = "%s (%s)" % (ratio_text(over(s2, ab)), goal_text(over(s2, ab), 1.8)) if s2 and b >= 16 else \
            ratio_text(over(s2, ab)) if s2 else "–"
        rows.append([cell, opt, str(h), str(b), rate(s), rate(ab), rate(dn) if dn else "–",
                     "**%s**" % ratio_text(one), goal_text(one, tree_lstm_goal(b)), two])
    out = md(["cell", "optimiser", "h = d", "batch", "Sylva, 1 core", "DyNet-autobatch", "DyNet",
              "Sylva / DyNet-ab", "goal", "Sylva 2 cores / DyNet-ab (goal at batch ≥ 16)"], rows, right_from=2)
    return out + ["", measured([f + "/machine.txt" for f in DYNET_TREE_LSTM],
                               "TWO_CORES=1 OPTIMIZERS=\"adam adagrad\" bash scripts/bench_dynet.sh DIR",
                               "; trees/s, median of 3 repeats (min–max)")]


def table_readme_dynet_tree_lstm():
    pts = dynet_points(DYNET_TREE_LSTM)
    hs, batches = sorted({k[3] for k in pts}), sorted({k[4] for k in pts})
    rows = []
    for cores in ("1 core", "2 cores"):
        for h in hs:
            line = ["%d, %s" % (h, cores)]
            for b in batches:
                rs = [over(p["sylva" if cores == "1 core" else "sylva 2c"], p["dynet-autobatch"])
                      for k, p in pts.items() if k[3] == h and k[4] == b and ("sylva 2c" in p or cores == "1 core")]
                line.append(span(rs) if rs else "–")
            rows.append(line)
    return md(["h = d, Sylva on"] + ["batch %d" % b for b in batches], rows) + [
        "", measured([f + "/machine.txt" for f in DYNET_TREE_LSTM], "bash scripts/bench_dynet.sh",
                     "; Sylva's trees/s over one-core DyNet-autobatch's, range over both cells and both optimisers")]


def lm_rows():
    pts = dynet_points(DYNET_LM)
    return sorted(pts.items(), key=lambda kv: (kv[0][0] != "var-lstm", kv[0][1], kv[0][4]))


def sizes_text(cell):  # e128-h256-l1 -> 128/256, 1 layer
    e, h, l = cell.split("-")
    return "%s/%s, %s layer%s" % (e[1:], h[1:], l[1:], "" if l == "l1" else "s")


def table_dynet_lm():
    rows = []
    for (wl, cell, opt, h, b), p in lm_rows():
        s, ab, dn = p["sylva"], p["dynet-autobatch"], p.get("dynet")
        r = over(s, ab)
        rows.append([wl, sizes_text(cell), str(b), rate(s), rate(ab), "**%s**" % ratio_text(r), goal_text(r, 1.2),
                     ratio_text(over(p["sylva 2c"], ab)) if "sylva 2c" in p else "–"])
    return md(["workload", "embedding/hidden", "batch", "Sylva, 1 core", "DyNet-autobatch", "Sylva / DyNet-ab",
               "goal", "Sylva 2 cores / DyNet-ab"], rows, right_from=2) + [
        "", measured([f + "/machine.txt" for f in DYNET_LM],
                     "TWO_CORES=1 WORKLOADS=\"var-lstm fixed-lstm\" bash scripts/bench_dynet.sh DIR",
                     "; Adam; sentences (Var-LSTM) or 64-token chains (Fixed-LSTM) per second, median of 3 (min–max)")]


def tree_fc_runs():
    """{batch: [points of each run]}"""
    by = {}
    for folder in DYNET_TREE_FC:
        for key, p in dynet_points([folder]).items():
            by.setdefault(key[4], []).append(p)
    return by


def table_dynet_tree_fc():
    rows = []
    for b, runs in sorted(tree_fc_runs().items()):
        vs_dynet = [over(p["sylva"], p["dynet-autobatch"]) for p in runs]
        vs_dd = [over(p["sylva"], p["dynamic-decl-autobatch"]) for p in runs]
        floor = [over(p["gemm-floor"], p["dynamic-decl-autobatch"]) for p in runs if "gemm-floor" in p]
        m1, m2 = statistics.median(vs_dynet), statistics.median(vs_dd)
        rows.append([str(b), "%s (%s)" % (ratio_text(m1), span(vs_dynet)), goal_text(m1, 1.2),
                     "%s (%s)" % (ratio_text(m2), span(vs_dd)), goal_text(m2, 1.2),
                     span(floor) if floor else "–"])
    return md(["batch", "Sylva / DyNet-autobatch", "goal", "Sylva / dynamic-decl-autobatch", "goal",
               "GEMM floor / dynamic-decl-autobatch"], rows) + [
        "", measured([f + "/machine.txt" for f in DYNET_TREE_FC], "WORKLOADS=tree-fc REPEATS=5 bash scripts/bench_dynet.sh DIR",
                     ", three times; median of the three runs' ratios (range); h = 256, 256 leaves, Adam, one core")]


def table_readme_dynet_lm():
    rows = []
    for (wl, cell, opt, h, b), p in lm_rows():
        if b == 1:
            line = [wl, sizes_text(cell)]
        line.append(ratio_text(over(p["sylva"], p["dynet-autobatch"])))
        if len(line) == 5:
            rows.append(line)
    fc = tree_fc_runs()
    rows.append(["tree-fc", "256 leaves, h = 256"] + [
        ratio_text(statistics.median(over(p["sylva"], p["dynet-autobatch"]) for p in fc[b])) for b in sorted(fc)])
    return md(["workload", "sizes", "batch 1", "batch 16", "batch 64"], rows, right_from=2) + [
        "", measured([f + "/machine.txt" for f in DYNET_LM + DYNET_TREE_FC], "bash scripts/bench_dynet.sh",
                     "; Sylva over one-core DyNet-autobatch, Adam (Tree-FC: median of three runs)")]


def table_dynet_memory():
    rows = []
    for r in read_rows(DYNET_MEMORY + "/memory.csv"):
        where = "%s/memory.csv" % DYNET_MEMORY
        s, pool = number(r, "sylva_peak_rss_mb", where), number(r, "dynet_smallest_pool_mb", where)
        d = number(r, "dynet_peak_rss_mb", where)
        rows.append([r["cell"], r["hidden"], r["batch"], "%.0f" % s, "%.0f (%.0f fails)" % (pool, number(r, "dynet_failing_pool_mb", where)),
                     r["dynet_pools_reserved_mb"], "%.0f" % d, "%.2f" % (d / s),
                     "met" if s <= pool else "**not met**"])
    return md(["cell", "h = d", "batch", "Sylva peak RSS MB", "DyNet's smallest --dynet-mem MB",
               "DyNet's pools reserved MB", "DyNet peak RSS MB", "DyNet / Sylva process", "Sylva ≤ DyNet's --dynet-mem"],
              rows, right_from=1) + [
        "", measured([DYNET_MEMORY + "/machine.txt"], "MEMORY=1 bash scripts/bench_dynet.sh DIR",
                     "; each system alone in its process over a whole SST epoch, Adam; peak RSS is the process's VmHWM")]


def table_dynet_goals():
    tl = dynet_points(DYNET_TREE_LSTM)

    def tl_range(batches, two=False):
        rs = [over(p["sylva 2c" if two else "sylva"], p["dynet-autobatch"]) for k, p in tl.items()
              if k[4] in batches and (not two or "sylva 2c" in p)]
        return min(rs), max(rs)

    lo1, hi1 = tl_range((1, 16))
    lo2, hi2 = tl_range((64, 256))
    lo3, hi3 = tl_range((16, 64, 256), two=True)
    lm = [over(p["sylva"], p["dynet-autobatch"]) for _, p in lm_rows()]
    fc = tree_fc_runs()
    fc_dn = [statistics.median(over(p["sylva"], p["dynet-autobatch"]) for p in fc[b]) for b in fc]
    fc_dd = [statistics.median(over(p["sylva"], p["dynamic-decl-autobatch"]) for p in fc[b]) for b in fc]
    mem = read_rows(DYNET_MEMORY + "/memory.csv")
    mem_met = sum(float(r["sylva_peak_rss_mb"]) <= float(r["dynet_smallest_pool_mb"]) for r in mem)

    def status(ok):
        return "met" if ok else "**not met**"

    rows = [
        ["Tree-LSTM, one core, batch 1 and 16", "≥ 1.5x", "%.2f–%.2fx" % (lo1, hi1), status(lo1 >= 1.5)],
        ["Tree-LSTM, one core, batch 64 and 256", "≥ 1.2x", "%.2f–%.2fx" % (lo2, hi2), status(lo2 >= 1.2)],
        ["Tree-LSTM, two cores, batch ≥ 16 (against one-core DyNet)", "≥ 1.8x", "%.2f–%.2fx" % (lo3, hi3), status(lo3 >= 1.8)],
        ["Var-LSTM and Fixed-LSTM, batch 1, 16, 64", "≥ 1.2x", "%.2f–%.2fx" % (min(lm), max(lm)), status(min(lm) >= 1.2)],
        ["Tree-FC against DyNet-autobatch", "≥ 1.2x", "%.2f–%.2fx" % (min(fc_dn), max(fc_dn)), status(min(fc_dn) >= 1.2)],
        ["Tree-FC against dynamic-decl-autobatch", "≥ 1.2x", "%.2f–%.2fx" % (min(fc_dd), max(fc_dd)), status(min(fc_dd) >= 1.2)],
        ["Peak RSS ≤ DyNet's smallest --dynet-mem, batch 64", "4 of 4 points", "%d of %d" % (mem_met, len(mem)),
         status(mem_met == len(mem))],
    ]
    return md(["goal", "target", "latest", "status"], rows, right_from=3)


# ---------------------------------------------------------------------------
# Against the DyNet-style engines, padding and libtorch (bench_figures.sh)

CAVS = "cavs-2026-12-06"
CAVS_BASELINES = [("dynamic-decl", "DyNet-style, unbatched"),
                  ("dynamic-decl-autobatch", "DyNet-style, agenda autobatching"),
                  ("padded", "padded"),
                  ("libtorch-*", "libtorch (best variant)"),
                  ("dynet-autobatch", "DyNet, autobatching")]


def cavs_rows():
    import plot_benchmarks
    folder = path_of(CAVS)
    paths = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".csv") and "-batch" in f)
    plot_benchmarks.note = lambda msg: None  # its notes on strategies it does not plot
    try:
        return plot_benchmarks.read_all(paths)
    except SystemExit as e:
        raise ReportError("docs/benchmark-results/%s: %s" % (CAVS, e))


def cavs_table(mode, batch):
    rows = cavs_rows()
    out = []
    for wl in ("tree-lstm", "var-lstm", "fixed-lstm", "tree-fc"):
        at = [r for r in rows if r["workload"] == wl and r["mode"] == mode and r["batch"] == batch
              and "batch" in r["sweeps"]]
        if not at:
            continue
        by = {r["strategy"]: r for r in at}
        s = by["sylva"]
        line = ["%s (h = %d%s)" % (wl, s["hidden"], ", %d leaves" % s["leaves"] if wl == "tree-fc" else "")]
        for strat, _ in CAVS_BASELINES:
            cands = [r for name, r in by.items() if name == strat or (strat.endswith("*") and name.startswith(strat[:-1]))]
            best = max(cands, key=lambda r: r["units_per_s"]) if cands else None
            line.append(ratio_text(s["units_per_s"] / best["units_per_s"]) if best else "–")
        out.append(line)
    return md(["workload"] + [name for _, name in CAVS_BASELINES], out) + [
        "", measured([CAVS + "/machine.txt", CAVS + "/machine-tree-fc-rerun.txt"], "bash scripts/bench_figures.sh",
                     "; %s, batch %d, one core, update left out; Sylva's trees, words or vertices per second over each baseline's "
                     "(Tree-FC re-run at the second commit)" % ("training" if mode == "train" else "inference", batch))]


# ---------------------------------------------------------------------------
# Accuracy

def table_accuracy_sst():
    rows = []
    for r in read_rows("accuracy/sst-tree-lstm.csv") + read_rows("accuracy/sst-tree-lstm-adam.csv"):
        fine_c, fine_t = float(r["test_fine_correct"]), float(r["test_fine_total"])
        fine = "%.2f%%" % (100 * fine_c / fine_t) + ("" if fine_t == 100 else " (%d/%d)" % (fine_c, fine_t))
        if r["test_binary_correct"]:
            bc, bt = float(r["test_binary_correct"]), float(r["test_binary_total"])
            binary = "%.2f%%" % (100 * bc / bt) + ("" if bt == 100 else " (%d/%d)" % (bc, bt))
        else:
            binary = "–"
        who = r["system"] + (", %s cell, %s, seed %s" % (r["cell"], r["optimizer"], r["seed"]) if r["seed"] else "")
        rows.append([who, fine, binary, r["epochs"] + (" (%s)" % r["best_dev_epoch"] if r["best_dev_epoch"] else ""),
                     ("%dm%02ds" % divmod(int(r["wall_s"]), 60)) if r["wall_s"] else ""])
    return md(["", "test root fine-grained", "test root binary", "epochs (best dev)", "wall time"], rows) + [
        "", measured(["accuracy/machine-sst.txt", "accuracy/machine-sst-adam.txt"], "taskset -c 1 build/release/examples/02_tree_lstm/tree_lstm --epochs 10 --seed N",
                     " (Adam rows: `--optimizer adam --lr 0.001 [--cell dynet]`); d = 300, h = 150, Adagrad 0.05, "
                     "batch 25, L2 1e-4, dropout 0.5, model chosen on dev root accuracy, one thread")]


def table_accuracy_ptb():
    rows = []
    for r in read_rows("accuracy/ptb-lm.csv"):
        rows.append([r["system"] + (", seed %s" % r["seed"] if r["seed"] else ""), r["model"], r["valid_ppl"],
                     "**%s**" % r["test_ppl"] if r["seed"] else r["test_ppl"], r["epochs"],
                     ("%dm%02ds" % divmod(int(r["wall_s"]), 60)) if r["wall_s"] else ""])
    return md(["", "model", "valid ppl (last epoch)", "test ppl", "epochs", "wall time"], rows, right_from=2) + [
        "", measured(["accuracy/machine-ptb.txt"], "build/release/examples/03_var_lstm/var_lstm --threads 1 --seed 1",
                     " (and `04_fixed_lstm/fixed_lstm`); 2 × 200, SGD lr 1 halved each epoch after epoch 4, clip 5, "
                     "batch 20, no dropout")]


def table_readme_accuracy():
    sst = [r for r in read_rows("accuracy/sst-tree-lstm.csv") if r["optimizer"] == "adagrad"]
    ours = [r for r in sst if r["seed"]]
    ref = next(r for r in sst if not r["seed"])

    def pct(rows, c, t):
        vals = [100 * float(r[c]) / float(r[t]) for r in rows]
        return "%.2f%%" % vals[0] if len(vals) == 1 else "%.2f–%.2f%% (%d seeds)" % (min(vals), max(vals), len(vals))

    rows = [["Tree-LSTM, SST", "test root fine-grained", pct(ours, "test_fine_correct", "test_fine_total"),
             "%s (%s)" % (pct([ref], "test_fine_correct", "test_fine_total"), ref["system"].replace(" (reported)", ""))],
            ["Tree-LSTM, SST", "test root binary", pct(ours, "test_binary_correct", "test_binary_total"),
             "%s (%s)" % (pct([ref], "test_binary_correct", "test_binary_total"), ref["system"].replace(" (reported)", ""))]]
    ptb = read_rows("accuracy/ptb-lm.csv")
    ref = next(r for r in ptb if not r["seed"])
    for r in (r for r in ptb if r["seed"]):
        rows.append(["%s, PTB" % r["model"].split(" (")[0], "test perplexity", r["test_ppl"],
                     "%s (%s, %s)" % (ref["test_ppl"], ref["system"].replace(" (reported)", ""), ref["model"].split(" (")[1].split(";")[0])])
    return md(["model, data", "metric", "Sylva", "published"], rows, right_from=2) + [
        "", measured(["accuracy/machine-sst.txt", "accuracy/machine-ptb.txt"],
                     "tree_lstm --epochs 10 --seed N` and `var_lstm` / `fixed_lstm --threads 1 --seed 1",
                     "; the published configurations (docs/benchmarks.md, \"Accuracy\")")]


# ---------------------------------------------------------------------------
# Engine optimisations (ablation)

def table_ablation():
    rows = read_rows("ablation/ablation.csv")
    variants = ["none", "skip-zero-work", "lazy", "eager", "fusion", "eager+lazy", "eager+lazy+streaming", "all"]
    configs = []
    for r in rows:
        k = (r["workload"], r["unit"], r["hidden"], r["batch"])
        if k not in configs:
            configs.append(k)
    out = []
    for k in configs:
        one = {r["variant"]: r for r in rows if (r["workload"], r["unit"], r["hidden"], r["batch"]) == k and r["threads"] == "1"}
        two = {r["variant"]: r for r in rows if (r["workload"], r["unit"], r["hidden"], r["batch"]) == k and r["threads"] == "2"}
        cell = lambda d, v: ("%s (%s–%s)" % (d[v]["median"], d[v]["min"], d[v]["max"])) if v in d else ""
        gain = "%.2fx" % (float(one["all"]["median"]) / float(one["none"]["median"]))
        out.append(["%s, %s" % (k[0], k[1]), k[2], k[3]] + [cell(one, v) for v in variants] + [gain, cell(two, "all")])
    return md(["workload", "h", "batch"] + variants + ["all / none", "all, 2 threads"], out) + [
        "", measured(["ablation/machine.txt"], "bash scripts/ablation.sh DIR && python3 scripts/ablation_table.py DIR",
                     "; training throughput of Sylva alone, one GEMM thread, median of 3 (min–max); each column "
                     "switches the others off; blank: not run")]


# ---------------------------------------------------------------------------
# IOS

IOS_NAMES = {"inception_v3": "InceptionV3", "squeezenet": "SqueezeNet", "randwire_large": "RandWire", "nasnet_large": "NasNet"}


def table_ios(batch):
    rows = read_rows("ios-cpu/profile-batch%d.csv" % batch)
    out = []
    for g in [g for g in IOS_NAMES if any(r["graph"] == g for r in rows)]:
        rs = [r for r in rows if r["graph"] == g]
        seq = next(r for r in rs if r["variant"] == "sequential")
        line = [IOS_NAMES[g], "%.1f (%s)" % (float(seq["latency_ms"]), ios_error(seq))]
        for v in ("greedy", "ios-merge", "ios-parallel", "ios-both-dp", "ios-both"):
            cands = [r for r in rs if r["variant"] == v]
            if not cands:
                line.append("–")
                continue
            best = min(cands, key=lambda r: float(r["latency_ms"]))
            x = float(best["vs_sequential"])
            text = "%s (%s)" % (ratio_text(x), ios_error(best))
            line.append(text + ("" if x >= 1 or v != "ios-both" else " **slower**"))
        out.append(line)
    return md(["network", "Sequential ms", "Greedy", "IOS-Merge", "IOS-Parallel", "IOS-Both, the DP alone",
               "IOS-Both, measured choice"], out) + [
        "", measured(["ios-cpu/machine.txt"], "bash scripts/ios_bench.sh",
                     "; batch %d, 2 cores, profiling cost model (oneDNN, float32), (r, s) = (%s); 7 rounds, "
                     "variants in turns; each variant's speed-up over Sequential (median over the rounds of "
                     "Sequential's time over the variant's), in brackets its prediction's error: the stages' median "
                     "costs summed over the median latency, and their fastest runs summed over the fastest run, "
                     "less 1" % (batch, [r["r_s"] for r in rows if r["r_s"] != "-"][0]))]


def ios_error(row):
    """The prediction's error against the median latency, and against the fastest run."""
    return "%+.0f%%, %+.0f%%" % (float(row["prediction_error_pct"]), float(row["prediction_error_min_pct"]))


def table_readme_ios():
    rows = read_rows("ios-cpu/profile-batch1.csv")
    out = []
    for g in IOS_NAMES:
        rs = [r for r in rows if r["graph"] == g]
        seq = next(r for r in rs if r["variant"] == "sequential")
        both = min((r for r in rs if r["variant"] == "ios-both"), key=lambda r: float(r["latency_ms"]))
        x = float(both["vs_sequential"])
        out.append([IOS_NAMES[g], "%.1f" % float(seq["latency_ms"]), "%.1f" % float(both["latency_ms"]),
                    ratio_text(x) + ("" if x >= 1 else " (**slower**)")])
    return md(["network, batch 1", "Sequential ms", "IOS-Both ms", "IOS-Both / Sequential"], out) + [
        "", measured(["ios-cpu/machine.txt"], "bash scripts/ios_bench.sh",
                     "; medians of 7 rounds, variants in turns; the ratio is the median of the rounds' ratios")]


# ---------------------------------------------------------------------------
# CoSA

COSA = "cosa"


def cosa_summary(rel=COSA):
    """Per <net>_<arch>.csv of `sylva-cosa batch --csv` in rel (under benchmark-results, or absolute):
    geomeans of baseline / CoSA for cycles and energy, CoSA's solve times, the hybrid budget."""
    import collections
    import math
    out = []
    folder = path_of(rel)
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".csv") or "_" not in f:
            continue
        net, arch = f[:-4].split("_", 1)
        by = collections.defaultdict(dict)
        for r in read_rows(os.path.join(rel, f)):
            by[r["layer"]][r["method"]] = r

        def geo(base, key):
            logs = [math.log(float(m[base][key]) / float(m["cosa"][key])) for m in by.values()
                    if m[base]["found"] == "1" and m["cosa"]["found"] == "1"]
            return math.exp(sum(logs) / len(logs)) if logs else None

        secs = [float(m["cosa"]["seconds"]) for m in by.values()]
        hyb = max(float(m["hybrid"]["seconds"]) for m in by.values())
        out.append(dict(net=net, arch=arch, layers=len(by), cyc=[geo(b, "cycles") for b in ("random", "best_of", "hybrid")],
                        en=[geo(b, "energy_pj") for b in ("random", "best_of", "hybrid")],
                        secs=sum(secs) / len(secs), max_secs=max(secs), hybrid=hyb))
    if not out:
        raise ReportError("no <net>_<arch>.csv in %s" % folder)
    return out


NETS = {"resnet50": "ResNet-50", "alexnet": "AlexNet", "vgg16": "VGG16"}


def cosa_markdown(rel=COSA):
    """The geomean table of cosa_summary (also what scripts/cosa_bench.sh prints for its run)."""
    f = lambda x: ratio_text(x) if x else "–"
    summary = cosa_summary(rel)
    rows = [[NETS.get(s["net"], s["net"]), s["arch"], str(s["layers"])] + [f(x) for x in s["cyc"]] + [f(x) for x in s["en"]] +
            ["%.2f (%.2f)" % (s["secs"], s["max_secs"])] for s in summary]
    hyb = max(s["hybrid"] for s in summary)
    return md(["network", "arch", "layers", "cycles vs random-5", "vs best of 1000", "vs hybrid %.0f s" % hyb,
               "energy vs random-5", "vs best of 1000", "vs hybrid %.0f s" % hyb, "CoSA s/layer (max)"], rows, right_from=2)


def table_cosa():
    return cosa_markdown() + [
        "", measured([COSA + "/machine.txt"], "SYLVA_DATA=../shared/data bash scripts/cosa_bench.sh",
                     "; geomean of baseline / CoSA over each network's distinct layers (> 1: CoSA's mapping is better), "
                     "all scored by Sylva's model of Timeloop")]


def table_readme_cosa():
    s = next(s for s in cosa_summary() if s["net"] == "resnet50" and s["arch"] == "simba")
    names = ["random-5 (the paper's baseline)", "best of 1,000 valid random mappings", "hybrid mapper, 2 threads, %.0f s" % s["hybrid"]]
    rows = [[n, ratio_text(c), ratio_text(e)] for n, c, e in zip(names, s["cyc"], s["en"])]
    return md(["baseline (same model)", "CoSA's speed-up (geomean)", "energy ratio"], rows) + [
        "", measured([COSA + "/machine.txt"], "bash scripts/cosa_bench.sh",
                     "; ResNet-50's %d distinct layers on the Simba-like accelerator; CoSA solved each in %.2f s on average"
                     % (s["layers"], s["secs"]))]


COSA_KERNELS = "cosa-kernels-2026-12-06"


def table_cosa_kernels():
    import cosa_kernels_table
    runs = [cosa_kernels_table.run_summary(path_of("%s/after_%d.csv" % (COSA_KERNELS, i))) for i in (1, 2, 3)]
    names = [("random5 / CoSA", "random-5's kernel time / CoSA's", None),
             ("random_1x / CoSA", "random search at CoSA's solve time / CoSA", 1.3),
             ("random_10x / CoSA", "random search at 10x that time / CoSA", None),
             ("hybrid_10x / CoSA", "hybrid search at 10x that time / CoSA", None),
             ("CoSA channels-last / oneDNN nhwc", "CoSA channels-last / oneDNN channels-last", None),
             ("CoSA / oneDNN blocked (NCHW CoSA)", "CoSA NCHW / oneDNN blocked", None),
             ("solve s, mean", "CoSA solve, s per layer (mean)", None)]
    rows = []
    for key, label, goal in names:
        vals = [r[key] for r in runs]
        med = statistics.median(vals)
        rows.append([label, "%.2f (%.2f–%.2f)" % (med, min(vals), max(vals)), goal_text(med, goal) if goal else ""])
    return md(["ResNet-50, 24 distinct layers (geomean)", "median of 3 runs (min–max)", "goal"], rows) + [
        "", measured([COSA_KERNELS + "/machine.txt"],
                     "bench_cosa_kernels --layers .../resnet50/unique_layers.yaml --budgets 1,10 --correlate 4 --mappings 200 --csv F",
                     "; float32, batch 1, 2 threads, median of 5 runs per kernel; a ratio above 1 means CoSA's kernel is faster")]


# ---------------------------------------------------------------------------
# Data-parallel

def table_distributed():
    out = []
    for r in read_rows("distributed/scaling.csv"):
        sp, goal = float(r["speedup"]), float(r["goal"])
        out.append([r["workload"], "%s (%s..%s) %s" % (r["one_rank_median"], r["one_rank_min"], r["one_rank_max"], r["unit"]),
                    "%s (%s..%s)" % (r["two_ranks_median"], r["two_ranks_min"], r["two_ranks_max"]),
                    "**%.2fx** (%s..%s)" % (sp, r["speedup_min"], r["speedup_max"]), goal_text(sp, goal)])
    return md(["workload", "1 rank × 1 thread", "2 ranks × 1 thread", "speed-up", "goal"], out) + [
        "", measured(["distributed/machine.txt"], "bash scripts/bench_distributed.sh",
                     "; one epoch of SST or 60 PTB minibatches, global batch 64, median (min..max) of 3")]


# ---------------------------------------------------------------------------
# bf16 GEMMs against float32 (bench_bf16.sh: sylva and sylva-bf16 interleaved)

BF16 = "bf16"
# Issue 67's goals: (workload, hidden, batch) -> bf16 over float32, and over DyNet-autobatch.
BF16_GOALS = {("tree-lstm", 512, 64): 1.6, ("tree-lstm", 512, 256): 1.6, ("tree-lstm", 128, 64): 1.2,
              ("var-lstm", 200, 64): 1.4, ("tree-fc", 256, 64): 1.4}
BF16_DYNET_GOALS = {("tree-lstm", 512, 16): 2.5, ("tree-lstm", 512, 64): 2.5}


def bf16_points():
    """{(workload, hidden, batch): {strategy: row}} from the bf16 folder's CSVs."""
    folder = path_of(BF16)
    points = {}
    files = sorted(f for f in os.listdir(folder) if f.endswith(".csv"))
    if not files:
        raise ReportError("no CSV in docs/benchmark-results/%s" % BF16)
    for f in files:
        for r in read_rows(os.path.join(BF16, f)):
            points.setdefault((r["workload"], int(r["hidden"]), int(r["batch"])), {})[r["strategy"]] = r
    return points


def table_bf16():
    out = []
    order = {"tree-lstm": 0, "var-lstm": 1, "tree-fc": 2}
    for key, p in sorted(bf16_points().items(), key=lambda kv: (order.get(kv[0][0], 9), -kv[0][1], kv[0][2])):
        if "sylva" not in p or "sylva-bf16" not in p:
            raise ReportError("bf16/%s h %d batch %d: needs both sylva and sylva-bf16 rows" % key)
        f32, b16 = p["sylva"], p["sylva-bf16"]
        where = "bf16 %s h %d batch %d" % key
        x = over(b16, f32)
        goal = BF16_GOALS.get(key)
        dyn = p.get("dynet-autobatch")
        dyn_goal = BF16_DYNET_GOALS.get(key)
        vals = "%.0f → %.0f (%.2fx)" % (number(f32, "values_mb", where), number(b16, "values_mb", where),
                                         number(b16, "values_mb", where) / number(f32, "values_mb", where))
        out.append([key[0], str(key[1]), str(key[2]), rate(f32), rate(b16), "**%.3fx**" % x,
                    goal_text(x, goal) if goal else "–",
                    rate(dyn) if dyn else "–",
                    ("%s%s" % (ratio_text(over(b16, dyn)), ": " + goal_text(over(b16, dyn), dyn_goal) if dyn_goal else ""))
                    if dyn else ("not run (goal ≥ %.1fx)" % dyn_goal if dyn_goal else "–"),
                    vals])
    return md(["workload", "h", "batch", "fp32 samples/s", "bf16 samples/s", "bf16 / fp32", "goal",
               "DyNet-autobatch (fp32)", "bf16 / DyNet-ab", "activations MB, fp32 → bf16"], out, right_from=1) + [
        "", measured([os.path.join(BF16, "machine.txt")], "bash scripts/bench_bf16.sh",
                     "; one core, whole training steps with Adam, Tree-LSTM with the dynet cell and embedding = "
                     "hidden, Var-LSTM 2 layers × 200, median (min–max) of interleaved repeats")]


def table_readme_bf16():
    cells = []
    for key, p in sorted(bf16_points().items(), key=lambda kv: ({"tree-lstm": 0, "var-lstm": 1}.get(kv[0][0], 2), -kv[0][1], kv[0][2])):
        cells.append(["%s h %d, batch %d" % key, "%.2fx" % over(p["sylva-bf16"], p["sylva"]),
                      ratio_text(over(p["sylva-bf16"], p["dynet-autobatch"])) if "dynet-autobatch" in p else "–"])
    return md(["one core, Adam", "bf16 / fp32 (Sylva)", "bf16 Sylva / fp32 DyNet-autobatch"], cells) + [
        "", measured([os.path.join(BF16, "machine.txt")], "bash scripts/bench_bf16.sh", "; goals and accuracy: docs/benchmarks.md")]


def table_bf16_accuracy():
    """SST test root accuracy, bf16 against float32, per seed and the means (goal: within 0.5 points)."""
    rows = read_rows("accuracy/sst-tree-lstm-bf16.csv")
    by = {}
    for r in rows:
        by.setdefault(r["precision"], []).append(r)
    if set(by) != {"fp32", "bf16"}:
        raise ReportError("accuracy/sst-tree-lstm-bf16.csv: needs fp32 and bf16 rows, has %s" % sorted(by))

    def pct(rs, c, t):
        return 100.0 * sum(float(r[c]) for r in rs) / sum(float(r[t]) for r in rs)

    out = []
    for p in ("fp32", "bf16"):
        seeds = ", ".join("%.2f / %.2f" % (pct([r], "test_fine_correct", "test_fine_total"),
                                           pct([r], "test_binary_correct", "test_binary_total")) for r in by[p])
        out.append([p, seeds, "%.2f%%" % pct(by[p], "test_fine_correct", "test_fine_total"),
                    "%.2f%%" % pct(by[p], "test_binary_correct", "test_binary_total")])
    diffs = []
    for c, t, what in (("test_fine_correct", "test_fine_total", "fine"), ("test_binary_correct", "test_binary_total", "binary")):
        d = pct(by["bf16"], c, t) - pct(by["fp32"], c, t)
        diffs.append("%s %+.2f points (%s)" % (what, d, "met" if abs(d) <= 0.5 else "**not met**"))
    out.append(["bf16 − fp32", "goal: each mean within 0.5 points", diffs[0], diffs[1]])
    return md(["precision", "per seed: fine / binary %", "mean test root fine-grained", "mean test root binary"], out) + [
        "", measured(["accuracy/machine-sst-bf16.txt"], "bash scripts/accuracy_bf16.sh",
                     "; the README's Tree-LSTM configuration (tai cell, d = 300, h = 150, Adagrad 0.05, batch 25, "
                     "L2 1e-4, dropout 0.5, 10 epochs, model chosen on dev root accuracy), seeds 1–3, one thread")]


def table_bf16_ptb():
    """PTB Var-LSTM perplexity, bf16 against float32 trained side by side (goal: test within 1%)."""
    rows = {r["precision"]: r for r in read_rows("accuracy/ptb-lm-bf16.csv")}
    if set(rows) != {"fp32", "bf16"}:
        raise ReportError("accuracy/ptb-lm-bf16.csv: needs one fp32 and one bf16 row, has %s" % sorted(rows))
    out = [[p, rows[p]["valid_ppl"], rows[p]["test_ppl"], rows[p]["epochs"], "%dm%02ds" % divmod(int(rows[p]["wall_s"]), 60)]
           for p in ("fp32", "bf16")]
    d = float(rows["bf16"]["test_ppl"]) / float(rows["fp32"]["test_ppl"]) - 1
    out.append(["bf16 / fp32 − 1", "", "%+.2f%% (%s)" % (100 * d, "met" if abs(d) <= 0.01 else "**not met**"),
                "goal: test within 1%", ""])
    return md(["precision", "valid ppl (last epoch)", "test ppl", "epochs", "wall time (both at once)"], out) + [
        "", measured(["accuracy/machine-ptb-bf16.txt"], "TASK=ptb bash scripts/accuracy_bf16.sh",
                     "; examples/03_var_lstm's defaults (2 × 200, SGD lr 1 halved each epoch after epoch 4, clip 5, "
                     "batch 20, 13 epochs, seed 1), the two precisions at once on the two cores")]


TABLES = {
    "bf16": (table_bf16, [BF16]),
    "bf16-ptb": (table_bf16_ptb, ["accuracy"]),
    "readme-bf16": (table_readme_bf16, [BF16]),
    "bf16-accuracy": (table_bf16_accuracy, ["accuracy"]),
    "dynet-goals": (table_dynet_goals, DYNET_TREE_LSTM + DYNET_LM + DYNET_TREE_FC + [DYNET_MEMORY]),
    "dynet-tree-lstm": (table_dynet_tree_lstm, DYNET_TREE_LSTM),
    "dynet-lm": (table_dynet_lm, DYNET_LM),
    "dynet-tree-fc": (table_dynet_tree_fc, DYNET_TREE_FC),
    "dynet-memory": (table_dynet_memory, [DYNET_MEMORY]),
    "readme-dynet-tree-lstm": (table_readme_dynet_tree_lstm, DYNET_TREE_LSTM),
    "readme-dynet-lm": (table_readme_dynet_lm, DYNET_LM + DYNET_TREE_FC),
    "baselines-train": (lambda: cavs_table("train", 64), [CAVS]),
    "baselines-infer": (lambda: cavs_table("infer", 64), [CAVS]),
    "accuracy-sst": (table_accuracy_sst, ["accuracy"]),
    "accuracy-ptb": (table_accuracy_ptb, ["accuracy"]),
    "readme-accuracy": (table_readme_accuracy, ["accuracy"]),
    "ablation": (table_ablation, ["ablation"]),
    "ios-batch1": (lambda: table_ios(1), ["ios-cpu"]),
    "ios-batch16": (lambda: table_ios(16), ["ios-cpu"]),
    "readme-ios": (table_readme_ios, ["ios-cpu"]),
    "cosa": (table_cosa, [COSA]),
    "readme-cosa": (table_readme_cosa, [COSA]),
    "cosa-kernels": (table_cosa_kernels, [COSA_KERNELS]),
    "distributed": (table_distributed, ["distributed"]),
}


# ---------------------------------------------------------------------------
# Documents

def render(text, where):
    def one(m):
        name = m.group(1)
        if name not in TABLES:
            raise ReportError("%s: unknown table %r (known: %s)" % (where, name, ", ".join(sorted(TABLES))))
        return "<!-- bench_report: %s -->\n%s\n<!-- /bench_report -->" % (name, "\n".join(TABLES[name][0]()))

    opened = text.count("<!-- bench_report:")
    closed = text.count("<!-- /bench_report -->")
    if opened != closed or len(MARKER.findall(text)) != opened:
        raise ReportError("%s: %d opening and %d closing bench_report markers do not pair up" % (where, opened, closed))
    return MARKER.sub(one, text)


def run(check, docs=None, root=ROOT):
    """Regenerates each document; returns the number that differ."""
    differ = 0
    for rel in docs or DOCS:
        path = os.path.join(root, rel)
        old = open(path, encoding="utf-8").read()
        new = render(old, rel)
        if new == old:
            continue
        differ += 1
        if check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), rel, rel + " (regenerated)"))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print("bench_report: rewrote %s" % rel)
    return differ


# ---------------------------------------------------------------------------
# Figures: drawn by --plots (matplotlib), each PNG carrying a digest of the
# files it was drawn from, which --check compares without drawing.

FIGURES_DIR = os.path.join(ROOT, "docs", "figures")
DIGEST_KEY = "bench_report sources"


def digest(folders):
    """sha256 over every CSV of the folders (names relative to benchmark-results)."""
    import hashlib
    h = hashlib.sha256()
    for folder in folders:
        base = path_of(folder)
        for dirpath, dirnames, files in sorted(os.walk(base)):
            dirnames.sort()
            for f in sorted(f for f in files if f.endswith(".csv")):
                p = os.path.join(dirpath, f)
                h.update(os.path.relpath(p, RESULTS).encode() + b"\0")
                with open(p, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


def png_text(path):
    """The tEXt chunks of a PNG as a dict (standard library only)."""
    import struct
    out = {}
    with open(path, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            raise ReportError("%s: not a PNG" % path)
        while True:
            head = f.read(8)
            if len(head) < 8:
                break
            n, kind = struct.unpack(">I4s", head)
            data = f.read(n)
            f.read(4)  # CRC
            if kind == b"tEXt" and b"\0" in data:
                k, v = data.split(b"\0", 1)
                out[k.decode("latin-1")] = v.decode("latin-1")
            if kind == b"IEND":
                break
    return out


def bars(ax, groups, series, value, goal=None):
    """Grouped bars: one group per entry of groups, one bar per series; value(group, series) or None.
    goal(group) draws a dashed segment over the group."""
    width = 0.8 / len(series)
    for i, name in enumerate(series):
        xs, ys = [], []
        for j, g in enumerate(groups):
            v = value(g, name)
            if v is not None:
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(v)
        ax.bar(xs, ys, width, label=str(name))
    if goal:
        for j, g in enumerate(groups):
            ax.plot([j - 0.45, j + 0.45], [goal(g)] * 2, "k--", linewidth=1)
    ax.set_xticks(range(len(groups)))


def save_figure(fig, name, folders):
    import matplotlib.pyplot as plt
    fig.tight_layout()
    path = os.path.join(FIGURES_DIR, name)
    fig.savefig(path, dpi=110, metadata={"Description": DIGEST_KEY + " " + digest(folders)})
    plt.close(fig)
    return path


def plot_dynet_tree_lstm():
    import matplotlib.pyplot as plt
    pts = dynet_points(DYNET_TREE_LSTM)
    hs, batches = sorted({k[3] for k in pts}), sorted({k[4] for k in pts})
    series = ["%s cell, %s" % c for c in sorted({(k[1], k[2]) for k in pts})]

    def value(h):
        def of(b, name):
            cell, opt = name.split(" cell, ")
            p = pts[("tree-lstm", cell, opt, h, b)]
            return over(p["sylva"], p["dynet-autobatch"])
        return of

    fig, axes = plt.subplots(1, len(hs), figsize=(5 * len(hs), 3.6), sharey=True)
    for ax, h in zip(axes, hs):
        bars(ax, batches, series, value(h), goal=tree_lstm_goal)
        ax.set_xticklabels(["batch %d" % b for b in batches])
        ax.set_title("h = d = %d, one core" % h)
        ax.axhline(1.0, color="grey", linewidth=0.5)
    axes[0].set_ylabel("Sylva / DyNet-autobatch, trees/s")
    axes[-1].legend(fontsize=8, loc="upper right")
    fig.suptitle("Tree-LSTM training on SST against DyNet (dashed: goal)", fontsize=10)
    return save_figure(fig, "dynet_tree_lstm.png", DYNET_TREE_LSTM)


def plot_dynet_lm_tree_fc():
    import matplotlib.pyplot as plt
    lm = dict(lm_rows())
    fc = tree_fc_runs()
    groups = ["%s %s" % (wl, sizes_text(cell)) for wl, cell in sorted({(k[0], k[1]) for k in lm}, reverse=True)]
    groups.append("tree-fc 256 leaves")
    batches = sorted({k[4] for k in lm})

    def value(g, b):
        if g.startswith("tree-fc"):
            return statistics.median(over(p["sylva"], p["dynet-autobatch"]) for p in fc[b]) if b in fc else None
        for (wl, cell, _, _, batch), p in lm.items():
            if g == "%s %s" % (wl, sizes_text(cell)) and batch == b:
                return over(p["sylva"], p["dynet-autobatch"])
        return None

    fig, ax = plt.subplots(figsize=(9, 3.6))
    bars(ax, groups, ["batch %d" % b for b in batches], lambda g, name: value(g, int(name.split()[1])),
         goal=lambda g: 1.2)
    ax.set_xticklabels([g.replace(", ", "\n").replace(" ", "\n", 1) for g in groups], fontsize=8)
    ax.axhline(1.0, color="grey", linewidth=0.5)
    ax.set_ylabel("Sylva / DyNet-autobatch")
    ax.legend(fontsize=8)
    ax.set_title("Language models on PTB and Tree-FC against DyNet, one core, Adam (dashed: goal)", fontsize=10)
    return save_figure(fig, "dynet_lm_tree_fc.png", DYNET_LM + DYNET_TREE_FC)


def plot_dynet_memory():
    import matplotlib.pyplot as plt
    rows = read_rows(DYNET_MEMORY + "/memory.csv")
    groups = ["%s cell, h = %s" % (r["cell"], r["hidden"]) for r in rows]
    cols = [("Sylva peak RSS", "sylva_peak_rss_mb"), ("DyNet's smallest --dynet-mem", "dynet_smallest_pool_mb"),
            ("DyNet peak RSS", "dynet_peak_rss_mb")]
    by = dict(zip(groups, rows))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    bars(ax, groups, [c[0] for c in cols], lambda g, name: float(by[g][dict(cols)[name]]))
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylabel("MB")
    ax.legend(fontsize=8)
    ax.set_title("Peak memory over an SST epoch, batch 64, Adam", fontsize=10)
    return save_figure(fig, "dynet_memory.png", [DYNET_MEMORY])


def plot_ios():
    import matplotlib.pyplot as plt
    rows = read_rows("ios-cpu/profile-batch1.csv")
    variants = ["greedy", "ios-merge", "ios-parallel", "ios-both"]
    groups = [g for g in IOS_NAMES if any(r["graph"] == g for r in rows)]

    def value(g, v):
        cands = [r for r in rows if r["graph"] == g and r["variant"] == v]
        return max(float(r["vs_sequential"]) for r in cands) if cands else None

    fig, ax = plt.subplots(figsize=(8, 3.6))
    bars(ax, groups, variants, value, goal=lambda g: 1.0)
    ax.set_xticklabels([IOS_NAMES[g] for g in groups])
    ax.set_ylabel("Sequential's time / variant's, per round")
    ax.legend(fontsize=8)
    ax.set_title("IOS on two CPU cores, batch 1, profiled costs (dashed: Sequential)", fontsize=10)
    return save_figure(fig, "ios_cpu.png", ["ios-cpu"])


def plot_cosa():
    import matplotlib.pyplot as plt
    summary = cosa_summary()
    groups = ["%s\n%s" % (NETS.get(x["net"], x["net"]), x["arch"]) for x in summary]
    names = ["random-5", "best of 1000", "hybrid"]
    by = dict(zip(groups, summary))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    bars(ax, groups, names, lambda g, n: by[g]["cyc"][names.index(n)], goal=lambda g: 1.0)
    ax.set_yscale("log")
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylabel("baseline cycles / CoSA's (geomean)")
    ax.legend(fontsize=8)
    ax.set_title("CoSA's MIP against search, Timeloop model (dashed: equal)", fontsize=10)
    return save_figure(fig, "cosa.png", [COSA])


CAVS_FIGURES = ["fig8_batch_train.png", "fig8_batch_infer.png", "fig8_hidden_train.png",
                "fig9_construction.png", "table1_epoch.png", "table2_movement.png"]
OWN_FIGURES = {"dynet_tree_lstm.png": (plot_dynet_tree_lstm, DYNET_TREE_LSTM),
               "dynet_lm_tree_fc.png": (plot_dynet_lm_tree_fc, DYNET_LM + DYNET_TREE_FC),
               "dynet_memory.png": (plot_dynet_memory, [DYNET_MEMORY]),
               "ios_cpu.png": (plot_ios, ["ios-cpu"]),
               "cosa.png": (plot_cosa, [COSA])}
FIGURES = {name: folders for name, (_, folders) in OWN_FIGURES.items()}
FIGURES.update({name: [CAVS] for name in CAVS_FIGURES})


def plots():
    try:
        import matplotlib
    except ImportError:
        raise ReportError("--plots needs matplotlib (apt-get install python3-matplotlib)")
    matplotlib.use("Agg")
    import plot_benchmarks
    plot_benchmarks.METADATA = {"Description": DIGEST_KEY + " " + digest([CAVS])}
    plot_benchmarks.note = lambda msg: None
    written = plot_benchmarks.make_figures(plot_benchmarks.read_all([path_of(CAVS)]), FIGURES_DIR)
    written += [draw() for draw, _ in OWN_FIGURES.values()]
    for p in written:
        print("bench_report: drew %s" % os.path.relpath(p, ROOT))


def stale_figures():
    """Figures whose recorded digest is not the digest of their data now."""
    stale = []
    for name, folders in FIGURES.items():
        path = os.path.join(FIGURES_DIR, name)
        if not os.path.exists(path):
            stale.append("%s: missing" % name)
            continue
        want = DIGEST_KEY + " " + digest(folders)
        if png_text(path).get("Description") != want:
            stale.append("%s: drawn from other data than docs/benchmark-results/%s holds now" % (name, ", ".join(folders)))
    return stale


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="fail on any difference instead of rewriting")
    ap.add_argument("--list", action="store_true", help="list the tables and what they read")
    ap.add_argument("--plots", action="store_true", help="redraw docs/figures from the baseline CSVs")
    ap.add_argument("--cosa-summary", metavar="DIR", help="print the CoSA geomean table of a cosa_bench.sh output DIR")
    args = ap.parse_args(argv)
    try:
        if args.cosa_summary:
            print("\n".join(cosa_markdown(os.path.abspath(args.cosa_summary))))
            return 0
        if args.list:
            for name, (_, sources) in TABLES.items():
                print("%-24s %s" % (name, ", ".join("docs/benchmark-results/" + s for s in sources)))
            for name, sources in FIGURES.items():
                print("%-24s %s" % ("figures/" + name, ", ".join("docs/benchmark-results/" + s for s in sources)))
            return 0
        if args.plots:
            plots()
        differ = run(args.check)
        if args.check:
            for line in stale_figures():
                print("bench_report: figure %s; run python3 scripts/bench_report.py --plots" % line)
                differ += 1
    except ReportError as e:
        print("bench_report: error: %s" % e, file=sys.stderr)
        return 2
    if args.check and differ:
        print("bench_report: %d document(s) or figure(s) differ from the data; run python3 scripts/bench_report.py" % differ,
              file=sys.stderr)
        return 1
    if args.check:
        print("bench_report: every generated table and figure matches docs/benchmark-results/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
