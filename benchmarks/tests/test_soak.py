"""The soak test's growth rule, its default file sizes, and how it reads
a JVM's native memory, JNI references and shared-memory mappings."""

import contextlib
import io
import os
import tempfile
import types
import unittest

from hdfsrdma_bench.jvm_probe import (WORK_THREAD, fd_kinds, parse_jni_refs,
                                      parse_nmt, shm_segments)
from hdfsrdma_bench.soak import default_max_size, keep_logs_only
from hdfsrdma_bench.soak_bounds import (SOCKETS_AFTER, drain_failures, growth,
                                        judge_growth, thirds)
from hdfsrdma_bench.soak_writers import (CHURN_MAX_SIZE,
                                         EXECUTOR_DISTRIBUTION,
                                         EXECUTOR_MIN_SIZE, Churn,
                                         writer_argv)
from hdfsrdma_bench import soak
from hdfsrdma_bench.units import MiB


class Thirds(unittest.TestCase):
    def test_warm_up_takes_the_remainder(self):
        self.assertEqual(thirds(9), (range(0, 3), range(3, 6), range(6, 9)))
        self.assertEqual(thirds(11), (range(0, 5), range(5, 8),
                                      range(8, 11)))


class Growth(unittest.TestCase):
    ts = [12.0 * i for i in range(11)]

    def test_a_leak_fails(self):
        # One thread a sample after warm-up: +3 between the thirds' medians
        # is within +8, so a leak of 4 a sample (12 between medians) fails.
        ys = [60, 80, 85, 86] + [86 + 4 * i for i in range(1, 8)]
        g = growth(self.ts, ys, 8)
        self.assertEqual(g["verdict"], "GROWS")
        self.assertEqual(g["growth"], 12)
        self.assertAlmostEqual(g["slope_per_min"], 20.0)

    def test_short_lived_clients_widen_a_datanodes_mapping_bounds(self):
        # dn1's SysV peaks in a 2-minute CI soak with short-lived clients:
        # +3 between the thirds, and 25 once the writers had stopped.
        sysv = [2, 25, 27, 27, 30, 28, 28, 29, 31, 31, 30]
        rows = [dict(jvm=j, sample=i, t=12.0 * i, sysv=y)
                for i, y in enumerate(sysv) for j in ("dn1", "client1")]

        def verdicts(churn):
            return {(g["jvm"], g["verdict"], g["bound"])
                    for g in judge_growth(rows, churn)
                    if g["quantity"] == "sysv"}
        self.assertEqual(verdicts(False), {("dn1", "GROWS", 2),
                                           ("client1", "GROWS", 2)})
        self.assertEqual(verdicts(True), {("dn1", "ok", 10),
                                          ("client1", "GROWS", 2)})
        leak = [y + 3 * i for i, y in enumerate(sysv)]
        rows = [dict(jvm="dn1", sample=i, t=12.0 * i, sysv=y)
                for i, y in enumerate(leak)]
        self.assertEqual([g["verdict"] for g in judge_growth(rows, True)
                          if g["quantity"] == "sysv"], ["GROWS"])

    def test_warm_up_growth_is_not_judged(self):
        ys = [0, 100, 400, 700, 800, 800, 801, 799, 800, 802, 800]
        g = growth(self.ts, ys, 2)
        self.assertEqual(g["verdict"], "ok")
        self.assertEqual(g["growth"], 0)

    def test_one_busy_second_is_not_a_leak(self):
        # The 2-minute run's DataNode threads: a single peak of 98.
        ys = [60, 81, 84, 85, 87, 90, 89, 91, 90, 98, 89]
        g = growth(self.ts, ys, 8)
        self.assertEqual(g["verdict"], "ok")
        self.assertEqual((g["mid"], g["last"]), (90, 90))

    def test_too_few_samples_or_values(self):
        self.assertEqual(growth(self.ts[:5], [1, 2, 3, 4, 5], 0)["verdict"],
                         "n/a")
        ys = [1, 2, 3, 4, 5, None, None, None, 9, 9, 9]
        self.assertEqual(growth(self.ts, ys, 0)["verdict"], "n/a")


