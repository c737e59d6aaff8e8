#!/usr/bin/python3
"""Turns the CSV results of the benchmark driver `bench_suite` into the
figures and markdown tables of docs/benchmarks.md.

Usage:
  /usr/bin/python3 scripts/plot_benchmarks.py RESULTS.csv [MORE.csv | DIR ...]
      [--out docs/figures] [--tables docs/benchmarks_tables.md]

Each input is a CSV file or a directory whose *.csv files are all read. Every
CSV must start with the header written by bench_suite (see COLUMNS); columns
beyond those are ignored. Rows from all inputs are pooled.

Figures (PNG, written into --out):
  fig8_batch_train.png, fig8_batch_infer.png    throughput vs batch size
  fig8_hidden_train.png, fig8_hidden_infer.png  throughput vs hidden size
  fig9_construction.png                         Tree-FC graph construction
  table1_epoch.png                              computation per epoch (bars)
  table2_movement.png                           movement share (bars)

Markdown tables go to --tables (default: stdout). A figure or table with no
rows is skipped with a note on stderr. A malformed CSV (missing column, wrong
field count, non-numeric value) stops the script with exit status 1 and a
message naming the file and line.

Needs only the standard library and matplotlib (Agg backend, no display).
"""

import argparse
import csv
import decimal
import math
import os
import sys

COLUMNS = [
    "workload", "strategy", "mode", "batch", "hidden", "leaves", "threads",
    "repeats", "samples_per_s", "samples_per_s_min", "samples_per_s_max",
    "units_per_s", "units_per_s_min", "units_per_s_max", "unit", "build_s",
    "compute_s", "movement_s", "build_share", "movement_share", "kernels",
    "peak_rss_mb", "epoch_s", "epoch_compute_s", "loss", "sweep",
]
STRING_COLUMNS = {"workload", "strategy", "mode", "unit", "sweep"}
INT_COLUMNS = {"batch", "hidden", "leaves", "threads", "repeats", "kernels"}

WORKLOADS = ["tree-lstm", "var-lstm", "fixed-lstm", "tree-fc"]
STRATEGIES = [
    "sylva", "sylva-serial", "dynamic-decl", "dynamic-decl-autobatch",
    "dynamic-decl-autobatch-dense", "padded", "libtorch-recursive",
    "libtorch-levels", "libtorch-packed", "dynet", "dynet-autobatch",
]
MODES = ["train", "infer"]
SWEEPS = ["batch", "hidden", "leaves", "epoch", "movement"]
# A row that belongs to several experiments may carry several tags joined by
# one of these separators, e.g. "batch+hidden" for the shared point.
SWEEP_SEPARATORS = "+;|/ "

# Fixed colour and marker per strategy, the same in every figure.
STYLE = {
    "sylva": ("#d62728", "o"),
    "sylva-serial": ("#ff9896", "s"),
    "dynamic-decl": ("#1f77b4", "^"),
    "dynamic-decl-autobatch": ("#17becf", "v"),
    "dynamic-decl-autobatch-dense": ("#aec7e8", "x"),
    "padded": ("#7f7f7f", "D"),
    "libtorch-recursive": ("#2ca02c", "<"),
    "libtorch-levels": ("#9467bd", ">"),
    "libtorch-packed": ("#8c564b", "P"),
    "dynet": ("#bcbd22", "X"),
    "dynet-autobatch": ("#e377c2", "*"),
}
FALLBACK_STYLES = [("#bcbd22", "X"), ("#e377c2", "*"), ("#aec7e8", "h"),
                   ("#98df8a", "p")]

DASH = "\u2013"  # en dash: ranges and missing cells

ARGS_DPI = 150        # set from --dpi
strategies_seen = []  # all strategies of the input, for fallback styles


class CsvError(Exception):
    pass


def note(msg):
    print("plot_benchmarks: " + msg, file=sys.stderr)


# ----------------------------------------------------------------------------
# Reading


def expand_inputs(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p)
                           if f.endswith(".csv")
                           and os.path.isfile(os.path.join(p, f)))
            if not found:
                raise CsvError("%s: directory holds no *.csv file" % p)
            files.extend(found)
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise CsvError("%s: no such file or directory" % p)
    return files


