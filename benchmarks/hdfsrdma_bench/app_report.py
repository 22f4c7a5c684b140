"""What --apps writes: per workload and system the medians over runs and
their ratios to stock (apps.csv), every run (apps-runs.csv), the targets
(apps-targets.csv), the log workloads' latency CDF (wal-cdf.png, by
plots.py) and apps-summary.md."""

import os
import time

from .report import machine_info, md_table, write_csv
from .stats import median, ratio
from .targets import TARGET_RUNS, app_targets
from .apps import DFSIO_SLOTS
from .units import fmt, human

# The figures of a workload, in apps.csv's column order; None (an empty
# cell) where a workload has no such figure.
METRICS = ("throughput_mb_s", "p50_ms", "p99_ms", "p999_ms",
           "records_per_s", "avg_io_rate_mb_s", "write_stage_s")
# The idle client's figures (cores), compared by difference, not ratio.
IDLE_METRICS = ("idle_client_cores", "idle_dn_cores", "idle_nn_cores")
# More medians per workload and system.
EXTRAS = ("elapsed_s", "files", "records", "measured_bytes", "client_cpu_s",
          "dn_cpu_s", "ucx_bytes_sent", "ucx_bytes_fetched",
          "blocks_over_tcp", "dfsio_exec_s", "write_job_s", "task_p50_s",
          "task_max_s", "spark_rows") + IDLE_METRICS
LOAD_WARNING = 0.5     # 1-minute load average at the start worth a warning


def app_summary(apps, systems, rows):
    """apps.csv's rows: per workload (in `apps`' order) and system (in
    `systems`' order) the medians over its runs and their ratios to
    stock's (METRIC_vs_stock)."""
    out = []
    for app in apps:
        med = {}
        for s in systems:
            sel = [r for r in rows if r["workload"] == app.name
                   and r["system"] == s]
            if not sel:
                continue
            row = dict(workload=app.name, system=s)
            row.update((m, rounded(median([r.get(m) for r in sel])))
                       for m in METRICS)
            row["runs"] = len(sel)
            med[s] = row
        for s, row in med.items():
            base = med.get("stock", {})
            row.update(("%s_vs_stock" % m, rounded(ratio(
                row[m], base.get(m)))) for m in METRICS)
            sel = [r for r in rows if r["workload"] == app.name
                   and r["system"] == s]
            row.update((m, rounded(median([r.get(m) for r in sel])))
                       for m in EXTRAS)
            row.update(kind=app.kind, size=human(app.size), rep=app.rep,
                       sync=app.sync, threads=app.threads, jvms=app.jvms,
                       files_per_jvm=app.files, seconds=app.seconds)
            out.append(row)
    return out


def rounded(v):
    return round(v, 4) if isinstance(v, float) else v


def comparisons(apps, summary):
    """Per workload: its shape, the fewest runs of its systems, and the
    ratios UCX/stock, jar/stock and UCX/jar of each figure's median, and
    for the idle figures the differences (ucx_minus_stock_...)."""
    out = []
    for app in apps:
        m = {r["system"]: r for r in summary if r["workload"] == app.name}
        if not m:
            continue
        row = dict(workload=app.name, kind=app.kind, size=app.size,
                   rep=app.rep, sync=app.sync, threads=app.threads,
                   jvms=app.jvms, runs=min(r["runs"] for r in m.values()))
        for a, b in (("ucx", "stock"), ("jar", "stock"), ("ucx", "jar")):
            for k in METRICS:
                row["%s_%s_%s" % (a, b, k)] = ratio(
                    m.get(a, {}).get(k), m.get(b, {}).get(k))
            for k in IDLE_METRICS:
                x, y = m.get(a, {}).get(k), m.get(b, {}).get(k)
                row["%s_minus_%s_%s" % (a, b, k)] = None \
                    if x is None or y is None else round(x - y, 4)
        out.append(row)
    return out


def finish_apps(bench):
    """Every file of an --apps run; returns the targets' rows."""
    summary = app_summary(bench.apps, bench.systems, bench.app_rows)
    comp = comparisons(bench.apps, summary)
    target_rows = app_targets(comp, "stock" in bench.skipped)
    write_csv(os.path.join(bench.out, "apps-runs.csv"), bench.app_rows)
    write_csv(os.path.join(bench.out, "apps.csv"), summary)
    write_csv(os.path.join(bench.out, "apps-targets.csv"), target_rows)
    from .plots import wal_cdf_plot
    wal_cdf_plot(bench)
    text = summary_md(bench, summary, comp, target_rows)
    with open(os.path.join(bench.out, "apps-summary.md"), "w") as f:
        f.write(text)
    return target_rows


