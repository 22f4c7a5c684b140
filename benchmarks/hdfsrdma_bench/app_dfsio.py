"""Running --apps' TestDFSIO workloads (dfsio-MAPSxSIZE): per batch one
JVM of org.hdfsrdma.hadoop.bench.DfsioOnYarn on the drivers' class path
(Hadoop's mini YARN cluster and TestDFSIO), started in a work
directory of its own where its YARN cluster keeps the containers' logs.
Its map tasks and ApplicationMaster are JVMs the NodeManager starts; for
the jar and ucx systems they carry the drop-in jar as -javaagent: and
write the agent's totals line into their log directories, which this
module gathers: the batch's UCX bytes are the submitter's and every
container's. The same checks as every other workload's then hold the
batch to what its system must have carried."""

import os
import shutil
import time

from . import defer_start, ucx_counters
from .app_runs import (batch_names, check_carried, diff, human_app,
                       timeout_of, ucx_detail)
from .apps import DFSIO_CLASS, parse_result, run_figures, workload_args
from .harness import HarnessError
from .systems import drivers_classpath

TOTALS = "hdfs-rdma-totals.txt"
# The job's own files (control files, staging, history, TestDFSIO's
# report) at the workload's replication too, so that the DataNodes'
# fetched bytes are the JVMs' sent bytes x replication.
JOB_PROPS = ("mapreduce.client.submit.file.replication",)
# The mini ResourceManager's web app (Guice) needs java.lang open.
OPENS = ["--add-opens", "java.base/java.lang=ALL-UNNAMED"]


def yarn_client(bench, system):
    """`system`'s client on the drivers' class path (Hadoop's mini
    YARN cluster and TestDFSIO besides Hadoop), made once per run."""
    if bench.yarn_cp is None:
        bench.yarn_cp = drivers_classpath(bench.work)
    return bench.clients[system].on_classpath(bench.yarn_cp)


def task_opts(client):
    """The java options of every container of the job: the agent, and its
    totals line into the container's log directory, for the systems
    that have it; nothing for stock."""
    if not client.agent:
        return ""
    return "-javaagent:%s -Dhdfsrdma.stats.file=<LOG_DIR>/%s" % (
        client.agent, TOTALS)


# What the agent logs in a JVM whose client classes it replaced.
AGENT_LINE = "hdfs-rdma: the UCX write path's client classes replace"


def containers(root):
    """Every container's log directory under a YARN work directory:
    {container id: (its agent totals, {} for none; whether its syslog
    says the agent replaced the client classes)}. A container's working
    directory has its id for a name too, but no syslog."""
    out = {}
    for d, _, files in os.walk(root):
        name = os.path.basename(d)
        if not name.startswith("container_") or "syslog" not in files:
            continue
        with open(os.path.join(d, "syslog"), errors="replace") as f:
            agent = AGENT_LINE in f.read()
        out[name] = (ucx_counters.read_stats(os.path.join(d, TOTALS)),
                     agent)
    return out


