"""The application-shaped workloads of --apps: which ones a run has (their
names, from the options, scaled and selected), what one client JVM of
org.hdfsrdma.hadoop.bench.AppWorkload reports (its APP-RESULT line and
its latency file), and the figures of one run of a workload on one
system. Running them is app_runs.py's; their summary app_report.py's.

Three kinds, each run by long-lived client JVMs rather than a JVM per
file as the put sweep's FsShell:

- writer: one JVM writes N files of SIZE at replication R, one after the
  other (writer-1M-r3: 1000 x 1 MiB); throughput and per-file
  create-to-close latency.
- wal: one JVM appends records of SIZE to one file at replication 3 and
  calls hflush (wal-1K-r3) or hsync (wal-hsync-1K-r3) after each, for D
  seconds; T such logs at once in one JVM, T threads (wal8-1K-r3);
  latency per record (write + flush) and records/s.
- writers: N JVMs at once, each writing F files of SIZE at replication 3
  (writers-4x512M-r3); aggregate throughput over the span from the first
  JVM's start to the last one's end of its measured phase.
- threads: one JVM of N writer threads started together, each writing F
  files of SIZE of its own at replication R (threads-8x128M-r3); aggregate
  throughput over the span from the first create to the last close, and
  per-file latency over every thread's files. Its own kind: a JVM of
  several streams at once, not the long-lived writer the targets judge.
- mixed: one JVM of N writer threads (as threads, at replication 3) and
  one hflush log of RECORD records beside them, appending from the
  writers' start to their end (mixed-8x128M-1K-r3): the writers' aggregate
  throughput, and the log's latency per record and records/s while bulk
  writes run, as a region server's WAL beside its flushes.
- dfsio: Hadoop's TestDFSIO write as a MapReduce job on YARN, N map
  tasks (each its own JVM) writing one file of SIZE each at replication 3
  (dfsio-4x1G); the throughput and average IO rate TestDFSIO reports.
  One JVM (org.hdfsrdma.hadoop.bench.DfsioOnYarn) runs the YARN cluster
  and submits the job; app_dfsio.py runs it.
- spark: one Spark driver JVM of PySpark from PyPI, local[N], whose N
  tasks each write one Parquet file of about SIZE at replication 3
  (spark-8x128M-r3): the write stage's time from Spark's event log, and
  MB/s over it. spark_job.py is the job, app_spark.py runs it.
- idle: one JVM writes its warm-up files at replication 3 (so it has
  connected to the DataNodes and, with UCX, started UCX), then keeps its
  FileSystem open without a call for D seconds (idle-r3); the cores its
  process and the DataNodes use meanwhile, which the harness reads from
  /proc.
"""

import argparse
import array
import collections
import fnmatch
import math
import sys

from .stats import percentile
from .units import MiB, human, parse_size

WORKLOAD_CLASS = "org.hdfsrdma.hadoop.bench.AppWorkload"
WORKLOAD_PACKAGE = "org/hdfsrdma/hadoop/bench/"
KINDS = ("writer", "wal", "writers", "threads", "mixed", "dfsio", "spark",
         "idle")
DFSIO_CLASS = "org.hdfsrdma.hadoop.bench.DfsioOnYarn"
# Map tasks of a TestDFSIO job that run at once: two cores hold four map
# JVMs busy writing; more only queue for the CPU and the JVMs' start-up.
DFSIO_SLOTS = 4
LOG_REP = 3        # the logs and the concurrent writers: replication 3
# Before a writer's measured phase: files of at most WARMUP_SIZE, about
# WARMUP_BYTES of them (2 to 32 files); a log's records for at most
# WARMUP_SECONDS.
WARMUP_SIZE = 16 * MiB
WARMUP_BYTES = 32 * MiB
WARMUP_SECONDS = 2.0
# The idle client's warm-up files: two of IDLE_WARMUP_SIZE.
IDLE_WARMUP_SIZE = 16 * MiB
# The most a mixed JVM's log may run (its latency slots): its writers
# must end before.
MIXED_MAX_SECONDS = 120.0

# One workload: kind (KINDS); size: the file size (writer, writers,
# threads, mixed, spark) or the record size (wal); rep; files: per JVM
# (writer, writers) or per thread (threads, mixed) or task (spark);
# seconds (wal, idle; mixed: the log's most); threads: logs (wal) or
# writer threads (threads, mixed) in the JVM, or Spark tasks (spark);
# jvms (writers); sync: hflush or hsync (wal, mixed); record: the log's
# record size (mixed).
App = collections.namedtuple(
    "App", "name kind size rep files seconds threads jvms sync record",
    defaults=(None,))


