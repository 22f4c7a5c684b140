"""run.sh's options: the profiles, what the command line overrides, the
defaults that depend on other options, and the combinations refused."""

import contextlib
import io
import os
import tempfile
import unittest

from hdfsrdma_bench.cli import parse_args
from hdfsrdma_bench.defer_start import describe
from hdfsrdma_bench.harness import BENCHMARKS
from hdfsrdma_bench.units import GiB, MiB


class Profiles(unittest.TestCase):
    def test_small_is_the_default(self):
        a = parse_args([])
        self.assertEqual(a.profile, "small")
        self.assertEqual(a.sizes, [MiB, 16 * MiB, 128 * MiB, 512 * MiB])
        self.assertEqual((a.reps, a.runs), ([1, 3], 3))
        self.assertEqual((a.writers, a.writer_size), ([1, 2, 4], 128 * MiB))
        self.assertEqual(a.verify, "first")
        self.assertEqual(a.metrics_period, 10.0)

    def test_tiny(self):
        a = parse_args(["--tiny"])
        self.assertEqual(a.sizes, [MiB, 16 * MiB])
        self.assertEqual((a.runs, a.writers), (1, [1, 2]))
        self.assertEqual((a.verify, a.warmup), ("all", 16 * MiB))

    def test_paper(self):
        a = parse_args(["--paper"])
        self.assertEqual(a.sizes[-1], 5 * GiB)
        self.assertEqual(len(a.sizes), 9)
        self.assertEqual((a.writers, a.scale_reps), ([1, 2, 4, 8], [3, 1]))

    def test_the_command_line_wins_over_the_profile(self):
        a = parse_args(["--paper", "--sizes", "1M,2G", "--runs", "5",
                        "--writers", "3", "--verify", "none",
                        "--warmup", "0"])
        self.assertEqual(a.sizes, [MiB, 2 * GiB])
        self.assertEqual((a.runs, a.writers), (5, [3]))
        self.assertEqual((a.verify, a.warmup), ("none", 0))
        self.assertEqual(a.reps, [1, 3])

    def test_self_test_runs_tiny_with_a_1_s_metrics_period(self):
        a = parse_args(["--conf-self-test"])
        self.assertEqual((a.profile, a.metrics_period), ("tiny", 1.0))
        a = parse_args(["--conf-self-test", "--small",
                        "--metrics-period", "3"])
        self.assertEqual((a.profile, a.metrics_period), ("small", 3.0))


class Options(unittest.TestCase):
    def test_paths_are_absolute_and_results_go_under_benchmarks(self):
        a = parse_args(["--work", "w", "--java", "bin/java"])
        self.assertEqual(a.work, os.path.abspath("w"))
        self.assertEqual(a.java, os.path.abspath("bin/java"))
        self.assertEqual(os.path.dirname(a.out),
                         os.path.join(BENCHMARKS, "results"))
        self.assertTrue(a.hdfs_dir.startswith("/tmp/hdfs-rdma-bench-"))
        self.assertEqual(parse_args(["--out", "r"]).out,
                         os.path.abspath("r"))

    def test_ucx_distribution(self):
        self.assertEqual(parse_args([]).ucx_distribution, "auto")
        self.assertEqual(parse_args(["--hosts", "1gbit", "--ucx-tcp"])
                         .ucx_distribution, "fan-out")
        self.assertEqual(parse_args(["--hosts", "1gbit", "--ucx-tcp",
                                     "--distribution", "chain"])
                         .ucx_distribution, "chain")

    def test_values_of_options(self):
        a = parse_args(["--flamegraphs", "1G:1", "--hosts", "10gbit",
                        "--ucx-tcp", "--client-opts=-Da=b -Dc='d e'",
                        "--compare-distributions", "auto,chain"])
        self.assertEqual(a.flamegraphs, (GiB, 1))
        self.assertEqual(a.hosts, "10gbit")
        self.assertEqual(a.client_opts, ["-Da=b", "-Dc=d e"])
        self.assertEqual(a.compare_distributions, ["auto", "chain"])
        self.assertEqual(a.argv[0], "--flamegraphs")

    def test_conf_directory(self):
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "core-site.xml"), "w").close()
            a = parse_args(["--conf", os.path.relpath(d)])
            self.assertEqual(a.conf, d)


