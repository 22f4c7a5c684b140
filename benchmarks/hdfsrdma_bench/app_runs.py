"""Running --apps' workloads: every workload, run and system in the sweep's
alternation (each run's systems in the alternation or Williams order),
one batch of AppWorkload JVMs per system: launched (several at once
started together by a ready/go barrier), measured (client and DataNode
CPU, the DataNodes' counters), checked (each JVM's own verification, its
files deleted) and held to what the system must have carried: a ucx
batch every byte over UCX and no replica over TCP, a jar batch nothing
over UCX. Unlike the put sweep's UCX checks, which only warn outside
--tiny, these fail the run whatever the profile: an application-shaped
number for UCX is worth nothing if part of it went over TCP."""

import array
import os
import shutil
import time
import zipfile

from . import defer_start, ucx_counters
from .apps import (WORKLOAD_CLASS, WORKLOAD_PACKAGE, parse_result,
                   read_latencies, run_figures, workload_args)
from .harness import DRIVER_CLASSES, HarnessError, log
from .measurement import cpu_seconds
from .units import fmt, human
from .workloads import run_order

READY_TIMEOUT = 300.0
# The idle client's CPU is read until IDLE_MARGIN s before its idle phase
# ends, so the window never takes in its verification or exit.
IDLE_MARGIN = 1.0


def workload_jar(bench):
    """A jar of the workload's package alone, from the drivers' classes,
    under the work directory: the stock client's class path gets nothing
    else of hdfs-rdma (not even the soak's writer). Refuses classes that
    refer to any other class of hdfs-rdma."""
    src = os.path.join(DRIVER_CLASSES, WORKLOAD_PACKAGE)
    main = os.path.join(DRIVER_CLASSES, WORKLOAD_CLASS.replace(".", "/")
                        + ".class")
    if not os.path.exists(main):
        raise HarnessError("no %s: build first (mvn -o -pl "
                           "benchmarks/drivers -DskipTests compile)" % main)
    jar = os.path.join(bench.work, "apps-workload.jar")
    with zipfile.ZipFile(jar, "w") as z:
        for name in sorted(os.listdir(src)):
            if not name.endswith(".class"):
                continue
            with open(os.path.join(src, name), "rb") as f:
                code = f.read()
            if foreign_refs(code):
                raise HarnessError("%s refers to hdfs-rdma classes outside "
                                   "%s" % (name, WORKLOAD_PACKAGE))
            z.writestr(WORKLOAD_PACKAGE + name, code)
    return jar


def foreign_refs(code):
    """Whether a class file names a class of org/hdfsrdma/ outside the
    workload's package."""
    at = code.find(b"org/hdfsrdma/")
    while at >= 0:
        if not code.startswith(WORKLOAD_PACKAGE.encode(), at):
            return True
        at = code.find(b"org/hdfsrdma/", at + 1)
    return False


def run_apps(bench):
    """Every selected workload: for each run, one batch per system in the
    run's order (rows in bench.app_rows)."""
    from .app_dfsio import dfsio_batch    # they build on this module
    from .app_spark import spark_batch
    a = bench.args
    jar = workload_jar(bench)
    batches = dict(dfsio=dfsio_batch, spark=spark_batch)
    for app in bench.apps:
        log("%s: %s, %d run(s)" % (app.name, human_app(app), a.runs))
        batch = batches.get(app.kind, app_batch)
        for run in range(1, a.runs + 1):
            got = {}
            for system in run_order(bench, run):
                row = batch(bench, system, app, run, jar)
                bench.app_rows.append(row)
                got[system] = row
            log("%s run %d: %s" % (app.name, run, ", ".join(
                "%s %s" % (s, brief(got[s])) for s in bench.systems)))


