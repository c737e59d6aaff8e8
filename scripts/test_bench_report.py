"""Tests of scripts/bench_report.py: the docs match the data, an edited
table or a changed CSV is caught, and bad input is named.

  cd scripts && python3 -m unittest -v test_bench_report
"""
import contextlib
import io
import os
import shutil
import tempfile
import unittest

import bench_report


class BenchReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def copy_doc(self, rel):
        os.makedirs(os.path.dirname(os.path.join(self.tmp, rel)), exist_ok=True)
        shutil.copy(os.path.join(bench_report.ROOT, rel), os.path.join(self.tmp, rel))
        return os.path.join(self.tmp, rel)

    def check(self, rel):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            differ = bench_report.run(check=True, docs=[rel], root=self.tmp)
        return differ, out.getvalue()

    def test_committed_docs_match_the_data(self):
        for rel in bench_report.DOCS:
            self.copy_doc(rel)
            self.assertEqual(self.check(rel)[0], 0, rel)

    def test_every_table_is_placed_once(self):
        text = "".join(open(os.path.join(bench_report.ROOT, d), encoding="utf-8").read() for d in bench_report.DOCS)
        placed = bench_report.MARKER.findall(text)
        self.assertEqual(sorted(set(n for n, _ in placed)), sorted(bench_report.TABLES))

    def test_an_edited_number_is_caught(self):
        path = self.copy_doc(os.path.join("docs", "benchmarks.md"))
        text = open(path, encoding="utf-8").read()
        start = text.index("<!-- bench_report: dynet-tree-lstm -->")
        row = text.index("| dynet | adam | 128 | 1 |", start)
        cell = text.index("**", row)
        end = text.index("x**", cell)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text[:cell + 2] + "9.99" + text[end:])
        differ, diff = self.check(os.path.join("docs", "benchmarks.md"))
        self.assertEqual(differ, 1)
        self.assertIn("-| dynet | adam | 128 | 1 |", diff)

    def test_rewrite_restores_the_table(self):
        path = self.copy_doc("README.md")
        text = open(path, encoding="utf-8").read()
        start = text.index("<!-- bench_report: readme-ios -->\n") + len("<!-- bench_report: readme-ios -->\n")
        end = text.index("<!-- /bench_report -->", start)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text[:start] + text[end:])  # emptied
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(bench_report.run(check=False, docs=["README.md"], root=self.tmp), 1)
        self.assertEqual(open(path, encoding="utf-8").read(), text)

    def test_unknown_table_and_unpaired_markers_are_named(self):
        path = os.path.join(self.tmp, "doc.md")
        with open(path, "w") as f:
            f.write("<!-- bench_report: no-such-table -->\n<!-- /bench_report -->\n")
        with self.assertRaisesRegex(bench_report.ReportError, "doc.md: unknown table 'no-such-table'"):
            bench_report.run(check=True, docs=["doc.md"], root=self.tmp)
        with open(path, "w") as f:
            f.write("<!-- bench_report: cosa -->\n")
        with self.assertRaisesRegex(bench_report.ReportError, "do not pair up"):
            bench_report.run(check=True, docs=["doc.md"], root=self.tmp)

    def test_a_changed_csv_changes_the_table(self):
        results = os.path.join(self.tmp, "results")
        shutil.copytree(os.path.join(bench_report.RESULTS, "distributed"), os.path.join(results, "distributed"))
        before = bench_report.table_distributed()
        csv_path = os.path.join(results, "distributed", "scaling.csv")
        text = open(csv_path).read().replace(",1.82,", ",1.50,")
        open(csv_path, "w").write(text)
        old = bench_report.RESULTS
        bench_report.RESULTS = results
        try:
            after = bench_report.table_distributed()
        finally:
            bench_report.RESULTS = old
        self.assertNotEqual(before, after)
        self.assertIn("**1.50x** (1.37..1.94) | ≥ 1.7x: **not met** |", "\n".join(after))

    def test_malformed_and_missing_files_are_named(self):
        os.makedirs(os.path.join(self.tmp, "run"))
        with open(os.path.join(self.tmp, "run", "bad.csv"), "w") as f:
            f.write("a,b\n1,2\n3\n")
        old = bench_report.RESULTS
        bench_report.RESULTS = self.tmp
        try:
            with self.assertRaisesRegex(bench_report.ReportError, r"bad.csv:3: 1 fields, the header has 2"):
                bench_report.read_rows("run/bad.csv")
            with self.assertRaisesRegex(bench_report.ReportError, "missing .*run/none.csv"):
                bench_report.read_rows("run/none.csv")
            with open(os.path.join(self.tmp, "run", "machine.txt"), "w") as f:
                f.write("# Model name: X\n")
            with self.assertRaisesRegex(bench_report.ReportError, "needs '# tool DATE'"):
                bench_report.machine("run/machine.txt")
        finally:
            bench_report.RESULTS = old

    def test_figures_match_their_data(self):
        self.assertEqual(bench_report.stale_figures(), [])

    def test_png_text_is_read(self):
        import struct
        import zlib

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)) +
               chunk(b"tEXt", b"Description\0bench_report sources abc") +
               chunk(b"IDAT", zlib.compress(b"\0\0")) + chunk(b"IEND", b""))
        path = os.path.join(self.tmp, "f.png")
        with open(path, "wb") as f:
            f.write(png)
        self.assertEqual(bench_report.png_text(path), {"Description": "bench_report sources abc"})
        with open(path, "wb") as f:
            f.write(b"GIF89a")
        with self.assertRaisesRegex(bench_report.ReportError, "not a PNG"):
            bench_report.png_text(path)

    def test_changed_data_makes_its_figure_stale(self):
        results = os.path.join(self.tmp, "results")
        for folder in bench_report.DYNET_TREE_LSTM:
            shutil.copytree(os.path.join(bench_report.RESULTS, folder), os.path.join(results, folder))
        old_results, old_figures = bench_report.RESULTS, bench_report.FIGURES
        bench_report.RESULTS = results
        bench_report.FIGURES = {"dynet_tree_lstm.png": bench_report.DYNET_TREE_LSTM}
        try:
            self.assertEqual(bench_report.stale_figures(), [])
            csv_path = os.path.join(results, bench_report.DYNET_TREE_LSTM[0], "tree-lstm-tai-h128-adam-1core.csv")
            with open(csv_path, "a") as f:
                f.write("\n")
            stale = bench_report.stale_figures()
        finally:
            bench_report.RESULTS, bench_report.FIGURES = old_results, old_figures
        self.assertEqual(len(stale), 1)
        self.assertIn("dynet_tree_lstm.png: drawn from other data", stale[0])

    def test_goal_text_says_not_met(self):
        self.assertEqual(bench_report.goal_text(1.19, 1.2), "≥ 1.2x: **not met**")
        self.assertEqual(bench_report.goal_text(1.2, 1.2), "≥ 1.2x: met")


if __name__ == "__main__":
    unittest.main()
