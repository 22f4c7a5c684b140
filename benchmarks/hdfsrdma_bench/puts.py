"""One batch of puts: FsShell -put JVMs started together on one system's
cluster, timed and measured (CPU, context switches, the DataNodes'
counters), each file checked in HDFS and deleted; then whether the UCX
path carried what the system should have sent over it, and the row a put
adds to puts.csv."""

import hashlib
import os
import time

from . import defer_start, ucx_counters
from .harness import HarnessError
from .measurement import ContextSwitches
from .units import MiB, blocks_of, human, packets_of


def make_input(bench, size, index=0):
    """The input file `index` of `size` random bytes under the work
    directory and its SHA-256: written once, reused by later puts (and by
    the next run with --keep-work)."""
    key = (size, index)
    if key in bench.inputs:
        return bench.inputs[key]
    d = os.path.join(bench.work, "inputs")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "in-%s-%d.bin" % (human(size), index))
    sha_path = path + ".sha256"
    if os.path.exists(path) and os.path.exists(sha_path) and \
            os.path.getsize(path) == size:
        with open(sha_path) as f:
            digest = f.read().strip()
    else:
        h = hashlib.sha256()
        left = size
        with open(path, "wb") as f:
            while left:
                chunk = os.urandom(min(left, 8 * MiB))
                h.update(chunk)
                f.write(chunk)
                left -= len(chunk)
        digest = h.hexdigest()
        with open(sha_path, "w") as f:
            f.write(digest + "\n")
    bench.inputs[key] = (path, digest)
    return path, digest


def put_batch(bench, system, files, rep, tag, verify, jvm_props=()):
    """Runs one FsShell -put JVM per local file, all at once, on the
    given system's cluster; returns one dict per put plus the batch wall
    time. `jvm_props`: extra JVM options of the put JVMs (a profiler)."""
    c = bench.cluster_of[system]
    c.wait_clean()
    jobs = put_jobs(bench, system, files, rep, tag, jvm_props)
    total = sum(os.path.getsize(j["path"]) for j in jobs)
    timeout = 180 + total * max(1, rep) / (5e6)
    before_ctr = c.dn_counters()   # first: JMX reads cost DataNode CPU
    dn_pids = c.dn_pids
    switches = ContextSwitches(dn_pids).start() if dn_pids else None
    before_dn = c.dn_cpu()
    before_nn = c.nn_cpu()
    t0 = time.monotonic()
    for j in jobs:
        j["start"] = time.monotonic()
        j["proc"] = bench.procs.spawn(j["argv"], j["log"],
                                      name="%s put %s" % (system, tag))
    done = bench.procs.wait_all([j["proc"] for j in jobs], timeout,
                                bench.cluster_pids)
    t1 = max(d[0] for d in done.values())
    after_dn, after_nn = c.dn_cpu(), c.nn_cpu()
    dn_cpu = None if before_dn is None or after_dn is None else \
        after_dn - before_dn
    nn_cpu = None if before_nn is None or after_nn is None else \
        after_nn - before_nn
    dn_switches = switches.stop() if switches else (None, None)
    # metrics2 JMX values lag up to one period (1 s in the embedded
    # clusters, see METRICS2).
    if c.metrics_lag:
        time.sleep(max(0.0, c.metrics_lag - (time.monotonic() - t1)))
    for j in jobs:
        end, rc, ru = done[j["proc"].pid]
        j.update(wall=end - j["start"], rc=rc,
                 cpu=ru.ru_utime + ru.ru_stime,
                 switches=(ru.ru_nvcsw, ru.ru_nivcsw),
                 dn_switches=dn_switches)
        check_put(c, system, j, rep, verify)
    after_ctr = c.dn_counters()
    for j in jobs:
        c.delete(j["target"])
    delta = {k: after_ctr[k] - before_ctr.get(k, 0) for k in after_ctr}
    if not c.metrics_lag:
        delta.pop("activity.BytesWritten", None)
    check_carried(bench, system, tag, jobs, delta, total, rep)
    return jobs, t1 - t0, dn_cpu, nn_cpu, delta, total


