"""Running --apps' Spark workloads (spark-NxSIZE-r3): per batch one
PySpark job (spark_job.py) submitted with the bin/spark-submit of PyPI's
pyspark (Spark 4, the pom's pyspark4.version, as dev-support/pyspark.sh
unpacks it), local[N]: one Spark driver JVM whose N tasks each write one
Parquet file to the system's cluster at replication 3. Spark's own
Hadoop client (its shaded hadoop-client-api, of another release than the
cluster's) writes; the systems differ only as an operator's Spark would:

- stock: HADOOP_CONF_DIR the stock cluster's configuration, nothing of
  hdfs-rdma;
- jar: the drop-in jar as -javaagent: in spark.driver.extraJavaOptions,
  HADOOP_CONF_DIR the UCX cluster's with the client's UCX off, and
  spark.hadoop.dfs.client.rdma.enabled=false;
- ucx: the agent, the UCX cluster's configuration and
  spark.hadoop.dfs.client.rdma.enabled=true (and the UCX system's
  generic options as spark.hadoop.* settings).

The write stage's time comes from Spark's event log (spark_events.py),
written uncompressed into the run's apps/ folder. The batch is held to
what its system must have carried, as every workload's (check_carried),
and the driver's log to the agent's line: present for jar and ucx,
absent for stock."""

import os
import re
import shutil
import sys
import time
import zipfile

from . import spark_events, ucx_counters
from .app_dfsio import AGENT_LINE
from .app_runs import batch_names, check_carried, diff, timeout_of, \
    ucx_detail
from .apps import parse_result, spark_figures
from .harness import REPO, HarnessError
from .units import MiB, parse_list, parse_size

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "spark_job.py")
POM = os.path.join(REPO, "hadoop-hdfs-rdma", "pom.xml")
VERSION_PROPERTY = "pyspark4.version"
CACHE = os.path.join("~", ".cache", "hdfs-rdma", "pyspark")
# The driver's heap: the cached DataFrame, the Parquet writers' row
# groups (each buffers up to its file before writing it), Spark's own
# share; HEAP_PER_BYTE x the bytes of the run, plus HEAP_BASE_MIB, at
# least HEAP_MIN_MIB.
HEAP_PER_BYTE = 4
HEAP_BASE_MIB = 1024
HEAP_MIN_MIB = 2048


def add_spark_options(g):
    """The spark-* workloads' options, in --apps' group of the help."""
    g.add_argument("--app-spark-tasks", metavar="N,...",
                   type=parse_list(int),
                   help="tasks of the Spark jobs (spark-NxSIZE-r3: PySpark,"
                   " local[N], one driver JVM, each task writing one "
                   "Parquet file at replication 3; default 8; --tiny 2; "
                   "'': none)")
    g.add_argument("--app-spark-sizes", metavar="SIZE,...",
                   type=parse_list(parse_size),
                   help="each task's Parquet file, about (default 128M; "
                   "--tiny 16M; whole MiB; --apps-scale scales it)")
    g.add_argument("--pyspark", metavar="DIR",
                   help="the unpacked pyspark of the Spark jobs (default: "
                   "%s/pyspark-V, V the %s of hadoop-hdfs-rdma/pom.xml, "
                   "as dev-support/pyspark.sh unpacks it)"
                   % (CACHE, VERSION_PROPERTY))


def check_spark_args(ap, a):
    """Their values; without --apps, none of them. With --conf (or the
    self-test) the profiles leave the Spark jobs out and refuse them when
    asked for: their checks read the embedded clusters' configuration."""
    given = [o for o in ("app_spark_tasks", "app_spark_sizes", "pyspark")
             if o in a.given]
    if not a.apps:
        if given:
            ap.error("--%s needs --apps" % given[0].replace("_", "-"))
        return
    if a.conf or a.conf_self_test:
        if "app_spark_tasks" in a.given and a.app_spark_tasks:
            ap.error("--apps --conf: the Spark jobs (spark-*) run on the "
                     "embedded clusters only; leave them out with "
                     "--app-spark-tasks ''")
        a.app_spark_tasks = []
    if min(a.app_spark_tasks + [1]) < 1 or min(
            a.app_spark_sizes + [MiB]) < MiB:
        ap.error("--app-spark-tasks: at least 1; --app-spark-sizes: at "
                 "least 1M")
    if a.pyspark:
        a.pyspark = os.path.abspath(a.pyspark)


