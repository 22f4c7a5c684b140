"""--apps without a cluster: the workloads the options describe, what an
AppWorkload JVM reports and how it is parsed, a run's figures, and the
checks that a ucx run's bytes went by UCX and a jar run's did not
(apps.csv's medians, ratios and targets: test_app_report.py)."""

import contextlib
import io
import os
import struct
import subprocess
import sys
import tempfile
import types
import unittest

from hdfsrdma_bench import apps, app_report, app_runs, targets
from hdfsrdma_bench.cli import parse_args
from hdfsrdma_bench.harness import HarnessError
from hdfsrdma_bench.stats import percentile
from hdfsrdma_bench.systems import Client
from hdfsrdma_bench.units import KiB, MiB


def parse_quietly(argv):
    with contextlib.redirect_stderr(io.StringIO()):
        return parse_args(argv)


class Workloads(unittest.TestCase):
    def names(self, argv):
        return [x.name for x in parse_args(["--apps"] + argv).apps_list]

    THREADS = ["threads-%dx%s-r%d" % (n, size, rep) for rep in (3, 1)
               for size in ("16M", "128M") for n in (1, 4, 8, 16)]

    def test_the_default_workloads(self):
        a = parse_args(["--apps", "--hadoop", "2.9.2"])
        self.assertEqual(a.runs, 3)
        self.assertEqual(
            [x.name for x in a.apps_list],
            ["writer-1M-r3", "writer-16M-r3", "writer-128M-r3",
             "writer-1M-r1", "writer-16M-r1", "writer-128M-r1",
             "wal-1K-r3", "wal-4K-r3", "wal-64K-r3", "wal-hsync-1K-r3",
             "wal-hsync-4K-r3", "wal-hsync-64K-r3", "wal8-1K-r3",
             "writers-1x512M-r3", "writers-2x512M-r3", "writers-4x512M-r3",
             "writers-8x512M-r3"] + self.THREADS + [
                 "mixed-8x128M-1K-r3", "dfsio-4x1G", "dfsio-16x256M",
                 "spark-8x128M-r3", "idle-r3"])
        by = {x.name: x for x in a.apps_list}
        self.assertEqual((by["writer-1M-r3"].files,
                          by["writer-128M-r1"].files), (1000, 16))
        self.assertEqual(by["writer-128M-r1"].rep, 1)
        w = by["wal-hsync-4K-r3"]
        self.assertEqual((w.size, w.sync, w.seconds, w.threads, w.rep),
                         (4 * KiB, "hsync", 30.0, 1, 3))
        self.assertEqual((by["wal8-1K-r3"].threads, by["wal8-1K-r3"].sync),
                         (8, "hflush"))
        self.assertEqual((by["writers-4x512M-r3"].jvms,
                          by["writers-4x512M-r3"].files), (4, 2))
        d = by["dfsio-16x256M"]
        self.assertEqual((d.kind, d.files, d.size, d.rep, d.jvms),
                         ("dfsio", 16, 256 * MiB, 3, 1))
        i = by["idle-r3"]
        self.assertEqual((i.kind, i.seconds, i.rep, i.size, i.jvms),
                         ("idle", 30.0, 3, 16 * MiB, 1))
        t = by["threads-8x128M-r1"]
        self.assertEqual((t.kind, t.threads, t.files, t.size, t.rep, t.jvms),
                         ("threads", 8, 2, 128 * MiB, 1, 1))

    def test_other_releases_leave_out_testdfsio(self):
        # The default release (3.4.2) has no TestDFSIO: its workloads are
        # 2.9.2's without the dfsio ones.
        a = parse_args(["--apps"])
        self.assertEqual(a.hadoop, "3.4.2")
        self.assertEqual([x.name for x in a.apps_list],
                         [n for n in self.names(["--hadoop", "2.9.2"])
                          if not n.startswith("dfsio-")])
        for argv in (["--dfsio", "4x1G"], ["--apps-only", "dfsio-*"],
                     ["--hadoop", "3.3.6", "--dfsio", "2x16M"]):
            with self.assertRaises(SystemExit, msg=argv):
                parse_quietly(["--apps"] + argv)
        self.assertEqual(self.names(["--hadoop", "2.9.2", "--apps-only",
                                     "dfsio-*"]),
                         ["dfsio-4x1G", "dfsio-16x256M"])

    def test_threads_workloads(self):
        self.assertEqual(
            self.names(["--app-threads", "2,6", "--app-thread-sizes",
                        "4M", "--app-reps", "3", "--apps-only",
                        "threads-*"]),
            ["threads-2x4M-r3", "threads-6x4M-r3"])
        self.assertFalse([n for n in self.names(["--app-threads", ""])
                          if n.startswith("threads-")])
        for bad in (["--app-threads", "0"], ["--app-thread-files", "0"],
                    ["--app-thread-sizes", "0"]):
            with self.assertRaises(SystemExit, msg=bad):
                parse_quietly(["--apps"] + bad)
        with self.assertRaises(SystemExit):
            parse_quietly(["--app-threads", "4"])     # needs --apps
        t = apps.threads(4, 16 * MiB, 3, 1)
        self.assertEqual((t.name, t.kind), ("threads-4x16M-r1", "threads"))
        self.assertEqual(apps.workload_args(t, "/b/t", "t.lat"), [
            "writer", "-dir", "/b/t", "-rep", "1", "-files", "3", "-size",
            str(16 * MiB), "-threads", "4", "-warmup-files", "2",
            "-warmup-size", str(16 * MiB), "-lat-file", "t.lat"])
        # Four threads' files at 5 MB/s per replica, beyond the start-up.
        self.assertEqual(app_runs.timeout_of(t),
                         600 + 4 * 3 * 16 * MiB * 1 / 5e6)
        self.assertIn("4 writer thread(s) x 3 files of 16M at rep 1",
                      app_runs.human_app(t))

    def test_mixed_workload(self):
        m = {x.name: x for x in parse_args(["--apps"]).apps_list}[
            "mixed-8x128M-1K-r3"]
        self.assertEqual((m.kind, m.threads, m.files, m.size, m.record,
                          m.rep, m.sync), ("mixed", 8, 2, 128 * MiB, KiB, 3,
                                           "hflush"))
        self.assertEqual(
            self.names(["--app-mixed", "3", "--app-thread-sizes", "4M,32M",
                        "--wal-records", "4K,1K", "--apps-only",
                        "mixed-*"]), ["mixed-3x32M-1K-r3"])
        self.assertFalse([n for n in self.names(["--app-mixed", "0"])
                          if n.startswith("mixed-")])
        with self.assertRaises(SystemExit):
            parse_quietly(["--apps", "--app-mixed", "-1"])
        with self.assertRaises(SystemExit):
            parse_quietly(["--app-mixed", "4"])     # needs --apps
        x = apps.mixed(4, 16 * MiB, 3, KiB)
        self.assertEqual(apps.workload_args(x, "/b/m", "m.lat"), [
            "mixed", "-dir", "/b/m", "-rep", "3", "-threads", "4", "-files",
            "3", "-size", str(16 * MiB), "-record", "1024", "-seconds",
            "%g" % apps.MIXED_MAX_SECONDS, "-warmup-files", "2",
            "-warmup-size", str(16 * MiB), "-warmup-seconds", "2",
            "-lat-file", "m.lat"])
        self.assertIn("4 writer thread(s) x 3 files of 16M and a log of 1K",
                      app_runs.human_app(x))

    def test_tiny_has_every_kind_and_few_files(self):
        a = parse_args(["--apps", "--tiny", "--hadoop", "2.9.2"])
        self.assertEqual({x.kind for x in a.apps_list}, set(apps.KINDS))
        self.assertIn("threads-2x16M-r3", [x.name for x in a.apps_list])
        a = parse_args(["--apps", "--tiny"])
        self.assertEqual({x.kind for x in a.apps_list},
                         set(apps.KINDS) - {"dfsio"})
        self.assertEqual(a.runs, 1)
        self.assertTrue(all(x.kind != "wal" or x.seconds == 2
                            for x in a.apps_list))

    def test_scale_and_explicit_sizes(self):
        a = parse_args(["--apps", "--apps-scale", "0.01", "--app-files",
                        "1M:1000,2M:10", "--app-reps", "2",
                        "--wal-records", "8K", "--wal-seconds", "50",
                        "--wal-threads", "0", "--app-writers", "3",
                        "--app-writer-size", "64M",
                        "--app-writer-files", "4", "--dfsio", "3x1G,2x10M",
                        "--idle-seconds", "20", "--hadoop", "2.9.2",
                        "--app-threads", "3", "--app-thread-sizes", "8M",
                        "--app-thread-files", "200"])
        # TestDFSIO keeps its maps and scales its files' size (whole MiB,
        # at least one).
        self.assertEqual(
            [(x.name, x.files, x.seconds) for x in a.apps_list],
            [("writer-1M-r2", 10, None), ("writer-2M-r2", 1, None),
             ("wal-8K-r3", None, 1.0), ("wal-hsync-8K-r3", None, 1.0),
             ("writers-3x64M-r3", 1, None), ("threads-3x8M-r2", 2, None),
             ("mixed-8x8M-8K-r3", 2, apps.MIXED_MAX_SECONDS),
             ("dfsio-3x10M", 3, None),
             ("dfsio-2x1M", 2, None), ("spark-8x1M-r3", 1, None),
             ("idle-r3", None, 1.0)])

    def test_dfsio_sizes(self):
        self.assertEqual(apps.parse_dfsio("4x1G, 16x256M"),
                         [(4, 1 << 30), (16, 256 * MiB)])
        self.assertEqual(self.names(["--dfsio", ""]),
                         [n for n in self.names([]) if "dfsio" not in n])
        for bad in ("4", "0x1G", "4x1K", "4x1536K", "x1G", "4x"):
            with self.assertRaises(SystemExit, msg=bad):
                parse_quietly(["--apps", "--dfsio", bad])

    def test_dfsio_not_on_an_operators_cluster(self):
        with self.assertRaises(SystemExit):
            parse_quietly(["--apps", "--conf", "/tmp", "--apps-only",
                           "dfsio-*"])

    def test_only(self):
        self.assertEqual(self.names(["--apps-only", "wal-*1K*,writers-2*"]),
                         ["wal-1K-r3", "wal-hsync-1K-r3",
                          "writers-2x512M-r3"])
        with self.assertRaisesRegex(ValueError, "nope"):
            apps.select(parse_args(["--apps"]).apps_list,
                        ["wal-1K-r3", "nope"])

    def test_refused(self):
        for argv in (["--wal-seconds", "3"], ["--apps-only", "wal-*"],
                     ["--apps", "--hosts", "1gbit"],
                     ["--apps", "--compare-distributions", "chain"],
                     ["--apps", "--scale"], ["--apps", "--apps-scale", "0"],
                     ["--apps", "--apps-only", "nope"],
                     ["--apps", "--app-files", "1M"],
                     ["--apps", "--wal-seconds", "0"]):
            with self.assertRaises(SystemExit, msg=argv):
                parse_quietly(argv)

    def test_parse_files(self):
        self.assertEqual(apps.parse_files("1M:3,4K:2"),
                         [(MiB, 3), (4 * KiB, 2)])

    def test_jvm_arguments(self):
        w = apps.writer(MiB, 3, 1000)
        self.assertEqual(apps.workload_args(w, "/b/x", "/o/x.lat"), [
            "writer", "-dir", "/b/x", "-rep", "3", "-files", "1000",
            "-size", str(MiB), "-warmup-files", "32", "-warmup-size",
            str(MiB), "-lat-file", "/o/x.lat"])
        big = apps.writer(512 * MiB, 3, 2)
        self.assertEqual(apps.warmup_args(big), [
            "-warmup-files", "2", "-warmup-size", str(16 * MiB)])
        log = apps.wal(KiB, 1.5, "hsync")
        self.assertEqual(apps.workload_args(log, "/b/y", "y.lat"), [
            "wal", "-dir", "/b/y", "-rep", "3", "-record", "1024",
            "-sync", "hsync", "-threads", "1", "-seconds", "1.5",
            "-warmup-files", "1", "-warmup-size", str(MiB),
            "-warmup-seconds", "1.5", "-lat-file", "y.lat"])


