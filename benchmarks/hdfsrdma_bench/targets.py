"""The targets the runs are judged by, each a limit on a ratio of
medians (UCX against stock or jar) or, for idle processes, on a
difference, and the judging: which target applies
to which rows of the summary (the put sweep's, or --apps' workloads), the
values it covers, the worst of them, and met / missed / not measured. A
missed target is reported, never enforced."""

from .profiles import PROFILES
from .units import GiB, KiB, MiB, fmt, human

# The targets (benchmarks/README.md, "Targets"): ratios of medians (of >=
# TARGET_RUNS runs) measured in one alternating run. The summary reports
# each with the measured value and met / missed; a missed target never
# fails the run.
TARGET_RUNS = 3
LARGE = (512 * MiB, 5 * GiB)            # the "512 MiB to 5 GiB" range
WALL_TARGET_ALL = 1.00                  # UCX/stock, sizes of --small, 1-5 GiB
WALL_TARGET_LARGE = {3: 0.75, 1: 0.85}  # UCX/stock, LARGE, by replication
WALL_TARGET_SMALL = 1.05                # UCX/stock, 1 MiB and 16 MiB
DN_CPU_TARGET = 0.75                    # DataNode CPU/GiB UCX/stock, rep 3
CLIENT_CPU_TARGET = 1.00                # client CPU/GiB UCX/jar
SCALE_TARGET = 1.1                      # aggregate MiB/s UCX/stock, rep 3
SCALE_TARGET_SIZE = 512 * MiB           # ... of 1, 2, 4, 8 writers of this
CSW_TARGET = 1.00                       # context switches/packet UCX/stock
DISTRIBUTION_TARGET = 1.05              # UCX / fastest compared mode

# --apps (benchmarks/README.md, "Application-shaped workloads"): ratios of
# UCX's median to stock's. The log (one log, hflush after every record,
# replication 3, records of APP_LOG_RECORDS): latency per record p50 and
# p99 at most APP_LOG_LATENCY_TARGET, records/s at least
# APP_LOG_RATE_TARGET. The long-lived writer (one JVM, files of a size,
# every replication measured): throughput at least APP_WRITER_TARGET of
# its file size, per-file create-to-close p99 at most
# APP_WRITER_P99_TARGET.
APP_LOG_RECORDS = (1 * KiB, 4 * KiB)
APP_LOG_LATENCY_TARGET = 0.70
APP_LOG_RATE_TARGET = 1.4
APP_WRITER_TARGET = {1 * MiB: 1.0, 16 * MiB: 1.3, 128 * MiB: 1.3}
APP_WRITER_P99_TARGET = 1.0
# The log of a mixed JVM (writer threads beside it): its p99 latency per
# record at most APP_MIXED_LOG_P99_TARGET of stock's.
APP_MIXED_LOG_P99_TARGET = 0.8
# TestDFSIO write (dfsio workloads): the throughput TestDFSIO reports at
# least APP_DFSIO_TARGET of stock's.
APP_DFSIO_TARGET = 1.3
# The Spark job (spark workloads: one driver JVM, local[N], each task
# writing a Parquet file at replication 3): its write stage's time at
# most APP_SPARK_TARGET of stock's.
APP_SPARK_TARGET = 0.8
# The idle client (idle workload): the cores an idle UCX client JVM uses,
# and an idle UCX DataNode, at most APP_IDLE_TARGET more than stock's
# (a difference of medians, in cores).
APP_IDLE_TARGET = 0.01


def in_large(size):
    """Whether `size` is in the range of the large-file targets."""
    return LARGE[0] <= size <= LARGE[1]


def wall_targets(size, rep):
    """The UCX/stock wall-time limits that apply to a size and replication
    (the strictest one binds)."""
    out = []
    if rep in (1, 3) and (size in PROFILES["small"]["sizes"]
                          or GiB <= size <= 5 * GiB):
        out.append(WALL_TARGET_ALL)
    if in_large(size) and rep in WALL_TARGET_LARGE:
        out.append(WALL_TARGET_LARGE[rep])
    if size in (1 * MiB, 16 * MiB):
        out.append(WALL_TARGET_SMALL)
    return out


def wall_target(size, rep):
    """The binding UCX/stock wall-time limit of a size and replication, or
    None where no wall-time target applies."""
    limits = wall_targets(size, rep)
    return min(limits) if limits else None


