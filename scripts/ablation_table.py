#!/usr/bin/env python3
"""Markdown tables of scripts/ablation.sh's CSVs: training throughput per
configuration (rows) and optimisation set (columns), median (min-max) of the
repeats, and the speedup of each set over `none` measured in the same run.

    python3 scripts/ablation_table.py build/ablation
"""
import csv
import pathlib
import sys

SETS = ["none", "skip-zero-work", "lazy", "eager", "fusion", "eager+lazy", "eager+lazy+streaming", "all"]


def load(directory):
    rows = []
    for path in sorted(pathlib.Path(directory).glob("*.csv")):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                r["variant"] = "x·W in F" if "in-cell" in path.name else ""
                rows.append(r)
    return rows


def key(r):
    return (r["workload"], r["variant"], int(r["hidden"]), int(r["batch"]), int(r["threads"]))


def table(rows):
    by = {}
    for r in rows:
        by.setdefault(key(r), {})[r["sweep"]] = r
    sets = [s for s in SETS if any(s in v for v in by.values())]
    unit = {k[0]: next(iter(v.values()))["unit"] for k, v in by.items()}
    out = ["| workload | h | batch | threads | " + " | ".join(sets) + " | all / none |",
           "|---|---:|---:|---:|" + "---:|" * (len(sets) + 1)]
    for k in sorted(by):
        v = by[k]
        cells = []
        for s in sets:
            if s not in v:
                cells.append("")
                continue
            r = v[s]
            cells.append(f"{float(r['units_per_s']):.0f} ({float(r['units_per_s_min']):.0f}–"
                         f"{float(r['units_per_s_max']):.0f})")
        ratio = ""
        if "none" in v and "all" in v:
            ratio = f"{float(v['all']['units_per_s']) / float(v['none']['units_per_s']):.2f}x"
        name = k[0] + (f" ({k[1]})" if k[1] else "") + f", {unit[k[0]]}/s"
        out.append(f"| {name} | {k[2]} | {k[3]} | {k[4]} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(out)


def extra(rows):
    """Two-thread runs (sweeps ending in -2threads) next to one thread with everything on."""
    one = {key(r)[:4]: r for r in rows if r["sweep"] == "all" and r["threads"] == "1"}
    out = ["| workload | h | batch | 1 thread, all | 2 threads, all | 2 threads, all but streaming |",
           "|---|---:|---:|---:|---:|---:|"]
    two = {}
    for r in rows:
        if r["sweep"].endswith("-2threads"):
            two.setdefault(key(r)[:4], {})[r["sweep"]] = r
    for k in sorted(two):
        def cell(r):
            if not r:
                return ""
            return f"{float(r['units_per_s']):.0f} ({float(r['units_per_s_min']):.0f}–{float(r['units_per_s_max']):.0f})"
        out.append(f"| {k[0]} | {k[2]} | {k[3]} | {cell(one.get(k))} | {cell(two[k].get('all-2threads'))} | "
                   f"{cell(two[k].get('all-but-streaming-2threads'))} |")
    return "\n".join(out)


if __name__ == "__main__":
    rows = load(sys.argv[1] if len(sys.argv) > 1 else "build/ablation")
    if not rows:
        sys.exit("ablation_table: no CSVs found")
    print(table([r for r in rows if not r["sweep"].endswith("-2threads")]))
    if any(r["sweep"].endswith("-2threads") for r in rows):
        print()
        print(extra(rows))