class PySpark:
    """An unpacked pyspark: its SPARK_HOME (bin/spark-submit, jars/), the
    Python path of its pyspark and py4j, and the Hadoop release of its
    own client (hadoop-client-api's common-version-info)."""

    def __init__(self, root):
        self.root = root
        self.home = next((os.path.join(root, sub) for sub in
                          ("deps", "pyspark")
                          if os.path.isfile(os.path.join(
                              root, sub, "bin", "spark-submit"))), None)
        if self.home is None:
            raise HarnessError("no pyspark in %s (no deps/bin/spark-submit):"
                               " run dev-support/pyspark.sh" % root)
        lib = os.path.join(root, "lib")
        zips = sorted(os.path.join(lib, f) for f in os.listdir(lib)
                      if f.endswith(".zip")) if os.path.isdir(lib) else []
        if not any(os.path.basename(z) == "pyspark.zip" for z in zips):
            # An installed package: pyspark itself is the home's parent.
            zips = [os.path.dirname(self.home)]
        self.python_path = ":".join(zips)
        jars = os.path.join(self.home, "jars")
        api = [f for f in os.listdir(jars)
               if re.fullmatch(r"hadoop-client-api-.*\.jar", f)]
        if len(api) != 1:
            raise HarnessError("%s: %d hadoop-client-api jars, not one"
                               % (jars, len(api)))
        self.hadoop = jar_version(os.path.join(jars, api[0]))
        self.spark = next((f[len("spark-core_2.13-"):-len(".jar")]
                           for f in os.listdir(jars)
                           if f.startswith("spark-core_2.13-")), None)


def jar_version(jar):
    """The version of common-version-info.properties in a Hadoop jar."""
    with zipfile.ZipFile(jar) as z:
        text = z.read("common-version-info.properties").decode()
    m = re.search(r"^version=(\S+)", text, re.M)
    if not m:
        raise HarnessError("%s: no version in common-version-info" % jar)
    return m.group(1)


def pom_version(pom=POM):
    """The pyspark version the build names (VERSION_PROPERTY)."""
    with open(pom) as f:
        m = re.search(r"<%s>([^<]+)</%s>" % (re.escape(VERSION_PROPERTY),
                                             re.escape(VERSION_PROPERTY)),
                      f.read())
    if not m:
        raise HarnessError("no %s in %s" % (VERSION_PROPERTY, pom))
    return m.group(1).strip()


def agent_releases(dropin):
    """The Hadoop releases whose client classes the drop-in jar carries
    (hdfs-rdma-patched/groups.properties)."""
    with zipfile.ZipFile(dropin) as z:
        text = z.read("hdfs-rdma-patched/groups.properties").decode()
    m = re.search(r"^releases\s*[=:]\s*(.*)$", text, re.M)
    return m.group(1).split() if m else []


def preflight(bench):
    """Before any cluster starts, when the run has Spark jobs: the
    pyspark (bench.pyspark), and the drop-in jar carrying its Hadoop
    release (else the agent would leave its client stock: the jar and
    ucx systems would measure TCP)."""
    if not any(x.kind == "spark" for x in bench.apps):
        return
    root = bench.args.pyspark or os.path.join(
        os.path.expanduser(CACHE), "pyspark-" + pom_version())
    bench.pyspark = PySpark(root)
    from .systems import built_dropin
    dropin = built_dropin()
    if dropin and bench.pyspark.hadoop not in agent_releases(dropin):
        raise HarnessError("pyspark %s has Hadoop %s's client, which the "
                           "drop-in jar %s does not carry" % (
                               root, bench.pyspark.hadoop, dropin))