def put_jobs(bench, system, files, rep, tag, jvm_props):
    """One dict per file of a batch: its HDFS target, the put JVM's
    command line, log and stats file (numbered in the order of the run)."""
    c = bench.cluster_of[system]
    client = bench.clients[system]
    stats_dir = os.path.join(bench.out, "logs")
    os.makedirs(stats_dir, exist_ok=True)
    jobs = []
    for i, (path, digest) in enumerate(files):
        bench.seq += 1
        target = "%s/%s-%s-%d" % (c.bench_dir, tag, system, i)
        base = os.path.join(stats_dir, "%04d-%s-%s-%d" % (
            bench.seq, tag, system, i))
        props = list(jvm_props)
        if client.agent:
            props.append("-Dhdfsrdma.stats.file=" + base + ".ucx")
        argv = client.put_argv(rep, path, target, props)
        jobs.append(dict(path=path, digest=digest, target=target,
                         log=base + ".log", stats=base + ".ucx",
                         argv=argv))
    return jobs


def check_put(c, system, j, rep, verify):
    """After a put JVM's exit: it succeeded, its file has the length and
    replication asked for, reads back the same (`verify`); adds the
    client's UCX stats line to the job."""
    if j["rc"] != 0:
        raise HarnessError("%s put of %s failed (rc %d); see %s" % (
            system, j["path"], j["rc"], j["log"]))
    st = c.status(j["target"])
    size = os.path.getsize(j["path"])
    if st["length"] != size or st["replication"] != rep:
        raise HarnessError("%s: %s has length %s replication %s, "
                           "expected %d and %d" % (
                               system, j["target"], st["length"],
                               st["replication"], size, rep))
    if verify:
        digest, n = c.sha256(j["target"])
        if digest != j["digest"]:
            raise HarnessError("%s: %s read back differs (%d bytes)"
                               % (system, j["target"], n))
    j["verified"] = verify
    j["client_stats"] = ucx_counters.read_stats(j["stats"])


def check_carried(bench, system, tag, jobs, delta, total, rep):
    """What a batch's DataNodes wrote, and whether the UCX path carried
    what the system should have sent over it (nothing for jar, nor for a
    UCX client whose policy chose TCP between emulated hosts); adds the
    batch to what the whole run's totals must count."""
    c = bench.cluster_of[system]
    bench.bytes_expected += total * rep
    written = delta.get("activity.BytesWritten")
    if written is not None and written != total * rep:
        bench.note("%s %s: the DataNodes wrote %d bytes, expected %d "
                   "(size x replication)" % (system, tag, written,
                                             total * rep))
    where = "%s %s" % (system, tag)
    if system == "ucx" and bench.ucx_policy_over_tcp:
        bench.jar_expected_blocks += rep * sum(
            blocks_of(os.path.getsize(j["path"]), c.block_size)
            for j in jobs)
        check_jar(bench, jobs, delta, where, policy=True)
    elif bench.is_ucx(system):
        # --defer-start on: each put JVM's first block over TCP.
        sizes = [os.path.getsize(j["path"]) for j in jobs]
        expected = sum(defer_start.put_ucx_bytes(bench, system, s)
                       for s in sizes)
        tcp_replicas = rep * sum(defer_start.put_tcp_blocks(bench, s)
                                 for s in sizes)
        bench.ucx_expected_bytes += expected * rep
        bench.jar_expected_blocks += tcp_replicas
        check_ucx(bench, jobs, delta, total, rep, where, expected,
                  tcp_replicas)
    elif system == "jar":
        bench.jar_expected_blocks += rep * sum(
            blocks_of(os.path.getsize(j["path"]), c.block_size)
            for j in jobs)
        check_jar(bench, jobs, delta, where)


