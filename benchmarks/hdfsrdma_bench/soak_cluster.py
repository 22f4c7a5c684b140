"""The soak's cluster: a NameNode and four DataNodes on a Hadoop release's
stock jars (its class path: systems.hadoop_classpath), formatted, started
and checked to serve UCX; and the options every JVM of the soak starts
with, the clients' too (HEAP, soak_jvm_opts)."""

import os
import time

from .clusters import Cluster
from .harness import HarnessError, log

HEAP = "512m"


class SoakCluster(Cluster):
    """The harness's embedded cluster with every JVM as the soak needs it:
    native memory tracking, a fixed pre-touched heap (RSS growth is then
    growth outside the heap) and fatal error files in the work directory."""

    block_state_log = False

    def jvm(self, *args, heap=HEAP, props=(), host=None):
        return super().jvm(*args, heap=heap, props=list(soak_jvm_opts(
            self.root, heap)) + list(props), host=host)

    def write_conf(self):
        super().write_conf()
        if self.block_state_log:
            with open(os.path.join(self.conf, "log4j.properties"), "a") as f:
                # With the thread: the block report processor logs both
                # full and incremental reports.
                f.write("log4j.logger.BlockStateChange=DEBUG\n"
                        "log4j.appender.console.layout.ConversionPattern="
                        "%d{ISO8601} %-5p [%t] %c{2}: %m%n\n")


def soak_jvm_opts(root, heap):
    return ["-Xms" + heap, "-XX:+AlwaysPreTouch",
            "-XX:NativeMemoryTracking=summary",
            "-XX:ErrorFile=%s/hs_err_pid%%p.log" % root]


def boot(cluster, procs, timeout=180):
    done = procs.wait_all([cluster.format()], 120)
    if any(rc != 0 for _, rc, _ in done.values()):
        raise HarnessError("NameNode -format failed; see %s/format.log"
                           % cluster.root)
    cluster.start()
    t0 = time.monotonic()
    while not cluster.ready():
        if time.monotonic() - t0 > timeout:
            raise HarnessError("the cluster did not come up in %d s; see "
                               "%s/*.log" % (timeout, cluster.root))
        time.sleep(0.5)
    log("cluster up after %.1f s (NameNode rpc %d, http %d)"
        % (time.monotonic() - t0, cluster.nn_rpc, cluster.nn_http_port))
    missing = cluster.check_ucx_started()
    if missing:
        raise HarnessError("DataNode(s) %s did not log 'serves the UCX data "
                           "path'" % missing)
