#!/usr/bin/env python3
"""Put time of stock HDFS and of the UCX path's distribution shapes.

A bottleneck model of one writer's put: every resource a byte crosses has
a capacity, each shape loads it a known number of times per byte written,
and the put streams at the slowest resource's pace:

    T(S) = t0 + S / min_k(capacity_k / load_k) + fill

Shapes, for replication r:
  stock    Hadoop's TCP pipeline: the client sends each byte once, every
           DataNode but the last forwards it (socket copies, CPU).
  tcp      the same pipeline with the drop-in jar's client (its CRC32C):
           what the policy falls back to.
  fan-out  the client's memory is read by all r DataNodes (one get each):
           the client's link carries every byte r times.
  chain    DataNode k gets each packet from DataNode k-1's landing buffer:
           every link carries each byte once, over r hops.
  hybrid   the client feeds m DataNodes, and chains of the others hang
           off them: every DataNode link still serves at most one copy,
           the client's serves m, over ceil(r/m) hops.

CPU capacities are per-byte costs measured on this project's VM (least
squares over the --paper run, benchmarks/README.md), taken as one core's
worth of work per JVM, scaled by --core-speed. Where gets are not
one-sided (UCX over tcp), the owner's CPU sends the bytes of every get it
serves and the getter's receives them (both measured with --hosts).
Printed as Markdown: the one-host check and the clusters the distribution
targets are about (the seed paper's, 25 and 100 Gb/s RoCE; the targets
are in benchmarks/README.md).
"""

import argparse

GIB = 1 << 30
GB = 1e9
PACKET = 64 * 1024

# Measured here (benchmarks/README.md, --paper on 965809d): CPU seconds
# per GiB written. Client: the whole FsShell JVM. DataNode: per replica.
CLIENT_S_PER_GIB = {"stock": {1: 1.95, 3: 2.16}, "tcp": {1: 1.40, 3: 1.65},
                    "ucx": {1: 1.38, 3: 1.64}}
DN_S_PER_GIB = {"stock": {1: 1.50, 3: 6.02 / 3}, "tcp": {1: 1.47, 3: 4.57 / 3},
                "ucx": {1: 0.91, 3: 4.32 / 3}}
# Fixed part of a put (JVM start, NameNode calls, pipeline set-up), s.
T0 = {"stock": 1.81, "tcp": 1.81, "ucx": 1.88}
# A get UCX emulates over tcp, CPU s per GB: on the memory's owner (it
# sends the bytes) and on the getter. Measured: client and DataNode CPU
# of --hosts 10gbit --ucx-tcp puts over the jar's TCP puts (3.2-3.6 and
# 0.8-1.0 s per GB fetched).
TCP_GET_SERVE_S_PER_GB = 3.3
TCP_GET_FETCH_S_PER_GB = 0.9


def interp(table, r):
    """Per-replication value; r other than 1 and 3 uses the nearest."""
    return table[1] if r < 2 else table[3]


def capacity(kind, r, core_speed):
    """Bytes/s one JVM's CPU sustains: client and one DataNode."""
    client = GIB / interp(CLIENT_S_PER_GIB[kind], r) * core_speed
    dn = GIB / interp(DN_S_PER_GIB[kind], r) * core_speed
    return client, dn


def kind_of(shape):
    return shape if shape in ("stock", "tcp") else "ucx"


def rate(shape, r, c, m=None):
    """Streaming rate (bytes/s) and its bottleneck for a cluster c."""
    client_cpu, dn_cpu = capacity(kind_of(shape), r, c["core_speed"])
    one_sided = c["one_sided"]
    limits = {"disk": c["disk"] * GB}
    if shape in ("stock", "tcp"):
        tcp = c["tcp_efficiency"]
        limits["client link"] = c["client_link"] * tcp
        limits["DataNode link"] = c["dn_link"] * tcp
        limits["client CPU"] = client_cpu
        limits["DataNode CPU"] = dn_cpu
        return min((v, k) for k, v in limits.items())
    if shape == "fan-out":
        m = r
    elif shape == "chain":
        m = 1
    # Every DataNode but the chains' last serves one copy.
    downstream = 1 if m < r else 0
    link_eff = 1.0 if one_sided else c["tcp_efficiency"]
    limits["client link"] = c["client_link"] * link_eff / m
    limits["DataNode link"] = c["dn_link"] * link_eff
    serve = 0.0 if one_sided else TCP_GET_SERVE_S_PER_GB / GB
    fetch = 0.0 if one_sided else TCP_GET_FETCH_S_PER_GB / GB
    limits["client CPU"] = 1.0 / (1.0 / client_cpu + m * serve)
    limits["DataNode CPU"] = 1.0 / (1.0 / dn_cpu + downstream * serve
                                    + fetch)
    return min((v, k) for k, v in limits.items())


