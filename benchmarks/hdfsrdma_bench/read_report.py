"""What --reads writes: every batch (reads-runs.csv), per workload and
system the medians over runs and their ratios to stock (reads.csv), the
read targets judged on them (reads-targets.csv) and reads-summary.md."""

import os
import time

from .app_report import load_line
from .report import machine_info, md_table, write_csv
from .stats import median, ratio
from .targets import TARGET_RUNS, judge
from .units import KiB, MiB, fmt, human

# The figures of a batch, compared by ratio to stock's.
METRICS = ("throughput_mb_s", "p50_ms", "p99_ms", "dn_cpu_s_per_gib",
           "client_cpu_s_per_gib")
# More medians per workload and system.
EXTRAS = ("elapsed_s", "measured_bytes", "samples", "offers_ucx",
          "ucx_read_bytes",
          "dn_ucx_read_bytes", "reads_fell_back", "client_cpu_s",
          "dn_cpu_s")

# The targets of reads over UCX (benchmarks/README.md, "Reads"), UCX
# against stock on the same release, medians of >= TARGET_RUNS runs.
SEQ_TARGET = 2.0                 # throughput, sequential, files of ...
SEQ_TARGET_SIZE = 64 * MiB       # ... at least this
PREAD_TARGET = 0.6               # p50 and p99, positional reads of ...
PREAD_TARGET_SIZES = (4 * KiB, 64 * KiB)    # ... this range
DN_CPU_TARGET = 0.3              # DataNode CPU per GiB read
NEVER_SLOWER = 1.0               # every workload's throughput


def read_summary(reads, systems, rows):
    """reads.csv's rows: per workload and system the medians over its
    runs and their ratios to stock's (METRIC_vs_stock)."""
    out = []
    for r in reads:
        med = {}
        for s in systems:
            sel = [x for x in rows if x["workload"] == r.name
                   and x["system"] == s]
            if not sel:
                continue
            row = dict(workload=r.name, kind=r.kind, system=s,
                       runs=len(sel))
            row.update((m, rounded(median([x.get(m) for x in sel])))
                       for m in METRICS + EXTRAS)
            med[s] = row
        base = med.get("stock", {})
        for s, row in med.items():
            row.update(("%s_vs_stock" % m, rounded(ratio(
                row[m], base.get(m)))) for m in METRICS)
            row.update(file_size=r.size, read_size=r.read,
                       threads=r.threads)
            out.append(row)
    return out


def offered(row):
    """The ucx client's bytes over UCX, or why none."""
    if row.get("offers_ucx") is False or row.get("offers_ucx") == 0:
        return "none (below the threshold)"
    return fmt(row.get("ucx_read_bytes"), 0)


def rounded(v):
    return round(v, 4) if isinstance(v, float) else v


def read_targets(reads, summary):
    """The read targets judged on the ucx rows of `summary`."""
    ucx = {x["workload"]: x for x in summary if x["system"] == "ucx"}
    out = []

    def add(text, limit, sense, sel, key):
        rows = [ucx[r.name] for r in sel if r.name in ucx]
        out.append(judge(text, limit, sense,
                         [(x["workload"], x.get(key)) for x in rows],
                         min([x["runs"] for x in rows] or [0])))
    seq = [r for r in reads if r.kind == "seq"]
    add("sequential reads, files of %s and more: throughput, UCX/stock"
        % human(SEQ_TARGET_SIZE), SEQ_TARGET, ">=",
        [r for r in seq if r.size >= SEQ_TARGET_SIZE],
        "throughput_mb_s_vs_stock")
    small = [r for r in reads if r.kind == "pread"
             and PREAD_TARGET_SIZES[0] <= r.read <= PREAD_TARGET_SIZES[1]]
    for q in ("p50", "p99"):
        add("positional reads of %s-%s: latency %s, UCX/stock" % (
            human(PREAD_TARGET_SIZES[0]), human(PREAD_TARGET_SIZES[1]), q),
            PREAD_TARGET, "<=", small, "%s_ms_vs_stock" % q)
    add("sequential and concurrent reads: DataNode CPU per GiB, UCX/stock",
        DN_CPU_TARGET, "<=", [r for r in reads if r.kind != "pread"],
        "dn_cpu_s_per_gib_vs_stock")
    add("every read workload: throughput, UCX/stock (never slower)",
        NEVER_SLOWER, ">=", reads, "throughput_mb_s_vs_stock")
    return out