RESULT = ("APP-RESULT mode=writer start_ns=1000000000 end_ns=3000000000 "
          "measured_bytes=200000000 measured_files=2 records=0 samples=2 "
          "bytes=210000000 blocks=4 verified_bytes=100000000 status=ok")


class JvmOutput(unittest.TestCase):
    def test_the_last_result_line(self):
        r, errors = apps.parse_result("APP-START mode=writer\nlog line\n"
                                      + RESULT + "\n")
        self.assertEqual((r["start_ns"], r["blocks"], r["status"]),
                         (10 ** 9, 4, "ok"))
        self.assertEqual(errors, [])

    def test_errors_and_incomplete_lines(self):
        r, errors = apps.parse_result(
            "APP-ERROR java.io.IOException: /x: byte 7 differs\n"
            "\tat ...\nAPP-RESULT mode=wal status=ok\n")
        self.assertIsNone(r)
        self.assertEqual(errors,
                         ["APP-ERROR java.io.IOException: /x: byte 7 "
                          "differs"])

    def test_latency_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.lat")
            with open(path, "wb") as f:
                f.write(struct.pack(">3q", 5, 2 ** 40, 7))
            self.assertEqual(list(apps.read_latencies(path)),
                             [5, 2 ** 40, 7])


class Figures(unittest.TestCase):
    def test_percentiles_by_nearest_rank(self):
        s = list(range(1, 1001))
        self.assertEqual([percentile(s, q) for q in (0.5, 0.99, 0.999)],
                         [500, 990, 999])
        self.assertEqual(percentile([3, 9], 0.99), 9)
        self.assertIsNone(percentile([], 0.5))

    def test_a_writer_run_of_two_jvms(self):
        a, b = apps.parse_result(RESULT)[0], apps.parse_result(
            RESULT.replace("start_ns=1000000000", "start_ns=2000000000")
            .replace("end_ns=3000000000", "end_ns=5000000000"))[0]
        f = apps.run_figures(apps.writers(2, 100 * 1000 * 1000, 2),
                             [a, b], [2 * 10 ** 6, 4 * 10 ** 6] * 2)
        # 400 MB from the first start (1 s) to the last end (5 s).
        self.assertEqual((f["elapsed_s"], f["throughput_mb_s"]), (4.0, 100.0))
        self.assertEqual((f["p50_ms"], f["p99_ms"], f["p999_ms"]),
                         (2.0, 4.0, None))
        self.assertEqual((f["files"], f["records_per_s"]), (4, None))

    def test_a_log_run(self):
        r = dict(start_ns=0, end_ns=2 * 10 ** 9, measured_bytes=4096 * 1000,
                 measured_files=1, records=1000)
        lat = [10 ** 5] * 990 + [10 ** 6] * 9 + [10 ** 7]
        f = apps.run_figures(apps.wal(4096, 2), [r], lat)
        self.assertEqual(f["records_per_s"], 500.0)
        self.assertEqual(f["throughput_mb_s"], 2.048)
        self.assertEqual((f["p50_ms"], f["p99_ms"], f["p999_ms"]),
                         (0.1, 0.1, 1.0))

    def test_a_mixed_run(self):
        # The writers' 400 MB over 4 s; the log's 2000 records meanwhile.
        r = dict(start_ns=10 ** 9, end_ns=5 * 10 ** 9,
                 measured_bytes=400 * 10 ** 6, measured_files=4,
                 records=2000)
        lat = [10 ** 6] * 1980 + [10 ** 7] * 20
        f = apps.run_figures(apps.mixed(2, 100 * 10 ** 6, 2, KiB), [r], lat)
        self.assertEqual((f["throughput_mb_s"], f["records_per_s"]),
                         (100.0, 500.0))
        self.assertEqual((f["p50_ms"], f["p99_ms"], f["p999_ms"]),
                         (1.0, 1.0, 10.0))

    def test_cdf_points_keep_the_tail(self):
        lat = sorted(range(1, 100001))
        pts = apps.cdf_points(lat, points=10)
        self.assertEqual(pts[-1], (0.1, 1.0))
        self.assertIn((99900 / 1e6, 0.999), pts)
        self.assertEqual(pts, sorted(pts))
        self.assertEqual(apps.cdf_points([]), [])