def brief(row):
    """A run's main figures in a log line."""
    if row["kind"] == "wal":
        return "%.0f rec/s p50 %.3f p99 %.3f ms" % (
            row["records_per_s"], row["p50_ms"], row["p99_ms"])
    if row["kind"] == "mixed":
        return "writers %.1f MB/s, log %.0f rec/s p50 %.3f p99 %.3f ms" % (
            row["throughput_mb_s"], row["records_per_s"], row["p50_ms"],
            row["p99_ms"])
    if row["kind"] == "dfsio":
        return "%.1f MB/s, average IO rate %.1f MB/s, job %.0f s" % (
            row["throughput_mb_s"], row["avg_io_rate_mb_s"],
            row["dfsio_exec_s"])
    if row["kind"] == "spark":
        return "write stage %.2f s, %.1f MB/s, job %.2f s" % (
            row["write_stage_s"], row["throughput_mb_s"] or 0,
            row["write_job_s"])
    if row["kind"] == "idle":
        return "idle: client %s cores, %s per DataNode" % (
            fmt(row["idle_client_cores"], 4), fmt(row["idle_dn_cores"], 4))
    return "%.1f MB/s p99 %.1f ms" % (row["throughput_mb_s"],
                                      row["p99_ms"])


def batch_names(bench, c, system, app, run, tag_prefix):
    """Waits until cluster `c` holds no files of earlier batches, then
    names this batch: its tag, the path prefix of its local outputs (in
    the run's apps/ directory, numbered in run order) and its HDFS
    directory."""
    c.wait_clean()
    bench.seq += 1
    tag = "%s%s-%s-%d" % (tag_prefix, app.name, system, run)
    outdir = os.path.join(bench.out, "apps")
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, "%04d-%s" % (bench.seq, tag))
    return tag, base, "%s/%s" % (c.bench_dir, tag)


def app_batch(bench, system, app, run, jar, jvm_props=(), tag_prefix=""):
    """One run of `app` on `system`: its JVMs launched (`jvm_props`: more
    options for each), waited for and checked, its files deleted; the
    run's row."""
    c = bench.cluster_of[system]
    client = bench.clients[system]
    tag, base, hdfs_dir = batch_names(bench, c, system, app, run,
                                      tag_prefix)
    barrier = os.path.join(bench.work, "apps-barrier", tag) \
        if app.jvms > 1 or app.kind == "idle" else None
    if barrier:
        shutil.rmtree(barrier, ignore_errors=True)
        os.makedirs(barrier)
    jobs = []
    for i in range(app.jvms):
        name = "%s-j%d" % (base, i)
        props = (["-Dhdfsrdma.stats.file=" + name + ".ucx"]
                 if client.agent else []) + list(jvm_props)
        args = workload_args(app, "%s/j%d" % (hdfs_dir, i), name + ".lat")
        if barrier:
            args += ["-ready", os.path.join(barrier, "ready-%d" % i),
                     "-go", os.path.join(barrier, "go")]
        jobs.append(dict(log=name + ".log", stats=name + ".ucx",
                         lat=name + ".lat", argv=client.jvm_argv(
                             WORKLOAD_CLASS, args, props, [jar])))
    before_ctr = c.dn_counters()
    before_dn, before_nn = c.dn_cpu(), c.nn_cpu()
    for j in jobs:
        j["proc"] = bench.procs.spawn(j["argv"], j["log"],
                                      name="%s %s" % (system, app.name))
    go_ns = release(bench, jobs, barrier) if barrier else None
    idle = idle_cores(bench, c, jobs[0], app.seconds) \
        if app.kind == "idle" else {}
    done = bench.procs.wait_all([j["proc"] for j in jobs],
                                timeout_of(app), bench.cluster_pids)
    end_ns = time.monotonic_ns()
    after_dn, after_nn = c.dn_cpu(), c.nn_cpu()
    if c.metrics_lag:
        time.sleep(c.metrics_lag)
    results, lat = [], array.array("q")
    for j in jobs:
        _, rc, ru = done[j["proc"].pid]
        j["cpu"] = ru.ru_utime + ru.ru_stime
        with open(j["log"], errors="replace") as f:
            result, errors = parse_result(f.read())
        if rc != 0 or result is None or result.get("status") != "ok":
            raise HarnessError("%s %s run %d: AppWorkload failed (rc %d)%s;"
                               " see %s" % (system, app.name, run, rc,
                                            ": " + errors[0] if errors
                                            else "", j["log"]))
        if go_ns is not None and not go_ns <= result["start_ns"] <= \
                result["end_ns"] <= end_ns:
            raise HarnessError("%s: the JVM's measured phase (%d-%d ns) is "
                               "not within go to exit (%d-%d ns): its "
                               "System.nanoTime is not this clock" % (
                                   j["log"], result["start_ns"],
                                   result["end_ns"], go_ns, end_ns))
        j["result"] = result
        j["client_stats"] = ucx_counters.read_stats(j["stats"])
        results.append(result)
        lat.extend(read_latencies(j["lat"]))
    after_ctr = c.dn_counters()
    c.delete(hdfs_dir)
    if barrier:
        shutil.rmtree(barrier, ignore_errors=True)
    delta = {k: after_ctr[k] - before_ctr.get(k, 0) for k in after_ctr}
    row = dict(workload=app.name, kind=app.kind, system=system, run=run)
    row.update(run_figures(app, results, lat))
    row.update(client_cpu_s=round(sum(j["cpu"] for j in jobs), 3),
               dn_cpu_s=diff(after_dn, before_dn),
               nn_cpu_s=diff(after_nn, before_nn),
               verified_bytes=sum(r["verified_bytes"] for r in results))
    row.update(idle)
    row.update(check_carried(bench, system, app, jobs, delta))
    if bench.is_ucx(system):
        row.update(ucx_detail(jobs, delta))
    row["lat_files"] = " ".join(os.path.basename(j["lat"]) for j in jobs)
    return row


