"""The command line of benchmarks/run.sh: its options (checked, the
profile's values filled in), and a run from start to end: the clusters
or the existing cluster, the workloads (the put sweep's, or --apps'),
the results, and what the run prints (summary.md or apps-summary.md, one
line per target)."""

import argparse
import datetime
import os
import shlex
import shutil
import subprocess
import sys
import time

from . import apps
from .app_report import finish_apps, load_line
from .app_runs import run_apps, workload_jar
from .app_spark import add_spark_options, check_spark_args, preflight
from .apps_profile import profile_apps
from .defer_start import add_option as add_defer_start_option
from .flamegraphs import flamegraphs
from .harness import BENCHMARKS, HarnessError, log, warn
from .plots import plots
from .processes import on_signals
from .profiles import PROFILES
from .read_report import finish_reads
from .reads import add_read_options, check_read_args, run_reads
from .report import write_csv, write_summary_md
from .selftest import (check_namespace, probe_namespace, serve_cluster,
                       start_scratch, stop_scratch)
from .state import Bench
from .summary import fits, scale_summary, summarize
from .systems import (DEFAULT_RELEASE, DISTRIBUTIONS, MAVEN_RELEASE,
                      connect_existing, releases, start_clusters,
                      stop_clusters)
from .targets import targets
from .units import fmt, parse_list, parse_rate, parse_size, parse_size_rep
from .workloads import run_transfer, scale, sweep, warmup


def parse_args(argv):
    """run.sh's options, checked, with the profile's values where the
    command line gives none and paths made absolute."""
    ap = argparse.ArgumentParser(
        prog="benchmarks/run.sh",
        description="Put latency of stock HDFS, the drop-in jar with UCX "
        "off and the UCX path, on embedded clusters of one Hadoop release "
        "(--hadoop, default %s) or (--conf) on an existing cluster."
        % DEFAULT_RELEASE)
    add_run_options(ap)
    g = add_existing_cluster_options(ap)
    add_host_options(ap)
    add_distribution_options(g)
    add_app_options(ap)
    add_read_options(ap)
    a = ap.parse_args(argv)
    a.argv = argv
    # The app options given on the command line, before the profile fills
    # in the rest.
    a.given = {k for k, v in vars(a).items() if v is not None}
    apply_profile(ap, a)
    check_args(ap, a)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    a.hdfs_dir = a.hdfs_dir or "/tmp/hdfs-rdma-bench-" + stamp
    a.out = os.path.abspath(a.out or os.path.join(BENCHMARKS, "results",
                                                  stamp))
    a.work = os.path.abspath(a.work)
    if a.java:
        a.java = os.path.abspath(a.java)
    return a


