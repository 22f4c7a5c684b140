#!/usr/bin/env python3
"""Put latency of stock HDFS 2.9.2, the drop-in jar with UCX off, and the
UCX write path (hdfs-rdma), side by side in one run.

Three systems, every put `FsShell -put` in its own JVM as `hdfs dfs -put`
runs it, alternating stock, jar, ucx on the same file:

- stock: the stock 2.9.2 jars only, on a cluster of its own (a NameNode and
  four DataNodes as separate JVMs on loopback, storage on disk).
- jar: the client gets the drop-in jar as -javaagent: with
  dfs.client.rdma.enabled=false, so the pipeline is Hadoop's TCP pipeline
  with whatever else the jar changes in the client. It shares the UCX
  cluster (see Bench.start_clusters for why).
- ucx: the drop-in jar as -javaagent: in the client and in every daemon of
  the UCX cluster, UCX on.

Each HDFS file is deleted after its put and the next put on a cluster waits
until the replicas are gone from the DataNodes' disks, so every put finds
its cluster in the same (empty) state. Next to the puts, in the same run:
the machine's limit (a plain local copy of the same bytes into r DataNode
storage directories, and the native UCX fan-out benchmark), concurrent
writers, a linear fit of cost against size, and the targets of issue 9.

With --conf DIR the same comparison runs against an existing cluster
(Hadoop configuration directory DIR, the jar installed on its DataNodes):
nothing is started or stopped there, the puts switch
dfs.client.rdma.enabled per put (false: jar, true: ucx; stock only with
--stock-classpath), and everything is written under one HDFS test
directory that the run creates and deletes (see ExistingCluster).

Called by benchmarks/run.sh (which sets up Java); see benchmarks/README.md.
Never asserts timings: it fails only when the harness breaks (a cluster does
not start, a put fails, a file reads back different, a UCX put moved no
bytes over UCX, a jar put moved any).
"""

import argparse
import csv
import ctypes
import datetime
import hashlib
import json
import math
import os
import platform
import random
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
PACKET = 64 * KiB
PACKET_DATA = 126 * 512    # data bytes of a full 64 KiB packet
DATANODES = 4
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SYSTEMS = ("stock", "jar", "ucx")     # the order of the alternation
LABELS = {"stock": "stock", "jar": "jar", "ucx": "UCX"}
LONG_LABELS = {"stock": "stock HDFS 2.9.2",
               "jar": "drop-in jar, UCX off (TCP)",
               "ucx": "hdfs-rdma (UCX get)"}
DISTRIBUTIONS = ("auto", "fan-out", "chain", "hybrid")
COMPARED = "ucx-"   # prefix of a --compare-distributions system

PROFILES = {
    # CI: proves the harness works end to end, in a couple of minutes.
    "tiny": dict(sizes=[1 * MiB, 16 * MiB], reps=[1, 3], runs=1,
                 writers=[1, 2], writer_size=16 * MiB, scale_reps=[3],
                 scale_runs=1, verify="all", warmup=16 * MiB),
    # The default: 1 MiB to 512 MiB (7 minutes on 2 cores with two
    # systems, about half as long again with three).
    "small": dict(sizes=[1 * MiB, 16 * MiB, 128 * MiB, 512 * MiB],
                  reps=[1, 3], runs=3, writers=[1, 2, 4],
                  writer_size=128 * MiB, scale_reps=[3], scale_runs=1,
                  verify="first", warmup=128 * MiB),
    # The paper's sizes (Figs. 6 and 7), 512 MiB for the targets, and the
    # scale study: one run covers every target of issue 9.
    "paper": dict(sizes=[1 * MiB, 16 * MiB, 128 * MiB, 512 * MiB, 1 * GiB,
                         2 * GiB, 3 * GiB, 4 * GiB, 5 * GiB],
                  reps=[1, 3], runs=3, writers=[1, 2, 4, 8],
                  writer_size=512 * MiB, scale_reps=[3, 1], scale_runs=3,
                  verify="first", warmup=128 * MiB),
}

# Targets of issue 9: ratios of medians (of >= TARGET_RUNS runs) measured in
# one alternating run. The summary reports each with the measured value and
# met / missed; a missed target never fails the run.
TARGET_RUNS = 3
LARGE = (512 * MiB, 5 * GiB)            # the "512 MiB to 5 GiB" range
WALL_TARGET_ALL = 1.00                  # UCX/stock, sizes of --small, 1-5 GiB
WALL_TARGET_LARGE = {3: 0.80, 1: 0.95}  # UCX/stock, LARGE, by replication
WALL_TARGET_SMALL = 1.05                # UCX/stock, 1 MiB and 16 MiB
DN_CPU_TARGET = 0.75                    # DataNode CPU/GiB UCX/stock, rep 3
CLIENT_CPU_TARGET = 1.00                # client CPU/GiB UCX/jar
SCALE_TARGET = 1.1                      # aggregate MiB/s UCX/stock, rep 3
SCALE_TARGET_SIZE = 512 * MiB           # ... of 1, 2, 4, 8 writers of this
CSW_TARGET = 1.00                       # context switches/packet UCX/stock
DISTRIBUTION_TARGET = 1.05              # issue 11: UCX / fastest compared


def in_large(size):
    return LARGE[0] <= size <= LARGE[1]


def wall_targets(size, rep):
    """The UCX/stock wall-time limits of issue 9 that apply to a size and
    replication (the strictest one binds)."""
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
    limits = wall_targets(size, rep)
    return min(limits) if limits else None


class HarnessError(Exception):
    """The harness itself broke (not a timing): the run exits nonzero."""


class Timeout(Exception):
    pass


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def warn(msg):
    print("[bench %s] WARNING: %s" % (time.strftime("%H:%M:%S"), msg),
          file=sys.stderr, flush=True)


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


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt(value, digits=2):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return "%.*f" % (digits, value)
    return str(value)


def fmt_bytes(value):
    """A byte count; the median of an even number of counts is a float."""
    return "n/a" if value is None else "%d" % round(value)


# --------------------------------------------------------------------------
# Processes: every child gets its own session (Ctrl-C reaches only us, and
# we stop the children in order), dies with us if we are killed
# (PR_SET_PDEATHSIG), and is reaped by pid with its rusage.
# --------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


class Procs:
    def __init__(self):
        self.live = {}          # pid -> (Popen, name)
        self.parent = os.getpid()

    def _child_setup(self):
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != self.parent:
            os._exit(1)

    def spawn(self, argv, logpath=None, env=None, name=None):
        out = open(logpath, "ab") if logpath else subprocess.DEVNULL
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True,
                                 preexec_fn=self._child_setup)
        finally:
            if logpath:
                out.close()
        self.live[p.pid] = (p, name or os.path.basename(argv[0]))
        return p

    def _reaped(self, pid, status):
        p, _ = self.live.pop(pid, (None, None))
        if p is not None:
            p.returncode = os.waitstatus_to_exitcode(status)
        return p

    def wait_all(self, procs, timeout, cluster_pids=()):
        """Waits for every process of `procs` (reaping by pid, so nothing
        else is disturbed); returns {pid: (end monotonic, rc, rusage)}.
        A cluster JVM that exits meanwhile is an error."""
        want = {p.pid for p in procs}
        done = {}

        def on_alarm(signum, frame):
            raise Timeout()
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            while want - set(done):
                pid, status, ru = os.wait4(-1, 0)
                now = time.monotonic()
                p = self._reaped(pid, status)
                if pid in want:
                    done[pid] = (now, p.returncode, ru)
                elif pid in cluster_pids:
                    raise HarnessError("a cluster JVM (pid %d) exited with %s"
                                       % (pid, os.waitstatus_to_exitcode(
                                           status)))
        except Timeout:
            raise HarnessError("timed out after %.0f s waiting for %s" % (
                timeout, ", ".join(self.live[p][1] for p in want - set(done)
                                   if p in self.live)))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        return done

    def alive(self, p):
        if p.pid not in self.live:
            return False
        pid, status = os.waitpid(p.pid, os.WNOHANG)
        if pid == 0:
            return True
        self._reaped(pid, status)
        return False

    def stop(self, procs, grace=20.0):
        """SIGTERM to each process group, wait up to `grace`, then SIGKILL."""
        procs = [p for p in procs if p.pid in self.live]
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        for p in procs:
            while p.pid in self.live and time.monotonic() < deadline:
                pid, status = os.waitpid(p.pid, os.WNOHANG)
                if pid:
                    self._reaped(pid, status)
                else:
                    time.sleep(0.05)
        for p in procs:
            if p.pid in self.live:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, status = os.waitpid(p.pid, 0)
                self._reaped(p.pid, status)

    def stop_all(self):
        self.stop([p for p, _ in list(self.live.values())], grace=15.0)


