"""The plots of a run, where matplotlib is installed (imported only
here, and only when a run plots): put latency against file size per
replication, the concurrent writers, and --apps' log latency CDF."""

import os

from .clusters import DATANODES
from .units import MiB, human_long, parse_size

COLORS = {"stock": "tab:blue", "jar": "tab:green", "ucx": "tab:orange"}


def pyplot(bench):
    """matplotlib's pyplot (no display), or None with a warning."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        bench.note("python3-matplotlib is not installed: no plots")
        return None
    return plt


def plots(bench, summary, scale_sum):
    """put-latency-repN.png for each replication, and scale.png when the
    run had concurrent writers."""
    plt = pyplot(bench)
    if plt is None:
        return
    colors = dict(COLORS)
    colors.update(zip(bench.compared, ("tab:red", "tab:purple", "tab:brown",
                                       "tab:pink")))
    for rep in sorted({r["rep"] for r in summary}):
        latency_plot(bench, plt, colors, summary, rep)
    if scale_sum:
        scale_plot(bench, plt, colors, scale_sum)


def latency_plot(bench, plt, colors, summary, rep):
    """Latency against file size at replication `rep`: each system's
    medians and every put, the limit, and UCX over the baseline above each
    size."""
    from matplotlib.ticker import FixedLocator, NullLocator
    labels = bench.long_labels
    present = bench.systems or bench.all_systems
    # The number above each size: UCX/stock, or UCX/jar without stock.
    base = "stock" if "stock" in present else "jar"
    ratio_key = "wall_ratio" if base == "stock" else "ucx_jar_wall_ratio"
    rows = [r for r in summary if r["rep"] == rep]
    sizes = [r["size_bytes"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in present:
        pts = [r for r in bench.put_rows if r["rep"] == rep and
               r["system"] == s]
        ax.scatter([r["size_bytes"] / MiB for r in pts],
                   [r["wall_s"] for r in pts], color=colors[s], alpha=0.3,
                   s=14)
        ax.plot([x / MiB for x in sizes],
                [r["%s_wall_s" % s] for r in rows], "o-",
                color=colors[s], label=labels[s] + " (median)")
    lim = [(r["size_bytes"] / MiB, r["limit_s"]) for r in rows
           if r["limit_s"] is not None]
    if lim:
        ax.plot(*zip(*lim), "--", color="gray",
                label="limit: local copy x%d / UCX fan-out" % rep)
    for r in rows:
        if r[ratio_key] is not None:
            ax.annotate("%.2f" % r[ratio_key],
                        (r["size_bytes"] / MiB, max(
                            r["%s_wall_s" % s] for s in present
                            if r["%s_wall_s" % s] is not None)),
                        textcoords="offset points", xytext=(0, 7),
                        ha="center", fontsize=8, color=colors["ucx"])
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator([x / MiB for x in sizes]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([human_long(x) for x in sizes], rotation=30)
    ax.set_xlabel("file size")
    ax.set_ylabel("put latency, s (FsShell JVM launch to exit)")
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.08)  # the ratios
    ax.set_title("Put latency, replication %d (%s); numbers: UCX/%s"
                 % (rep, "existing cluster" if bench.existing else
                    "1 NameNode + %d DataNodes" % DATANODES, base),
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(bench.out, "put-latency-rep%d.png" % rep),
                dpi=120)
    plt.close(fig)


def scale_plot(bench, plt, colors, scale_sum):
    """Aggregate throughput and per-writer latency against the number of
    concurrent writers."""
    from matplotlib.ticker import FixedLocator, NullLocator
    labels = bench.long_labels
    present = bench.systems or bench.all_systems
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for rep in sorted({r["rep"] for r in scale_sum}):
        rows = [r for r in scale_sum if r["rep"] == rep]
        xs = [r["writers"] for r in rows]
        style = "o-" if rep == 3 else "s:"
        for s in present:
            ax1.plot(xs, [r["%s_aggregate_mib_s" % s] for r in rows],
                     style, color=colors[s],
                     label="%s, rep %d" % (labels[s], rep))
            ax2.plot(xs, [r["%s_writer_latency_s" % s] for r in rows],
                     style, color=colors[s],
                     label="%s, rep %d" % (labels[s], rep))
    size = scale_sum[0]["size"]
    for ax, yl in ((ax1, "aggregate throughput, MiB/s"),
                   (ax2, "per-writer latency (median), s")):
        ax.set_xscale("log", base=2)
        ws = sorted({r["writers"] for r in scale_sum})
        ax.xaxis.set_major_locator(FixedLocator(ws))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(w) for w in ws])
        ax.set_xlabel("concurrent writers (%s each)" % human_long(
            parse_size(size)))
        ax.set_ylabel(yl)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Concurrent FsShell -put writers", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(bench.out, "scale.png"), dpi=120)
    plt.close(fig)


def wal_cdf_plot(bench):
    """wal-cdf.png: per log workload of an --apps run, each system's
    empirical CDF of latency per record (write + flush), every run's
    records pooled, on a log scale of ms; nothing without log
    workloads."""
    from .apps import cdf_points, read_latencies
    apps = [x for x in bench.apps if x.kind == "wal" and any(
        r["workload"] == x.name for r in bench.app_rows)]
    if not apps:
        return
    plt = pyplot(bench)
    if plt is None:
        return
    cols = min(4, len(apps))
    nrows = (len(apps) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3.4 * nrows),
                             squeeze=False)
    for ax, app in zip(axes.flat, apps):
        for s in bench.systems:
            lat = []
            for r in bench.app_rows:
                if r["workload"] == app.name and r["system"] == s:
                    for name in r["lat_files"].split():
                        lat.extend(read_latencies(os.path.join(
                            bench.out, "apps", name)))
            pts = cdf_points(sorted(lat))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts],
                        color=COLORS.get(s), label=bench.long_labels[s])
        for q in (0.5, 0.99):
            ax.axhline(q, color="gray", lw=0.5, ls=":")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.001)
        ax.set_xlabel("latency per record, ms")
        ax.set_ylabel("fraction of records")
        ax.set_title(app.name, fontsize=9)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(apps):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("Write-ahead log: write + %s per record, replication 3 "
                 "(all runs)" % "/".join(sorted({x.sync for x in apps})),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(bench.out, "wal-cdf.png"), dpi=110)
    plt.close(fig)