def per_system(m, name, key, present, digits=2):
    """"a / b / c": a figure of each system present, for one workload."""
    return " / ".join(fmt(m.get((name, s), {}).get(key), digits)
                      for s in present)


def summary_md(bench, summary, comp, target_rows):
    """apps-summary.md's text."""
    present = bench.systems
    names = " / ".join(bench.labels[s] for s in present)
    m = {(r["workload"], r["system"]): r for r in summary}
    c = {r["workload"]: r for r in comp}
    apps = [x for x in bench.apps if x.name in c]
    out = head(bench, present)
    out += writer_section(apps, m, c, present, names)
    out += wal_section(apps, m, c, present, names)
    out += writers_section(apps, m, c, present, names)
    out += threads_section(apps, m, c, present, names)
    out += mixed_section(apps, m, c, present, names)
    out += dfsio_section(apps, m, c, present, names)
    out += spark_section(apps, m, c, present, names)
    out += idle_section(apps, m, c, present, names)
    out += ["## Targets", "",
            "Ratios of medians in this run; the targets ask for medians of "
            ">= %d runs. Reported, never enforced." % TARGET_RUNS, "",
            md_table(["target", "limit", "measured", "worst", "result",
                      "note"],
                     [[t["target"], "%s %.2f" % (t["sense"], t["limit"]),
                       t["measured"], t["worst"], t["result"], t["note"]]
                      for t in target_rows]), ""]
    out += workers_section(bench, apps, m)
    out += carried_section(apps, m, present)
    if bench.warnings or bench.failures:
        out += ["## Warnings", ""]
        out += ["- FAILURE: " + f for f in bench.failures]
        out += ["- " + w for w in bench.warnings]
        out.append("")
    return "\n".join(out)


def load_line(loadavg):
    """The load average at the start, and a warning above LOAD_WARNING."""
    text = "load average at start (os.getloadavg): %s" % " ".join(
        "%.2f" % v for v in loadavg)
    if loadavg[0] > LOAD_WARNING:
        text += " -- WARNING: above %.1f, other work was running: not a " \
            "quiet measurement" % LOAD_WARNING
    return text


def head(bench, present):
    """The title, the machine, the run."""
    a = bench.args
    where = "an existing cluster (--conf)" if bench.existing else \
        "embedded clusters"
    out = ["# Application-shaped workloads: %s, on %s" % (
        ", ".join(bench.long_labels[s] for s in present), where), ""]
    out += ["- %s: %s" % (k, v) for k, v in machine_info(bench)
            if k != "load average at start"]
    out += ["- " + load_line(bench.loadavg)]
    out += ["- systems: %s" % "; ".join(
        "%s = %s" % (bench.labels[s], bench.long_labels[s])
        for s in present)]
    out += ["- skipped: %s: %s" % (s, why)
            for s, why in sorted(bench.skipped.items())]
    out += ["- workloads: %s; %d run(s) each, systems alternating %s%s" % (
        ", ".join(x.name for x in bench.apps), a.runs, ", ".join(
            bench.labels[s] for s in present),
        " (each run in the order of a Williams design)"
        if a.balance_order else ""),
        "- started %s, took %.1f min%s" % (
            bench.started, (time.monotonic() - bench.t0) / 60,
            "; INTERRUPTED: partial results" if bench.interrupted else ""),
        "", "Medians over runs. MB/s = 10^6 bytes per second of the "
        "measured phase (after the JVM's warm-up; several JVMs: from the "
        "first one's start to the last one's end). Percentiles are nearest "
        "rank over every file (writers) or record (logs) of a run: p99 of "
        "fewer than 100 files is the slowest file.", ""]
    return out


def ratios(cr, key, pairs=(("ucx", "stock"), ("jar", "stock"))):
    return [cr.get("%s_%s_%s" % (a, b, key)) for a, b in pairs]


