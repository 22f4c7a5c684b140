"""What the UCX path counts, read in this one module: each DataNode's
metrics2 source in JMX (read around every put, as of its last snapshot:
at most one metrics period old, see Hdfs.metrics_lag) and the totals lines
of hdfsrdma.stats.file (a client's at the end of its put, a DataNode's at
JVM exit). Where the counters are published, and under which names, is
said only by the constants below."""

import os
import re

from .measurement import bean_sums

# Each DataNode's metrics2 source (HdfsRdmaDataNode-<host>-<port>), and the
# attributes of it the checks read.
RDMA_BEAN = "Hadoop:service=DataNode,name=HdfsRdmaDataNode-*"
BEAN_FETCHED = "DataBytesFetched"
BEAN_BLOCKS_OVER_TCP = "BlocksOverTcp"
BEAN_BLOCKS_OVER_UCX = "BlocksOverUcx"

# Keys of a totals line: bytes a client sent as descriptors, the UCX
# transports its endpoints used; bytes DataNodes fetched by get, client
# block replicas they received over TCP.
STATS_SENT = "ucx-data-bytes-sent"
STATS_TRANSPORTS = "transports"
STATS_FETCHED = "ucx-data-bytes-fetched"
STATS_BLOCKS_OVER_TCP = "blocks-over-tcp"
# Keys of a client's totals line counting its pipelines that went over
# TCP although UCX was on (--apps fails a ucx batch with any).
STATS_TCP_PIPELINES = ("pipelines-tcp-emulated-gets",
                       "pipelines-tcp-unreachable",
                       "pipelines-tcp-stock-datanode",
                       "pipelines-tcp-datanode-off",
                       "pipelines-tcp-datanode-refused")

# The bean's attributes in the counters of Hdfs.dn_counters are
# PREFIX + attribute.
PREFIX = "rdma."
FETCHED = PREFIX + BEAN_FETCHED
BLOCKS_OVER_TCP = PREFIX + BEAN_BLOCKS_OVER_TCP
BLOCKS_OVER_UCX = PREFIX + BEAN_BLOCKS_OVER_UCX


def datanode_counters(addr):
    """The bean's numeric attributes on the DataNode whose http address is
    `addr`, or None where it serves no such bean (no jar, or no answer)."""
    return bean_sums(addr, RDMA_BEAN)


def read_stats(path):
    """A client's totals line (its stats file, written at the end of its
    put), {} where there is none: a JVM that started no UCX writes none."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return parse_stats(f.read())


def sum_stats(paths):
    """The numeric totals of DataNodes' stats files (a line per JVM exit),
    summed over every line of the files that exist."""
    total = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                for k, v in parse_stats(line).items():
                    if isinstance(v, int):
                        total[k] = total.get(k, 0) + v
    return total


def parse_stats(line):
    """Parses a `key=value key=value` line of hdfsrdma.stats.file."""
    out = {}
    for tok in line.split():
        if "=" not in tok:
            continue
        k, v = tok.split("=", 1)
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def fetched_key(counters):
    """The rdma bean's attribute of data bytes fetched by get."""
    if FETCHED in counters:
        return FETCHED
    for k in sorted(counters):
        if k.startswith(PREFIX) and re.search(r"bytes.*fetch", k, re.I):
            return k
    return None
