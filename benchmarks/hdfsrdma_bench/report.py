"""The results a run writes: CSV files of rows, the machine it ran on,
and summary.md, section by section (the plots are plots.py's)."""

import csv
import os
import platform
import shutil
import subprocess
import time

from .defer_start import deferring
from .defer_start import describe as describe_defer_start
from .harness import REPO
from .targets import TARGET_RUNS
from .ucx_counters import RDMA_BEAN
from .units import GiB, KiB, fmt, fmt_bytes, human


def write_csv(path, rows):
    """Dict rows as a CSV file: a column for every key of any row, in the
    order keys first appear; None as an empty cell; no file for no rows."""
    if not rows:
        return
    keys = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if r.get(k) is None else r.get(k)
                        for k in keys})


def machine_info(bench):
    """(name, value) pairs of what the run ran on: the machine and its
    load, the storage or the cluster, versions, commit and command."""
    def cmd(argv):
        try:
            r = subprocess.run(argv, capture_output=True, text=True,
                               timeout=30)
            return (r.stdout + r.stderr).strip()
        except (OSError, subprocess.SubprocessError):
            return "n/a"
    cpu = "n/a"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) * KiB
    git = cmd(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    if cmd(["git", "-C", REPO, "status", "--porcelain",
            "--untracked-files=no"]):
        git += " (with uncommitted changes)"
    # The launcher's "Picked up JDK_JAVA_OPTIONS" note comes first when
    # that variable is set (the test command sets it): the version line is
    # the one that names it, and the options are reported on their own.
    java = [line for line in cmd([bench.java, "-version"]).splitlines()
            if " version " in line]
    if os.environ.get("JDK_JAVA_OPTIONS"):
        java = [(java[0] if java else "n/a") + ", JDK_JAVA_OPTIONS "
                + os.environ["JDK_JAVA_OPTIONS"]]
    conf = bench.args.conf
    out = [("client machine" if conf else "machine",
            "%s, %d cores, %.0f GiB RAM, %s" % (
                cpu, os.cpu_count(), mem / GiB, platform.platform())),
           ("load average at start", bench.load_start)]
    if not conf:
        fs = cmd(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "-T", bench.work])
        if bench.hosts:
            out += [("emulated hosts", "client, NameNode, 4 DataNodes in "
                     "network and IPC namespaces of their own, every link %s"
                     "%s (tbf); UCX client: %s" % (
                         bench.args.hosts, ", the client's %s"
                         % bench.args.client_link if bench.args.client_link
                         else "", "UCX over tcp forced (fan-out by"
                         " emulated gets)" if bench.args.ucx_tcp else
                         "its own policy"))]
        out += [("DataNode storage", "%s (%s)" % (bench.work, fs)),
                ("Hadoop", "%s (Apache's jars from Maven Central, every "
                 "cluster and client JVM); UCX path: %s" % (
                     bench.args.hadoop, os.path.basename(
                         getattr(bench, "dropin", None) or "n/a")))]
    else:
        out += [("cluster", "--conf %s: %s" % (conf, getattr(
                    bench.existing, "description", None) or "n/a")),
                ("drop-in jar", getattr(bench, "dropin", None) or "n/a")]
    out += [("UCX client start", describe_defer_start(bench))]
    out += [("Java", java[0] if java else "n/a"),
            ("UCX", cmd(["ucx_info", "-v"]).splitlines()[0].lstrip("# ")
             if shutil.which("ucx_info") else "n/a"),
            ("commit", git),
            ("command", " ".join(["benchmarks/run.sh"] + bench.args.argv))]
    return out