def parse_number(text, column, path, line):
    s = text.strip()
    try:
        if column in INT_COLUMNS:
            try:
                return int(s)
            except ValueError:
                v = float(s)  # accept "64.0"
                if not v.is_integer():
                    raise ValueError
                return int(v)
        return float(s)
    except ValueError:
        raise CsvError("%s:%d: column '%s': non-numeric value %r"
                       % (path, line, column, text))


def read_csv(path):
    rows = []
    try:
        f = open(path, newline="", encoding="utf-8-sig")
    except OSError as e:
        raise CsvError("%s: cannot open: %s" % (path, e.strerror))
    with f:
        reader = csv.reader(f)
        try:
            header = next(reader, None)
            while header is not None and not any(h.strip() for h in header):
                header = next(reader, None)  # leading blank lines
            if header is None:
                raise CsvError("%s: empty file (no header line)" % path)
            header = [h.strip() for h in header]
            header_line = reader.line_num
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise CsvError("%s:%d: header lacks column(s) %s"
                               % (path, header_line, ", ".join(missing)))
            index = {c: header.index(c) for c in COLUMNS}
            for fields in reader:
                line = reader.line_num
                if not any(x.strip() for x in fields):
                    continue  # blank line
                if len(fields) != len(header):
                    raise CsvError("%s:%d: %d fields, header has %d"
                                   % (path, line, len(fields), len(header)))
                row = {"_src": "%s:%d" % (path, line)}
                for c in COLUMNS:
                    text = fields[index[c]]
                    if c in STRING_COLUMNS:
                        row[c] = text.strip()
                    else:
                        row[c] = parse_number(text, c, path, line)
                for c in ("workload", "strategy", "mode"):
                    if not row[c]:
                        raise CsvError("%s:%d: column '%s' is empty"
                                       % (path, line, c))
                if row["mode"] not in MODES:
                    raise CsvError("%s:%d: column 'mode': %r is neither "
                                   "train nor infer" % (path, line,
                                                        row["mode"]))
                tags = row["sweep"]
                for sep in SWEEP_SEPARATORS:
                    tags = tags.replace(sep, " ")
                row["sweeps"] = set(tags.split())
                rows.append(row)
        except csv.Error as e:
            raise CsvError("%s:%d: %s" % (path, reader.line_num, e))
        except UnicodeDecodeError as e:
            raise CsvError("%s: not UTF-8 text (%s)" % (path, e.reason))
    return rows


def read_all(paths):
    rows = []
    for p in expand_inputs(paths):
        got = read_csv(p)
        if not got:
            note("%s: no data rows" % p)
        rows.extend(got)
    names = sorted({r["workload"] for r in rows} - set(WORKLOADS))
    if names:
        note("unknown workload(s) %s: plotted after the known ones"
             % ", ".join(names))
    names = sorted({r["strategy"] for r in rows} - set(STRATEGIES))
    if names:
        note("unknown strategy(ies) %s: plotted after the known ones"
             % ", ".join(names))
    tags = sorted(set().union(*[r["sweeps"] for r in rows]) - set(SWEEPS)) \
        if rows else []
    if tags:
        note("unknown sweep tag(s) %s: those rows are used only in the peak "
             "memory table" % ", ".join(tags))
    return rows


# ----------------------------------------------------------------------------
# Selection helpers


def ordered(values, known):
    values = set(values)
    return [v for v in known if v in values] + sorted(values - set(known))


def workloads_of(rows):
    return ordered((r["workload"] for r in rows), WORKLOADS)


def strategies_of(rows):
    return ordered((r["strategy"] for r in rows), STRATEGIES)


def style_of(strategy):
    if strategy in STYLE:
        return STYLE[strategy]
    extra = sorted(set(strategies_seen) - set(STRATEGIES))
    i = extra.index(strategy) if strategy in extra else 0
    return FALLBACK_STYLES[i % len(FALLBACK_STYLES)]


def select(rows, sweep=None, mode=None, workload=None):
    out = []
    for r in rows:
        if sweep is not None and sweep not in r["sweeps"]:
            continue
        if mode is not None and r["mode"] != mode:
            continue
        if workload is not None and r["workload"] != workload:
            continue
        out.append(r)
    return out