def dfsio_batch(bench, system, app, run, jar, jvm_props=(), tag_prefix=""):
    """One run of a TestDFSIO workload on `system`: the job run, its files
    checked and deleted; the run's row."""
    c = bench.cluster_of[system]
    client = yarn_client(bench, system)
    tag, base, hdfs_dir = batch_names(bench, c, system, app, run,
                                      tag_prefix)
    work = os.path.join(bench.work, "dfsio", tag)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    props = (["-Dhdfsrdma.stats.file=" + base + ".ucx"]
             if client.agent else []) + OPENS + list(jvm_props)
    args = ["-D", "dfs.replication=%d" % app.rep] + [
        a for p in JOB_PROPS for a in ("-D", "%s=%d" % (p, app.rep))] + \
        workload_args(app, hdfs_dir, "yarn") + ["-task-opts",
                                                task_opts(client)]
    job = dict(log=base + ".log", stats=base + ".ucx",
               argv=client.jvm_argv(DFSIO_CLASS, args, props, [jar]))
    before_ctr = c.dn_counters()
    before_dn, before_nn = c.dn_cpu(), c.nn_cpu()
    job["proc"] = bench.procs.spawn(job["argv"], job["log"], cwd=work,
                                    name="%s %s" % (system, app.name))
    done = bench.procs.wait_all([job["proc"]], timeout_of(app),
                                bench.cluster_pids)
    after_dn, after_nn = c.dn_cpu(), c.nn_cpu()
    if c.metrics_lag:
        time.sleep(c.metrics_lag)
    _, rc, ru = done[job["proc"].pid]
    with open(job["log"], errors="replace") as f:
        result, errors = parse_result(f.read())
    if rc != 0 or result is None or result.get("status") != "ok":
        raise HarnessError("%s %s run %d: DfsioOnYarn failed (rc %d)%s; see"
                           " %s" % (system, app.name, run, rc,
                                    ": " + errors[0] if errors else "",
                                    job["log"]))
    job["result"] = result
    job["client_stats"] = ucx_counters.read_stats(job["stats"])
    logs = containers(work)
    stats = [job["client_stats"]] + [t for t, _ in logs.values()]
    after_ctr = c.dn_counters()
    c.delete(hdfs_dir)
    delta = {k: after_ctr[k] - before_ctr.get(k, 0) for k in after_ctr}
    row = dict(workload=app.name, kind=app.kind, system=system, run=run)
    row.update(run_figures(app, [result], []))
    # The submitter JVM's children: the containers' JVMs, whose CPU the
    # wait counts as the submitter's (the NodeManager waits for them).
    row.update(client_cpu_s=round(ru.ru_utime + ru.ru_stime, 3),
               dn_cpu_s=diff(after_dn, before_dn),
               nn_cpu_s=diff(after_nn, before_nn),
               verified_bytes=result["verified_bytes"],
               containers=len(logs),
               containers_with_agent=sum(a for _, a in logs.values()))
    check_containers(bench, system, app, logs)
    row.update(check_carried(bench, system, app, [job], delta, stats,
                             exact=False))
    if system == "jar":
        # The job's own files (control files, staging, history, report)
        # are replicas the DataNodes took over TCP too, beyond the data
        # files check_carried counted: what they counted is expected.
        over_tcp = delta.get(ucx_counters.BLOCKS_OVER_TCP)
        if over_tcp is not None:
            bench.jar_expected_blocks += over_tcp - result["blocks"] * app.rep
    if bench.is_ucx(system):
        row.update(ucx_detail([job], delta, stats))
    row["lat_files"] = ""
    shutil.rmtree(work, ignore_errors=True)
    return row


def check_containers(bench, system, app, logs):
    """The job ran its maps, the ApplicationMaster and the reduce in
    containers of their own; a jar or ucx job's every container with the
    agent, a stock job's none; a ucx job's every map sent by UCX (a
    jar's JVMs start no UCX, so write no totals; with --defer-start on, a
    map's first block goes over TCP, so only maps of files larger than a
    block must). A miss fails the run."""
    where = "%s %s" % (system, human_app(app))
    want = app.files + 2
    with_agent = sum(a for _, a in logs.values())
    if len(logs) < want:
        bench.fail("%s: %d container log(s), fewer than the %d maps, the "
                   "ApplicationMaster and the reduce" % (
                       where, len(logs), app.files))
    if system == "stock":
        if with_agent:
            bench.fail("%s: %d container(s) ran with the agent" % (
                where, with_agent))
        return
    if with_agent < len(logs):
        bench.fail("%s: %d of %d containers ran without the agent" % (
            where, len(logs) - with_agent, len(logs)))
    if bench.is_ucx(system) and defer_start.put_ucx_bytes(bench, system,
                                                          app.size):
        sending = sum(1 for t, _ in logs.values()
                      if t.get(ucx_counters.STATS_SENT))
        if sending < app.files:
            bench.fail("%s: %d container(s) sent by UCX, fewer than the %d "
                       "map tasks" % (where, sending, app.files))
