"""An existing cluster (--conf DIR), someone else's: its configuration
read from DIR, its NameNode and live DataNodes found over http, the
daemons that run on this host recognized so that they can be measured,
and the one HDFS test directory the run creates and deletes."""

import json
import os
import re
import socket
import urllib.parse

from .clusters import Hdfs
from .harness import HarnessError, warn
from .measurement import jmx
from .ucx_counters import RDMA_BEAN
from .units import MiB, parse_hadoop_size


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

    def __init__(self, conf_dir, bench_dir, nn_http=None, local_cpu=True,
                 metrics_period=10.0):
        super().__init__("cluster", True)
        # The DataNodes' counters are metrics2 sources: JMX shows them as of
        # the last snapshot, refreshed at most once per metrics period.
        self.metrics_lag = metrics_period + 0.2
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
