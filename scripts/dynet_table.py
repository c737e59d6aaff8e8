#!/usr/bin/env python3
"""Turns scripts/bench_dynet.sh's CSV files into one table of every column
of a run (markdown on stdout; the docs' tables come from
scripts/bench_report.py, which reads the same CSVs with rows_of).

  python3 scripts/dynet_table.py build/bench-dynet

One row per (workload, cell or LSTM sizes, optimizer, hidden, batch): training samples/s of
Sylva on one core, DyNet with and without autobatching (same process, same
core, interleaved), Sylva on two cores when measured; each as the median of
the repeats with their min-max, and the ratio of Sylva's median to DyNet
autobatch's. The update columns are the medians of the optimiser step alone
(ms); the next column compares with the dynamic-declaration engine on
Sylva's kernels where it ran (LSTMs, Tree-FC). Where bench_suite's
gemm-floor ran (Sylva's GEMMs alone plus its optimiser step: a bound), the
last two columns give the floor's rate over the engine's (the largest
ratio over the engine that these GEMMs allow) and Sylva's share of the
floor's rate. A two-core rate is followed by the cross-core round trip
bench_suite measured just before and after it, "[before/after ns]"
(benchmarks/baselines/core_latency.h: on the VM of docs/benchmarks.md it
switched between 70-140 ns and 340-810 ns, and two-thread runs at batch 1
were up to twice as slow in the second state). Reads only the columns bench_suite writes.
"""
import csv
import glob
import os
import sys


def rows_of(directory):
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*.csv"))):
        name = os.path.basename(path)
        cell = "tai" if "-tai-" in name else "dynet" if "-dynet-" in name else "-"
        if cell == "-":  # LSTM files name their sizes: e128-h256-l1
            cell = next((t for t in name.split("-") if t.startswith("e") and t[1:].isdigit()), "-")
            if cell != "-":
                parts = name.split("-")
                i = parts.index(cell)
                cell = "-".join(parts[i:i + 3])
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                r["cell"] = cell
                out.append(r)
    return out


def points_of(rows, points=None):
    """Training rows by point: {(workload, cell or sizes, optimizer, hidden, batch):
    {strategy, or strategy + " 2c" for the two-core run: row}}, added to points."""
    points = {} if points is None else points
    for r in rows:
        if r["mode"] != "train":
            continue
        key = (r["workload"], r["cell"], r.get("optimizer", "none"), int(r["hidden"]), int(r["batch"]))
        name = r["strategy"] + (" 2c" if r["sweep"] == "two-core" else "")
        points.setdefault(key, {})[name] = r
    return points


def rate(r):
    text = "%.1f (%.0f–%.0f)" % (float(r["samples_per_s"]), float(r["samples_per_s_min"]),
                               float(r["samples_per_s_max"]))
    before, after = float(r.get("core_rtt_before_ns") or -1), float(r.get("core_rtt_after_ns") or -1)
    if before >= 0 and after >= 0:
        text += " [%.0f/%.0f ns]" % (before, after)
    return text


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    rows = rows_of(argv[1])
    if not rows:
        sys.exit("dynet_table: no CSV files in %s" % argv[1])
    points = points_of(rows)
    print("| workload | cell / sizes | optimizer | h | batch | Sylva, 1 core | DyNet autobatch | DyNet | "
          "Sylva / DyNet-ab | Sylva, 2 cores | 2 cores / DyNet-ab | update ms: Sylva, DyNet-ab, Sylva 2c | "
          "Sylva / dynamic-decl-ab | GEMM floor / dynamic-decl-ab | Sylva / GEMM floor |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(points):
        p = points[key]
        s, ab, dn, s2 = p.get("sylva"), p.get("dynet-autobatch"), p.get("dynet"), p.get("sylva 2c")
        dd, fl = p.get("dynamic-decl-autobatch"), p.get("gemm-floor")

        def ratio(a, b):
            return "**%.2f×**" % (float(a["samples_per_s"]) / float(b["samples_per_s"])) if a and b else "–"

        def upd(r):
            return "%.1f" % (1e3 * float(r["update_s"])) if r else "–"

        print("| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s, %s, %s | %s | %s | %s |" % (
            key[0], key[1], key[2], key[3], key[4], rate(s) if s else "–", rate(ab) if ab else "–",
            rate(dn) if dn else "–", ratio(s, ab), rate(s2) if s2 else "–", ratio(s2, ab), upd(s), upd(ab), upd(s2),
            ratio(s, dd), ratio(fl, dd), ratio(s, fl)))


if __name__ == "__main__":
    main(sys.argv)
