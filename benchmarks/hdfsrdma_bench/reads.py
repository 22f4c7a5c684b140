"""--reads: HDFS reads, stock against the UCX read path, on the embedded
clusters of one release. Which workloads a run has, the files they read
(written once per cluster before the runs, not measured), and one batch
per workload, run and system in the sweep's alternation: one
org.hdfsrdma.hadoop.bench.ReadWorkload JVM, measured (its figures, the
client's and the DataNodes' CPU, the bytes it took over UCX) and held to
what the system must have carried: a ucx batch every byte over UCX with
no read fallen back, a stock or jar batch nothing over UCX. Its report
is read_report.py's.

Workloads (names say the pattern and the size):

- seq-SIZE: one JVM reads files of SIZE whole, one after the other, in
  reads of 1 MiB (about --read-bytes per batch; a file of more is read
  once); throughput, and latency per file (open, reads, close).
- pread-SIZE: one JVM makes --pread-count positional reads of SIZE at
  random offsets of one file of --pread-file bytes through one open
  stream, as Parquet and ORC readers do; latency per read.
- readers-NxSIZE: N threads of one JVM, each reading files of SIZE of
  its own at once; aggregate throughput.
"""

import collections
import os
import time

from . import ucx_counters
from .app_runs import workload_jar
from .apps import parse_result, read_latencies, run_figures
from .harness import HarnessError, log
from .profiles import READS
from .read_profile import check_profile_arg, profile_reads
from .units import GiB, MiB, human, parse_list, parse_size
from .systems import default_of
from .workloads import run_order

READ_CLASS = "org.hdfsrdma.hadoop.bench.ReadWorkload"
READ_KEY = "dfs.client.rdma.read.enabled"
MIN_BYTES_KEY = "dfs.client.rdma.read.min-bytes"
BLOCK = 128 * MiB           # the clusters' block size (Hadoop's default)
SEQ_READ = 1 * MiB          # the sequential readers' read() size
MAX_SEQ_FILES = 64          # files of one size a sequential batch reads
# Keys of a client's totals line (hdfsrdma.stats.file) and of the
# DataNodes' bean, for reads.
STATS_READ_BYTES = "ucx-read-bytes"
STATS_READS_FELL_BACK = "reads-fell-back"
DN_READ_BYTES = ucx_counters.PREFIX + "ReadBytesOverUcx"
DN_READS_FELL_BACK = ucx_counters.PREFIX + "ReadsFellBack"

# kind: seq, pread or readers; size: the file size; files: files of that
# size the batch reads; threads; read: bytes per read call; count: reads
# per thread (pread); passes: times the files are read (seq).
Read = collections.namedtuple(
    "Read", "name kind size files threads read count passes")


def add_read_options(ap):
    """--reads and its sizes (each by default the profile's, profiles.py's
    READS)."""
    g = ap.add_argument_group(
        "reads (--reads): ReadWorkload JVMs reading files written before "
        "the runs; stock, jar and ucx (with %s) alternating per run; "
        "results in reads.csv and reads-summary.md; sizes by default the "
        "profile's" % READ_KEY)
    g.add_argument("--reads", action="store_true",
                   help="run the read workloads instead of the put sweep:"
                   " seq-SIZE, pread-SIZE, readers-NxSIZE")
    g.add_argument("--read-seq", metavar="SIZES", type=parse_list(
        parse_size), help="file sizes of the sequential reads, e.g. "
        "1M,64M,1G")
    g.add_argument("--read-pread", metavar="SIZES", type=parse_list(
        parse_size), help="sizes of the positional reads, e.g. 4K,64K")
    g.add_argument("--pread-file", metavar="SIZE", type=parse_size,
                   help="the file they read")
    g.add_argument("--pread-count", metavar="N", type=int,
                   help="positional reads per batch")
    g.add_argument("--read-threads", metavar="N,...", type=parse_list(int),
                   help="reader threads of the readers workloads ('': "
                   "none)")
    g.add_argument("--read-threads-size", metavar="SIZE", type=parse_size,
                   help="their file size")
    g.add_argument("--read-bytes", metavar="SIZE", type=parse_size,
                   help="about how much a sequential batch reads")
    g.add_argument("--read-rep", metavar="R", type=int,
                   help="replication of the files read")
    g.add_argument("--reads-profile", metavar="NAME",
                   help="after the runs, one more batch of workload NAME "
                   "on stock and ucx with async-profiler's CPU samples in "
                   "the DataNodes and the reader (OUT/reads-profile)")
    g.add_argument("--read-min-bytes", metavar="SIZE", type=parse_size,
                   help="the ucx client's %s (default: the drop-in jar's;"
                   " 0: every read offers UCX)" % MIN_BYTES_KEY)


