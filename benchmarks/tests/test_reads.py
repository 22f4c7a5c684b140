"""--reads without a cluster: the workloads the options describe, which of
them the ucx client takes over UCX, the check of what a batch carried,
the throughput without the comparing, and the targets judged on the
medians (reads.py, read_report.py)."""

import contextlib
import io
import types
import unittest

from hdfsrdma_bench import read_report, reads
from hdfsrdma_bench.cli import parse_args
from hdfsrdma_bench.units import GiB, KiB, MiB


def parse_quietly(argv):
    with contextlib.redirect_stderr(io.StringIO()):
        return parse_args(argv)


class Workloads(unittest.TestCase):
    def test_the_default_workloads(self):
        a = parse_args(["--reads"])
        self.assertEqual([r.name for r in a.reads_list],
                         ["seq-1M", "seq-64M", "seq-1G", "pread-4K",
                          "pread-64K", "pread-1M", "readers-4x64M"])
        seq = {r.name: r for r in a.reads_list}
        # About 1 GiB per sequential batch: at most 64 files, then passes.
        self.assertEqual((seq["seq-1M"].files, seq["seq-1M"].passes),
                         (64, 16))
        self.assertEqual((seq["seq-64M"].files, seq["seq-64M"].passes),
                         (16, 1))
        self.assertEqual((seq["seq-1G"].files, seq["seq-1G"].passes), (1, 1))
        self.assertEqual(seq["pread-4K"].size, 256 * MiB)
        self.assertEqual(seq["pread-4K"].count, 2000)
        self.assertEqual(seq["readers-4x64M"].threads, 4)

    def test_tiny_and_paper(self):
        self.assertEqual([r.name for r in parse_args(
            ["--reads", "--tiny"]).reads_list],
            ["seq-1M", "seq-16M", "pread-4K", "pread-64K", "readers-2x16M"])
        self.assertIn("seq-5G", [r.name for r in parse_args(
            ["--reads", "--paper"]).reads_list])

    def test_profile_names_a_measured_workload(self):
        a = parse_args(["--reads", "--read-seq", "1G", "--reads-profile",
                        "seq-1G"])
        self.assertEqual(a.reads_profile, "seq-1G")
        self.assertIsNone(parse_args(["--reads"]).reads_profile)

    def test_files_each_size_needs(self):
        a = parse_args(["--reads", "--read-seq", "64M", "--read-threads",
                        "8", "--read-threads-size", "64M"])
        self.assertEqual(reads.file_sets(a.reads_list),
                         {64 * MiB: 16, 256 * MiB: 1})

    def test_refused(self):
        for argv in (["--read-seq", "1M"], ["--reads", "--apps"],
                     ["--reads", "--read-pread", "1G"],
                     ["--reads", "--read-min-bytes", "-1"],
                     ["--reads", "--conf-self-test"],
                     ["--reads-profile", "seq-1G"],
                     ["--reads", "--read-seq", "64M", "--reads-profile",
                      "seq-1G"]):
            with self.assertRaises(SystemExit, msg=argv):
                parse_quietly(argv)


def bench_with(threshold):
    return types.SimpleNamespace(read_min_bytes=threshold, failures=[],
                                 fail=lambda msg: None)


class Threshold(unittest.TestCase):
    def test_which_reads_offer_ucx(self):
        a = parse_args(["--reads", "--read-seq", "1M,1G"])
        by = {r.name: r for r in a.reads_list}
        b = bench_with(1 * MiB)
        self.assertFalse(reads.over_ucx(b, by["pread-4K"]))
        self.assertFalse(reads.over_ucx(b, by["pread-64K"]))
        self.assertTrue(reads.over_ucx(b, by["pread-1M"]))
        self.assertTrue(reads.over_ucx(b, by["seq-1M"]))
        # A sequential read's block reader spans a block, not the file.
        self.assertFalse(reads.over_ucx(bench_with(256 * MiB),
                                        by["seq-1G"]))
        self.assertTrue(reads.over_ucx(bench_with(0), by["pread-4K"]))