def writer_section(apps, m, c, present, names):
    sel = [x for x in apps if x.kind == "writer"]
    if not sel:
        return []
    rows = [[x.name, "%d x %s" % (x.files, human(x.size)), str(x.rep),
             str(c[x.name]["runs"]),
             per_system(m, x.name, "throughput_mb_s", present, 1)]
            + ratios(c[x.name], "throughput_mb_s")
            + [per_system(m, x.name, "p50_ms", present, 1),
               per_system(m, x.name, "p99_ms", present, 1)]
            + ratios(c[x.name], "p99_ms") for x in sel]
    return ["## Long-lived writer", "",
            "One JVM writes its files one after the other (1 MiB writes); "
            "latency per file = create to the return of close.", "",
            md_table(["workload", "files", "rep", "runs",
                      "MB/s %s" % names, "UCX/stock", "jar/stock",
                      "p50 ms %s" % names, "p99 ms %s" % names,
                      "p99 UCX/stock", "p99 jar/stock"], rows), ""]


def wal_section(apps, m, c, present, names):
    sel = [x for x in apps if x.kind == "wal"]
    if not sel:
        return []
    rows = [[x.name, human(x.size), x.sync, str(x.threads),
             str(c[x.name]["runs"]),
             per_system(m, x.name, "records_per_s", present, 0)]
            + ratios(c[x.name], "records_per_s")
            + [per_system(m, x.name, "p50_ms", present, 3)]
            + ratios(c[x.name], "p50_ms")
            + [per_system(m, x.name, "p99_ms", present, 3)]
            + ratios(c[x.name], "p99_ms")
            + [per_system(m, x.name, "p999_ms", present, 3)]
            + ratios(c[x.name], "p999_ms", (("ucx", "stock"),))
            for x in sel]
    return ["## Write-ahead log", "",
            "Each log is one file at replication 3; every record is one "
            "write and one hflush (or hsync); latency per record = before "
            "the write to the return of the flush; records/s over all the "
            "JVM's logs.", "",
            md_table(["workload", "record", "flush", "logs", "runs",
                      "records/s %s" % names, "UCX/stock", "jar/stock",
                      "p50 ms %s" % names, "UCX/stock", "jar/stock",
                      "p99 ms %s" % names, "UCX/stock", "jar/stock",
                      "p99.9 ms %s" % names, "UCX/stock"], rows), "",
            "Latency CDF: [wal-cdf.png](wal-cdf.png)", ""]


def writers_section(apps, m, c, present, names):
    sel = [x for x in apps if x.kind == "writers"]
    if not sel:
        return []
    rows = [[x.name, str(x.jvms), "%d x %s" % (x.files, human(x.size)),
             str(c[x.name]["runs"]),
             per_system(m, x.name, "throughput_mb_s", present, 1)]
            + ratios(c[x.name], "throughput_mb_s")
            + ratios(c[x.name], "throughput_mb_s", (("ucx", "jar"),))
            + [per_system(m, x.name, "p99_ms", present, 1)] for x in sel]
    return ["## Concurrent long-lived writers", "",
            "N JVMs, each warmed up, start their files together (a "
            "barrier) and write them one after the other; aggregate = all "
            "their bytes over the span from the first start to the last "
            "close.", "",
            md_table(["workload", "JVMs", "files each", "runs",
                      "MB/s %s" % names, "UCX/stock", "jar/stock",
                      "UCX/jar", "p99 per file ms %s" % names], rows), ""]


def threads_section(apps, m, c, present, names):
    sel = [x for x in apps if x.kind == "threads"]
    if not sel:
        return []
    rows = [[x.name, str(x.threads), "%d x %s" % (x.files, human(x.size)),
             str(x.rep), str(c[x.name]["runs"]),
             per_system(m, x.name, "throughput_mb_s", present, 1)]
            + ratios(c[x.name], "throughput_mb_s")
            + ratios(c[x.name], "throughput_mb_s", (("ucx", "jar"),))
            + [per_system(m, x.name, "p50_ms", present, 1),
               per_system(m, x.name, "p99_ms", present, 1)]
            + ratios(c[x.name], "p99_ms") for x in sel]
    return ["## Writer threads in one JVM", "",
            "One JVM, warmed up, starts N threads together; each writes "
            "its own files one after the other (1 MiB writes); aggregate ="
            " all their bytes over the span from the first create to the "
            "last close; latency per file = create to the return of close,"
            " over every thread's files.", "",
            md_table(["workload", "threads", "files each", "rep", "runs",
                      "MB/s %s" % names, "UCX/stock", "jar/stock",
                      "UCX/jar", "p50 ms %s" % names, "p99 ms %s" % names,
                      "p99 UCX/stock", "p99 jar/stock"], rows), ""]