def finish_reads(bench):
    """Every file of a --reads run; returns the targets' rows."""
    summary = read_summary(bench.reads, bench.systems, bench.read_rows)
    target_rows = read_targets(bench.reads, summary)
    write_csv(os.path.join(bench.out, "reads-runs.csv"), bench.read_rows)
    write_csv(os.path.join(bench.out, "reads.csv"), summary)
    write_csv(os.path.join(bench.out, "reads-targets.csv"), target_rows)
    with open(os.path.join(bench.out, "reads-summary.md"), "w") as f:
        f.write(summary_md(bench, summary, target_rows))
    return target_rows


def summary_md(bench, summary, target_rows):
    """reads-summary.md's text."""
    a = bench.args
    present = [s for s in bench.systems
               if any(x["system"] == s for x in summary)]
    m = {(x["workload"], x["system"]): x for x in summary}
    out = ["# Reads: %s, on embedded clusters" % ", ".join(
        bench.long_labels[s] for s in present), ""]
    out += ["- %s: %s" % (k, v) for k, v in machine_info(bench)
            if k != "load average at start"]
    out += ["- " + load_line(bench.loadavg),
            "- systems: %s; the ucx client with "
            "dfs.client.rdma.read.enabled=true, the jar client with the "
            "read path off" % "; ".join(
                "%s = %s" % (bench.labels[s], bench.long_labels[s])
                for s in present),
            "- files at replication %d, written before the runs (not "
            "measured); %d run(s) per workload, systems alternating" % (
                a.read_rep, a.runs),
            "- the ucx client offers UCX for block reads of %s and more "
            "(dfs.client.rdma.read.min-bytes); below it, it reads as the jar"
            " client does" % human(bench.read_min_bytes),
            "- started %s, took %.1f min%s" % (
                bench.started, (time.monotonic() - bench.t0) / 60,
                "; INTERRUPTED: partial results" if bench.interrupted
                else ""), "",
            "Medians over runs. MB/s = 10^6 bytes per second of the "
            "measured phase (after each thread's warm-up reads). Latency: "
            "per file (open, reads, close) for sequential reads, per read "
            "for positional reads; nearest-rank percentiles. CPU per GiB: "
            "the seconds of CPU the client JVM and the DataNodes used "
            "during the batch, per GiB read.", ""]
    names = " / ".join(bench.labels[s] for s in present)

    def per(x, key, digits=2):
        return " / ".join(fmt(m.get((x.name, s), {}).get(key), digits)
                          for s in present)

    def vs(x, key):
        return fmt(m.get((x.name, "ucx"), {}).get(key + "_vs_stock"))
    rows = [[x.name, str(m.get((x.name, "ucx"), m.get((x.name, "stock"),
                                                       {})).get("runs")),
             per(x, "throughput_mb_s", 1), vs(x, "throughput_mb_s"),
             per(x, "p50_ms", 3), vs(x, "p50_ms"), per(x, "p99_ms", 3),
             vs(x, "p99_ms"), per(x, "dn_cpu_s_per_gib"),
             vs(x, "dn_cpu_s_per_gib"), per(x, "client_cpu_s_per_gib"),
             offered(m.get((x.name, "ucx"), {}))]
            for x in bench.reads]
    out += [md_table(["workload", "runs", "MB/s " + names, "UCX/stock",
                      "p50 ms", "UCX/stock", "p99 ms", "UCX/stock",
                      "DN CPU s/GiB", "UCX/stock", "client CPU s/GiB",
                      "UCX bytes (ucx)"], rows), ""]
    out += ["## Targets", "",
            "Ratios of medians in this run; the targets ask for medians of "
            ">= %d runs. Reported, never enforced." % TARGET_RUNS, "",
            md_table(["target", "limit", "measured", "worst", "result",
                      "note"],
                     [[t["target"], "%s %.2f" % (t["sense"], t["limit"]),
                       t["measured"], t["worst"], t["result"], t["note"]]
                      for t in target_rows]), ""]
    if bench.warnings or bench.failures:
        out += ["## Warnings", ""]
        out += ["- FAILURE: " + f for f in bench.failures]
        out += ["- " + w for w in bench.warnings]
        out.append("")
    return "\n".join(out)