def judge(text, limit, sense, values, runs, note="", stock_skipped=False,
          digits=2):
    """One target's row of targets.csv. values: [(where, value or None)];
    sense "<=" or ">="; runs: the fewest runs behind a value;
    stock_skipped: the run had no stock system (--conf without
    --stock-classpath), which explains a target on stock not measured;
    digits: of the measured values as the row shows them."""
    got = [(w, v) for w, v in values if v is not None]
    if not got:
        result = "not measured"
        worst = None
    else:
        worst = (max if sense == "<=" else min)(v for _, v in got)
        bad = [w for w, v in got if (v > limit if sense == "<="
                                     else v < limit)]
        result = "met" if not bad else "missed (%d of %d)" % (
            len(bad), len(got))
        if len(got) < len(values):
            result += ", %d n/a" % (len(values) - len(got))
        if runs < TARGET_RUNS:
            note = ("%d run(s), the targets ask for medians of >= %d; "
                    % (runs, TARGET_RUNS)) + note
    if not got and stock_skipped and "stock" in text:
        note = "no stock system (--stock-classpath); " + note
    return dict(target=text, limit=limit, sense=sense,
                measured=", ".join("%s %s" % (w, fmt(v, digits))
                                   for w, v in values) or "n/a",
                worst=None if worst is None else round(worst, 4),
                result=result, note=note.strip("; "))


def where(r):
    """A summary row's name in a target's values: size and replication."""
    return "%s r%d" % (r["size"], r["rep"])


def targets(bench, summary, scale_sum):
    """Every target (the distribution one with --compare-distributions),
    each with the values it covers, the worst of them and met / missed /
    not measured. Never fails a run."""
    out = []

    def add(text, limit, sense, values, runs, note=""):
        out.append(judge(text, limit, sense, values, runs, note,
                         "stock" in bench.skipped))

    def sel(pred):
        rows = [r for r in summary if pred(r)]
        return rows, min([r["runs"] for r in rows] or [0])

    rows, runs = sel(lambda r: r["rep"] in (1, 3) and (
        r["size_bytes"] in PROFILES["small"]["sizes"]
        or GiB <= r["size_bytes"] <= 5 * GiB))
    add("UCX/stock wall time, every size of --small and 1-5 GiB, rep 1 and "
        "3", WALL_TARGET_ALL, "<=",
        [(where(r), r["wall_ratio"]) for r in rows], runs)
    for rep in (3, 1):
        rows, runs = sel(lambda r: r["rep"] == rep and in_large(
            r["size_bytes"]))
        add("UCX/stock wall time, rep %d, 512 MiB-5 GiB" % rep,
            WALL_TARGET_LARGE[rep], "<=",
            [(where(r), r["wall_ratio"]) for r in rows], runs)
    rows, runs = sel(lambda r: r["rep"] == 3 and in_large(r["size_bytes"]))
    add("DataNode CPU per GiB, UCX/stock, rep 3 (512 MiB-5 GiB)",
        DN_CPU_TARGET, "<=", [(where(r), r["dn_cpu_ratio"]) for r in rows],
        runs)
    rows, runs = sel(lambda r: in_large(r["size_bytes"]))
    add("client CPU per GiB, UCX/jar (512 MiB-5 GiB)", CLIENT_CPU_TARGET,
        "<=", [(where(r), r["ucx_jar_client_cpu_ratio"]) for r in rows],
        runs)
    rows, runs = sel(lambda r: r["size_bytes"] in (1 * MiB, 16 * MiB))
    add("UCX/stock wall time, 1 MiB and 16 MiB", WALL_TARGET_SMALL, "<=",
        [(where(r), r["wall_ratio"]) for r in rows], runs)
    srows = [r for r in scale_sum if r["rep"] == 3]
    sizes = sorted({r["size"] for r in srows})
    note = ""
    if srows and sizes != [human(SCALE_TARGET_SIZE)]:
        note = "writers of %s, the target's are %s" % (
            ", ".join(sizes), human(SCALE_TARGET_SIZE))
    add("concurrent writers (1, 2, 4, 8 x 512 MiB, rep 3): aggregate "
        "throughput UCX/stock", SCALE_TARGET, ">=",
        [("%d x %s" % (r["writers"], r["size"]), r["aggregate_ratio"])
         for r in srows], min([r["runs"] for r in srows] or [0]), note)
    for who, key in (("client", "client_csw_ratio"),
                     ("DataNodes", "dn_csw_ratio")):
        rows, runs = sel(lambda r: in_large(r["size_bytes"]))
        add("context switches per packet, %s, UCX/stock (512 MiB-5 GiB)"
            % who, CSW_TARGET, "<=", [(where(r), r[key]) for r in rows],
            runs)
    if bench.compared:
        rows, runs = sel(lambda r: True)
        add("distribution: wall time, %s (%s) / the fastest of %s" % (
            bench.labels["ucx"], bench.args.ucx_distribution,
            ", ".join(bench.labels[c] for c in bench.compared)),
            DISTRIBUTION_TARGET, "<=",
            [("%s vs %s" % (where(r), bench.labels.get(
                r.get("fastest_compared"), "n/a")),
              r.get("ucx_over_fastest_wall_ratio")) for r in rows], runs)
    return out


