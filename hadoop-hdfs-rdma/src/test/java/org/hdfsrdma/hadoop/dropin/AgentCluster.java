package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.apache.commons.io.IOUtils;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.VersionInfo;
import org.hdfsrdma.hadoop.ChildJvm;
import org.hdfsrdma.hadoop.FreePorts;
import org.hdfsrdma.hadoop.WaitFor;
import org.hdfsrdma.hadoop.tools.DataNodeJmxMetrics;

/**
 * HDFS installed the way the README says: a NameNode and DataNodes, each
 * its own JVM on Hadoop 2.9.2's jars (or on another release's, see
 * {@link #AgentCluster(String, String, int, String[][])}), started with the
 * drop-in jar as Java agent and the README's settings in their
 * hdfs-site.xml. The drop-in tests run in a JVM started the same way
 * (failsafe's argLine), which is the cluster's client here.
 */
public final class AgentCluster implements Closeable {

  /**
   * hdfs-site.xml settings that switch the UCX path on, per the README: no
   * plugin entry, the agent starts the DataNode side.
   */
  static final String[][] UCX_SITE = {
    {"dfs.datanode.rdma.enabled", "true"},
    {"dfs.client.rdma.enabled", "true"},
    // The tests prove UCX carried every byte, a JVM's first block too.
    {"dfs.client.rdma.defer-start", "false"},
  };

  private final File work;
  private final File conf;
  private final String fsUri;
  /** The daemons' jars: Hadoop 2.9.2's (this JVM's) or a release's. */
  private final String daemonJars;
  private final String release;
  private final List<Process> processes = new ArrayList<Process>();
  private final List<Process> dataNodes = new ArrayList<Process>();
  private DistributedFileSystem fs;

  /** The drop-in jar this build made (failsafe passes its path). */
  static File dropinJar() {
    String path = System.getProperty("hdfsrdma.dropin.jar");
    File jar = path == null ? null : new File(path);
    if (jar == null || !jar.isFile()) {
      fail("no drop-in jar at " + path + ": these tests run in Maven's"
          + " integration-test phase, after package");
    }
    return jar;
  }

  /** -javaagent: for the drop-in jar. */
  static String agent() {
    return "-javaagent:" + dropinJar().getAbsolutePath();
  }

  /**
   * Hadoop 2.9.2's jars and their dependencies (with Hadoop's test jars,
   * which hold the daemons' webapps/): this JVM's class path less this
   * module's classes and resources and hdfs-rdma's own jars.
   */
  static String hadoopClassPath() {
    return ChildJvm.stockClassPath();
  }

  /**
   * A Hadoop release's runtime class path, as the build resolved it for
   * the release's classes in the drop-in jar (what {@code
   * dev-support/hadoop-releases.sh classpath RELEASE} prints): the jars of
   * a NameNode, a DataNode and a client, with the test jar that holds the
   * daemons' webapps/.
   */
  static String releaseClassPath(String release) throws IOException {
    File file = new File(System.getProperty("hdfsrdma.releases.dir",
        "target/releases"), release + "/runtime-classpath.txt");
    if (!file.isFile()) {
      fail("no class path for Hadoop " + release + " at " + file + ": it"
          + " is not in patches/releases.txt, or this module was not built");
    }
    return new String(Files.readAllBytes(file.toPath()),
        StandardCharsets.UTF_8).trim();
  }

  /**
   * The Hadoop releases the drop-in jar carries classes for, as its
   * agent reads them (hdfs-rdma-patched/groups.properties).
   */
  static List<String> releasesInJar() throws IOException {
    try (JarFile jar = new JarFile(dropinJar())) {
      Properties p = new Properties();
      try (InputStream in = jar.getInputStream(jar.getEntry(
          "hdfs-rdma-patched/groups.properties"))) {
        p.load(in);
      }
      return Arrays.asList(p.getProperty("releases", "").trim()
          .split("\\s+"));
    }
  }
  /**
   * Whether the drop-in jar's classes for {@code release} read over UCX:
   * its default block reader (BlockReaderRemote2 on Hadoop 2,
   * BlockReaderRemote on 3) calls the read hook's layer class (UcxBlockRead)
   * and its DataXceiver the DataNode's (UcxDataNodeRead), as the patch
   * series of the release puts them there.
   */
  static boolean readHooked(String release) throws IOException {
    String reader = release.startsWith("2.") ? "BlockReaderRemote2"
        : "BlockReaderRemote";
    return calls(release, "org/apache/hadoop/hdfs/client/impl/"
        + reader, "org/apache/hadoop/hdfs/client/impl/"
        + "UcxBlockRead") && calls(release, "org/apache/hadoop/hdfs/server/"
        + "datanode/DataXceiver", "org/apache/hadoop/hdfs/server/datanode/"
        + "UcxDataNodeRead");
  }

