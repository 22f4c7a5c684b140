"""--apps' Spark workloads without a cluster or a Spark: the workloads the
options describe, what Spark's event log says of the write stage, the
figures and report of a run, the spark-submit command line of each
system, the pyspark found on disk, and the checks of the driver's log
and of the write stage."""

import contextlib
import io
import json
import os
import tempfile
import types
import unittest
import zipfile

from hdfsrdma_bench import (app_report, app_runs, app_spark, apps,
                            spark_events, spark_job, targets)
from hdfsrdma_bench.cli import parse_args
from hdfsrdma_bench.harness import HarnessError
from hdfsrdma_bench.systems import Client
from hdfsrdma_bench.units import MiB


def parse_quietly(argv):
    with contextlib.redirect_stderr(io.StringIO()):
        return parse_args(argv)


def names(argv):
    return [x.name for x in parse_args(["--apps"] + argv).apps_list
            if x.kind == "spark"]


class Workloads(unittest.TestCase):
    def test_default_and_tiny(self):
        [x] = [x for x in parse_args(["--apps"]).apps_list
               if x.kind == "spark"]
        self.assertEqual((x.name, x.threads, x.files, x.size, x.rep, x.jvms),
                         ("spark-8x128M-r3", 8, 1, 128 * MiB, 3, 1))
        self.assertEqual(names(["--tiny"]), ["spark-2x16M-r3"])

    def test_options(self):
        self.assertEqual(names(["--app-spark-tasks", "4,8",
                                "--app-spark-sizes", "64M,1G"]),
                         ["spark-4x64M-r3", "spark-8x64M-r3",
                          "spark-4x1G-r3", "spark-8x1G-r3"])
        self.assertEqual(names(["--app-spark-tasks", ""]), [])
        self.assertEqual(names(["--apps-scale", "0.1"]), ["spark-8x13M-r3"])
        self.assertEqual(
            [x.name for x in parse_args(
                ["--apps", "--apps-only", "spark-*"]).apps_list],
            ["spark-8x128M-r3"])
        a = parse_args(["--apps", "--pyspark", "rel/dir"])
        self.assertTrue(os.path.isabs(a.pyspark))

    def test_refused(self):
        for argv in (["--apps", "--app-spark-tasks", "0"],
                     ["--apps", "--app-spark-sizes", "512K"],
                     ["--app-spark-tasks", "8"],          # needs --apps
                     ["--pyspark", "/x"],
                     ["--apps", "--conf", "/tmp", "--app-spark-tasks", "8"]):
            with self.assertRaises(SystemExit, msg=argv):
                parse_quietly(argv)

    def test_left_out_with_conf(self):
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "core-site.xml"), "w").close()
            a = parse_args(["--apps", "--conf", d])
        self.assertFalse([x for x in a.apps_list if x.kind == "spark"])

    def test_timeout_and_words(self):
        x = apps.spark(8, 128 * MiB)
        self.assertEqual(app_runs.timeout_of(x),
                         600 + 8 * 128 * MiB * 3 / 5e6)
        self.assertIn("local[8], one driver JVM: 8 Parquet file(s) of about "
                      "128M at rep 3", app_runs.human_app(x))


def event(kind, **fields):
    fields["Event"] = kind
    return json.dumps(fields)


def task_end(stage, launch, finish, written=0, ok=True):
    return event("SparkListenerTaskEnd", **{
        "Stage ID": stage, "Task End Reason": {
            "Reason": "Success" if ok else "ExceptionFailure"},
        "Task Info": {"Launch Time": launch, "Finish Time": finish},
        "Task Metrics": {"Output Metrics": {"Bytes Written": written,
                                            "Records Written": 10}}})


def log_lines():
    """A made-up event log: the warm-up's job (stage 0), the
    materialisation (stages 1, 2), the write (stage 3 skipped, the cached
    input; stage 4 of two tasks) and the read-back (stage 5)."""
    def job(stages, phase):
        return event("SparkListenerJobStart", **{
            "Stage IDs": stages, "Properties": {
                spark_events.PHASE_KEY: phase, "spark.rdd.scope": "x"}})

    def completed(stage, submitted, done, failure=None):
        info = {"Stage ID": stage, "Submission Time": submitted,
                "Completion Time": done}
        if failure:
            info["Failure Reason"] = failure
        return event("SparkListenerStageCompleted", **{"Stage Info": info})
    return [event("SparkListenerApplicationStart", Timestamp=1),
            job([0], "warmup"), completed(0, 1000, 3000),
            task_end(0, 1000, 2900, 5),
            job([1, 2], "materialise"), completed(1, 4000, 9000),
            completed(2, 9000, 9100),
            job([3, 4], "write"), completed(4, 10000, 14500),
            task_end(4, 10010, 13000, 100), task_end(4, 10020, 14400, 120),
            task_end(4, 10020, 10030, 0, ok=False),
            job([5], "verify"), completed(5, 15000, 15200),
            "{\"Event\": \"SparkListenerTaskEnd\", \"Stage ID\": 4, tru"]


