#!/usr/bin/python3
"""Self-test of scripts/plot_benchmarks.py on SYNTHETIC data.

Writes a made-up CSV in the format of bench_suite into a temporary
directory (the numbers are invented, not measurements), runs the plotter on
it with --out and --tables inside that directory, and checks the PNGs, the
table headings and a speed-up ratio computed from the synthetic numbers.
Also checks that malformed CSVs are refused with exit status 1 and a message
naming file and line, and that empty experiments are skipped with a note.

Run: /usr/bin/python3 scripts/test_plot_benchmarks.py
"""

import csv
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PLOTTER = os.path.join(HERE, "plot_benchmarks.py")

COLUMNS = [
    "workload", "strategy", "mode", "batch", "hidden", "leaves", "threads",
    "repeats", "samples_per_s", "samples_per_s_min", "samples_per_s_max",
    "units_per_s", "units_per_s_min", "units_per_s_max", "unit", "build_s",
    "compute_s", "movement_s", "build_share", "movement_share", "kernels",
    "peak_rss_mb", "epoch_s", "epoch_compute_s", "loss", "sweep",
]

# --- SYNTHETIC numbers: invented for the test, not measurements. ----------
UNIT = {"tree-lstm": "sentences", "var-lstm": "words",
        "fixed-lstm": "words", "tree-fc": "vertices"}
WORDS_PER_SAMPLE = {"tree-lstm": 1, "var-lstm": 20, "fixed-lstm": 64,
                    "tree-fc": 255}
BASE = {"tree-lstm": 100.0, "var-lstm": 3000.0, "fixed-lstm": 5000.0,
        "tree-fc": 20000.0}
SPEED = {"sylva": 1.0, "dynamic-decl": 0.5, "padded": 0.37,
         "libtorch-recursive": 0.25}
STRATEGIES = ["sylva", "padded", "dynamic-decl", "libtorch-recursive"]
MISSING = ("var-lstm", "libtorch-recursive", "train", 256)  # left out


def synthetic_units(wl, st, mode, batch, hidden):
    scale = batch ** 0.5 * (128.0 / hidden) * (2.0 if mode == "infer" else 1)
    # padded loses more as the batch grows (more padding), so the speed-up
    # differs per row and the test checks the right one.
    slow = 1 + batch / 512.0 if st == "padded" else 1.0
    return BASE[wl] * SPEED[st] * scale / slow


def synthetic_row(wl, st, mode, batch, hidden, leaves, sweep):
    u = synthetic_units(wl, st, mode, batch, hidden)
    samples = u / WORDS_PER_SAMPLE[wl]
    compute = batch / samples
    build = compute * (0.05 if st == "sylva" else 0.3) * (1 + leaves / 256.0)
    movement = -1.0 if st == "libtorch-recursive" else compute * 0.1
    return {
        "workload": wl, "strategy": st, "mode": mode, "batch": batch,
        "hidden": hidden, "leaves": leaves, "threads": 1, "repeats": 3,
        "samples_per_s": samples, "samples_per_s_min": samples * 0.95,
        "samples_per_s_max": samples * 1.05,
        "units_per_s": u, "units_per_s_min": u * 0.95,
        "units_per_s_max": u * 1.05, "unit": UNIT[wl],
        "build_s": build, "compute_s": compute,
        "movement_s": movement, "build_share": build / (build + compute),
        "movement_share": -1.0 if movement < 0 else movement / compute,
        "kernels": -1 if st == "libtorch-recursive" else 40 * batch,
        "peak_rss_mb": 100.0 + batch * SPEED[st] + hidden / 10.0,
        "epoch_s": 8544 / samples + 1.0, "epoch_compute_s": 8544 / samples,
        "loss": 1.5, "sweep": sweep,
    }


def synthetic_rows():
    rows = []
    for mode in ("train", "infer"):
        for wl in UNIT:
            leaves = 128 if wl == "tree-fc" else 0
            for st in STRATEGIES:
                for b in (1, 4, 16, 64, 256):
                    if (wl, st, mode, b) == MISSING:
                        continue
                    rows.append(synthetic_row(wl, st, mode, b, 128, leaves,
                                              "batch"))
                for h in (64, 256, 1024):
                    rows.append(synthetic_row(wl, st, mode, 64, h, leaves,
                                              "hidden"))
    for st in STRATEGIES:
        for leaves in (16, 64, 256, 1024):
            rows.append(synthetic_row("tree-fc", st, "train", 64, 128, leaves,
                                      "leaves"))
        for wl in UNIT:
            rows.append(synthetic_row(wl, st, "train", 25, 150,
                                      128 if wl == "tree-fc" else 0, "epoch"))
        for wl in ("tree-lstm", "var-lstm"):
            for mode in ("train", "infer"):
                rows.append(synthetic_row(wl, st, mode, 64, 128, 0,
                                          "movement"))
    return rows


def write_csv(path, rows, columns=COLUMNS):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def run_plotter(*args):
    return subprocess.run([sys.executable, PLOTTER] + list(args),
                          capture_output=True, text=True)


def section(text, heading):
    """The text of the '### heading' section up to the next '### '."""
    start = text.index("### " + heading + "\n")
    end = text.find("\n### ", start + 1)
    return text[start:] if end < 0 else text[start:end]


class PlotBenchmarksTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="plot_benchmarks_test_")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_figures_and_tables(self):
        data = os.path.join(self.dir, "data")
        os.mkdir(data)
        rows = synthetic_rows()
        # Two files in a directory: the plotter must read both.
        half = len(rows) // 2
        write_csv(os.path.join(data, "synthetic_a.csv"), rows[:half])
        write_csv(os.path.join(data, "synthetic_b.csv"), rows[half:])
        out = os.path.join(self.dir, "figures")
        tables = os.path.join(self.dir, "tables.md")
        p = run_plotter(data, "--out", out, "--tables", tables)
        self.assertEqual(p.returncode, 0, p.stderr)

        for name in ("fig8_batch_train.png", "fig8_batch_infer.png",
                     "fig8_hidden_train.png", "fig8_hidden_infer.png",
                     "fig9_construction.png"):
            path = os.path.join(out, name)
            self.assertTrue(os.path.isfile(path), name)
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)
            self.assertGreater(os.path.getsize(path), 10000, name)

        with open(tables, encoding="utf-8") as f:
            text = f.read()
        headings = ["Throughput vs batch size", "Throughput vs hidden size",
                    "Graph construction vs graph size (Tree-FC)",
                    "Table 1: computation-only time per epoch",
                    "Table 2: memory movement vs computation",
                    "Peak resident memory", "Speed-ups"]
        positions = [text.index("### " + h + "\n") for h in headings]
        self.assertEqual(positions, sorted(positions), "heading order")

        # Speed-up sylva / padded for tree-lstm, train, batch 64, computed
        # here from the synthetic units/s written into the CSV.
        def units(st):
            return [r for r in rows if r["workload"] == "tree-lstm"
                    and r["strategy"] == st and r["mode"] == "train"
                    and r["batch"] == 64 and r["sweep"] == "batch"
                    ][0]["units_per_s"]
        ratio = units("sylva") / units("padded")
        self.assertTrue(1 <= ratio < 10)
        expected = "%.2fx" % ratio  # 3 significant figures
        speedups = section(text, "Speed-ups")
        block = speedups[speedups.index("**tree-lstm, train, batch sweep**"):]
        header = [l for l in block.splitlines() if l.startswith("| batch")][0]
        cols = [c.strip() for c in header.strip("|").split("|")]
        row64 = [l for l in block.splitlines() if l.startswith("| 64 |")][0]
        cells = [c.strip() for c in row64.strip("|").split("|")]
        self.assertEqual(cells[cols.index("sylva / padded")], expected,
                         row64)

        # Median (min-max) cell, 3 significant figures.
        r = [x for x in rows if x["workload"] == "tree-lstm"
             and x["strategy"] == "sylva" and x["mode"] == "train"
             and x["batch"] == 64 and x["sweep"] == "batch"][0]
        self.assertAlmostEqual(r["units_per_s"], 800.0)
        self.assertIn("| 64 | 800 (760\u2013840) |",
                      section(text, "Throughput vs batch size"))

        # The left-out combination shows as a dash.
        batch = section(text, "Throughput vs batch size")
        var = batch[batch.index("**var-lstm, train**"):]
        row256 = [l for l in var.splitlines() if l.startswith("| 256 |")][0]
        self.assertTrue(row256.rstrip().endswith("| \u2013 |"), row256)

        # Strategies that cannot measure movement show n/a.
        self.assertIn("n/a", section(text, "Table 2: memory movement vs "
                                     "computation"))

    def test_empty_experiments_are_skipped(self):
        rows = [r for r in synthetic_rows() if r["sweep"] == "batch"
                and r["mode"] == "train"]
        path = os.path.join(self.dir, "only_batch_train.csv")
        write_csv(path, rows)
        out = os.path.join(self.dir, "figures")
        p = run_plotter(path, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["fig8_batch_train.png"])
        self.assertIn("fig9_construction.png: no rows", p.stderr)
        self.assertIn("Table 1: computation-only time per epoch': no rows",
                      p.stderr)
        self.assertIn("### Throughput vs batch size", p.stdout)
        self.assertIn("### Speed-ups", p.stdout)
        self.assertNotIn("### Table 1", p.stdout)

    def test_missing_column(self):
        path = os.path.join(self.dir, "bad_header.csv")
        write_csv(path, synthetic_rows()[:3],
                  [c for c in COLUMNS if c != "epoch_s"])
        p = run_plotter(path, "--out", os.path.join(self.dir, "figures"))
        self.assertEqual(p.returncode, 1)
        self.assertIn(path + ":1:", p.stderr)
        self.assertIn("epoch_s", p.stderr)

    def test_non_numeric_value(self):
        path = os.path.join(self.dir, "bad_value.csv")
        rows = synthetic_rows()[:5]
        rows[2] = dict(rows[2], compute_s="fast")
        write_csv(path, rows)
        p = run_plotter(path, "--out", os.path.join(self.dir, "figures"))
        self.assertEqual(p.returncode, 1)
        # Header is line 1, so the third data row is line 4.
        self.assertIn(path + ":4:", p.stderr)
        self.assertIn("compute_s", p.stderr)
        self.assertIn("'fast'", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
