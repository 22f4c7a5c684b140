#!/usr/bin/env python3
"""Put latency of stock HDFS 2.9.2 against the UCX write path (hdfs-rdma).

Two clusters, each a NameNode and four DataNodes as separate JVMs on
loopback with storage on disk, stay up for the whole run: STOCK (the stock
2.9.2 jars only) and UCX (the drop-in jar as -javaagent:, UCX on). Every
put is `FsShell -put` in its own JVM, as `hdfs dfs -put` runs it, and puts
alternate stock, UCX, stock, UCX on the same file; each HDFS file is
deleted after its put so both clusters stay in the same state. Next to
them, in the same run: the machine's limit (a plain local copy of the same
bytes into r DataNode storage directories, and the native UCX fan-out
benchmark), concurrent writers, and a linear fit of cost against size.

Called by benchmarks/run.sh (which sets up Java); see benchmarks/README.md.
Never asserts timings: it fails only when the harness breaks (a cluster does
not start, a put fails, a file reads back different, or a UCX put moved no
bytes over UCX).
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
import re
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
SYSTEMS = ("stock", "ucx")

PROFILES = {
    # CI: proves the harness works end to end, in a couple of minutes.
    "tiny": dict(sizes=[1 * MiB, 16 * MiB], reps=[1, 3], runs=1,
                 writers=[1, 2], writer_size=16 * MiB, scale_reps=[3],
                 scale_runs=1, verify="all", warmup=16 * MiB),
    # The default: 1 MiB to 512 MiB, under 10 minutes on 2 cores.
    "small": dict(sizes=[1 * MiB, 16 * MiB, 128 * MiB, 512 * MiB],
                  reps=[1, 3], runs=3, writers=[1, 2, 4],
                  writer_size=128 * MiB, scale_reps=[3], scale_runs=1,
                  verify="first", warmup=128 * MiB),
    # The paper's sizes (Figs. 6 and 7) and the scale study.
    "paper": dict(sizes=[1 * MiB, 16 * MiB, 128 * MiB, 1 * GiB, 2 * GiB,
                         3 * GiB, 4 * GiB, 5 * GiB],
                  reps=[1, 3], runs=3, writers=[1, 2, 4, 8],
                  writer_size=512 * MiB, scale_reps=[3, 1], scale_runs=3,
                  verify="first", warmup=128 * MiB),
}

# Targets of the issue, as ratios UCX / stock measured in the same run.
WALL_TARGET_LARGE = {1: 0.59, 3: 0.74}   # files of 1 GiB and more
WALL_TARGET_SMALL = 1.05                 # files of 16 MiB and less
CPU_TARGET = 0.5                         # client CPU s/GiB, files >= 1 GiB


def wall_target(size, rep):
    if size >= GiB:
        return WALL_TARGET_LARGE.get(rep)
    if size <= 16 * MiB:
        return WALL_TARGET_SMALL
    return None


def cpu_target(size):
    return CPU_TARGET if size >= GiB else None


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


def free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


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


def jmx(port, query):
    """The beans matching `query` on the daemon's http port ([] if none)."""
    url = "http://127.0.0.1:%d/jmx?qry=%s" % (port, urllib.parse.quote(
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


class Cluster:
    def __init__(self, name, root, java, classpath, ucx, procs, agent=None):
        self.name = name
        self.agent = agent              # the drop-in jar, as -javaagent:
        self.root = root
        self.java = java
        self.ucx = ucx
        self.procs = procs
        self.conf = os.path.join(root, "conf")
        self.classpath = "%s:%s" % (self.conf, classpath)
        ports = free_ports(2 + 3 * DATANODES)
        self.nn_rpc, self.nn_http = ports[:2]
        self.dn_ports = [tuple(ports[2 + 3 * i:5 + 3 * i])
                         for i in range(DATANODES)]  # (data, http, ipc)
        self.data_dirs = [os.path.join(root, "data%d" % (i + 1))
                          for i in range(DATANODES)]
        self.nn = None
        self.dns = []
        self.user = os.environ.get("USER") or __import__("pwd").getpwuid(
            os.getuid()).pw_name

    def dn_stats_file(self, i):
        return os.path.join(self.root, "ucx-totals-dn%d.txt" % (i + 1))

    def write_conf(self):
        os.makedirs(self.conf)
        core = [("fs.defaultFS", "hdfs://127.0.0.1:%d" % self.nn_rpc),
                ("hadoop.tmp.dir", os.path.join(self.root, "tmp"))]
        hdfs = [("dfs.replication", "3"),
                ("dfs.namenode.name.dir", os.path.join(self.root, "name")),
                ("dfs.namenode.http-address", "127.0.0.1:%d" % self.nn_http),
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
        for fname, text in (("core-site.xml", xml_conf(core)),
                            ("hdfs-site.xml", xml_conf(hdfs)),
                            ("log4j.properties", LOG4J),
                            ("hadoop-metrics2.properties", METRICS2)):
            with open(os.path.join(self.conf, fname), "w") as f:
                f.write(text)

    def jvm(self, *args, heap="1g", props=(), daemon=True):
        # Hadoop 2.9's web server (WebHDFS, used here to verify and delete
        # files) needs java.lang opened on Java 17; the same on both clusters.
        opens = ["--add-opens", "java.base/java.lang=ALL-UNNAMED"] \
            if daemon else []
        agent = ["-javaagent:" + self.agent] if self.agent else []
        return [self.java, "-Xmx" + heap, "-Djava.net.preferIPv4Stack=true"] \
            + agent + opens + list(props) + ["-cp", self.classpath] \
            + list(args)

    def format(self):
        return self.procs.spawn(
            self.jvm("org.apache.hadoop.hdfs.server.namenode.NameNode",
                     "-format", "-force", "-nonInteractive"),
            os.path.join(self.root, "format.log"), name=self.name + "-format")

    def start(self):
        self.nn = self.procs.spawn(
            self.jvm("org.apache.hadoop.hdfs.server.namenode.NameNode"),
            os.path.join(self.root, "nn.log"), name=self.name + "-nn")
        for i in range(DATANODES):
            data, http_port, ipc = self.dn_ports[i]
            props = ["-Dhdfsrdma.stats.file=" + self.dn_stats_file(i)] \
                if self.ucx else []
            self.dns.append(self.procs.spawn(
                self.jvm("org.apache.hadoop.hdfs.server.datanode.DataNode",
                         "-D", "dfs.datanode.data.dir=" + self.data_dirs[i],
                         "-D", "dfs.datanode.address=127.0.0.1:%d" % data,
                         "-D", "dfs.datanode.http.address=127.0.0.1:%d"
                         % http_port,
                         "-D", "dfs.datanode.ipc.address=127.0.0.1:%d" % ipc,
                         props=props),
                os.path.join(self.root, "dn%d.log" % (i + 1)),
                name="%s-dn%d" % (self.name, i + 1)))

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
            for _, http_port, _ in self.dn_ports:
                jmx(http_port, "java.lang:type=Runtime")
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

    # -- measurements ------------------------------------------------------

    def dn_cpu(self):
        return sum(cpu_seconds(p.pid) for p in self.dns)

    def nn_cpu(self):
        return cpu_seconds(self.nn.pid)

    def dn_counters(self):
        """Numeric attributes summed over the DataNodes: the DataNode's own
        activity metrics (prefix activity.) and, where present, the
        hdfs-rdma bean (prefix rdma.). Missing beans are simply absent."""
        total = {}
        for _, http_port, _ in self.dn_ports:
            for query, prefix in ((ACTIVITY_BEAN, "activity."),
                                  (RDMA_BEAN, "rdma.")):
                try:
                    beans = jmx(http_port, query)
                except (OSError, ValueError):
                    beans = []
                for bean in beans:
                    for k, v in numeric_attrs(bean).items():
                        total[prefix + k] = total.get(prefix + k, 0) + v
        return total

    # -- WebHDFS -----------------------------------------------------------

    def webhdfs(self, path, op, **params):
        params.update(op=op, **{"user.name": self.user})
        return "http://127.0.0.1:%d/webhdfs/v1%s?%s" % (
            self.nn_http, urllib.parse.quote(path),
            urllib.parse.urlencode(params))

    def mkdirs(self, path):
        http_json("PUT", self.webhdfs(path, "MKDIRS"))

    def delete(self, path):
        http_json("DELETE", self.webhdfs(path, "DELETE", recursive="true"))

    def status(self, path):
        return http_json("GET", self.webhdfs(path, "GETFILESTATUS"))[
            "FileStatus"]

    def sha256(self, path):
        """Reads the file back through WebHDFS (NameNode redirect to a
        DataNode, followed to 127.0.0.1) and hashes it."""
        try:
            http("GET", self.webhdfs(path, "OPEN"))
            raise HarnessError("WebHDFS OPEN did not redirect")
        except urllib.error.HTTPError as e:
            if e.code not in (302, 307):
                raise
            loc = urllib.parse.urlsplit(e.headers["Location"])
        url = loc._replace(netloc="127.0.0.1:%d" % loc.port).geturl()
        h = hashlib.sha256()
        n = 0
        with http("GET", url, timeout=120) as r:
            while True:
                chunk = r.read(4 * MiB)
                if not chunk:
                    break
                h.update(chunk)
                n += len(chunk)
        return h.hexdigest(), n

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

class Bench:
    def __init__(self, args):
        self.args = args
        self.procs = Procs()
        self.out = args.out
        self.work = args.work
        self.failures = []
        self.warnings = []
        self.ucx_expected_bytes = 0     # size x rep over all UCX puts
        self.put_rows = []
        self.limit_rows = []
        self.scale_rows = []
        self.inputs = {}                # (size, index) -> (path, sha256)
        self.rdma_bean_seen = False
        self.clusters = {}
        self.java = shutil.which("java")
        self.idle_cpu = {}
        self.interrupted = False
        self.ucx_totals = {}
        self.seq = 0

    def fail(self, msg):
        """A harness failure: recorded, the run carries on where it can."""
        warn(msg)
        self.failures.append(msg)

    def note(self, msg):
        warn(msg)
        self.warnings.append(msg)

    def ucx_problem(self, msg):
        """The UCX path did not carry the data: a harness failure in --tiny
        (CI proves the path is used), a warning in measurement runs."""
        if self.args.profile == "tiny":
            self.fail(msg)
        else:
            self.note(msg)

    # -- set-up ------------------------------------------------------------

    def classpath(self):
        cp_file = os.path.join(self.work, "hadoop.classpath")
        subprocess.run(
            ["mvn", "-B", "-q", "-ntp", "-pl", "hadoop-hdfs-rdma",
             "dependency:build-classpath", "-Dmdep.outputFile=" + cp_file,
             "-Dmdep.includeScope=provided"], cwd=REPO, check=True,
            stdout=subprocess.DEVNULL)
        with open(cp_file) as f:
            jars = f.read().strip().split(":")
        # The stock class path: Hadoop 2.9.2's jars and their dependencies,
        # nothing of hdfs-rdma (the bridge and JUCX come with the drop-in).
        stock = [j for j in jars if not re.search(
            r"/(jucx-[^/]*|jucx-bridge-[^/]*|hadoop-hdfs-rdma-[^/]*)\.jar$",
            j)]
        dropins = [os.path.join(REPO, "hadoop-hdfs-rdma", "target", f)
                   for f in sorted(os.listdir(os.path.join(
                       REPO, "hadoop-hdfs-rdma", "target")))
                   if re.fullmatch(r"hadoop-hdfs-rdma-.*-dropin\.jar", f)] \
            if os.path.isdir(os.path.join(REPO, "hadoop-hdfs-rdma",
                                          "target")) else []
        if not dropins:
            raise HarnessError("no drop-in jar: build first (mvn -DskipTests "
                               "install, or dev-support/setup.sh)")
        self.dropin = dropins[0]
        return ":".join(stock)

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
        cp = self.classpath()
        root = os.path.join(self.work, "clusters")
        shutil.rmtree(root, ignore_errors=True)
        for name in SYSTEMS:
            os.makedirs(os.path.join(root, name))
            ucx = name == "ucx"
            c = Cluster(name, os.path.join(root, name), self.java, cp, ucx,
                        self.procs, agent=self.dropin if ucx else None)
            c.write_conf()
            self.clusters[name] = c
        fmt = [c.format() for c in self.clusters.values()]
        done = self.procs.wait_all(fmt, 120)
        for c, p in zip(self.clusters.values(), fmt):
            if done[p.pid][1] != 0:
                raise HarnessError("%s: NameNode -format failed; see %s"
                                   % (c.name, c.root + "/format.log"))
        for c in self.clusters.values():
            c.start()
        log("starting 2 clusters (1 NameNode + %d DataNodes each) under %s"
            % (DATANODES, root))
        t0 = time.monotonic()
        pending = set(self.clusters)
        while pending:
            for name in sorted(pending):
                if self.clusters[name].ready():
                    pending.discard(name)
                    log("%s cluster up after %.1f s (NameNode rpc %d http %d)"
                        % (name, time.monotonic() - t0,
                           self.clusters[name].nn_rpc,
                           self.clusters[name].nn_http))
            if pending and time.monotonic() - t0 > self.args.start_timeout:
                raise HarnessError("cluster(s) %s did not come up in %d s; "
                                   "see %s/*/*.log" % (
                                       ", ".join(sorted(pending)),
                                       self.args.start_timeout, root))
            if pending:
                time.sleep(0.5)
        missing = self.clusters["ucx"].check_ucx_started()
        if missing:
            self.fail("UCX DataNode(s) %s did not log 'serves the UCX data "
                      "path'" % missing)
        for c in self.clusters.values():
            c.mkdirs("/bench")
        # What the idle clusters cost the machine (a DataNode that spins
        # while idle would slow the other cluster's puts too).
        before = {n: c.dn_cpu() + c.nn_cpu()
                  for n, c in self.clusters.items()}
        time.sleep(3.0)
        self.idle_cpu = {n: (c.dn_cpu() + c.nn_cpu() - before[n]) / 3.0
                         for n, c in self.clusters.items()}
        log("idle cluster CPU (cores busy): " + ", ".join(
            "%s %.3f" % kv for kv in sorted(self.idle_cpu.items())))
        rdma = self.clusters["ucx"].dn_counters()
        self.rdma_bean_seen = any(k.startswith("rdma.") for k in rdma)
        if not self.rdma_bean_seen:
            self.note("no %s bean on the UCX DataNodes: per-put DataNode UCX"
                      " counters are n/a (the exit totals still count)"
                      % RDMA_BEAN)

    @property
    def cluster_pids(self):
        return {pid for c in self.clusters.values() for pid in c.pids}

    # -- one batch of puts -------------------------------------------------

    def put_batch(self, system, files, rep, tag, verify, jvm_props=()):
        """Runs one FsShell -put JVM per local file, all at once, on the
        given cluster; returns one dict per put plus the batch wall time.
        `jvm_props`: extra JVM options of the put JVMs (a profiler)."""
        c = self.clusters[system]
        c.wait_clean()
        stats_dir = os.path.join(self.out, "logs")
        os.makedirs(stats_dir, exist_ok=True)
        jobs = []
        for i, (path, digest) in enumerate(files):
            self.seq += 1
            target = "/bench/%s-%s-%d" % (tag, system, i)
            base = os.path.join(stats_dir, "%04d-%s-%s-%d" % (
                self.seq, tag, system, i))
            props = list(jvm_props)
            if c.ucx:
                props.append("-Dhdfsrdma.stats.file=" + base + ".ucx")
            argv = c.jvm("org.apache.hadoop.fs.FsShell", "-D",
                         "dfs.replication=%d" % rep, "-put", path, target,
                         heap="1000m", props=props, daemon=False)
            jobs.append(dict(path=path, digest=digest, target=target,
                             log=base + ".log", stats=base + ".ucx",
                             argv=argv))
        total = sum(os.path.getsize(j["path"]) for j in jobs)
        timeout = 180 + total * max(1, rep) / (5e6)
        before_ctr = c.dn_counters()   # first: JMX reads cost DataNode CPU
        switches = ContextSwitches([p.pid for p in c.dns]).start()
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
        dn_cpu = c.dn_cpu() - before_dn
        nn_cpu = c.nn_cpu() - before_nn
        dn_switches = switches.stop()
        # metrics2 JMX values lag up to one period (1 s, see METRICS2).
        time.sleep(max(0.0, 1.2 - (time.monotonic() - t1)))
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
            if c.ucx and os.path.exists(j["stats"]):
                with open(j["stats"]) as f:
                    j["client_stats"] = parse_stats(f.read())
        after_ctr = c.dn_counters()
        for j in jobs:
            c.delete(j["target"])
        delta = {k: after_ctr[k] - before_ctr.get(k, 0) for k in after_ctr}
        written = delta.get("activity.BytesWritten")
        if written is not None and written != total * rep:
            self.note("%s %s: the DataNodes wrote %d bytes, expected %d "
                      "(size x replication)" % (system, tag, written,
                                                total * rep))
        if c.ucx:
            self.ucx_expected_bytes += total * rep
        return jobs, t1 - t0, dn_cpu, nn_cpu, delta, total

    def check_ucx(self, jobs, delta, total, rep, where):
        """Whether the UCX puts moved their bytes by UCX get; returns the
        DataNodes' fetched-bytes delta (None without the rdma bean)."""
        sent = sum(j["client_stats"].get("ucx-data-bytes-sent", 0) or 0
                   for j in jobs)
        if not any(j["client_stats"] for j in jobs):
            self.ucx_problem("%s: the UCX client wrote no stats file (its UCX "
                             "runtime never started)" % where)
        elif sent == 0:
            self.ucx_problem("%s: the UCX client sent no bytes by UCX "
                             "(ucx-data-bytes-sent=0)" % where)
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
        return fetched

    def put_row(self, system, size, rep, run, jobs, dn_cpu, nn_cpu, delta,
                kind="put"):
        j = jobs[0]
        cs = j["client_stats"]
        row = dict(kind=kind, system=system, size_bytes=size,
                   size=human(size), rep=rep, run=run,
                   wall_s=round(j["wall"], 4), client_cpu_s=round(j["cpu"], 3),
                   dn_cpu_s=round(dn_cpu, 3), nn_cpu_s=round(nn_cpu, 3),
                   client_csw_voluntary=j["switches"][0],
                   client_csw_involuntary=j["switches"][1],
                   dn_csw_voluntary=j["dn_switches"][0],
                   dn_csw_involuntary=j["dn_switches"][1],
                   packets=packets_of(size),
                   dn_bytes_written=delta.get("activity.BytesWritten"),
                   ucx_bytes_sent=cs.get("ucx-data-bytes-sent"),
                   ucx_bytes_fetched=None,
                   transport=str(cs.get("transports", "")).replace("_", " ")
                   if system == "ucx" else "tcp (stock)",
                   verified=j["verified"])
        if system == "ucx":
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
        size = min(self.args.warmup, max(self.args.sizes))
        if size <= 0:
            return
        path, digest = self.make_input(size)
        log("warm-up: one %s put at replication 3 per cluster (not recorded)"
            % human_long(size))
        for system in SYSTEMS:
            jobs, _, _, _, delta, total = self.put_batch(
                system, [(path, digest)], 3, "warmup", True)
            if system == "ucx":
                self.check_ucx(jobs, delta, total, 3, "warm-up")

    def sweep(self):
        a = self.args
        for size in a.sizes:
            path, digest = self.make_input(size)
            for rep in a.reps:
                for run in range(1, a.runs + 1):
                    verify = a.verify == "all" or (a.verify == "first"
                                                   and run == 1)
                    walls = {}
                    for system in SYSTEMS:
                        tag = "put-%s-r%d-%d" % (human(size), rep, run)
                        jobs, _, dn_cpu, nn_cpu, delta, total = \
                            self.put_batch(system, [(path, digest)], rep,
                                           tag, verify)
                        if system == "ucx":
                            self.check_ucx(jobs, delta, total, rep, tag)
                        row = self.put_row(system, size, rep, run, jobs,
                                           dn_cpu, nn_cpu, delta)
                        self.put_rows.append(row)
                        walls[system] = row["wall_s"]
                    lim = self.limit(size, rep, run, path)
                    log("%6s rep %d run %d: stock %.2f s, ucx %.2f s, "
                        "copy %.2f s, fan-out %s s" % (
                            human(size), rep, run, walls["stock"],
                            walls["ucx"], lim["copy_s"],
                            fmt(lim["fanout_s"], 3)))

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
        for system in SYSTEMS:
            c = self.clusters[system]
            for kind in ("collapsed", "html"):
                name = "%s-%s-r%d" % (system, human(size), rep)
                opt = ",collapsed" if kind == "collapsed" else ""
                for p in c.dns:
                    self.jcmd_profiler(p.pid, "start," + event)
                client = os.path.join(d, "client-%s.%s" % (name, kind))
                agent = "-agentpath:%s=start,%s%s,file=%s" % (
                    lib, event, opt, client)
                try:
                    jobs, _, dn_cpu, _, delta, total = self.put_batch(
                        system, [(path, digest)], rep, "profile-" + kind,
                        False, jvm_props=[agent])
                finally:
                    for i, p in enumerate(c.dns):
                        self.jcmd_profiler(p.pid, "stop%s,file=%s" % (
                            opt, os.path.join(d, "dn%d-%s.%s" % (
                                i + 1, name, kind))))
                if system == "ucx":
                    self.check_ucx(jobs, delta, total, rep, "profile")
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
                    for system in SYSTEMS:
                        tag = "scale-%dx%s-r%d-%d" % (n, human(size), rep, run)
                        jobs, batch, dn_cpu, nn_cpu, delta, total = \
                            self.put_batch(system, files[:n], rep, tag,
                                           a.verify == "all")
                        fetched = None
                        if system == "ucx":
                            fetched = self.check_ucx(jobs, delta, total, rep,
                                                     tag)
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
                                   dn_cpu_s=round(dn_cpu, 3),
                                   dn_bytes_written=delta.get(
                                       "activity.BytesWritten"),
                                   ucx_bytes_fetched=fetched)
                        self.scale_rows.append(row)
                        res[system] = row
                    log("scale %d x %s rep %d run %d: stock %.1f MiB/s "
                        "(%.2f s), ucx %.1f MiB/s (%.2f s)" % (
                            n, human(size), rep, run,
                            res["stock"]["aggregate_mib_s"],
                            res["stock"]["batch_wall_s"],
                            res["ucx"]["aggregate_mib_s"],
                            res["ucx"]["batch_wall_s"]))

    # -- the end -----------------------------------------------------------

    def stop_clusters(self, complete):
        """Stops both clusters; with `complete` (no put was cut short),
        checks the UCX DataNodes' exit totals against every UCX put."""
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
        if totals.get("blocks-over-tcp"):
            self.note("UCX DataNodes received %d client block(s) over TCP"
                      % totals["blocks-over-tcp"])


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
    rows = bench.put_rows
    keys = sorted({(r["size_bytes"], r["rep"]) for r in rows})
    summary = []
    for size, rep in keys:
        sel = {s: [r for r in rows if r["size_bytes"] == size
                   and r["rep"] == rep and r["system"] == s] for s in SYSTEMS}
        lims = [r for r in bench.limit_rows if r["size_bytes"] == size
                and r["rep"] == rep]
        m = {}
        for s in SYSTEMS:
            for col in ("wall_s", "client_cpu_s", "dn_cpu_s"):
                m[s, col] = median([r[col] for r in sel[s]])
        lim = median([r["limit_s"] for r in lims])
        gib = size / GiB
        wr = ratio(m["ucx", "wall_s"], m["stock", "wall_s"])
        cr = ratio(m["ucx", "client_cpu_s"], m["stock", "client_cpu_s"])
        wt, ct = wall_target(size, rep), cpu_target(size)
        fetched = [r["ucx_bytes_fetched"] for r in sel["ucx"]
                   if r["ucx_bytes_fetched"] is not None]
        transports = sorted({r["transport"] for r in sel["ucx"]
                             if r["transport"]})
        summary.append(dict(
            size_bytes=size, size=human(size), rep=rep,
            runs=min(len(sel["stock"]), len(sel["ucx"])),
            stock_wall_s=m["stock", "wall_s"], ucx_wall_s=m["ucx", "wall_s"],
            wall_ratio=wr, wall_target=wt,
            wall_result=None if wt is None or wr is None else
            ("pass" if wr <= wt else "miss"),
            stock_client_cpu_s=m["stock", "client_cpu_s"],
            ucx_client_cpu_s=m["ucx", "client_cpu_s"],
            stock_client_cpu_s_per_gib=ratio(m["stock", "client_cpu_s"], gib),
            ucx_client_cpu_s_per_gib=ratio(m["ucx", "client_cpu_s"], gib),
            client_cpu_ratio=cr, client_cpu_target=ct,
            client_cpu_result=None if ct is None or cr is None else
            ("pass" if cr <= ct else "miss"),
            stock_dn_cpu_s=m["stock", "dn_cpu_s"],
            ucx_dn_cpu_s=m["ucx", "dn_cpu_s"],
            copy_s=median([r["copy_s"] for r in lims]),
            fanout_s=median([r["fanout_s"] for r in lims]),
            limit_s=lim,
            stock_put_over_limit=ratio(m["stock", "wall_s"], lim),
            ucx_put_over_limit=ratio(m["ucx", "wall_s"], lim),
            ucx_bytes_fetched_median=median(fetched) if fetched else None,
            ucx_bytes_expected=size * rep,
            transport="; ".join(transports)))
    for r in summary:
        for k, v in r.items():
            if isinstance(v, float):
                r[k] = round(v, 4)
    return summary


def fits(bench):
    out = []
    for rep in sorted({r["rep"] for r in bench.put_rows}):
        for s in SYSTEMS:
            sel = [r for r in bench.put_rows if r["rep"] == rep
                   and r["system"] == s]
            for metric in ("wall_s", "client_cpu_s", "dn_cpu_s"):
                xs = [r["size_bytes"] / GiB for r in sel]
                ys = [r[metric] for r in sel]
                f = linfit(xs, ys)
                if f is None:
                    continue
                out.append(dict(system=s, rep=rep, metric=metric,
                                points=len(xs),
                                sizes=" ".join(sorted(
                                    {r["size"] for r in sel},
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
        for s in SYSTEMS:
            sel = [r for r in bench.scale_rows if r["writers"] == n and
                   r["rep"] == rep and r["system"] == s]
            m[s] = dict(
                agg=median([r["aggregate_mib_s"] for r in sel]),
                lat=median([r["writer_wall_median_s"] for r in sel]),
                cpu=median([r["client_cpu_s"] for r in sel]))
        out.append(dict(writers=n, size=human(size), rep=rep,
                        stock_aggregate_mib_s=m["stock"]["agg"],
                        ucx_aggregate_mib_s=m["ucx"]["agg"],
                        aggregate_ratio=ratio(m["ucx"]["agg"],
                                              m["stock"]["agg"]),
                        stock_writer_latency_s=m["stock"]["lat"],
                        ucx_writer_latency_s=m["ucx"]["lat"],
                        latency_ratio=ratio(m["ucx"]["lat"],
                                            m["stock"]["lat"]),
                        stock_client_cpu_s=m["stock"]["cpu"],
                        ucx_client_cpu_s=m["ucx"]["cpu"]))
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
    fs = cmd(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "-T", bench.work])
    java = cmd([bench.java, "-version"]).splitlines()
    return [
        ("machine", "%s, %d cores, %.0f GiB RAM, %s" % (
            cpu, os.cpu_count(), mem / GiB, platform.platform())),
        ("load average at start", bench.load_start),
        ("DataNode storage", "%s (%s)" % (bench.work, fs)),
        ("Java", java[0] if java else "n/a"),
        ("Hadoop", "2.9.2 (Maven Central jars); UCX path: %s"
         % os.path.basename(getattr(bench, "dropin", "n/a"))),
        ("UCX", cmd(["ucx_info", "-v"]).splitlines()[0].lstrip("# ")
         if shutil.which("ucx_info") else "n/a"),
        ("commit", git),
        ("command", " ".join(["benchmarks/run.sh"] + bench.args.argv)),
    ]


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(v) if not isinstance(v, str)
                                        else v for v in r) + " |")
    return "\n".join(lines)


def write_summary_md(bench, summary, fit_rows, scale_sum, transfer):
    a = bench.args
    out = ["# Put latency: stock HDFS 2.9.2 against the UCX path", ""]
    out += ["- %s: %s" % (k, v) for k, v in machine_info(bench)]
    out += ["- profile: %s; sizes %s; replication %s; %d run(s) each, "
            "alternating stock, UCX; input files page-cached" % (
                a.profile, ", ".join(human(s) for s in a.sizes),
                ", ".join(map(str, a.reps)), a.runs),
            "- started %s, took %.1f min%s" % (bench.started, (
                time.monotonic() - bench.t0) / 60,
                "; INTERRUPTED: partial results" if bench.interrupted
                else ""), ""]
    out += ["## Put latency (median of runs)", "",
            "Wall time of the FsShell -put JVM, launch to exit; client CPU "
            "= user+sys of that JVM; DataNode CPU = user+sys summed over the "
            "4 DataNodes during the put. Limit = max(local copy x r, UCX "
            "fan-out of 64 KiB packets to r getters).", ""]
    out.append(md_table(
        ["size", "rep", "stock s", "UCX s", "UCX/stock", "target",
         "client CPU s stock / UCX", "CPU ratio", "CPU target",
         "DN CPU s stock / UCX", "limit s (copy / fan-out)",
         "stock/limit", "UCX/limit", "UCX bytes fetched / expected",
         "UCX transport"],
        [[r["size"], str(r["rep"]), r["stock_wall_s"], r["ucx_wall_s"],
          r["wall_ratio"],
          "" if r["wall_target"] is None else "<= %.2f %s" % (
              r["wall_target"], r["wall_result"] or ""),
          "%s / %s" % (fmt(r["stock_client_cpu_s"]),
                       fmt(r["ucx_client_cpu_s"])),
          r["client_cpu_ratio"],
          "" if r["client_cpu_target"] is None else "<= %.2f %s" % (
              r["client_cpu_target"], r["client_cpu_result"] or ""),
          "%s / %s" % (fmt(r["stock_dn_cpu_s"]), fmt(r["ucx_dn_cpu_s"])),
          "%s (%s / %s)" % (fmt(r["limit_s"]), fmt(r["copy_s"]),
                            fmt(r["fanout_s"], 3)),
          r["stock_put_over_limit"], r["ucx_put_over_limit"],
          "%s / %d" % (fmt(r["ucx_bytes_fetched_median"]),
                       r["ucx_bytes_expected"]),
          r["transport"] or "n/a"] for r in summary]))
    out += ["", "Plots: %s" % ", ".join(
        "[put-latency-rep%d.png](put-latency-rep%d.png)" % (r, r)
        for r in sorted({r["rep"] for r in summary})), ""]
    if fit_rows:
        out += ["## Cost against file size (least squares over every put)",
                ""]
        out.append(md_table(
            ["system", "rep", "metric", "slope s/GiB", "intercept s", "R²",
             "points", "sizes"],
            [[r["system"], str(r["rep"]), r["metric"], r["slope_s_per_gib"],
              r["intercept_s"], "%.4f" % r["r2"], str(r["points"]),
              r["sizes"]] for r in fit_rows]))
        out.append("")
    if scale_sum:
        out += ["## Concurrent writers (median of runs)", "",
                "Aggregate = bytes of all writers / wall time of the batch; "
                "latency = median over the writers of each put's wall time.",
                ""]
        out.append(md_table(
            ["writers", "size", "rep", "stock MiB/s", "UCX MiB/s",
             "UCX/stock", "stock latency s", "UCX latency s", "UCX/stock",
             "client CPU s stock / UCX"],
            [[str(r["writers"]), r["size"], str(r["rep"]),
              r["stock_aggregate_mib_s"], r["ucx_aggregate_mib_s"],
              r["aggregate_ratio"], r["stock_writer_latency_s"],
              r["ucx_writer_latency_s"], r["latency_ratio"],
              "%s / %s" % (fmt(r["stock_client_cpu_s"]),
                           fmt(r["ucx_client_cpu_s"]))] for r in scale_sum]))
        out += ["", "Plot: [scale.png](scale.png)", ""]
    totals = bench.ucx_totals
    out += ["## What the UCX path carried", "",
            "- UCX DataNodes' exit totals over the whole run (warm-up, "
            "sweep and scale): %s" % (" ".join(
                "%s=%s" % kv for kv in sorted(totals.items())) or "n/a"),
            "- expected bytes fetched (size x replication of every UCX put):"
            " %d" % bench.ucx_expected_bytes,
            "- idle clusters' CPU (NameNode + DataNodes, cores busy): %s"
            % (", ".join("%s %.3f" % kv for kv in sorted(
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
    colors = {"stock": "tab:blue", "ucx": "tab:orange"}
    labels = {"stock": "stock HDFS 2.9.2", "ucx": "hdfs-rdma (UCX get)"}
    for rep in sorted({r["rep"] for r in summary}):
        rows = [r for r in summary if r["rep"] == rep]
        sizes = [r["size_bytes"] for r in rows]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for s in SYSTEMS:
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
            if r["wall_ratio"] is not None:
                ax.annotate("%.2f" % r["wall_ratio"],
                            (r["size_bytes"] / MiB, max(r["ucx_wall_s"],
                                                        r["stock_wall_s"])),
                            textcoords="offset points", xytext=(0, 7),
                            ha="center", fontsize=8, color=colors["ucx"])
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator([x / MiB for x in sizes]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([human_long(x) for x in sizes], rotation=30)
        ax.set_xlabel("file size")
        ax.set_ylabel("put latency, s (FsShell JVM launch to exit)")
        ax.set_ylim(bottom=0)
        ax.set_title("Put latency, replication %d (1 NameNode + %d "
                     "DataNodes); numbers: UCX/stock" % (rep, DATANODES),
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
            for s in SYSTEMS:
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
    if bench.args.no_transfer:
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
    write_csv(os.path.join(bench.out, "puts.csv"), bench.put_rows)
    write_csv(os.path.join(bench.out, "limit.csv"), bench.limit_rows)
    write_csv(os.path.join(bench.out, "summary.csv"), summary)
    write_csv(os.path.join(bench.out, "fit.csv"), fit_rows)
    write_csv(os.path.join(bench.out, "scale.csv"), bench.scale_rows)
    write_csv(os.path.join(bench.out, "scale-summary.csv"), scale_sum)
    plots(bench, summary, scale_sum)
    transfer = None if bench.interrupted or bench.args.flamegraphs_only \
        else run_transfer(bench)
    write_summary_md(bench, summary, fit_rows, scale_sum, transfer)


def main(argv):
    ap = argparse.ArgumentParser(
        prog="benchmarks/run.sh",
        description="Put latency of stock HDFS 2.9.2 against the UCX path.")
    prof = ap.add_mutually_exclusive_group()
    for p in PROFILES:
        prof.add_argument("--" + p, dest="profile", action="store_const",
                          const=p)
    ap.add_argument("--scale", action="store_true",
                    help="run only the concurrent-writers study")
    ap.add_argument("--no-scale", action="store_true",
                    help="skip the concurrent-writers study")
    ap.add_argument("--runs", type=int, help="runs per size and replication")
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
    a = ap.parse_args(argv)
    a.argv = argv
    a.profile = a.profile or "small"
    for k, v in PROFILES[a.profile].items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    if a.scale and a.no_scale:
        ap.error("--scale and --no-scale exclude each other")
    a.out = os.path.abspath(a.out or os.path.join(
        HERE, "results", datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
    a.work = os.path.abspath(a.work)

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
    if fstype in ("tmpfs", "ramfs"):
        bench.note("%s is on %s: DataNode storage should be on disk "
                   "(--work)" % (a.work, fstype))

    def on_term(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_term)
    # Even where SIGINT came in ignored (started in the background).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, on_term)

    log("profile %s, results in %s, work in %s" % (a.profile, a.out, a.work))
    rc = 0
    try:
        complete = False
        try:
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
            log("stopping the clusters")
            bench.stop_clusters(complete)
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
        if not a.keep_work:
            shutil.rmtree(os.path.join(a.work, "clusters"),
                          ignore_errors=True)
            shutil.rmtree(os.path.join(a.work, "inputs"), ignore_errors=True)
            for f in ("hadoop.classpath", "fanout.out"):
                if os.path.exists(os.path.join(a.work, f)):
                    os.unlink(os.path.join(a.work, f))
    bench.interrupted = rc == 130
    try:
        # Also after an interruption or a failure: what was measured so far.
        finish(bench)
    except Exception as e:  # the results are the point: say why not
        bench.fail("writing results failed: %r" % e)
        raise
    if bench.failures:
        rc = rc or 1
        print("\nHARNESS FAILURES:\n  " + "\n  ".join(bench.failures),
              file=sys.stderr)
    with open(os.path.join(a.out, "summary.md")) as f:
        print("\n" + f.read())
    log("results in %s (%.1f min)" % (a.out,
                                      (time.monotonic() - bench.t0) / 60))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
