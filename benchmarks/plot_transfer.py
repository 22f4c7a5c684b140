#!/usr/bin/env python3
"""Turns TransferBenchmark's JMH results into transfer.csv, crossover.csv
and transfer.png (transfer time against size, socket against UCX, with and
without connection set-up: the shape of Fig. 4 of the seed paper).

    plot_transfer.py --jmh DIR/jmh.json [--transports DIR/transports.tsv]
                     --out DIR

transfer.csv: benchmark, setup_counted, size_bytes, us_per_op, error,
transport. `error` is JMH's 99.9% confidence half-interval (empty when JMH
had too few iterations to give one).

crossover.csv: for UCX send and UCX get, with and without set-up counted,
the smallest measured size from which UCX is faster than the socket at
every larger measured size (crossover_size_bytes), the size where the two
curves cross by log-log interpolation between neighbouring measured sizes
(interpolated_bytes), and the sizes at which UCX was faster. When UCX
does not overtake the socket within the measured sizes, extrapolated_bytes
estimates where it would from straight-line fits us = a + b * size of both
series (least squares on relative error): a model, not a measurement.
"""

import argparse
import csv
import json
import math
import os
import sys

# JMH method name -> (benchmark, setup counted)
METHODS = {
    "socketTransfer": ("socketTransfer", False),
    "socketTransferWithSetup": ("socketTransfer", True),
    "ucxSend": ("ucxSend", False),
    "ucxSendWithSetup": ("ucxSend", True),
    "ucxGet": ("ucxGet", False),
    "ucxGetWithSetup": ("ucxGet", True),
}
LABELS = {
    "socketTransfer": "Java socket (TCP loopback)",
    "ucxSend": "UCX send (bridge messages of <= 8 KiB)",
    "ucxGet": "UCX get (on shared memory: a direct read)",
}
STYLES = {
    "socketTransfer": dict(color="tab:blue", marker="o"),
    "ucxSend": dict(color="tab:orange", marker="s"),
    "ucxGet": dict(color="tab:green", marker="^"),
}


def human(size):
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20),
                         ("KiB", 1 << 10)):
        if size >= factor:
            value = size / factor
            return ("%d %s" % (value, unit) if value == int(value)
                    else "%.1f %s" % (value, unit))
    return "%d B" % size


def number(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) or math.isinf(value) else value


def read_results(jmh_path, transports_path):
    transports = {}
    if transports_path and os.path.exists(transports_path):
        with open(transports_path, newline="") as f:
            for row in csv.reader(f, delimiter="\t"):
                if len(row) >= 3:
                    transports[(row[0], int(row[1]))] = row[2]
    with open(jmh_path) as f:
        results = json.load(f)
    rows = []
    for r in results:
        method = r["benchmark"].rsplit(".", 1)[-1]
        if method not in METHODS:
            continue
        benchmark, setup = METHODS[method]
        size = int(r["params"]["size"])
        metric = r["primaryMetric"]
        if metric.get("scoreUnit") != "us/op":
            sys.exit("expected us/op from JMH, got %s" % metric.get("scoreUnit"))
        iterations = [number(v) for fork in metric.get("rawData", [])
                      for v in fork]
        iterations = [v for v in iterations if v is not None]
        rows.append(dict(
            lowest=min(iterations) if iterations else None,
            highest=max(iterations) if iterations else None,
            benchmark=benchmark, setup_counted=setup, size_bytes=size,
            us_per_op=number(metric["score"]),
            error=number(metric.get("scoreError")),
            transport=transports.get((method, size), "")))
    rows.sort(key=lambda r: (r["setup_counted"], r["benchmark"],
                             r["size_bytes"]))
    return rows


def write_transfer_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "setup_counted", "size_bytes", "us_per_op",
                    "error", "transport"])
        for r in rows:
            w.writerow([r["benchmark"], str(r["setup_counted"]).lower(),
                        r["size_bytes"], "%.3f" % r["us_per_op"],
                        "" if r["error"] is None else "%.3f" % r["error"],
                        r["transport"]])


def series(rows, benchmark, setup):
    return {r["size_bytes"]: r["us_per_op"] for r in rows
            if r["benchmark"] == benchmark and r["setup_counted"] == setup
            and r["us_per_op"] is not None}


