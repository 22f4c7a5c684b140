"""The run's rows reduced to what summary.csv, fit.csv and
scale-summary.csv hold: per size and replication each system's medians and
the ratios between systems, per system the cost against file size, per
writer count the concurrent writers' medians."""

from .defer_start import put_ucx_bytes
from .stats import linfit, median, ratio
from .targets import wall_target
from .units import GiB, human, packets_of, parse_size


def summarize(bench):
    """Per size and replication: each system's medians (wall, client and
    DataNode CPU, per GiB too, context switches per packet), ratios UCX /
    stock (wall_ratio and the like), jar / stock and UCX / jar, the limit,
    the binding wall-time target, and what UCX carried."""
    rows = bench.put_rows
    keys = sorted({(r["size_bytes"], r["rep"]) for r in rows})
    summary = []
    for size, rep in keys:
        sel = {s: [r for r in rows if r["size_bytes"] == size
                   and r["rep"] == rep and r["system"] == s]
               for s in bench.all_systems}
        lims = [r for r in bench.limit_rows if r["size_bytes"] == size
                and r["rep"] == rep]
        lim = median([r["limit_s"] for r in lims])
        out = dict(size_bytes=size, size=human(size), rep=rep,
                   runs=min([len(sel[s]) for s in bench.systems] or [0]))
        m = {}
        for s in bench.all_systems:
            ms = system_medians(sel[s])
            m.update(((s, col), v) for col, v in ms.items())
            out.update(system_columns(s, ms, size / GiB, lim))
        out.update(comparisons(bench, m, sel, lims, lim, size, rep))
        out.update(compared_columns(bench, m))
        summary.append(out)
    for r in summary:
        for k, v in r.items():
            if isinstance(v, float):
                r[k] = round(v, 4)
    return summary


def system_medians(rows):
    """One system's medians over its puts of one size and replication:
    wall time, client and DataNode CPU, and context switches per packet
    (voluntary, involuntary and their sum; client and DataNodes)."""
    m = {}
    for col in ("wall_s", "client_cpu_s", "dn_cpu_s"):
        m[col] = median([r[col] for r in rows])
    for who in ("client", "dn"):
        for kind in ("voluntary", "involuntary"):
            col = "%s_csw_%s" % (who, kind)
            m[col] = median([
                None if r[col] is None else r[col] / r["packets"]
                for r in rows])
        m[who + "_csw"] = median([
            None if r[who + "_csw_voluntary"] is None else
            (r[who + "_csw_voluntary"] + r[who + "_csw_involuntary"])
            / r["packets"] for r in rows])
    return m


def system_columns(s, ms, gib, lim):
    """The columns of system `s` in a summary row, from its medians `ms`,
    the file's size in GiB and the limit's median."""
    return {
        "%s_wall_s" % s: ms["wall_s"],
        "%s_client_cpu_s" % s: ms["client_cpu_s"],
        "%s_client_cpu_s_per_gib" % s: ratio(ms["client_cpu_s"], gib),
        "%s_dn_cpu_s" % s: ms["dn_cpu_s"],
        "%s_dn_cpu_s_per_gib" % s: ratio(ms["dn_cpu_s"], gib),
        "%s_client_csw_vol_per_packet" % s: ms["client_csw_voluntary"],
        "%s_client_csw_invol_per_packet" % s: ms["client_csw_involuntary"],
        "%s_dn_csw_vol_per_packet" % s: ms["dn_csw_voluntary"],
        "%s_dn_csw_invol_per_packet" % s: ms["dn_csw_involuntary"],
        "%s_client_csw_per_packet" % s: ms["client_csw"],
        "%s_dn_csw_per_packet" % s: ms["dn_csw"],
        "%s_put_over_limit" % s: ratio(ms["wall_s"], lim)}