def idle_cores(bench, c, job, seconds):
    """The cores an idle client JVM (`job`, just let go into its idle
    phase of `seconds`) and the DataNodes and NameNode of its cluster
    use, read from /proc over all but the last IDLE_MARGIN s of that
    phase: idle_client_cores, idle_dn_cores (per DataNode),
    idle_nn_cores; None where a process cannot be read from here."""
    proc = job["proc"]

    def sample():
        if not bench.procs.alive(proc):
            raise HarnessError("the idle AppWorkload JVM exited during its "
                               "idle phase (rc %s); see %s"
                               % (proc.returncode, job["log"]))
        return (time.monotonic(), cpu_seconds(proc.pid), c.dn_cpu(),
                c.nn_cpu())
    t0, cpu0, dn0, nn0 = sample()
    time.sleep(max(0.5, seconds - IDLE_MARGIN))
    t1, cpu1, dn1, nn1 = sample()
    span = t1 - t0
    dns = len(c.dn_pids or ())

    def cores(a, b, n=1):
        return None if a is None or b is None or not n else \
            round((b - a) / span / n, 4)
    return dict(idle_client_cores=cores(cpu0, cpu1),
                idle_dn_cores=cores(dn0, dn1, dns),
                idle_nn_cores=cores(nn0, nn1))


def ucx_detail(jobs, delta, stats=None):
    """A ucx batch's other counters, as the put sweep's rows carry them:
    the client JVMs' stats lines summed (client_*: queued sends, the
    per-packet phase times) and the DataNodes' HdfsRdmaDataNode metrics
    (dn_rdma_*: counters and per-phase times), for telling where a
    packet's time went."""
    out = {}
    for s in stats if stats is not None else [j["client_stats"]
                                              for j in jobs]:
        for k, v in s.items():
            if isinstance(v, (int, float)) and k != ucx_counters.STATS_SENT:
                key = "client_" + k.replace("-", "_")
                out[key] = out.get(key, 0) + v
    for k, v in sorted(delta.items()):
        if k.startswith(ucx_counters.PREFIX):
            out["dn_" + k.replace(".", "_")] = v
    return out


def release(bench, jobs, barrier):
    """Waits until every JVM of a batch is warmed up and ready, then lets
    them all go at once; the time of the go (CLOCK_MONOTONIC, ns)."""
    deadline = time.monotonic() + READY_TIMEOUT
    want = [os.path.join(barrier, "ready-%d" % i) for i in range(len(jobs))]
    while not all(os.path.exists(p) for p in want):
        for j in jobs:
            if not bench.procs.alive(j["proc"]):
                raise HarnessError("an AppWorkload JVM exited before it was "
                                   "ready (rc %s); see %s" % (
                                       j["proc"].returncode, j["log"]))
        if time.monotonic() > deadline:
            raise HarnessError("AppWorkload JVMs not ready in %.0f s; see "
                               "%s" % (READY_TIMEOUT, jobs[0]["log"]))
        time.sleep(0.05)
    go_ns = time.monotonic_ns()
    with open(os.path.join(barrier, "go"), "w"):
        pass
    return go_ns