  /**
   * Whether the jar's class {@code name} of {@code release} names {@code
   * callee} (in its constant pool).
   */
  private static boolean calls(String release, String name, String callee)
      throws IOException {
    try (JarFile jar = new JarFile(dropinJar())) {
      JarEntry e = jar.getJarEntry("hdfs-rdma-patched/" + release + "/"
          + name + ".class");
      assertTrue("the jar has no " + name + " for Hadoop " + release,
          e != null);
      try (InputStream in = jar.getInputStream(e)) {
        return new String(IOUtils.toByteArray(in),
            StandardCharsets.ISO_8859_1).contains(callee);
      }
    }
  }


  /**
   * The class path a test app module wrote (test-apps/, named by the
   * system property {@code property}).
   */
  static String appClassPath(String property) throws IOException {
    String path = System.getProperty(property);
    File file = path == null ? null : new File(path);
    if (file == null || !file.isFile()) {
      fail("no class path file " + path + " (" + property + "): build the"
          + " test-apps modules first (mvn verify from the top builds them"
          + " before hadoop-hdfs-rdma)");
    }
    return new String(Files.readAllBytes(file.toPath()),
        StandardCharsets.UTF_8).trim();
  }

  static int freePort() throws IOException {
    return FreePorts.next();
  }

  static String xml(String[][] properties) {
    StringBuilder sb = new StringBuilder("<?xml version=\"1.0\"?>\n"
        + "<configuration>\n");
    for (String[] p : properties) {
      sb.append("  <property><name>").append(p[0]).append("</name><value>")
          .append(p[1]).append("</value></property>\n");
    }
    return sb.append("</configuration>\n").toString();
  }

  static void write(File file, String text) throws IOException {
    Files.write(file.toPath(), text.getBytes(StandardCharsets.UTF_8));
  }

  static String read(File file) throws IOException {
    return new String(Files.readAllBytes(file.toPath()),
        StandardCharsets.UTF_8);
  }

  /**
   * Starts a NameNode and {@code numDataNodes} DataNodes with the agent and
   * waits until every DataNode serves the UCX path (its bean is up).
   *
   * @param site hdfs-site.xml settings ({key, value}) besides the defaults
   *     here and {@link #UCX_SITE}
   */
  AgentCluster(String name, int numDataNodes, String[]... site)
      throws Exception {
    this(name, null, numDataNodes, site);
  }