def comparisons(bench, m, sel, lims, lim, size, rep):
    """The columns that compare the systems (m: (system, column) ->
    median) in a summary row, its wall-time target, the limit, and what
    UCX carried (sel: each system's puts of the row)."""
    wr = ratio(m["ucx", "wall_s"], m["stock", "wall_s"])
    wt = wall_target(size, rep)
    fetched = [r["ucx_bytes_fetched"] for r in sel["ucx"]
               if r["ucx_bytes_fetched"] is not None]
    jar_ucx = [(r["ucx_bytes_fetched"] or 0) + (r["ucx_bytes_sent"] or 0)
               for r in sel["jar"]]
    transports = sorted({r["transport"] for r in sel["ucx"]
                         if r["transport"]})
    return dict(
        wall_ratio=wr,
        jar_wall_ratio=ratio(m["jar", "wall_s"], m["stock", "wall_s"]),
        ucx_jar_wall_ratio=ratio(m["ucx", "wall_s"], m["jar", "wall_s"]),
        wall_target=wt,
        wall_result=None if wt is None or wr is None else
        ("pass" if wr <= wt else "miss"),
        client_cpu_ratio=ratio(m["ucx", "client_cpu_s"],
                               m["stock", "client_cpu_s"]),
        jar_client_cpu_ratio=ratio(m["jar", "client_cpu_s"],
                                   m["stock", "client_cpu_s"]),
        ucx_jar_client_cpu_ratio=ratio(m["ucx", "client_cpu_s"],
                                       m["jar", "client_cpu_s"]),
        dn_cpu_ratio=ratio(m["ucx", "dn_cpu_s"], m["stock", "dn_cpu_s"]),
        jar_dn_cpu_ratio=ratio(m["jar", "dn_cpu_s"],
                               m["stock", "dn_cpu_s"]),
        client_csw_ratio=ratio(m["ucx", "client_csw"],
                               m["stock", "client_csw"]),
        dn_csw_ratio=ratio(m["ucx", "dn_csw"], m["stock", "dn_csw"]),
        packets=packets_of(size, bench.cluster_of["ucx"].block_size)
        if "ucx" in bench.cluster_of else packets_of(size),
        copy_s=median([r["copy_s"] for r in lims]),
        fanout_s=median([r["fanout_s"] for r in lims]),
        limit_s=lim,
        ucx_bytes_fetched_median=median(fetched) if fetched else None,
        ucx_bytes_expected=0 if bench.ucx_policy_over_tcp
        else put_ucx_bytes(bench, "ucx", size) * rep,
        jar_bytes_over_ucx_max=max(jar_ucx) if jar_ucx else None,
        transport="; ".join(transports))


def compared_columns(bench, m):
    """--compare-distributions: UCX's mode against each forced one, and
    against the fastest of them (the distribution target)."""
    out = {}
    walls = {}
    for c in bench.compared:
        out["%s_wall_ratio" % c] = ratio(m[c, "wall_s"],
                                         m["stock", "wall_s"])
        out["ucx_over_%s_wall_ratio" % c] = ratio(m["ucx", "wall_s"],
                                                  m[c, "wall_s"])
        if m[c, "wall_s"] is not None:
            walls[c] = m[c, "wall_s"]
    if walls:
        fastest = min(walls, key=walls.get)
        out.update(fastest_compared=fastest,
                   ucx_over_fastest_wall_ratio=ratio(
                       m["ucx", "wall_s"], walls[fastest]))
    return out


def fits(bench):
    """Per system, replication and metric (wall, client CPU, DataNode
    CPU): the least-squares line of the metric against size in GiB over
    every put."""
    out = []
    for rep in sorted({r["rep"] for r in bench.put_rows}):
        for s in bench.systems:
            sel = [r for r in bench.put_rows if r["rep"] == rep
                   and r["system"] == s]
            for metric in ("wall_s", "client_cpu_s", "dn_cpu_s"):
                pts = [r for r in sel if r[metric] is not None]
                xs = [r["size_bytes"] / GiB for r in pts]
                ys = [r[metric] for r in pts]
                f = linfit(xs, ys)
                if f is None:
                    continue
                out.append(dict(system=s, rep=rep, metric=metric,
                                points=len(xs),
                                sizes=" ".join(sorted(
                                    {r["size"] for r in pts},
                                    key=parse_size)),
                                slope_s_per_gib=round(f[0], 4),
                                intercept_s=round(f[1], 4),
                                r2=round(f[2], 5)))
    return out


def scale_summary(bench):
    """Per writer count, replication and size: each system's medians
    (aggregate MiB/s, per-writer latency, client CPU) and their ratios."""
    out = []
    keys = sorted({(r["writers"], r["rep"], r["size_bytes"])
                   for r in bench.scale_rows})
    for n, rep, size in keys:
        m = {}
        runs = []
        for s in bench.all_systems:
            sel = [r for r in bench.scale_rows if r["writers"] == n and
                   r["rep"] == rep and r["system"] == s]
            if s in bench.systems:
                runs.append(len(sel))
            m[s] = dict(
                agg=median([r["aggregate_mib_s"] for r in sel]),
                lat=median([r["writer_wall_median_s"] for r in sel]),
                cpu=median([r["client_cpu_s"] for r in sel]))
        row = dict(writers=n, size=human(size), rep=rep,
                   runs=min(runs or [0]))
        for s in bench.all_systems:
            row.update({"%s_aggregate_mib_s" % s: m[s]["agg"],
                        "%s_writer_latency_s" % s: m[s]["lat"],
                        "%s_client_cpu_s" % s: m[s]["cpu"]})
        row.update(
            aggregate_ratio=ratio(m["ucx"]["agg"], m["stock"]["agg"]),
            jar_aggregate_ratio=ratio(m["jar"]["agg"], m["stock"]["agg"]),
            ucx_jar_aggregate_ratio=ratio(m["ucx"]["agg"], m["jar"]["agg"]),
            latency_ratio=ratio(m["ucx"]["lat"], m["stock"]["lat"]),
            ucx_jar_latency_ratio=ratio(m["ucx"]["lat"], m["jar"]["lat"]))
        for k, v in row.items():
            if isinstance(v, float):
                row[k] = round(v, 4)
        out.append(row)
    return out