def timeout_of(app):
    """How long a batch may take: start-up, warm-up and verification
    allowance, plus its writing at 5 MB/s per replica or its logs'
    duration."""
    if app.kind in ("wal", "idle"):
        return 600 + app.seconds * 2
    if app.kind == "dfsio":     # and the YARN cluster's start, the job's
        return 900 + app.files * app.size * app.rep / 5e6
    return 600 + app.jvms * app.threads * app.files * app.size * \
        app.rep / 5e6


def diff(after, before):
    return None if after is None or before is None else \
        round(after - before, 3)


def check_carried(bench, system, app, jobs, delta, stats=None, exact=True):
    """What the batch's DataNodes received, and whether the system's
    bytes went where they must: the ucx system's every byte by UCX (the
    client sent at least every byte written as descriptors, no pipeline
    fell back to TCP, the DataNodes fetched at least bytes x replication
    and took no replica over TCP), the jar system's none. A miss fails
    the run. Adds the batch to what the UCX DataNodes' exit totals must
    count. Returns the row's columns of it. `stats`: the stats of every
    client JVM of the batch, where they are more than `jobs`' own;
    `exact`: whether the jobs' bytes are all the batch wrote (the
    DataNodes' BytesWritten is then checked against them)."""
    c = bench.cluster_of[system]
    rep = app.rep
    written = sum(j["result"]["bytes"] for j in jobs)
    blocks = sum(j["result"]["blocks"] for j in jobs)
    if stats is None:
        stats = [j["client_stats"] for j in jobs]
    sent = sum(s.get(ucx_counters.STATS_SENT, 0) or 0 for s in stats)
    # --defer-start on: each client JVM's first block may go over TCP;
    # off: a pipeline kept on TCP for it is one too many.
    defer = defer_start.deferring(bench)
    tcp_keys = ucx_counters.STATS_TCP_PIPELINES + (
        () if defer else (defer_start.STATS_TCP_DEFERRED,))
    tcp_pipelines = sum(s.get(k, 0) or 0 for s in stats for k in tcp_keys)
    key = ucx_counters.fetched_key(delta)
    fetched = delta.get(key) if key else None
    over_tcp = delta.get(ucx_counters.BLOCKS_OVER_TCP)
    over_ucx = delta.get(ucx_counters.BLOCKS_OVER_UCX)
    where = "%s %s" % (system, app.name)
    bench.bytes_expected += written * rep
    dn_written = delta.get("activity.BytesWritten")
    if exact and c.metrics_lag and dn_written is not None and \
            dn_written != written * rep:
        bench.note("%s: the DataNodes wrote %d bytes, expected %d (bytes "
                   "x replication)" % (where, dn_written, written * rep))
    if system == "jar":
        bench.jar_expected_blocks += blocks * rep
        if sent or fetched or over_ucx:
            bench.fail("%s: UCX off, yet data moved over UCX (client sent "
                       "%d bytes, DataNodes fetched %s, %s replica(s) over "
                       "UCX)" % (where, sent, fetched, over_ucx))
    elif bench.is_ucx(system):
        bench.ucx_expected_bytes += sent * rep
        allowance = defer_start.jvm_allowance(bench, system, len(stats))
        if allowance[0] and over_tcp:
            # The first blocks the deferral kept on TCP (more fail below).
            bench.jar_expected_blocks += min(over_tcp, allowance[1] * rep)
        check_ucx(bench, where, stats, sent, tcp_pipelines, fetched,
                  over_tcp, written, rep, allowance)
    return dict(bytes_written=written, blocks=blocks, dn_bytes_written=(
        dn_written if c.metrics_lag else None),
        ucx_bytes_sent=sent if system != "stock" else None,
        ucx_bytes_fetched=fetched if system != "stock" else None,
        blocks_over_ucx=over_ucx, blocks_over_tcp=over_tcp,
        transport=", ".join(sorted({str(s.get(
            ucx_counters.STATS_TRANSPORTS, "")).replace("_", " ")
            for s in stats} - {""})) if bench.is_ucx(system) else None)


