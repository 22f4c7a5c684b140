package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.FileOutputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.hdfsrdma.ucx.UcxRelease;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * {@code hdfs-rdma check} against a cluster installed per the README, run
 * the way an operator runs it next to a job or daemon: a good install
 * passes its probe (each DataNode fetched exactly the probe's bytes over
 * UCX, as the test reads their beans too), and every broken install exits
 * 1 with one PROBLEM line per problem: the jar on the class path without
 * the agent (the probe still writes, over TCP), UCX libraries that cannot
 * load. A plugin entry left in {@code dfs.datanode.plugins} is reported,
 * as advice, as the line to remove before the agent; a Hadoop 3.3.6
 * client against the 2.9.2 DataNodes names Apache Hadoop 3.3.6 and
 * passes its probe. {@code hadoop jar JAR check} (RunJar) works;
 * {@code check --help} answers with the options and exit 0, and every
 * run's first finding is the jar's version as its manifest gives it.
 */
public class TestCheckCommand {

  private static final String CHECK = "org.hdfsrdma.hadoop.tools.Check";
  private static AgentCluster cluster;

  @BeforeClass
  public static void startCluster() throws Exception {
    // DataNodes report new replicas to the NameNode once a second, as busy
    // ones do late: a file closes once one replica is reported, and the
    // probe must still find and check all three.
    cluster = new AgentCluster("check", 3,
        new String[] {"dfs.blockreport.incremental.intervalMsec", "1000"},
        new String[] {"dfs.heartbeat.interval", "1"});
  }

  @AfterClass
  public static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** A finished check: its exit code and its lines. */
  private static final class Result {
    final int exit;
    final List<String> lines;
    final String log;

    Result(int exit, String log) {
      this.exit = exit;
      this.log = log;
      List<String> l = new ArrayList<String>();
      Collections.addAll(l, log.split("\n"));
      this.lines = l;
    }

    /** Topics of the PROBLEM lines ("PROBLEM topic: text"). */
    TreeSet<String> problems() {
      TreeSet<String> topics = new TreeSet<String>();
      for (String line : lines) {
        if (line.startsWith("PROBLEM ")) {
          topics.add(line.substring(8).trim().replaceFirst(":.*", ""));
        }
      }
      return topics;
    }

    boolean has(String prefix) {
      for (String line : lines) {
        if (line.startsWith(prefix)) {
          return true;
        }
      }
      return false;
    }

    int count(String prefix) {
      int n = 0;
      for (String line : lines) {
        if (line.startsWith(prefix)) {
          n++;
        }
      }
      return n;
    }
  }

  private static Result check(String name, List<String> options,
      Map<String, String> env, String classPath, String... args)
      throws Exception {
    int exit = cluster.run(name, options, env, classPath, CHECK, args);
    return new Result(exit, AgentCluster.read(cluster.log(name)));
  }

  private static List<String> withAgent() {
    return AgentCluster.agentOptions();
  }