def writer(size, rep, files):
    return App("writer-%s-r%d" % (human(size), rep), "writer", size, rep,
               files, None, 1, 1, None)


def wal(record, seconds, sync="hflush", threads=1):
    if threads > 1:
        name = "wal%d-%s-r%d" % (threads, human(record), LOG_REP)
    else:
        name = "wal%s-%s-r%d" % ("-hsync" if sync == "hsync" else "",
                                 human(record), LOG_REP)
    return App(name, "wal", record, LOG_REP, None, seconds, threads, 1,
               sync)


def writers(jvms, size, files):
    return App("writers-%dx%s-r%d" % (jvms, human(size), LOG_REP),
               "writers", size, LOG_REP, files, None, 1, jvms, None)


def threads(n, size, files, rep):
    return App("threads-%dx%s-r%d" % (n, human(size), rep), "threads", size,
               rep, files, None, n, 1, None)


def mixed(n, size, files, record):
    return App("mixed-%dx%s-%s-r%d" % (n, human(size), human(record),
                                       LOG_REP), "mixed", size, LOG_REP,
               files, MIXED_MAX_SECONDS, n, 1, "hflush", record)


def dfsio(maps, size):
    return App("dfsio-%dx%s" % (maps, human(size)), "dfsio", size, LOG_REP,
               maps, None, 1, 1, None)


def spark(tasks, size):
    return App("spark-%dx%s-r%d" % (tasks, human(size), LOG_REP), "spark",
               size, LOG_REP, 1, None, tasks, 1, None)


def idle(seconds):
    return App("idle-r%d" % LOG_REP, "idle", IDLE_WARMUP_SIZE, LOG_REP,
               None, seconds, 1, 1, None)


def scaled(n, factor):
    """A count scaled by --apps-scale, at least 1."""
    return max(1, int(round(n * factor)))


def workloads(a):
    """Every workload the options describe, in the order a run measures
    them (each file count and duration scaled by a.apps_scale): the
    writer at each replication and size, the hflush logs, the hsync logs,
    the log of a.wal_threads threads, the concurrent writers, the writer
    threads of one JVM at each replication, size and thread count, the
    mixed JVM (a.app_mixed writer threads of the largest thread size
    beside a log of the smallest record), the TestDFSIO jobs, the Spark
    jobs (each size, each task count; sizes scaled as TestDFSIO's), the
    idle client."""
    f = a.apps_scale
    out = [writer(size, rep, scaled(n, f)) for rep in a.app_reps
           for size, n in a.app_files]
    seconds = max(1.0, a.wal_seconds * f)
    for sync in ("hflush", "hsync"):
        out += [wal(r, seconds, sync) for r in a.wal_records]
    if a.wal_threads > 1 and a.wal_records:
        out.append(wal(min(a.wal_records), seconds, "hflush",
                       a.wal_threads))
    out += [writers(n, a.app_writer_size, scaled(a.app_writer_files, f))
            for n in a.app_writers]
    out += [threads(n, size, scaled(a.app_thread_files, f), rep)
            for rep in a.app_reps for size in a.app_thread_sizes
            for n in a.app_threads]
    if a.app_mixed > 0 and a.app_thread_sizes and a.wal_records:
        out.append(mixed(a.app_mixed, max(a.app_thread_sizes),
                         scaled(a.app_thread_files, f), min(a.wal_records)))
    out += [dfsio(n, scaled_mib(size, f)) for n, size in a.dfsio]
    out += [spark(n, scaled_mib(size, f)) for size in a.app_spark_sizes
            for n in a.app_spark_tasks]
    if a.idle_seconds > 0:
        out.append(idle(max(1.0, a.idle_seconds * f)))
    return out


def scaled_mib(size, factor):
    """A TestDFSIO or Spark file size scaled by --apps-scale: whole MiB
    (TestDFSIO's -size unit), at least 1."""
    return max(1, int(round(size * factor / MiB))) * MiB


def select(apps, patterns):
    """The workloads whose name matches one of `patterns` (names or shell
    patterns, e.g. wal-*), in their order; raises ValueError naming any
    pattern that matches none (a typo would otherwise measure nothing)."""
    if not patterns:
        return list(apps)
    unmatched = [p for p in patterns
                 if not any(fnmatch.fnmatchcase(x.name, p) for x in apps)]
    if unmatched:
        raise ValueError("--apps-only: %s match no workload of %s" % (
            ", ".join(unmatched), ", ".join(x.name for x in apps)))
    return [x for x in apps
            if any(fnmatch.fnmatchcase(x.name, p) for p in patterns)]


