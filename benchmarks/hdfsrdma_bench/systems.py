"""The systems measured and what they write to: stock, jar and ucx (and
one UCX system per --compare-distributions mode and per --ucx-workers
count), their put clients (class paths, the drop-in jar as agent, the UCX
switch), the Hadoop release every embedded JVM runs (--hadoop: its class
path), and the clusters behind them: the two embedded clusters started and
stopped here, or an existing cluster (--conf) connected to and left as it
was."""

import os
import re
import shutil
import subprocess
import time
import zipfile

from . import defer_start
from .clusters import DATANODES, Cluster
from .existing_cluster import ExistingCluster
from .harness import REPO, HarnessError, log
from .ucx_counters import RDMA_BEAN, STATS_BLOCKS_OVER_TCP, STATS_FETCHED
from .units import fmt

SYSTEMS = ("stock", "jar", "ucx")     # the order of the alternation
LABELS = {"stock": "stock", "jar": "jar", "ucx": "UCX"}
LONG_LABELS = {"stock": "stock HDFS %s",     # % the release
               "jar": "drop-in jar, UCX off (TCP)",
               "ucx": "hdfs-rdma (UCX get)"}
DISTRIBUTIONS = ("auto", "fan-out", "chain", "hybrid")
COMPARED = "ucx-"   # prefix of a --compare-distributions system
WORKERS = "ucx-w"   # prefix of a --ucx-workers system (ucx-w4)
WORKERS_KEY = "dfs.client.rdma.workers"
# --hadoop: the release every embedded JVM runs, by default the newest of
# the line most clusters run; MAVEN_RELEASE is the build's own (the pom's
# hadoop.version), whose Maven class path the TestDFSIO workloads need
# (its jobclient tests jar and mini YARN cluster: drivers_classpath).
DEFAULT_RELEASE = "3.4.2"
MAVEN_RELEASE = "2.9.2"