class Refused(unittest.TestCase):
    def refused(self, argv, message):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            with self.assertRaises(SystemExit) as e:
                parse_args(argv)
        self.assertEqual(e.exception.code, 2)
        self.assertIn(message, err.getvalue())

    def test_invalid_values(self):
        self.refused(["--sizes", "1X"], "bad size: '1X'")
        self.refused(["--hosts", "1gbps"], "bad rate")
        self.refused(["--flamegraphs", "1G:x"], "bad SIZE:REP")
        self.refused(["--runs", "0"], "--runs must be at least 1")
        self.refused(["--verify", "some"], "invalid choice")
        self.refused(["--distribution", "star"], "invalid choice")

    def test_one_profile(self):
        self.refused(["--tiny", "--small"], "not allowed with")

    def test_options_that_exclude_each_other(self):
        self.refused(["--scale", "--no-scale"], "exclude each other")
        self.refused(["--conf-self-test", "--conf", "/etc"],
                     "starts its own cluster")
        self.refused(["--hosts", "1gbit", "--conf-self-test"],
                     "--hosts starts its own clusters")
        self.refused(["--conf-self-test", "--flamegraphs", "1G:3"],
                     "embedded clusters only")

    def test_options_that_need_another(self):
        self.refused(["--ucx-tcp"], "--ucx-tcp needs --hosts")
        self.refused(["--client-link", "1gbit"], "needs --hosts")
        self.refused(["--compare-distributions", "chain", "--hosts",
                      "1gbit"], "needs --ucx-tcp")

    def test_compared_distributions(self):
        self.refused(["--compare-distributions", "fan-out,star"],
                     "star: not one of auto, fan-out, chain, hybrid")
        self.refused(["--compare-distributions", "auto"],
                     "not the UCX system's own (auto)")
        self.refused(["--compare-distributions", "chain,chain"],
                     "each mode once")
        self.refused(["--compare-distributions", "chain",
                      "--conf-self-test"], "needs embedded clusters")

    def test_hadoop_release(self):
        self.assertEqual(parse_args([]).hadoop, "3.4.2")
        self.assertEqual(parse_args(["--tiny", "--hadoop", "2.9.2"]).hadoop,
                         "2.9.2")
        self.refused(["--hadoop", "2.8.5"], "not one of patches/releases")
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "core-site.xml"), "w").close()
            self.refused(["--conf", d, "--hadoop", "3.3.6"],
                         "--hadoop is the embedded clusters' release")
        self.refused(["--apps", "--dfsio", "2x16M"],
                     "TestDFSIO runs on Hadoop 2.9.2 only")

    def test_ucx_workers(self):
        a = parse_args(["--apps", "--ucx-workers", "1,4"])
        self.assertEqual(a.ucx_workers, [1, 4])
        from hdfsrdma_bench.state import Bench
        b = Bench(a)
        self.assertEqual(b.workers, ["ucx-w1", "ucx-w4"])
        self.assertEqual(b.labels["ucx-w4"], "UCX w4")
        self.assertIn("dfs.client.rdma.workers=4", b.long_labels["ucx-w4"])
        self.assertTrue(b.is_ucx("ucx-w4") and b.is_ucx("ucx"))
        self.assertFalse(b.is_ucx("jar") or b.is_ucx("stock"))
        self.assertEqual(b.long_labels["stock"], "stock HDFS 3.4.2")
        self.refused(["--ucx-workers", "4"], "only with --apps")
        self.refused(["--apps", "--ucx-workers", "0"], "at least 1")
        self.refused(["--apps", "--ucx-workers", "2,2"], "each once")
        self.refused(["--apps", "--ucx-workers", "2", "--conf-self-test"],
                     "needs embedded clusters")

    def test_knows_key(self):
        import zipfile
        from hdfsrdma_bench.systems import knows_key
        with tempfile.TemporaryDirectory() as d:
            jar = os.path.join(d, "dropin.jar")
            with zipfile.ZipFile(jar, "w") as z:
                z.writestr("hdfs-rdma-default.xml", "<configuration><property>"
                           "<name>dfs.client.rdma.workers</name><value>1"
                           "</value></property></configuration>")
            self.assertTrue(knows_key(jar, "dfs.client.rdma.workers"))
            self.assertFalse(knows_key(jar, "dfs.client.rdma.work"))
            self.assertFalse(knows_key(os.path.join(d, "none.jar"), "x"))

    def test_conf_without_core_site(self):
        with tempfile.TemporaryDirectory() as d:
            self.refused(["--conf", d], "no core-site.xml there")