def parse_files(text):
    """--app-files: SIZE:COUNT,... e.g. 1M:1000,16M:100,128M:16."""
    out = []
    for item in text.split(","):
        if not item.strip():
            continue
        size, sep, count = item.partition(":")
        try:
            out.append((parse_size(size), int(count)))
        except (ValueError, argparse.ArgumentTypeError):
            raise argparse.ArgumentTypeError(
                "bad SIZE:COUNT: %r (e.g. 1M:1000)" % item)
        if not sep or out[-1][1] < 1:
            raise argparse.ArgumentTypeError(
                "bad SIZE:COUNT: %r (e.g. 1M:1000)" % item)
    return out


def parse_dfsio(text):
    """--dfsio: MAPSxSIZE,... e.g. 4x1G,16x256M (SIZE in whole MiB)."""
    out = []
    for item in text.split(","):
        if not item.strip():
            continue
        maps, sep, size = item.partition("x")
        try:
            out.append((int(maps), parse_size(size)))
        except (ValueError, argparse.ArgumentTypeError):
            raise argparse.ArgumentTypeError(
                "bad MAPSxSIZE: %r (e.g. 4x1G)" % item)
        if not sep or out[-1][0] < 1 or out[-1][1] < MiB or \
                out[-1][1] % MiB:
            raise argparse.ArgumentTypeError(
                "bad MAPSxSIZE: %r (at least 1 map, whole MiB)" % item)
    return out