  @Test(timeout = 180_000)
  public void testGoodInstallPassesItsProbe() throws Exception {
    int bytes = 3 * 1024 * 1024 - 5;
    long fetchedBefore = cluster.fetched();
    long tcpBefore = cluster.blocksOverTcp();
    // The default deferral of a JVM's first block: the probe's own
    // client starts UCX at once, so UCX carries all its bytes anyway.
    Result r = check("check-good", withAgent(), new HashMap<String, String>(),
        cluster.daemonClassPath(), "-D", "dfs.client.rdma.defer-start=true",
        "--probe", "--probe-bytes", String.valueOf(bytes));
    assertEquals(r.log, 0, r.exit);
    assertTrue(r.log, r.has("hdfs-rdma check: no problems"));
    assertEquals(r.log, new TreeSet<String>(), r.problems());
    assertTrue(r.log, r.has("OK      hadoop: Apache Hadoop 2.9.2 ("));
    assertTrue(r.log, r.has("OK      agent: active (-javaagent:"
        + AgentCluster.dropinJar().getAbsolutePath()));
    assertTrue(r.log, r.has("OK      patch: the client classes are replaced"
        + " by the agent: Hadoop 2.9.2's DataStreamer, DFSPacket,"
        + " DFSOutputStream"));
    assertTrue(r.log, r.has("OK      patch: the DataNode classes are"
        + " replaced by the agent: Hadoop 2.9.2's BlockReceiver,"
        + " DataXceiver, DataXceiverServer"));
    assertTrue(r.log, r.has("INFO    class org.apache.hadoop.hdfs"
        + ".DataStreamer: patched, loaded from "));
    assertTrue(r.log, r.has("OK      ucx: UCX " + UcxRelease.loaded()
        + " loaded, supported (hdfs-rdma runs on UCX " + UcxRelease.OLDEST
        + " to " + UcxRelease.NEWEST_TESTED + "): "));
    assertTrue(r.log, r.has("INFO    ucx shared memory: profile \""
        + UcxRelease.loaded()));
    assertTrue(r.log, r.has("INFO    ucx devices: "));
    assertTrue(r.log, r.has("INFO    setting: dfs.client.rdma.enabled=true"
        + " (hdfs-site.xml)"));
    assertTrue(r.log, r.has("INFO    setting: dfs.datanode.rdma"
        + ".gets-in-flight=4 (default)"));
    assertTrue(r.log, r.has("OK      datanode plugin: "));
    assertTrue(r.log, r.has("OK      ucx runtime: started"));
    assertTrue(r.log, r.has("OK      probe: this JVM sent all " + bytes
        + " bytes as UCX descriptors"));
    assertEquals(r.log, 3, r.count("OK      probe: DataNode "));
    for (String line : r.lines) {
      if (line.startsWith("OK      probe: DataNode ")) {
        assertTrue(line, line.contains(" fetched " + bytes
            + " bytes over UCX (the probe's replicas there: " + bytes
            + "), blocks over UCX +1, over TCP +0"));
      }
    }
    // The check's own reading agrees with the beans, read from here.
    assertEquals(3L * bytes, cluster.fetched() - fetchedBefore);
    assertEquals(tcpBefore, cluster.blocksOverTcp());
  }

  /** hadoop jar hdfs-rdma-dropin.jar check: what the hadoop script runs. */
  @Test(timeout = 180_000)
  public void testHadoopJarRunsTheCheck() throws Exception {
    int exit = cluster.run("hadoop-jar-check", withAgent(),
        new HashMap<String, String>(), cluster.daemonClassPath(),
        "org.apache.hadoop.util.RunJar",
        AgentCluster.dropinJar().getAbsolutePath(), "check", "--client");
    Result r = new Result(exit,
        AgentCluster.read(cluster.log("hadoop-jar-check")));
    assertEquals(r.log, 0, r.exit);
    assertTrue(r.log, r.has("OK      patch: the client classes are replaced"
        + " by the agent"));
    assertFalse(r.log, r.has("OK      patch: the DataNode classes"));
    assertTrue(r.log, r.has("hdfs-rdma check: no problems"));
  }

  /** --help answers, and every run names the jar's release first. */
  @Test(timeout = 180_000)
  public void testHelpAndTheJarsVersion() throws Exception {
    Result help = check("check-help", withAgent(),
        new HashMap<String, String>(), cluster.daemonClassPath(), "--help");
    assertEquals(help.log, 0, help.exit);
    assertTrue(help.log, help.has("usage: check "));
    assertTrue(help.log, help.has("  --probe "));
    assertFalse(help.log, help.log.contains("unknown argument"));
    String version;
    try (java.util.jar.JarFile jar =
        new java.util.jar.JarFile(AgentCluster.dropinJar())) {
      version = jar.getManifest().getMainAttributes().getValue(
          "Implementation-Version");
    }
    assertTrue("the jar's manifest names its version: " + version,
        version != null && !version.isEmpty());
    Result r = check("check-version", withAgent(),
        new HashMap<String, String>(), cluster.daemonClassPath(),
        "--client");
    assertTrue(r.log, r.has("INFO    hdfs-rdma: " + version + " (file:"
        + AgentCluster.dropinJar().getAbsolutePath()));
  }

  @Test(timeout = 180_000)
  public void testJarOnTheClassPathWithoutTheAgent() throws Exception {
    long fetchedBefore = cluster.fetched();
    long tcpBefore = cluster.blocksOverTcp();
    List<String> options = new ArrayList<String>();
    options.add("-Xmx512m");
    Result r = check("check-classpath-only", options,
        new HashMap<String, String>(), cluster.daemonClassPath()
        + File.pathSeparator + AgentCluster.dropinJar(), "--probe");
    assertEquals(r.log, 1, r.exit);
    assertTrue(r.log, r.has("PROBLEM agent: not active: add -javaagent:"));
    assertTrue(r.log, r.has("PROBLEM patch: the client classes are Hadoop's"
        + " own: start this JVM with -javaagent:"));
    assertTrue(r.log, r.has("PROBLEM patch: the DataNode classes are"
        + " Hadoop's own"));
    assertTrue(r.log, r.has("INFO    class org.apache.hadoop.hdfs"
        + ".DataStreamer: Hadoop's own, loaded from "));
    // The write works, over TCP, and the probe says so.
    assertTrue(r.log, r.has("OK      probe: wrote "));
    assertTrue(r.log, r.has("PROBLEM probe: this JVM sent 0 of "));
    assertEquals(r.log, 3, r.count("PROBLEM probe: DataNode "));
    assertTrue(r.log, r.has("hdfs-rdma check: 7 problem(s)"));
    assertEquals(fetchedBefore, cluster.fetched());
    assertEquals(tcpBefore + 3, cluster.blocksOverTcp());
  }