  /**
   * As {@link #AgentCluster(String, int, String[][])}, the daemons on
   * Hadoop {@code release}'s jars ({@link #releaseClassPath}; null: Hadoop
   * 2.9.2's, this JVM's). This JVM stays the client of
   * {@link #fs()}: Hadoop 2.9.2's, which reads from and administers later
   * releases too.
   */
  AgentCluster(String name, String release, int numDataNodes,
      String[]... site) throws Exception {
    daemonJars = release == null ? hadoopClassPath()
        : releaseClassPath(release);
    this.release = release == null ? VersionInfo.getVersion() : release;
    work = GenericTestUtils.getTestDir(name + "-" + System.nanoTime());
    conf = new File(work, "conf");
    assertTrue(conf.mkdirs());
    fsUri = "hdfs://127.0.0.1:" + freePort();
    write(new File(conf, "core-site.xml"), xml(new String[][] {
        {"fs.defaultFS", fsUri},
        {"hadoop.tmp.dir", new File(work, "tmp").getPath()}}));
    List<String[]> hdfs = new ArrayList<String[]>(Arrays.asList(
        new String[][] {
            {"dfs.replication", "3"},
            {"dfs.namenode.name.dir", new File(work, "name").getPath()},
            {"dfs.namenode.http-address", "127.0.0.1:0"},
            {"dfs.namenode.datanode.registration.ip-hostname-check",
                "false"},
            {"dfs.namenode.safemode.extension", "0"},
            // Every test counts replicas (3 per block); on a loaded machine
            // the NameNode otherwise skips a DataNode it thinks busy.
            {"dfs.namenode.replication.considerLoad", "false"},
            {"dfs.datanode.address", "127.0.0.1:0"},
            {"dfs.datanode.http.address", "127.0.0.1:0"},
            {"dfs.datanode.ipc.address", "127.0.0.1:0"}}));
    hdfs.addAll(Arrays.asList(UCX_SITE));
    hdfs.addAll(Arrays.asList(site));
    write(new File(conf, "hdfs-site.xml"),
        xml(hdfs.toArray(new String[0][])));
    // JMX serves a metrics2 source's values as of its last snapshot, taken
    // at most once per period: one second here (see beans()).
    write(new File(conf, "hadoop-metrics2.properties"), "*.period=1\n");
    write(new File(conf, "log4j.properties"),
        "log4j.rootLogger=INFO,console\n"
        + "log4j.appender.console=org.apache.log4j.ConsoleAppender\n"
        + "log4j.appender.console.layout=org.apache.log4j.PatternLayout\n"
        + "log4j.appender.console.layout.ConversionPattern="
        + "%d{ISO8601} %-5p %c{2}: %m%n\n"
        // Why a DataNode was not chosen, should a block get fewer replicas.
        + "log4j.logger.org.apache.hadoop.hdfs.server.blockmanagement"
        + ".BlockPlacementPolicy=DEBUG\n");
    try {
      Process format = start("format", agentOptions(), daemonClassPath(),
          "org.apache.hadoop.hdfs.server.namenode.NameNode", "-format",
          "-force", "-nonInteractive");
      assertTrue(format.waitFor(120, TimeUnit.SECONDS));
      processes.remove(format);
      start("namenode", agentOptions(), daemonClassPath(),
          "org.apache.hadoop.hdfs.server.namenode.NameNode");
      for (int i = 0; i < numDataNodes; i++) {
        List<String> options = agentOptions();
        options.add("-Dhdfsrdma.stats.file="
            + new File(work, "datanode" + i + ".totals"));
        dataNodes.add(start("datanode" + i, options, daemonClassPath(),
            "org.apache.hadoop.hdfs.server.datanode.DataNode",
            "-D", "dfs.datanode.data.dir=" + new File(work, "data" + i)));
      }
      fs = (DistributedFileSystem) FileSystem.newInstance(
          URI.create(fsUri), clientConf());
      WaitFor.waitFor(() -> {
        try {
          return beans().size() == numDataNodes;
        } catch (IOException e) {
          return false;
        }
      }, 250, 120_000);
    } catch (Exception | Error e) {
      close();
      throw e;
    }
  }

  /**
   * Stops DataNode {@code i} (SIGTERM, as {@code hdfs --daemon stop} does)
   * and starts it again on its data directory, with the agent or, rolled
   * back, without it (stock Hadoop, the same hdfs-site.xml); returns once
   * the NameNode lists it live at its new address and, with the agent,
   * its hdfs-rdma bean is up.
   */
  void restartDataNode(int i, boolean withAgent) throws Exception {
    Process old = dataNodes.get(i);
    old.destroy();
    if (!old.waitFor(60, TimeUnit.SECONDS)) {
      old.destroyForcibly();
      old.waitFor(30, TimeUnit.SECONDS);
    }
    processes.remove(old);
    int port = freePort();
    List<String> options = withAgent ? agentOptions()
        : new ArrayList<String>(Arrays.asList("-Xmx512m"));
    dataNodes.set(i, start("datanode" + i + "-" + System.nanoTime(),
        options, daemonClassPath(),
        "org.apache.hadoop.hdfs.server.datanode.DataNode",
        "-D", "dfs.datanode.data.dir=" + new File(work, "data" + i),
        "-D", "dfs.datanode.address=127.0.0.1:" + port));
    String addr = "127.0.0.1:" + port;
    WaitFor.waitFor(() -> {
      try {
        for (DatanodeInfo d : fs.getDataNodeStats(DatanodeReportType.LIVE)) {
          if (d.getXferAddr().equals(addr)) {
            return !withAgent || beans().containsKey(addr);
          }
        }
        return false;
      } catch (IOException e) {
        return false;
      }
    }, 250, 120_000);
  }

  /** -Xmx and the agent, as HADOOP_OPTS holds them on a cluster. */
  static List<String> agentOptions() {
    return new ArrayList<String>(Arrays.asList("-Xmx512m", agent()));
  }

  File work() {
    return work;
  }

  /** The Hadoop release the daemons run. */
  String release() {
    return release;
  }