def cpu_seconds(pid):
    """utime + stime of a live process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ContextSwitches:
    """Context switches of a set of processes over an interval, summed over
    their threads, exited ones included: /proc/PID/status counts only the
    main thread and a thread's counts vanish with it, so a background
    thread reads /proc/PID/task/*/status every `period` seconds and keeps
    each thread's last values. A thread that exits loses at most its last
    period (DataXceiver threads live for a whole block)."""

    def __init__(self, pids, period=0.1):
        self.pids = list(pids)
        self.period = period
        self.first = {}     # (pid, tid) -> (voluntary, involuntary) at start
        self.last = {}
        self.stopping = threading.Event()
        self.thread = None

    @staticmethod
    def read(pid):
        out = {}
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            return out
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                    text = f.read()
            except OSError:
                continue
            v = re.search(r"^voluntary_ctxt_switches:\s+(\d+)", text, re.M)
            n = re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", text,
                          re.M)
            if v and n:
                out[(pid, tid)] = (int(v.group(1)), int(n.group(1)))
        return out

    def sample(self):
        for pid in self.pids:
            self.last.update(self.read(pid))

    def start(self):
        for pid in self.pids:
            self.first.update(self.read(pid))
        self.last = dict(self.first)

        def loop():
            while not self.stopping.wait(self.period):
                self.sample()
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        """(voluntary, involuntary) switches since start()."""
        self.stopping.set()
        self.thread.join()
        self.sample()
        vol = inv = 0
        for key, (v, n) in self.last.items():
            v0, n0 = self.first.get(key, (0, 0))
            vol += v - v0
            inv += n - n0
        return vol, inv


def ephemeral_low():
    """The low end of the kernel's ephemeral port range, or 0."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def free_ports(n):
    """n distinct free ports on 127.0.0.1, below the ephemeral range where
    it can be read: a DataNode started beside its NameNode connects to the
    NameNode's port before it listens, and a source port from that range
    can be the same port (a TCP self-connection), which then holds it."""
    socks = []
    low = ephemeral_low()
    rng = random.Random()
    try:
        tries = 0
        while len(socks) < n:
            s = socket.socket()
            port = rng.randrange(10000, low) if low > 11000 and tries < 1000 \
                else 0
            tries += 1
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


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
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                raise HarnessError("setns %s: %s" % (
                    path, os.strerror(ctypes.get_errno())))
        finally:
            os.close(fd)

    def leave(self):
        if self.own_ns is not None:
            if _libc.setns(self.own_ns, CLONE_NEWNET) != 0:
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


def parse_rate(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)bit", text.lower())
    if not m:
        raise argparse.ArgumentTypeError("bad rate: %r (e.g. 1gbit)" % text)
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6,
                                "g": 1e9}[m.group(2)]


# --------------------------------------------------------------------------
# HTTP (JMX and WebHDFS) on loopback, no proxies, redirects by hand.
# --------------------------------------------------------------------------

class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_http = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                    _NoRedirect())


def http(method, url, timeout=30):
    req = urllib.request.Request(url, method=method)
    return _http.open(req, timeout=timeout)


def http_json(method, url, timeout=30):
    with http(method, url, timeout) as r:
        return json.loads(r.read().decode())


def jmx(addr, query):
    """The beans matching `query` on a daemon's http address ([] if none):
    `addr` is a port on 127.0.0.1 or "host:port"."""
    if isinstance(addr, int):
        addr = "127.0.0.1:%d" % addr
    url = "http://%s/jmx?qry=%s" % (addr, urllib.parse.quote(
        query, safe=":=,*"))
    return http_json("GET", url, timeout=10).get("beans", [])


def numeric_attrs(bean):
    """Numeric attributes of a bean; a map attribute (JMX TabularData, which
    the /jmx servlet renders as [{"key": k, "value": v}, ...]) becomes one
    entry per key, named attribute.key (the packet phase timers)."""
    out = {}
    for k, v in bean.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = v
        elif isinstance(v, list):
            for item in v:
                if (isinstance(item, dict) and "key" in item
                        and isinstance(item.get("value"), (int, float))):
                    out["%s.%s" % (k, item["key"])] = item["value"]
    return out


# --------------------------------------------------------------------------
# A cluster: 1 NameNode + 4 DataNodes, each its own JVM.
# --------------------------------------------------------------------------

LOG4J = """log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p %c{2}: %m%n
"""

# JMX values of metrics2 sources are cached for one metrics period (10 s by
# default); one second keeps per-put counter deltas readable. No sinks.
METRICS2 = "*.period=1\n"

RDMA_BEAN = "Hadoop:service=DataNode,name=HdfsRdma"
ACTIVITY_BEAN = "Hadoop:service=DataNode,name=DataNodeActivity-*"


def xml_conf(props):
    lines = ['<?xml version="1.0"?>', "<configuration>"]
    for k, v in props:
        lines.append("  <property><name>%s</name><value>%s</value></property>"
                     % (k, v))
    lines.append("</configuration>")
    return "\n".join(lines) + "\n"


def hadoop_user():
    """The user HDFS sees for our puts under simple authentication (the
    FsShell JVMs' login user), which WebHDFS calls must name too."""
    return os.environ.get("HADOOP_USER_NAME") or os.environ.get("USER") or \
        __import__("pwd").getpwuid(os.getuid()).pw_name


class Hdfs:
    """What the benchmark needs of a running HDFS, whoever started it:
    WebHDFS on the NameNode (status, read-back, delete), the DataNodes'
    /jmx counters, and the CPU of daemons on this host. Subclasses set
    nn_http (host:port), dn_http (the DataNodes' http addresses), nn_pid
    and dn_pid_list (local pids, None where a daemon cannot be measured)
    and bench_dir (where the puts go)."""

    loopback_redirects = False   # WebHDFS OPEN: go to 127.0.0.1, not the host

    def redirect_host(self, port):
        """Where a WebHDFS redirect to a DataNode's http `port` goes."""
        return "127.0.0.1"

    def __init__(self, name, ucx):
        self.name = name
        self.ucx = ucx              # the DataNodes serve the UCX path
        self.user = hadoop_user()
        self.nn_http = None
        self.dn_http = []
        self.nn_pid = None
        self.dn_pid_list = []
        self.bench_dir = "/bench"
        self.block_size = 128 * MiB
        # Seconds after a put until the DataNodeActivity counters (metrics2,
        # cached for one metrics period) show it; None: not known, so no
        # per-put BytesWritten (the HdfsRdma bean is live either way).
        self.metrics_lag = None

    # -- measurements ------------------------------------------------------

    @property
    def dn_pids(self):
        """The DataNodes' local pids, or None when any one of them cannot be
        measured from here (then DataNode CPU and switches are n/a)."""
        if not self.dn_pid_list or any(p is None for p in self.dn_pid_list):
            return None
        return list(self.dn_pid_list)

    def dn_cpu(self):
        pids = self.dn_pids
        if pids is None:
            return None
        return sum(cpu_seconds(p) for p in pids)

    def nn_cpu(self):
        return None if self.nn_pid is None else cpu_seconds(self.nn_pid)

    def dn_counters(self):
        """Numeric attributes summed over the DataNodes: the DataNode's own
        activity metrics (prefix activity.) and, where present, the
        hdfs-rdma bean (prefix rdma.). Missing beans are simply absent."""
        total = {}
        for addr in self.dn_http:
            for query, prefix in ((ACTIVITY_BEAN, "activity."),
                                  (RDMA_BEAN, "rdma.")):
                try:
                    beans = jmx(addr, query)
                except (OSError, ValueError):
                    beans = []
                for bean in beans:
                    for k, v in numeric_attrs(bean).items():
                        total[prefix + k] = total.get(prefix + k, 0) + v
        return total

    def rdma_bean_count(self):
        """How many DataNodes serve the HdfsRdma bean."""
        n = 0
        for addr in self.dn_http:
            try:
                n += bool(jmx(addr, RDMA_BEAN))
            except (OSError, ValueError):
                pass
        return n

    # -- WebHDFS -----------------------------------------------------------

    def webhdfs(self, path, op, **params):
        params.update(op=op, **{"user.name": self.user})
        return "http://%s/webhdfs/v1%s?%s" % (
            self.nn_http, urllib.parse.quote(path),
            urllib.parse.urlencode(params))

    def mkdirs(self, path):
        if not http_json("PUT", self.webhdfs(path, "MKDIRS")).get("boolean"):
            raise HarnessError("%s: WebHDFS MKDIRS %s failed" % (self.name,
                                                                 path))

    def delete(self, path, recursive=True):
        return http_json("DELETE", self.webhdfs(
            path, "DELETE", recursive="true" if recursive else "false")).get(
                "boolean")

    def status(self, path):
        return http_json("GET", self.webhdfs(path, "GETFILESTATUS"))[
            "FileStatus"]

    def exists(self, path):
        try:
            self.status(path)
            return True
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise

    def sha256(self, path):
        """Reads the file back through WebHDFS (the NameNode redirects to a
        DataNode) and hashes it."""
        try:
            http("GET", self.webhdfs(path, "OPEN"))
            raise HarnessError("WebHDFS OPEN did not redirect")
        except urllib.error.HTTPError as e:
            if e.code not in (302, 307):
                raise
            loc = urllib.parse.urlsplit(e.headers["Location"])
        if self.loopback_redirects:
            loc = loc._replace(netloc="%s:%d" % (self.redirect_host(loc.port),
                                                 loc.port))
        h = hashlib.sha256()
        n = 0
        with http("GET", loc.geturl(), timeout=120) as r:
            while True:
                chunk = r.read(4 * MiB)
                if not chunk:
                    break
                h.update(chunk)
                n += len(chunk)
        return h.hexdigest(), n

    def namesystem(self):
        """The NameNode's FSNamesystemState bean: a plain MBean, so live
        (the FSNamesystem bean of metrics2 is cached for a metrics period,
        10 s on a default cluster)."""
        beans = jmx(self.nn_http,
                    "Hadoop:service=NameNode,name=FSNamesystemState")
        return beans[0] if beans else {}

    def wait_clean(self, timeout=30.0):
        """Before a put: waits until the NameNode has sent every pending
        block deletion to the DataNodes (subclasses that see the DataNodes'
        disks wait for the replicas to be gone)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                pending = self.namesystem().get("PendingDeletionBlocks", 0)
            except (OSError, ValueError):
                return
            if not pending:
                return
            if time.monotonic() > deadline:
                warn("%s: %d block deletions still pending %.0f s after "
                     "delete" % (self.name, pending, timeout))
                return
            time.sleep(0.1)


class Cluster(Hdfs):
    """An embedded cluster: 1 NameNode + 4 DataNodes, each its own JVM on
    127.0.0.1 with ports picked here, started and stopped by the harness."""

    loopback_redirects = True

    def __init__(self, name, root, java, classpath, ucx, procs, agent=None,
                 hosts=None):
        super().__init__(name, ucx)
        self.hosts = hosts              # EmulatedHosts, or all on 127.0.0.1
        self.nn_addr = hosts.addr["nn"] if hosts else "127.0.0.1"
        self.dn_addrs = [hosts.addr["dn%d" % (i + 1)] if hosts
                         else "127.0.0.1" for i in range(DATANODES)]
        self.agent = agent              # the drop-in jar, as -javaagent:
        self.root = root
        self.java = java
        self.procs = procs
        self.conf = os.path.join(root, "conf")
        self.classpath = "%s:%s" % (self.conf, classpath)
        ports = free_ports(2 + 3 * DATANODES)
        self.nn_rpc, self.nn_http_port = ports[:2]
        self.nn_http = "%s:%d" % (self.nn_addr, self.nn_http_port)
        self.dn_ports = [tuple(ports[2 + 3 * i:5 + 3 * i])
                         for i in range(DATANODES)]  # (data, http, ipc)
        self.dn_http = ["%s:%d" % (a, p[1])
                        for a, p in zip(self.dn_addrs, self.dn_ports)]
        self.data_dirs = [os.path.join(root, "data%d" % (i + 1))
                          for i in range(DATANODES)]
        self.nn = None
        self.dns = []
        self.metrics_lag = 1.2      # METRICS2: a period of 1 s

    def dn_stats_file(self, i):
        return os.path.join(self.root, "ucx-totals-dn%d.txt" % (i + 1))

    def redirect_host(self, port):
        for a, p in zip(self.dn_addrs, self.dn_ports):
            if p[1] == port:
                return a
        return "127.0.0.1"

    def write_conf(self):
        os.makedirs(self.conf)
        core = [("fs.defaultFS", "hdfs://%s:%d" % (self.nn_addr,
                                                   self.nn_rpc)),
                ("hadoop.tmp.dir", os.path.join(self.root, "tmp"))]
        hdfs = [("dfs.replication", "3"),
                ("dfs.namenode.name.dir", os.path.join(self.root, "name")),
                ("dfs.namenode.http-address", self.nn_http),
                ("dfs.namenode.datanode.registration.ip-hostname-check",
                 "false"),
                ("dfs.namenode.safemode.extension", "0")]
        if self.ucx:
            hdfs += [("dfs.datanode.plugins",
                      "org.hdfsrdma.hadoop.UcxDataNodePlugin"),
                     ("dfs.datanode.rdma.enabled", "true"),
                     ("dfs.client.rdma.enabled", "true"),
                     # The per-packet breakdown (a few clock reads a packet).
                     ("dfs.datanode.rdma.packet-timers.enabled", "true"),
                     ("dfs.client.rdma.packet-timers.enabled", "true")]
            if self.hosts:
                # The DataNodes also serve clients that force UCX over
                # tcp (--ucx-tcp); clients keep the default (no tcp).
                hdfs += [("dfs.datanode.rdma.allow-emulated-gets", "true")]
        for fname, text in (("core-site.xml", xml_conf(core)),
                            ("hdfs-site.xml", xml_conf(hdfs)),
                            ("log4j.properties", LOG4J),
                            ("hadoop-metrics2.properties", METRICS2)):
            with open(os.path.join(self.conf, fname), "w") as f:
                f.write(text)

    def jvm(self, *args, heap="1g", props=(), host=None):
        # Hadoop 2.9's web server (WebHDFS, used here to verify and delete
        # files) needs java.lang opened on Java 17; the same on both clusters.
        opens = ["--add-opens", "java.base/java.lang=ALL-UNNAMED"]
        agent = ["-javaagent:" + self.agent] if self.agent else []
        prefix = self.hosts.prefix(host) if self.hosts and host else []
        return prefix + [self.java, "-Xmx" + heap,
                         "-Djava.net.preferIPv4Stack=true"] \
            + agent + opens + list(props) + ["-cp", self.classpath] \
            + list(args)

    def format(self):
        return self.procs.spawn(
            self.jvm("org.apache.hadoop.hdfs.server.namenode.NameNode",
                     "-format", "-force", "-nonInteractive"),
            os.path.join(self.root, "format.log"), name=self.name + "-format")

    def start(self):
        self.nn = self.procs.spawn(
            self.jvm("org.apache.hadoop.hdfs.server.namenode.NameNode",
                     host="nn"),
            os.path.join(self.root, "nn.log"), name=self.name + "-nn")
        for i in range(DATANODES):
            data, http_port, ipc = self.dn_ports[i]
            props = ["-Dhdfsrdma.stats.file=" + self.dn_stats_file(i)] \
                if self.ucx else []
            # With --hosts, UCX DataNodes may also use tcp (for the clients
            # of --ucx-tcp; the default client still has none).
            tcp = ["-D", "dfs.rdma.ucx.tls=", "-D",
                   "dfs.rdma.ucx.allow-tcp=true"] \
                if self.ucx and self.hosts else []
            a = self.dn_addrs[i]
            self.dns.append(self.procs.spawn(
                self.jvm("org.apache.hadoop.hdfs.server.datanode.DataNode",
                         *tcp,
                         "-D", "dfs.datanode.data.dir=" + self.data_dirs[i],
                         "-D", "dfs.datanode.address=%s:%d" % (a, data),
                         "-D", "dfs.datanode.http.address=%s:%d"
                         % (a, http_port),
                         "-D", "dfs.datanode.ipc.address=%s:%d" % (a, ipc),
                         props=props, host="dn%d" % (i + 1)),
                os.path.join(self.root, "dn%d.log" % (i + 1)),
                name="%s-dn%d" % (self.name, i + 1)))
        self.nn_pid = self.nn.pid
        self.dn_pid_list = [p.pid for p in self.dns]

    @property
    def pids(self):
        return [p.pid for p in [self.nn] + self.dns if p is not None]

    def ready(self):
        """True once 4 DataNodes are live, safe mode is off and every
        DataNode answers on its http port; raises if a JVM died."""
        for p in [self.nn] + self.dns:
            if not self.procs.alive(p):
                raise HarnessError("%s: a JVM exited during start-up (rc %s);"
                                   " see %s/*.log" % (self.name, p.returncode,
                                                      self.root))
        try:
            state = jmx(self.nn_http,
                        "Hadoop:service=NameNode,name=FSNamesystemState")
            info = jmx(self.nn_http,
                       "Hadoop:service=NameNode,name=NameNodeInfo")
            if not state or not info:
                return False
            if state[0].get("NumLiveDataNodes") != DATANODES:
                return False
            if info[0].get("Safemode"):
                return False
            for addr in self.dn_http:
                jmx(addr, "java.lang:type=Runtime")
            return True
        except (OSError, ValueError):
            return False

    def check_ucx_started(self):
        """The UCX DataNodes log that they serve the UCX path."""
        missing = []
        for i in range(DATANODES):
            with open(os.path.join(self.root, "dn%d.log" % (i + 1)),
                      errors="replace") as f:
                if "serves the UCX data path" not in f.read():
                    missing.append(i + 1)
        return missing

    def block_files(self):
        n = 0
        for d in self.data_dirs:
            for _, _, files in os.walk(d):
                n += sum(1 for f in files if f.startswith("blk_"))
        return n

    def wait_clean(self, timeout=30.0):
        """Waits until deleted files' block replicas are gone from the
        DataNodes' storage (the NameNode invalidates them at heartbeats)."""
        deadline = time.monotonic() + timeout
        while self.block_files():
            if time.monotonic() > deadline:
                warn("%s: block files still on disk %.0f s after delete"
                     % (self.name, timeout))
                return
            time.sleep(0.1)

    def ucx_totals(self):
        """Sums the UCX DataNodes' exit totals (written at JVM exit)."""
        total = {}
        for i in range(DATANODES):
            path = self.dn_stats_file(i)
            if not os.path.exists(path):
                continue
            with open(path) as f:
                for line in f:
                    for k, v in parse_stats(line).items():
                        if isinstance(v, int):
                            total[k] = total.get(k, 0) + v
        return total


def read_hadoop_conf(conf_dir):
    """The properties of core-site.xml and hdfs-site.xml in `conf_dir`
    (hdfs-site.xml wins), with ${name} references to other properties
    expanded as Hadoop's Configuration does for the simple cases."""
    import xml.etree.ElementTree as ET
    props = {}
    for fname in ("core-site.xml", "hdfs-site.xml"):
        path = os.path.join(conf_dir, fname)
        if not os.path.exists(path):
            continue
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            raise HarnessError("%s: %s" % (path, e))
        for prop in root.iter("property"):
            name, value = prop.findtext("name"), prop.findtext("value")
            if name:
                props[name.strip()] = (value or "").strip()

    def expand(value, depth=0):
        if depth > 20:
            return value
        return re.sub(r"\$\{([^}]+)\}", lambda m: expand(props.get(
            m.group(1), os.environ.get(m.group(1), m.group(0))), depth + 1),
            value)
    return {k: expand(v) for k, v in props.items()}


def parse_hadoop_size(text, default):
    """dfs.blocksize and the like: bytes, or a number with k/m/g/t."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)\s*", text or "", re.I)
    if not m:
        return default
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30,
                               "t": 40}[m.group(2).lower()]


def local_daemon_pid(addr, main_class):
    """The pid of the JVM serving http at `addr` when it runs on this host
    (then its CPU and context switches can be read from /proc), else None.
    Its Runtime bean names it "pid@hostname"; the pid counts only if the
    host name is ours, /proc/PID is a JVM of `main_class`, and it started
    when the bean says it did (a pid of another host or namespace fails one
    of these)."""
    try:
        beans = jmx(addr, "java.lang:type=Runtime")
    except (OSError, ValueError):
        return None
    if not beans:
        return None
    pid_text, _, host = str(beans[0].get("Name", "")).partition("@")
    if not pid_text.isdigit() or host != socket.gethostname():
        return None
    pid = int(pid_text)
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if main_class.encode() not in f.read():
                return None
        with open("/proc/%d/stat" % pid) as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as f:
            btime = int(re.search(r"^btime (\d+)", f.read(), re.M).group(1))
    except (OSError, AttributeError, ValueError, IndexError):
        return None
    started = btime + ticks / os.sysconf("SC_CLK_TCK")
    bean_start = beans[0].get("StartTime")
    if not isinstance(bean_start, (int, float)) or \
            abs(started - bean_start / 1000.0) > 5:
        return None
    return pid


class ExistingCluster(Hdfs):
    """A cluster someone else runs (--conf DIR): never started, stopped or
    reconfigured here. The NameNode's http address comes from DIR (or
    --namenode-http), the DataNodes' from the NameNode's NameNodeInfo bean
    (LiveNodes, infoAddr). Daemons on this host are measured like the
    embedded ones (CPU, context switches); on other hosts they are n/a.
    Every put goes under one test directory that must not exist before:
    connect() creates it (and any missing parents), cleanup() deletes
    exactly what connect() created."""

    def __init__(self, conf_dir, bench_dir, nn_http=None, local_cpu=True):
        super().__init__("cluster", True)
        self.conf_dir = conf_dir
        self.conf = read_hadoop_conf(conf_dir)
        self.bench_dir = bench_dir.rstrip("/") or "/"
        self.nn_http_override = nn_http
        self.local_cpu = local_cpu
        self.created = None         # the topmost directory we created
        self.written_at_start = None
        self.description = None     # describe() at connect time
        self.live = {}              # LiveNodes of NameNodeInfo
        self.block_size = parse_hadoop_size(self.conf.get("dfs.blocksize"),
                                            128 * MiB)

    def default_fs(self):
        fs = self.conf.get("fs.defaultFS") or self.conf.get("fs.default.name")
        if not fs:
            raise HarnessError("%s names no fs.defaultFS (core-site.xml)"
                               % self.conf_dir)
        u = urllib.parse.urlsplit(fs)
        if u.scheme != "hdfs" or not u.hostname:
            raise HarnessError("fs.defaultFS is %s: not an HDFS NameNode"
                               % fs)
        return u

    def namenode_candidates(self):
        """http addresses of the NameNode(s) fs.defaultFS names: one, or
        each NameNode of an HA nameservice."""
        fs = self.default_fs()
        services = [s.strip() for s in self.conf.get(
            "dfs.nameservices", "").split(",") if s.strip()]
        if fs.hostname in services:
            ns = fs.hostname
            ids = [i.strip() for i in self.conf.get(
                "dfs.ha.namenodes." + ns, "").split(",") if i.strip()]
            addrs = [self.conf.get("dfs.namenode.http-address.%s.%s"
                                   % (ns, i)) for i in ids]
            addrs = [a for a in addrs if a]
            if not addrs:
                raise HarnessError(
                    "nameservice %s: no dfs.namenode.http-address.%s.* in %s;"
                    " give --namenode-http HOST:PORT" % (ns, ns,
                                                         self.conf_dir))
            return addrs
        addr = self.conf.get("dfs.namenode.http-address.%s" % fs.hostname) \
            or self.conf.get("dfs.namenode.http-address", "0.0.0.0:50070")
        host, _, port = addr.rpartition(":")
        if host in ("0.0.0.0", "", "::"):
            addr = "%s:%s" % (fs.hostname, port)
        return [addr]

    def find_namenode(self):
        cands = [self.nn_http_override] if self.nn_http_override else \
            self.namenode_candidates()
        errors = []
        for addr in cands:
            try:
                status = jmx(addr,
                             "Hadoop:service=NameNode,name=NameNodeStatus")
            except (OSError, ValueError) as e:
                errors.append("%s: %s" % (addr, e))
                continue
            state = status[0].get("State") if status else None
            if state in (None, "active"):
                return addr
            errors.append("%s: %s" % (addr, state))
        raise HarnessError("no active NameNode answers on http (%s); give "
                           "--namenode-http HOST:PORT" % "; ".join(errors))

    def connect(self):
        """Finds the NameNode and the live DataNodes, which daemons can be
        measured from here, and creates the test directory."""
        self.nn_http = self.find_namenode()
        info = jmx(self.nn_http, "Hadoop:service=NameNode,name=NameNodeInfo")
        if not info:
            raise HarnessError("the NameNode at %s has no NameNodeInfo bean"
                               % self.nn_http)
        if info[0].get("Safemode"):
            raise HarnessError("the NameNode at %s is in safe mode: %s" % (
                self.nn_http, info[0]["Safemode"]))
        self.live = json.loads(info[0].get("LiveNodes") or "{}")
        if not self.live:
            raise HarnessError("the NameNode at %s reports no live DataNode"
                               % self.nn_http)
        self.dn_http = sorted(v["infoAddr"] for v in self.live.values()
                              if v.get("infoAddr"))
        if self.local_cpu:
            self.nn_pid = local_daemon_pid(
                self.nn_http, "org.apache.hadoop.hdfs.server.namenode."
                "NameNode")
            self.dn_pid_list = [local_daemon_pid(
                a, "org.apache.hadoop.hdfs.server.datanode.DataNode")
                for a in self.dn_http]
        else:
            self.dn_pid_list = [None] * len(self.dn_http)
        self.version = info[0].get("SoftwareVersion") or info[0].get(
            "Version", "n/a")
        self.create_bench_dir()
        self.written_at_start = self.bytes_written()
        self.description = self.describe()

    def create_bench_dir(self):
        if not self.bench_dir.startswith("/") or self.bench_dir == "/":
            raise HarnessError("--hdfs-dir must be an absolute path below /")
        if self.exists(self.bench_dir):
            raise HarnessError(
                "%s already exists in HDFS: the harness writes only into a "
                "directory it creates (choose another --hdfs-dir)"
                % self.bench_dir)
        parts = self.bench_dir.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            path = "/" + "/".join(parts[:i])
            if not self.exists(path):
                self.created = path
                break
        self.mkdirs(self.bench_dir)

    def bytes_written(self):
        return self.dn_counters().get("activity.BytesWritten")

    def cleanup(self):
        """Deletes the test directory and the parents connect() created
        (those only if empty: someone else may have written there since)."""
        if self.created is None:
            return
        try:
            self.delete(self.bench_dir, recursive=True)
            path = self.bench_dir
            while path != self.created:
                path = path.rsplit("/", 1)[0]
                self.delete(path, recursive=False)
        except (OSError, ValueError) as e:
            warn("could not delete %s (or its parents up to %s): %s" % (
                self.bench_dir, self.created, e))
            return
        if self.exists(self.created):
            warn("%s is left in HDFS (not empty?)" % self.created)
        else:
            self.created = None

    def describe(self):
        local = sum(p is not None for p in self.dn_pid_list)
        return ("NameNode http %s (Hadoop %s), %d live DataNode(s), %d of "
                "them measured from this host (CPU, context switches), %d "
                "with the %s bean; test directory %s" % (
                    self.nn_http, self.version, len(self.dn_http), local,
                    self.rdma_bean_count(), RDMA_BEAN, self.bench_dir))


class Client:
    """How one system's put JVMs start: java, the configuration directory
    and a class path, the drop-in jar as -javaagent: or not, and the UCX
    switch (dfs.client.rdma.enabled as a generic option of FsShell, which
    wins over the site files) or none for stock."""

    def __init__(self, system, java, conf_dir, classpath, agent=None,
                 rdma=None, opts=(), prefix=(), generic=()):
        self.system = system
        self.java = java
        self.classpath = "%s:%s" % (conf_dir, classpath)
        self.agent = agent
        self.rdma = rdma
        self.opts = list(opts)      # --client-opts, for every system alike
        self.prefix = list(prefix)  # --hosts: the client host's IPC namespace
        self.generic = list(generic)  # more -D options of FsShell

    def put_argv(self, rep, path, target, props=()):
        agent = ["-javaagent:" + self.agent] if self.agent else []
        switch = [] if self.rdma is None else [
            "-D", "dfs.client.rdma.enabled=%s" % str(self.rdma).lower()]
        # -Xmx1000m: the heap the hdfs script gives.
        return self.prefix + [self.java, "-Xmx1000m",
                              "-Djava.net.preferIPv4Stack=true"] \
            + agent + self.opts + list(props) + ["-cp", self.classpath,
                                     "org.apache.hadoop.fs.FsShell"] \
            + switch + self.generic + ["-D", "dfs.replication=%d" % rep,
                                       "-put", path, target]


def packets_of(size, block=128 * MiB):
    """Data packets a client sends for a file of `size` bytes: packets of
    126 chunks of 512 bytes (what fits a 64 KiB packet with its CRC32C
    sums), the last of each 128 MiB block short."""
    full, rest = divmod(size, block)
    return full * math.ceil(block / PACKET_DATA) + math.ceil(
        rest / PACKET_DATA)


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
    if "rdma.DataBytesFetched" in counters:
        return "rdma.DataBytesFetched"
    for k in sorted(counters):
        if k.startswith("rdma.") and re.search(r"bytes.*fetch", k, re.I):
            return k
    return None


# --------------------------------------------------------------------------
# The benchmark.
# --------------------------------------------------------------------------

def maven_classpath(work):
    """(stock class path, drop-in jar): Hadoop 2.9.2's jars and their
    dependencies as Maven resolves them for hadoop-hdfs-rdma (as
    dev-support/put.sh), with nothing of hdfs-rdma on it (the bridge and
    JUCX come with the drop-in jar), and the built drop-in jar."""
    os.makedirs(work, exist_ok=True)
    cp_file = os.path.join(work, "hadoop.classpath")
    subprocess.run(
        ["mvn", "-B", "-q", "-ntp", "-pl", "hadoop-hdfs-rdma",
         "dependency:build-classpath", "-Dmdep.outputFile=" + cp_file,
         "-Dmdep.includeScope=provided"], cwd=REPO, check=True,
        stdout=subprocess.DEVNULL)
    with open(cp_file) as f:
        jars = f.read().strip().split(":")
    stock = [j for j in jars if not re.search(
        r"/(jucx-[^/]*|jucx-bridge-[^/]*|hadoop-hdfs-rdma-[^/]*)\.jar$", j)]
    return ":".join(stock), built_dropin()


def built_dropin():
    """hadoop-hdfs-rdma/target/hadoop-hdfs-rdma-*-dropin.jar, or None."""
    target = os.path.join(REPO, "hadoop-hdfs-rdma", "target")
    if not os.path.isdir(target):
        return None
    jars = sorted(f for f in os.listdir(target)
                  if re.fullmatch(r"hadoop-hdfs-rdma-.*-dropin\.jar", f))
    return os.path.join(target, jars[0]) if jars else None


def blocks_of(size, block=128 * MiB):
    return max(1, math.ceil(size / block))


class Bench:
    def __init__(self, args):
        self.args = args
        self.procs = Procs()
        self.out = args.out
        self.work = args.work
        self.failures = []
        self.warnings = []
        self.ucx_expected_bytes = 0     # size x rep over all UCX puts
        self.jar_expected_blocks = 0    # replicas of jar puts (TCP blocks)
        self.bytes_expected = 0         # size x rep over all puts
        self.put_rows = []
        self.limit_rows = []
        self.scale_rows = []
        self.inputs = {}                # (size, index) -> (path, sha256)
        self.rdma_bean_seen = False
        self.clusters = {}              # the embedded clusters, by name
        self.existing = None            # --conf: the ExistingCluster
        self.systems = []               # the systems measured, in order
        self.cluster_of = {}            # system -> Hdfs it writes to
        self.clients = {}               # system -> Client
        self.skipped = {}               # system -> why it is not measured
        self.java = args.java or shutil.which("java")
        self.hosts = EmulatedHosts(args.hosts, args.client_link) \
            if args.hosts else None
        # Between emulated hosts without RDMA the UCX client's policy is
        # Hadoop's TCP pipeline: its puts must move nothing over UCX.
        self.ucx_policy_over_tcp = bool(args.hosts and not args.ucx_tcp)
        self.idle_cpu = {}
        self.interrupted = False
        self.ucx_totals = {}
        self.seq = 0
        # --compare-distributions: one more UCX system per mode, writing to
        # the ucx cluster, so that modes alternate within one run.
        self.compared = [COMPARED + m
                         for m in args.compare_distributions or ()]
        self.labels = dict(LABELS)
        self.long_labels = dict(LONG_LABELS)
        if args.distribution or self.compared:
            self.long_labels["ucx"] += ", distribution " + \
                args.ucx_distribution
        for s in self.compared:
            mode = s[len(COMPARED):]
            self.labels[s] = "UCX " + mode
            self.long_labels[s] = "hdfs-rdma (UCX get), distribution " + mode

    @property
    def all_systems(self):
        """Every system a summary has columns for, in alternation order."""
        return list(SYSTEMS) + self.compared

    def fail(self, msg):
        """A harness failure: recorded, the run carries on where it can."""
        warn(msg)
        self.failures.append(msg)

    def note(self, msg):
        warn(msg)
        self.warnings.append(msg)

    def ucx_problem(self, msg):
        """The UCX path did not carry the data a put should have sent over
        it, or carried data it should not have: a harness failure in --tiny
        and the --conf self-test (CI proves the path is used, and used only
        when switched on), a warning in measurement runs."""
        if self.args.profile == "tiny" or self.args.conf_self_test:
            self.fail(msg)
        else:
            self.note(msg)

    # -- set-up ------------------------------------------------------------

    def make_input(self, size, index=0):
        key = (size, index)
        if key in self.inputs:
            return self.inputs[key]
        d = os.path.join(self.work, "inputs")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "in-%s-%d.bin" % (human(size), index))
        sha_path = path + ".sha256"
        if os.path.exists(path) and os.path.exists(sha_path) and \
                os.path.getsize(path) == size:
            with open(sha_path) as f:
                digest = f.read().strip()
        else:
            h = hashlib.sha256()
            left = size
            with open(path, "wb") as f:
                while left:
                    chunk = os.urandom(min(left, 8 * MiB))
                    h.update(chunk)
                    f.write(chunk)
                    left -= len(chunk)
            digest = h.hexdigest()
            with open(sha_path, "w") as f:
                f.write(digest + "\n")
        self.inputs[key] = (path, digest)
        return path, digest

    def start_clusters(self):
        """Two embedded clusters: stock and UCX. The jar system shares the
        UCX cluster instead of getting a third one:

        - it is what the jar system stands for: a client with the jar and
          UCX off writing to a cluster that has the jar installed, as any
          non-UCX client does (its DataNodes then receive over Hadoop's TCP
          path); --conf measures exactly that on an operator's cluster, so
          the embedded and --conf numbers mean the same;
        - a third cluster would cost five more JVMs (5 GiB of heap, idle
          CPU during every other put) and another start-up;
        - the state stays the same for every put: each put's file is deleted
          and the next put on a cluster waits until its replicas are gone
          from the DataNodes' disks, so a jar put and the ucx put after it
          both find the UCX cluster empty, as the stock put finds the stock
          cluster. What sharing leaves: the UCX cluster's DataNodes serve
          twice as many puts (both paths warmed by their own warm-up put
          first) and the jar's DataNode CPU includes the UCX DataNodes' idle
          UCX threads (the idle CPU of each cluster is reported)."""
        cp, self.dropin = maven_classpath(self.work)
        if not self.dropin:
            raise HarnessError("no drop-in jar: build first (mvn -DskipTests "
                               "install, or dev-support/setup.sh)")
        root = os.path.join(self.work, "clusters")
        shutil.rmtree(root, ignore_errors=True)
        hosts = self.hosts
        for name in ("stock", "ucx"):
            os.makedirs(os.path.join(root, name))
            ucx = name == "ucx"
            c = Cluster(name, os.path.join(root, name), self.java, cp, ucx,
                        self.procs, agent=self.dropin if ucx else None,
                        hosts=hosts)
            c.write_conf()
            self.clusters[name] = c
        stock, ucx = self.clusters["stock"], self.clusters["ucx"]
        self.systems = list(SYSTEMS) + self.compared
        self.cluster_of = dict(stock=stock, jar=ucx, ucx=ucx)
        self.cluster_of.update((s, ucx) for s in self.compared)
        prefix = hosts.prefix("client") if hosts else []
        # --ucx-tcp: the UCX client may use UCX's tcp transport, and is
        # made to fan out there (the policy would keep such pipelines on
        # TCP), so every pipeline goes by gets UCX emulates.
        tcp = ["-D", "dfs.rdma.ucx.tls=tcp", "-D",
               "dfs.rdma.ucx.allow-tcp=true"] if self.args.ucx_tcp else []
        forced = tcp + (["-D", "dfs.client.rdma.distribution=fan-out"]
                        if self.args.ucx_tcp else [])
        # --distribution: the shape every UCX pipeline is forced to (with
        # --ucx-tcp, instead of fan-out: a chain's gets over tcp are then
        # served by the DataNodes' CPUs).
        if self.args.distribution:
            forced += ["-D", "dfs.client.rdma.distribution="
                       + self.args.distribution]
        self.clients = dict(
            stock=Client("stock", self.java, stock.conf, cp, prefix=prefix),
            jar=Client("jar", self.java, ucx.conf, cp, self.dropin, False,
                       prefix=prefix),
            ucx=Client("ucx", self.java, ucx.conf, cp, self.dropin, True,
                       prefix=prefix, generic=forced))
        for s in self.compared:
            self.clients[s] = Client(
                s, self.java, ucx.conf, cp, self.dropin, True, prefix=prefix,
                generic=tcp + ["-D", "dfs.client.rdma.distribution="
                               + s[len(COMPARED):]])
        fmt = [c.format() for c in self.clusters.values()]
        done = self.procs.wait_all(fmt, 120)
        for c, p in zip(self.clusters.values(), fmt):
            if done[p.pid][1] != 0:
                raise HarnessError("%s: NameNode -format failed; see %s"
                                   % (c.name, c.root + "/format.log"))
        for c in self.clusters.values():
            c.start()
        log("starting 2 clusters (1 NameNode + %d DataNodes each) under %s;"
            " the jar system writes to the ucx cluster" % (DATANODES, root))
        t0 = time.monotonic()
        pending = set(self.clusters)
        while pending:
            for name in sorted(pending):
                if self.clusters[name].ready():
                    pending.discard(name)
                    log("%s cluster up after %.1f s (NameNode rpc %d http %d)"
                        % (name, time.monotonic() - t0,
                           self.clusters[name].nn_rpc,
                           self.clusters[name].nn_http_port))
            if pending and time.monotonic() - t0 > self.args.start_timeout:
                raise HarnessError("cluster(s) %s did not come up in %d s; "
                                   "see %s/*/*.log" % (
                                       ", ".join(sorted(pending)),
                                       self.args.start_timeout, root))
            if pending:
                time.sleep(0.5)
        missing = ucx.check_ucx_started()
        if missing:
            self.fail("UCX DataNode(s) %s did not log 'serves the UCX data "
                      "path'" % missing)
        for c in self.clusters.values():
            c.mkdirs(c.bench_dir)
        self.measure_idle()
        self.rdma_bean_seen = ucx.rdma_bean_count() > 0
        if not self.rdma_bean_seen:
            self.note("no %s bean on the UCX DataNodes: per-put DataNode UCX"
                      " counters are n/a (the exit totals still count)"
                      % RDMA_BEAN)

    def measure_idle(self):
        """What the idle clusters cost the machine (a DataNode that spins
        while idle would slow the other cluster's puts too), where their
        CPU can be read."""
        cs = {c.name: c for c in self.cluster_of.values()}
        before = {n: (c.dn_cpu(), c.nn_cpu()) for n, c in cs.items()}
        time.sleep(3.0)
        for n, c in cs.items():
            dn, nn = c.dn_cpu(), c.nn_cpu()
            if dn is None or nn is None:
                self.idle_cpu[n] = None
            else:
                self.idle_cpu[n] = (dn + nn - sum(before[n])) / 3.0
        log("idle cluster CPU (cores busy): " + ", ".join(
            "%s %s" % (n, fmt(v, 3)) for n, v in sorted(
                self.idle_cpu.items())))

    def connect_existing(self):
        """--conf: the cluster of DIR, the systems its clients can be. The
        jar and ucx clients are the operator's Hadoop class path with the
        drop-in jar as agent, dfs.client.rdma.enabled false and true; stock
        needs a class path without the jar (--stock-classpath): the agent
        is what makes a client non-stock, so `hadoop classpath` qualifies
        where the jar is installed only as an agent."""
        a = self.args
        self.dropin = a.dropin or built_dropin()
        if not self.dropin or not os.path.exists(self.dropin):
            raise HarnessError("no drop-in jar: build first or give --dropin "
                               "JAR")
        hadoop_cp = a.hadoop_classpath
        if hadoop_cp is None:
            if not shutil.which("hadoop"):
                raise HarnessError("no `hadoop` on PATH: give "
                                   "--hadoop-classpath CP (the class path "
                                   "of the cluster's Hadoop 2.9 client)")
            hadoop_cp = subprocess.run(["hadoop", "classpath"], check=True,
                                       capture_output=True,
                                       text=True).stdout.strip()
        c = ExistingCluster(a.conf, a.hdfs_dir, a.namenode_http,
                            local_cpu=not a.remote)
        self.existing = c
        c.connect()
        log("--conf %s: %s" % (a.conf, c.describe()))
        self.systems = []
        if a.stock_classpath:
            if re.search(r"(hadoop-hdfs-rdma|jucx)[^/:]*\.jar",
                         a.stock_classpath):
                raise HarnessError("--stock-classpath holds an hdfs-rdma or "
                                   "JUCX jar: stock must be Hadoop's jars "
                                   "only")
            self.systems.append("stock")
            self.clients["stock"] = Client("stock", self.java, a.conf,
                                           a.stock_classpath,
                                           opts=a.client_opts)
        else:
            self.skipped["stock"] = (
                "no --stock-classpath: the stock system is skipped (ratios "
                "to stock are n/a); jar is this cluster's TCP path")
            self.note(self.skipped["stock"])
        self.systems += ["jar", "ucx"]
        self.clients["jar"] = Client("jar", self.java, a.conf, hadoop_cp,
                                     self.dropin, False, a.client_opts)
        self.clients["ucx"] = Client("ucx", self.java, a.conf, hadoop_cp,
                                     self.dropin, True, a.client_opts)
        self.cluster_of = {s: c for s in self.systems}
        self.measure_idle()
        self.rdma_bean_seen = c.rdma_bean_count() > 0
        if not self.rdma_bean_seen:
            self.note("no DataNode answers with the %s bean: is the jar "
                      "installed on the DataNodes (agent, plugin) and their "
                      "http port reachable? Per-put UCX counters are n/a"
                      % RDMA_BEAN)
        if c.dn_pids is None:
            self.note("DataNode CPU and context switches are n/a: %d of %d "
                      "DataNodes are not on this host (or --remote)" % (
                          sum(p is None for p in c.dn_pid_list),
                          len(c.dn_pid_list)))

    @property
    def cluster_pids(self):
        return {pid for c in self.clusters.values() for pid in c.pids}

    # -- one batch of puts -------------------------------------------------

    def put_batch(self, system, files, rep, tag, verify, jvm_props=()):
        """Runs one FsShell -put JVM per local file, all at once, on the
        given system's cluster; returns one dict per put plus the batch wall
        time. `jvm_props`: extra JVM options of the put JVMs (a profiler)."""
        c = self.cluster_of[system]
        client = self.clients[system]
        c.wait_clean()
        stats_dir = os.path.join(self.out, "logs")
        os.makedirs(stats_dir, exist_ok=True)
        jobs = []
        for i, (path, digest) in enumerate(files):
            self.seq += 1
            target = "%s/%s-%s-%d" % (c.bench_dir, tag, system, i)
            base = os.path.join(stats_dir, "%04d-%s-%s-%d" % (
                self.seq, tag, system, i))
            props = list(jvm_props)
            if client.agent:
                props.append("-Dhdfsrdma.stats.file=" + base + ".ucx")
            argv = client.put_argv(rep, path, target, props)
            jobs.append(dict(path=path, digest=digest, target=target,
                             log=base + ".log", stats=base + ".ucx",
                             argv=argv))
        total = sum(os.path.getsize(j["path"]) for j in jobs)
        timeout = 180 + total * max(1, rep) / (5e6)
        before_ctr = c.dn_counters()   # first: JMX reads cost DataNode CPU
        dn_pids = c.dn_pids
        switches = ContextSwitches(dn_pids).start() if dn_pids else None
        before_dn = c.dn_cpu()
        before_nn = c.nn_cpu()
        t0 = time.monotonic()
        for j in jobs:
            j["start"] = time.monotonic()
            j["proc"] = self.procs.spawn(j["argv"], j["log"],
                                         name="%s put %s" % (system, tag))
        done = self.procs.wait_all([j["proc"] for j in jobs], timeout,
                                   self.cluster_pids)
        t1 = max(d[0] for d in done.values())
        after_dn, after_nn = c.dn_cpu(), c.nn_cpu()
        dn_cpu = None if before_dn is None or after_dn is None else \
            after_dn - before_dn
        nn_cpu = None if before_nn is None or after_nn is None else \
            after_nn - before_nn
        dn_switches = switches.stop() if switches else (None, None)
        # metrics2 JMX values lag up to one period (1 s in the embedded
        # clusters, see METRICS2).
        if c.metrics_lag:
            time.sleep(max(0.0, c.metrics_lag - (time.monotonic() - t1)))
        for j in jobs:
            end, rc, ru = done[j["proc"].pid]
            j.update(wall=end - j["start"], rc=rc,
                     cpu=ru.ru_utime + ru.ru_stime,
                     switches=(ru.ru_nvcsw, ru.ru_nivcsw),
                     dn_switches=dn_switches)
            if rc != 0:
                raise HarnessError("%s put of %s failed (rc %d); see %s" % (
                    system, j["path"], rc, j["log"]))
            st = c.status(j["target"])
            size = os.path.getsize(j["path"])
            if st["length"] != size or st["replication"] != rep:
                raise HarnessError("%s: %s has length %s replication %s, "
                                   "expected %d and %d" % (
                                       system, j["target"], st["length"],
                                       st["replication"], size, rep))
            if verify:
                digest, n = c.sha256(j["target"])
                if digest != j["digest"]:
                    raise HarnessError("%s: %s read back differs (%d bytes)"
                                       % (system, j["target"], n))
            j["verified"] = verify
            j["client_stats"] = {}
            if os.path.exists(j["stats"]):
                with open(j["stats"]) as f:
                    j["client_stats"] = parse_stats(f.read())
        after_ctr = c.dn_counters()
        for j in jobs:
            c.delete(j["target"])
        delta = {k: after_ctr[k] - before_ctr.get(k, 0) for k in after_ctr}
        if not c.metrics_lag:
            delta.pop("activity.BytesWritten", None)
        self.bytes_expected += total * rep
        written = delta.get("activity.BytesWritten")
        if written is not None and written != total * rep:
            self.note("%s %s: the DataNodes wrote %d bytes, expected %d "
                      "(size x replication)" % (system, tag, written,
                                                total * rep))
        where = "%s %s" % (system, tag)
        if system == "ucx" and self.ucx_policy_over_tcp:
            self.jar_expected_blocks += rep * sum(
                blocks_of(os.path.getsize(j["path"]), c.block_size)
                for j in jobs)
            self.check_jar(jobs, delta, where, policy=True)
        elif system == "ucx" or system in self.compared:
            self.ucx_expected_bytes += total * rep
            self.check_ucx(jobs, delta, total, rep, where)
        elif system == "jar":
            self.jar_expected_blocks += rep * sum(
                blocks_of(os.path.getsize(j["path"]), c.block_size)
                for j in jobs)
            self.check_jar(jobs, delta, where)
        return jobs, t1 - t0, dn_cpu, nn_cpu, delta, total

    def check_ucx(self, jobs, delta, total, rep, where):
        """Whether the UCX puts moved all their bytes by UCX get: the client
        sent every byte as descriptors, the DataNodes (HdfsRdma bean) fetched
        size x replication and took no replica over TCP."""
        sent = sum(j["client_stats"].get("ucx-data-bytes-sent", 0) or 0
                   for j in jobs)
        if not any(j["client_stats"] for j in jobs):
            self.ucx_problem("%s: the UCX client wrote no stats file (its UCX "
                             "runtime never started)" % where)
        elif sent == 0:
            self.ucx_problem("%s: the UCX client sent no bytes by UCX "
                             "(ucx-data-bytes-sent=0)" % where)
        elif sent != total:
            self.note("%s: the UCX client sent %d bytes by UCX, expected %d"
                      % (where, sent, total))
        key = fetched_key(delta)
        if key is None:
            return None
        fetched = delta[key]
        if fetched == 0:
            self.ucx_problem("%s: the UCX DataNodes fetched no bytes by UCX "
                             "(%s)" % (where, key))
        elif fetched != total * rep:
            self.note("%s: DataNodes fetched %d bytes by UCX, expected %d "
                      "(size x replication)" % (where, fetched, total * rep))
        if delta.get("rdma.BlocksOverTcp"):
            self.note("%s: %d replica(s) of a UCX put went over TCP" % (
                where, delta["rdma.BlocksOverTcp"]))
        return fetched

    def check_jar(self, jobs, delta, where, policy=False):
        """A jar put (dfs.client.rdma.enabled=false) must move nothing over
        UCX: its client starts no UCX runtime (so writes no stats line, or
        one that sent 0 bytes), and the DataNodes fetch nothing by get and
        take no replica over UCX. `policy`: a UCX client between emulated
        hosts, which must have chosen TCP itself."""
        sent = sum(j["client_stats"].get("ucx-data-bytes-sent", 0) or 0
                   for j in jobs)
        fetched = delta.get(fetched_key(delta) or "", 0)
        over_ucx = delta.get("rdma.BlocksOverUcx", 0)
        if sent or fetched or over_ucx:
            self.ucx_problem("%s: a put with %s moved data over UCX (client "
                             "sent %d bytes, DataNodes fetched %d, %d "
                             "replica(s) over UCX)" % (
                                 where, "UCX on between hosts without RDMA"
                                 if policy else
                                 "dfs.client.rdma.enabled=false",
                                 sent, fetched, over_ucx))

    def put_row(self, system, size, rep, run, jobs, dn_cpu, nn_cpu, delta,
                kind="put"):
        j = jobs[0]
        cs = j["client_stats"]
        c = self.cluster_of[system]
        row = dict(kind=kind, system=system, size_bytes=size,
                   size=human(size), rep=rep, run=run,
                   wall_s=round(j["wall"], 4), client_cpu_s=round(j["cpu"], 3),
                   dn_cpu_s=None if dn_cpu is None else round(dn_cpu, 3),
                   nn_cpu_s=None if nn_cpu is None else round(nn_cpu, 3),
                   client_csw_voluntary=j["switches"][0],
                   client_csw_involuntary=j["switches"][1],
                   dn_csw_voluntary=j["dn_switches"][0],
                   dn_csw_involuntary=j["dn_switches"][1],
                   packets=packets_of(size, c.block_size),
                   dn_bytes_written=delta.get("activity.BytesWritten"),
                   ucx_bytes_sent=cs.get("ucx-data-bytes-sent",
                                         0 if system == "jar" else None),
                   ucx_bytes_fetched=None,
                   transport={"stock": "tcp (stock)",
                              "jar": "tcp (jar, UCX off)"}.get(
                       system, str(cs.get("transports", "")).replace(
                           "_", " ")),
                   verified=j["verified"])
        if system != "stock":
            key = fetched_key(delta)
            row["ucx_bytes_fetched"] = delta.get(key) if key else None
            # Everything else the client's stats line and the DataNodes'
            # HdfsRdma bean report (counters and per-phase timers).
            for k, v in sorted(cs.items()):
                if k not in ("ucx-data-bytes-sent", "transports"):
                    row["client_" + k.replace("-", "_")] = v
            for k, v in sorted(delta.items()):
                if k.startswith("rdma."):
                    row["dn_" + k.replace(".", "_")] = v
        return row

    # -- the sweep ---------------------------------------------------------

    def warmup(self):
        """One unrecorded put per system: the DataNodes' JIT for each path
        (the jar's puts take the UCX cluster's TCP path)."""
        size = min(self.args.warmup, max(self.args.sizes))
        if size <= 0:
            return
        path, digest = self.make_input(size)
        log("warm-up: one %s put at replication 3 per system (not recorded)"
            % human_long(size))
        for system in self.systems:
            self.put_batch(system, [(path, digest)], 3, "warmup", True)

    def run_order(self, run):
        """The systems in the order run `run` (from 1) measures them: the
        alternation order, or with --balance-order row run-1 of a Williams
        design over them."""
        order = list(self.systems)
        if self.args.balance_order and order:
            rows = williams_orders(len(order))
            order = [order[i] for i in rows[(run - 1) % len(rows)]]
        return order

    def sweep(self):
        a = self.args
        for size in a.sizes:
            path, digest = self.make_input(size)
            for rep in a.reps:
                for run in range(1, a.runs + 1):
                    verify = a.verify == "all" or (a.verify == "first"
                                                   and run == 1)
                    walls = {}
                    for system in self.run_order(run):
                        tag = "put-%s-r%d-%d" % (human(size), rep, run)
                        jobs, _, dn_cpu, nn_cpu, delta, total = \
                            self.put_batch(system, [(path, digest)], rep,
                                           tag, verify)
                        row = self.put_row(system, size, rep, run, jobs,
                                           dn_cpu, nn_cpu, delta)
                        self.put_rows.append(row)
                        walls[system] = row["wall_s"]
                    msg = "%6s rep %d run %d: %s" % (
                        human(size), rep, run, ", ".join(
                            "%s %.2f s" % (s, walls[s])
                            for s in self.systems))
                    if self.clusters and not self.hosts:
                        lim = self.limit(size, rep, run, path)
                        msg += ", copy %.2f s, fan-out %s s" % (
                            lim["copy_s"], fmt(lim["fanout_s"], 3))
                    log(msg)

    # -- flame graphs ------------------------------------------------------

    def profiler_library(self):
        """libasyncProfiler.so of async-profiler 3.0 (Maven Central's
        tools.profiler:async-profiler jar carries it), fetched and unpacked
        under the work directory."""
        if self.args.async_profiler:
            return self.args.async_profiler
        lib = os.path.join(self.work, "async-profiler", "linux-x64",
                           "libasyncProfiler.so")
        if os.path.exists(lib):
            return lib
        jar = os.path.join(os.path.expanduser("~"), ".m2", "repository",
                           "tools", "profiler", "async-profiler", "3.0",
                           "async-profiler-3.0.jar")
        if not os.path.exists(jar):
            subprocess.run(["mvn", "-B", "-q", "-ntp", "dependency:get",
                            "-Dartifact=tools.profiler:async-profiler:3.0"],
                           cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        import zipfile
        with zipfile.ZipFile(jar) as z:
            z.extract("linux-x64/libasyncProfiler.so",
                      os.path.join(self.work, "async-profiler"))
        return lib

    def jcmd_profiler(self, pid, command):
        """Loads async-profiler into a running JVM with `command` (it may be
        loaded again and again, each time with the next command)."""
        # Quoted: jcmd would parse key=value pairs as its own arguments.
        r = subprocess.run(["jcmd", str(pid), "JVMTI.agent_load",
                            self.profiler_library(), '"%s"' % command],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or "error" in r.stdout.lower() \
                or "return code: 0" not in r.stdout:
            raise HarnessError("async-profiler in pid %d (%s): %s" % (
                pid, command, (r.stdout + r.stderr).strip()[-300:]))

    def flamegraphs(self):
        """CPU profiles of one put per system (not recorded in the sweep):
        the client JVM (profiled from launch) and every DataNode (attached
        for the put), as async-profiler's HTML flame graphs and as collapsed
        stacks (one line per stack and its sample count) for reading with
        scripts. The put runs twice per system, once for each format."""
        size, rep = self.args.flamegraphs
        path, digest = self.make_input(size)
        lib = self.profiler_library()
        d = os.path.join(self.out, "flamegraphs")
        os.makedirs(d, exist_ok=True)
        event = "event=cpu,interval=%dus" % self.args.profile_interval_us
        for system in self.systems:
            c = self.cluster_of[system]
            for kind in ("collapsed", "html"):
                name = "%s-%s-r%d" % (system, human(size), rep)
                opt = ",collapsed" if kind == "collapsed" else ""
                for p in c.dns:
                    self.jcmd_profiler(p.pid, "start," + event)
                client = os.path.join(d, "client-%s.%s" % (name, kind))
                agent = "-agentpath:%s=start,%s%s,file=%s" % (
                    lib, event, opt, client)
                try:
                    jobs, _, dn_cpu, _, _, _ = self.put_batch(
                        system, [(path, digest)], rep, "profile-" + kind,
                        False, jvm_props=[agent])
                finally:
                    for i, p in enumerate(c.dns):
                        self.jcmd_profiler(p.pid, "stop%s,file=%s" % (
                            opt, os.path.join(d, "dn%d-%s.%s" % (
                                i + 1, name, kind))))
                log("profiled %s put of %s at rep %d (%s): %.2f s, client "
                    "CPU %.2f s, DataNode CPU %.2f s" % (
                        system, human_long(size), rep, kind, jobs[0]["wall"],
                        jobs[0]["cpu"], dn_cpu))

    # -- the limit ---------------------------------------------------------

    def limit(self, size, rep, run, path):
        c = self.clusters["ucx"]
        dests = [os.path.join(c.data_dirs[i], "limit-copy.bin")
                 for i in range(rep)]
        t0 = time.monotonic()
        cps = [self.procs.spawn(["cp", path, d], name="cp") for d in dests]
        done = self.procs.wait_all(cps, 600, self.cluster_pids)
        copy_s = max(d[0] for d in done.values()) - t0
        for d in dests:
            if not os.path.exists(d) or os.path.getsize(d) != size:
                raise HarnessError("limit copy to %s failed" % d)
            os.unlink(d)
        fan = self.fanout(size, rep)
        row = dict(size_bytes=size, size=human(size), rep=rep, run=run,
                   copy_s=round(copy_s, 4), fanout_s=fan.get("fanout_s"),
                   fanout_packets=fan.get("packets"),
                   fanout_gbps_aggregate=fan.get("gbps_aggregate"),
                   fanout_lat_p50_us=fan.get("lat_p50_us"),
                   fanout_lat_p99_us=fan.get("lat_p99_us"),
                   fanout_rma_lanes=self.fanout_lanes(rep))
        row["limit_s"] = round(max(copy_s, row["fanout_s"] or 0), 4)
        self.limit_rows.append(row)
        return row

    def fanout_env(self):
        env = dict(os.environ)
        env.pop("UCX_TLS", None)          # the product's default: UCX picks
        env["UCX_MM_ERROR_HANDLING"] = "y"  # as the bridge sets it
        return env

    def fanout(self, size, rep):
        exe = os.path.join(REPO, "native", "target", "cmake",
                           "ucx_fanout_bench")
        if not os.access(exe, os.X_OK):
            self.note("no %s: fan-out limit n/a" % exe)
            return {}
        # 64 MiB to 1 GiB per getter (a steadier rate than a few packets),
        # scaled to the file's size below.
        packets = min(max(math.ceil(size / PACKET), 1024), 16384)
        out = os.path.join(self.work, "fanout.out")
        p = self.procs.spawn([exe, "-s", "64K", "-r", str(rep), "-n",
                              str(packets), "--err-handling", "--ucx-alloc", "--csv",
                              "--timeout", "120"], out, env=self.fanout_env(),
                             name="ucx_fanout_bench")
        done = self.procs.wait_all([p], 200, self.cluster_pids)
        with open(out) as f:
            text = f.read()
        os.unlink(out)
        if done[p.pid][1] != 0:
            self.fail("ucx_fanout_bench -r %d failed: %s" % (
                rep, text.strip()[-300:]))
            return {}
        lines = text.splitlines()
        head = [i for i, l in enumerate(lines) if l.startswith("size,")]
        rows = list(csv.DictReader(
            [lines[head[-1]]] + [l for l in lines[head[-1] + 1:]
                                 if l[:1].isdigit()])) if head else []
        if not rows:
            self.fail("ucx_fanout_bench printed no CSV row: %s" % text[-300:])
            return {}
        r = rows[-1]
        moved = int(r["bytes"])
        secs = float(r["seconds"])
        # Scaled to this file: every getter fetches `size` bytes.
        return dict(fanout_s=round(secs * size * rep / moved, 4),
                    packets=packets, gbps_aggregate=float(r["gbps_aggregate"]),
                    lat_p50_us=float(r["lat_p50_us"]),
                    lat_p99_us=float(r["lat_p99_us"]))

    _lanes = {}

    def fanout_lanes(self, rep):
        """The RMA lanes the fan-out benchmark's endpoints used (one short
        extra run per replication, non-CSV output)."""
        if rep in self._lanes:
            return self._lanes[rep]
        exe = os.path.join(REPO, "native", "target", "cmake",
                           "ucx_fanout_bench")
        lanes = "n/a"
        if os.access(exe, os.X_OK):
            r = subprocess.run([exe, "-s", "64K", "-r", str(rep), "-n", "256",
                                "--err-handling", "--ucx-alloc"],
                               env=self.fanout_env(),
                               capture_output=True, text=True, timeout=120)
            m = re.search(r"RMA lanes \(getter 0\): (\S+)", r.stdout)
            lanes = m.group(1) if m else "n/a"
        self._lanes[rep] = lanes
        return lanes

    # -- scale -------------------------------------------------------------

    def scale(self):
        a = self.args
        size = a.writer_size
        files = [self.make_input(size, i + 1) for i in range(max(a.writers))]
        for n in a.writers:
            for rep in a.scale_reps:
                for run in range(1, a.scale_runs + 1):
                    res = {}
                    for system in self.systems:
                        tag = "scale-%dx%s-r%d-%d" % (n, human(size), rep, run)
                        jobs, batch, dn_cpu, nn_cpu, delta, total = \
                            self.put_batch(system, files[:n], rep, tag,
                                           a.verify == "all")
                        key = fetched_key(delta)
                        walls = [j["wall"] for j in jobs]
                        row = dict(system=system, writers=n, size_bytes=size,
                                   size=human(size), rep=rep, run=run,
                                   batch_wall_s=round(batch, 4),
                                   aggregate_mib_s=round(total / MiB / batch,
                                                         2),
                                   writer_wall_median_s=round(
                                       statistics.median(walls), 4),
                                   writer_wall_max_s=round(max(walls), 4),
                                   client_cpu_s=round(sum(j["cpu"]
                                                          for j in jobs), 3),
                                   dn_cpu_s=None if dn_cpu is None
                                   else round(dn_cpu, 3),
                                   dn_bytes_written=delta.get(
                                       "activity.BytesWritten"),
                                   ucx_bytes_fetched=delta.get(key)
                                   if key and system != "stock" else None)
                        self.scale_rows.append(row)
                        res[system] = row
                    log("scale %d x %s rep %d run %d: %s" % (
                        n, human(size), rep, run, ", ".join(
                            "%s %.1f MiB/s (%.2f s)" % (
                                s, res[s]["aggregate_mib_s"],
                                res[s]["batch_wall_s"])
                            for s in self.systems)))

    # -- the end -----------------------------------------------------------

    def check_bytes_written(self):
        """--conf: the DataNodes' BytesWritten over the whole run against
        size x replication of every put, read one metrics period after the
        last put (the per-put deltas of a cached counter would lag)."""
        c = self.existing
        if c.written_at_start is None:
            return
        log("waiting %.0f s (--metrics-period) for the DataNodes' "
            "BytesWritten" % (self.args.metrics_period + 1))
        time.sleep(self.args.metrics_period + 1)
        written = c.bytes_written()
        if written is None:
            return
        written -= c.written_at_start
        if written != self.bytes_expected:
            self.note("the DataNodes wrote %d bytes over the run, expected %d"
                      " (size x replication of every put; other writers on "
                      "the cluster count too)" % (written,
                                                  self.bytes_expected))
        else:
            log("the DataNodes wrote %d bytes over the run, as expected"
                % written)

    def stop_clusters(self, complete):
        """Stops the embedded clusters; with `complete` (no put was cut
        short), checks the UCX DataNodes' exit totals against every UCX put
        and every jar put (whose replicas the UCX DataNodes took over TCP).
        --conf: deletes the test directory, and stops nothing."""
        if self.existing is not None:
            self.existing.cleanup()
            if complete:
                self.check_bytes_written()
        for c in self.clusters.values():
            self.procs.stop([p for p in c.dns + [c.nn] if p is not None])
        c = self.clusters.get("ucx")
        if c is None:
            return
        totals = c.ucx_totals()
        self.ucx_totals = totals
        if not complete:
            return
        fetched = totals.get("ucx-data-bytes-fetched")
        if fetched is None:
            self.fail("the UCX DataNodes wrote no exit totals")
        elif fetched == 0 and self.ucx_expected_bytes:
            self.ucx_problem("the UCX DataNodes fetched no bytes by UCX in "
                             "the whole run")
        elif fetched != self.ucx_expected_bytes:
            self.note("UCX DataNodes fetched %d bytes by get over the run, "
                      "expected %d (size x replication of every UCX put)"
                      % (fetched, self.ucx_expected_bytes))
        over_tcp = totals.get("blocks-over-tcp", 0)
        if over_tcp != self.jar_expected_blocks:
            self.note("UCX DataNodes received %d client block replica(s) "
                      "over TCP, expected %d (those of the jar puts; with --hosts, also"
                      " those of UCX puts whose client chose TCP)"
                      % (over_tcp, self.jar_expected_blocks))


# --------------------------------------------------------------------------
# Results: CSV, fit, summary, plots.
# --------------------------------------------------------------------------

def write_csv(path, rows):
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


def linfit(xs, ys):
    n = len(xs)
    if n < 2 or len(set(xs)) < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    slope = sxy / sxx
    icpt = my - slope * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - icpt - slope * x) ** 2 for x, y in zip(xs, ys))
    r2 = 1 - ss_res / ss_tot if ss_tot else 1.0
    return slope, icpt, r2