class EventLog(unittest.TestCase):
    def test_the_write_stage(self):
        ev = spark_events.read_events(log_lines())
        self.assertEqual(len(ev), 14)       # the cut line left out
        self.assertEqual(spark_events.phase_stages(ev)[4], "write")
        f = spark_events.phase_figures(ev, "write")
        self.assertEqual(f, dict(stage_s=4.5, stages=1, tasks=2,
                                 failed_stages=0, task_p50_s=2.99,
                                 task_max_s=4.38, bytes_written=220,
                                 records_written=20))
        m = spark_events.phase_figures(ev, "materialise")
        self.assertEqual((m["stage_s"], m["stages"], m["tasks"]),
                         (5.1, 2, 0))
        self.assertIsNone(spark_events.phase_figures(ev, "nope"))

    def test_files_of_a_directory(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(spark_events.load(os.path.join(d, "none")), [])
            with open(os.path.join(d, "local-1.inprogress"), "w") as f:
                f.write("\n".join(log_lines()) + "\n")
            ev = spark_events.load(d)
            # Spark 4 rolls its log by default: a directory of parts.
            rolled = os.path.join(d, "eventlog_v2_local-2")
            os.makedirs(rolled)
            lines = log_lines()
            for name, part in (("events_1_local-2", lines[:8]),
                               ("events_2_local-2", lines[8:]),
                               ("appstatus_local-2", []),
                               (".events_1_local-2.crc", ["x"])):
                with open(os.path.join(rolled, name), "w") as f:
                    f.write("\n".join(part))
            self.assertEqual(len(spark_events.event_files(d)), 3)
            os.unlink(os.path.join(d, "local-1.inprogress"))
            parts = spark_events.load(d)
        self.assertEqual(spark_events.phase_figures(ev, "write")["tasks"], 2)
        self.assertEqual(spark_events.phase_figures(parts, "write"),
                         spark_events.phase_figures(ev, "write"))


RESULT = ("APP-RESULT mode=spark start_ns=5000000000 end_ns=9500000000 "
          "measured_bytes=1000000000 measured_files=8 records=4924648 "
          "samples=0 bytes=1033554432 blocks=16 verified_bytes=0 "
          "rows_read=4924648 data_blocks=8 warmup_bytes=33554432 "
          "warmup_files=8 cached_mem_bytes=1100000000 status=ok")
STAGE = dict(stage_s=4.0, stages=1, tasks=8, failed_stages=0,
             task_p50_s=3.5, task_max_s=3.9, bytes_written=1000000000,
             records_written=4924648)


class Figures(unittest.TestCase):
    def test_a_run(self):
        r, errors = apps.parse_result("APP-START mode=spark\n" + RESULT)
        self.assertEqual(errors, [])
        f = apps.spark_figures(r, STAGE)
        self.assertEqual((f["write_stage_s"], f["throughput_mb_s"],
                          f["write_job_s"], f["elapsed_s"]),
                         (4.0, 250.0, 4.5, 4.5))
        self.assertEqual((f["files"], f["spark_rows"], f["task_max_s"],
                          f["p99_ms"], f["records"]),
                          (8, 4924648, 3.9, None, None))

    def test_job_result_line_and_errors(self):
        r, errors = apps.parse_result(
            "APP-ERROR RuntimeError: the DataFrame is not all in memory\n")
        self.assertIsNone(r)
        self.assertIn("not all in memory", errors[0])

    def test_the_job_sizes_its_rows(self):
        self.assertEqual(spark_job.rows_for(128 * MiB),
                         128 * MiB // spark_job.ROW_BYTES)
        self.assertEqual(spark_job.rows_for(1), 1)
        self.assertEqual(spark_job.PHASE_KEY, spark_events.PHASE_KEY)
        a = spark_job.parse(["--dir", "/b/x", "--tasks", "8", "--size",
                             "100", "--rep", "3"])
        self.assertEqual((a.dir, a.tasks, a.size, a.rep),
                         ("/b/x", 8, 100, 3))


class Report(unittest.TestCase):
    def test_summary_ratios_section_and_target(self):
        x = apps.spark(8, 128 * MiB)
        rows = [dict(workload=x.name, kind="spark", system=s, run=run,
                     write_stage_s=t, throughput_mb_s=round(1000 / t, 3),
                     write_job_s=t + 1, task_max_s=t - 0.5,
                     ucx_bytes_fetched=3000 if s == "ucx" else
                     (0 if s == "jar" else None))
                for run, k in ((1, 1.0), (2, 1.1), (3, 0.9))
                for s, t in (("stock", 10 * k), ("jar", 9.5 * k),
                             ("ucx", 7 * k))]
        systems = ["stock", "jar", "ucx"]
        s = app_report.app_summary([x], systems, rows)
        by = {r["system"]: r for r in s}
        self.assertEqual(by["ucx"]["write_stage_s"], 7.0)
        self.assertEqual(by["ucx"]["write_stage_s_vs_stock"], 0.7)
        c = app_report.comparisons([x], s)
        self.assertAlmostEqual(c[0]["ucx_stock_write_stage_s"], 0.7)
        self.assertAlmostEqual(c[0]["jar_stock_write_stage_s"], 0.95)
        m = {(r["workload"], r["system"]): r for r in s}
        text = "\n".join(app_report.spark_section(
            [x], m, {r["workload"]: r for r in c}, systems,
            "stock / jar / UCX"))
        self.assertIn("| spark-8x128M-r3 | 8 x 128M | 3 | 3 | "
                      "10.00 / 9.50 / 7.00 | 0.70 | 0.95 | "
                      "100.0 / 105.3 / 142.9 |", text)
        self.assertIn("| 11.00 / 10.50 / 8.00 | 9.50 / 9.00 / 6.50 | "
                      "n/a / 0 / 3000 |", text)
        [t] = [t for t in targets.app_targets(c)
               if t["target"].startswith("the Spark job")]
        self.assertEqual((t["result"], t["limit"], t["measured"]),
                         ("met", targets.APP_SPARK_TARGET,
                          "spark-8x128M-r3 0.70"))
        self.assertEqual(app_report.spark_section(
            [apps.writer(MiB, 3, 1)], m, {}, systems, ""), [])


def fake_pyspark(root, hadoop="3.5.0", lib=True):
    home = os.path.join(root, "deps")
    os.makedirs(os.path.join(home, "bin"))
    os.makedirs(os.path.join(home, "jars"))
    open(os.path.join(home, "bin", "spark-submit"), "w").close()
    open(os.path.join(home, "jars", "spark-core_2.13-4.3.0.jar"),
         "w").close()
    with zipfile.ZipFile(os.path.join(
            home, "jars", "hadoop-client-api-%s.jar" % hadoop), "w") as z:
        z.writestr("common-version-info.properties",
                   "# x\nversion=%s\nrevision=abc\n" % hadoop)
    if lib:
        os.makedirs(os.path.join(root, "lib"))
        for f in ("pyspark.zip", "py4j-0.10.9.9-src.zip"):
            open(os.path.join(root, "lib", f), "w").close()


class PySparkOnDisk(unittest.TestCase):
    def test_found(self):
        with tempfile.TemporaryDirectory() as d:
            fake_pyspark(d)
            p = app_spark.PySpark(d)
            self.assertEqual((p.home, p.hadoop, p.spark),
                             (os.path.join(d, "deps"), "3.5.0", "4.3.0"))
            self.assertEqual(p.python_path, "%s/lib/py4j-0.10.9.9-src.zip:"
                             "%s/lib/pyspark.zip" % (d, d))

    def test_missing(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaisesRegex(HarnessError, "pyspark.sh"):
                app_spark.PySpark(d)

    def test_versions_from_the_pom_and_the_jar(self):
        with tempfile.TemporaryDirectory() as d:
            pom = os.path.join(d, "pom.xml")
            with open(pom, "w") as f:
                f.write("<p><pyspark35.version>3.5.9</pyspark35.version>\n"
                        "<pyspark4.version>4.3.0</pyspark4.version></p>")
            self.assertEqual(app_spark.pom_version(pom), "4.3.0")
            jar = os.path.join(d, "dropin.jar")
            with zipfile.ZipFile(jar, "w") as z:
                z.writestr("hdfs-rdma-patched/groups.properties",
                           "#\nreleases=2.9.2 3.4.2 3.5.0\n")
            self.assertEqual(app_spark.agent_releases(jar),
                             ["2.9.2", "3.4.2", "3.5.0"])


class SubmitCommand(unittest.TestCase):
    def pyspark(self):
        return types.SimpleNamespace(home="/ps/deps", python_path="/ps/z",
                                     hadoop="3.5.0")

    def confs(self, argv):
        return [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]

    def test_each_system(self):
        app = apps.spark(8, 128 * MiB)
        stock = Client("stock", "java", "/stock-conf", "/cp")
        jar = Client("jar", "java", "/off-conf", "/cp", "/d.jar", False)
        ucx = Client("ucx", "java", "/ucx-conf", "/cp", "/d.jar", True,
                     generic=["-D", "dfs.client.rdma.distribution=fan-out"])
        argv = {c.system: app_spark.submit_argv(
            self.pyspark(), c, app, "/bench/t", "/o/ev", "/w/l", "/o/t.ucx")
            for c in (stock, jar, ucx)}
        self.assertEqual(argv["stock"][:8], [
            "bash", "/ps/deps/bin/spark-submit", "--master", "local[8]",
            "--driver-memory", "%dm" % (4 * 1024 + 1024), "--name",
            "hdfsrdma-bench-spark-8x128M-r3"])
        self.assertEqual(argv["stock"][-9:], [
            app_spark.JOB, "--dir", "/bench/t", "--tasks", "8", "--size",
            str(128 * MiB), "--rep", "3"])
        c = {s: self.confs(a) for s, a in argv.items()}
        self.assertIn("spark.driver.extraJavaOptions="
                      "-Djava.net.preferIPv4Stack=true", c["stock"])
        self.assertFalse([x for x in c["stock"] if "rdma" in x])
        self.assertIn("spark.driver.extraJavaOptions=-Djava.net."
                      "preferIPv4Stack=true -javaagent:/d.jar "
                      "-Dhdfsrdma.stats.file=/o/t.ucx", c["jar"])
        self.assertIn("spark.hadoop.dfs.client.rdma.enabled=false", c["jar"])
        self.assertIn("spark.hadoop.dfs.client.rdma.enabled=true", c["ucx"])
        self.assertIn("spark.hadoop.dfs.client.rdma.distribution=fan-out",
                      c["ucx"])
        for s in c.values():
            self.assertIn("spark.eventLog.dir=file:///o/ev", s)
            self.assertIn("spark.eventLog.compress=false", s)
            self.assertIn("spark.hadoop.dfs.replication=3", s)
        env = app_spark.submit_env(self.pyspark(), jar, "/jdk/bin/java")
        self.assertEqual((env["HADOOP_CONF_DIR"], env["SPARK_HOME"],
                          env["PYTHONPATH"], env["JAVA_HOME"]),
                         ("/off-conf", "/ps/deps", "/ps/z", "/jdk"))

    def test_heap(self):
        self.assertEqual(app_spark.heap_mib(apps.spark(2, 16 * MiB)),
                         app_spark.HEAP_MIN_MIB)
        self.assertEqual(app_spark.heap_mib(apps.spark(8, 256 * MiB)),
                         8 * 1024 + 1024)


class Checks(unittest.TestCase):
    def bench(self):
        b = types.SimpleNamespace(failures=[], warnings=[])
        b.fail = b.failures.append
        b.note = b.warnings.append
        return b

    LINE = ("25/12/02 INFO HdfsRdmaAgent: %s Hadoop 3.5.0's DataStreamer"
            % app_spark.AGENT_LINE)

    def test_the_agent_in_the_driver(self):
        for system, text, fails in (("stock", "no agent", 0),
                                    ("stock", self.LINE, 1),
                                    ("jar", self.LINE, 0),
                                    ("ucx", self.LINE, 0),
                                    ("ucx", self.LINE.replace("3.5.0",
                                                              "3.4.2"), 1),
                                    ("jar", "no agent", 1)):
            b = self.bench()
            app_spark.check_agent(b, system, "w", text, "3.5.0")
            self.assertEqual(len(b.failures), fails, (system, text))

    def test_the_write_stage(self):
        app = apps.spark(8, 128 * MiB)
        b = self.bench()
        app_spark.check_stage(b, "w", app, STAGE,
                              dict(measured_bytes=1000000000))
        self.assertEqual((b.failures, b.warnings), ([], []))
        app_spark.check_stage(b, "w", app, dict(STAGE, tasks=7),
                              dict(measured_bytes=999))
        self.assertEqual((len(b.failures), len(b.warnings)), (1, 1))


if __name__ == "__main__":
    unittest.main()