def check_read_args(ap, a):
    """--reads: what it excludes, its sizes (the profile's where the
    command line gives none); the workloads (a.reads_list)."""
    given = [k for k in list(READS) + ["read_min_bytes", "reads_profile"]
             if k in a.given]
    a.reads_list = []
    if not a.reads:
        if given:
            ap.error("--%s needs --reads" % given[0].replace("_", "-"))
        return
    for bad, why in ((a.apps, "--apps"), (a.conf or a.conf_self_test,
                                          "--conf"),
                     (a.hosts, "--hosts"), (a.flamegraphs, "--flamegraphs"),
                     (a.scale, "--scale"),
                     (a.compare_distributions, "--compare-distributions"),
                     (a.ucx_workers, "--ucx-workers")):
        if bad:
            ap.error("--reads runs its own workloads on one host's embedded"
                     " clusters: no %s" % why)
    sizes = a.read_seq + a.read_pread + [a.pread_file, a.read_threads_size,
                                         a.read_bytes]
    if min(sizes + [a.pread_count, a.read_rep] + a.read_threads) < 1:
        ap.error("--reads: counts and sizes must be positive")
    if a.read_min_bytes is not None and a.read_min_bytes < 0:
        ap.error("--read-min-bytes: 0 or more")
    if max(a.read_pread, default=0) > a.pread_file:
        ap.error("--read-pread: no read larger than --pread-file")
    a.reads_list = workloads(a)
    check_profile_arg(ap, a)