def app_targets(comparisons, stock_skipped=False):
    """The --apps targets judged on `comparisons`: per workload its kind,
    size, sync, threads, runs (the fewest of its systems) and the ratios
    UCX/stock of its medians (ucx_stock_p50_ms, ucx_stock_p99_ms,
    ucx_stock_records_per_s, ucx_stock_throughput_mb_s,
    ucx_stock_write_stage_s). Workloads a run
    did not measure are left out of a target's values; a target with
    none is "not measured". Never fails a run."""
    out = []

    def add(text, limit, sense, rows, key, digits=2):
        out.append(judge(text, limit, sense,
                         [(r["workload"], r.get(key)) for r in rows],
                         min([r["runs"] for r in rows] or [0]),
                         stock_skipped=stock_skipped, digits=digits))

    logs = [r for r in comparisons if r["kind"] == "wal"
            and r["sync"] == "hflush" and r["threads"] == 1
            and r["size"] in APP_LOG_RECORDS]
    what = "one log, hflush after every %s record, rep 3" % " and ".join(
        human(x) for x in APP_LOG_RECORDS)
    for q in ("p50", "p99"):
        add("log (%s): latency per record %s, UCX/stock" % (what, q),
            APP_LOG_LATENCY_TARGET, "<=", logs, "ucx_stock_%s_ms" % q)
    add("log (%s): records/s, UCX/stock" % what, APP_LOG_RATE_TARGET,
        ">=", logs, "ucx_stock_records_per_s")
    writers = [r for r in comparisons if r["kind"] == "writer"]
    for limit in sorted(set(APP_WRITER_TARGET.values()), reverse=True):
        sizes = sorted(x for x, v in APP_WRITER_TARGET.items()
                       if v == limit)
        add("long-lived writer, %s files: throughput, UCX/stock" %
            " and ".join(human(x) for x in sizes), limit, ">=",
            [r for r in writers if r["size"] in sizes],
            "ucx_stock_throughput_mb_s")
    add("long-lived writer: per-file create-to-close p99, UCX/stock",
        APP_WRITER_P99_TARGET, "<=", writers, "ucx_stock_p99_ms")
    add("log beside writer threads in one JVM: latency per record p99, "
        "UCX/stock", APP_MIXED_LOG_P99_TARGET, "<=",
        [r for r in comparisons if r["kind"] == "mixed"], "ucx_stock_p99_ms")
    add("TestDFSIO write on YARN: throughput, UCX/stock", APP_DFSIO_TARGET,
        ">=", [r for r in comparisons if r["kind"] == "dfsio"],
        "ucx_stock_throughput_mb_s")
    add("the Spark job's write stage (PySpark, one driver JVM, Parquet, "
        "rep 3): seconds, UCX/stock", APP_SPARK_TARGET, "<=",
        [r for r in comparisons if r["kind"] == "spark"],
        "ucx_stock_write_stage_s")
    idle = [r for r in comparisons if r["kind"] == "idle"]
    for who, key in (("client JVM", "idle_client_cores"),
                     ("DataNode", "idle_dn_cores")):
        add("idle %s: cores, UCX - stock" % who, APP_IDLE_TARGET, "<=",
            idle, "ucx_minus_stock_" + key, digits=4)
    return out