def check_ucx(bench, jobs, delta, total, rep, where, expected=None,
              tcp_replicas=0):
    """Whether the UCX puts moved their bytes by UCX get: the client sent
    every byte as descriptors, the DataNodes (their HdfsRdmaDataNode
    metrics) fetched size x replication and took no replica over TCP.
    `expected`, `tcp_replicas`: with --defer-start on, the bytes the
    clients send by UCX (all but each JVM's first block: none for a put
    of one block or less, which then may write no stats file at all) and
    the replicas of those first blocks the DataNodes take over TCP."""
    expected = total if expected is None else expected
    why = "" if expected == total else \
        ", past each put JVM's first block (--defer-start on)"
    sent = sum(j["client_stats"].get(ucx_counters.STATS_SENT, 0) or 0
               for j in jobs)
    if not expected:
        if sent:
            bench.note("%s: the UCX client sent %d bytes by UCX, expected "
                       "none (its first block over TCP, --defer-start on)"
                       % (where, sent))
    elif not any(j["client_stats"] for j in jobs):
        bench.ucx_problem("%s: the UCX client wrote no stats file (its UCX "
                          "runtime never started)" % where)
    elif sent == 0:
        bench.ucx_problem("%s: the UCX client sent no bytes by UCX "
                          "(%s=0)" % (where, ucx_counters.STATS_SENT))
    elif sent != expected:
        bench.note("%s: the UCX client sent %d bytes by UCX, expected %d%s"
                   % (where, sent, expected, why))
    key = ucx_counters.fetched_key(delta)
    if key is None:
        return None
    fetched = delta[key]
    if fetched == 0 and expected:
        bench.ucx_problem("%s: the UCX DataNodes fetched no bytes by UCX "
                          "(%s)" % (where, key))
    elif fetched != expected * rep:
        bench.note("%s: DataNodes fetched %d bytes by UCX, expected %d "
                   "(size x replication%s)" % (where, fetched,
                                               expected * rep, why))
    over_tcp = delta.get(ucx_counters.BLOCKS_OVER_TCP)
    if over_tcp is not None and over_tcp != tcp_replicas:
        bench.note("%s: %d replica(s) of a UCX put went over TCP%s" % (
            where, over_tcp, ", expected %d (each put JVM's first block, "
            "--defer-start on)" % tcp_replicas if tcp_replicas else ""))
    return fetched


def check_jar(bench, jobs, delta, where, policy=False):
    """A jar put (dfs.client.rdma.enabled=false) must move nothing over
    UCX: its client starts no UCX runtime (so writes no stats line, or
    one that sent 0 bytes), and the DataNodes fetch nothing by get and
    take no replica over UCX. `policy`: a UCX client between emulated
    hosts, which must have chosen TCP itself."""
    sent = sum(j["client_stats"].get(ucx_counters.STATS_SENT, 0) or 0
               for j in jobs)
    fetched = delta.get(ucx_counters.fetched_key(delta) or "", 0)
    over_ucx = delta.get(ucx_counters.BLOCKS_OVER_UCX, 0)
    if sent or fetched or over_ucx:
        bench.ucx_problem("%s: a put with %s moved data over UCX (client "
                          "sent %d bytes, DataNodes fetched %d, %d "
                          "replica(s) over UCX)" % (
                             where, "UCX on between hosts without RDMA"
                             if policy else
                             "dfs.client.rdma.enabled=false",
                             sent, fetched, over_ucx))


def put_row(bench, system, size, rep, run, jobs, dn_cpu, nn_cpu, delta,
            kind="put"):
    """The row of puts.csv for the first put of a batch."""
    j = jobs[0]
    cs = j["client_stats"]
    c = bench.cluster_of[system]
    row = dict(kind=kind, system=system, size_bytes=size,
               size=human(size), rep=rep, run=run,
               wall_s=round(j["wall"], 4), client_cpu_s=round(j["cpu"], 3),
               dn_cpu_s=None if dn_cpu is None else round(dn_cpu, 3),
               nn_cpu_s=None if nn_cpu is None else round(nn_cpu, 3),
               client_csw_voluntary=j["switches"][0],
               client_csw_involuntary=j["switches"][1],
               dn_csw_voluntary=j["dn_switches"][0],
               dn_csw_involuntary=j["dn_switches"][1],
               packets=packets_of(size, c.block_size),
               dn_bytes_written=delta.get("activity.BytesWritten"),
               ucx_bytes_sent=cs.get(ucx_counters.STATS_SENT,
                                     0 if system == "jar" else None),
               ucx_bytes_fetched=None,
               transport={"stock": "tcp (stock)",
                          "jar": "tcp (jar, UCX off)"}.get(
                   system, str(cs.get(ucx_counters.STATS_TRANSPORTS,
                                      "")).replace("_", " ")),
               verified=j["verified"])
    if system != "stock":
        key = ucx_counters.fetched_key(delta)
        row["ucx_bytes_fetched"] = delta.get(key) if key else None
        # Everything else the client's stats line and the DataNodes'
        # HdfsRdmaDataNode metrics (counters and per-phase rates).
        for k, v in sorted(cs.items()):
            if k not in (ucx_counters.STATS_SENT,
                         ucx_counters.STATS_TRANSPORTS):
                row["client_" + k.replace("-", "_")] = v
        for k, v in sorted(delta.items()):
            if k.startswith(ucx_counters.PREFIX):
                row["dn_" + k.replace(".", "_")] = v
    return row
