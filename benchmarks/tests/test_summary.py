"""The run's rows reduced to summary, fit and scale rows, on made-up
puts."""

import types
import unittest

from hdfsrdma_bench.summary import fits, scale_summary, summarize
from hdfsrdma_bench.units import GiB, MiB, packets_of

SYSTEMS = ["stock", "jar", "ucx"]


def put(system, size, wall, client_cpu=1.0, dn_cpu=0.5, csw=(17, 0),
        fetched=None, sent=None, transport="", rep=3):
    return dict(system=system, size_bytes=size, size="%dM" % (size // MiB),
                rep=rep, wall_s=wall, client_cpu_s=client_cpu,
                dn_cpu_s=dn_cpu, client_csw_voluntary=csw[0],
                client_csw_involuntary=csw[1], dn_csw_voluntary=None,
                dn_csw_involuntary=None, packets=packets_of(size),
                ucx_bytes_fetched=fetched, ucx_bytes_sent=sent,
                transport=transport)


def bench(put_rows, limit_rows=(), compared=(), scale_rows=()):
    return types.SimpleNamespace(
        put_rows=put_rows, limit_rows=list(limit_rows),
        scale_rows=list(scale_rows), systems=SYSTEMS + list(compared),
        all_systems=SYSTEMS + list(compared), compared=list(compared),
        cluster_of={}, ucx_policy_over_tcp=False)


class Summarize(unittest.TestCase):
    def test_medians_ratios_and_the_target(self):
        rows = [put("stock", MiB, w) for w in (1.0, 2.0, 9.0)]
        rows += [put("jar", MiB, w, sent=0, fetched=0) for w in (2.0, 2.5)]
        rows += [put("ucx", MiB, w, client_cpu=2.0, csw=(34, 17),
                     fetched=3 * MiB, sent=MiB, transport="RMA_x")
                 for w in (3.0, 3.0, 3.0)]
        limit = dict(size_bytes=MiB, rep=3, limit_s=0.5, copy_s=0.5,
                     fanout_s=0.1)
        [r] = summarize(bench(rows, [limit]))
        self.assertEqual((r["size"], r["rep"], r["runs"]), ("1M", 3, 2))
        self.assertEqual((r["stock_wall_s"], r["jar_wall_s"],
                          r["ucx_wall_s"]), (2.0, 2.25, 3.0))
        self.assertEqual(r["wall_ratio"], 1.5)
        self.assertEqual(r["jar_wall_ratio"], 1.125)
        self.assertEqual(r["ucx_jar_wall_ratio"], 1.3333)
        self.assertEqual((r["wall_target"], r["wall_result"]), (1.0, "miss"))
        self.assertEqual(r["ucx_client_cpu_s_per_gib"], 2048.0)
        self.assertEqual(r["client_cpu_ratio"], 2.0)
        self.assertEqual(r["stock_client_csw_per_packet"], 1.0)
        self.assertEqual(r["ucx_client_csw_per_packet"], 3.0)
        self.assertEqual(r["client_csw_ratio"], 3.0)
        self.assertIsNone(r["dn_csw_ratio"])
        self.assertEqual(r["ucx_put_over_limit"], 6.0)
        self.assertEqual(r["limit_s"], 0.5)
        self.assertEqual(r["packets"], 17)
        self.assertEqual((r["ucx_bytes_fetched_median"],
                          r["ucx_bytes_expected"]), (3 * MiB, 3 * MiB))
        self.assertEqual(r["jar_bytes_over_ucx_max"], 0)
        self.assertEqual(r["transport"], "RMA_x")

    def test_defer_start_expects_all_but_the_first_block(self):
        rows = [put(s, size, 1.0) for s in SYSTEMS
                for size in (MiB, 3 * MiB)]
        b = bench(rows)
        b.defer_start = True
        b.cluster_of = {"ucx": types.SimpleNamespace(block_size=2 * MiB)}
        self.assertEqual([r["ucx_bytes_expected"] for r in summarize(b)],
                         [0, 3 * MiB])

    def test_one_row_per_size_and_replication_in_order(self):
        rows = [put(s, size, 1.0, rep=rep) for s in SYSTEMS
                for size in (16 * MiB, MiB) for rep in (3, 1)]
        keys = [(r["size_bytes"], r["rep"])
                for r in summarize(bench(rows))]
        self.assertEqual(keys, [(MiB, 1), (MiB, 3), (16 * MiB, 1),
                                (16 * MiB, 3)])

    def test_ucx_against_the_fastest_compared_mode(self):
        rows = [put("stock", MiB, 2.0), put("jar", MiB, 2.0),
                put("ucx", MiB, 2.1), put("ucx-chain", MiB, 3.0),
                put("ucx-fan-out", MiB, 2.0)]
        [r] = summarize(bench(rows, compared=["ucx-chain", "ucx-fan-out"]))
        self.assertEqual(r["ucx_over_ucx-chain_wall_ratio"], 0.7)
        self.assertEqual(r["fastest_compared"], "ucx-fan-out")
        self.assertEqual(r["ucx_over_fastest_wall_ratio"], 1.05)


class Fits(unittest.TestCase):
    def test_cost_against_size(self):
        rows = [put("ucx", size, 1.0 + 2.0 * size / GiB)
                for size in (GiB, 2 * GiB, 4 * GiB)]
        wall = [f for f in fits(bench(rows))
                if f["system"] == "ucx" and f["metric"] == "wall_s"]
        self.assertEqual(len(wall), 1)
        self.assertEqual((wall[0]["slope_s_per_gib"], wall[0]["intercept_s"],
                          wall[0]["r2"], wall[0]["points"]),
                         (2.0, 1.0, 1.0, 3))
        self.assertEqual(wall[0]["sizes"], "1024M 2048M 4096M")

    def test_no_line_through_one_size(self):
        self.assertEqual(fits(bench([put("ucx", MiB, 1.0)])), [])


class ScaleSummary(unittest.TestCase):
    def test_aggregate_ratios(self):
        rows = [dict(system=s, writers=2, rep=3, size_bytes=16 * MiB,
                     aggregate_mib_s=agg, writer_wall_median_s=lat,
                     client_cpu_s=1.0)
                for s, agg, lat in (("stock", 10.0, 2.0), ("jar", 12.0, 2.0),
                                    ("ucx", 15.0, 1.5), ("ucx", 13.0, 1.0))]
        [r] = scale_summary(bench([], scale_rows=rows))
        self.assertEqual((r["writers"], r["size"], r["runs"]), (2, "16M", 1))
        self.assertEqual(r["ucx_aggregate_mib_s"], 14.0)
        self.assertEqual(r["aggregate_ratio"], 1.4)
        self.assertEqual(r["ucx_jar_aggregate_ratio"], 1.1667)
        self.assertEqual(r["latency_ratio"], 0.625)


if __name__ == "__main__":
    unittest.main()