  /** The cluster's configuration directory (core-site, hdfs-site). */
  File conf() {
    return conf;
  }

  String fsUri() {
    return fsUri;
  }

  /**
   * conf/ then the daemons' jars (Hadoop 2.9.2's unless the cluster was
   * made on another release): a daemon's or hdfs command's.
   */
  String daemonClassPath() {
    return conf.getPath() + File.pathSeparator + daemonJars;
  }

  /** A client configuration of this cluster with the UCX path on. */
  Configuration clientConf() {
    Configuration c = new Configuration();
    c.set("fs.defaultFS", fsUri);
    c.setBoolean("dfs.client.rdma.enabled", true);
    c.setBoolean("dfs.client.rdma.defer-start", false);
    return c;
  }

  /** This JVM's client of the cluster (agent on, UCX on). */
  DistributedFileSystem fs() {
    return fs;
  }

  /**
   * Starts a JVM: {@code java OPTIONS -cp CLASSPATH MAIN ARGS}, its output
   * in {@code work/NAME.log}; stopped at {@link #close()}.
   */
  Process start(String name, List<String> options, String classPath,
      String main, String... args) throws IOException {
    return start(name, options, new HashMap<String, String>(), classPath,
        main, args);
  }

  Process start(String name, List<String> options, Map<String, String> env,
      String classPath, String main, String... args) throws IOException {
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + "/bin/java");
    command.addAll(options);
    command.add("-cp");
    command.add(classPath);
    command.add(main);
    command.addAll(Arrays.asList(args));
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectErrorStream(true).redirectOutput(log(name));
    builder.environment().putAll(env);
    Process p = builder.start();
    processes.add(p);
    return p;
  }

  /** Runs a JVM as {@link #start} does and waits for it to exit. */
  int run(String name, List<String> options, Map<String, String> env,
      String classPath, String main, String... args) throws Exception {
    Process p = start(name, options, env, classPath, main, args);
    if (!p.waitFor(180, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail(name + " did not finish in 180 s; see " + log(name));
    }
    processes.remove(p);
    return p.exitValue();
  }

  File log(String name) {
    return new File(work, name + ".log");
  }

  /**
   * The hdfs-rdma metrics of each live DataNode that has them, by address,
   * counting everything that happened before the call: JMX refreshes a
   * source's values on a read a metrics period (one second) after the
   * last, so this waits that long first.
   */
  Map<String, DataNodeJmxMetrics> beans() throws IOException {
    final long fresh = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1100);
    try {
      WaitFor.waitFor(() -> System.nanoTime() - fresh >= 0, 20,
          10_000);
    } catch (TimeoutException | InterruptedException e) {
      throw new IOException("interrupted waiting for fresh metrics", e);
    }
    Map<String, DataNodeJmxMetrics> beans =
        new HashMap<String, DataNodeJmxMetrics>();
    for (DatanodeInfo d : fs.getDataNodeStats(DatanodeReportType.LIVE)) {
      DataNodeJmxMetrics b = DataNodeJmxMetrics.read(d.getInfoAddr());
      if (b != null) {
        beans.put(d.getXferAddr(), b);
      }
    }
    return beans;
  }

  /** Data bytes all DataNodes fetched by UCX get (their beans). */
  long fetched() throws IOException {
    long n = 0;
    for (DataNodeJmxMetrics b : beans().values()) {
      n += b.dataBytesFetched();
    }
    return n;
  }

  /** Client block replicas all DataNodes received over UCX. */
  long blocksOverUcx() throws IOException {
    long n = 0;
    for (DataNodeJmxMetrics b : beans().values()) {
      n += b.blocksOverUcx();
    }
    return n;
  }

  /** Client block replicas all DataNodes received over TCP. */
  long blocksOverTcp() throws IOException {
    long n = 0;
    for (DataNodeJmxMetrics b : beans().values()) {
      n += b.blocksOverTcp();
    }
    return n;
  }

  /** The bytes of an HDFS file. */
  byte[] readFile(Path path) throws IOException {
    return org.apache.hadoop.hdfs.DFSTestUtil.readFileBuffer(fs, path);
  }

  @Override
  public void close() {
    if (fs != null) {
      try {
        fs.close();
      } catch (IOException e) {
        // shutting down
      }
      fs = null;
    }
    for (Process p : processes) {
      p.destroyForcibly();
    }
    for (Process p : processes) {
      try {
        p.waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    processes.clear();
  }
}
