"""The soak test (dev-support/soak.sh): a NameNode and four DataNodes
(clusters.Cluster, each its own JVM on a Hadoop release's stock jars,
--hadoop, 3.4.2 by default, with the drop-in jar as agent, UCX on) and
long-lived client JVMs (org.hdfsrdma.hadoop.soak.SoakWriter, several writer
threads each; the first JVM fans out, the second chains, and so on
alternating), writing, reading back and deleting for --minutes, and beside
them short-lived client JVMs one after another (Churn), so that the DataNodes
see clients come and go. Every --interval-seconds it samples every JVM, prints
a table and at the end writes soak.csv, growth.csv and soak.png into --out. It
fails on any byte that differs, any writer error, any JVM that died or left an
hs_err file, a DataNode session still open after the writers stopped, or a
quantity still growing after warm-up.

A module per concern; this one has the options and a run from start to
end (the cluster up, the load started, the samples taken, the verdicts
collected and the results written):

  soak_cluster   the NameNode and DataNodes on a Hadoop release's jars, and
                 every JVM's options
  soak_writers   the long-lived client JVMs and the short-lived ones
  soak_sampling  every JVM's quantities, peaks of each second and samples
  soak_bounds    the growth rule, each quantity's bound and the reason for
                 it, and what the DataNodes must have let go of once the
                 writers stopped
  soak_report    the table of each sample, and soak.csv, growth.csv and
                 soak.png at the end"""

import argparse
import os
import re
import shutil
import sys
import tempfile
import time

from .clusters import DATANODES
from .harness import DRIVER_CLASSES, REPO, HarnessError, log, warn
from .processes import Procs, on_signals
from .soak_bounds import (DRAIN_SECONDS, DRAIN_TIMEOUT, drain_failures,
                          drained, judge_growth)
from .soak_cluster import SoakCluster, boot
from .soak_report import table, write_results, writer_summary
from .soak_sampling import Sampler
from .soak_writers import (CHURN_THREADS, EXECUTOR_MIN_SIZE, WRITER_CLASS,
                           Churn, start_writers)