class Drained(unittest.TestCase):
    first = [dict(jvm="dn1", sample="0", sockets=9),
             dict(jvm="dn2", sample="0", sockets=9)]

    def test_a_clean_datanode_passes(self):
        after = [dict(jvm="dn1", sample="drained", sessions=0,
                      work_threads=0, block_fds=0, sockets=9 + SOCKETS_AFTER),
                 dict(jvm="dn2", sample="drained", sessions=0,
                      work_threads=0, block_fds=0, sockets=12)]
        self.assertEqual(drain_failures(self.first + after, after), [])

    def test_what_a_block_or_a_socket_left_behind_fails(self):
        after = [dict(jvm="dn1", sample="drained", sessions=1,
                      work_threads=2, block_fds=0, sockets=9),
                 dict(jvm="dn2", sample="drained", sessions=0,
                      work_threads=0, block_fds=2,
                      sockets=10 + SOCKETS_AFTER)]
        self.assertEqual(drain_failures(self.first + after, after), [
            "dn1: 1 UCX sessions left after the writers stopped",
            "dn1: 2 threads of blocks left after the writers stopped",
            "dn2: 2 block files left after the writers stopped",
            "dn2: %d sockets after the writers stopped, 9 before they "
            "started (bound +%d)" % (10 + SOCKETS_AFTER, SOCKETS_AFTER)])


class FailedRunKeepsItsLogs(unittest.TestCase):
    def test_logs_stay_storage_goes(self):
        with tempfile.TemporaryDirectory() as work:
            for d in ("data1/current", "conf"):
                os.makedirs(os.path.join(work, d))
            for f in ("client1.log", "nn.log", "hs_err_pid7.log",
                      "data1/current/blk_1", "format.out"):
                with open(os.path.join(work, f), "w"):
                    pass
            keep_logs_only(work)
            self.assertEqual(sorted(os.listdir(work)),
                             ["client1.log", "hs_err_pid7.log", "nn.log"])


class Options(unittest.TestCase):
    def test_conf_pairs(self):
        a = soak.parse_args(["--minutes", "2", "--conf",
                             "dfs.blockreport.intervalMsec=60000", "--conf",
                             "dfs.x= a=b"])
        self.assertEqual(a.conf_pairs, [
            ("dfs.blockreport.intervalMsec", "60000"), ("dfs.x", " a=b")])

    def test_conf_needs_a_key_and_a_value(self):
        for bad in ("dfs.x", "=1"):
            with self.assertRaises(SystemExit), \
                    contextlib.redirect_stderr(io.StringIO()):
                soak.parse_args(["--minutes", "2", "--conf", bad])

    def test_control_turns_the_clients_ucx_path_off(self):
        def ucx(*conf):
            args = ["--minutes", "2"]
            for kv in conf:
                args += ["--conf", kv]
            return soak.clients_use_ucx(soak.parse_args(args))
        self.assertTrue(ucx())
        self.assertTrue(ucx("dfs.client.rdma.enabled=true"))
        self.assertFalse(ucx("dfs.client.rdma.enabled=false"))
        self.assertFalse(ucx("dfs.client.rdma.enabled= False "))
        self.assertTrue(ucx("dfs.client.rdma.enabled=false",
                            "dfs.client.rdma.enabled=true"))
        self.assertTrue(ucx("dfs.datanode.rdma.enabled=false"))

    def test_executor(self):
        self.assertEqual(soak.parse_args(["--minutes", "2"]).executor, 0)
        a = soak.parse_args(["--minutes", "180", "--executor", "16"])
        self.assertEqual((a.executor, a.max_size), (16, 256 * MiB))
        with self.assertRaises(SystemExit), \
                contextlib.redirect_stderr(io.StringIO()):
            soak.parse_args(["--minutes", "2", "--executor", "-1"])

    def test_executor_writer_argv(self):
        a = soak.parse_args(["--minutes", "2", "--executor", "16"])
        cluster = types.SimpleNamespace(java="java", root="/w")
        argv = writer_argv(a, cluster, "/cp", "/d.jar", "executor",
                           EXECUTOR_DISTRIBUTION, 16, 120, 3, 256 * MiB,
                           1 << 30, min_size=EXECUTOR_MIN_SIZE)
        self.assertEqual(argv[argv.index("-min-size") + 1],
                         str(16 * MiB))
        self.assertIn("dfs.client.rdma.distribution=auto", argv)
        self.assertEqual(argv[argv.index("-threads") + 1], "16")
        self.assertNotIn("-min-size", writer_argv(
            a, cluster, "/cp", "/d.jar", "client1", "chain", 8, 120, 1,
            16 * MiB, 1 << 30))