class Carried(unittest.TestCase):
    def bench(self, bean=True):
        b = types.SimpleNamespace(
            failures=[], warnings=[], bytes_expected=0,
            ucx_expected_bytes=0, jar_expected_blocks=0,
            rdma_bean_seen=bean,
            cluster_of={s: types.SimpleNamespace(metrics_lag=1.2)
                        for s in ("stock", "jar", "ucx", "ucx-w4")})
        b.is_ucx = lambda s: s in ("ucx", "ucx-w4")
        b.fail = b.failures.append
        b.note = b.warnings.append
        return b

    def jobs(self, sent=None, written=1000, blocks=1, **stats):
        s = dict(stats)
        if sent is not None:
            s["ucx-data-bytes-sent"] = sent
            s.setdefault("transports", "sysv")
        return [dict(result=dict(bytes=written, blocks=blocks),
                     client_stats=s)]

    def delta(self, fetched=3000, tcp=0, ucx=3, written=3000):
        return {"activity.BytesWritten": written, "rdma.DataBytesFetched":
                fetched, "rdma.BlocksOverTcp": tcp, "rdma.BlocksOverUcx": ucx}

    def test_ucx_every_byte_over_ucx(self):
        b = self.bench()
        app = apps.wal(KiB, 1)
        cols = app_runs.check_carried(b, "ucx", app, self.jobs(1100),
                                      self.delta(3300))
        self.assertEqual((b.failures, b.warnings), ([], []))
        self.assertEqual((b.ucx_expected_bytes, b.bytes_expected),
                         (3300, 3000))
        self.assertEqual((cols["ucx_bytes_fetched"], cols["transport"]),
                         (3300, "sysv"))

    def test_ucx_bytes_over_tcp_fail(self):
        app = apps.writer(1000, 3, 1)
        for jobs, delta, why in (
                (self.jobs(), self.delta(), "no stats file"),
                (self.jobs(500), self.delta(), "sent 500 bytes"),
                (self.jobs(1000, **{"pipelines-tcp-unreachable": 1}),
                 self.delta(), "1 pipeline"),
                (self.jobs(1000), self.delta(2000), "fetched 2000"),
                (self.jobs(1000), self.delta(tcp=1), "1 block replica")):
            b = self.bench()
            app_runs.check_carried(b, "ucx", app, jobs, delta)
            self.assertEqual(len(b.failures), 1, why)
            self.assertIn(why, b.failures[0])

    def test_off_a_deferred_pipeline_fails(self):
        b = self.bench()
        app_runs.check_carried(b, "ucx", apps.writer(1000, 3, 1), self.jobs(
            1000, **{"pipelines-tcp-deferred": 1}), self.delta())
        self.assertEqual(len(b.failures), 1)
        self.assertIn("1 pipeline(s)", b.failures[0])

    def deferring(self, block=1000):
        b = self.bench()
        b.defer_start = True
        b.cluster_of["ucx"].block_size = block
        return b

    def test_on_one_jvm_may_keep_a_block_on_tcp(self):
        app = apps.writer(1000, 3, 1)
        for jobs, delta in (
                # All of it within the first block: no stats file at all.
                (self.jobs(written=1000), self.delta(0, tcp=3, written=3000)),
                (self.jobs(0, written=800), self.delta(0, tcp=3, ucx=0,
                                                       written=2400)),
                # All but the first block, or more, over UCX.
                (self.jobs(4000, written=5000,
                           **{"pipelines-tcp-deferred": 1}),
                 self.delta(12000, tcp=3, written=15000)),
                (self.jobs(5000, written=5000),
                 self.delta(15000, written=15000))):
            b = self.deferring()
            app_runs.check_carried(b, "ucx", app, jobs, delta)
            self.assertEqual(b.failures, [])
            self.assertEqual(b.jar_expected_blocks,
                             delta["rdma.BlocksOverTcp"])

    def test_on_more_than_a_block_per_jvm_over_tcp_fails(self):
        app = apps.writer(1000, 3, 1)
        for jobs, delta, why in (
                (self.jobs(written=5000), self.delta(0, written=15000),
                 "no stats file"),
                (self.jobs(3999, written=5000), self.delta(12000, tcp=3,
                                                           written=15000),
                 "fewer than all but 1 block(s)"),
                (self.jobs(4000, written=5000), self.delta(11999, tcp=3,
                                                           written=15000),
                 "fetched 11999 bytes by UCX, fewer than 12000"),
                (self.jobs(4000, written=5000), self.delta(12000, tcp=4,
                                                           written=15000),
                 "4 block replica(s) went over TCP, more than 3")):
            b = self.deferring()
            app_runs.check_carried(b, "ucx", app, jobs, delta)
            self.assertEqual(len(b.failures), 1, why)
            self.assertIn(why, b.failures[0])

    def test_on_a_block_per_jvm(self):
        # Two JVMs (or a TestDFSIO job's stats of several): two blocks.
        app = apps.writer(1000, 3, 1)
        jobs = self.jobs(2000, written=3000) + self.jobs(2000,
                                                         written=3000)
        b = self.deferring()
        app_runs.check_carried(b, "ucx", app, jobs,
                               self.delta(12000, tcp=6, written=18000))
        self.assertEqual(b.failures, [])
        b = self.deferring()
        app_runs.check_carried(b, "ucx", app, jobs,
                               self.delta(12000, tcp=7, written=18000))
        self.assertIn("more than 6", b.failures[0])

    def test_jar_moves_nothing_over_ucx(self):
        app = apps.writer(1000, 3, 1)
        b = self.bench()
        app_runs.check_carried(b, "jar", app, self.jobs(),
                               self.delta(0, tcp=3, ucx=0))
        self.assertEqual((b.failures, b.jar_expected_blocks), ([], 3))
        app_runs.check_carried(b, "jar", app, self.jobs(), self.delta())
        self.assertEqual(len(b.failures), 1)

    def test_stock_is_not_checked_for_ucx(self):
        b = self.bench()
        cols = app_runs.check_carried(b, "stock", apps.writer(1000, 3, 1),
                                      self.jobs(), {
                                          "activity.BytesWritten": 2999})
        self.assertEqual(b.failures, [])
        self.assertEqual(len(b.warnings), 1)   # BytesWritten is off
        self.assertIsNone(cols["ucx_bytes_sent"])


