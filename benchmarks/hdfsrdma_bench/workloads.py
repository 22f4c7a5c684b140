"""What a run measures, put by put: the warm-up, the sweep over sizes,
replication and runs (each run's systems in alternation or a Williams
order), the machine's limit for the same bytes (a local copy and the
native UCX fan-out benchmark), the concurrent writers, and the
per-transfer cost of benchmarks/transfer.sh."""

import csv
import math
import os
import re
import statistics
import subprocess
import time

from .harness import BENCHMARKS, REPO, HarnessError, log
from .puts import make_input, put_batch, put_row
from .stats import williams_orders
from .ucx_counters import fetched_key
from .report import md_table
from .units import MiB, PACKET, fmt, human, human_long

FANOUT_BENCH = os.path.join(REPO, "native", "target", "cmake",
                            "ucx_fanout_bench")


def warmup(bench):
    """One unrecorded put per system: the DataNodes' JIT for each path
    (the jar's puts take the UCX cluster's TCP path)."""
    size = min(bench.args.warmup, max(bench.args.sizes))
    if size <= 0:
        return
    path, digest = make_input(bench, size)
    log("warm-up: one %s put at replication 3 per system (not recorded)"
        % human_long(size))
    for system in bench.systems:
        put_batch(bench, system, [(path, digest)], 3, "warmup", True)


def run_order(bench, run):
    """The systems in the order run `run` (from 1) measures them: the
    alternation order, or with --balance-order row run-1 of a Williams
    design over them."""
    order = list(bench.systems)
    if bench.args.balance_order and order:
        rows = williams_orders(len(order))
        order = [order[i] for i in rows[(run - 1) % len(rows)]]
    return order


def sweep(bench):
    """Every size, replication and run: one put per system, in the run's
    order (puts.csv), then on embedded clusters the limit for the same
    bytes (limit.csv)."""
    a = bench.args
    for size in a.sizes:
        path, digest = make_input(bench, size)
        for rep in a.reps:
            for run in range(1, a.runs + 1):
                verify = a.verify == "all" or (a.verify == "first"
                                               and run == 1)
                walls = {}
                for system in run_order(bench, run):
                    tag = "put-%s-r%d-%d" % (human(size), rep, run)
                    jobs, _, dn_cpu, nn_cpu, delta, total = \
                        put_batch(bench, system, [(path, digest)], rep,
                                  tag, verify)
                    row = put_row(bench, system, size, rep, run, jobs,
                                  dn_cpu, nn_cpu, delta)
                    bench.put_rows.append(row)
                    walls[system] = row["wall_s"]
                msg = "%6s rep %d run %d: %s" % (
                    human(size), rep, run, ", ".join(
                        "%s %.2f s" % (s, walls[s])
                        for s in bench.systems))
                if bench.clusters and not bench.hosts:
                    lim = limit(bench, size, rep, run, path)
                    msg += ", copy %.2f s, fan-out %s s" % (
                        lim["copy_s"], fmt(lim["fanout_s"], 3))
                log(msg)


def limit(bench, size, rep, run, path):
    """The machine's limit for a file of `size` bytes at replication `rep`:
    r local copies of it into the UCX cluster's storage at once, and the
    UCX fan-out of its packets to r getters; the slower of the two."""
    c = bench.clusters["ucx"]
    dests = [os.path.join(c.data_dirs[i], "limit-copy.bin")
             for i in range(rep)]
    t0 = time.monotonic()
    cps = [bench.procs.spawn(["cp", path, d], name="cp") for d in dests]
    done = bench.procs.wait_all(cps, 600, bench.cluster_pids)
    copy_s = max(d[0] for d in done.values()) - t0
    for d in dests:
        if not os.path.exists(d) or os.path.getsize(d) != size:
            raise HarnessError("limit copy to %s failed" % d)
        os.unlink(d)
    fan = fanout(bench, size, rep)
    row = dict(size_bytes=size, size=human(size), rep=rep, run=run,
               copy_s=round(copy_s, 4), fanout_s=fan.get("fanout_s"),
               fanout_packets=fan.get("packets"),
               fanout_gbps_aggregate=fan.get("gbps_aggregate"),
               fanout_lat_p50_us=fan.get("lat_p50_us"),
               fanout_lat_p99_us=fan.get("lat_p99_us"),
               fanout_rma_lanes=fanout_lanes(rep))
    row["limit_s"] = round(max(copy_s, row["fanout_s"] or 0), 4)
    bench.limit_rows.append(row)
    return row


def fanout_env():
    """The fan-out benchmark's environment: UCX as the product runs it."""
    env = dict(os.environ)
    env.pop("UCX_TLS", None)          # the product's default: UCX picks
    env["UCX_MM_ERROR_HANDLING"] = "y"  # as the bridge sets it
    return env