class Carried(unittest.TestCase):
    def setUp(self):
        self.failed = []
        self.bench = types.SimpleNamespace(
            read_min_bytes=1 * MiB, fail=self.failed.append)
        a = parse_args(["--reads"])
        self.by = {r.name: r for r in a.reads_list}

    def carried(self, system, name, stats, delta=None):
        return reads.carried(self.bench, system, self.by[name],
                             {"measured_bytes": 10 * MiB}, stats,
                             delta or {})

    def test_ucx_must_take_every_byte(self):
        self.carried("ucx", "seq-64M", {"ucx-read-bytes": 11 * MiB})
        self.assertEqual(self.failed, [])
        self.carried("ucx", "seq-64M", {"ucx-read-bytes": 9 * MiB})
        self.assertIn("the rest came over TCP", self.failed[-1])
        self.carried("ucx", "seq-64M", {})
        self.assertIn("wrote no stats file", self.failed[-1])
        self.carried("ucx", "seq-64M", {"ucx-read-bytes": 11 * MiB,
                                        "reads-fell-back": 2})
        self.assertIn("fell back", self.failed[-1])

    def test_below_the_threshold_nothing_goes_over_ucx(self):
        row = self.carried("ucx", "pread-4K", {"ucx-read-bytes": 0})
        self.assertEqual(self.failed, [])
        self.assertFalse(row["offers_ucx"])
        self.carried("ucx", "pread-4K", {"ucx-read-bytes": 4 * KiB})
        self.assertIn("below", self.failed[-1])

    def test_stock_and_jar_take_nothing(self):
        self.carried("jar", "seq-64M", {"ucx-read-bytes": 0})
        self.carried("stock", "seq-64M", {})
        self.assertEqual(self.failed, [])
        self.carried("jar", "seq-64M", {}, {reads.DN_READ_BYTES: 5})
        self.assertIn("read path off", self.failed[-1])


class Figures(unittest.TestCase):
    def test_throughput_leaves_the_comparing_out(self):
        r = parse_args(["--reads"]).reads_list[1]
        result = dict(start_ns=0, end_ns=2 * 10 ** 9, verify_ns=10 ** 9,
                      measured_bytes=10 ** 9, measured_files=0, records=0)
        out = reads.figures(r, result, [10 ** 6, 3 * 10 ** 6])
        self.assertEqual(out["elapsed_s"], 1.0)
        self.assertEqual(out["throughput_mb_s"], 1000.0)


class Report(unittest.TestCase):
    def rows(self, name, stock, ucx, p50=(1.0, 1.0)):
        return [dict(workload=name, system="stock", throughput_mb_s=stock,
                     p50_ms=p50[0], p99_ms=p50[0], dn_cpu_s_per_gib=1.0),
                dict(workload=name, system="ucx", throughput_mb_s=ucx,
                     p50_ms=p50[1], p99_ms=p50[1], dn_cpu_s_per_gib=0.25)]

    def test_medians_ratios_and_targets(self):
        a = parse_args(["--reads", "--read-seq", "64M", "--read-pread",
                        "4K", "--read-threads", ""])
        rows = (self.rows("seq-64M", 100.0, 250.0) * 3
                + self.rows("pread-4K", 10.0, 9.0, (0.4, 0.5)) * 3)
        summary = read_report.read_summary(a.reads_list, ["stock", "ucx"],
                                           rows)
        ucx = {x["workload"]: x for x in summary if x["system"] == "ucx"}
        self.assertEqual(ucx["seq-64M"]["throughput_mb_s_vs_stock"], 2.5)
        self.assertEqual(ucx["seq-64M"]["runs"], 3)
        t = {x["target"]: x for x in read_report.read_targets(
            a.reads_list, summary)}
        seq = [x for k, x in t.items() if k.startswith("sequential reads")]
        self.assertEqual(seq[0]["result"], "met")
        never = [x for k, x in t.items() if "never slower" in k][0]
        self.assertEqual(never["result"], "missed (1 of 2)")
        p50 = [x for k, x in t.items() if "latency p50" in k][0]
        self.assertEqual(p50["worst"], 1.25)


if __name__ == "__main__":
    unittest.main()
