"""What the soak shows and writes: a table per sample and the writers'
latencies as it runs, and at the end soak.csv, growth.csv, the growth
table and soak.png (matplotlib imported only here, and only to plot)."""

import os

from .harness import log
from .report import write_csv
from .soak_bounds import BYTE_QUANTITIES
from .units import MiB


def mib(v):
    return "-" if v is None else "%.0f" % (v / MiB)


def num(v):
    return "-" if v is None else "%d" % v


def plus(v, w, total=False):
    """v+w, or v+(w-v) where `w` is the total v is part of."""
    if v is None or w is None:
        return num(v)
    return "%d+%d" % (v, w - v if total else w)


def table(rows):
    """A sample as a fixed-width table."""
    head = ("jvm", "pid", "rss", "native", "thr+work", "fds+io", "jni",
            "sysv", "shm", "poolMiB", "conn", "sess", "ucxMiB", "dnWrMiB",
            "blkU/T", "files", "writtenMiB", "verifMiB", "bad", "err")
    lines = ["%-8s %7s %6s %6s %8s %8s %5s %4s %4s %7s %4s %4s %8s %8s "
             "%9s %6s %10s %9s %4s %4s" % head]
    for r in rows:
        blocks = "-" if r.get("blocks_ucx") is None else "%d/%d" % (
            r["blocks_ucx"], r.get("blocks_tcp") or 0)
        conn = r.get("conns") if r.get("conns") is not None \
            else r.get("connects")
        lines.append(
            "%-8s %7d %6s %6s %8s %8s %5s %4s %4s %7s %4s %4s %8s %8s %9s "
            "%6s %10s %9s %4s %4s" % (
                r["jvm"], r["pid"], mib(r.get("rss")), mib(r.get("native")),
                plus(r.get("threads"), r.get("work_threads")),
                plus(r.get("fds"), r.get("fds_all"), total=True),
                num(r.get("jni_refs")), num(r.get("sysv")),
                num(r.get("posix")), mib(r.get("pool")), num(conn),
                num(r.get("sessions")), mib(r.get("ucx_bytes")),
                mib(r.get("bytes_written")), blocks, num(r.get("files")),
                mib(r.get("written")), mib(r.get("verified")),
                num(r.get("mismatches")), num(r.get("errors"))))
    return "\n".join(lines)


def writer_summary(rows):
    """The writers' latencies of their last interval, one line."""
    parts = []
    for r in rows:
        if r.get("write_ms_avg") is None:
            continue
        parts.append("%s: write %.0f flush %.0f append %.0f read %.0f ms" % (
            r["jvm"], r["write_ms_avg"], r.get("flush_ms_avg") or 0,
            r.get("append_ms_avg") or 0, r.get("read_ms_avg") or 0))
    return "mean latency per op over the writers' last interval: " + \
        "; ".join(parts) if parts else ""


def growth_table(grows):
    lines = ["%-8s %-9s %12s %12s %10s %10s %12s %s" % (
        "jvm", "quantity", "mid", "last", "growth", "bound",
        "slope/min", "verdict")]
    for g in grows:
        div = MiB if g["quantity"] in BYTE_QUANTITIES else 1
        unit = " MiB" if div == MiB else ""

        def f(v, fmt="%.0f"):
            return "-" if v is None else fmt % (v / div)
        lines.append("%-8s %-9s %12s %12s %10s %10s %12s %s" % (
            g["jvm"], g["quantity"], f(g["mid"]), f(g["last"]),
            f(g["growth"], "%+.0f"), f(g["bound"], "%.0f") + unit,
            f(g["slope_per_min"], "%+.1f"), g["verdict"]))
    return "\n".join(lines)


def plot(out_dir, rows):
    """soak.png: each quantity over time, a line per JVM; None without
    matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    regular = [r for r in rows if r["sample"] != "drained"]
    jvms = []
    for r in regular:
        if r["jvm"] not in jvms:
            jvms.append(r["jvm"])
    qs = ["rss", "native", "threads", "fds", "jni_refs", "sysv", "posix",
          "pool", "conns"]
    fig, axes = plt.subplots(3, 3, figsize=(15, 11))
    for ax, q in zip(axes.flat, qs):
        div = MiB if q in BYTE_QUANTITIES else 1
        for j in jvms:
            pts = [(r["t"] / 60, r[q] / div) for r in regular
                   if r["jvm"] == j and r.get(q) is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts],
                        marker=".", label=j)
        ax.set_title(q + (" (MiB)" if div == MiB else ""))
        ax.set_xlabel("minutes")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("hdfs-rdma soak: every JVM over time")
    fig.tight_layout()
    path = os.path.join(out_dir, "soak.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_results(out_dir, rows, grows):
    """soak.csv (every sample's rows), growth.csv (`grows`, the growth
    rule's rows), the growth table printed, and soak.png."""
    write_csv(os.path.join(out_dir, "soak.csv"), rows)
    write_csv(os.path.join(out_dir, "growth.csv"), grows)
    print("\nGrowth after warm-up (first third of the samples): median"
          " of the last third against the middle third:\n"
          + growth_table(grows))
    png = plot(out_dir, rows)
    log("results: %s%s" % (os.path.join(out_dir, "soak.csv"),
                           ", " + png if png else " (no matplotlib: no"
                           " plot)"))