def add_run_options(ap):
    """The profile, what a run measures and how, where it writes."""
    prof = ap.add_mutually_exclusive_group()
    for p in PROFILES:
        prof.add_argument("--" + p, dest="profile", action="store_const",
                          const=p)
    ap.add_argument("--hadoop", metavar="RELEASE",
                    help="the Hadoop release of the embedded clusters and "
                    "every client JVM, stock's, jar's and UCX's alike (one "
                    "of patches/releases.txt; default %s; TestDFSIO only "
                    "on %s)" % (DEFAULT_RELEASE, MAVEN_RELEASE))
    ap.add_argument("--scale", action="store_true",
                    help="run only the concurrent-writers study")
    ap.add_argument("--no-scale", action="store_true",
                    help="skip the concurrent-writers study")
    ap.add_argument("--runs", type=int, help="runs per size and replication")
    ap.add_argument("--balance-order", action="store_true",
                    help="order each run's systems by a Williams design, so "
                    "that over as many runs as systems (twice as many when "
                    "odd) each comes once in each position and once right "
                    "after each other one")
    ap.add_argument("--sizes", type=parse_list(parse_size),
                    help="file sizes, e.g. 1M,16M,1G")
    ap.add_argument("--reps", type=parse_list(int),
                    help="replication factors, e.g. 1,3")
    ap.add_argument("--writers", type=parse_list(int),
                    help="concurrent writer counts, e.g. 1,2,4,8")
    ap.add_argument("--writer-size", type=parse_size)
    ap.add_argument("--scale-reps", type=parse_list(int))
    ap.add_argument("--scale-runs", type=int)
    add_defer_start_option(ap)
    ap.add_argument("--verify", choices=("all", "first", "none"),
                    help="read puts back and compare: every put, the first "
                    "run of each size (default; tiny: all), none")
    ap.add_argument("--warmup", type=parse_size,
                    help="size of the unrecorded warm-up put (0: none)")
    ap.add_argument("--out", help="results directory "
                    "(default benchmarks/results/<timestamp>)")
    ap.add_argument("--work", default="/var/tmp/hdfs-rdma-bench",
                    help="clusters' storage and input files (on disk)")
    ap.add_argument("--keep-work", action="store_true",
                    help="keep input files and cluster directories")
    ap.add_argument("--no-transfer", action="store_true",
                    help="do not run benchmarks/transfer.sh")
    ap.add_argument("--start-timeout", type=int, default=120)
    ap.add_argument("--java", help="java of the put JVMs (and of the "
                    "embedded clusters); default: java on PATH (run.sh: 17)")
    ap.add_argument("--flamegraphs", type=parse_size_rep, metavar="SIZE:REP",
                    help="profile one extra put per system with "
                    "async-profiler (client and DataNodes), e.g. 1G:3; "
                    "flame graphs and collapsed stacks under OUT/flamegraphs")
    ap.add_argument("--flamegraphs-only", action="store_true",
                    help="with --flamegraphs: no sweep, writers or transfer")
    ap.add_argument("--profile-interval-us", type=int, default=1000,
                    help="CPU sampling interval of --flamegraphs")
    ap.add_argument("--async-profiler", metavar="LIB",
                    help="libasyncProfiler.so to use (default: async-profiler "
                    "3.0 from Maven Central)")


