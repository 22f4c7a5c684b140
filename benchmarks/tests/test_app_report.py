"""apps.csv without a cluster: the medians and ratios to stock of the
--apps runs, apps-summary.md's parts, and each application target judged
on the workloads it names."""

import unittest

from hdfsrdma_bench import apps, app_report, targets
from hdfsrdma_bench.units import KiB, MiB


def run_row(workload, system, run, **figures):
    row = dict(workload=workload, system=system, run=run,
               throughput_mb_s=None, p50_ms=None, p99_ms=None,
               p999_ms=None, records_per_s=None)
    row.update(figures)
    return row


class Summary(unittest.TestCase):
    def setUp(self):
        self.apps = [apps.writer(MiB, 3, 10), apps.wal(KiB, 5)]
        self.rows = []
        for run in (1, 2, 3):
            for s, mb, p99 in (("stock", 100, 40), ("jar", 110, 30),
                               ("ucx", 150 + run, 20)):
                self.rows.append(run_row("writer-1M-r3", s, run,
                                         throughput_mb_s=mb + run,
                                         p50_ms=10.0, p99_ms=p99))
            for s, rate, p50 in (("stock", 1000, 1.0), ("jar", 1000, 1.0),
                                 ("ucx", 2000, 0.5)):
                self.rows.append(run_row("wal-1K-r3", s, run,
                                         records_per_s=rate * run,
                                         p50_ms=p50, p99_ms=2 * p50,
                                         p999_ms=4 * p50))

    def test_medians_and_ratios_to_stock(self):
        s = app_report.app_summary(self.apps, ["stock", "jar", "ucx"],
                                   self.rows)
        self.assertEqual([(r["workload"], r["system"]) for r in s], [
            ("writer-1M-r3", "stock"), ("writer-1M-r3", "jar"),
            ("writer-1M-r3", "ucx"), ("wal-1K-r3", "stock"),
            ("wal-1K-r3", "jar"), ("wal-1K-r3", "ucx")])
        self.assertEqual(list(s[0])[:7], [
            "workload", "system", "throughput_mb_s", "p50_ms", "p99_ms",
            "p999_ms", "records_per_s"])
        ucx = s[2]
        self.assertEqual((ucx["throughput_mb_s"], ucx["runs"]), (154, 3))
        self.assertEqual(ucx["throughput_mb_s_vs_stock"], 1.5098)
        self.assertEqual(ucx["p99_ms_vs_stock"], 0.5)
        self.assertIsNone(ucx["p999_ms"])
        self.assertIsNone(ucx["records_per_s_vs_stock"])
        wal = s[5]
        self.assertEqual((wal["records_per_s"], wal["p999_ms_vs_stock"]),
                         (4000, 0.5))
        c = app_report.comparisons(self.apps, s)
        self.assertEqual(c[1]["ucx_stock_records_per_s"], 2.0)
        self.assertEqual(c[1]["jar_stock_p50_ms"], 1.0)
        self.assertEqual(c[1]["ucx_jar_p50_ms"], 0.5)

    def test_without_stock_the_ratios_are_none(self):
        rows = [r for r in self.rows if r["system"] != "stock"]
        s = app_report.app_summary(self.apps, ["jar", "ucx"], rows)
        self.assertTrue(all(r["throughput_mb_s_vs_stock"] is None
                            for r in s))
        c = app_report.comparisons(self.apps, s)
        self.assertIsNone(c[0]["ucx_stock_throughput_mb_s"])
        self.assertEqual(c[0]["ucx_jar_throughput_mb_s"], 154 / 112)

    def test_load_warning(self):
        self.assertNotIn("WARNING", app_report.load_line((0.4, 2, 3)))
        self.assertIn("WARNING", app_report.load_line((0.6, 0, 0)))
        self.assertTrue(app_report.load_line((0.6, 0, 0)).startswith(
            "load average at start (os.getloadavg): 0.60 0.00 0.00"))

    def test_summary_sections(self):
        s = app_report.app_summary(self.apps, ["stock", "jar", "ucx"],
                                   self.rows)
        c = app_report.comparisons(self.apps, s)
        m = {(r["workload"], r["system"]): r for r in s}
        cm = {r["workload"]: r for r in c}
        present = ["stock", "jar", "ucx"]
        text = "\n".join(app_report.writer_section(
            self.apps, m, cm, present, "stock / jar / UCX"))
        self.assertIn("| writer-1M-r3 | 10 x 1M | 3 | 3 | "
                      "102 / 112 / 154 | 1.51 | 1.10 |", text)
        text = "\n".join(app_report.wal_section(
            self.apps, m, cm, present, "stock / jar / UCX"))
        self.assertIn("| wal-1K-r3 | 1K | hflush | 1 | 3 | "
                      "2000 / 2000 / 4000 | 2.00 | 1.00 |", text)
        self.assertIn("wal-cdf.png", text)
        self.assertEqual(app_report.writers_section(
            self.apps, m, cm, present, ""), [])
        self.assertEqual(app_report.idle_section(
            self.apps, m, cm, present, ""), [])

    def test_idle_client_compared_by_difference(self):
        idle = [apps.idle(30.0)]
        rows = [run_row("idle-r3", s, run, idle_client_cores=c + run / 1e4,
                        idle_dn_cores=d, idle_nn_cores=0.002)
                for run in (1, 2, 3)
                for s, c, d in (("stock", 0.003, 0.004),
                                ("jar", 0.003, 0.006),
                                ("ucx", 0.01, 0.009))]
        s = app_report.app_summary(idle, ["stock", "jar", "ucx"], rows)
        c = app_report.comparisons(idle, s)
        self.assertEqual(c[0]["ucx_minus_stock_idle_client_cores"], 0.007)
        self.assertEqual(c[0]["ucx_minus_stock_idle_dn_cores"], 0.005)
        self.assertEqual(c[0]["jar_minus_stock_idle_nn_cores"], 0.0)
        m = {(r["workload"], r["system"]): r for r in s}
        text = "\n".join(app_report.idle_section(
            idle, m, {r["workload"]: r for r in c},
            ["stock", "jar", "ucx"], "stock / jar / UCX"))
        self.assertIn("| idle-r3 | 30 | 3 | 0.0032 / 0.0032 / 0.0102 | "
                      "0.0070 | 0.0040 / 0.0060 / 0.0090 | 0.0050 |", text)
        t = targets.app_targets(c)
        self.assertEqual([r["result"] for r in t[-2:]], ["met", "met"])