def heap_mib(app):
    """The driver's -Xmx in MiB for `app` (HEAP_*)."""
    data = app.threads * app.files * app.size
    return max(HEAP_MIN_MIB, HEAP_PER_BYTE * data // MiB + HEAP_BASE_MIB)


def hadoop_conf(client):
    """The spark.hadoop.* settings of a system's client: its UCX switch
    and its generic -D options (the UCX system's forced distribution)."""
    out = []
    if client.rdma is not None:
        out.append("spark.hadoop.dfs.client.rdma.enabled=%s"
                   % str(client.rdma).lower())
    g = client.generic
    for flag, kv in zip(g[::2], g[1::2]):
        if flag == "-D":
            out.append("spark.hadoop." + kv)
    return out


def submit_argv(pyspark, client, app, hdfs_dir, events, local, stats,
                jvm_props=()):
    """spark-submit's command line for one run of `app` by `client`'s
    system; `stats`: the agent's totals file (agent only)."""
    opts = ["-Djava.net.preferIPv4Stack=true"]
    if client.agent:
        opts += ["-javaagent:" + client.agent,
                 "-Dhdfsrdma.stats.file=" + stats]
    opts += list(client.opts) + list(jvm_props)
    conf = ["spark.driver.extraJavaOptions=" + " ".join(opts),
            "spark.ui.enabled=false", "spark.eventLog.enabled=true",
            "spark.eventLog.dir=file://" + events,
            "spark.eventLog.compress=false",
            "spark.eventLog.rolling.enabled=false", "spark.local.dir=" + local,
            "spark.hadoop.dfs.replication=%d" % app.rep] + hadoop_conf(client)
    argv = ["bash", os.path.join(pyspark.home, "bin", "spark-submit"),
            "--master", "local[%d]" % app.threads, "--driver-memory",
            "%dm" % heap_mib(app), "--name", "hdfsrdma-bench-" + app.name]
    for c in conf:
        argv += ["--conf", c]
    return argv + [JOB, "--dir", hdfs_dir, "--tasks", str(app.threads),
                   "--size", str(app.size), "--rep", str(app.rep)]


def submit_env(pyspark, client, java):
    """spark-submit's environment: the pyspark as SPARK_HOME, the
    system's configuration directory as HADOOP_CONF_DIR, this Python for
    the job, the harness's java."""
    env = dict(os.environ)
    env.update(SPARK_HOME=pyspark.home, HADOOP_CONF_DIR=client.conf_dir,
               SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=pyspark.python_path)
    if java and os.path.isabs(java):
        env["JAVA_HOME"] = os.path.dirname(os.path.dirname(
            os.path.realpath(java)))
    env.pop("SPARK_CONF_DIR", None)
    return env


def spark_batch(bench, system, app, run, jar=None, jvm_props=(),
                tag_prefix=""):
    """One run of a Spark workload on `system`: the job submitted, its
    write stage read from the event log, its files checked and deleted;
    the run's row. `jar` (the AppWorkload jar) is not used."""
    c = bench.cluster_of[system]
    client = bench.clients[system]
    tag, base, hdfs_dir = batch_names(bench, c, system, app, run,
                                      tag_prefix)
    local = os.path.join(bench.work, "spark", tag)
    events = base + "-events"
    for d in (local, events):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    job = dict(log=base + ".log", stats=base + ".ucx")
    argv = submit_argv(bench.pyspark, client, app, hdfs_dir, events, local,
                       job["stats"], jvm_props)
    before_ctr = c.dn_counters()
    before_dn, before_nn = c.dn_cpu(), c.nn_cpu()
    job["proc"] = bench.procs.spawn(
        argv, job["log"], env=submit_env(bench.pyspark, client, bench.java),
        cwd=local, name="%s %s" % (system, app.name))
    done = bench.procs.wait_all([job["proc"]], timeout_of(app),
                                bench.cluster_pids)
    after_dn, after_nn = c.dn_cpu(), c.nn_cpu()
    if c.metrics_lag:
        time.sleep(c.metrics_lag)
    _, rc, ru = done[job["proc"].pid]
    with open(job["log"], errors="replace") as f:
        text = f.read()
    result, errors = parse_result(text)
    where = "%s %s run %d" % (system, app.name, run)
    if rc != 0 or result is None or result.get("status") != "ok":
        raise HarnessError("%s: the Spark job failed (rc %d)%s; see %s" % (
            where, rc, ": " + errors[0] if errors else "", job["log"]))
    stage = spark_events.phase_figures(spark_events.load(events), "write")
    if stage is None:
        raise HarnessError("%s: no completed write stage in Spark's event "
                           "log %s" % (where, events))
    job["result"] = result
    job["client_stats"] = ucx_counters.read_stats(job["stats"])
    after_ctr = c.dn_counters()
    c.delete(hdfs_dir)
    shutil.rmtree(local, ignore_errors=True)
    delta = {k: after_ctr[k] - before_ctr.get(k, 0) for k in after_ctr}
    row = dict(workload=app.name, kind=app.kind, system=system, run=run)
    row.update(spark_figures(result, stage))
    # The driver JVM's children (the job's Python) count in its rusage.
    row.update(client_cpu_s=round(ru.ru_utime + ru.ru_stime, 3),
               dn_cpu_s=diff(after_dn, before_dn),
               nn_cpu_s=diff(after_nn, before_nn),
               verified_bytes=result["verified_bytes"],
               spark_hadoop=bench.pyspark.hadoop)
    check_stage(bench, where, app, stage, result)
    check_agent(bench, system, where, text, bench.pyspark.hadoop)
    row.update(check_carried(bench, system, app, [job], delta))
    if bench.is_ucx(system):
        row.update(ucx_detail([job], delta))
    row["lat_files"] = ""
    return row


def check_stage(bench, where, app, stage, result):
    """The write stage ran one task per file, none failed, and its output
    metrics counted the files' bytes (a difference is a warning)."""
    if stage["tasks"] != app.threads or stage["failed_stages"] or \
            stage["stages"] != 1:
        bench.fail("%s: the write ran %d stage(s) of %d successful tasks "
                   "(%d failed), not one of %d" % (
                       where, stage["stages"], stage["tasks"],
                       stage["failed_stages"], app.threads))
    if stage["bytes_written"] != result["measured_bytes"]:
        bench.note("%s: the write stage's output metrics count %d bytes, "
                   "the Parquet files have %d" % (
                       where, stage["bytes_written"],
                       result["measured_bytes"]))


def check_agent(bench, system, where, text, hadoop):
    """The agent replaced the Spark's Hadoop client classes in the driver
    of a jar or ucx run, and was not there in a stock run; a miss fails
    the run."""
    line = "%s Hadoop %s's" % (AGENT_LINE, hadoop)
    present = AGENT_LINE in text
    if system == "stock" and present:
        bench.fail("%s: the stock driver ran with the agent" % where)
    elif system != "stock" and line not in text:
        bench.fail("%s: the driver's log lacks the agent's line (%r): its "
                   "Hadoop client was not the agent's" % (where, line))