def check_ucx(bench, where, stats, sent, tcp_pipelines, fetched, over_tcp,
              written, rep, allowance=(0, 0)):
    """The ucx system's batch carried every byte over UCX, or the run
    fails. At least every byte: a partial checksum chunk that hflush
    sent goes again with the next packet, which a counter could count
    twice (those of 0815816 count each byte once). `allowance`: the bytes
    and blocks its client JVMs may keep on TCP (--defer-start on: one
    block each), less of which UCX then must carry."""
    tcp_bytes, tcp_blocks = allowance
    least = max(0, written - tcp_bytes)
    if not any(stats):
        if least:
            bench.fail("%s: the UCX client wrote no stats file (its UCX "
                       "runtime never started): its bytes went over TCP"
                       % where)
            return
    elif sent < least and not tcp_bytes:
        bench.fail("%s: the UCX client sent %d bytes by UCX of %d written: "
                   "the rest went over TCP" % (where, sent, written))
    elif sent < least:
        bench.fail("%s: the UCX client sent %d bytes by UCX of %d written, "
                   "fewer than all but %d block(s) (--defer-start on: one "
                   "per JVM over TCP): the rest went over TCP"
                   % (where, sent, written, tcp_blocks))
    if tcp_pipelines:
        bench.fail("%s: %d pipeline(s) of the UCX client went over TCP"
                   % (where, tcp_pipelines))
    if fetched is None:
        if bench.rdma_bean_seen:
            bench.fail("%s: no DataNode UCX counters" % where)
        else:
            bench.note("%s: DataNode UCX counters n/a; the client's own "
                       "count says %d bytes went by UCX" % (where, sent))
        return
    if fetched < least * rep:
        bench.fail("%s: the DataNodes fetched %d bytes by UCX, fewer than "
                   "%d (bytes x replication%s): the rest went over TCP"
                   % (where, fetched, least * rep, ", less one block per "
                      "JVM, --defer-start on" if tcp_bytes else ""))
    elif fetched != sent * rep:
        bench.note("%s: the DataNodes fetched %d bytes by UCX, the client "
                   "sent %d x %d" % (where, fetched, sent, rep))
    if over_tcp and over_tcp > tcp_blocks * rep:
        bench.fail("%s: %d block replica(s) went over TCP%s" % (
            where, over_tcp, ", more than %d (one block per JVM, "
            "--defer-start on)" % (tcp_blocks * rep) if tcp_blocks else ""))


def human_app(app):
    """A workload's shape in words, for the log."""
    if app.kind == "wal":
        return "%d log(s) of %s records, %s, %g s" % (
            app.threads, human(app.size), app.sync, app.seconds)
    if app.kind == "dfsio":
        return "TestDFSIO write on YARN, %d maps x %s at rep %d" % (
            app.files, human(app.size), app.rep)
    if app.kind == "spark":
        return ("PySpark local[%d], one driver JVM: %d Parquet file(s) of "
                "about %s at rep %d" % (app.threads, app.threads,
                                        human(app.size), app.rep))
    if app.kind == "idle":
        return "a client idle for %g s after 2 files of %s at rep %d" % (
            app.seconds, human(app.size), app.rep)
    if app.kind == "threads":
        return "1 JVM, %d writer thread(s) x %d files of %s at rep %d" % (
            app.threads, app.files, human(app.size), app.rep)
    if app.kind == "mixed":
        return ("1 JVM, %d writer thread(s) x %d files of %s and a log of "
                "%s records, hflush, at rep %d" % (
                    app.threads, app.files, human(app.size),
                    human(app.record), app.rep))
    return "%d JVM(s) x %d files of %s at rep %d" % (
        app.jvms, app.files, human(app.size), app.rep)