from .systems import DEFAULT_RELEASE, built_dropin, hadoop_classpath
from .units import MiB


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="dev-support/soak.sh",
        description="Long-running write/read-back soak of the UCX write "
        "path: 1 NameNode + 4 DataNodes + client JVMs, every JVM sampled "
        "for growth.")
    ap.add_argument("--minutes", type=float, required=True,
                    help="how long the writers write")
    ap.add_argument("--out", default=os.path.join(REPO, "benchmarks",
                                                  "results", "soak"),
                    help="CSV files and the plot (default %(default)s)")
    ap.add_argument("--writers", default="2:8", metavar="JVMS:THREADS",
                    help="client JVMs and writer threads each (default "
                    "%(default)s)")
    ap.add_argument("--executor", type=int, default=0, metavar="THREADS",
                    help="besides them, one long-lived client JVM shaped "
                    "like a Spark executor: THREADS writer threads, files "
                    "of %d MiB up to the largest, the JVM's own (auto) "
                    "pipeline shape (default 0: none; e.g. 16)"
                    % (EXECUTOR_MIN_SIZE // MiB))
    ap.add_argument("--churn-seconds", type=float, default=20.0,
                    metavar="S", help="besides them, short-lived client "
                    "JVMs one after another, each writing for S seconds "
                    "and exiting, its files checked and deleted, so that "
                    "the DataNodes see clients come and go (default "
                    "%(default)s; 0: none)")
    ap.add_argument("--interval-seconds", type=float,
                    help="sample period (default: a tenth of the run, "
                    "between 5 and 60 s)")
    ap.add_argument("--max-size", type=int, metavar="BYTES",
                    help="largest file (default: 256 MiB, scaled down for "
                    "short runs: 8 MiB per minute rounded down to a power "
                    "of two, at least 4 MiB)")
    ap.add_argument("--keep-bytes", type=int, default=1 << 30,
                    metavar="BYTES", help="bytes each client JVM keeps on "
                    "HDFS before deleting its oldest files (default 1 GiB; "
                    "times replication on disk)")
    ap.add_argument("--work", help="work directory (default: a new "
                    "directory under /tmp)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory (logs, DataNode storage;"
                    " a failed run keeps its logs without this)")
    ap.add_argument("--block-state-log", action="store_true",
                    help="the NameNode logs every replica's state change "
                    "(Hadoop's BlockStateChange logger at DEBUG: replicas "
                    "added, marked corrupt, invalidated), to tell in which "
                    "order a block's reports arrived")
    ap.add_argument("--hadoop", default=DEFAULT_RELEASE, metavar="RELEASE",
                    help="the Hadoop release every JVM runs (one of "
                    "patches/releases.txt; default %(default)s)")
    ap.add_argument("--conf", action="append", default=[],
                    metavar="KEY=VALUE", help="a Hadoop property for every "
                    "JVM: in hdfs-site.xml, and on the clients' command "
                    "line after the soak's own (repeatable; e.g. "
                    "dfs.blockreport.intervalMsec=60000 for full block "
                    "reports under load, dfs.client.rdma.enabled=false for "
                    "Hadoop's own write path)")
    a = ap.parse_args(argv)
    a.conf_pairs = []
    for kv in a.conf:
        k, sep, v = kv.partition("=")
        if not sep or not k.strip():
            ap.error("--conf KEY=VALUE, not %r" % kv)
        a.conf_pairs.append((k.strip(), v))
    m = re.fullmatch(r"(\d+):(\d+)", a.writers)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        ap.error("--writers JVMS:THREADS, e.g. 2:8")
    a.jvms, a.threads = int(m.group(1)), int(m.group(2))
    if a.minutes <= 0:
        ap.error("--minutes must be positive")
    if a.executor < 0:
        ap.error("--executor must be 0 (none) or a thread count")
    if a.churn_seconds < 0:
        ap.error("--churn-seconds must be 0 (none) or positive")
    if a.interval_seconds is None:
        a.interval_seconds = min(60.0, max(5.0, a.minutes * 6.0))
    if a.minutes * 60 / a.interval_seconds < 5:
        ap.error("--interval-seconds %g gives fewer than 6 samples in %g "
                 "minutes: too few to tell growth from warm-up"
                 % (a.interval_seconds, a.minutes))
    if a.max_size is None:
        a.max_size = default_max_size(a.minutes)
    return a


def default_max_size(minutes):
    """256 MiB for runs of 32 minutes or more; shorter runs write 8 MiB per
    minute of run at most, rounded down to a power of two (>= 4 MiB), so a
    2-minute run still writes many files rather than a few large ones."""
    cap = max(4 * MiB, int(minutes * 8 * MiB))
    size = 4 * MiB
    while size * 2 <= min(cap, 256 * MiB):
        size *= 2
    return size


def keep_logs_only(work):
    """Deletes what a failed run's work directory holds but its logs (the
    JVMs' *.log and hs_err files): DataNode storage is gigabytes."""
    for name in os.listdir(work):
        path = os.path.join(work, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif not name.endswith(".log"):
            os.unlink(path)


# -- the run ---------------------------------------------------------------

def soak(a, procs, work, failures, rows):
    """Starts everything, writes and samples into `rows` (kept on a
    failure: what was sampled until then is reported)."""
    dropin = built_dropin()
    if not dropin or not os.path.exists(os.path.join(
            DRIVER_CLASSES, *WRITER_CLASS.split(".")) + ".class"):
        raise HarnessError("build first: mvn -o -pl hadoop-hdfs-rdma,"
                           "benchmarks/drivers -am -DskipTests package (the "
                           "drop-in jar and the soak's writer)")
    java = shutil.which("java")
    cp = hadoop_classpath(a.hadoop)
    cluster = SoakCluster("soak", work, java, cp, True, procs, agent=dropin)
    cluster.block_state_log = a.block_state_log
    cluster.extra_conf = a.conf_pairs
    cluster.write_conf()
    boot(cluster, procs)
    seconds = a.minutes * 60
    writers = start_writers(a, cluster, procs, cp, DRIVER_CLASSES, dropin,
                            seconds)
    log("%d client JVMs x %d writer threads (%s), files up to %d MiB, "
        "%g min, a sample every %g s; %s"
        % (a.jvms, a.threads, ", ".join(w.distribution for w in writers),
           a.max_size // MiB, a.minutes, a.interval_seconds,
           "a short-lived client JVM of %d threads at a time, %g s each"
           % (CHURN_THREADS, a.churn_seconds) if a.churn_seconds
           else "no short-lived clients"))
    if a.executor:
        log("and an executor-shaped client JVM: %d writer threads, files "
            "of %d-%d MiB" % (a.executor, EXECUTOR_MIN_SIZE // MiB,
                              max(a.max_size, EXECUTOR_MIN_SIZE) // MiB))
    churn = Churn(a, cluster, procs, "%s:%s:%s" % (
        cluster.conf, DRIVER_CLASSES, cp),
        dropin) if a.churn_seconds else None
    sampler = Sampler(cluster, writers)
    sampler.rows = rows
    t0 = time.monotonic()
    daemons = [cluster.nn] + cluster.dns
    n = int(seconds // a.interval_seconds)
    for i in range(n + 1):
        due = t0 + i * a.interval_seconds
        while time.monotonic() < due:
            dead = [p for p in daemons if not procs.alive(p)]
            if dead:
                raise HarnessError("cluster JVM(s) %s died; see %s/*.log" % (
                    ", ".join(str(p.pid) for p in dead), work))
            for w in writers:
                if not procs.alive(w.proc):
                    raise HarnessError(
                        "%s exited early (rc %s); see %s" % (
                            w.name, w.proc.returncode, w.log))
            if churn:
                churn.poll(seconds - (time.monotonic() - t0))
            sampler.tick()
            time.sleep(min(1.0, max(0.0, due - time.monotonic())))
        rows = sampler.sample(time.monotonic() - t0, str(i))
        print("\n[sample %d/%d, t=%.0f s]\n%s\n%s" % (
            i, n, time.monotonic() - t0, table(rows), writer_summary(rows)),
            flush=True)
    # The writers finish the operation they are in, print SOAK-END, exit;
    # so does the last short-lived client (one wait for all: it reaps
    # whichever exits first).
    last = [churn.current.proc] if churn and churn.current else []
    done = procs.wait_all([w.proc for w in writers] + last, 300,
                          cluster_pids={p.pid for p in daemons})
    for w in writers:
        rc = done[w.proc.pid][1]
        end = w.last("SOAK-END")
        if rc != 0 or end.get("status") != "ok":
            failures.append("%s exited with %s (%s); see %s" % (
                w.name, rc, end.get("status", "no SOAK-END"), w.log))
        for line in w.problems()[:5]:
            failures.append("%s: %s" % (w.name, line))
        if not end.get("verified"):
            failures.append("%s verified no bytes" % w.name)
    if churn:
        if churn.current is not None:
            churn.collect()
        failures.extend(churn.failures)
        log("short-lived clients: %d started, %d ended, %d MiB verified%s"
            % (churn.started, churn.ended, churn.verified // MiB,
               "" if churn.failures else ", every one ok"))
        if not churn.ended:
            failures.append("no short-lived client JVM ran to its end")
    # What is left once every writer stopped: no DataNode session open,
    # no block's thread or file, no socket more than allowed.
    sampler.jvms = sampler.jvms[:1 + DATANODES]
    sampler.writers = []
    stopped = time.monotonic()
    time.sleep(DRAIN_SECONDS)
    while time.monotonic() - stopped < DRAIN_TIMEOUT and not drained(
            [p.pid for p in cluster.dns]):
        time.sleep(0.5)
    rows = sampler.sample(time.monotonic() - t0, "drained")
    print("\n[writers stopped, %.0f s later]\n%s"
          % (time.monotonic() - stopped, table(rows)))
    failures.extend(drain_failures(sampler.rows, rows[1:]))
    # Settled counters now: bytes the DataNodes wrote that they did not
    # fetch over UCX came on Hadoop's socket path.
    fetched = sum(r.get("ucx_bytes") or 0 for r in rows[1:])
    written = sum(r.get("bytes_written") or 0 for r in rows[1:])
    log("DataNodes: %d MiB written, %d MiB of it fetched over UCX, %d MiB "
        "over TCP; block replicas %d over UCX, %d over TCP" % (
            written // MiB, fetched // MiB, max(0, written - fetched) // MiB,
            sum(r.get("blocks_ucx") or 0 for r in rows[1:]),
            sum(r.get("blocks_tcp") or 0 for r in rows[1:])))
    if clients_use_ucx(a) and not fetched:
        failures.append("the DataNodes fetched no bytes over UCX")
    if not clients_use_ucx(a) and fetched:
        failures.append("the clients' UCX path was off (the control), yet "
                        "the DataNodes fetched %d bytes over UCX" % fetched)


def clients_use_ucx(a):
    """False for the control: --conf dfs.client.rdma.enabled=false, every
    client on Hadoop's own write path against the same DataNodes, to tell
    growth of Hadoop's from growth of hdfs-rdma's."""
    values = [v.strip().lower() for k, v in a.conf_pairs
              if k == "dfs.client.rdma.enabled"]
    return not values or values[-1] != "false"


def main(argv):
    a = parse_args(argv)
    on_signals()
    work = a.work or tempfile.mkdtemp(prefix="hdfs-rdma-soak.")
    os.makedirs(work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    procs = Procs()
    failures = []
    rows = []
    rc = 0
    started = time.monotonic()
    log("soak: %g min, work in %s, results in %s" % (a.minutes, work, a.out))
    try:
        soak(a, procs, work, failures, rows)
    except HarnessError as e:
        failures.append(str(e))
    except KeyboardInterrupt:
        warn("interrupted")
        rc = 130
    except Exception as e:
        import traceback
        traceback.print_exc()
        failures.append("soak harness error: %r" % e)
    finally:
        procs.stop_all()
    for f in sorted(os.listdir(work)):
        if f.startswith("hs_err"):
            failures.append("a JVM crashed: %s" % os.path.join(work, f))
    grows = judge_growth(rows, bool(a.churn_seconds)) if rows else []
    for g in grows:
        if g["verdict"] == "GROWS":
            failures.append("%s %s grew by %s after warm-up (bound %s)" % (
                g["jvm"], g["quantity"], g["growth"], g["bound"]))
    if rows:
        write_results(a.out, rows, grows)
    if a.keep:
        log("work directory kept: %s" % work)
    elif failures:
        keep_logs_only(work)
        log("the logs of the failed run are kept: %s/*.log" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    log("%.1f min in all" % ((time.monotonic() - started) / 60))
    if failures:
        print("\nSOAK FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return rc or 1
    if rc:
        return rc
    log("soak passed: no byte differed, no error, no JVM died, nothing "
        "grew beyond its bound")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