def warmup_args(app):
    """The AppWorkload options of a workload's warm-up."""
    if app.kind == "wal":
        # A file before the logs, so that no log is the JVM's first stream,
        # whose first block --defer-start on keeps on TCP.
        return ["-warmup-files", "1", "-warmup-size", str(MiB),
                "-warmup-seconds", "%g" % min(WARMUP_SECONDS, app.seconds)]
    if app.kind == "idle":
        return ["-warmup-files", "2", "-warmup-size", str(app.size)]
    size = min(app.size, WARMUP_SIZE)
    files = max(2, min(32, WARMUP_BYTES // size))
    out = ["-warmup-files", str(files), "-warmup-size", str(size)]
    if app.kind == "mixed":
        out += ["-warmup-seconds", "%g" % WARMUP_SECONDS]
    return out


def workload_args(app, hdfs_dir, lat_file):
    """AppWorkload's arguments for one JVM of `app` (after the generic
    options): its mode, HDFS directory, sizes, warm-up and latency file;
    DfsioOnYarn's (`lat_file`: the YARN cluster's name) for dfsio."""
    if app.kind == "dfsio":
        return ["-maps", str(app.files), "-size", str(app.size), "-dir",
                hdfs_dir, "-slots", str(DFSIO_SLOTS), "-name", lat_file]
    if app.kind == "wal":
        args = ["wal", "-dir", hdfs_dir, "-rep", str(app.rep),
                "-record", str(app.size), "-sync", app.sync,
                "-threads", str(app.threads), "-seconds",
                "%g" % app.seconds]
    elif app.kind == "idle":
        args = ["idle", "-dir", hdfs_dir, "-rep", str(app.rep),
                "-seconds", "%g" % app.seconds]
    elif app.kind == "mixed":
        args = ["mixed", "-dir", hdfs_dir, "-rep", str(app.rep),
                "-threads", str(app.threads), "-files", str(app.files),
                "-size", str(app.size), "-record", str(app.record),
                "-seconds", "%g" % app.seconds]
    else:
        args = ["writer", "-dir", hdfs_dir, "-rep", str(app.rep),
                "-files", str(app.files), "-size", str(app.size)]
        if app.kind == "threads":
            args += ["-threads", str(app.threads)]
    return args + warmup_args(app) + ["-lat-file", lat_file]


# -- what a JVM reports ----------------------------------------------------

RESULT_KEYS = ("start_ns", "end_ns", "measured_bytes", "measured_files",
               "records", "samples", "bytes", "blocks", "verified_bytes")


def parse_result(text):
    """The last APP-RESULT line of a JVM's output as a dict (None where
    there is none or it lacks a key), and its APP-ERROR lines."""
    result = None
    errors = []
    for line in text.splitlines():
        if line.startswith("APP-RESULT "):
            result = {}
            for tok in line.split()[1:]:
                k, sep, v = tok.partition("=")
                if sep:
                    result[k] = int(v) if v.lstrip("-").isdigit() else v
        elif line.startswith("APP-ERROR"):
            errors.append(line.strip())
    if result is not None and any(k not in result for k in RESULT_KEYS):
        result = None
    return result, errors


def read_latencies(path):
    """A latency file: big-endian 64-bit nanoseconds, as an array('q')."""
    lat = array.array("q")
    with open(path, "rb") as f:
        lat.frombytes(f.read())
    if sys.byteorder == "little":
        lat.byteswap()
    return lat


def latency_ms(lat):
    """p50, p99 and p99.9 in ms of latencies in ns (nearest rank; None
    for no latencies)."""
    s = sorted(lat)
    return tuple(None if not s else percentile(s, q) / 1e6
                 for q in (0.50, 0.99, 0.999))


def run_figures(app, results, lat):
    """The figures of one run of `app` from its JVMs' APP-RESULT dicts
    and all their latencies (ns): measured span (first start to last
    end, one clock for every JVM), throughput in MB/s (10^6 bytes),
    percentiles of the latencies in ms (p99.9 for logs only: a writer's
    files are too few), records/s for logs. A mixed JVM's throughput is
    its writers', its latencies and records its log's."""
    span_ns = max(r["end_ns"] for r in results) - \
        min(r["start_ns"] for r in results)
    measured = sum(r["measured_bytes"] for r in results)
    secs = span_ns / 1e9
    if app.kind == "dfsio":
        return dfsio_figures(results[0], secs, measured)
    p50, p99, p999 = latency_ms(lat)
    records = sum(r["records"] for r in results)
    logs = app.kind in ("wal", "mixed")
    out = dict(elapsed_s=round(secs, 4),
               throughput_mb_s=round(measured / 1e6 / secs, 3)
               if secs > 0 and app.kind != "idle" else None,
               p50_ms=round3(p50), p99_ms=round3(p99),
               p999_ms=round3(p999) if logs else None,
               records=records if logs else None,
               records_per_s=round(records / secs, 1)
               if logs and secs > 0 else None,
               files=sum(r["measured_files"] for r in results),
               measured_bytes=measured, samples=len(lat))
    return out


# TestDFSIO's mb/sec are MiB (2^20 bytes) per second; apps.csv's MB/s are
# 10^6 bytes per second.
MIB_AS_MB = MiB / 1e6


def dfsio_figures(result, secs, measured):
    """The figures of a TestDFSIO run from DfsioOnYarn's APP-RESULT:
    TestDFSIO's throughput (all bytes over the sum of the maps' write
    times) as throughput_mb_s, its average IO rate (the mean of the maps'
    rates), both in MB/s, and the job's wall time."""
    def mb(key):
        return round(float(result[key]) * MIB_AS_MB, 3)
    return dict(elapsed_s=round(secs, 4),
                throughput_mb_s=mb("dfsio_throughput"),
                avg_io_rate_mb_s=mb("dfsio_avg_io_rate"),
                dfsio_exec_s=float(result["dfsio_exec_s"]),
                p50_ms=None, p99_ms=None, p999_ms=None, records=None,
                records_per_s=None, files=result["measured_files"],
                measured_bytes=measured, samples=0)


def spark_figures(result, stage):
    """The figures of a Spark run from spark_job.py's APP-RESULT and its
    write stage (spark_events.phase_figures): the stage's seconds
    (write_stage_s, the time the targets judge), MB/s of the Parquet
    files' bytes over it, the write job's seconds as the job timed it
    (df.write.parquet, job commit included; elapsed_s too), the median
    and slowest task."""
    job_s = (result["end_ns"] - result["start_ns"]) / 1e9
    stage_s = stage["stage_s"]
    measured = result["measured_bytes"]
    return dict(elapsed_s=round(job_s, 4), write_stage_s=stage_s,
                write_job_s=round(job_s, 3),
                throughput_mb_s=round(measured / 1e6 / stage_s, 3)
                if stage_s > 0 else None,
                task_p50_s=stage["task_p50_s"],
                task_max_s=stage["task_max_s"],
                stage_tasks=stage["tasks"],
                stage_bytes_written=stage["bytes_written"],
                spark_rows=result["records"],
                p50_ms=None, p99_ms=None, p999_ms=None, records=None,
                records_per_s=None, files=result["measured_files"],
                measured_bytes=measured, samples=0)


def round3(v):
    return None if v is None else round(v, 4)


def cdf_points(sorted_lat, points=400):
    """(ms, fraction) pairs of an empirical CDF of sorted latencies (ns),
    at most `points` of them, the tail (p99, p99.9, max) included."""
    n = len(sorted_lat)
    if not n:
        return []
    idx = sorted({min(n - 1, int(math.floor(i * (n - 1) / (points - 1))))
                  for i in range(points)} |
                 {min(n - 1, max(0, int(math.ceil(q * n)) - 1))
                  for q in (0.99, 0.999)})
    return [(sorted_lat[i] / 1e6, (i + 1) / n) for i in idx]