class IdleCores(unittest.TestCase):
    """app_runs.idle_cores on a live process (a busy-looping Python) and
    a cluster whose DataNodes' CPU counters move by a known amount."""

    def test_cores_of_a_busy_client_and_per_datanode(self):
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            dn = iter([10.0, 10.3])
            c = types.SimpleNamespace(dn_pids=[1, 2, 3], nn_pid=None,
                                      dn_cpu=lambda: next(dn),
                                      nn_cpu=lambda: None)
            b = types.SimpleNamespace(procs=types.SimpleNamespace(
                alive=lambda p: p.poll() is None))
            got = app_runs.idle_cores(b, c, dict(proc=busy, log="x"),
                                      app_runs.IDLE_MARGIN + 1.0)
        finally:
            busy.kill()
            busy.wait()
        self.assertGreater(got["idle_client_cores"], 0.05)
        self.assertLessEqual(got["idle_client_cores"], 1.1)
        self.assertAlmostEqual(got["idle_dn_cores"], 0.1, delta=0.02)
        self.assertIsNone(got["idle_nn_cores"])

    def test_a_client_that_exits_fails_the_batch(self):
        gone = subprocess.Popen(["true"])
        gone.wait()
        b = types.SimpleNamespace(procs=types.SimpleNamespace(
            alive=lambda p: p.poll() is None))
        with self.assertRaises(HarnessError):
            app_runs.idle_cores(b, None, dict(proc=gone, log="x"), 2.0)


