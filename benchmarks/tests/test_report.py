"""The results' formats: Markdown tables, per-system cells and CSV
files."""

import csv
import os
import tempfile
import unittest

from hdfsrdma_bench.report import md_table, per_system, write_csv


class MdTable(unittest.TestCase):
    def test_table(self):
        self.assertEqual(
            md_table(["size", "ratio", "bytes", "note"],
                     [["1M", 0.6667, 3, None], ["16M", 1.0, 0, "x"]]),
            "| size | ratio | bytes | note |\n"
            "|---|---|---|---|\n"
            "| 1M | 0.67 | 3 | n/a |\n"
            "| 16M | 1.00 | 0 | x |")

    def test_text_cells_are_kept_as_they_are(self):
        self.assertEqual(md_table(["a"], [["0.6667"]]).splitlines()[-1],
                         "| 0.6667 |")

    def test_no_rows(self):
        self.assertEqual(md_table(["a", "b"], []), "| a | b |\n|---|---|")


class PerSystem(unittest.TestCase):
    def test_one_value_per_system_present(self):
        row = {"stock_wall_s": 1.234, "jar_wall_s": None, "ucx_wall_s": 2.0}
        self.assertEqual(per_system(row, "%s_wall_s", ["stock", "jar", "ucx"]),
                         "1.23 / n/a / 2.00")
        self.assertEqual(per_system(row, "%s_wall_s", ["ucx"], 1), "2.0")


class WriteCsv(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = os.path.join(self.dir.name, "rows.csv")

    def test_every_key_in_first_appearance_order(self):
        write_csv(self.path, [dict(system="stock", wall_s=1.5),
                              dict(system="ucx", client_x=3, wall_s=None),
                              dict(extra=0)])
        with open(self.path, newline="") as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows, [["system", "wall_s", "client_x", "extra"],
                                ["stock", "1.5", "", ""],
                                ["ucx", "", "3", ""],
                                ["", "", "", "0"]])

    def test_no_rows_no_file(self):
        write_csv(self.path, [])
        self.assertFalse(os.path.exists(self.path))


if __name__ == "__main__":
    unittest.main()