class MaxSize(unittest.TestCase):
    def test_scaled_to_the_run(self):
        self.assertEqual(default_max_size(0.5), 4 * MiB)
        self.assertEqual(default_max_size(2), 16 * MiB)
        self.assertEqual(default_max_size(10), 64 * MiB)
        self.assertEqual(default_max_size(32), 256 * MiB)
        self.assertEqual(default_max_size(600), 256 * MiB)


class Probe(unittest.TestCase):
    def test_native_memory_summary(self):
        text = """
Native Memory Tracking:

(Omitting categories weighting less than 1KB)

Total: reserved=2012345KB, committed=670000KB
       malloc: 30000KB #120000
       mmap:   reserved=1982345KB, committed=640000KB

-                 Java Heap (reserved=524288KB, committed=524288KB)
                            (mmap: reserved=524288KB, committed=524288KB)

-                     Class (reserved=1048832KB, committed=9000KB)
                            (classes #12000)
-                      Code (reserved=247736KB, committed=30000KB)
                            (mmap: reserved=245760KB, committed=28000KB)
-                  Compiler (reserved=2000KB, committed=2000KB)
-               Arena Chunk (reserved=5000KB, committed=5000KB)
-                     Other (reserved=40000KB, committed=40000KB)
"""
        # All outside the heap, and the same without the JIT's categories.
        self.assertEqual(parse_nmt(text), (145712 * 1024, 108712 * 1024))
        self.assertIsNone(parse_nmt("Native memory tracking is not enabled"))

    def test_threads_of_blocks_and_streams(self):
        work = ["DataXceiver for", "PacketResponder", "DataStreamer fo",
                "ResponseProcess", "Thread-17"]
        other = ["IPC Server hand", "hdfs-rdma-progr", "Thread-1x",
                 "soak-writer-3", "async", "pool-3-thread-1"]
        self.assertEqual([bool(WORK_THREAD.match(n)) for n in work + other],
                         [True] * len(work) + [False] * len(other))

    def test_files_of_io_in_flight(self):
        targets = [
            "/data/current/BP-1/current/rbw/blk_1073741825",
            "/data/current/BP-1/current/rbw/blk_1073741825_1001.meta",
            "socket:[123]", "socket:[124]", "pipe:[55]",
            "anon_inode:[eventpoll]", "anon_inode:[eventfd]",
            "anon_inode:[timerfd]", "/dev/shm/ucx_shm_1", "/x/dropin.jar"]
        self.assertEqual(fd_kinds(targets), dict(all=10, io=7, blocks=2,
                                                 sockets=2))

    def test_jni_global_refs(self):
        self.assertEqual(parse_jni_refs('"VM Thread" os_prio=0\n\n'
                                        "JNI global refs: 27, weak refs: 0"
                                        "\n"), 27)
        self.assertIsNone(parse_jni_refs("no such line"))

    def test_shared_memory_segments(self):
        maps = (
            "7f00-7f10 rw-s 00000000 00:01 32769   /SYSV00000000 (deleted)\n"
            "7f10-7f20 rw-s 00000000 00:01 32769   /SYSV00000000 (deleted)\n"
            "7f20-7f30 rw-s 00000000 00:01 32770   /SYSV00000000 (deleted)\n"
            "7f30-7f40 rw-s 00000000 00:17 5       /dev/shm/ucx_shm_1\n"
            "7f40-7f50 rw-s 00000000 00:17 6       /dev/shm/ucx_shm_2"
            " (deleted)\n"
            "7f50-7f60 r-xp 00000000 08:01 77      /usr/lib/libucs.so.0\n"
            "7f60-7f70 rw-p 00000000 00:00 0\n")
        self.assertEqual(shm_segments(maps), (2, 2))