def put_time(shape, size, r, c, m=None):
    bw, limit = rate(shape, r, c, m)
    if shape in ("stock", "tcp", "chain"):
        hops = r
    elif shape == "hybrid":
        hops = -(-r // m)
    else:
        hops = 1
    fill = hops * PACKET / min(c["client_link"], c["dn_link"])
    return T0[kind_of(shape)] + size / bw + fill, limit


def shapes(r):
    out = [("stock", None), ("tcp", None), ("fan-out", None)]
    if r > 1:
        out.append(("chain", None))
    for m in range(2, r):
        out.append(("hybrid m=%d" % m, m))
    return out


def best(r, c, size):
    """What the policy should pick: the fastest shape the jar has (its
    TCP pipeline included); ties go to the one listed first."""
    cands = [(round(put_time(n if m is None else "hybrid", size, r, c,
                             m)[0], 3), i, n)
             for i, (n, m) in enumerate(shapes(r)) if n != "stock"]
    t, _, n = min(cands)
    return t, n


def cluster_table(name, c, sizes, reps):
    print("\n#### %s\n" % name)
    print("Client link %.1f GB/s, DataNode links %.1f GB/s, %s gets, "
          "storage %.2f GB/s, TCP at %.0f%% of the link, cores x%.1f.\n" % (
              c["client_link"] / GB, c["dn_link"] / GB,
              "one-sided" if c["one_sided"] else "emulated (tcp)",
              c["disk"], 100 * c["tcp_efficiency"], c["core_speed"]))
    print("| GB | rep | stock s | TCP (jar) s | fan-out s | chain s |"
          " hybrid s | chosen | chosen/stock | chosen/fan-out | limits:"
          " stock; fan-out; chosen |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in reps:
        for size_gb in sizes:
            size = size_gb * GB
            times = {}
            limits = {}
            for n, m in shapes(r):
                t, lim = put_time(n if m is None else "hybrid", size, r, c, m)
                times[n] = t
                limits[n] = lim
            tb, chosen = best(r, c, size)
            hyb = [v for k, v in times.items() if k.startswith("hybrid")]
            print("| %g | %d | %.2f | %.2f | %.2f | %s | %s | %s | %.2f |"
                  " %.2f | %s; %s; %s |" % (
                      size_gb, r, times["stock"], times["tcp"],
                      times["fan-out"],
                      "%.2f" % times["chain"] if "chain" in times else "-",
                      "%.2f" % min(hyb) if hyb else "-", chosen,
                      tb / times["stock"], tb / times["fan-out"],
                      limits["stock"], limits["fan-out"], limits[chosen]))


def one_host_check():
    """All JVMs on one 2-core host: the CPU seconds of client and
    DataNodes share the cores; measured wall time per GiB against that."""
    print("#### One host: CPU model against the measured sweep\n")
    print("CPU seconds per GiB (client + DataNodes) over 2 cores is the "
          "floor; the measured slope of wall time per GiB is above it by a "
          "near-constant overlap factor.\n")
    print("| rep | system | CPU s/GiB | floor s/GiB | measured s/GiB |"
          " measured/floor |")
    print("|---|---|---|---|---|---|")
    measured = {("stock", 1): 2.25, ("ucx", 1): 1.52,
                ("stock", 3): 5.33, ("ucx", 3): 4.02}
    floors = {}
    for r in (1, 3):
        for kind in ("stock", "ucx"):
            cpu = CLIENT_S_PER_GIB[kind][r] + DN_S_PER_GIB[kind][r] * r
            floors[kind, r] = cpu / 2
            print("| %d | %s | %.2f | %.2f | %.2f | %.2f |" % (
                r, kind, cpu, cpu / 2, measured[kind, r],
                measured[kind, r] / (cpu / 2)))
    for r in (1, 3):
        print("\nReplication %d: model UCX/stock %.2f, measured %.2f." % (
            r, floors["ucx", r] / floors["stock", r],
            measured["ucx", r] / measured["stock", r]))


# benchmarks/run.sh --hosts RATE [--ucx-tcp] --sizes 128M,512M --reps 1,3
# --runs 3 --no-scale (commit e5c6b80, 2026-11-23): medians, seconds,
# stock / the UCX client's policy / forced fan-out over tcp.
EMULATED_MEASURED = {
    ("1gbit", 128, 1): (2.54, 2.72, 2.37), ("1gbit", 128, 3): (2.29, 2.34, 4.66),
    ("1gbit", 512, 1): (5.57, 5.91, 5.88), ("1gbit", 512, 3): (5.82, 5.87, 14.94),
    ("10gbit", 128, 1): (1.85, 1.53, 2.38), ("10gbit", 128, 3): (2.01, 2.01, 2.98),
    ("10gbit", 512, 1): (2.65, 2.32, 3.78), ("10gbit", 512, 3): (3.76, 3.68, 6.88),
}
# What tbf let through a veth pair at 1 Gbit/s (../shared/ENVIRONMENT.md).
TBF_EFFICIENCY = 0.963
# Wall time over the CPU floor with all JVMs on 2 cores (one_host_check).
OVERLAP = 1.32


def emulated_check():
    """Emulated hosts: links of their own, CPU still the machine's 2 cores.
    Per byte a put pays the slower of its busiest link and the shared
    cores (the one-host model, with the client's serving of emulated gets
    added); both are compared with the --hosts runs."""
    print("\n#### Emulated hosts: model against the --hosts runs\n")
    print("| link | MiB | rep | stock model / measured s | policy (TCP)"
          " model / measured s | fan-out over tcp model / measured s |")
    print("|---|---|---|---|---|---|")
    for (rate, mib, r), (m_stock, m_policy, m_fan) in sorted(
            EMULATED_MEASURED.items(), key=lambda kv: (len(kv[0][0]),
                                                       kv[0])):
        link = gbit(1 if rate == "1gbit" else 10) * TBF_EFFICIENCY
        size = mib * (1 << 20)

        def wall(kind, copies, emulated):
            cpu = (CLIENT_S_PER_GIB[kind][r] + r * DN_S_PER_GIB[kind][r]
                   + emulated * r * GIB / GB) / GIB
            per_byte = max(copies / link, OVERLAP * cpu / 2)
            return T0[kind] + size * per_byte
        stock = wall("stock", 1, 0.0)
        policy = wall("tcp", 1, 0.0)
        fan = wall("ucx", r, TCP_GET_SERVE_S_PER_GB + TCP_GET_FETCH_S_PER_GB)
        print("| %s | %d | %d | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f |"
              % (rate, mib, r, stock, m_stock, policy, m_policy, fan,
                 m_fan))


def gbit(x):
    return x * 1e9 / 8


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--core-speed", type=float, default=1.0,
                   help="CPU per core relative to this VM's")
    a = p.parse_args()
    one_host_check()
    emulated_check()
    sizes = (1, 5)
    reps = (1, 3)
    def cluster(client_gbit, dn_gbit, one_sided, disk, tcp_eff):
        return dict(client_link=gbit(client_gbit), dn_link=gbit(dn_gbit),
                    one_sided=one_sided, disk=disk, tcp_efficiency=tcp_eff,
                    core_speed=a.core_speed)
    clusters = [
        ("Seed paper: QDR InfiniBand (MT26428, 32 Gb/s data), stock over"
         " IPoIB, 40 GB RAM (1-5 GB land in the page cache)",
         cluster(32, 32, True, 5.0, 0.45)),
        ("56 Gb/s FDR InfiniBand, same DataNodes",
         cluster(54, 54, True, 5.0, 0.45)),
        ("25 Gb/s RoCE, NVMe DataNodes (2 GB/s)",
         cluster(25, 25, True, 2.0, 0.9)),
        ("100 Gb/s RoCE, NVMe DataNodes (2 GB/s)",
         cluster(100, 100, True, 2.0, 0.9)),
        ("10 Gb/s RoCE client, 25 Gb/s DataNodes (client link / 3 <"
         " DataNode link)", cluster(10, 25, True, 2.0, 0.9)),
        ("10 Gb/s Ethernet without RoCE: UCX over tcp",
         cluster(10, 10, False, 2.0, 0.9)),
        ("1 Gb/s Ethernet without RoCE: UCX over tcp",
         cluster(1, 1, False, 2.0, 0.94)),
    ]
    for name, c in clusters:
        cluster_table(name, c, sizes, reps)


if __name__ == "__main__":
    main()