def crossover(ucx, socket):
    """Where ucx (size -> us) becomes and stays faster than socket."""
    sizes = sorted(set(ucx) & set(socket))
    if not sizes:
        return None, None, [], "no common sizes measured"
    faster = [s for s in sizes if ucx[s] < socket[s]]
    start = None
    for s in reversed(sizes):
        if ucx[s] < socket[s]:
            start = s
        else:
            break
    if start is None:
        return (None, None, faster,
                "socket faster at the largest size measured (%s)"
                % human(sizes[-1]))
    i = sizes.index(start)
    if i == 0:
        return (start, None, faster,
                "UCX faster at every size measured (crossover at or below %s)"
                % human(start))
    lo, hi = sizes[i - 1], start
    # log(ucx/socket) goes from >= 0 at lo to < 0 at hi; linear in log size.
    r_lo = math.log(ucx[lo] / socket[lo])
    r_hi = math.log(ucx[hi] / socket[hi])
    t = r_lo / (r_lo - r_hi) if r_lo != r_hi else 1.0
    at = math.exp(math.log(lo) + t * (math.log(hi) - math.log(lo)))
    note = "UCX slower up to %s, faster from %s on" % (human(lo), human(hi))
    if len(faster) > len(sizes) - i:
        note += " (also faster at %s)" % ", ".join(
            human(s) for s in faster if s < lo)
    return start, at, faster, note


def fit(points):
    """Least-squares us = a + b * size, weighted by 1/us^2 (relative
    error), so the small sizes pin the fixed cost a and the large ones the
    per-byte cost b."""
    sw = swx = swy = swxx = swxy = 0.0
    for x, y in points.items():
        w = 1.0 / (y * y)
        sw += w
        swx += w * x
        swy += w * y
        swxx += w * x * x
        swxy += w * x * y
    det = sw * swxx - swx * swx
    if len(points) < 2 or det == 0:
        return None
    b = (sw * swxy - swx * swy) / det
    a = (swy - b * swx) / sw
    return a, b


def extrapolate(ucx, socket):
    """Size where the fitted lines cross beyond the measured sizes, or
    None when the fits do not cross there."""
    fu, fs = fit(ucx), fit(socket)
    if not fu or not fs:
        return None
    (au, bu), (as_, bs) = fu, fs
    if bu >= bs or au <= as_:
        return None
    at = (au - as_) / (bs - bu)
    return at if at > max(set(ucx) & set(socket)) else None


def crossovers(rows):
    out = []
    for setup in (False, True):
        socket = series(rows, "socketTransfer", setup)
        for ucx_name in ("ucxSend", "ucxGet"):
            ucx = series(rows, ucx_name, setup)
            start, at, faster, note = crossover(ucx, socket)
            beyond = None
            if start is None and ucx and socket:
                beyond = extrapolate(ucx, socket)
                note += ("; fitted lines cross near %s" % human(beyond)
                         if beyond else "; fitted lines do not cross")
            out.append(dict(benchmark=ucx_name, setup_counted=setup,
                            crossover_size_bytes=start, interpolated_bytes=at,
                            extrapolated_bytes=beyond,
                            ucx_faster_at=faster, note=note))
    return out


def write_crossover_csv(items, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "against", "setup_counted",
                    "crossover_size_bytes", "interpolated_bytes",
                    "extrapolated_bytes", "ucx_faster_at_bytes", "note"])
        for c in items:
            w.writerow([c["benchmark"], "socketTransfer",
                        str(c["setup_counted"]).lower(),
                        "" if c["crossover_size_bytes"] is None
                        else c["crossover_size_bytes"],
                        "" if c["interpolated_bytes"] is None
                        else "%d" % round(c["interpolated_bytes"]),
                        "" if c["extrapolated_bytes"] is None
                        else "%d" % round(c["extrapolated_bytes"]),
                        ";".join(str(s) for s in c["ucx_faster_at"]),
                        c["note"]])