def comparison(workload, kind, size, sync=None, threads=1, runs=3, **r):
    row = dict(workload=workload, kind=kind, size=size, rep=3, sync=sync,
               threads=threads, runs=runs)
    row.update(r)
    return row


class AppTargets(unittest.TestCase):
    def test_each_target_on_its_workloads(self):
        comp = [
            comparison("wal-1K-r3", "wal", KiB, "hflush",
                       ucx_stock_p50_ms=0.5, ucx_stock_p99_ms=0.8,
                       ucx_stock_records_per_s=2.0),
            comparison("wal-4K-r3", "wal", 4 * KiB, "hflush",
                       ucx_stock_p50_ms=0.6, ucx_stock_p99_ms=0.6,
                       ucx_stock_records_per_s=1.3),
            # Not the targets' logs: hsync, 64 KiB, eight logs.
            comparison("wal-hsync-1K-r3", "wal", KiB, "hsync",
                       ucx_stock_p50_ms=9.0),
            comparison("wal-64K-r3", "wal", 64 * KiB, "hflush",
                       ucx_stock_p50_ms=9.0),
            comparison("wal8-1K-r3", "wal", KiB, "hflush", threads=8,
                       ucx_stock_p50_ms=9.0),
            comparison("writer-1M-r3", "writer", MiB,
                       ucx_stock_throughput_mb_s=1.0, ucx_stock_p99_ms=1.2),
            comparison("writer-16M-r1", "writer", 16 * MiB, runs=1,
                       ucx_stock_throughput_mb_s=1.2, ucx_stock_p99_ms=0.9),
            comparison("writer-128M-r3", "writer", 128 * MiB,
                       ucx_stock_throughput_mb_s=1.5, ucx_stock_p99_ms=0.9),
            comparison("writers-2x512M-r3", "writers", 512 * MiB,
                       ucx_stock_throughput_mb_s=0.1),
            comparison("mixed-8x128M-1K-r3", "mixed", 128 * MiB, "hflush",
                       threads=8, ucx_stock_p99_ms=0.75),
            comparison("dfsio-4x1G", "dfsio", 1 << 30,
                       ucx_stock_throughput_mb_s=1.4),
            comparison("dfsio-16x256M", "dfsio", 256 * MiB,
                       ucx_stock_throughput_mb_s=1.2),
            comparison("spark-8x128M-r3", "spark", 128 * MiB, threads=8,
                       ucx_stock_write_stage_s=0.85,
                       ucx_stock_throughput_mb_s=1.18),
            comparison("idle-r3", "idle", 16 * MiB,
                       ucx_minus_stock_idle_client_cores=0.004,
                       ucx_minus_stock_idle_dn_cores=0.012)]
        rows = targets.app_targets(comp)
        self.assertEqual([(r["result"], r["limit"]) for r in rows], [
            ("met", 0.70), ("missed (1 of 2)", 0.70),
            ("missed (1 of 2)", 1.4), ("missed (1 of 2)", 1.3),
            ("met", 1.0), ("missed (1 of 3)", 1.0), ("met", 0.8),
            ("missed (1 of 2)", 1.3), ("missed (1 of 1)", 0.8),
            ("met", 0.01), ("missed (1 of 1)", 0.01)])
        self.assertEqual(rows[6]["measured"], "mixed-8x128M-1K-r3 0.75")
        self.assertEqual(rows[8]["measured"], "spark-8x128M-r3 0.85")
        self.assertTrue(rows[8]["target"].startswith(
            "the Spark job's write stage"))
        self.assertEqual(rows[10]["target"],
                         "idle DataNode: cores, UCX - stock")
        self.assertEqual(rows[10]["measured"], "idle-r3 0.0120")
        self.assertEqual(rows[7]["measured"], "dfsio-4x1G 1.40, "
                         "dfsio-16x256M 1.20")
        self.assertEqual(rows[0]["measured"], "wal-1K-r3 0.50, wal-4K-r3 "
                         "0.60")
        self.assertEqual(rows[3]["measured"], "writer-16M-r1 1.20, "
                         "writer-128M-r3 1.50")
        self.assertTrue(rows[3]["note"].startswith("1 run(s)"))
        self.assertEqual(rows[4]["target"], "long-lived writer, 1M files: "
                         "throughput, UCX/stock")

    def test_not_measured(self):
        rows = targets.app_targets([], stock_skipped=True)
        self.assertEqual({r["result"] for r in rows}, {"not measured"})
        self.assertTrue(all("--stock-classpath" in r["note"] for r in rows))


if __name__ == "__main__":
    unittest.main()