def md_table(header, rows):
    """A Markdown table; cells that are not text are formatted by fmt."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(v) if not isinstance(v, str)
                                       else v for v in r) + " |")
    return "\n".join(lines)


def per_system(r, fmt_key, present, digits=2):
    """"a / b / c": one value per system present (stock / jar / UCX)."""
    return " / ".join(fmt(r.get(fmt_key % s), digits) for s in present)


def write_summary_md(bench, summary, fit_rows, scale_sum, target_rows,
                     transfer):
    """summary.md: the run, then a section per kind of result, the
    per-transfer cost (`transfer`, Markdown) and the warnings."""
    present = bench.systems or bench.all_systems
    names = " / ".join(bench.labels[s] for s in present)
    out = summary_head(bench, present)
    out += latency_section(bench, summary, present, names)
    out += cost_sections(summary, present, names)
    out += carried_section(summary)
    out += fit_section(bench.labels, fit_rows)
    out += scale_section(scale_sum, present, names)
    out += targets_section(target_rows)
    out += totals_section(bench)
    if transfer:
        out += ["## Per-transfer cost (benchmarks/transfer.sh)", "",
                transfer, ""]
    if bench.warnings or bench.failures:
        out += ["## Warnings", ""]
        out += ["- FAILURE: " + f for f in bench.failures]
        out += ["- " + w for w in bench.warnings]
        out.append("")
    with open(os.path.join(bench.out, "summary.md"), "w") as f:
        f.write("\n".join(out))


def summary_head(bench, present):
    """The title, the machine and the run: what was compared, how, when."""
    a = bench.args
    labels, long_labels = bench.labels, bench.long_labels
    where = "an existing cluster (--conf)" if bench.existing else \
        "embedded clusters"
    out = ["# Put latency: %s, on %s" % (
        ", ".join(long_labels[s] for s in present), where), ""]
    out += ["- %s: %s" % (k, v) for k, v in machine_info(bench)]
    out += ["- systems: %s" % "; ".join(
        "%s = %s" % (labels[s], long_labels[s]) for s in present)]
    out += ["- skipped: %s: %s" % (s, why)
            for s, why in sorted(bench.skipped.items())]
    out += ["- profile: %s; sizes %s; replication %s; %d run(s) each, "
            "alternating %s%s; input files page-cached" % (
                a.profile, ", ".join(human(s) for s in a.sizes),
                ", ".join(map(str, a.reps)), a.runs, ", ".join(
                    labels[s] for s in present),
                " (each run in the order of a Williams design)"
                if getattr(a, "balance_order", False) else ""),
            "- started %s, took %.1f min%s" % (bench.started, (
                time.monotonic() - bench.t0) / 60,
                "; INTERRUPTED: partial results" if bench.interrupted
                else ""), ""]
    if bench.existing is not None:
        out += ["DataNode figures are sums over the cluster's live "
                "DataNodes; n/a where a DataNode is not on this host (its "
                "CPU and context switches cannot be read from here). No "
                "limit on an existing cluster.", ""]
    return out


def latency_section(bench, summary, present, names):
    """Put latency: each system's median wall time, the ratios, the
    binding target, the limit."""
    has_limit = any(r["limit_s"] is not None for r in summary)
    out = ["## Put latency (median of runs)", "",
           "Wall time of the FsShell -put JVM, launch to exit.%s Target: "
           "the strictest UCX/stock wall-time target for that size and "
           "replication." % (
                " Limit = max(local copy x r, UCX fan-out of 64 KiB packets "
                "to r getters)." if has_limit else ""), ""]
    header = ["size", "rep", "runs", "%s s" % names, "UCX/stock",
              "jar/stock", "UCX/jar"] + [
                  "UCX/%s" % bench.labels[c]
                  for c in bench.compared] + ["target"]
    if has_limit:
        header += ["limit s (copy / fan-out)", "put/limit %s" % names]
    rows = []
    for r in summary:
        row = [r["size"], str(r["rep"]), str(r["runs"]),
               per_system(r, "%s_wall_s", present), r["wall_ratio"],
               r["jar_wall_ratio"], r["ucx_jar_wall_ratio"]] + [
                   r.get("ucx_over_%s_wall_ratio" % c)
                   for c in bench.compared] + [
               "" if r["wall_target"] is None else "<= %.2f %s" % (
                   r["wall_target"], r["wall_result"] or "")]
        if has_limit:
            row += ["%s (%s / %s)" % (fmt(r["limit_s"]), fmt(r["copy_s"]),
                                      fmt(r["fanout_s"], 3)),
                    per_system(r, "%s_put_over_limit", present)]
        rows.append(row)
    out.append(md_table(header, rows))
    out += ["", "Plots: %s" % ", ".join(
        "[put-latency-rep%d.png](put-latency-rep%d.png)" % (r, r)
        for r in sorted({r["rep"] for r in summary})), ""]
    return out


def cost_sections(summary, present, names):
    """CPU and context switches per packet, client and DataNodes."""
    out = ["## CPU (median of runs)", "",
           "Client = user+sys of the FsShell JVM; DataNodes = user+sys "
           "summed over the DataNodes during the put.", ""]
    out.append(md_table(
        ["size", "rep", "client CPU s %s" % names,
         "client s/GiB %s" % names, "UCX/stock", "UCX/jar",
         "DN CPU s %s" % names, "DN s/GiB %s" % names, "UCX/stock"],
        [[r["size"], str(r["rep"]),
          per_system(r, "%s_client_cpu_s", present),
          per_system(r, "%s_client_cpu_s_per_gib", present),
          r["client_cpu_ratio"], r["ucx_jar_client_cpu_ratio"],
          per_system(r, "%s_dn_cpu_s", present),
          per_system(r, "%s_dn_cpu_s_per_gib", present),
          r["dn_cpu_ratio"]] for r in summary]))
    out += ["", "## Context switches per packet (median of runs)", "",
            "Voluntary (v) and involuntary (i) context switches of the "
            "client JVM (its rusage) and of the DataNodes (all threads, "
            "sampled from /proc), divided by the put's data packets "
            "(64 KiB packets of 126 x 512-byte chunks); the client's "
            "include its JVM start-up, which dominates small files. Ratios "
            "are of v + i.", ""]
    out.append(md_table(
        ["size", "rep", "packets", "client v %s" % names,
         "client i %s" % names, "DN v %s" % names, "DN i %s" % names,
         "client UCX/stock", "DN UCX/stock"],
        [[r["size"], str(r["rep"]), str(r["packets"]),
          per_system(r, "%s_client_csw_vol_per_packet", present),
          per_system(r, "%s_client_csw_invol_per_packet", present),
          per_system(r, "%s_dn_csw_vol_per_packet", present),
          per_system(r, "%s_dn_csw_invol_per_packet", present),
          r["client_csw_ratio"], r["dn_csw_ratio"]] for r in summary]))
    return out


def carried_section(summary):
    """What UCX carried per put against what it should have."""
    out = ["", "## What UCX carried (per put, median)", "",
           "UCX bytes fetched by the DataNodes (HdfsRdmaDataNode metrics) "
           "against size x replication (0 where the UCX client's policy "
           "takes Hadoop's pipeline between emulated hosts; with "
           "--defer-start on, less the put's first block, which goes over "
           "TCP); jar puts must move 0 bytes over UCX.", ""]
    out.append(md_table(
        ["size", "rep", "UCX bytes fetched / expected",
         "jar bytes over UCX (max)", "UCX transport"],
        [[r["size"], str(r["rep"]),
          "%s / %d" % (fmt_bytes(r["ucx_bytes_fetched_median"]),
                       r["ucx_bytes_expected"]),
          fmt(r["jar_bytes_over_ucx_max"]), r["transport"] or "n/a"]
         for r in summary]))
    out.append("")
    return out


def fit_section(labels, fit_rows):
    """Cost against file size: the least-squares lines."""
    if not fit_rows:
        return []
    return ["## Cost against file size (least squares over every put)", "",
            md_table(
                ["system", "rep", "metric", "slope s/GiB", "intercept s",
                 "R²", "points", "sizes"],
                [[labels[r["system"]], str(r["rep"]), r["metric"],
                  r["slope_s_per_gib"], r["intercept_s"], "%.4f" % r["r2"],
                  str(r["points"]), r["sizes"]] for r in fit_rows]), ""]


def scale_section(scale_sum, present, names):
    """Concurrent writers: aggregate throughput, latency, client CPU."""
    if not scale_sum:
        return []
    out = ["## Concurrent writers (median of runs)", "",
           "Aggregate = bytes of all writers / wall time of the batch; "
           "latency = median over the writers of each put's wall time.", ""]
    out.append(md_table(
        ["writers", "size", "rep", "MiB/s %s" % names, "UCX/stock",
         "jar/stock", "UCX/jar", "latency s %s" % names, "UCX/stock",
         "client CPU s %s" % names],
        [[str(r["writers"]), r["size"], str(r["rep"]),
          per_system(r, "%s_aggregate_mib_s", present, 1),
          r["aggregate_ratio"], r["jar_aggregate_ratio"],
          r["ucx_jar_aggregate_ratio"],
          per_system(r, "%s_writer_latency_s", present),
          r["latency_ratio"],
          per_system(r, "%s_client_cpu_s", present)]
         for r in scale_sum]))
    out += ["", "Plot: [scale.png](scale.png)", ""]
    return out


def targets_section(target_rows):
    """Every target, judged."""
    out = ["## Targets", "",
           "Ratios of medians in this run; the targets ask for medians of "
           ">= %d runs. Reported, never enforced." % TARGET_RUNS, ""]
    out.append(md_table(
        ["target", "limit", "measured", "worst", "result", "note"],
        [[t["target"], "%s %.2f" % (t["sense"], t["limit"]), t["measured"],
          t["worst"], t["result"], t["note"]] for t in target_rows]))
    out.append("")
    return out


def totals_section(bench):
    """What the UCX path carried over the whole run, the idle clusters'
    CPU, whether the DataNodes serve the UCX counters' bean."""
    totals = bench.ucx_totals
    deferred = (", less its first block", ", and of each UCX put's first "
                "block") if deferring(bench) else ("", "")
    out = ["## What the UCX path carried", ""]
    if bench.existing is None:
        out += ["- UCX DataNodes' exit totals over the whole run (warm-up, "
                "sweep and scale, jar and ucx puts): %s" % (" ".join(
                    "%s=%s" % kv for kv in sorted(totals.items())) or "n/a"),
                "- expected: bytes fetched %d (size x replication of every "
                "UCX put%s), blocks over TCP %d (replicas of every jar put%s)"
                % (bench.ucx_expected_bytes, deferred[0],
                   bench.jar_expected_blocks, deferred[1])]
    else:
        out += ["- expected bytes fetched over the run (size x replication "
                "of every UCX put%s): %d" % (deferred[0],
                                             bench.ucx_expected_bytes)]
    out += ["- idle clusters' CPU (NameNode + DataNodes, cores busy): %s"
            % (", ".join("%s %s" % (n, fmt(v, 3)) for n, v in sorted(
                bench.idle_cpu.items())) or "n/a"),
            "- %s bean: %s" % (RDMA_BEAN, "present" if bench.rdma_bean_seen
                               else "absent (per-put DataNode counters n/a)"),
            ""]
    return out
