"""--flamegraphs: CPU profiles of one extra put per system by
async-profiler, in the client JVM and in every DataNode."""

import contextlib
import os
import subprocess

from .harness import REPO, HarnessError, log
from .puts import make_input, put_batch
from .units import human, human_long


def profiler_library(bench):
    """libasyncProfiler.so of async-profiler 3.0 (Maven Central's
    tools.profiler:async-profiler jar carries it), fetched and unpacked
    under the work directory."""
    if bench.args.async_profiler:
        return bench.args.async_profiler
    lib = os.path.join(bench.work, "async-profiler", "linux-x64",
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
                  os.path.join(bench.work, "async-profiler"))
    return lib


def jcmd_profiler(bench, pid, command):
    """Loads async-profiler into a running JVM with `command` (it may be
    loaded again and again, each time with the next command)."""
    # Quoted: jcmd would parse key=value pairs as its own arguments.
    r = subprocess.run(["jcmd", str(pid), "JVMTI.agent_load",
                        profiler_library(bench), '"%s"' % command],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or "error" in r.stdout.lower() \
            or "return code: 0" not in r.stdout:
        raise HarnessError("async-profiler in pid %d (%s): %s" % (
            pid, command, (r.stdout + r.stderr).strip()[-300:]))


def client_agent(lib, spec, collapsed, path):
    """The JVM option that profiles a client JVM from launch with `spec`
    (event and interval) into `path`, as collapsed stacks or HTML."""
    return "-agentpath:%s=start,%s%s,file=%s" % (
        lib, spec, ",collapsed" if collapsed else "", path)


@contextlib.contextmanager
def datanode_profiles(bench, cluster, spec, collapsed, path_of):
    """async-profiler with `spec` in every DataNode of `cluster` while the
    block runs; DataNode i's samples (1-based) go to path_of(i)."""
    for p in cluster.dns:
        jcmd_profiler(bench, p.pid, "start," + spec)
    try:
        yield
    finally:
        opt = ",collapsed" if collapsed else ""
        for i, p in enumerate(cluster.dns):
            jcmd_profiler(bench, p.pid, "stop%s,file=%s" % (
                opt, path_of(i + 1)))


def flamegraphs(bench):
    """CPU profiles of one put per system (not recorded in the sweep):
    the client JVM (profiled from launch) and every DataNode (attached
    for the put), as async-profiler's HTML flame graphs and as collapsed
    stacks (one line per stack and its sample count) for reading with
    scripts. The put runs twice per system, once for each format."""
    size, rep = bench.args.flamegraphs
    path, digest = make_input(bench, size)
    lib = profiler_library(bench)
    d = os.path.join(bench.out, "flamegraphs")
    os.makedirs(d, exist_ok=True)
    event = "event=cpu,interval=%dus" % bench.args.profile_interval_us
    for system in bench.systems:
        c = bench.cluster_of[system]
        for kind in ("collapsed", "html"):
            name = "%s-%s-r%d" % (system, human(size), rep)
            collapsed = kind == "collapsed"
            agent = client_agent(lib, event, collapsed, os.path.join(
                d, "client-%s.%s" % (name, kind)))
            with datanode_profiles(bench, c, event, collapsed,
                                   lambda i: os.path.join(d, "dn%d-%s.%s" % (
                                       i, name, kind))):
                jobs, _, dn_cpu, _, _, _ = put_batch(
                    bench, system, [(path, digest)], rep, "profile-" + kind,
                    False, jvm_props=[agent])
            log("profiled %s put of %s at rep %d (%s): %.2f s, client "
                "CPU %.2f s, DataNode CPU %.2f s" % (
                    system, human_long(size), rep, kind, jobs[0]["wall"],
                    jobs[0]["cpu"], dn_cpu))