def summarize(bench):
    """Per size and replication: each system's medians (wall, client and
    DataNode CPU, per GiB too, context switches per packet), ratios UCX /
    stock (wall_ratio and the like), jar / stock and UCX / jar, the limit,
    the binding wall target of issue 9, and what UCX carried."""
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
        gib = size / GiB
        out = dict(size_bytes=size, size=human(size), rep=rep,
                   runs=min([len(sel[s]) for s in bench.systems] or [0]))
        m = {}
        for s in bench.all_systems:
            for col in ("wall_s", "client_cpu_s", "dn_cpu_s"):
                m[s, col] = median([r[col] for r in sel[s]])
            for who in ("client", "dn"):
                for kind in ("voluntary", "involuntary"):
                    col = "%s_csw_%s" % (who, kind)
                    m[s, col] = median([
                        None if r[col] is None else r[col] / r["packets"]
                        for r in sel[s]])
                m[s, who + "_csw"] = median([
                    None if r[who + "_csw_voluntary"] is None else
                    (r[who + "_csw_voluntary"] + r[who + "_csw_involuntary"])
                    / r["packets"] for r in sel[s]])
            out.update({
                "%s_wall_s" % s: m[s, "wall_s"],
                "%s_client_cpu_s" % s: m[s, "client_cpu_s"],
                "%s_client_cpu_s_per_gib" % s:
                    ratio(m[s, "client_cpu_s"], gib),
                "%s_dn_cpu_s" % s: m[s, "dn_cpu_s"],
                "%s_dn_cpu_s_per_gib" % s: ratio(m[s, "dn_cpu_s"], gib),
                "%s_client_csw_vol_per_packet" % s:
                    m[s, "client_csw_voluntary"],
                "%s_client_csw_invol_per_packet" % s:
                    m[s, "client_csw_involuntary"],
                "%s_dn_csw_vol_per_packet" % s: m[s, "dn_csw_voluntary"],
                "%s_dn_csw_invol_per_packet" % s: m[s, "dn_csw_involuntary"],
                "%s_client_csw_per_packet" % s: m[s, "client_csw"],
                "%s_dn_csw_per_packet" % s: m[s, "dn_csw"],
                "%s_put_over_limit" % s: ratio(m[s, "wall_s"], lim)})
        wr = ratio(m["ucx", "wall_s"], m["stock", "wall_s"])
        wt = wall_target(size, rep)
        fetched = [r["ucx_bytes_fetched"] for r in sel["ucx"]
                   if r["ucx_bytes_fetched"] is not None]
        jar_ucx = [(r["ucx_bytes_fetched"] or 0) + (r["ucx_bytes_sent"] or 0)
                   for r in sel["jar"]]
        transports = sorted({r["transport"] for r in sel["ucx"]
                             if r["transport"]})
        out.update(
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
            else size * rep,
            jar_bytes_over_ucx_max=max(jar_ucx) if jar_ucx else None,
            transport="; ".join(transports))
        # --compare-distributions: UCX's mode against each forced one, and
        # against the fastest of them (issue 11's one-host target).
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
        summary.append(out)
    for r in summary:
        for k, v in r.items():
            if isinstance(v, float):
                r[k] = round(v, 4)
    return summary