def index_by(rows, keyfn, what):
    """Maps keyfn(row) -> row; on duplicates the later row wins (noted)."""
    table = {}
    for r in rows:
        k = keyfn(r)
        if k in table:
            note("%s: %s duplicates %s (%s); the later row is used"
                 % (what, r["_src"], table[k]["_src"],
                    ", ".join(str(x) for x in k)))
        table[k] = r
    return table


def distinct(rows, column):
    return sorted({r[column] for r in rows})


def join_values(values):
    return "/".join(str(v) for v in values)


# ----------------------------------------------------------------------------
# Number formatting


def sig3(x):
    """x rounded half-up to 3 significant figures, never in exponent
    notation: 12345 -> 12300, 0.001234 -> 0.00123, 2.5 -> 2.50."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return DASH
    if x == 0:
        return "0"
    v = decimal.Decimal(repr(float(x)))
    exp = v.adjusted() - 2  # exponent of the 3rd significant digit
    r = v.quantize(decimal.Decimal(1).scaleb(exp), decimal.ROUND_HALF_UP)
    if r.adjusted() != v.adjusted():  # 9.996 -> 10.0: one digit fewer
        exp += 1
        r = v.quantize(decimal.Decimal(1).scaleb(exp), decimal.ROUND_HALF_UP)
    return "%.*f" % (max(0, -exp), r)


def fmt_range(r, prefix):
    return "%s (%s%s%s)" % (sig3(r[prefix]), sig3(r[prefix + "_min"]), DASH,
                            sig3(r[prefix + "_max"]))


def md_table(header, body, align_right_from=1):
    aligns = ["---" if i < align_right_from else "---:"
              for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(aligns) + "|"]
    for row in body:
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# Figures


def unit_of(rows):
    units = ordered((r["unit"] for r in rows if r["unit"]), [])
    return join_values(units) if units else "units"


def setup_log2_x(ax, xs, label):
    import matplotlib.ticker as ticker
    ax.set_xscale("log", base=2)
    xs = sorted(set(xs))
    ax.xaxis.set_major_locator(ticker.FixedLocator(xs))
    ax.xaxis.set_major_formatter(ticker.FixedFormatter([str(x) for x in xs]))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel(label)


def subplot_grid(n):
    import matplotlib.pyplot as plt
    cols = 2 if n > 1 else 1
    nrows = max(1, (n + cols - 1) // cols)
    if n <= 4 and n > 1:
        nrows = 2 if n > 2 else 1
    fig, axes = plt.subplots(nrows, cols, figsize=(5.6 * cols, 4.2 * nrows),
                             squeeze=False)
    flat = [a for row in axes for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def positive(rows, column, where):
    keep = [r for r in rows if r[column] > 0]
    if len(keep) != len(rows):
        note("%s: %d row(s) with %s <= 0 left out of the log plot"
             % (where, len(rows) - len(keep), column))
    return keep


def plot_sweep(rows, sweep, mode, path):
    sel = select(rows, sweep=sweep, mode=mode)
    name = os.path.basename(path)
    if not sel:
        note("%s: no rows with sweep=%s, mode=%s; figure skipped"
             % (name, sweep, mode))
        return False
    fixed = "hidden" if sweep == "batch" else "batch"
    wls = workloads_of(sel)
    fig, axes = subplot_grid(len(wls))
    for ax, wl in zip(axes, wls):
        wrows = positive(select(sel, workload=wl), "units_per_s",
                         "%s/%s" % (name, wl))
        for st in strategies_of(wrows):
            pts = index_by([r for r in wrows if r["strategy"] == st],
                           lambda r: (r[sweep],),
                           "%s %s %s" % (name, wl, st))
            xs = sorted(pts)
            ys = [pts[x]["units_per_s"] for x in xs]
            lo = [max(0.0, pts[x]["units_per_s"] - pts[x]["units_per_s_min"])
                  for x in xs]
            hi = [max(0.0, pts[x]["units_per_s_max"] - pts[x]["units_per_s"])
                  for x in xs]
            colour, marker = style_of(st)
            ax.errorbar([x[0] for x in xs], ys, yerr=[lo, hi], label=st,
                        color=colour, marker=marker, markersize=5,
                        capsize=3, linewidth=1.4)
        if wrows:
            ax.set_yscale("log")
            setup_log2_x(ax, [r[sweep] for r in wrows],
                         "batch size" if sweep == "batch" else "hidden size")
        ax.set_ylabel("%s/s" % unit_of(wrows))
        ax.set_title("%s (%s %s)" % (wl, fixed,
                                     join_values(distinct(wrows, fixed))))
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    what = "training" if mode == "train" else "inference"
    fig.suptitle("%s throughput vs %s size" % (what.capitalize(),
                                               "batch" if sweep == "batch"
                                               else "hidden"))
    fig.tight_layout()
    save(fig, path)
    return True


def plot_construction(rows, path):
    import matplotlib.pyplot as plt
    sel = select(rows, sweep="leaves", mode="train", workload="tree-fc")
    name = os.path.basename(path)
    if not sel:
        note("%s: no rows with sweep=leaves, workload=tree-fc, mode=train; "
             "figure skipped" % name)
        return False
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    lrows = positive(sel, "build_s", name)
    for st in strategies_of(sel):
        colour, marker = style_of(st)
        pts = index_by([r for r in sel if r["strategy"] == st],
                       lambda r: (r["leaves"],), "%s %s" % (name, st))
        xs = sorted(pts)
        lx = [x for x in xs if pts[x]["build_s"] > 0]
        left.plot([x[0] for x in lx], [pts[x]["build_s"] * 1e3 for x in lx],
                  label=st, color=colour, marker=marker, markersize=5)
        right.plot([x[0] for x in xs],
                   [pts[x]["build_share"] * 100 for x in xs],
                   label=st, color=colour, marker=marker, markersize=5)
    if lrows:
        left.set_yscale("log")
    setup_log2_x(left, [r["leaves"] for r in sel], "leaves per graph")
    setup_log2_x(right, [r["leaves"] for r in sel], "leaves per graph")
    left.set_ylabel("graph construction per minibatch (ms)")
    right.set_ylabel("construction share of time (%)")
    right.set_ylim(bottom=0)
    desc = "batch %s, hidden %s" % (join_values(distinct(sel, "batch")),
                                    join_values(distinct(sel, "hidden")))
    left.set_title("Tree-FC construction time (%s)" % desc)
    right.set_title("Tree-FC construction share (%s)" % desc)
    for ax in (left, right):
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, path)
    return True


def plot_epoch(rows, path):
    """Table 1 as bars: computation-only seconds per epoch, one group per
    workload and mode (sweep "epoch"), one bar per strategy (log scale)."""
    import matplotlib.pyplot as plt
    sel = [r for r in select(rows, sweep="epoch") if r["epoch_compute_s"] > 0]
    name = os.path.basename(path)
    if not sel:
        note("%s: no rows with sweep=epoch; figure skipped" % name)
        return False
    groups = sorted({(r["workload"], r["mode"]) for r in sel},
                    key=lambda k: (WORKLOADS.index(k[0]) if k[0] in WORKLOADS
                                   else len(WORKLOADS), k[0], k[1] != "train"))
    sts = strategies_of(sel)
    cells = {(r["workload"], r["mode"], r["strategy"]): r["epoch_compute_s"]
             for r in sel}
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.8 / max(len(sts), 1)
    for i, st in enumerate(sts):
        colour, _ = style_of(st)
        xs = [g + (i - (len(sts) - 1) / 2) * width
              for g, k in enumerate(groups) if (k[0], k[1], st) in cells]
        ys = [cells[(k[0], k[1], st)] for k in groups
              if (k[0], k[1], st) in cells]
        ax.bar(xs, ys, width=width, color=colour, label=st)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s\n%s" % k for k in groups], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("computation per epoch (s, log scale)")
    desc = "batch %s" % join_values(distinct(sel, "batch"))
    ax.set_title("Table 1: computation-only time per epoch (%s)" % desc)
    ax.grid(True, axis="y", which="major", alpha=0.3)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    save(fig, path)
    return True


def plot_movement(rows, path):
    """Table 2 as bars: the share of each minibatch's computation spent
    moving rows, per strategy, for each workload x mode x batch of the
    movement runs (strategies that cannot measure it are left out)."""
    import matplotlib.pyplot as plt
    sel = [r for r in select(rows, sweep="movement") if r["movement_s"] >= 0]
    name = os.path.basename(path)
    if not sel:
        note("%s: no rows with sweep=movement; figure skipped" % name)
        return False
    keys = sorted({(r["workload"], r["mode"], r["batch"]) for r in sel},
                  key=lambda k: (WORKLOADS.index(k[0]) if k[0] in WORKLOADS
                                 else len(WORKLOADS), k[0], k[1] != "train",
                                 k[2]))
    sts = strategies_of(sel)
    cells = {(r["workload"], r["mode"], r["batch"], r["strategy"]): r
             for r in sel}
    fig, ax = plt.subplots(figsize=(14, 4.8))
    width = 0.8 / max(len(sts), 1)
    for i, st in enumerate(sts):
        colour, _ = style_of(st)
        xs, moved = [], []
        for g, k in enumerate(keys):
            r = cells.get(k + (st,))
            if r is None:
                continue
            xs.append(g + (i - (len(sts) - 1) / 2) * width)
            moved.append(r["movement_s"] / max(r["compute_s"], 1e-12) * 100)
        ax.bar(xs, moved, width=width, color=colour, label=st)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(["%s\n%s b%d" % k for k in keys], fontsize=6)
    ax.set_ylabel("moving rows, % of computation")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("Table 2: memory movement vs computation per minibatch")
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    save(fig, path)
    return True


# PNG text chunks written into every figure (scripts/bench_report.py records
# there which data a figure was drawn from).
METADATA = {}


def save(fig, path):
    import matplotlib.pyplot as plt
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path, dpi=ARGS_DPI, metadata=dict(METADATA) or None)
    plt.close(fig)


def make_figures(rows, out_dir):
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("plot_benchmarks: error: matplotlib is missing "
                         "(apt-get install python3-matplotlib, then run "
                         "/usr/bin/python3)")
    matplotlib.use("Agg")
    written = []
    for sweep in ("batch", "hidden"):
        for mode in MODES:
            path = os.path.join(out_dir, "fig8_%s_%s.png" % (sweep, mode))
            if plot_sweep(rows, sweep, mode, path):
                written.append(path)
    path = os.path.join(out_dir, "fig9_construction.png")
    if plot_construction(rows, path):
        written.append(path)
    for fn, fname in ((plot_epoch, "table1_epoch.png"),
                      (plot_movement, "table2_movement.png")):
        path = os.path.join(out_dir, fname)
        if fn(rows, path):
            written.append(path)
    return written


# ----------------------------------------------------------------------------
# Tables


def table_throughput(rows, sweep):
    title = "Throughput vs %s size" % sweep
    fixed = "hidden" if sweep == "batch" else "batch"
    parts = []
    for mode in MODES:
        sel = select(rows, sweep=sweep, mode=mode)
        for wl in workloads_of(sel):
            wrows = select(sel, workload=wl)
            sts = strategies_of(wrows)
            cells = index_by(wrows, lambda r: (r[sweep], r["strategy"]),
                             "%s table %s %s" % (title, wl, mode))
            body = []
            for x in sorted({k[0] for k in cells}):
                body.append([str(x)] + [fmt_range(cells[(x, s)], "units_per_s")
                                        if (x, s) in cells else DASH
                                        for s in sts])
            parts.append("**%s, %s** (%s %s; %s/s, median (min%smax))\n\n%s"
                         % (wl, mode, fixed,
                            join_values(distinct(wrows, fixed)),
                            unit_of(wrows), DASH,
                            md_table([sweep] + sts, body)))
    return title, parts


def table_construction(rows):
    title = "Graph construction vs graph size (Tree-FC)"
    sel = select(rows, sweep="leaves", mode="train", workload="tree-fc")
    if not sel:
        return title, []
    sts = strategies_of(sel)
    cells = index_by(sel, lambda r: (r["leaves"], r["strategy"]), title)
    header = ["leaves"]
    for s in sts:
        header += ["%s build ms" % s, "%s share %%" % s]
    body = []
    for x in sorted({k[0] for k in cells}):
        line = [str(x)]
        for s in sts:
            r = cells.get((x, s))
            if r is None:
                line += [DASH, DASH]
            else:
                line += [sig3(r["build_s"] * 1e3),
                         sig3(r["build_share"] * 100)]
        body.append(line)
    return title, ["Training, batch %s, hidden %s; graph construction per "
                   "minibatch (median) and its share of construction + "
                   "computation.\n\n%s"
                   % (join_values(distinct(sel, "batch")),
                      join_values(distinct(sel, "hidden")),
                      md_table(header, body))]


def config_key(r):
    return (WORKLOADS.index(r["workload"]) if r["workload"] in WORKLOADS
            else len(WORKLOADS), r["workload"], MODES.index(r["mode"]),
            r["batch"], r["hidden"])


def seconds_or_na(x):
    return "n/a" if x < 0 else sig3(x)


def table_epoch(rows):
    title = "Table 1: computation-only time per epoch"
    sel = select(rows, sweep="epoch")
    if not sel:
        return title, []
    sts = strategies_of(sel)
    cells = index_by(sel, lambda r: config_key(r) + (r["strategy"],), title)
    configs = sorted({k[:-1] for k in cells})
    parts = []
    for column, caption in (("epoch_compute_s",
                             "Computation only, seconds per epoch."),
                            ("epoch_s", "Total (construction + computation "
                             "+ everything else), seconds per epoch.")):
        body = []
        for c in configs:
            body.append([c[1], MODES[c[2]], str(c[3]), str(c[4])] +
                        [seconds_or_na(cells[c + (s,)][column])
                         if c + (s,) in cells else DASH for s in sts])
        parts.append("%s\n\n%s" % (caption, md_table(
            ["workload", "mode", "batch", "hidden"] + sts, body,
            align_right_from=2)))
    return title, parts


def movement_cell(r):
    if r["movement_s"] < 0:
        return "n/a"
    share = r["movement_share"]
    if share < 0 and r["compute_s"] > 0:
        share = r["movement_s"] / r["compute_s"]
    return "%s / %s (%s%%)" % (sig3(r["movement_s"] * 1e3),
                               sig3(r["compute_s"] * 1e3),
                               sig3(share * 100) if share >= 0 else "n/a")


def table_movement(rows):
    title = "Table 2: memory movement vs computation"
    sel = select(rows, sweep="movement")
    if not sel:
        return title, []
    sts = strategies_of(sel)
    cells = index_by(sel, lambda r: config_key(r) + (r["strategy"],), title)
    configs = sorted({k[:-1] for k in cells})
    body = []
    for c in configs:
        body.append([c[1], MODES[c[2]], str(c[3]), str(c[4])] +
                    [movement_cell(cells[c + (s,)]) if c + (s,) in cells
                     else DASH for s in sts])
    return title, ["Per minibatch (medians): memory movement ms / computation "
                   "ms (movement as %% of computation); n/a where the "
                   "strategy cannot measure movement.\n\n%s"
                   % md_table(["workload", "mode", "batch", "hidden"] + sts,
                              body, align_right_from=2)]


def table_memory(rows):
    """Peak RSS of the Table 1 runs (sweep "epoch": one batch size and the
    default hidden size per workload), train and infer; falls back to the
    largest peak over all rows when there are no such runs."""
    title = "Peak resident memory"
    sel = [r for r in select(rows, sweep="epoch") if r["peak_rss_mb"] >= 0]
    if sel:
        sts = strategies_of(sel)
        cells = {}
        for r in sel:
            cells[(r["workload"], r["mode"], r["batch"], r["hidden"], r["strategy"])] = r["peak_rss_mb"]
        keys = sorted({k[:4] for k in cells}, key=lambda k: (WORKLOADS.index(k[0]) if k[0] in WORKLOADS else len(WORKLOADS), k[0], k[1] != "train", k[2], k[3]))
        body = [[wl, mode, str(b), str(h)] + [sig3(cells[(wl, mode, b, h, s)]) if (wl, mode, b, h, s) in cells
                                               else DASH for s in sts] for wl, mode, b, h in keys]
        return title, ["Peak resident set of the process during each configuration of Table 1, MB "
                       "(it includes what every run holds: libraries and the dataset).\n\n%s"
                       % md_table(["workload", "mode", "batch", "hidden"] + sts, body, align_right_from=2)]
    sel = [r for r in rows if r["peak_rss_mb"] >= 0]
    if not sel:
        return title, []
    sts = strategies_of(sel)
    peak = {}
    for r in sel:
        k = (r["workload"], r["strategy"])
        peak[k] = max(peak.get(k, r["peak_rss_mb"]), r["peak_rss_mb"])
    body = [[wl] + [sig3(peak[(wl, s)]) if (wl, s) in peak else DASH
                    for s in sts] for wl in workloads_of(sel)]
    return title, ["Largest peak resident set over all measured "
                   "configurations, MB.\n\n%s"
                   % md_table(["workload"] + sts, body)]


def table_speedups(rows):
    title = "Speed-ups"
    parts = []
    for sweep in ("batch", "hidden"):
        for mode in MODES:
            sel = select(rows, sweep=sweep, mode=mode)
            for wl in workloads_of(sel):
                wrows = select(sel, workload=wl)
                others = [s for s in strategies_of(wrows) if s != "sylva"]
                if not others or not any(r["strategy"] == "sylva"
                                         for r in wrows):
                    continue
                # Duplicates were already reported by the throughput table.
                cells = {(r["batch"], r["hidden"], r["strategy"]): r
                         for r in wrows}
                points = sorted({k[:2] for k in cells},
                                key=lambda k: (k[0], k[1]) if sweep == "batch"
                                else (k[1], k[0]))
                body = []
                for b, h in points:
                    base = cells.get((b, h, "sylva"))
                    line = [str(b if sweep == "batch" else h)]
                    for s in others:
                        other = cells.get((b, h, s))
                        if (base is None or other is None
                                or other["units_per_s"] <= 0):
                            line.append(DASH)
                        else:
                            line.append(sig3(base["units_per_s"]
                                             / other["units_per_s"]) + "x")
                    body.append(line)
                fixed = "hidden" if sweep == "batch" else "batch"
                parts.append("**%s, %s, %s sweep** (%s %s)\n\n%s" % (
                    wl, mode, sweep, fixed,
                    join_values(distinct(wrows, fixed)),
                    md_table([sweep] + ["sylva / %s" % s for s in others],
                             body)))
    if not parts and rows:
        note("speed-ups need rows of strategy sylva and at least one other "
             "strategy in the batch/hidden sweeps")
    return title, parts


def make_tables(rows, inputs):
    sections = [
        table_throughput(rows, "batch"),
        table_throughput(rows, "hidden"),
        table_construction(rows),
        table_epoch(rows),
        table_movement(rows),
        table_memory(rows),
        table_speedups(rows),
    ]
    out = ["<!-- generated by scripts/plot_benchmarks.py from %s -->"
           % " ".join(inputs)]
    for title, parts in sections:
        if not parts:
            note("table '%s': no rows; skipped" % title)
            continue
        out.append("### %s\n\n%s" % (title, "\n\n".join(parts)))
    return "\n\n".join(out) + "\n"


# ----------------------------------------------------------------------------


def main(argv=None):
    global ARGS_DPI
    ap = argparse.ArgumentParser(
        description="Plot bench_suite CSV results and print markdown tables.")
    ap.add_argument("inputs", nargs="+",
                    help="CSV files, or directories whose *.csv are all read")
    ap.add_argument("--out", default=os.path.join("docs", "figures"),
                    help="directory for the PNG figures (default: "
                    "docs/figures)")
    ap.add_argument("--tables", default=None,
                    help="markdown file for the tables (default: stdout)")
    ap.add_argument("--dpi", type=int, default=150,
                    help="resolution of the PNGs (default: 150)")
    args = ap.parse_args(argv)
    ARGS_DPI = args.dpi
    try:
        rows = read_all(args.inputs)
    except CsvError as e:
        print("plot_benchmarks: error: %s" % e, file=sys.stderr)
        return 1
    strategies_seen[:] = strategies_of(rows)
    if not rows:
        note("no data rows in the input; nothing to do")
    written = make_figures(rows, args.out)
    for p in written:
        note("wrote " + p)
    text = make_tables(rows, args.inputs)
    if args.tables:
        d = os.path.dirname(args.tables)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(args.tables, "w", encoding="utf-8") as f:
            f.write(text)
        note("wrote " + args.tables)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
