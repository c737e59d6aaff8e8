#!/usr/bin/env python3
"""Geomeans of bench_cosa_kernels runs, as median (min-max) over the runs.

    python3 scripts/cosa_kernels_table.py RUN.csv [RUN.csv ...]

Each CSV is one `bench_cosa_kernels --csv` run over the same layers. Per
run, the geomeans the bench prints (search / CoSA, CoSA / oneDNN; the
channels-last columns where present), the mean and largest solve time and
the Spearman columns; then, over the runs, each one's median and range as
a Markdown table.
"""
import csv
import math
import statistics
import sys


def geomean(values):
    logs = [math.log(v) for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(logs) / len(logs)) if logs else float("nan")


def number(text):
    try:
        return float(text)
    except ValueError:
        return float("nan")


def run_summary(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"cosa_kernels_table: {path} has no rows")
    cols = rows[0].keys()
    ratio = lambda a, b: geomean([number(r[a]) / number(r[b]) for r in rows])
    out = {}
    for c in cols:
        if c.startswith(("random", "hybrid")) and c.endswith("_ms"):
            out[f"{c[:-3]} / CoSA"] = ratio(c, "cosa_ms")
    out["CoSA / oneDNN blocked (NCHW CoSA)"] = ratio("cosa_ms", "onednn_ms")
    out["CoSA / oneDNN plain NCHW"] = ratio("cosa_ms", "onednn_nchw_ms")
    if "cosa_channels_last_ms" in cols:
        out["CoSA channels-last / oneDNN blocked"] = ratio("cosa_channels_last_ms", "onednn_ms")
        out["CoSA channels-last / oneDNN nhwc"] = ratio("cosa_channels_last_ms", "onednn_nhwc_ms")
    solve = [number(r["cosa_solve_s"]) for r in rows]
    out["solve s, mean"] = sum(solve) / len(solve)
    out["solve s, max"] = max(solve)
    for c in ("spearman", "spearman_kernel_estimate"):
        vals = [number(r[c]) for r in rows if math.isfinite(number(r[c]))]
        if vals:
            out[f"{c}, min"] = min(vals)
            out[f"{c}, max"] = max(vals)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = [run_summary(p) for p in sys.argv[1:]]
    keys = [k for k in runs[0] if all(k in r for r in runs)]
    print(f"| quantity | median of {len(runs)} | min | max |")
    print("|---|---:|---:|---:|")
    for k in keys:
        vals = [r[k] for r in runs if math.isfinite(r[k])]
        if not vals:
            continue
        print(f"| {k} | {statistics.median(vals):.2f} | {min(vals):.2f} | {max(vals):.2f} |")


if __name__ == "__main__":
    main()