def add_app_options(ap):
    """--apps and the sizes of its workloads (apps.py)."""
    g = ap.add_argument_group(
        "application-shaped workloads (--apps): long-lived client JVMs "
        "(org.hdfsrdma.hadoop.bench.AppWorkload) instead of the put sweep;"
        " stock, jar and ucx alternating per run as the sweep's; results "
        "in apps.csv and apps-summary.md")
    g.add_argument("--apps", action="store_true",
                   help="run the workloads below instead of the put sweep: "
                   "writer-SIZE-rR (one JVM writes COUNT files of SIZE), "
                   "wal-SIZE-r3 and wal-hsync-SIZE-r3 (one log, hflush or "
                   "hsync after every record), walT-SIZE-r3 (T logs in one "
                   "JVM), writers-NxSIZE-r3 (N JVMs at once), "
                   "threads-NxSIZE-rR (N writer threads in one JVM), "
                   "spark-NxSIZE-r3 (a PySpark job writing Parquet); --runs"
                   " runs each (--tiny: a few minutes in all)")
    g.add_argument("--apps-only", metavar="NAMES", type=parse_list(str),
                   help="only these workloads (names or shell patterns, "
                   "comma-separated, e.g. 'wal-*,writer-1M-r3')")
    g.add_argument("--apps-scale", metavar="F", type=float, default=1.0,
                   help="multiply every file count and log duration by F "
                   "(at least 1 file, 1 s), e.g. 0.1 for a quick run")
    g.add_argument("--app-files", metavar="SIZE:COUNT,...",
                   type=apps.parse_files,
                   help="the long-lived writer's files (default "
                   "1M:1000,16M:100,128M:16; --tiny 1M:16,16M:2)")
    g.add_argument("--app-reps", metavar="R,...", type=parse_list(int),
                   help="the long-lived writer's replications (default "
                   "3,1)")
    g.add_argument("--wal-records", metavar="SIZES", type=parse_list(
        parse_size), help="the logs' record sizes (default 1K,4K,64K; "
        "--tiny 1K,64K)")
    g.add_argument("--wal-seconds", metavar="S", type=float,
                   help="how long each log workload runs, after a warm-up "
                   "of up to 2 s (default 30; --tiny 2)")
    g.add_argument("--wal-threads", metavar="T", type=int,
                   help="logs of the many-logs workload, one thread each, "
                   "with the smallest record and hflush (default 8; 0 or 1:"
                   " none)")
    g.add_argument("--app-writers", metavar="N,...", type=parse_list(int),
                   help="JVMs of the concurrent-writers workloads (default "
                   "1,2,4,8; --tiny 1,2)")
    g.add_argument("--app-writer-size", metavar="SIZE", type=parse_size,
                   help="their file size (default 512M; --tiny 16M)")
    g.add_argument("--apps-profile", action="store_true", default=None,
                   help="after the runs, profile the workload whose UCX "
                   "throughput is lowest against stock's: one more batch "
                   "per system and async-profiler event (cpu, wall), "
                   "client JVMs and DataNodes, under OUT/apps-profile")
    g.add_argument("--dfsio", metavar="MAPSxSIZE,...", type=apps.parse_dfsio,
                   help="TestDFSIO write jobs on a YARN cluster: MAPS map "
                   "tasks (%d at once) each writing a file of SIZE at "
                   "replication 3 (default 4x1G,16x256M; --tiny 2x16M; '' "
                   "none)" % apps.DFSIO_SLOTS)
    g.add_argument("--idle-seconds", metavar="S", type=float,
                   help="how long the idle client holds its FileSystem "
                   "open without a call while its CPU and the DataNodes' "
                   "is read (default 30; --tiny 3; 0: no idle client)")
    g.add_argument("--app-writer-files", metavar="N", type=int,
                   help="files each of their JVMs writes (default 2; "
                   "--tiny 1)")
    g.add_argument("--app-threads", metavar="N,...", type=parse_list(int),
                   help="writer threads in one JVM, each writing files of "
                   "its own (threads-NxSIZE-rR; default 1,4,8,16; --tiny 2;"
                   " '': none), at each of --app-reps")
    g.add_argument("--app-thread-sizes", metavar="SIZE,...",
                   type=parse_list(parse_size),
                   help="their file sizes (default 16M,128M; --tiny 16M)")
    g.add_argument("--app-mixed", metavar="N", type=int,
                   help="writer threads beside one hflush log in the mixed "
                   "JVM (mixed-NxSIZE-RECORD-r3: the largest of "
                   "--app-thread-sizes, the smallest of --wal-records; "
                   "default 8; --tiny 2; 0: none)")
    g.add_argument("--app-thread-files", metavar="F", type=int,
                   help="files each of their threads writes (default 2; "
                   "--tiny 1)")
    g.add_argument("--ucx-workers", metavar="N,...", type=parse_list(int),
                   help="one more UCX system per count, ucx-wN: the UCX "
                   "client with -D dfs.client.rdma.workers=N, on the ucx "
                   "cluster, in the alternation (--apps, embedded clusters)")
    add_spark_options(g)