def releases():
    """Every release of patches/releases.txt (dev-support/releases.sh)."""
    r = subprocess.run([os.path.join(REPO, "dev-support", "releases.sh"),
                        "list"], capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else []


def hadoop_classpath(release):
    """Hadoop `release`'s jars and their dependencies (nothing of
    hdfs-rdma: the bridge and JUCX come with the drop-in jar), as the
    build resolved them (dev-support/hadoop-releases.sh classpath, as
    dev-support/put.sh), with an SLF4J binding: the class path of every
    embedded daemon and client JVM, the soak's too."""
    tool = os.path.join(REPO, "dev-support", "hadoop-releases.sh")
    r = subprocess.run([tool, "classpath", release], capture_output=True,
                       text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise HarnessError("no Hadoop %s class path: %s"
                           % (release, r.stderr.strip()))
    cp = r.stdout.strip()
    if "slf4j-log4j12" in cp or "slf4j-reload4j" in cp:
        return cp
    # Hadoop 3's poms leave SLF4J's binding to the distribution (its
    # share/hadoop/common/lib has slf4j-reload4j); without one every JVM
    # logs nothing. The build's Hadoop 3 client test app resolves it.
    listed = os.path.join(REPO, "test-apps", "hadoop3-client", "target",
                          "classpath.txt")
    try:
        with open(listed) as f:
            binding = [j for j in f.read().strip().split(":")
                       if os.path.basename(j).startswith("slf4j-reload4j")]
    except OSError:
        binding = []
    if not binding:
        raise HarnessError("Hadoop %s: no SLF4J binding (slf4j-reload4j) in "
                           "%s: build first" % (release, listed))
    return cp + ":" + binding[0]


def drivers_classpath(work):
    """Hadoop MAVEN_RELEASE's jars with its mini clusters and tests jars
    (YARN, MapReduce, TestDFSIO), as Maven resolves them for the drivers
    (benchmarks/drivers), which only MAVEN_RELEASE has here: nothing of
    hdfs-rdma is on it."""
    os.makedirs(work, exist_ok=True)
    cp_file = os.path.join(work, "drivers.classpath")
    subprocess.run(
        ["mvn", "-B", "-q", "-ntp", "-pl", "benchmarks/drivers",
         "dependency:build-classpath", "-Dmdep.outputFile=" + cp_file,
         "-Dmdep.includeScope=provided"], cwd=REPO, check=True,
        stdout=subprocess.DEVNULL)
    with open(cp_file) as f:
        return f.read().strip()


def knows_key(jar, key):
    """Whether the drop-in jar's hdfs-rdma-default.xml defines `key`."""
    return default_of(jar, key) is not None


def default_of(jar, key):
    """The value the drop-in jar's hdfs-rdma-default.xml gives `key`, or
    None where it has no such key."""
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read("hdfs-rdma-default.xml").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    m = re.search(r"<name>%s</name>\s*<value>([^<]*)</value>"
                  % re.escape(key), text)
    return m.group(1).strip() if m else None


def built_dropin():
    """hadoop-hdfs-rdma/target/hadoop-hdfs-rdma-*-dropin.jar, or None."""
    target = os.path.join(REPO, "hadoop-hdfs-rdma", "target")
    if not os.path.isdir(target):
        return None
    jars = sorted(f for f in os.listdir(target)
                  if re.fullmatch(r"hadoop-hdfs-rdma-.*-dropin\.jar", f))
    return os.path.join(target, jars[0]) if jars else None


class Client:
    """How one system's put JVMs start: java, the configuration directory
    and a class path, the drop-in jar as -javaagent: or not, and the UCX
    switch (dfs.client.rdma.enabled as a generic option of FsShell, which
    wins over the site files) or none for stock."""

    def __init__(self, system, java, conf_dir, classpath, agent=None,
                 rdma=None, opts=(), prefix=(), generic=()):
        self.system = system
        self.java = java
        self.conf_dir = conf_dir
        self.classpath = "%s:%s" % (conf_dir, classpath)
        self.agent = agent
        self.rdma = rdma
        self.opts = list(opts)      # --client-opts, for every system alike
        self.prefix = list(prefix)  # --hosts: the client host's IPC namespace
        self.generic = list(generic)  # more -D options of FsShell

    def on_classpath(self, classpath):
        """This client with another class path after its configuration
        directory."""
        return Client(self.system, self.java, self.conf_dir, classpath,
                      self.agent, self.rdma, self.opts, self.prefix,
                      self.generic)

    def put_argv(self, rep, path, target, props=()):
        """The command line of one put of `path` to HDFS `target` at
        replication `rep`; `props`: more JVM options."""
        return self.jvm_argv("org.apache.hadoop.fs.FsShell", [
            "-D", "dfs.replication=%d" % rep, "-put", path, target], props)

    def jvm_argv(self, main, args, props=(), classpath=()):
        """The command line of a client JVM of this system running the
        Hadoop Tool `main` with `args` after the UCX switch and the
        system's generic options (ToolRunner takes -D options first);
        `props`: more JVM options; `classpath`: more entries, after
        Hadoop's."""
        agent = ["-javaagent:" + self.agent] if self.agent else []
        switch = [] if self.rdma is None else [
            "-D", "dfs.client.rdma.enabled=%s" % str(self.rdma).lower()]
        # -Xmx1000m: the heap the hdfs script gives.
        return self.prefix + [self.java, "-Xmx1000m",
                              "-Djava.net.preferIPv4Stack=true"] \
            + agent + self.opts + list(props) + [
                "-cp", ":".join([self.classpath] + list(classpath)),
                main] + switch + self.generic + list(args)


def start_clusters(bench):
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
      UCX threads (the idle CPU of each cluster is reported).

    Every JVM, daemons and clients, runs on --hadoop's release's jars."""
    bench.dropin = built_dropin()
    if not bench.dropin:
        raise HarnessError("no drop-in jar: build first (mvn -DskipTests "
                           "install, or dev-support/setup.sh)")
    cp = hadoop_classpath(bench.args.hadoop)
    log("Hadoop %s on every cluster and client JVM" % bench.args.hadoop)
    if bench.workers and not knows_key(bench.dropin, WORKERS_KEY):
        bench.note("the drop-in jar's hdfs-rdma-default.xml has no %s: "
                   "its client ignores the key, so %s measure the ucx "
                   "system again" % (WORKERS_KEY, ", ".join(bench.workers)))
    root = os.path.join(bench.work, "clusters")
    shutil.rmtree(root, ignore_errors=True)
    embedded_systems(bench, root, cp)
    boot_clusters(bench, root)
    ucx = bench.clusters["ucx"]
    missing = ucx.check_ucx_started()
    if missing:
        bench.fail("UCX DataNode(s) %s did not log 'serves the UCX data "
                   "path'" % missing)
    for c in bench.clusters.values():
        c.mkdirs(c.bench_dir)
    measure_idle(bench)
    bench.rdma_bean_seen = ucx.rdma_bean_count() > 0
    if not bench.rdma_bean_seen:
        bench.note("no %s bean on the UCX DataNodes: per-put DataNode UCX"
                   " counters are n/a (the exit totals still count)"
                   % RDMA_BEAN)


def embedded_systems(bench, root, cp):
    """The stock and ucx clusters under `root` (configured, not started),
    every system's cluster and its put client (class path `cp`)."""
    hosts = bench.hosts
    for name in ("stock", "ucx"):
        os.makedirs(os.path.join(root, name))
        ucx = name == "ucx"
        c = Cluster(name, os.path.join(root, name), bench.java, cp, ucx,
                    bench.procs, agent=bench.dropin if ucx else None,
                    hosts=hosts)
        if ucx:
            # --defer-start: in the site file too, which the agent's
            # warm-up reads to decide whether to warm UCX up.
            c.extra_conf = [(defer_start.KEY,
                             defer_start.value(bench.args))]
        c.write_conf()
        bench.clusters[name] = c
    stock, ucx = bench.clusters["stock"], bench.clusters["ucx"]
    bench.systems = list(SYSTEMS) + bench.compared + bench.workers
    bench.cluster_of = dict(stock=stock, jar=ucx, ucx=ucx)
    bench.cluster_of.update((s, ucx) for s in bench.compared + bench.workers)
    prefix = hosts.prefix("client") if hosts else []
    # --ucx-tcp: the UCX client may use UCX's tcp transport, and is
    # made to fan out there (the policy would keep such pipelines on
    # TCP), so every pipeline goes by gets UCX emulates.
    tcp = ["-D", "dfs.rdma.ucx.tls=tcp", "-D",
           "dfs.rdma.ucx.allow-tcp=true"] if bench.args.ucx_tcp else []
    forced = tcp + (["-D", "dfs.client.rdma.distribution=fan-out"]
                    if bench.args.ucx_tcp else [])
    # --distribution: the shape every UCX pipeline is forced to (with
    # --ucx-tcp, instead of fan-out: a chain's gets over tcp are then
    # served by the DataNodes' CPUs).
    if bench.args.distribution:
        forced += ["-D", "dfs.client.rdma.distribution="
                   + bench.args.distribution]
    bench.clients = dict(
        stock=Client("stock", bench.java, stock.conf, cp, prefix=prefix),
        jar=Client("jar", bench.java, ucx.client_off_conf, cp, bench.dropin,
                   False, prefix=prefix),
        ucx=Client("ucx", bench.java, ucx.conf, cp, bench.dropin, True,
                   prefix=prefix, generic=forced))
    for s in bench.compared:
        bench.clients[s] = Client(
            s, bench.java, ucx.conf, cp, bench.dropin, True, prefix=prefix,
            generic=tcp + ["-D", "dfs.client.rdma.distribution="
                           + s[len(COMPARED):]])
    # --ucx-workers: the UCX client (its options as the ucx system's)
    # with its count of UCX workers set, as a generic option of the
    # client's Tool, like the distribution.
    for s in bench.workers:
        bench.clients[s] = Client(
            s, bench.java, ucx.conf, cp, bench.dropin, True, prefix=prefix,
            generic=forced + ["-D", "%s=%s" % (WORKERS_KEY,
                                               s[len(WORKERS):])])
    # --client-opts: for every system's client JVMs alike.
    for client in bench.clients.values():
        client.opts = list(bench.args.client_opts)
    configure_defer_start(bench)


def configure_defer_start(bench):
    """--defer-start: every UCX client's dfs.client.rdma.defer-start as
    a generic option (which wins over the site files); bench.defer_start:
    whether the UCX checks expect each client JVM's first block over TCP
    (not where the drop-in jar does not know the key: its clients start
    UCX at once)."""
    value = defer_start.value(bench.args)
    for s, client in bench.clients.items():
        if bench.is_ucx(s):
            client.generic = client.generic + [
                "-D", "%s=%s" % (defer_start.KEY, value)]
    bench.defer_start = value == "true"
    if bench.defer_start and not knows_key(bench.dropin, defer_start.KEY):
        bench.defer_start = False
        bench.note("the drop-in jar's hdfs-rdma-default.xml has no %s: its "
                   "clients start UCX at once, so the UCX checks expect "
                   "every byte over UCX" % defer_start.KEY)


def boot_clusters(bench, root):
    """Formats and starts the embedded clusters, and waits until each is
    up (every DataNode live, safe mode off) or --start-timeout passes."""
    formats = [c.format() for c in bench.clusters.values()]
    done = bench.procs.wait_all(formats, 120)
    for c, p in zip(bench.clusters.values(), formats):
        if done[p.pid][1] != 0:
            raise HarnessError("%s: NameNode -format failed; see %s"
                               % (c.name, c.root + "/format.log"))
    for c in bench.clusters.values():
        c.start()
    log("starting 2 clusters (1 NameNode + %d DataNodes each) under %s;"
        " the jar system writes to the ucx cluster" % (DATANODES, root))
    t0 = time.monotonic()
    pending = set(bench.clusters)
    while pending:
        for name in sorted(pending):
            if bench.clusters[name].ready():
                pending.discard(name)
                log("%s cluster up after %.1f s (NameNode rpc %d http %d)"
                    % (name, time.monotonic() - t0,
                       bench.clusters[name].nn_rpc,
                       bench.clusters[name].nn_http_port))
        if pending and time.monotonic() - t0 > bench.args.start_timeout:
            raise HarnessError("cluster(s) %s did not come up in %d s; "
                               "see %s/*/*.log" % (
                                   ", ".join(sorted(pending)),
                                   bench.args.start_timeout, root))
        if pending:
            time.sleep(0.5)


def measure_idle(bench):
    """What the idle clusters cost the machine (a DataNode that spins
    while idle would slow the other cluster's puts too), where their
    CPU can be read."""
    cs = {c.name: c for c in bench.cluster_of.values()}
    before = {n: (c.dn_cpu(), c.nn_cpu()) for n, c in cs.items()}
    time.sleep(3.0)
    for n, c in cs.items():
        dn, nn = c.dn_cpu(), c.nn_cpu()
        if dn is None or nn is None:
            bench.idle_cpu[n] = None
        else:
            bench.idle_cpu[n] = (dn + nn - sum(before[n])) / 3.0
    log("idle cluster CPU (cores busy): " + ", ".join(
        "%s %s" % (n, fmt(v, 3)) for n, v in sorted(
            bench.idle_cpu.items())))


def connect_existing(bench):
    """--conf: the cluster of DIR, the systems its clients can be. The
    jar and ucx clients are the operator's Hadoop class path with the
    drop-in jar as agent, dfs.client.rdma.enabled false and true; stock
    needs a class path without the jar (--stock-classpath): the agent
    is what makes a client non-stock, so `hadoop classpath` qualifies
    where the jar is installed only as an agent."""
    a = bench.args
    bench.dropin = a.dropin or built_dropin()
    if not bench.dropin or not os.path.exists(bench.dropin):
        raise HarnessError("no drop-in jar: build first or give --dropin "
                           "JAR")
    hadoop_cp = a.hadoop_classpath
    if hadoop_cp is None:
        if not shutil.which("hadoop"):
            raise HarnessError("no `hadoop` on PATH: give "
                               "--hadoop-classpath CP (the class path "
                               "of the cluster's Hadoop client)")
        hadoop_cp = subprocess.run(["hadoop", "classpath"], check=True,
                                   capture_output=True,
                                   text=True).stdout.strip()
    c = ExistingCluster(a.conf, a.hdfs_dir, a.namenode_http,
                        local_cpu=not a.remote,
                        metrics_period=a.metrics_period)
    bench.existing = c
    c.connect()
    log("--conf %s: %s" % (a.conf, c.describe()))
    bench.systems = []
    if a.stock_classpath:
        if re.search(r"(hadoop-hdfs-rdma|jucx)[^/:]*\.jar",
                     a.stock_classpath):
            raise HarnessError("--stock-classpath holds an hdfs-rdma or "
                               "JUCX jar: stock must be Hadoop's jars "
                               "only")
        bench.systems.append("stock")
        bench.clients["stock"] = Client("stock", bench.java, a.conf,
                                        a.stock_classpath,
                                        opts=a.client_opts)
    else:
        bench.skipped["stock"] = (
            "no --stock-classpath: the stock system is skipped (ratios "
            "to stock are n/a); jar is this cluster's TCP path")
        bench.note(bench.skipped["stock"])
    bench.systems += ["jar", "ucx"]
    bench.clients["jar"] = Client("jar", bench.java, a.conf, hadoop_cp,
                                  bench.dropin, False, a.client_opts)
    bench.clients["ucx"] = Client("ucx", bench.java, a.conf, hadoop_cp,
                                  bench.dropin, True, a.client_opts)
    configure_defer_start(bench)
    bench.cluster_of = {s: c for s in bench.systems}
    measure_idle(bench)
    bench.rdma_bean_seen = c.rdma_bean_count() > 0
    if not bench.rdma_bean_seen:
        bench.note("no DataNode answers with the %s bean: is the jar "
                   "installed on the DataNodes (agent, plugin) and their "
                   "http port reachable? Per-put UCX counters are n/a"
                   % RDMA_BEAN)
    if c.dn_pids is None:
        bench.note("DataNode CPU and context switches are n/a: %d of %d "
                   "DataNodes are not on this host (or --remote)" % (
                       sum(p is None for p in c.dn_pid_list),
                       len(c.dn_pid_list)))


def check_bytes_written(bench):
    """--conf: the DataNodes' BytesWritten over the whole run against
    size x replication of every put, read one metrics period after the
    last put (the per-put deltas of a cached counter would lag)."""
    c = bench.existing
    if c.written_at_start is None:
        return
    log("waiting %.0f s (--metrics-period) for the DataNodes' "
        "BytesWritten" % (bench.args.metrics_period + 1))
    time.sleep(bench.args.metrics_period + 1)
    written = c.bytes_written()
    if written is None:
        return
    written -= c.written_at_start
    if written != bench.bytes_expected:
        bench.note("the DataNodes wrote %d bytes over the run, expected %d"
                   " (size x replication of every put; other writers on "
                   "the cluster count too)" % (written,
                                               bench.bytes_expected))
    else:
        log("the DataNodes wrote %d bytes over the run, as expected"
            % written)


def stop_clusters(bench, complete):
    """Stops the embedded clusters; with `complete` (no put was cut
    short), checks the UCX DataNodes' exit totals against every UCX put
    and every jar put (whose replicas the UCX DataNodes took over TCP).
    --conf: deletes the test directory, and stops nothing."""
    if bench.existing is not None:
        bench.existing.cleanup()
        if complete:
            check_bytes_written(bench)
    for c in bench.clusters.values():
        bench.procs.stop([p for p in c.dns + [c.nn] if p is not None])
    c = bench.clusters.get("ucx")
    if c is None:
        return
    totals = c.ucx_totals()
    bench.ucx_totals = totals
    if not complete:
        return
    fetched = totals.get(STATS_FETCHED)
    if fetched is None:
        bench.fail("the UCX DataNodes wrote no exit totals")
    elif fetched == 0 and bench.ucx_expected_bytes:
        bench.ucx_problem("the UCX DataNodes fetched no bytes by UCX in "
                          "the whole run")
    elif fetched != bench.ucx_expected_bytes:
        bench.note("UCX DataNodes fetched %d bytes by get over the run, "
                   "expected %d (size x replication of every UCX put)"
                   % (fetched, bench.ucx_expected_bytes))
    over_tcp = totals.get(STATS_BLOCKS_OVER_TCP, 0)
    if over_tcp != bench.jar_expected_blocks:
        bench.note("UCX DataNodes received %d client block replica(s) "
                   "over TCP, expected %d (those of the jar puts; with "
                   "--hosts, also those of UCX puts whose client chose TCP;"
                   " with --defer-start on, each UCX client JVM's first "
                   "block)" % (over_tcp, bench.jar_expected_blocks))
