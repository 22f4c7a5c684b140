"""--apps' TestDFSIO workloads without a cluster: what DfsioOnYarn
reports and the figures taken from it, the containers' logs read from a
YARN work directory, and the checks that every container of a jar or ucx
job ran with the agent and a ucx job's maps sent by UCX."""

import os
import tempfile
import types
import unittest

from hdfsrdma_bench import app_dfsio, apps
from hdfsrdma_bench.units import MiB

RESULT = ("APP-RESULT mode=dfsio start_ns=1000000000 end_ns=21000000000 "
          "measured_bytes=134217728 measured_files=2 records=0 samples=0 "
          "bytes=134217728 blocks=2 verified_bytes=134217728 "
          "dfsio_throughput=31.25 dfsio_avg_io_rate=32.5 dfsio_exec_s=19.4"
          " status=ok")


def container(root, name, totals=None, agent=True):
    d = os.path.join(root, "target", "yarn", "yarn-logDir-nm-0_0",
                     "application_1_0001", name)
    os.makedirs(d)
    with open(os.path.join(d, "syslog"), "w") as f:
        f.write("INFO x: started\n")
        if agent:
            f.write("INFO agent.HdfsRdmaAgent: %s Hadoop 2.9.2's "
                    "DataStreamer\n" % app_dfsio.AGENT_LINE)
    if totals is not None:
        with open(os.path.join(d, app_dfsio.TOTALS), "w") as f:
            f.write(totals + "\n")


class Report(unittest.TestCase):
    def test_figures_from_testdfsio(self):
        r, errors = apps.parse_result("APP-START mode=dfsio\n" + RESULT)
        self.assertEqual(errors, [])
        f = apps.run_figures(apps.dfsio(2, 64 * MiB), [r], [])
        # TestDFSIO's mb/sec are MiB/s.
        self.assertEqual((f["throughput_mb_s"], f["avg_io_rate_mb_s"]),
                         (32.768, 34.079))
        self.assertEqual((f["dfsio_exec_s"], f["elapsed_s"], f["files"]),
                         (19.4, 20.0, 2))
        self.assertEqual((f["p50_ms"], f["p99_ms"], f["records_per_s"]),
                         (None, None, None))

    def test_arguments(self):
        args = apps.workload_args(apps.dfsio(16, 256 * MiB), "/b/x", "yarn")
        self.assertEqual(args, ["-maps", "16", "-size", str(256 * MiB),
                                "-dir", "/b/x", "-slots",
                                str(apps.DFSIO_SLOTS), "-name", "yarn"])


class Containers(unittest.TestCase):
    def bench(self):
        b = types.SimpleNamespace(failures=[])
        b.is_ucx = lambda s: s == "ucx"
        b.fail = b.failures.append
        return b

    def logs(self, specs):
        with tempfile.TemporaryDirectory() as d:
            for i, (totals, agent) in enumerate(specs, 1):
                container(d, "container_1_0001_01_%06d" % i, totals, agent)
            return app_dfsio.containers(d)

    def test_read_from_the_work_directory(self):
        with tempfile.TemporaryDirectory() as d:
            container(d, "container_1_0001_01_000001", "x=1")
            # The same container's working directory: no syslog.
            os.makedirs(os.path.join(d, "target", "yarn", "local", "appcache",
                                     "container_1_0001_01_000001"))
            self.assertEqual(app_dfsio.containers(d), {
                "container_1_0001_01_000001": ({"x": 1}, True)})
        logs = self.logs([("ucx-data-bytes-sent=5 transports=sysv", True),
                          (None, False)])
        self.assertEqual(sorted(logs), ["container_1_0001_01_000001",
                                        "container_1_0001_01_000002"])
        self.assertEqual(logs["container_1_0001_01_000001"],
                         ({"ucx-data-bytes-sent": 5, "transports": "sysv"},
                          True))
        self.assertEqual(logs["container_1_0001_01_000002"], ({}, False))

    def test_ucx_job_every_map_sends(self):
        app = apps.dfsio(2, MiB)
        sent = "ucx-data-bytes-sent=100"
        ok = self.logs([(sent, True)] * 4)
        b = self.bench()
        app_dfsio.check_containers(b, "ucx", app, ok)
        self.assertEqual(b.failures, [])
        for specs, why in (
                ([(sent, True)] * 3, "3 container log(s)"),
                ([(sent, True)] * 3 + [(sent, False)], "1 of 4 containers"),
                ([(sent, True)] + [("ucx-data-bytes-sent=0", True)] * 3,
                 "1 container(s) sent by UCX")):
            b = self.bench()
            app_dfsio.check_containers(b, "ucx", app, self.logs(specs))
            self.assertEqual(len(b.failures), 1, why)
            self.assertIn(why, b.failures[0])

    def test_defer_start_maps_of_a_block_or_less_send_nothing(self):
        # --defer-start on: each map JVM's first block over TCP, so only
        # maps of files larger than a block must send by UCX.
        b = self.bench()
        b.defer_start = True
        b.cluster_of = {"ucx": types.SimpleNamespace(block_size=MiB)}
        quiet = self.logs([(None, True)] * 4)
        app_dfsio.check_containers(b, "ucx", apps.dfsio(2, MiB), quiet)
        self.assertEqual(b.failures, [])
        app_dfsio.check_containers(b, "ucx", apps.dfsio(2, 2 * MiB), quiet)
        self.assertEqual(len(b.failures), 1)
        self.assertIn("0 container(s) sent by UCX", b.failures[0])

    def test_jar_has_the_agent_stock_has_not(self):
        app = apps.dfsio(2, MiB)
        b = self.bench()
        app_dfsio.check_containers(b, "jar", app,
                                   self.logs([(None, True)] * 4))
        app_dfsio.check_containers(b, "stock", app,
                                   self.logs([(None, False)] * 4))
        self.assertEqual(b.failures, [])
        app_dfsio.check_containers(b, "stock", app,
                                   self.logs([(None, True)] * 4))
        self.assertEqual(len(b.failures), 1)
        self.assertIn("4 container(s) ran with the agent", b.failures[0])


if __name__ == "__main__":
    unittest.main()