def add_existing_cluster_options(ap):
    """--conf and what goes with it; returns their group of the help."""
    g = ap.add_argument_group(
        "an existing cluster (--conf DIR): nothing is started or stopped; "
        "jar and ucx are its clients with dfs.client.rdma.enabled false and "
        "true")
    g.add_argument("--conf", metavar="DIR",
                   help="Hadoop configuration directory of the cluster "
                   "(core-site.xml with fs.defaultFS, hdfs-site.xml)")
    g.add_argument("--hadoop-classpath", metavar="CP",
                   help="class path of the cluster's Hadoop client, for "
                   "the jar and ucx puts (default: `hadoop classpath`)")
    g.add_argument("--stock-classpath", metavar="CP",
                   help="class path of a stock Hadoop client (no hdfs-rdma "
                   "jar); without it the stock system is skipped")
    g.add_argument("--dropin", metavar="JAR",
                   help="the drop-in jar for -javaagent: (default: the one "
                   "built in hadoop-hdfs-rdma/target)")
    g.add_argument("--hdfs-dir", metavar="PATH",
                   help="HDFS test directory, created and deleted by the run;"
                   " must not exist (default /tmp/hdfs-rdma-bench-<time>)")
    g.add_argument("--namenode-http", metavar="HOST:PORT",
                   help="the active NameNode's http address (default: from "
                   "DIR)")
    g.add_argument("--client-opts", metavar="OPTS", type=shlex.split,
                   default=[], help="more JVM options for every client JVM "
                   "(embedded clusters too), e.g. --client-opts=-Djava.library.path=... for "
                   "libhadoop, as the hdfs script gives its clients (with "
                   "=, as the value starts with -)")
    g.add_argument("--remote", action="store_true",
                   help="measure no daemon's CPU or context switches, even "
                   "on this host (as for a cluster on other hosts)")
    g.add_argument("--metrics-period", type=float,
                   help="the DataNodes' metrics period in s: JMX shows their "
                   "metrics2 counters as of the last snapshot, so every put "
                   "batch and the whole-run BytesWritten check wait for it "
                   "(default 10, with --conf-self-test 1, the scratch "
                   "cluster's)")
    return g


def add_host_options(ap):
    """--hosts: the emulated hosts."""
    h = ap.add_argument_group(
        "emulated hosts: client, NameNode and DataNodes each in network and"
        " IPC namespaces of their own, links shaped with tbf (root)")
    h.add_argument("--hosts", metavar="RATE", type=lambda t: (
        parse_rate(t), t)[1], help="every host's link rate, e.g. 1gbit")
    h.add_argument("--client-link", metavar="RATE", type=lambda t: (
        parse_rate(t), t)[1], help="with --hosts: the client's link rate "
        "(default: --hosts'), e.g. 1gbit in front of 10gbit DataNodes")
    h.add_argument("--ucx-tcp", action="store_true",
                   help="with --hosts: the UCX client uses UCX's tcp "
                   "transport (fan-out by emulated gets) instead of its "
                   "policy (Hadoop's pipeline where gets are not one-sided)")


def add_distribution_options(g):
    """The UCX system's distribution, --compare-distributions, the
    self-test (listed in the help with --conf's options, in the usage
    line after the emulated hosts')."""
    g.add_argument("--distribution", choices=DISTRIBUTIONS,
                   help="the UCX client's dfs.client.rdma.distribution "
                   "(default: the client's own, auto); chain and hybrid "
                   "make DataNodes fetch from each other")
    g.add_argument("--compare-distributions", metavar="MODES",
                   type=parse_list(str),
                   help="more UCX systems in the alternation, one per mode "
                   "(comma-separated, from %s), each forcing that "
                   "distribution on the ucx cluster; the summary gives UCX "
                   "over each and over the fastest (embedded clusters only)"
                   % ", ".join(DISTRIBUTIONS))
    g.add_argument("--conf-self-test", action="store_true",
                   help="start a scratch UCX cluster in another process and "
                   "run --conf against it (tiny profile unless another is "
                   "given), with stock from Maven's class path; checks the "
                   "run left HDFS as it found it")
    g.add_argument("--serve-cluster", metavar="DIR", help=argparse.SUPPRESS)


def apply_profile(ap, a):
    """The profile (--tiny with --conf-self-test, else --small unless
    given) fills in every option the command line left out."""
    if a.conf_self_test and a.conf:
        ap.error("--conf-self-test starts its own cluster: no --conf")
    if a.conf_self_test and not a.profile:
        a.profile = "tiny"
    if a.metrics_period is None:
        a.metrics_period = 1.0 if a.conf_self_test else 10.0
    a.profile = a.profile or "small"
    a.hadoop_given = a.hadoop is not None
    a.hadoop = a.hadoop or DEFAULT_RELEASE
    for k, v in PROFILES[a.profile].items():
        if getattr(a, k, None) is None:
            if k == "dfsio" and a.hadoop != MAVEN_RELEASE:
                # TestDFSIO runs on the build's own Hadoop only (app_dfsio):
                # another release's runs leave it out unless asked for,
                # which check_app_args refuses.
                v = []
            setattr(a, k, v)