  @Test(timeout = 180_000)
  public void testUcxLibrariesMissing() throws Exception {
    // An empty libucp.so.0 first for JUCX's loadLibrary and the linker.
    File broken = new File(cluster.work(), "broken-ucx");
    assertTrue(broken.mkdirs());
    new FileOutputStream(new File(broken, "libucp.so.0")).close();
    List<String> options = withAgent();
    options.add("-Djava.library.path=" + broken);
    Map<String, String> env = new HashMap<String, String>();
    String path = System.getenv("LD_LIBRARY_PATH");
    env.put("LD_LIBRARY_PATH", broken + (path == null || path.isEmpty()
        ? "" : ":" + path));
    long fetchedBefore = cluster.fetched();
    Result r = check("check-no-ucx", options, env, cluster.daemonClassPath(),
        "--probe");
    assertEquals(r.log, 1, r.exit);
    assertTrue(r.log, r.has("PROBLEM ucx: UCX native libraries are not"
        + " usable (install libucx0, or point LD_LIBRARY_PATH at a UCX"
        + " build): "));
    // The agent did its part; UCX is what is missing.
    assertTrue(r.log, r.has("OK      patch: the client classes are"
        + " replaced"));
    assertTrue(r.log, r.has("OK      probe: wrote "));
    assertTrue(r.log, r.has("PROBLEM probe: this JVM sent 0 of "));
    assertEquals(fetchedBefore, cluster.fetched());
  }

  /**
   * The plugin entry of older installs is not needed with the agent, and
   * is the line to remove before the agent: check says so, as advice.
   */
  @Test(timeout = 180_000)
  public void testDataNodePluginListed() throws Exception {
    Result r = check("check-plugin-listed", withAgent(),
        new HashMap<String, String>(), cluster.daemonClassPath(),
        "-D", "dfs.datanode.plugins=org.hdfsrdma.hadoop.UcxDataNodePlugin",
        "--datanode");
    assertEquals(r.log, 0, r.exit);
    assertEquals(r.log, new TreeSet<String>(), r.problems());
    assertTrue(r.log, r.has("INFO    datanode plugin: org.hdfsrdma.hadoop"
        + ".UcxDataNodePlugin in dfs.datanode.plugins is not needed with the"
        + " agent, which starts the DataNode side itself; remove the entry"
        + " before you remove the agent"));
  }

  @Test(timeout = 180_000)
  public void testHadoop3ClientAgainstHadoop2DataNodes() throws Exception {
    String hadoop3 = AgentCluster.appClassPath(
        "hdfsrdma.test.hadoop3.classpath");
    Result r = check("check-hadoop3", withAgent(),
        new HashMap<String, String>(), cluster.conf().getPath()
        + File.pathSeparator + hadoop3, "--probe");
    // The shaded 3.3.6 client against 2.9.2 DataNodes: a mixed-version
    // pair the agent and the negotiation serve over UCX.
    assertEquals(r.log, 0, r.exit);
    assertTrue(r.log, r.has("OK      hadoop: Apache Hadoop 3.3.6 ("));
    assertTrue(r.log, r.lines.stream().anyMatch(l -> l.matches(
        "OK      patch: the client classes are replaced by the agent:"
        + " Hadoop 3\\.3\\.6's .* from \\S+/hadoop-client-api-3\\.3\\.6"
        + "\\.jar")));
    assertTrue(r.log, r.has("INFO    patch: hadoop-hdfs's DataNode is not"
        + " on the class path"));
    assertTrue(r.log, r.has("OK      probe: this JVM sent all "));
    assertTrue(r.log, r.has("hdfs-rdma check: no problems"));
    assertFalse("no stack trace: " + r.log, r.log.contains("\tat "));
  }
}