if __name__ == "__main__":
    unittest.main()


class FakeProcs:
    """Spawned processes that end when a test says so."""

    def __init__(self):
        self.spawned = []

    def spawn(self, argv, path, name=None):
        p = types.SimpleNamespace(pid=len(self.spawned) + 1, argv=argv,
                                  returncode=None)
        with open(path, "w"):
            pass
        self.spawned.append(p)
        return p

    def alive(self, p):
        return p.returncode is None


class ShortLivedClients(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.deleted = []
        self.cluster = types.SimpleNamespace(
            java="java", root=self.dir.name, conf="/conf",
            delete=self.deleted.append)
        self.procs = FakeProcs()
        a = types.SimpleNamespace(churn_seconds=20.0, max_size=64 * MiB,
                                  interval_seconds=5.0, conf_pairs=[
                                      ("dfs.client.rdma.enabled", "false")])
        self.churn = Churn(a, self.cluster, self.procs, "/cp", "/dropin.jar")

    def tearDown(self):
        self.dir.cleanup()

    def end(self, n, rc, line):
        with open(os.path.join(self.dir.name, "churn%d.log" % n), "a") as f:
            f.write(line + "\n")
        self.procs.spawned[n - 1].returncode = rc

    def test_one_after_another_each_checked_and_deleted(self):
        self.churn.poll(100)
        self.churn.poll(99)
        self.assertEqual(len(self.procs.spawned), 1)
        argv = self.procs.spawned[0].argv
        for opt, val in (("-dir", "/soak/churn1"), ("-threads", "2"),
                         ("-seconds", "20"),
                         ("-max-size", str(CHURN_MAX_SIZE)),
                         ("-D", "dfs.client.rdma.enabled=true")):
            self.assertEqual(argv[argv.index(opt) + 1], val, opt)
        self.assertIn("dfs.client.rdma.distribution=fan-out", argv)
        # --conf comes after the soak's own -D (the last one wins) and
        # before the writer's own options (where Hadoop's generic option
        # parsing stops).
        mine = argv.index("dfs.client.rdma.enabled=false")
        self.assertGreater(mine, argv.index("dfs.client.rdma.enabled=true"))
        self.assertLess(mine, argv.index("-threads"))
        self.end(1, 0, "SOAK-END status=ok files=3 verified=4096")
        self.churn.poll(80)
        self.assertEqual(self.deleted, ["/soak/churn1"])
        self.assertIn("dfs.client.rdma.distribution=chain",
                      self.procs.spawned[1].argv)
        self.end(2, 1, "SOAK-ERROR java.io.IOException: boom")
        self.churn.poll(29)     # too little time left for a third
        self.assertEqual((self.churn.started, self.churn.ended,
                          self.churn.verified), (2, 2, 4096))
        self.assertEqual(len(self.churn.failures), 2)
        self.assertIn("churn2 exited with 1 (no SOAK-END)",
                      self.churn.failures[0])
        self.assertIn("churn2: SOAK-ERROR java.io.IOException: boom",
                      self.churn.failures[1])
        self.assertIsNone(self.churn.current)

    def test_a_client_that_verified_nothing_fails(self):
        self.churn.poll(100)
        self.end(1, 0, "SOAK-END status=ok files=0 verified=0")
        self.churn.poll(10)
        self.assertEqual(len(self.churn.failures), 1)
        self.assertIn("churn1 verified no bytes", self.churn.failures[0])