def print_table(rows, items):
    sizes = sorted({r["size_bytes"] for r in rows})
    names = [(b, s) for s in (False, True)
             for b in ("socketTransfer", "ucxSend", "ucxGet")]
    header = ["size"] + ["%s%s" % (b, "+setup" if s else "")
                         for b, s in names]
    print("us/op (mean of JMH iterations; lower is better)")
    print("  ".join("%-22s" % h if i else "%-8s" % h
                    for i, h in enumerate(header)).rstrip())
    for size in sizes:
        cells = ["%-8s" % human(size).replace(" ", "")]
        for b, s in names:
            v = series(rows, b, s).get(size)
            # A direct read of 1 KiB takes tens of nanoseconds.
            cells.append("%-22s" % ("-" if v is None else "%.1f" % v
                                    if v >= 1 else "%.3f" % v))
        print("  ".join(cells).rstrip())
    print()
    for c in items:
        where = ("none" if c["crossover_size_bytes"] is None
                 else human(c["crossover_size_bytes"]))
        interp = ("" if c["interpolated_bytes"] is None
                  else " (curves cross near %s)" % human(
                      c["interpolated_bytes"]))
        print("crossover %-8s vs socket, set-up %-11s: %s%s; %s" % (
            c["benchmark"], "counted" if c["setup_counted"] else "not counted",
            where, interp, c["note"]))
    lanes = sorted({r["transport"] for r in rows
                    if r["benchmark"] != "socketTransfer" and r["transport"]})
    if lanes:
        print("UCX lanes seen: %s" % "; ".join(lanes))


def plot(rows, items, path, title_note):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FixedFormatter, NullLocator

    sizes = sorted({r["size_bytes"] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    for ax, setup in zip(axes, (False, True)):
        for name in ("socketTransfer", "ucxSend", "ucxGet"):
            pts = sorted((r["size_bytes"], r["us_per_op"],
                          r["lowest"], r["highest"])
                         for r in rows if r["benchmark"] == name
                         and r["setup_counted"] == setup
                         and r["us_per_op"] is not None)
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ys = [p[1] for p in pts]
            # Bars: slowest and fastest measurement iteration (JMH's
            # confidence interval over 2-5 iterations spans decades on a
            # log axis; it is in transfer.csv).
            errs = [[max(0.0, y - (lo if lo is not None else y))
                     for _, y, lo, _ in pts],
                    [max(0.0, (hi if hi is not None else y) - y)
                     for _, y, _, hi in pts]]
            ax.errorbar(xs, ys, yerr=errs, label=LABELS[name], capsize=3,
                        linewidth=1.5, markersize=5, **STYLES[name])
        for c in items:
            if c["setup_counted"] == setup and c["interpolated_bytes"]:
                ax.axvline(c["interpolated_bytes"], linestyle=":",
                           linewidth=1, color=STYLES[c["benchmark"]]["color"])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator(sizes))
        ax.xaxis.set_major_formatter(FixedFormatter(
            [human(s).replace(" ", "") for s in sizes]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("data size")
        ax.set_title("connection set-up counted in every transfer" if setup
                     else "connection already open")
        ax.grid(True, which="both", linewidth=0.3)
    axes[0].set_ylabel("transfer time (us per transfer, log)\n"
                       "mean; bars: fastest to slowest iteration")
    axes[0].legend(loc="upper left", fontsize=9)
    fig.suptitle("Per-transfer cost against size, two JVMs on one host"
                 + (" - " + title_note if title_note else ""), fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jmh", required=True, help="JMH JSON result")
    p.add_argument("--transports", help="benchmark<TAB>size<TAB>lanes file")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--title", default="", help="note for the plot title")
    args = p.parse_args()
    rows = read_results(args.jmh, args.transports)
    if not rows:
        sys.exit("no TransferBenchmark results in %s" % args.jmh)
    os.makedirs(args.out, exist_ok=True)
    write_transfer_csv(rows, os.path.join(args.out, "transfer.csv"))
    items = crossovers(rows)
    write_crossover_csv(items, os.path.join(args.out, "crossover.csv"))
    print_table(rows, items)
    try:
        plot(rows, items, os.path.join(args.out, "transfer.png"), args.title)
    except ImportError as e:
        sys.exit("no plot (%s): install python3-matplotlib" % e)
    print("wrote %s" % ", ".join(os.path.join(args.out, n) for n in
                                 ("transfer.csv", "crossover.csv",
                                  "transfer.png")))


if __name__ == "__main__":
    main()