class UcxDetail(unittest.TestCase):
    """A ucx batch's row keeps its clients' and DataNodes' counters."""

    def test_summed_over_jvms_and_prefixed(self):
        jobs = [dict(client_stats={"ucx-data-bytes-sent": 5,
                                   "queued-sends": 2, "transports": "sysv",
                                   "client-send-nanos": 100}),
                dict(client_stats={"queued-sends": 1,
                                   "client-send-nanos": 50}),
                dict(client_stats={})]
        got = app_runs.ucx_detail(jobs, {"rdma.PacketsFetched": 7,
                                         "activity.BytesWritten": 9})
        self.assertEqual(got, {"client_queued_sends": 3,
                               "client_client_send_nanos": 150,
                               "dn_rdma_PacketsFetched": 7})


class WorkloadJar(unittest.TestCase):
    def test_foreign_references(self):
        self.assertFalse(app_runs.foreign_refs(
            b"\x01org/hdfsrdma/hadoop/bench/AppContent\x01org/apache/x"))
        self.assertTrue(app_runs.foreign_refs(
            b"org/hdfsrdma/hadoop/bench/A org/hdfsrdma/hadoop/UcxRuntime"))


class ClientArgv(unittest.TestCase):
    def test_put_and_tool_command_lines(self):
        c = Client("ucx", "java", "/conf", "/cp", "/d.jar", True,
                   opts=["-Dx=1"], generic=["-D", "g=1"])
        self.assertEqual(c.put_argv(3, "/f", "/t"), [
            "java", "-Xmx1000m", "-Djava.net.preferIPv4Stack=true",
            "-javaagent:/d.jar", "-Dx=1", "-cp", "/conf:/cp",
            "org.apache.hadoop.fs.FsShell", "-D",
            "dfs.client.rdma.enabled=true", "-D", "g=1", "-D",
            "dfs.replication=3", "-put", "/f", "/t"])
        stock = Client("stock", "java", "/conf", "/cp")
        self.assertEqual(stock.jvm_argv("M", ["wal"], ["-Dp"], ["/w.jar"]), [
            "java", "-Xmx1000m", "-Djava.net.preferIPv4Stack=true", "-Dp",
            "-cp", "/conf:/cp:/w.jar", "M", "wal"])