def mixed_section(apps, m, c, present, names):
    sel = [x for x in apps if x.kind == "mixed"]
    if not sel:
        return []
    rows = [[x.name, str(x.threads), "%d x %s" % (x.files, human(x.size)),
             human(x.record), str(c[x.name]["runs"]),
             per_system(m, x.name, "throughput_mb_s", present, 1)]
            + ratios(c[x.name], "throughput_mb_s", (("ucx", "stock"),))
            + [per_system(m, x.name, "records_per_s", present, 0)]
            + ratios(c[x.name], "records_per_s", (("ucx", "stock"),))
            + [per_system(m, x.name, "p50_ms", present, 3),
               per_system(m, x.name, "p99_ms", present, 3)]
            + ratios(c[x.name], "p50_ms", (("ucx", "stock"),))
            + ratios(c[x.name], "p99_ms", (("ucx", "stock"),)) for x in sel]
    return ["## A log beside writer threads in one JVM", "",
            "One JVM, warmed up: N writer threads as above and one log "
            "appending records with hflush from their start to their end;"
            " writers' aggregate MB/s, the log's records/s and latency per "
            "record (write + hflush) while bulk writes run.", "",
            md_table(["workload", "threads", "files each", "record", "runs",
                      "writers MB/s %s" % names, "UCX/stock",
                      "log records/s %s" % names, "UCX/stock",
                      "log p50 ms %s" % names, "log p99 ms %s" % names,
                      "p50 UCX/stock", "p99 UCX/stock"], rows), ""]


def workers_section(bench, apps, m):
    """--ucx-workers: each workload's main figure on the ucx system and
    on each ucx-wN, and ucx-wN over ucx and over stock."""
    if not bench.workers:
        return []
    rows = []
    for x in apps:
        key = "records_per_s" if x.kind == "wal" else "throughput_mb_s"
        if x.kind == "idle":
            continue
        u = m.get((x.name, "ucx"), {}).get(key)
        st = m.get((x.name, "stock"), {}).get(key)
        row = [x.name, "records/s" if x.kind == "wal" else "MB/s",
               fmt(u, 1)]
        for w in bench.workers:
            v = m.get((x.name, w), {}).get(key)
            row += [fmt(v, 1), fmt(ratio(v, u)), fmt(ratio(v, st))]
        rows.append(row)
    if not rows:
        return []
    header = ["workload", "figure", "UCX"]
    for w in bench.workers:
        header += [bench.labels[w], "%s/UCX" % bench.labels[w],
                   "%s/stock" % bench.labels[w]]
    return ["## UCX client workers (--ucx-workers)", "",
            "The UCX system again with dfs.client.rdma.workers set "
            "(medians over runs; UCX is the client's own default).", "",
            md_table(header, rows), ""]


def dfsio_section(apps, m, c, present, names):
    sel = [x for x in apps if x.kind == "dfsio"]
    if not sel:
        return []
    rows = [[x.name, "%d x %s" % (x.files, human(x.size)), str(x.rep),
             str(c[x.name]["runs"]),
             per_system(m, x.name, "throughput_mb_s", present, 1)]
            + ratios(c[x.name], "throughput_mb_s")
            + [per_system(m, x.name, "avg_io_rate_mb_s", present, 1)]
            + ratios(c[x.name], "avg_io_rate_mb_s")
            + [per_system(m, x.name, "dfsio_exec_s", present, 1)]
            for x in sel]
    return ["## TestDFSIO write on YARN", "",
            "Hadoop's TestDFSIO -write as a MapReduce job on a YARN "
            "cluster (ResourceManager and NodeManager in one JVM, every "
            "task its own JVM, the drop-in jar as -javaagent: in the task "
            "options of jar and UCX), one map per file, %d maps at once. "
            "Throughput = all bytes over the sum of the maps' write times,"
            " average IO rate = the mean of the maps' rates, as TestDFSIO "
            "reports them (converted to 10^6 bytes/s); job = its wall "
            "time, task JVM start-up included." % DFSIO_SLOTS, "",
            md_table(["workload", "files", "rep", "runs",
                      "MB/s %s" % names, "UCX/stock", "jar/stock",
                      "avg IO rate MB/s %s" % names, "UCX/stock",
                      "jar/stock", "job s %s" % names], rows), ""]


