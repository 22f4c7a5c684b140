"""HDFS as the benchmark sees it: what it needs of any running HDFS
(Hdfs: WebHDFS, the DataNodes' counters, the daemons' CPU), and the
embedded clusters the harness starts and stops itself (Cluster: 1 NameNode
+ 4 DataNodes, each its own JVM)."""

import hashlib
import os
import random
import socket
import time
import urllib.error
import urllib.parse

from . import ucx_counters
from .harness import HarnessError, warn
from .measurement import bean_sums, cpu_seconds, http, http_json, jmx
from .units import MiB

DATANODES = 4

LOG4J = """log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p %c{2}: %m%n
"""

# JMX values of metrics2 sources are cached for one metrics period (10 s by
# default); one second keeps per-put counter deltas readable. No sinks.
METRICS2 = "*.period=1\n"

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
        # Seconds after a put until the DataNodes' metrics2 counters
        # (DataNodeActivity, HdfsRdmaDataNode; cached for one metrics
        # period) show it; None: not known, so no per-put BytesWritten.
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
            for prefix, counters in (
                    ("activity.", bean_sums(addr, ACTIVITY_BEAN) or {}),
                    (ucx_counters.PREFIX,
                     ucx_counters.datanode_counters(addr) or {})):
                for k, v in counters.items():
                    total[prefix + k] = total.get(prefix + k, 0) + v
        return total

    def rdma_bean_count(self):
        """How many DataNodes serve an HdfsRdmaDataNode metrics source."""
        return sum(ucx_counters.datanode_counters(addr) is not None
                   for addr in self.dn_http)

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
    extra_conf = ()         # (key, value) pairs added to hdfs-site.xml

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
        # The jar system's clients: this cluster's files with the client's
        # UCX path off in hdfs-site.xml, as an operator turns it off (the
        # agent reads the site files to decide whether to warm UCX up).
        self.client_off_conf = os.path.join(root, "conf-client-off")
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
            hdfs += [("dfs.datanode.rdma.enabled", "true"),
                     ("dfs.client.rdma.enabled", "true"),
                     # The per-packet breakdown (a few clock reads a packet).
                     ("dfs.datanode.rdma.packet-timers.enabled", "true"),
                     ("dfs.client.rdma.packet-timers.enabled", "true")]
            if self.hosts:
                # The DataNodes also serve clients that force UCX over
                # tcp (--ucx-tcp); clients keep the default (no tcp).
                hdfs += [("dfs.datanode.rdma.allow-emulated-gets", "true")]
        hdfs += list(self.extra_conf)
        client_off = [(k, "false" if k == "dfs.client.rdma.enabled" else v)
                      for k, v in hdfs]
        for conf, site in ((self.conf, hdfs),
                           (self.client_off_conf, client_off)):
            os.makedirs(conf, exist_ok=True)
            for fname, text in (("core-site.xml", xml_conf(core)),
                                ("hdfs-site.xml", xml_conf(site)),
                                ("log4j.properties", LOG4J),
                                ("hadoop-metrics2.properties", METRICS2)):
                with open(os.path.join(conf, fname), "w") as f:
                    f.write(text)

    def jvm(self, *args, heap="1g", props=(), host=None):
        # Hadoop 2.9's web server (WebHDFS, used here to verify and delete
        # files) needs java.lang opened on Java 17; the same on both
        # clusters, and on every release.
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
        return ucx_counters.sum_stats(self.dn_stats_file(i)
                                      for i in range(DATANODES))