def check_args(ap, a):
    """Options that exclude or need each other; the UCX system's
    distribution; --conf's directory."""
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    if a.scale and a.no_scale:
        ap.error("--scale and --no-scale exclude each other")
    if a.hosts and (a.conf or a.conf_self_test):
        ap.error("--hosts starts its own clusters: no --conf")
    if a.ucx_tcp and not a.hosts:
        ap.error("--ucx-tcp needs --hosts")
    if a.client_link and not a.hosts:
        ap.error("--client-link needs --hosts")
    # The ucx system's distribution: --ucx-tcp forces fan-out unless
    # --distribution says otherwise.
    a.ucx_distribution = a.distribution or (
        "fan-out" if a.ucx_tcp else "auto")
    if a.compare_distributions:
        modes = a.compare_distributions
        bad = [m for m in modes if m not in DISTRIBUTIONS]
        if bad:
            ap.error("--compare-distributions: %s: not one of %s" % (
                ", ".join(bad), ", ".join(DISTRIBUTIONS)))
        if len(set(modes)) != len(modes) or a.ucx_distribution in modes:
            ap.error("--compare-distributions: each mode once, and not the "
                     "UCX system's own (%s)" % a.ucx_distribution)
        if a.conf or a.conf_self_test:
            ap.error("--compare-distributions needs embedded clusters: no "
                     "--conf")
        if a.hosts and not a.ucx_tcp:
            ap.error("--compare-distributions with --hosts needs --ucx-tcp "
                     "(UCX's tcp transport between the hosts)")
    if (a.conf or a.conf_self_test) and a.flamegraphs:
        ap.error("--flamegraphs profiles the embedded clusters only")
    if a.conf and a.hadoop_given:
        ap.error("--hadoop is the embedded clusters' release: with --conf "
                 "the clients are --hadoop-classpath's and "
                 "--stock-classpath's, the cluster its own")
    known = releases()
    if known and a.hadoop not in known:
        ap.error("--hadoop %s: not one of patches/releases.txt (%s)"
                 % (a.hadoop, ", ".join(known)))
    if a.ucx_workers is not None:
        if not a.ucx_workers or min(a.ucx_workers) < 1 or \
                len(set(a.ucx_workers)) != len(a.ucx_workers):
            ap.error("--ucx-workers: counts of at least 1, each once")
        if a.conf or a.conf_self_test:
            ap.error("--ucx-workers needs embedded clusters: no --conf")
        if not a.apps:
            ap.error("--ucx-workers: only with --apps (the put sweep's "
                     "summary has no columns for it)")
    if a.conf:
        a.conf = os.path.abspath(a.conf)
        if not os.path.isfile(os.path.join(a.conf, "core-site.xml")):
            ap.error("--conf %s: no core-site.xml there" % a.conf)
    check_app_args(ap, a)
    check_read_args(ap, a)