def fanout(bench, size, rep):
    """native ucx_fanout_bench: one owner's 64 KiB packets fetched by
    `rep` getters with UCX get, its time scaled to `size` bytes."""
    exe = FANOUT_BENCH
    if not os.access(exe, os.X_OK):
        bench.note("no %s: fan-out limit n/a" % exe)
        return {}
    # 64 MiB to 1 GiB per getter (a steadier rate than a few packets),
    # scaled to the file's size below.
    packets = min(max(math.ceil(size / PACKET), 1024), 16384)
    out = os.path.join(bench.work, "fanout.out")
    p = bench.procs.spawn([exe, "-s", "64K", "-r", str(rep), "-n",
                           str(packets), "--err-handling", "--ucx-alloc",
                           "--csv", "--timeout", "120"], out,
                          env=fanout_env(), name="ucx_fanout_bench")
    done = bench.procs.wait_all([p], 200, bench.cluster_pids)
    with open(out) as f:
        text = f.read()
    os.unlink(out)
    if done[p.pid][1] != 0:
        bench.fail("ucx_fanout_bench -r %d failed: %s" % (
            rep, text.strip()[-300:]))
        return {}
    lines = text.splitlines()
    head = [i for i, line in enumerate(lines) if line.startswith("size,")]
    rows = list(csv.DictReader(
        [lines[head[-1]]] + [line for line in lines[head[-1] + 1:]
                             if line[:1].isdigit()])) if head else []
    if not rows:
        bench.fail("ucx_fanout_bench printed no CSV row: %s" % text[-300:])
        return {}
    r = rows[-1]
    moved = int(r["bytes"])
    secs = float(r["seconds"])
    # Scaled to this file: every getter fetches `size` bytes.
    return dict(fanout_s=round(secs * size * rep / moved, 4),
                packets=packets, gbps_aggregate=float(r["gbps_aggregate"]),
                lat_p50_us=float(r["lat_p50_us"]),
                lat_p99_us=float(r["lat_p99_us"]))


# fanout_lanes: replication -> RMA lanes, measured once per run.
_lanes = {}


def fanout_lanes(rep):
    """The RMA lanes the fan-out benchmark's endpoints used (one short
    extra run per replication, non-CSV output)."""
    if rep in _lanes:
        return _lanes[rep]
    exe = FANOUT_BENCH
    lanes = "n/a"
    if os.access(exe, os.X_OK):
        r = subprocess.run([exe, "-s", "64K", "-r", str(rep), "-n", "256",
                            "--err-handling", "--ucx-alloc"],
                           env=fanout_env(),
                           capture_output=True, text=True, timeout=120)
        m = re.search(r"RMA lanes \(getter 0\): (\S+)", r.stdout)
        lanes = m.group(1) if m else "n/a"
    _lanes[rep] = lanes
    return lanes


def scale(bench):
    """Concurrent writers: batches of N puts at once, each of its own
    input file, systems alternating per batch (scale.csv)."""
    a = bench.args
    size = a.writer_size
    files = [make_input(bench, size, i + 1) for i in range(max(a.writers))]
    for n in a.writers:
        for rep in a.scale_reps:
            for run in range(1, a.scale_runs + 1):
                res = {}
                for system in bench.systems:
                    tag = "scale-%dx%s-r%d-%d" % (n, human(size), rep, run)
                    jobs, batch, dn_cpu, nn_cpu, delta, total = \
                        put_batch(bench, system, files[:n], rep, tag,
                                  a.verify == "all")
                    key = fetched_key(delta)
                    walls = [j["wall"] for j in jobs]
                    row = dict(system=system, writers=n, size_bytes=size,
                               size=human(size), rep=rep, run=run,
                               batch_wall_s=round(batch, 4),
                               aggregate_mib_s=round(total / MiB / batch,
                                                     2),
                               writer_wall_median_s=round(
                                   statistics.median(walls), 4),
                               writer_wall_max_s=round(max(walls), 4),
                               client_cpu_s=round(sum(j["cpu"]
                                                      for j in jobs), 3),
                               dn_cpu_s=None if dn_cpu is None
                               else round(dn_cpu, 3),
                               dn_bytes_written=delta.get(
                                   "activity.BytesWritten"),
                               ucx_bytes_fetched=delta.get(key)
                               if key and system != "stock" else None)
                    bench.scale_rows.append(row)
                    res[system] = row
                log("scale %d x %s rep %d run %d: %s" % (
                    n, human(size), rep, run, ", ".join(
                        "%s %.1f MiB/s (%.2f s)" % (
                            s, res[s]["aggregate_mib_s"],
                            res[s]["batch_wall_s"])
                        for s in bench.systems)))


def run_transfer(bench):
    """benchmarks/transfer.sh (JMH per-transfer cost), when it exists."""
    script = os.path.join(BENCHMARKS, "transfer.sh")
    if bench.args.no_transfer or bench.args.hosts:
        return None
    if not os.path.exists(script):
        log("benchmarks/transfer.sh not there yet: per-transfer cost skipped")
        return None
    log("running benchmarks/transfer.sh --out %s --%s" % (
        bench.out, bench.args.profile))
    r = subprocess.run(["bash", script, "--out", bench.out,
                        "--" + bench.args.profile], cwd=REPO)
    if r.returncode != 0:
        bench.fail("benchmarks/transfer.sh failed (rc %d)" % r.returncode)
        return None
    path = os.path.join(bench.out, "transfer.csv")
    if not os.path.exists(path):
        bench.fail("benchmarks/transfer.sh wrote no transfer.csv")
        return None
    with open(path) as f:
        rows = list(csv.reader(f))
    if not rows:
        return None
    text = md_table(rows[0], rows[1:])
    if os.path.exists(os.path.join(bench.out, "transfer.png")):
        text += "\n\nPlot: [transfer.png](transfer.png)"
    return text
