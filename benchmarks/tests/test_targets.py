"""The targets judged on made-up numbers: which limits apply to a size and
replication, a target met, missed or not measured, and every target over a
made-up summary."""

import types
import unittest

from hdfsrdma_bench import targets as t
from hdfsrdma_bench.units import GiB, MiB


class WallTargets(unittest.TestCase):
    def test_the_strictest_limit_binds(self):
        self.assertEqual(t.wall_targets(MiB, 3), [1.00, 1.05])
        self.assertEqual(t.wall_target(MiB, 3), 1.00)
        self.assertEqual(t.wall_target(512 * MiB, 3), 0.75)
        self.assertEqual(t.wall_target(5 * GiB, 1), 0.85)
        self.assertEqual(t.wall_target(2 * GiB, 3), 0.75)

    def test_small_files_at_any_replication(self):
        self.assertEqual(t.wall_targets(16 * MiB, 2), [1.05])

    def test_no_target(self):
        self.assertIsNone(t.wall_target(64 * MiB, 3))
        self.assertIsNone(t.wall_target(6 * GiB, 3))
        self.assertIsNone(t.wall_target(GiB, 2))


class Judge(unittest.TestCase):
    def test_met(self):
        row = t.judge("x", 1.0, "<=", [("a", 0.9), ("b", 1.0)], 3)
        self.assertEqual((row["result"], row["worst"]), ("met", 1.0))
        self.assertEqual(row["measured"], "a 0.90, b 1.00")
        self.assertEqual(row["note"], "")

    def test_missed_counts_and_not_measured_values(self):
        row = t.judge("x", 1.0, "<=", [("a", 1.2), ("b", 0.5), ("c", None),
                                       ("d", 1.01)], 3)
        self.assertEqual(row["result"], "missed (2 of 3), 1 n/a")
        self.assertEqual(row["worst"], 1.2)

    def test_at_least(self):
        row = t.judge("x", 1.1, ">=", [("1 x 16M", 1.2), ("2 x 16M", 1.05)],
                      3)
        self.assertEqual((row["result"], row["worst"]),
                         ("missed (1 of 2)", 1.05))

    def test_fewer_runs_than_the_targets_ask_for(self):
        row = t.judge("x", 1.0, "<=", [("a", 0.5)], 1, "writers of 16M")
        self.assertEqual(row["note"], "1 run(s), the targets ask for "
                         "medians of >= 3; writers of 16M")

    def test_not_measured(self):
        row = t.judge("UCX/stock x", 1.0, "<=", [("a", None)], 0)
        self.assertEqual((row["result"], row["worst"], row["note"]),
                         ("not measured", None, ""))
        row = t.judge("UCX/stock x", 1.0, "<=", [], 0, stock_skipped=True)
        self.assertEqual(row["measured"], "n/a")
        self.assertEqual(row["note"], "no stock system (--stock-classpath)")


def summary_row(size, rep, wall_ratio, runs=3, **ratios):
    row = dict(size_bytes=size, size="%dM" % (size // MiB), rep=rep,
               runs=runs, wall_ratio=wall_ratio, dn_cpu_ratio=None,
               ucx_jar_client_cpu_ratio=None, client_csw_ratio=None,
               dn_csw_ratio=None)
    row.update(ratios)
    return row


class Targets(unittest.TestCase):
    def bench(self, compared=()):
        return types.SimpleNamespace(
            skipped={}, compared=list(compared),
            labels={"ucx": "UCX", "ucx-chain": "UCX chain"},
            args=types.SimpleNamespace(ucx_distribution="auto"))

    def test_every_target_on_a_made_up_run(self):
        summary = [
            summary_row(MiB, 3, 1.2),
            summary_row(512 * MiB, 3, 0.7, dn_cpu_ratio=0.8,
                        ucx_jar_client_cpu_ratio=0.9,
                        client_csw_ratio=0.5, dn_csw_ratio=1.5),
            summary_row(512 * MiB, 1, 0.96, ucx_jar_client_cpu_ratio=1.1)]
        scale = [dict(writers=1, size="512M", rep=3, runs=3,
                      aggregate_ratio=1.3),
                 dict(writers=8, size="512M", rep=1, runs=3,
                      aggregate_ratio=0.5)]
        rows = {r["target"]: r
                for r in t.targets(self.bench(), summary, scale)}
        self.assertEqual(len(rows), 9)

        def result(prefix):
            [row] = [r for k, r in rows.items() if k.startswith(prefix)]
            return row["result"]
        self.assertEqual(result("UCX/stock wall time, every size"),
                         "missed (1 of 3)")
        self.assertEqual(result("UCX/stock wall time, rep 3"), "met")
        self.assertEqual(result("UCX/stock wall time, rep 1"),
                         "missed (1 of 1)")
        self.assertEqual(result("DataNode CPU"), "missed (1 of 1)")
        self.assertEqual(result("client CPU"), "missed (1 of 2)")
        self.assertEqual(result("UCX/stock wall time, 1 MiB"),
                         "missed (1 of 1)")
        self.assertEqual(result("concurrent writers"), "met")
        self.assertEqual(result("context switches per packet, client"),
                         "met, 1 n/a")
        self.assertEqual(result("context switches per packet, DataNodes"),
                         "missed (1 of 1), 1 n/a")

    def test_the_distribution_target_with_compared_modes(self):
        summary = [summary_row(MiB, 3, 1.0, fastest_compared="ucx-chain",
                               ucx_over_fastest_wall_ratio=1.04)]
        rows = t.targets(self.bench(["ucx-chain"]), summary, [])
        self.assertEqual(len(rows), 10)
        self.assertEqual(rows[-1]["target"], "distribution: wall time, "
                         "UCX (auto) / the fastest of UCX chain")
        self.assertEqual(rows[-1]["measured"], "1M r3 vs UCX chain 1.04")
        self.assertEqual(rows[-1]["result"], "met")


if __name__ == "__main__":
    unittest.main()