class DeferStart(unittest.TestCase):
    """--defer-start: its default (the product's, --tiny's off), and the
    dfs.client.rdma.defer-start the UCX clients get."""

    def test_default_on_tiny_off_the_command_line_wins(self):
        for argv, want in (([], "on"), (["--paper"], "on"),
                           (["--tiny"], "off"), (["--conf-self-test"], "off"),
                           (["--apps", "--tiny"], "off"),
                           (["--tiny", "--defer-start", "on"], "on"),
                           (["--defer-start", "off"], "off")):
            self.assertEqual(parse_args(argv).defer_start, want, argv)
        Refused.refused(self, ["--defer-start", "yes"], "invalid choice")

    def bench(self, argv, root, dropin):
        """A bench whose embedded systems are set up under `root` (nothing
        started): the clusters' site files written, every client made."""
        from hdfsrdma_bench.state import Bench
        from hdfsrdma_bench.systems import embedded_systems
        b = Bench(parse_args(["--out", root, "--java", "java"] + argv))
        b.dropin = dropin
        embedded_systems(b, root, "/cp")
        return b

    def dropin(self, d, knows=True):
        import zipfile
        jar = os.path.join(d, "dropin.jar")
        with zipfile.ZipFile(jar, "w") as z:
            z.writestr("hdfs-rdma-default.xml", "<configuration>%s"
                       "</configuration>" % (
                           "<property><name>dfs.client.rdma.defer-start"
                           "</name><value>true</value></property>"
                           if knows else ""))
        return jar

    def site(self, b):
        with open(os.path.join(b.clusters["ucx"].conf,
                               "hdfs-site.xml")) as f:
            return f.read()

    def test_the_setting_the_ucx_clients_get(self):
        key = "dfs.client.rdma.defer-start"
        for argv, value in (([], "true"), (["--tiny"], "false"),
                            (["--defer-start", "off"], "false"),
                            (["--tiny", "--defer-start", "on"], "true")):
            with tempfile.TemporaryDirectory() as d:
                b = self.bench(argv + ["--apps", "--ucx-workers", "2"], d,
                               self.dropin(d))
                self.assertEqual(b.defer_start, value == "true")
                for s in ("ucx", "ucx-w2"):
                    argv_ = b.clients[s].put_argv(3, "/f", "/t")
                    i = argv_.index("%s=%s" % (key, value))
                    self.assertEqual(argv_[i - 1], "-D")
                for s in ("stock", "jar"):
                    self.assertNotIn(key, " ".join(
                        b.clients[s].put_argv(3, "/f", "/t")))
                # In the site file too: the agent's warm-up reads it.
                self.assertIn("<name>%s</name><value>%s</value>" % (
                    key, value), self.site(b).replace("\n", "")
                    .replace(" ", ""))
                self.assertEqual(b.warnings, [])
                self.assertIn("%s=%s" % (key, value), describe(b))

    def test_a_jar_without_the_key_never_defers(self):
        with tempfile.TemporaryDirectory() as d:
            b = self.bench([], d, self.dropin(d, knows=False))
            self.assertFalse(b.defer_start)
            self.assertIn("has no dfs.client.rdma.defer-start",
                          b.warnings[0])
            self.assertIn("does not know", describe(b))


if __name__ == "__main__":
    unittest.main()
