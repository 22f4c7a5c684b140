"""--apps-profile: where the slowest UCX workload of an --apps run spends
its time. After the measured runs, the workload whose UCX throughput is
lowest against stock's runs once more per system (not recorded in
apps.csv) with async-profiler in the client JVMs from launch and in every
DataNode for the batch: CPU samples (what burns the cores) and wall-clock
samples of every thread (what a writer waits for: a log's latency is
mostly waiting), as collapsed stacks and HTML flame graphs under
OUT/apps-profile."""

import os

from .app_runs import app_batch, workload_jar
from .flamegraphs import client_agent, datanode_profiles, profiler_library
from .harness import log
from .stats import median, ratio

EVENTS = ("cpu", "wall")


def slowest_ucx(apps, rows):
    """The workload of `apps` whose median UCX throughput is the smallest
    fraction of stock's, with that fraction; (None, None) where no
    workload has both. TestDFSIO's and Spark's jobs are left out: the
    NodeManager or spark-submit, not the harness, starts their JVMs."""
    worst, worst_r = None, None
    for app in apps:
        if app.kind in ("dfsio", "spark"):  # YARN's, spark-submit's JVMs
            continue
        med = {}
        for s in ("ucx", "stock"):
            v = [r.get("throughput_mb_s") for r in rows
                 if r["workload"] == app.name and r["system"] == s]
            med[s] = median(v) if v else None
        r = ratio(med["ucx"], med["stock"])
        if r is not None and (worst_r is None or r < worst_r):
            worst, worst_r = app, r
    return worst, worst_r


def profile_apps(bench):
    """Profiles the slowest UCX workload on stock and ucx, once per event
    and format; the files' folder, or None when there is nothing to
    compare."""
    app, r = slowest_ucx(bench.apps, bench.app_rows)
    if app is None:
        log("--apps-profile: no workload measured on both ucx and stock")
        return None
    log("--apps-profile: %s, UCX throughput %.2f x stock's" % (app.name, r))
    lib = profiler_library(bench)
    jar = workload_jar(bench)
    d = os.path.join(bench.out, "apps-profile")
    os.makedirs(d, exist_ok=True)
    interval = bench.args.profile_interval_us
    for system in ("stock", "ucx"):
        c = bench.cluster_of[system]
        for event in EVENTS:
            for kind in ("collapsed", "html"):
                collapsed = kind == "collapsed"
                spec = "event=%s,interval=%dus" % (event, interval)
                name = "%s-%s-%s" % (app.name, system, event)
                # %p: each JVM of a batch writes its own file.
                agent = client_agent(lib, spec, collapsed, os.path.join(
                    d, "client-%s-%%p.%s" % (name, kind)))
                with datanode_profiles(
                        bench, c, spec, collapsed,
                        lambda i: os.path.join(d, "dn%d-%s.%s" % (
                            i, name, kind))):
                    row = app_batch(bench, system, app, 0, jar,
                                    jvm_props=[agent], tag_prefix="profile-")
                log("profiled %s on %s (%s, %s): %.1f MB/s" % (
                    app.name, system, event, kind,
                    row["throughput_mb_s"] or 0))
    with open(os.path.join(d, "README.txt"), "w") as f:
        f.write("%s: UCX throughput %.3f x stock's in the measured runs "
                "(medians), the lowest of the run's workloads.\n"
                "client-WORKLOAD-SYSTEM-EVENT-PID.*: the workload's JVMs, "
                "profiled from launch (warm-up included);\n"
                "dnN-WORKLOAD-SYSTEM-EVENT.*: DataNode N during the batch."
                "\nEvents: cpu (on-CPU samples), wall (every thread, "
                "running or not, every %d us).\n" % (app.name, r, interval))
    return d
