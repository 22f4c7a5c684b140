"""The put sweep's UCX checks (puts.check_carried) on made-up batches:
what a UCX put must have sent by UCX with --defer-start off (every byte)
and on (all but each put JVM's first block), and what the whole run's
totals must count."""

import os
import tempfile
import types
import unittest

from hdfsrdma_bench import puts

BLOCK = 1000     # the cluster's dfs.blocksize in these tests
SENT = "ucx-data-bytes-sent"


def bench(defer):
    b = types.SimpleNamespace(
        failures=[], warnings=[], problems=[], bytes_expected=0,
        ucx_expected_bytes=0, jar_expected_blocks=0,
        ucx_policy_over_tcp=False, defer_start=defer,
        cluster_of={s: types.SimpleNamespace(block_size=BLOCK)
                    for s in ("jar", "ucx")})
    b.is_ucx = lambda s: s == "ucx"
    b.note = b.warnings.append
    b.ucx_problem = b.problems.append
    return b


def delta(fetched, over_tcp, written):
    return {"activity.BytesWritten": written, "rdma.DataBytesFetched":
            fetched, "rdma.BlocksOverTcp": over_tcp}


class Carried(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def jobs(self, *specs):
        """One job per (size, sent): its input file of `size` bytes, its
        client's stats (none where `sent` is None)."""
        out = []
        for size, sent in specs:
            self.files = getattr(self, "files", 0) + 1
            path = os.path.join(self.dir.name, "in-%d" % self.files)
            with open(path, "wb") as f:
                f.truncate(size)
            out.append(dict(path=path, client_stats={} if sent is None
                            else {SENT: sent, "transports": "sysv"}))
        return out

    def carried(self, b, jobs, d, rep=3):
        total = sum(os.path.getsize(j["path"]) for j in jobs)
        puts.check_carried(b, "ucx", "1k", jobs, d, total, rep)

    def clean(self, b):
        self.assertEqual((b.problems, b.warnings, b.failures), ([], [], []))

    def test_off_every_byte_over_ucx(self):
        b = bench(False)
        self.carried(b, self.jobs((500, 500)), delta(1500, 0, 1500))
        self.clean(b)
        self.assertEqual((b.ucx_expected_bytes, b.jar_expected_blocks),
                         (1500, 0))
        b = bench(False)
        self.carried(b, self.jobs((3000, 3000)), delta(9000, 0, 9000))
        self.clean(b)
        self.assertEqual(b.ucx_expected_bytes, 9000)

    def test_off_unchanged_problems_and_notes(self):
        for jobs, d, problem, note in (
                (self.jobs((500, None)), delta(0, 3, 1500),
                 "no stats file", "3 replica(s) of a UCX put"),
                (self.jobs((500, 0)), delta(1500, 0, 1500),
                 "sent no bytes", None),
                (self.jobs((3000, 2000)), delta(6000, 0, 9000), None,
                 "sent 2000 bytes by UCX, expected 3000")):
            b = bench(False)
            self.carried(b, jobs, d)
            if problem:
                self.assertIn(problem, b.problems[0])
            else:
                self.assertEqual(b.problems, [])
            if note:
                self.assertIn(note, b.warnings[0])
        b = bench(False)
        self.carried(b, self.jobs((500, 500)), delta(0, 0, 1500))
        self.assertIn("fetched no bytes", b.problems[0])

    def test_on_small_put_goes_over_tcp(self):
        # A put of one block or less: nothing over UCX, and no stats file
        # (below a quarter block UCX never starts) or one that sent 0.
        for size, stats in ((200, None), (500, 0), (BLOCK, None)):
            b = bench(True)
            self.carried(b, self.jobs((size, stats)), delta(0, 3, size * 3))
            self.clean(b)
            self.assertEqual((b.ucx_expected_bytes, b.jar_expected_blocks),
                             (0, 3))

    def test_on_large_put_all_but_the_first_block(self):
        b = bench(True)
        self.carried(b, self.jobs((3500, 2500)), delta(7500, 3, 10500))
        self.clean(b)
        self.assertEqual((b.ucx_expected_bytes, b.jar_expected_blocks),
                         (7500, 3))
        b = bench(True)
        self.carried(b, self.jobs((3500, 2500)), delta(2500, 1, 3500),
                     rep=1)
        self.clean(b)

    def test_on_large_put_discrepancies(self):
        for jobs, d, problem, note in (
                (self.jobs((3500, None)), delta(0, 3, 10500),
                 "no stats file", "fetched no bytes"),
                (self.jobs((3500, 3500)), delta(10500, 0, 10500), None,
                 "sent 3500 bytes by UCX, expected 2500"),
                (self.jobs((3500, 2500)), delta(7500, 6, 10500), None,
                 "6 replica(s) of a UCX put went over TCP, expected 3")):
            b = bench(True)
            self.carried(b, jobs, d)
            if problem:
                self.assertIn(problem, b.problems[0])
                self.assertIn(note, b.problems[1])
            else:
                self.assertEqual(b.problems, [])
                self.assertIn(note, b.warnings[0])
        # A small put that did send by UCX: a note, not a problem.
        b = bench(True)
        self.carried(b, self.jobs((500, 500)), delta(1500, 0, 1500))
        self.assertEqual(b.problems, [])
        self.assertIn("expected none", b.warnings[0])

    def test_on_concurrent_writers_each_jvm_its_own_first_block(self):
        b = bench(True)
        jobs = self.jobs((500, None), (2000, 1000), (4000, 3000))
        self.carried(b, jobs, delta(12000, 9, 19500))
        self.clean(b)
        self.assertEqual((b.ucx_expected_bytes, b.jar_expected_blocks),
                         (12000, 9))


if __name__ == "__main__":
    unittest.main()
