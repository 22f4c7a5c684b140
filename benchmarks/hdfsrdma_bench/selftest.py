"""--conf-self-test: a scratch UCX cluster served by another process of
this package (--serve-cluster), a --conf run against it, and the check
that the run left HDFS holding what it held before."""

import os
import shutil
import signal
import sys
import time

from .clusters import DATANODES, Cluster
from .existing_cluster import ExistingCluster
from .harness import HarnessError, log
from .measurement import http_json
from .processes import Procs, on_signals
from .systems import built_dropin, hadoop_classpath


def serve_cluster(a):
    """--serve-cluster DIR (for --conf-self-test): one UCX cluster as the
    embedded runs start it (the drop-in jar as agent in every daemon, the
    UCX DataNode plugin) under DIR, in this process; DIR/ready names its
    configuration directory once it is up (DIR/stock.classpath: the class
    path of --hadoop's jars without hdfs-rdma). Up until SIGTERM or
    SIGINT, then stopped."""
    root = os.path.abspath(a.serve_cluster)
    procs = Procs()
    java = a.java or shutil.which("java")
    on_signals()
    try:
        cp, dropin = hadoop_classpath(a.hadoop), built_dropin()
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
    """--conf-self-test: the scratch cluster in another process (this
    package with --serve-cluster); returns (process, conf dir, stock class
    path)."""
    root = os.path.join(a.work, "selftest")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    argv = [sys.executable, "-m", __package__, "--serve-cluster", root,
            "--start-timeout", str(a.start_timeout)]
    if a.java:
        argv += ["--java", a.java]
    argv += ["--hadoop", a.hadoop]
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


def probe_namespace(a, cp):
    """Points the run at the scratch cluster (class path `cp` for jar, ucx
    and stock unless given), leaves a directory of "someone else's" there
    and returns (the probe, every path in HDFS before the run)."""
    a.hadoop_classpath = a.hadoop_classpath or cp
    a.stock_classpath = a.stock_classpath or cp
    probe = ExistingCluster(a.conf, "/")
    probe.nn_http = probe.find_namenode()
    # Something of someone else's the run must leave alone.
    probe.mkdirs("/hdfs-rdma-selftest-keep")
    return probe, namespace(probe)


def check_namespace(bench, probe, before):
    """After a complete run: HDFS holds exactly what it held before."""
    after = namespace(probe)
    if after != before:
        bench.fail("--conf-self-test: HDFS differs after the run:"
                   " added %s, removed %s" % (
                       sorted(set(after) - set(before)),
                       sorted(set(before) - set(after))))
    else:
        log("--conf-self-test: HDFS holds what it held before "
            "the run (%s)" % ", ".join(after))


def stop_scratch(bench, scratch):
    """Stops the scratch cluster's process (it stops its daemons)."""
    log("--conf-self-test: stopping the scratch cluster")
    bench.procs.stop([scratch], grace=40.0)
