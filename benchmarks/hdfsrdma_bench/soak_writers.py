"""The soak's load: the long-lived client JVMs (Writer, each running
SoakWriter with several writer threads, fanning out and chaining in turn)
and the short-lived ones beside them (Churn), with how each one's end is
read from its log: SOAK progress lines, SOAK-END, SOAK-ERROR and
SOAK-MISMATCH."""

import os

from . import ucx_counters
from .soak_cluster import HEAP, soak_jvm_opts
from .units import MiB

WRITER_CLASS = "org.hdfsrdma.hadoop.soak.SoakWriter"
DISTRIBUTIONS = ("fan-out", "chain")
# The short-lived clients (--churn-seconds): threads, largest file, bytes
# kept before deleting the oldest, heap.
CHURN_THREADS = 2
CHURN_MAX_SIZE = 16 * MiB
CHURN_KEEP_BYTES = 64 * MiB
CHURN_HEAP = "256m"
# --executor: a Spark executor's tasks write files of this size and more
# (Parquet and ORC parts, shuffle-sized outputs), with the JVM's own
# pipeline shape.
EXECUTOR_MIN_SIZE = 16 * MiB
EXECUTOR_DISTRIBUTION = "auto"


class Writer:
    """One client JVM running SoakWriter."""

    def __init__(self, index, proc, log_path, distribution, name=None):
        self.index = index
        self.proc = proc
        self.log = log_path
        self.distribution = distribution
        self.name = name or "client%d" % (index + 1)

    def last(self, tag="SOAK"):
        """The writer's last progress line of `tag`, parsed ({} if none)."""
        line = None
        with open(self.log, errors="replace") as f:
            for text in f:
                if text.startswith(tag + " "):
                    line = text
        return ucx_counters.parse_stats(line) if line else {}

    def problems(self):
        """The writer's SOAK-ERROR and SOAK-MISMATCH lines."""
        with open(self.log, errors="replace") as f:
            return [t.rstrip() for t in f
                    if t.startswith(("SOAK-ERROR", "SOAK-MISMATCH"))]


def writer_argv(a, cluster, classpath, dropin, name, dist, threads,
                seconds, seed, max_size, keep_bytes, heap=HEAP,
                min_size=None):
    """The command line of a SoakWriter JVM writing under /soak/NAME."""
    return [cluster.java, "-Xmx" + heap,
            "-Djava.net.preferIPv4Stack=true"] \
        + soak_jvm_opts(cluster.root, heap) + [
            "-javaagent:" + dropin, "-cp", classpath, WRITER_CLASS,
            "-D", "dfs.client.rdma.enabled=true",
            "-D", "dfs.client.rdma.distribution=" + dist] + [
            arg for k, v in a.conf_pairs for arg in ("-D", k + "=" + v)] + [
            "-threads", str(threads), "-seconds", str(int(seconds)),
            "-dir", "/soak/" + name, "-seed", str(seed),
            "-max-size", str(max_size), "-keep-bytes", str(keep_bytes),
            "-interval-seconds", str(a.interval_seconds)] + (
            ["-min-size", str(min_size)] if min_size else [])


def start_writers(a, cluster, procs, cp, driver_classes, dropin, seconds):
    writers = []
    classpath = "%s:%s:%s" % (cluster.conf, driver_classes, cp)
    for i in range(a.jvms):
        dist = DISTRIBUTIONS[i % len(DISTRIBUTIONS)]
        name = "client%d" % (i + 1)
        argv = writer_argv(a, cluster, classpath, dropin, name, dist,
                           a.threads, seconds, i + 1, a.max_size,
                           a.keep_bytes)
        path = os.path.join(cluster.root, name + ".log")
        writers.append(Writer(i, procs.spawn(argv, path, name=name), path,
                              dist))
    if a.executor:
        i = a.jvms
        argv = writer_argv(a, cluster, classpath, dropin, "executor",
                           EXECUTOR_DISTRIBUTION, a.executor, seconds, i + 1,
                           max(a.max_size, EXECUTOR_MIN_SIZE), a.keep_bytes,
                           min_size=EXECUTOR_MIN_SIZE)
        path = os.path.join(cluster.root, "executor.log")
        writers.append(Writer(i, procs.spawn(argv, path, name="executor"),
                              path, EXECUTOR_DISTRIBUTION, name="executor"))
    return writers


class Churn:
    """Short-lived client JVMs beside the long-lived writers, one after
    another, as a YARN cluster's tasks come and go: each writes and reads
    back for --churn-seconds with CHURN_THREADS threads, smaller files
    (at most CHURN_MAX_SIZE), alternating fan-out and chain, and exits;
    its end is checked as a writer's (status ok, bytes verified, no
    error or mismatch) and its files are then deleted. What the
    DataNodes keep per client (connections, mapped pool slabs, sessions)
    must go with it: the growth rule judges the DataNodes' samples with
    clients coming and going. Not sampled itself: it lives for less
    than a sample's interval."""

    def __init__(self, a, cluster, procs, classpath, dropin):
        self.a = a
        self.cluster = cluster
        self.procs = procs
        self.classpath = classpath
        self.dropin = dropin
        self.current = None
        self.started = 0
        self.ended = 0
        self.verified = 0
        self.failures = []

    def poll(self, remaining):
        """Collects the JVM that ended; starts the next one while more
        than its lifetime (and an allowance to finish) remains."""
        if self.current is not None and not self.procs.alive(
                self.current.proc):
            self.collect()
        if self.current is None and remaining > self.a.churn_seconds + 10:
            self.start()

    def start(self):
        i = self.started
        name = "churn%d" % (i + 1)
        dist = DISTRIBUTIONS[i % len(DISTRIBUTIONS)]
        argv = writer_argv(self.a, self.cluster, self.classpath, self.dropin,
                           name, dist, CHURN_THREADS, self.a.churn_seconds,
                           1000 + i, min(self.a.max_size, CHURN_MAX_SIZE),
                           CHURN_KEEP_BYTES, heap=CHURN_HEAP)
        path = os.path.join(self.cluster.root, name + ".log")
        self.current = Writer(i, self.procs.spawn(argv, path, name=name),
                              path, dist)
        self.current.name = name
        self.started += 1

    def collect(self):
        w, self.current = self.current, None
        end = w.last("SOAK-END")
        if w.proc.returncode != 0 or end.get("status") != "ok":
            self.failures.append("%s exited with %s (%s); see %s" % (
                w.name, w.proc.returncode, end.get("status", "no SOAK-END"),
                w.log))
        elif not end.get("verified"):
            self.failures.append("%s verified no bytes; see %s" % (
                w.name, w.log))
        self.failures.extend("%s: %s" % (w.name, line)
                             for line in w.problems()[:5])
        self.verified += end.get("verified") or 0
        self.ended += 1
        self.cluster.delete("/soak/" + w.name)