def check_app_args(ap, a):
    """--apps: what it cannot be combined with, its sizes, and the
    workloads it runs (a.apps_list)."""
    a.apps_list = []
    check_spark_args(ap, a)
    app_opts = [o for o in ("apps_only", "app_files", "app_reps",
                            "wal_records", "wal_seconds", "wal_threads",
                            "app_writers", "app_writer_size",
                            "app_writer_files", "apps_profile", "dfsio",
                            "idle_seconds", "app_threads", "app_thread_sizes",
                            "app_thread_files", "app_mixed")
                if o in a.given] + (["apps_scale"] if a.apps_scale != 1.0
                                    else [])
    if not a.apps:
        if app_opts:
            ap.error("--%s needs --apps" % app_opts[0].replace("_", "-"))
        return
    for bad, why in ((a.scale or a.no_scale, "--scale/--no-scale"),
                     (a.flamegraphs, "--flamegraphs"),
                     (a.hosts, "--hosts"),
                     (a.compare_distributions, "--compare-distributions")):
        if bad:
            ap.error("--apps runs its own workloads on one host's clusters "
                     "or --conf: no %s" % why)
    if a.apps_scale <= 0:
        ap.error("--apps-scale must be positive")
    if (a.wal_seconds <= 0 or min(a.app_reps + a.app_writers
                                  + a.app_threads
                                  + [a.app_writer_files,
                                     a.app_thread_files]) < 1
            or min(a.wal_records + a.app_thread_sizes
                   + [a.app_writer_size]) < 1
            or a.wal_threads < 0 or a.idle_seconds < 0 or a.app_mixed < 0):
        ap.error("--apps: counts, sizes and seconds must be positive")
    try:
        a.apps_list = apps.select(apps.workloads(a), a.apps_only)
    except ValueError as e:
        ap.error(str(e) + ("; TestDFSIO (dfsio-*) runs on --hadoop %s only"
                           % MAVEN_RELEASE if a.hadoop != MAVEN_RELEASE
                           and "dfsio" in ",".join(a.apps_only) else ""))
    if a.dfsio and a.hadoop != MAVEN_RELEASE:
        ap.error("--apps --dfsio: TestDFSIO runs on Hadoop %s only (its "
                 "jobclient tests jar and mini YARN cluster come from the "
                 "build's Maven class path), not on --hadoop %s: give "
                 "--hadoop %s, or leave it out with --dfsio ''"
                 % (MAVEN_RELEASE, a.hadoop, MAVEN_RELEASE))
    if a.conf and any(x.kind == "dfsio" for x in a.apps_list):
        ap.error("--apps --conf: the TestDFSIO workloads run on the "
                 "embedded clusters only (their YARN cluster and class path"
                 " are Maven's Hadoop); leave them out with --dfsio ''")


