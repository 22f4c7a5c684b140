"""--reads-profile NAME: where the DataNodes' CPU goes when they serve one
read workload. After the measured runs, NAME runs once more on stock and
on ucx (not recorded in reads.csv) with async-profiler's CPU samples in
every DataNode for the batch and in the reader JVM from launch, as
collapsed stacks and HTML flame graphs under OUT/reads-profile, to be
read with profile_summary.py."""

import os

from .flamegraphs import client_agent, datanode_profiles, profiler_library
from .harness import log


def check_profile_arg(ap, a):
    """The named workload must be one the run measures."""
    if a.reads_profile is None:
        return
    names = [r.name for r in a.reads_list]
    if a.reads_profile not in names:
        ap.error("--reads-profile: %r is not one of this run's read "
                 "workloads (%s)" % (a.reads_profile, ", ".join(names)))


def profile_reads(bench, batch, jar):
    """Profiles the workload --reads-profile names on stock and ucx, one
    batch per output format, with `batch` (reads.read_batch); the files'
    folder."""
    r = next(x for x in bench.reads if x.name == bench.args.reads_profile)
    lib = profiler_library(bench)
    d = os.path.join(bench.out, "reads-profile")
    os.makedirs(d, exist_ok=True)
    spec = "event=cpu,interval=%dus" % bench.args.profile_interval_us
    for system in ("stock", "ucx"):
        c = bench.cluster_of[system]
        for kind in ("collapsed", "html"):
            collapsed = kind == "collapsed"
            name = "%s-%s" % (r.name, system)
            agent = client_agent(lib, spec, collapsed, os.path.join(
                d, "client-%s.%s" % (name, kind)))
            with datanode_profiles(bench, c, spec, collapsed,
                                   lambda i: os.path.join(d, "dn%d-%s.%s" % (
                                       i, name, kind))):
                row = batch(bench, system, r, 0, jar, jvm_props=[agent])
            log("profiled %s on %s (%s): %.1f MB/s, DataNodes %.3f s of "
                "CPU per GiB" % (r.name, system, kind,
                                 row["throughput_mb_s"] or 0,
                                 row["dn_cpu_s_per_gib"] or 0))
    return d
