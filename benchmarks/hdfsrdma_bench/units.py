"""Sizes and rates: parsing what the command line and Hadoop's
configuration say, the short and long text of a size, the formatting of
measured values, and how HDFS cuts a file into blocks and packets."""

import argparse
import math
import re

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
PACKET = 64 * KiB
PACKET_DATA = 126 * 512    # data bytes of a full 64 KiB packet


def human(size):
    if size >= GiB and size % GiB == 0:
        return "%dG" % (size // GiB)
    if size >= MiB and size % MiB == 0:
        return "%dM" % (size // MiB)
    if size >= KiB and size % KiB == 0:
        return "%dK" % (size // KiB)
    return str(size)


def human_long(size):
    return human(size).replace("G", " GiB").replace("M", " MiB").replace(
        "K", " KiB")


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)(i?B)?", text.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError("bad size: %r" % text)
    mult = {"": 1, "K": KiB, "M": MiB, "G": GiB}[m.group(2).upper()]
    return int(m.group(1)) * mult


def parse_size_rep(text):
    size, _, rep = text.partition(":")
    try:
        return parse_size(size), int(rep or "3")
    except ValueError:
        raise argparse.ArgumentTypeError("bad SIZE:REP: %r" % text)


def parse_list(kind):
    def parse(text):
        return [kind(x) for x in text.split(",") if x.strip()]
    return parse


def parse_rate(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)bit", text.lower())
    if not m:
        raise argparse.ArgumentTypeError("bad rate: %r (e.g. 1gbit)" % text)
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6,
                                "g": 1e9}[m.group(2)]


def parse_hadoop_size(text, default):
    """dfs.blocksize and the like: bytes, or a number with k/m/g/t."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)\s*", text or "", re.I)
    if not m:
        return default
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30,
                               "t": 40}[m.group(2).lower()]


def fmt(value, digits=2):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return "%.*f" % (digits, value)
    return str(value)


def fmt_bytes(value):
    """A byte count; the median of an even number of counts is a float."""
    return "n/a" if value is None else "%d" % round(value)


def packets_of(size, block=128 * MiB):
    """Data packets a client sends for a file of `size` bytes: packets of
    126 chunks of 512 bytes (what fits a 64 KiB packet with its CRC32C
    sums), the last of each 128 MiB block short."""
    full, rest = divmod(size, block)
    return full * math.ceil(block / PACKET_DATA) + math.ceil(
        rest / PACKET_DATA)


def blocks_of(size, block=128 * MiB):
    return max(1, math.ceil(size / block))