def targets(bench, summary, scale_sum):
    """The targets of issue 9, each with the values it covers, the worst
    of them and met / missed / not measured. Never fails a run."""
    out = []

    def add(text, limit, sense, values, runs, note=""):
        """values: [(where, value or None)]; sense "<=" or ">="."""
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
                note = ("%d run(s), the issue asks for medians of >= %d; "
                        % (runs, TARGET_RUNS)) + note
        if not got and "stock" in bench.skipped and "stock" in text:
            note = "no stock system (--stock-classpath); " + note
        out.append(dict(target=text, limit=limit, sense=sense,
                        measured=", ".join("%s %s" % (w, fmt(v))
                                           for w, v in values) or "n/a",
                        worst=None if worst is None else round(worst, 4),
                        result=result, note=note.strip("; ")))

    def where(r):
        return "%s r%d" % (r["size"], r["rep"])

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
        add("issue 11: wall time, %s (%s) / the fastest of %s" % (
            bench.labels["ucx"], bench.args.ucx_distribution,
            ", ".join(bench.labels[c] for c in bench.compared)),
            DISTRIBUTION_TARGET, "<=",
            [("%s vs %s" % (where(r), bench.labels.get(
                r.get("fastest_compared"), "n/a")),
              r.get("ucx_over_fastest_wall_ratio")) for r in rows], runs)
    return out


