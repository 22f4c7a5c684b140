"""Emulated hosts (--hosts): the client, the NameNode and each DataNode
in network and IPC namespaces of their own on this machine, links shaped
with tbf."""

import ctypes
import os
import subprocess

from .clusters import DATANODES
from .harness import HarnessError, log, warn
from .processes import libc
from .units import KiB, parse_rate

CLONE_NEWNET = 0x40000000


class EmulatedHosts:
    """--hosts RATE: the client, the NameNode and each DataNode as hosts of
    their own on this machine. Each is a network namespace with one veth
    link to a bridge (in a namespace of its own), shaped to RATE in both
    directions with tbf; every JVM also gets an IPC namespace of its own,
    so no two JVMs share memory and UCX between them has only tcp, as
    between the hosts of an Ethernet cluster. The harness itself moves
    into the client's namespace (setns), from where it reaches every host;
    no address is added outside the namespaces it creates and removes."""

    PREFIX = "hrdma-"
    SUBNET = "10.213.7."

    def __init__(self, rate, client_rate=None):
        self.rate = rate
        # --client-link: the client's link may be slower than the
        # DataNodes' (where client link / replication is the bottleneck).
        self.client_rate = client_rate or rate
        self.names = ["client", "nn"] + ["dn%d" % (i + 1)
                                         for i in range(DATANODES)]
        self.addr = {n: self.SUBNET + str(10 + i)
                     for i, n in enumerate(self.names)}
        self.own_ns = None
        self.created = []

    def ns(self, name):
        return self.PREFIX + name

    @staticmethod
    def ip(*args):
        r = subprocess.run(["ip"] + list(args), capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise HarnessError("ip %s: %s" % (" ".join(args),
                                              r.stderr.strip()))

    @staticmethod
    def tc(ns, *args):
        r = subprocess.run(["tc", "-n", ns] + list(args),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise HarnessError("tc -n %s %s: %s" % (ns, " ".join(args),
                                                    r.stderr.strip()))

    def shape(self, ns, dev, rate):
        bits = parse_rate(rate)
        # tbf needs a bucket of at least a timer tick's worth of bytes.
        burst = max(256 * KiB, int(bits / 8 / 250))
        self.tc(ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate",
                rate, "burst", str(burst), "latency", "50ms")

    def up(self):
        if os.geteuid() != 0:
            raise HarnessError("--hosts needs root (network namespaces)")
        self.down()   # what an interrupted run left
        sw = self.ns("sw")
        self.ip("netns", "add", sw)
        self.created.append(sw)
        self.ip("-n", sw, "link", "add", "br0", "type", "bridge")
        self.ip("-n", sw, "link", "set", "br0", "up")
        for n in self.names:
            host = self.ns(n)
            self.ip("netns", "add", host)
            self.created.append(host)
            self.ip("-n", sw, "link", "add", "v-" + n, "type", "veth",
                    "peer", "name", "eth0", "netns", host)
            self.ip("-n", sw, "link", "set", "v-" + n, "master", "br0", "up")
            self.ip("-n", host, "addr", "add", self.addr[n] + "/24", "dev",
                    "eth0")
            self.ip("-n", host, "link", "set", "eth0", "up")
            self.ip("-n", host, "link", "set", "lo", "up")
            rate = self.client_rate if n == "client" else self.rate
            self.shape(host, "eth0", rate)     # what the host sends
            self.shape(sw, "v-" + n, rate)     # what it receives
        log("emulated hosts: %s on %s.0/24, every link %s%s" % (
            ", ".join("%s %s" % (n, self.addr[n]) for n in self.names),
            self.SUBNET.rstrip("."), self.rate,
            "" if self.client_rate == self.rate
            else ", the client's %s" % self.client_rate))

    def enter(self):
        """Moves this (single-threaded) harness into the client's host."""
        self.own_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
        self._setns("/var/run/netns/" + self.ns("client"))

    def _setns(self, path):
        fd = os.open(path, os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise HarnessError("setns %s: %s" % (
                    path, os.strerror(ctypes.get_errno())))
        finally:
            os.close(fd)

    def leave(self):
        if self.own_ns is not None:
            if libc.setns(self.own_ns, CLONE_NEWNET) != 0:
                warn("setns back: %s" % os.strerror(ctypes.get_errno()))
            os.close(self.own_ns)
            self.own_ns = None

    def down(self):
        for n in ["sw"] + self.names:
            subprocess.run(["ip", "netns", "del", self.ns(n)],
                           capture_output=True)
        self.created = []

    def prefix(self, name):
        """What runs a command on host `name` (its own IPC namespace)."""
        if name == "client":
            return ["unshare", "--ipc"]
        return ["ip", "netns", "exec", self.ns(name), "unshare", "--ipc"]