class ProfileChoice(unittest.TestCase):
    """--apps-profile profiles the workload UCX does worst on."""

    def row(self, name, system, mb_s):
        return dict(workload=name, system=system, throughput_mb_s=mb_s)

    def test_lowest_ucx_fraction_of_stock(self):
        from hdfsrdma_bench.apps_profile import slowest_ucx
        a = parse_args(["--apps"]).apps_list
        w1, w2 = a[0], a[1]
        rows = [self.row(w1.name, "stock", 100.0),
                self.row(w1.name, "ucx", 150.0),
                self.row(w2.name, "stock", 100.0),
                self.row(w2.name, "ucx", 80.0),
                self.row(w2.name, "ucx", 90.0),
                self.row(w2.name, "ucx", 10.0)]
        app, r = slowest_ucx([w1, w2], rows)
        self.assertEqual(w2.name, app.name)
        self.assertAlmostEqual(0.8, r)   # the median of the ucx runs
        self.assertEqual((None, None), slowest_ucx(
            [w1], [self.row(w1.name, "ucx", 1.0)]))

    def test_needs_apps(self):
        with self.assertRaises(SystemExit):
            parse_quietly(["--apps-profile"])
        self.assertTrue(parse_args(["--apps", "--apps-profile"])
                        .apps_profile)


if __name__ == "__main__":
    unittest.main()