def fits(bench):
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


def machine_info(bench):
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
    if cmd(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"]):
        git += " (with uncommitted changes)"
    java = cmd([bench.java, "-version"]).splitlines()
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
                ("Hadoop", "2.9.2 (Maven Central jars); UCX path: %s"
                 % os.path.basename(getattr(bench, "dropin", None) or "n/a"))]
    else:
        out += [("cluster", "--conf %s: %s" % (conf, getattr(
                    bench.existing, "description", None) or "n/a")),
                ("drop-in jar", getattr(bench, "dropin", None) or "n/a")]
    out += [("Java", java[0] if java else "n/a"),
            ("UCX", cmd(["ucx_info", "-v"]).splitlines()[0].lstrip("# ")
             if shutil.which("ucx_info") else "n/a"),
            ("commit", git),
            ("command", " ".join(["benchmarks/run.sh"] + bench.args.argv))]
    return out


def md_table(header, rows):
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
    a = bench.args
    present = bench.systems or bench.all_systems
    labels, long_labels = bench.labels, bench.long_labels
    names = " / ".join(labels[s] for s in present)
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
    has_limit = any(r["limit_s"] is not None for r in summary)
    out += ["## Put latency (median of runs)", "",
            "Wall time of the FsShell -put JVM, launch to exit.%s Target: "
            "the strictest UCX/stock wall-time target of issue 9 for that "
            "size and replication." % (
                " Limit = max(local copy x r, UCX fan-out of 64 KiB packets "
                "to r getters)." if has_limit else ""), ""]
    header = ["size", "rep", "runs", "%s s" % names, "UCX/stock",
              "jar/stock", "UCX/jar"] + [
                  "UCX/%s" % labels[c] for c in bench.compared] + ["target"]
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
    out += ["## CPU (median of runs)", "",
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
    out += ["", "## What UCX carried (per put, median)", "",
            "UCX bytes fetched by the DataNodes (HdfsRdma bean) against size "
            "x replication (0 where the UCX client's policy takes Hadoop's "
            "pipeline between emulated hosts); jar puts must move 0 bytes "
            "over UCX.", ""]
    out.append(md_table(
        ["size", "rep", "UCX bytes fetched / expected",
         "jar bytes over UCX (max)", "UCX transport"],
        [[r["size"], str(r["rep"]),
          "%s / %d" % (fmt_bytes(r["ucx_bytes_fetched_median"]),
                       r["ucx_bytes_expected"]),
          fmt(r["jar_bytes_over_ucx_max"]), r["transport"] or "n/a"]
         for r in summary]))
    out.append("")
    if fit_rows:
        out += ["## Cost against file size (least squares over every put)",
                ""]
        out.append(md_table(
            ["system", "rep", "metric", "slope s/GiB", "intercept s", "R²",
             "points", "sizes"],
            [[labels[r["system"]], str(r["rep"]), r["metric"],
              r["slope_s_per_gib"], r["intercept_s"], "%.4f" % r["r2"],
              str(r["points"]), r["sizes"]] for r in fit_rows]))
        out.append("")
    if scale_sum:
        out += ["## Concurrent writers (median of runs)", "",
                "Aggregate = bytes of all writers / wall time of the batch; "
                "latency = median over the writers of each put's wall time.",
                ""]
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
    out += ["## Targets (issue 9%s)" % (
        " and 11" if bench.compared else ""), "",
            "Ratios of medians in this run; the issue asks for medians of "
            ">= %d runs. Reported, never enforced." % TARGET_RUNS, ""]
    out.append(md_table(
        ["target", "limit", "measured", "worst", "result", "note"],
        [[t["target"], "%s %.2f" % (t["sense"], t["limit"]), t["measured"],
          t["worst"], t["result"], t["note"]] for t in target_rows]))
    out.append("")
    totals = bench.ucx_totals
    out += ["## What the UCX path carried", ""]
    if bench.existing is None:
        out += ["- UCX DataNodes' exit totals over the whole run (warm-up, "
                "sweep and scale, jar and ucx puts): %s" % (" ".join(
                    "%s=%s" % kv for kv in sorted(totals.items())) or "n/a"),
                "- expected: bytes fetched %d (size x replication of every "
                "UCX put), blocks over TCP %d (replicas of every jar put)"
                % (bench.ucx_expected_bytes, bench.jar_expected_blocks)]
    else:
        out += ["- expected bytes fetched over the run (size x replication "
                "of every UCX put): %d" % bench.ucx_expected_bytes]
    out += ["- idle clusters' CPU (NameNode + DataNodes, cores busy): %s"
            % (", ".join("%s %s" % (n, fmt(v, 3)) for n, v in sorted(
                bench.idle_cpu.items())) or "n/a"),
            "- %s bean: %s" % (RDMA_BEAN, "present" if bench.rdma_bean_seen
                               else "absent (per-put DataNode counters n/a)"),
            ""]
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


def plots(bench, summary, scale_sum):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FixedLocator, NullLocator
    except ImportError:
        bench.note("python3-matplotlib is not installed: no plots")
        return
    colors = {"stock": "tab:blue", "jar": "tab:green", "ucx": "tab:orange"}
    colors.update(zip(bench.compared, ("tab:red", "tab:purple", "tab:brown",
                                       "tab:pink")))
    labels = bench.long_labels
    present = bench.systems or bench.all_systems
    # The number above each size: UCX/stock, or UCX/jar without stock.
    base = "stock" if "stock" in present else "jar"
    ratio_key = "wall_ratio" if base == "stock" else "ucx_jar_wall_ratio"
    for rep in sorted({r["rep"] for r in summary}):
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
    if scale_sum:
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


def run_transfer(bench):
    """benchmarks/transfer.sh (JMH per-transfer cost), when it exists."""
    script = os.path.join(HERE, "transfer.sh")
    if bench.args.no_transfer or bench.args.hosts:
        return None
    if not os.path.exists(script):
        log("benchmarks/transfer.sh not there yet: per-transfer cost skipped")
        return None
    log("running benchmarks/transfer.sh --out %s --%s" % (
        bench.out, bench.args.profile))
    r = subprocess.run(["bash", script, "--out", bench.out,
                        "--" + bench.args.profile], cwd=REPO)
    if r.returncode != 0:
        bench.fail("benchmarks/transfer.sh failed (rc %d)" % r.returncode)
        return None
    path = os.path.join(bench.out, "transfer.csv")
    if not os.path.exists(path):
        bench.fail("benchmarks/transfer.sh wrote no transfer.csv")
        return None
    with open(path) as f:
        rows = list(csv.reader(f))
    if not rows:
        return None
    text = md_table(rows[0], rows[1:])
    if os.path.exists(os.path.join(bench.out, "transfer.png")):
        text += "\n\nPlot: [transfer.png](transfer.png)"
    return text


def finish(bench):
    summary = summarize(bench)
    fit_rows = fits(bench)
    scale_sum = scale_summary(bench)
    target_rows = targets(bench, summary, scale_sum)
    write_csv(os.path.join(bench.out, "puts.csv"), bench.put_rows)
    write_csv(os.path.join(bench.out, "limit.csv"), bench.limit_rows)
    write_csv(os.path.join(bench.out, "summary.csv"), summary)
    write_csv(os.path.join(bench.out, "fit.csv"), fit_rows)
    write_csv(os.path.join(bench.out, "scale.csv"), bench.scale_rows)
    write_csv(os.path.join(bench.out, "scale-summary.csv"), scale_sum)
    write_csv(os.path.join(bench.out, "targets.csv"), target_rows)
    plots(bench, summary, scale_sum)
    transfer = None if bench.interrupted or bench.args.flamegraphs_only \
        or bench.existing is not None else run_transfer(bench)
    write_summary_md(bench, summary, fit_rows, scale_sum, target_rows,
                     transfer)
    return target_rows


def williams_orders(n):
    """Orders of range(n), one per run, by a Williams design: over its
    rows (n of them, 2n when n is odd) every item comes once in each
    position and right after every other item equally often. A put can
    leave the machine warmer or colder for the next one, and a plain
    rotation keeps each system's predecessor. Measured with one: the UCX
    system, always right after the jar's TCP put, was slower than the same
    client forcing fan-out right after it in 5 of 6 runs, by up to 27%;
    the one run where both followed the jar, they were within 2%."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        if len(first) % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="benchmarks/run.sh",
        description="Put latency of stock HDFS 2.9.2, the drop-in jar with "
        "UCX off and the UCX path, on embedded clusters or (--conf) on an "
        "existing cluster.")
    prof = ap.add_mutually_exclusive_group()
    for p in PROFILES:
        prof.add_argument("--" + p, dest="profile", action="store_const",
                          const=p)
    ap.add_argument("--scale", action="store_true",
                    help="run only the concurrent-writers study")
    ap.add_argument("--no-scale", action="store_true",
                    help="skip the concurrent-writers study")
    ap.add_argument("--runs", type=int, help="runs per size and replication")
    ap.add_argument("--balance-order", action="store_true",
                    help="order each run's systems by a Williams design, so "
                    "that over as many runs as systems (twice as many when "
                    "odd) each comes once in each position and once right "
                    "after each other one")
    ap.add_argument("--sizes", type=parse_list(parse_size),
                    help="file sizes, e.g. 1M,16M,1G")
    ap.add_argument("--reps", type=parse_list(int),
                    help="replication factors, e.g. 1,3")
    ap.add_argument("--writers", type=parse_list(int),
                    help="concurrent writer counts, e.g. 1,2,4,8")
    ap.add_argument("--writer-size", type=parse_size)
    ap.add_argument("--scale-reps", type=parse_list(int))
    ap.add_argument("--scale-runs", type=int)
    ap.add_argument("--verify", choices=("all", "first", "none"),
                    help="read puts back and compare: every put, the first "
                    "run of each size (default; tiny: all), none")
    ap.add_argument("--warmup", type=parse_size,
                    help="size of the unrecorded warm-up put (0: none)")
    ap.add_argument("--out", help="results directory "
                    "(default benchmarks/results/<timestamp>)")
    ap.add_argument("--work", default="/var/tmp/hdfs-rdma-bench",
                    help="clusters' storage and input files (on disk)")
    ap.add_argument("--keep-work", action="store_true",
                    help="keep input files and cluster directories")
    ap.add_argument("--no-transfer", action="store_true",
                    help="do not run benchmarks/transfer.sh")
    ap.add_argument("--start-timeout", type=int, default=120)
    ap.add_argument("--java", help="java of the put JVMs (and of the "
                    "embedded clusters); default: java on PATH (run.sh: 17)")
    ap.add_argument("--flamegraphs", type=parse_size_rep, metavar="SIZE:REP",
                    help="profile one extra put per system with "
                    "async-profiler (client and DataNodes), e.g. 1G:3; "
                    "flame graphs and collapsed stacks under OUT/flamegraphs")
    ap.add_argument("--flamegraphs-only", action="store_true",
                    help="with --flamegraphs: no sweep, writers or transfer")
    ap.add_argument("--profile-interval-us", type=int, default=1000,
                    help="CPU sampling interval of --flamegraphs")
    ap.add_argument("--async-profiler", metavar="LIB",
                    help="libasyncProfiler.so to use (default: async-profiler "
                    "3.0 from Maven Central)")
    g = ap.add_argument_group(
        "an existing cluster (--conf DIR): nothing is started or stopped; "
        "jar and ucx are its clients with dfs.client.rdma.enabled false and "
        "true")
    g.add_argument("--conf", metavar="DIR",
                   help="Hadoop configuration directory of the cluster "
                   "(core-site.xml with fs.defaultFS, hdfs-site.xml)")
    g.add_argument("--hadoop-classpath", metavar="CP",
                   help="class path of the cluster's Hadoop 2.9 client, for "
                   "the jar and ucx puts (default: `hadoop classpath`)")
    g.add_argument("--stock-classpath", metavar="CP",
                   help="class path of a stock Hadoop client (no hdfs-rdma "
                   "jar); without it the stock system is skipped")
    g.add_argument("--dropin", metavar="JAR",
                   help="the drop-in jar for -javaagent: (default: the one "
                   "built in hadoop-hdfs-rdma/target)")
    g.add_argument("--hdfs-dir", metavar="PATH",
                   help="HDFS test directory, created and deleted by the run;"
                   " must not exist (default /tmp/hdfs-rdma-bench-<time>)")
    g.add_argument("--namenode-http", metavar="HOST:PORT",
                   help="the active NameNode's http address (default: from "
                   "DIR)")
    g.add_argument("--client-opts", metavar="OPTS", type=shlex.split,
                   default=[], help="more JVM options for every put JVM, "
                   "e.g. --client-opts=-Djava.library.path=... for "
                   "libhadoop, as the hdfs script gives its clients (with "
                   "=, as the value starts with -)")
    g.add_argument("--remote", action="store_true",
                   help="measure no daemon's CPU or context switches, even "
                   "on this host (as for a cluster on other hosts)")
    g.add_argument("--metrics-period", type=float,
                   help="the DataNodes' metrics period in s (the whole-run "
                   "BytesWritten check waits for it; default 10, with "
                   "--conf-self-test 1, the scratch cluster's)")
    h = ap.add_argument_group(
        "emulated hosts: client, NameNode and DataNodes each in network and"
        " IPC namespaces of their own, links shaped with tbf (root)")
    h.add_argument("--hosts", metavar="RATE", type=lambda t: (
        parse_rate(t), t)[1], help="every host's link rate, e.g. 1gbit")
    h.add_argument("--client-link", metavar="RATE", type=lambda t: (
        parse_rate(t), t)[1], help="with --hosts: the client's link rate "
        "(default: --hosts'), e.g. 1gbit in front of 10gbit DataNodes")
    h.add_argument("--ucx-tcp", action="store_true",
                   help="with --hosts: the UCX client uses UCX's tcp "
                   "transport (fan-out by emulated gets) instead of its "
                   "policy (Hadoop's pipeline where gets are not one-sided)")
    g.add_argument("--distribution", choices=DISTRIBUTIONS,
                   help="the UCX client's dfs.client.rdma.distribution "
                   "(default: the client's own, auto); chain and hybrid "
                   "make DataNodes fetch from each other")
    g.add_argument("--compare-distributions", metavar="MODES",
                   type=parse_list(str),
                   help="more UCX systems in the alternation, one per mode "
                   "(comma-separated, from %s), each forcing that "
                   "distribution on the ucx cluster; the summary gives UCX "
                   "over each and over the fastest (embedded clusters only)"
                   % ", ".join(DISTRIBUTIONS))
    g.add_argument("--conf-self-test", action="store_true",
                   help="start a scratch UCX cluster in another process and "
                   "run --conf against it (tiny profile unless another is "
                   "given), with stock from Maven's class path; checks the "
                   "run left HDFS as it found it")
    g.add_argument("--serve-cluster", metavar="DIR", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.argv = argv
    if a.conf_self_test and a.conf:
        ap.error("--conf-self-test starts its own cluster: no --conf")
    if a.conf_self_test and not a.profile:
        a.profile = "tiny"
    if a.metrics_period is None:
        a.metrics_period = 1.0 if a.conf_self_test else 10.0
    a.profile = a.profile or "small"
    for k, v in PROFILES[a.profile].items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    if a.scale and a.no_scale:
        ap.error("--scale and --no-scale exclude each other")
    if a.hosts and (a.conf or a.conf_self_test):
        ap.error("--hosts starts its own clusters: no --conf")
    if a.ucx_tcp and not a.hosts:
        ap.error("--ucx-tcp needs --hosts")
    if a.client_link and not a.hosts:
        ap.error("--client-link needs --hosts")
    # The ucx system's distribution: --ucx-tcp forces fan-out unless
    # --distribution says otherwise.
    a.ucx_distribution = a.distribution or (
        "fan-out" if a.ucx_tcp else "auto")
    if a.compare_distributions:
        modes = a.compare_distributions
        bad = [m for m in modes if m not in DISTRIBUTIONS]
        if bad:
            ap.error("--compare-distributions: %s: not one of %s" % (
                ", ".join(bad), ", ".join(DISTRIBUTIONS)))
        if len(set(modes)) != len(modes) or a.ucx_distribution in modes:
            ap.error("--compare-distributions: each mode once, and not the "
                     "UCX system's own (%s)" % a.ucx_distribution)
        if a.conf or a.conf_self_test:
            ap.error("--compare-distributions needs embedded clusters: no "
                     "--conf")
        if a.hosts and not a.ucx_tcp:
            ap.error("--compare-distributions with --hosts needs --ucx-tcp "
                     "(UCX's tcp transport between the hosts)")
    if (a.conf or a.conf_self_test) and a.flamegraphs:
        ap.error("--flamegraphs profiles the embedded clusters only")
    if a.conf:
        a.conf = os.path.abspath(a.conf)
        if not os.path.isfile(os.path.join(a.conf, "core-site.xml")):
            ap.error("--conf %s: no core-site.xml there" % a.conf)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    a.hdfs_dir = a.hdfs_dir or "/tmp/hdfs-rdma-bench-" + stamp
    a.out = os.path.abspath(a.out or os.path.join(HERE, "results", stamp))
    a.work = os.path.abspath(a.work)
    if a.java:
        a.java = os.path.abspath(a.java)
    return a


def on_signals():
    def on_term(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_term)
    # Even where SIGINT came in ignored (started in the background).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, on_term)


def serve_cluster(a):
    """--serve-cluster DIR (for --conf-self-test): one UCX cluster as the
    embedded runs start it (the drop-in jar as agent in every daemon, the
    UCX DataNode plugin) under DIR, in this process; DIR/ready names its
    configuration directory once it is up (DIR/stock.classpath: the class
    path of Hadoop's jars without hdfs-rdma). Up until SIGTERM or SIGINT,
    then stopped."""
    root = os.path.abspath(a.serve_cluster)
    procs = Procs()
    java = a.java or shutil.which("java")
    on_signals()
    try:
        cp, dropin = maven_classpath(root)
        if not dropin:
            print("no drop-in jar: build first", file=sys.stderr)
            return 1
        c = Cluster("scratch", os.path.join(root, "cluster"), java, cp, True,
                    procs, agent=dropin)
        os.makedirs(c.root)
        c.write_conf()
        p = c.format()
        if procs.wait_all([p], 120)[p.pid][1] != 0:
            print("NameNode -format failed; see %s/format.log" % c.root,
                  file=sys.stderr)
            return 1
        c.start()
        deadline = time.monotonic() + a.start_timeout
        while not c.ready():
            if time.monotonic() > deadline:
                print("the scratch cluster did not come up; see %s/*.log"
                      % c.root, file=sys.stderr)
                return 1
            time.sleep(0.5)
        with open(os.path.join(root, "stock.classpath"), "w") as f:
            f.write(cp)
        with open(os.path.join(root, "ready.tmp"), "w") as f:
            f.write(c.conf + "\n")
        os.rename(os.path.join(root, "ready.tmp"),
                  os.path.join(root, "ready"))
        log("scratch UCX cluster up: --conf %s" % c.conf)
        while True:
            signal.pause()
    except KeyboardInterrupt:
        log("stopping the scratch cluster")
        return 0
    except HarnessError as e:
        print(str(e), file=sys.stderr)
        return 1
    finally:
        procs.stop_all()


def namespace(hdfs, path="/"):
    """Every path in HDFS (WebHDFS LISTSTATUS, recursively): what the
    self-test compares before and after a --conf run."""
    out = []
    listing = http_json("GET", hdfs.webhdfs(path, "LISTSTATUS"))
    for st in listing["FileStatuses"]["FileStatus"]:
        child = path.rstrip("/") + "/" + st["pathSuffix"]
        out.append(child)
        if st["type"] == "DIRECTORY":
            out += namespace(hdfs, child)
    return out


def start_scratch(a, procs):
    """--conf-self-test: the scratch cluster in another process (bench.py
    --serve-cluster); returns (process, conf dir, stock class path)."""
    root = os.path.join(a.work, "selftest")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    argv = [sys.executable, os.path.abspath(__file__), "--serve-cluster",
            root, "--start-timeout", str(a.start_timeout)]
    if a.java:
        argv += ["--java", a.java]
    log("--conf-self-test: starting a scratch UCX cluster (1 NameNode + %d "
        "DataNodes) in another process under %s" % (DATANODES, root))
    p = procs.spawn(argv, os.path.join(root, "serve.log"),
                    name="scratch cluster")
    deadline = time.monotonic() + a.start_timeout + 120
    ready = os.path.join(root, "ready")
    while not os.path.exists(ready):
        if not procs.alive(p):
            raise HarnessError("the scratch cluster failed (rc %s); see %s"
                               % (p.returncode, root + "/serve.log"))
        if time.monotonic() > deadline:
            raise HarnessError("the scratch cluster did not come up; see %s"
                               % (root + "/serve.log"))
        time.sleep(0.5)
    with open(ready) as f:
        conf = f.read().strip()
    with open(os.path.join(root, "stock.classpath")) as f:
        cp = f.read().strip()
    return p, conf, cp


def main(argv):
    a = parse_args(argv)
    if a.serve_cluster:
        return serve_cluster(a)
    bench = Bench(a)
    bench.t0 = time.monotonic()
    bench.started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    bench.load_start = " ".join(open("/proc/loadavg").read().split()[:3])
    if bench.java is None:
        print("no java on PATH (run through benchmarks/run.sh)",
              file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    fstype = subprocess.run(["stat", "-f", "-c", "%T", a.work],
                            capture_output=True, text=True).stdout.strip()
    if fstype in ("tmpfs", "ramfs") and not a.conf:
        bench.note("%s is on %s: DataNode storage should be on disk "
                   "(--work)" % (a.work, fstype))
    on_signals()

    log("profile %s, results in %s, work in %s%s" % (
        a.profile, a.out, a.work, "; --conf %s" % a.conf if a.conf else ""))
    rc = 0
    scratch = None
    before = None
    try:
        complete = False
        try:
            if a.conf_self_test:
                scratch, a.conf, cp = start_scratch(a, bench.procs)
                a.hadoop_classpath = a.hadoop_classpath or cp
                a.stock_classpath = a.stock_classpath or cp
                probe = ExistingCluster(a.conf, "/")
                probe.nn_http = probe.find_namenode()
                # Something of someone else's the run must leave alone.
                probe.mkdirs("/hdfs-rdma-selftest-keep")
                before = namespace(probe)
            if a.conf:
                bench.connect_existing()
            else:
                if bench.hosts:
                    bench.hosts.up()
                    bench.hosts.enter()
                bench.start_clusters()
            bench.warmup()
            if a.flamegraphs:
                bench.flamegraphs()
            if not a.scale and not a.flamegraphs_only:
                bench.sweep()
            if not a.no_scale and a.writers and not a.flamegraphs_only:
                bench.scale()
            complete = True
        finally:
            log("stopping the clusters" if not a.conf else
                "deleting %s (the cluster keeps running)" % a.hdfs_dir)
            bench.stop_clusters(complete)
            if before is not None and complete:
                after = namespace(probe)
                if after != before:
                    bench.fail("--conf-self-test: HDFS differs after the run:"
                               " added %s, removed %s" % (
                                   sorted(set(after) - set(before)),
                                   sorted(set(before) - set(after))))
                else:
                    log("--conf-self-test: HDFS holds what it held before "
                        "the run (%s)" % ", ".join(after))
            if scratch is not None:
                log("--conf-self-test: stopping the scratch cluster")
                bench.procs.stop([scratch], grace=40.0)
    except HarnessError as e:
        bench.fail(str(e))
        rc = 1
    except KeyboardInterrupt:
        warn("interrupted")
        rc = 130
    except Exception as e:
        import traceback
        traceback.print_exc()
        bench.fail("harness error: %r" % e)
        rc = 1
    finally:
        bench.procs.stop_all()
        if bench.hosts:
            bench.hosts.leave()
            bench.hosts.down()
        if not a.keep_work:
            for d in ("clusters", "inputs", "selftest"):
                shutil.rmtree(os.path.join(a.work, d), ignore_errors=True)
            for f in ("hadoop.classpath", "fanout.out"):
                if os.path.exists(os.path.join(a.work, f)):
                    os.unlink(os.path.join(a.work, f))
    bench.interrupted = rc == 130
    try:
        # Also after an interruption or a failure: what was measured so far.
        target_rows = finish(bench)
    except Exception as e:  # the results are the point: say why not
        bench.fail("writing results failed: %r" % e)
        raise
    if bench.failures:
        rc = rc or 1
        print("\nHARNESS FAILURES:\n  " + "\n  ".join(bench.failures),
              file=sys.stderr)
    with open(os.path.join(a.out, "summary.md")) as f:
        print("\n" + f.read())
    for t in target_rows:
        log("target %s %s %.2f: %s (worst %s)" % (
            t["target"], t["sense"], t["limit"], t["result"],
            fmt(t["worst"])))
    log("results in %s (%.1f min)" % (a.out,
                                      (time.monotonic() - bench.t0) / 60))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
