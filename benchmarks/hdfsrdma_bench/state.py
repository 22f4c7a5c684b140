"""The state of one run: its options, processes, clusters and clients,
what it measured (rows of puts, limits, batches of writers and --apps'
workload runs), what it
expects the UCX path to have carried, and its failures and warnings."""

import shutil

from .harness import warn
from .hosts import EmulatedHosts
from .processes import Procs
from .systems import (COMPARED, LABELS, LONG_LABELS, SYSTEMS,
                      WORKERS)


class Bench:
    """One run of the harness, handed to every step of it (systems,
    workloads, report), which read and add to what is here."""

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
        # --apps: the workloads (apps.App) and one row per run of each on
        # each system.
        self.apps = list(getattr(args, "apps_list", None) or ())
        self.app_rows = []
        # --reads: the workloads (reads.Read) and one row per batch.
        self.reads = list(getattr(args, "reads_list", None) or ())
        self.read_rows = []
        self.read_min_bytes = 0         # the ucx client's read threshold
        self.yarn_cp = None             # --apps dfsio: drivers_classpath()
        self.pyspark = None             # --apps spark: app_spark.PySpark
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
        # --defer-start on: each UCX client JVM's first block goes over
        # TCP (systems.configure_defer_start: not where the drop-in jar
        # does not know the key).
        self.defer_start = getattr(args, "defer_start", None) != "off"
        self.idle_cpu = {}
        self.interrupted = False
        self.ucx_totals = {}
        self.seq = 0
        # --compare-distributions: one more UCX system per mode, writing to
        # the ucx cluster, so that modes alternate within one run.
        self.compared = [COMPARED + m
                         for m in args.compare_distributions or ()]
        # --ucx-workers: one more UCX system per count of client workers.
        self.workers = [WORKERS + str(n)
                        for n in getattr(args, "ucx_workers", None) or ()]
        self.labels = dict(LABELS)
        self.long_labels = dict(LONG_LABELS)
        self.long_labels["stock"] %= getattr(args, "hadoop", None) or "n/a"
        if getattr(args, "conf", None):
            # --conf: stock is the --stock-classpath client against the
            # cluster's own DataNodes, of whatever release they run (the
            # summary names it), not the embedded clusters' --hadoop.
            self.long_labels["stock"] = "stock HDFS client (--stock-classpath)"
        if args.distribution or self.compared:
            self.long_labels["ucx"] += ", distribution " + \
                args.ucx_distribution
        for s in self.compared:
            mode = s[len(COMPARED):]
            self.labels[s] = "UCX " + mode
            self.long_labels[s] = "hdfs-rdma (UCX get), distribution " + mode
        for s in self.workers:
            n = s[len(WORKERS):]
            self.labels[s] = "UCX w" + n
            self.long_labels[s] = "hdfs-rdma (UCX get), %s client worker(s)" \
                " (dfs.client.rdma.workers=%s)" % (n, n)

    def is_ucx(self, system):
        """Whether `system`'s client has UCX on: ucx, a compared
        distribution's, a --ucx-workers count's."""
        return system == "ucx" or system in self.compared or \
            system in self.workers

    @property
    def all_systems(self):
        """Every system a summary has columns for, in alternation order."""
        return list(SYSTEMS) + self.compared

    def fail(self, msg):
        """A harness failure: recorded, the run carries on where it can."""
        warn(msg)
        self.failures.append(msg)

    def note(self, msg):
        """A warning: recorded, listed at the end of summary.md."""
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

    @property
    def cluster_pids(self):
        return {pid for c in self.clusters.values() for pid in c.pids}