def spark_section(apps, m, c, present, names):
    sel = [x for x in apps if x.kind == "spark"]
    if not sel:
        return []
    rows = [[x.name, "%d x %s" % (x.threads, human(x.size)), str(x.rep),
             str(c[x.name]["runs"]),
             per_system(m, x.name, "write_stage_s", present, 2)]
            + ratios(c[x.name], "write_stage_s")
            + [per_system(m, x.name, "throughput_mb_s", present, 1)]
            + ratios(c[x.name], "throughput_mb_s")
            + [per_system(m, x.name, "write_job_s", present, 2),
               per_system(m, x.name, "task_max_s", present, 2),
               per_system(m, x.name, "ucx_bytes_fetched", present, 0)]
            for x in sel]
    return ["## Spark: a PySpark job writing Parquet", "",
            "PyPI's pyspark (Spark's own Hadoop client; the drop-in jar as "
            "-javaagent: of the driver for jar and UCX), local[N]: one "
            "driver JVM whose N tasks each write one Parquet file of the "
            "DataFrame it generated and cached. Write stage = the stage's "
            "submission to its completion in Spark's event log; MB/s = the "
            "Parquet files' bytes over it; job = df.write.parquet as the "
            "job timed it (job commit included); slowest task = its launch"
            " to its end. UCX bytes fetched: the DataNodes' counters (n/a "
            "for stock).", "",
            md_table(["workload", "files", "rep", "runs",
                      "write stage s %s" % names, "UCX/stock", "jar/stock",
                      "MB/s %s" % names, "UCX/stock", "jar/stock",
                      "job s %s" % names, "slowest task s %s" % names,
                      "UCX bytes fetched %s" % names], rows), ""]


def idle_section(apps, m, c, present, names):
    sel = [x for x in apps if x.kind == "idle"]
    if not sel:
        return []
    rows = []
    for x in sel:
        row = [x.name, "%g" % x.seconds, str(c[x.name]["runs"])]
        for k in IDLE_METRICS:
            row += [per_system(m, x.name, k, present, 4),
                    fmt(c[x.name].get("ucx_minus_stock_" + k), 4)]
        rows.append(row)
    return ["## Idle client", "",
            "One client JVM writes two files (so it has connected to the "
            "DataNodes and, with UCX, started UCX), then holds its "
            "FileSystem open without a call; cores used meanwhile, read "
            "from /proc: the client JVM, each DataNode (the cluster's "
            "DataNodes over their number), the NameNode.", "",
            md_table(["workload", "idle s", "runs",
                      "client cores %s" % names, "UCX - stock",
                      "DataNode cores %s" % names, "UCX - stock",
                      "NameNode cores %s" % names, "UCX - stock"], rows),
            ""]


def carried_section(apps, m, present):
    """What UCX carried per workload (medians over runs)."""
    rows = []
    for x in apps:
        u = m.get((x.name, "ucx"))
        j = m.get((x.name, "jar"))
        if u is None and j is None:
            continue
        u = u or {}
        rows.append([x.name, fmt(u.get("ucx_bytes_sent"), 0),
                     fmt(u.get("ucx_bytes_fetched"), 0),
                     fmt(u.get("blocks_over_tcp"), 0),
                     fmt((j or {}).get("ucx_bytes_fetched"), 0)])
    if not rows:
        return []
    return ["## What UCX carried (medians over runs)", "",
            "Every ucx run must send every written byte by UCX and its "
            "DataNodes fetch at least bytes x replication with no replica "
            "over TCP (with --defer-start on, all but one block per client "
            "JVM, whose first block goes over TCP); a jar run must move "
            "nothing over UCX. Either fails the run.", "",
            md_table(["workload", "UCX client bytes sent",
                      "UCX DataNodes bytes fetched",
                      "UCX replicas over TCP", "jar bytes fetched by UCX"],
                     rows), ""]