def workloads(a):
    """The read workloads the options describe, in the order a run
    measures them."""
    out = []
    for size in a.read_seq:
        files = max(1, min(MAX_SEQ_FILES, a.read_bytes // size))
        passes = max(1, a.read_bytes // (files * size))
        out.append(Read("seq-%s" % human(size), "seq", size, files, 1,
                        min(SEQ_READ, size), 1, passes))
    for size in a.read_pread:
        out.append(Read("pread-%s" % human(size), "pread", a.pread_file, 1,
                        1, size, a.pread_count, 1))
    for n in a.read_threads:
        size = a.read_threads_size
        passes = max(1, a.read_bytes // (n * size))
        out.append(Read("readers-%dx%s" % (n, human(size)), "readers",
                        size, n, n, min(SEQ_READ, size), 1, passes))
    return out


def threshold(bench):
    """The ucx client's dfs.client.rdma.read.min-bytes: --read-min-bytes,
    else the drop-in jar's default (0 for a jar without the key)."""
    if bench.args.read_min_bytes is not None:
        return bench.args.read_min_bytes
    value = default_of(bench.dropin, MIN_BYTES_KEY)
    return int(value) if value else 0


def over_ucx(bench, r):
    """Whether the ucx client's block readers of `r` offer UCX: each one's
    range (a positional read's length, a sequential read's block) is at
    least the threshold."""
    length = r.read if r.kind == "pread" else min(r.size, BLOCK)
    return length >= bench.read_min_bytes


def file_sets(reads):
    """{file size: files} every workload's files come from: one set per
    size, as many files as the workload that needs most."""
    sets = {}
    for r in reads:
        sets[r.size] = max(sets.get(r.size, 0), r.files)
    return sets


def files_dir(c, size):
    return "%s/reads/%s" % (c.bench_dir, human(size))


def run_reads(bench):
    """The files written to each cluster, then every workload, run and
    system: one batch each, in the run's order (rows in bench.read_rows).
    The ucx client reads with the read path on; the jar client is the
    drop-in jar with it off."""
    a = bench.args
    jar = workload_jar(bench)
    bench.clients["ucx"].generic += ["-D", READ_KEY + "=true"]
    if a.read_min_bytes is not None:
        bench.clients["ucx"].generic += ["-D", "%s=%d" % (
            MIN_BYTES_KEY, a.read_min_bytes)]
    bench.read_min_bytes = threshold(bench)
    log("the ucx client offers UCX for reads of %s and more (%s)" % (
        human(bench.read_min_bytes), MIN_BYTES_KEY))
    prepare(bench, jar)
    for r in bench.reads:
        log("%s: %s, %d run(s)" % (r.name, shape(r), a.runs))
        for run in range(1, a.runs + 1):
            got = {}
            for system in run_order(bench, run):
                row = read_batch(bench, system, r, run, jar)
                bench.read_rows.append(row)
                got[system] = row
            log("%s run %d: %s" % (r.name, run, ", ".join(
                "%s %.1f MB/s p50 %.3f p99 %.3f ms" % (
                    s, got[s]["throughput_mb_s"], got[s]["p50_ms"],
                    got[s]["p99_ms"]) for s in bench.systems)))
    if a.reads_profile:
        profile_reads(bench, read_batch, jar)


def prepare(bench, jar):
    """Writes every file set to each cluster, by the stock client on the
    stock cluster and the jar client (over TCP) on the ucx one."""
    sets = file_sets(bench.reads)
    rep = bench.args.read_rep
    log("writing the files read: %s at replication %d, to each cluster"
        % (", ".join("%d x %s" % (n, human(s)) for s, n in
                     sorted(sets.items())), rep))
    for system in ("stock", "jar"):
        c, client = bench.cluster_of[system], bench.clients[system]
        for size, n in sorted(sets.items()):
            out = os.path.join(bench.out, "reads", "prepare-%s-%s.log"
                               % (c.name, human(size)))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            argv = client.jvm_argv(READ_CLASS, [
                "prepare", "-dir", files_dir(c, size), "-files", str(n),
                "-size", str(size), "-rep", str(rep),
                "-read", str(min(SEQ_READ, size))], (), [jar])
            proc = bench.procs.spawn(argv, out, name="prepare %s" % c.name)
            _, rc, _ = bench.procs.wait_all(
                [proc], timeout_of(n * size * rep),
                bench.cluster_pids)[proc.pid]
            with open(out, errors="replace") as f:
                result, _ = parse_result(f.read())
            if rc != 0 or result is None:
                raise HarnessError("writing the files read to the %s "
                                   "cluster failed (rc %d); see %s"
                                   % (c.name, rc, out))
            if system == "jar":   # its replicas reach the DataNodes by TCP
                bench.jar_expected_blocks += result["blocks"] * rep


def timeout_of(nbytes):
    """How long a ReadWorkload JVM may take: start-up and verification
    allowance, plus its bytes at 5 MB/s."""
    return 600 + nbytes / 5e6


def read_args(r, c, rep, lat_file):
    """ReadWorkload's arguments for one batch of `r` on cluster `c`."""
    mode = "pread" if r.kind == "pread" else "seq"
    return [mode, "-dir", files_dir(c, r.size), "-files", str(r.files),
            "-size", str(r.size), "-rep", str(rep),
            "-read", str(r.read), "-threads", str(r.threads),
            "-passes", str(r.passes), "-count", str(r.count),
            "-lat-file", lat_file]


def read_batch(bench, system, r, run, jar, jvm_props=()):
    """One run of `r` on `system`: its JVM launched (with `jvm_props`
    too), waited for and checked; the run's row."""
    c = bench.cluster_of[system]
    client = bench.clients[system]
    bench.seq += 1
    base = os.path.join(bench.out, "reads", "%04d-%s-%s-%d" % (
        bench.seq, r.name, system, run))
    props = (["-Dhdfsrdma.stats.file=" + base + ".ucx"] if client.agent
             else []) + list(jvm_props)
    argv = client.jvm_argv(READ_CLASS, read_args(r, c, bench.args.read_rep,
                                                 base + ".lat"),
                           props, [jar])
    before_ctr = c.dn_counters()
    before_dn = c.dn_cpu()
    proc = bench.procs.spawn(argv, base + ".log", name="%s %s" % (system,
                                                                  r.name))
    _, rc, ru = bench.procs.wait_all(
        [proc], timeout_of(r.files * r.size * r.passes),
        bench.cluster_pids)[proc.pid]
    after_dn = c.dn_cpu()
    if c.metrics_lag:
        time.sleep(c.metrics_lag)
    after_ctr = c.dn_counters()
    with open(base + ".log", errors="replace") as f:
        result, errors = parse_result(f.read())
    if rc != 0 or result is None or result.get("status") != "ok":
        raise HarnessError("%s %s run %d: ReadWorkload failed (rc %d)%s; "
                           "see %s.log" % (system, r.name, run, rc,
                                           ": " + errors[0] if errors
                                           else "", base))
    lat = read_latencies(base + ".lat")
    row = dict(workload=r.name, kind=r.kind, system=system, run=run)
    row.update(figures(r, result, lat))
    gib = result["measured_bytes"] / GiB
    cpu = ru.ru_utime + ru.ru_stime
    dn_cpu = None if after_dn is None or before_dn is None else \
        after_dn - before_dn
    row.update(client_cpu_s=round(cpu, 3),
               dn_cpu_s=None if dn_cpu is None else round(dn_cpu, 3),
               client_cpu_s_per_gib=round(cpu / gib, 3),
               dn_cpu_s_per_gib=None if dn_cpu is None else
               round(dn_cpu / gib, 3),
               verified_bytes=result["verified_bytes"])
    stats = ucx_counters.read_stats(base + ".ucx")
    delta = {k: after_ctr[k] - before_ctr.get(k, 0) for k in after_ctr}
    row.update(carried(bench, system, r, result, stats, delta))
    return row


def figures(r, result, lat):
    """A batch's latency percentiles (run_figures' own, as --apps' writers
    get them) and its throughput over the measured span less the time the
    JVM spent comparing what it read (verify_ns)."""
    out = run_figures(r, [result], lat)
    secs = (result["end_ns"] - result["start_ns"]
            - int(result.get("verify_ns", 0))) / 1e9
    out["elapsed_s"] = round(secs, 4)
    out["throughput_mb_s"] = None if secs <= 0 else \
        round(result["measured_bytes"] / 1e6 / secs, 3)
    return {k: out[k] for k in ("elapsed_s", "throughput_mb_s", "p50_ms",
                                "p99_ms", "measured_bytes", "samples")}


def carried(bench, system, r, result, stats, delta):
    """What the batch took over UCX, and whether that is what the system
    must carry: the ucx system's every byte (the client took at least the
    bytes it read over UCX and no read fell back), stock's and jar's
    none. A miss fails the run."""
    took = stats.get(STATS_READ_BYTES, 0) or 0
    fell_back = stats.get(STATS_READS_FELL_BACK, 0) or 0
    dn_bytes = delta.get(DN_READ_BYTES)
    where = "%s %s" % (system, r.name)
    if system == "ucx" and not over_ucx(bench, r):
        if took:
            bench.fail("%s: reads below %s took %d bytes over UCX" % (
                where, MIN_BYTES_KEY, took))
    elif system == "ucx":
        if not stats:
            bench.fail("%s: the UCX client wrote no stats file (its UCX "
                       "runtime never started): its reads went over TCP"
                       % where)
        elif took < result["measured_bytes"]:
            bench.fail("%s: the client took %d bytes over UCX of %d read: "
                       "the rest came over TCP" % (
                           where, took, result["measured_bytes"]))
        if fell_back:
            bench.fail("%s: %d read(s) fell back to TCP" % (where,
                                                            fell_back))
    elif took or dn_bytes:
        bench.fail("%s: read path off, yet %d bytes came over UCX (the "
                   "DataNodes count %s)" % (where, took, dn_bytes))
    return dict(offers_ucx=over_ucx(bench, r) if system == "ucx" else None,
                ucx_read_bytes=took if system != "stock" else None,
                dn_ucx_read_bytes=dn_bytes, reads_fell_back=fell_back
                if system != "stock" else None)


def shape(r):
    """A workload's shape in words, for the log."""
    if r.kind == "pread":
        return "1 JVM, %d positional reads of %s at random offsets of a " \
            "%s file" % (r.count, human(r.read), human(r.size))
    return "1 JVM, %d thread(s), %d file(s) of %s read %d time(s) in " \
        "reads of %s" % (r.threads, r.files, human(r.size), r.passes,
                         human(r.read))