def main(argv):
    """A whole run; its exit status: 0, 1 when the harness broke (never
    for a timing), 2 without java, 130 when interrupted."""
    a = parse_args(argv)
    if a.serve_cluster:
        return serve_cluster(a)
    bench = Bench(a)
    bench.t0 = time.monotonic()
    bench.started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    bench.load_start = " ".join(open("/proc/loadavg").read().split()[:3])
    bench.loadavg = os.getloadavg()
    if bench.java is None:
        print("no java on PATH (run through benchmarks/run.sh)",
              file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    fstype = subprocess.run(["stat", "-f", "-c", "%T", a.work],
                            capture_output=True, text=True).stdout.strip()
    if fstype in ("tmpfs", "ramfs") and not a.conf:
        bench.note("%s is on %s: DataNode storage should be on disk "
                   "(--work)" % (a.work, fstype))
    on_signals()
    if (a.apps or a.reads) and bench.loadavg[0] > 0.5:
        bench.note(load_line(bench.loadavg))

    log("profile %s, results in %s, work in %s%s" % (
        a.profile, a.out, a.work, "; --conf %s" % a.conf if a.conf else ""))
    rc = measure(bench)
    bench.interrupted = rc == 130
    return report(bench, rc)


def measure(bench):
    """Everything a run measures, then the clusters stopped (or the test
    directory deleted), the emulated hosts removed and the work directory
    cleaned, whatever happened; returns the exit status so far."""
    a = bench.args
    rc = 0
    scratch = None
    before = None
    try:
        complete = False
        try:
            if a.conf_self_test:
                scratch, a.conf, cp = start_scratch(a, bench.procs)
                probe, before = probe_namespace(a, cp)
            if a.apps or a.reads:
                # Before any cluster starts: a missing build fails first.
                workload_jar(bench)
                preflight(bench)
            if a.conf:
                connect_existing(bench)
            else:
                if bench.hosts:
                    bench.hosts.up()
                    bench.hosts.enter()
                start_clusters(bench)
            run_workloads(bench)
            complete = True
        finally:
            log("stopping the clusters" if not a.conf else
                "deleting %s (the cluster keeps running)" % a.hdfs_dir)
            stop_clusters(bench, complete)
            if before is not None and complete:
                check_namespace(bench, probe, before)
            if scratch is not None:
                stop_scratch(bench, scratch)
    except HarnessError as e:
        bench.fail(str(e))
        rc = 1
    except KeyboardInterrupt:
        warn("interrupted")
        rc = 130
    except Exception as e:
        import traceback
        traceback.print_exc()
        bench.fail("harness error: %r" % e)
        rc = 1
    finally:
        bench.procs.stop_all()
        if bench.hosts:
            bench.hosts.leave()
            bench.hosts.down()
        if not a.keep_work:
            clean_work(a.work)
    return rc


def run_workloads(bench):
    """The warm-up, then --apps' workloads, or the flame graphs, the
    sweep and the writers, as the options ask."""
    a = bench.args
    if a.reads:
        run_reads(bench)
        return
    warmup(bench)
    if a.apps:
        run_apps(bench)
        if a.apps_profile:
            profile_apps(bench)
        return
    if a.flamegraphs:
        flamegraphs(bench)
    if not a.scale and not a.flamegraphs_only:
        sweep(bench)
    if not a.no_scale and a.writers and not a.flamegraphs_only:
        scale(bench)


def clean_work(work):
    """Deletes the clusters, inputs and scratch files a run left under the
    work directory."""
    for d in ("clusters", "inputs", "selftest", "apps-barrier", "dfsio",
              "spark"):
        shutil.rmtree(os.path.join(work, d), ignore_errors=True)
    for f in ("drivers.classpath",
              "fanout.out", "apps-workload.jar"):
        if os.path.exists(os.path.join(work, f)):
            os.unlink(os.path.join(work, f))


def report(bench, rc):
    """Writes the results (also after an interruption or a failure: what
    was measured so far), prints summary.md and a line per target;
    returns the run's exit status."""
    a = bench.args
    try:
        target_rows = finish_apps(bench) if a.apps else \
            finish_reads(bench) if a.reads else finish(bench)
    except Exception as e:  # the results are the point: say why not
        bench.fail("writing results failed: %r" % e)
        raise
    if bench.failures:
        rc = rc or 1
        print("\nHARNESS FAILURES:\n  " + "\n  ".join(bench.failures),
              file=sys.stderr)
    with open(os.path.join(a.out, "apps-summary.md" if a.apps else
                           "reads-summary.md" if a.reads
                           else "summary.md")) as f:
        print("\n" + f.read())
    for t in target_rows:
        log("target %s %s %.2f: %s (worst %s)" % (
            t["target"], t["sense"], t["limit"], t["result"],
            fmt(t["worst"])))
    log("results in %s (%.1f min)" % (a.out,
                                      (time.monotonic() - bench.t0) / 60))
    return rc


def finish(bench):
    """The summaries, every CSV file, the plots, the per-transfer cost
    (a complete embedded run only) and summary.md; returns the targets."""
    summary = summarize(bench)
    fit_rows = fits(bench)
    scale_sum = scale_summary(bench)
    target_rows = targets(bench, summary, scale_sum)
    write_csv(os.path.join(bench.out, "puts.csv"), bench.put_rows)
    write_csv(os.path.join(bench.out, "limit.csv"), bench.limit_rows)
    write_csv(os.path.join(bench.out, "summary.csv"), summary)
    write_csv(os.path.join(bench.out, "fit.csv"), fit_rows)
    write_csv(os.path.join(bench.out, "scale.csv"), bench.scale_rows)
    write_csv(os.path.join(bench.out, "scale-summary.csv"), scale_sum)
    write_csv(os.path.join(bench.out, "targets.csv"), target_rows)
    plots(bench, summary, scale_sum)
    transfer = None if bench.interrupted or bench.args.flamegraphs_only \
        or bench.existing is not None else run_transfer(bench)
    write_summary_md(bench, summary, fit_rows, scale_sum, target_rows,
                     transfer)
    return target_rows
