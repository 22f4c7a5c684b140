package org.hdfsrdma.hadoop.tools;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.InterruptedIOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;
import org.apache.hadoop.util.VersionInfo;
import org.hdfsrdma.hadoop.UcxDataNodePlugin;
import org.hdfsrdma.hadoop.agent.HadoopVersionCheck;
import org.hdfsrdma.hadoop.agent.PatchState;
import org.hdfsrdma.hadoop.client.DistributionPolicy;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.NativeIntrospection;
import org.hdfsrdma.ucx.UcxLibrary;
import org.hdfsrdma.ucx.UcxUnavailableException;

/**
 * {@code hdfs-rdma check}: is the UCX write path active in a JVM started
 * like this one? Run it with the class path, JVM options (the
 * {@code -javaagent:}) and configuration of the job or daemon in question:
 *
 * <pre>
 * java -javaagent:JAR -cp CONF:HADOOP_CLASSPATH org.hdfsrdma.hadoop.tools.Check
 *     [-D key=value ...] [--client | --datanode]
 *     [--probe [--probe-path P] [--probe-bytes N]]
 * hadoop jar JAR check ...                   (with the agent in HADOOP_OPTS)
 * </pre>
 *
 * It prints one line per finding ({@code OK}, {@code INFO}, {@code WARN},
 * {@code PROBLEM}): the Hadoop on the class path, whether the agent runs
 * and replaced the client and DataNode classes (with each class's code
 * source), the UCX libraries and their version, UCX's transports and
 * devices, the effective {@code dfs.*.rdma.*} settings, the DataNode
 * plugin, and with {@code --probe} a small write to fs.defaultFS
 * confirmed by this JVM's UCX counter and by each DataNode's
 * {@code Hadoop:service=DataNode,name=HdfsRdmaDataNode-*} bean. Exits 1 when any
 * line is a PROBLEM, each saying why in one line.
 *
 * <p>Roles: {@code --client} checks what a writer needs (a YARN container,
 * a Spark executor, the hdfs command), {@code --datanode} what a DataNode
 * needs; by default both, the DataNode part only where hadoop-hdfs's
 * DataNode classes are on the class path.
 */
public final class Check extends Configured implements Tool {

  /** What a finding means for the operator. */
  enum Level { OK, INFO, WARN, PROBLEM }

  private static final String USAGE = "usage: check [-D key=value ...]"
      + " [--client | --datanode] [--probe [--probe-path PATH]"
      + " [--probe-bytes N]]";
  private static final long BEAN_WAIT_MS = 10_000;
  /** How long the probe waits for the NameNode to list every replica. */
  private static final long REPLICAS_WAIT_MS = 10_000;
  private static final long REPLICAS_POLL_MS = 100;

  private final PrintStream out;
  private int problems;

  Check(PrintStream out) {
    this.out = out;
  }

  /** Exits 0 when nothing is a problem, 1 otherwise, 2 on bad usage. */
  public static void main(String[] args) {
    // "hadoop jar hdfs-rdma-dropin.jar check ..." passes the word along.
    String[] rest = args.length > 0 && "check".equals(args[0])
        ? Arrays.copyOfRange(args, 1, args.length) : args;
    int code;
    try {
      code = ToolRunner.run(new HdfsConfiguration(), new Check(System.out),
          rest);
    } catch (Throwable t) {
      System.out.println("PROBLEM check: failed: " + t);
      code = 1;
    }
    System.out.flush();
    System.exit(code);
  }

  private void finding(Level level, String topic, String text) {
    if (level == Level.PROBLEM) {
      problems++;
    }
    // One line per finding, whatever an exception message holds.
    int nl = text.indexOf('\n');
    out.println(String.format("%-8s%s: %s", level, topic,
        nl < 0 ? text : text.substring(0, nl).trim() + " ..."));
  }

  @Override
  public int run(String[] args) throws Exception {
    boolean client = true;
    boolean dataNode = true;
    boolean dataNodeAsked = false;
    boolean probe = false;
    String probePath = null;
    long probeBytes = 1024 * 1024 + 17;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--client":
          dataNode = false;
          break;
        case "--datanode":
          client = false;
          dataNodeAsked = true;
          break;
        case "--probe":
          probe = true;
          break;
        case "--probe-path":
          probePath = ++i < args.length ? args[i] : null;
          break;
        case "--probe-bytes":
          probeBytes = ++i < args.length ? Long.parseLong(args[i]) : -1;
          break;
        default:
          System.err.println("unknown argument " + args[i] + "\n" + USAGE);
          return 2;
      }
    }
    if (!client && !dataNode || probeBytes < 1
        || (probe && !client)) {
      System.err.println(USAGE);
      return 2;
    }
    Configuration conf = getConf();
    finding(Level.INFO, "java", System.getProperty("java.version") + " ("
        + System.getProperty("java.home") + ")");
    hadoop();
    agent();
    boolean clientActive = false;
    boolean dataNodeActive = false;
    if (client) {
      clientActive = classes(PatchState.Group.CLIENT);
    }
    if (dataNode) {
      if (!dataNodeAsked && getClass().getClassLoader().getResource(
          "org/apache/hadoop/hdfs/server/datanode/DataNode.class") == null) {
        finding(Level.INFO, "patch", "hadoop-hdfs's DataNode is not on the"
            + " class path: checking a client only");
        dataNode = false;
      } else {
        dataNodeActive = classes(PatchState.Group.DATANODE);
      }
    }
    boolean ucx = ucxLibraries();
    settings(conf, client, dataNode);
    if (ucx && clientActive) {
      distribution(conf);
    }
    if (ucx && (clientActive || dataNodeActive)) {
      runtime(conf);
    }
    if (probe) {
      probe(conf, probePath, probeBytes);
    }
    out.println(problems == 0 ? "hdfs-rdma check: no problems"
        : "hdfs-rdma check: " + problems + " problem(s)");
    return problems == 0 ? 0 : 1;
  }

  private static String codeSource(Class<?> c) {
    CodeSource cs = c.getProtectionDomain().getCodeSource();
    if (cs == null || cs.getLocation() == null) {
      return "an unknown location";
    }
    String s = cs.getLocation().toString();
    return s.startsWith("file:") ? s.substring(5) : s;
  }

  private void hadoop() {
    String version = VersionInfo.getVersion();
    String where = "hadoop-common from " + codeSource(VersionInfo.class);
    if (HadoopVersionCheck.SUPPORTED.contains(version)) {
      finding(Level.OK, "hadoop", version + " (" + where + ")");
    } else {
      finding(Level.PROBLEM, "hadoop", version + " (" + where + "):"
          + " hdfs-rdma works with Apache Hadoop "
          + String.join(" and ", HadoopVersionCheck.SUPPORTED)
          + " only; writes stay on TCP");
    }
  }

  private void agent() {
    if (PatchState.agentInstalled()) {
      finding(Level.OK, "agent", "active (-javaagent:"
          + PatchState.agentJar() + ")");
    } else if (PatchState.agentError() != null) {
      finding(Level.PROBLEM, "agent", "given but not active: "
          + PatchState.agentError());
    } else if (PatchState.problem(PatchState.Group.CLIENT) == null) {
      finding(Level.INFO, "agent", "not active; the patched classes come"
          + " first on the class path from " + PatchState.ownLocation());
    } else {
      finding(Level.PROBLEM, "agent", "not active: add -javaagent:"
          + jar() + " to this JVM's options (HADOOP_OPTS, the daemons' "
          + "_OPTS, mapreduce.map|reduce.java.opts, "
          + "yarn.app.mapreduce.am.command-opts, "
          + "spark.driver|executor.extraJavaOptions)");
    }
  }

  private static String jar() {
    URL own = PatchState.ownLocation();
    return own != null && own.getPath().endsWith(".jar") ? own.getPath()
        : "/path/to/hdfs-rdma-dropin.jar";
  }

  /** Reports a group; true when its patched classes are loaded. */
  private boolean classes(PatchState.Group group) {
    String problem = PatchState.problem(group);
    if (problem == null) {
      finding(Level.OK, "patch", PatchState.describe(group));
    } else {
      finding(Level.PROBLEM, "patch", problem + "; writes stay on TCP");
    }
    for (String name : PatchState.topLevelClasses(group)) {
      try {
        Class<?> c = Class.forName(name, false, getClass().getClassLoader());
        finding(Level.INFO, "class " + name, (problem == null ? "patched"
            : "Hadoop's own") + ", loaded from " + codeSource(c));
      } catch (Throwable t) {
        finding(Level.INFO, "class " + name, "not loadable: " + t);
      }
    }
    return problem == null;
  }

  private boolean ucxLibraries() {
    if (!UcxLibrary.isAvailable()) {
      finding(Level.PROBLEM, "ucx", "UCX native libraries are not usable"
          + " (install libucx0, or point LD_LIBRARY_PATH at a UCX build): "
          + UcxLibrary.unavailableReason());
      return false;
    }
    finding(Level.OK, "ucx", "UCX " + NativeIntrospection.loadedUcxVersion()
        + " loaded: " + String.join(", ", mappedUcxLibraries()));
    String tls = System.getenv("UCX_TLS");
    if (tls != null) {
      finding(Level.INFO, "ucx", "UCX_TLS=" + tls + " in the environment");
    }
    ucxDevices();
    rdmaDevices();
    return true;
  }

  /** Paths of the UCX libraries this process mapped, from /proc. */
  private static Set<String> mappedUcxLibraries() {
    Set<String> libs = new LinkedHashSet<String>();
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/maps"),
          StandardCharsets.UTF_8)) {
        int slash = line.indexOf('/');
        if (slash >= 0) {
          String path = line.substring(slash);
          String file = path.substring(path.lastIndexOf('/') + 1);
          if (file.matches("libuc[pstm]\\.so.*")
              || path.contains("/ucx/libuct_")) {
            libs.add(path);
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      libs.add("(cannot read /proc/self/maps: " + e + ")");
    }
    return libs;
  }

  /** UCX's transports and devices, as ucx_info -d on the PATH lists them. */
  private void ucxDevices() {
    List<String> lines = command("ucx_info", "-d");
    if (lines == null) {
      finding(Level.INFO, "ucx devices", "ucx_info is not on the PATH"
          + " (Debian: ucx-utils): transports and devices not listed");
      return;
    }
    List<String> pairs = new ArrayList<String>();
    String transport = null;
    for (String line : lines) {
      String t = line.replaceFirst("^#\\s*", "");
      if (t.startsWith("Transport:")) {
        transport = t.substring("Transport:".length()).trim();
      } else if (t.startsWith("Device:") && transport != null) {
        pairs.add(transport + "/" + t.substring("Device:".length()).trim());
      }
    }
    finding(Level.INFO, "ucx devices", pairs.isEmpty()
        ? "ucx_info -d listed none" : "transport/device pairs UCX can use"
        + " here (ucx_info -d): " + String.join(", ", pairs));
  }

  private void rdmaDevices() {
    File[] devices = new File("/sys/class/infiniband").listFiles();
    if (devices == null || devices.length == 0) {
      finding(Level.INFO, "rdma devices", "none in /sys/class/infiniband:"
          + " UCX moves data over TCP and shared memory here");
      return;
    }
    List<String> names = new ArrayList<String>();
    for (File d : devices) {
      names.add(d.getName());
    }
    java.util.Collections.sort(names);
    finding(Level.INFO, "rdma devices", String.join(", ", names));
  }

  /** The command's output lines, or null when it cannot run. */
  private static List<String> command(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true)
          .start();
      List<String> lines = new ArrayList<String>();
      try (BufferedReader r = new BufferedReader(new InputStreamReader(
          p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String l; (l = r.readLine()) != null;) {
          lines.add(l);
        }
      }
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return null;
      }
      return lines;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** Keys and defaults of hdfs-rdma-default.xml, in its order. */
  private static Map<String, String> defaults() {
    Configuration xml = new Configuration(false);
    xml.addResource(HdfsRdmaConfigKeys.DEFAULT_RESOURCE);
    Map<String, String> defaults = new TreeMap<String, String>();
    for (Map.Entry<String, String> e : xml) {
      defaults.put(e.getKey(), e.getValue());
    }
    return defaults;
  }

  private static String source(Configuration conf, String key) {
    String[] sources = conf.getPropertySources(key);
    return sources == null || sources.length == 0 ? "set"
        : sources[sources.length - 1];
  }

  private void settings(Configuration conf, boolean client,
      boolean dataNode) {
    Map<String, String> defaults = defaults();
    for (Map.Entry<String, String> d : defaults.entrySet()) {
      String value = conf.get(d.getKey());
      finding(Level.INFO, "setting", d.getKey() + "=" + (value == null
          ? d.getValue() + " (default)"
          : value + " (" + source(conf, d.getKey()) + ")"));
    }
    for (Map.Entry<String, String> e : conf) {
      String k = e.getKey();
      if (k.matches("dfs\\.(client\\.|datanode\\.)?rdma\\..*")
          && !defaults.containsKey(k)) {
        finding(Level.WARN, "setting", k + "=" + e.getValue() + " ("
            + source(conf, k) + ") is not an hdfs-rdma key; see "
            + HdfsRdmaConfigKeys.DEFAULT_RESOURCE);
      }
    }
    String protection = conf.getTrimmed("dfs.data.transfer.protection", "");
    boolean encrypted = conf.getBoolean("dfs.encrypt.data.transfer", false)
        || protection.contains("integrity") || protection.contains("privacy");
    if (encrypted) {
      finding(Level.PROBLEM, "setting", "dfs.encrypt.data.transfer or a"
          + " dfs.data.transfer.protection of integrity/privacy is set: UCX"
          + " gives no such protection, so writes stay on TCP");
    }
    if (client && !conf.getBoolean(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_DEFAULT)) {
      finding(Level.PROBLEM, "setting",
          HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY + " is not true:"
          + " this JVM's writes stay on TCP");
    }
    if (dataNode) {
      if (!conf.getBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY,
          HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_DEFAULT)) {
        finding(Level.PROBLEM, "setting",
            HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY + " is not"
            + " true: a DataNode with this configuration receives over TCP");
      }
      String plugin = UcxDataNodePlugin.class.getName();
      List<String> plugins = Arrays.asList(
          conf.getTrimmedStrings("dfs.datanode.plugins"));
      if (plugins.contains(plugin)) {
        finding(Level.OK, "datanode plugin", plugin
            + " in dfs.datanode.plugins");
      } else {
        finding(Level.PROBLEM, "datanode plugin", plugin + " is not in"
            + " dfs.datanode.plugins (" + plugins + "): a DataNode with this"
            + " configuration starts no UCX and receives over TCP");
      }
    }
  }

  /**
   * Whether a writer in a JVM like this one would start UCX (checked before
   * this check starts UCX itself), and how it distributes pipelines.
   */
  private void distribution(Configuration conf) {
    RdmaConf rdma = new RdmaConf(conf);
    String why = DistributionPolicy.reasonNotToStart(rdma);
    if (why == null) {
      finding(Level.INFO, "distribution", rdma.distribution() + ": writers"
          + " start UCX; " + shape(rdma));
    } else {
      finding(Level.WARN, "distribution", "writers in a JVM like this one"
          + " would not start UCX and write over TCP: " + why + " ("
          + HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY
          + "=fan-out forces UCX)");
    }
  }

  /** What pipelines look like under the client's distribution. */
  private static String shape(RdmaConf rdma) {
    switch (rdma.distribution()) {
    case FAN_OUT:
      return "pipelines fan out where every get is one-sided or emulated";
    case CHAIN:
      return "every DataNode fetches from the one before it (chain)";
    case HYBRID:
      return "the client feeds the first " + rdma.hybridFeeders()
          + " DataNodes of a pipeline, those feed the rest (hybrid)";
    default:
      return "pipelines fan out where every get is one-sided";
    }
  }

  private void runtime(Configuration conf) {
    try {
      UcxRuntime.get(conf);
      finding(Level.OK, "ucx runtime", "started in this JVM (UCX "
          + NativeIntrospection.loadedUcxVersion() + ")");
    } catch (UcxUnavailableException | RuntimeException e) {
      finding(Level.PROBLEM, "ucx runtime", "cannot start: "
          + e.getMessage());
    }
  }

  /** The hdfs-rdma beans of live DataNodes by transfer address. */
  private Map<String, DataNodeJmxMetrics> beans(
      Map<String, String> httpByXfer) {
    Map<String, DataNodeJmxMetrics> beans =
        new HashMap<String, DataNodeJmxMetrics>();
    for (Map.Entry<String, String> e : httpByXfer.entrySet()) {
      try {
        DataNodeJmxMetrics b = DataNodeJmxMetrics.read(e.getValue());
        if (b != null) {
          beans.put(e.getKey(), b);
        }
      } catch (IOException ex) {
        // reported after the write, when the DataNode matters
      }
    }
    return beans;
  }

  private void probe(Configuration conf, String pathName, long bytes) {
    FileSystem fs;
    try {
      fs = FileSystem.get(conf);
    } catch (IOException e) {
      finding(Level.PROBLEM, "probe", "cannot reach fs.defaultFS: " + e);
      return;
    }
    if (!(fs instanceof DistributedFileSystem)) {
      finding(Level.PROBLEM, "probe", "fs.defaultFS is " + fs.getUri()
          + ", not HDFS");
      return;
    }
    DistributedFileSystem dfs = (DistributedFileSystem) fs;
    Path path = dfs.makeQualified(new Path(pathName != null ? pathName
        : ".hdfs-rdma-check-" + hostName() + "-" + pid() + "-"
        + System.currentTimeMillis()));
    byte[] data = new byte[(int) bytes];
    new Random().nextBytes(data);
    try {
      Map<String, String> httpByXfer = new LinkedHashMap<String, String>();
      boolean seeDataNodes = true;
      try {
        for (DatanodeInfo d
            : dfs.getDataNodeStats(DatanodeReportType.LIVE)) {
          httpByXfer.put(d.getXferAddr(), d.getInfoAddr());
        }
      } catch (IOException e) {
        // The NameNode lists DataNodes to its superuser only.
        seeDataNodes = false;
        finding(Level.WARN, "probe", "cannot list the DataNodes (" + e
            + "): run --probe as the HDFS superuser to have their counters"
            + " checked too");
      }
      Map<String, DataNodeJmxMetrics> before = beans(httpByXfer);
      long sentBefore = sent();
      try (FSDataOutputStream o = dfs.create(path, false)) {
        o.write(data);
      }
      long sent = sent() - sentBefore;
      Map<String, Long> expected = new TreeMap<String, Long>();
      Map<String, Integer> blocks = new HashMap<String, Integer>();
      int replicas = 0;
      // Public API only: it is the same on every Hadoop the check may run.
      for (BlockLocation b
          : settledLocations(dfs, path, bytes, httpByXfer.size())) {
        for (String node : b.getNames()) {
          Long e = expected.get(node);
          expected.put(node, (e == null ? 0 : e) + b.getLength());
          Integer n = blocks.get(node);
          blocks.put(node, (n == null ? 0 : n) + 1);
          replicas++;
        }
      }
      byte[] back = new byte[data.length];
      try (FSDataInputStream in = dfs.open(path)) {
        in.readFully(0, back);
      }
      String written = "wrote " + bytes + " bytes to " + path + " ("
          + replicas + " block replicas)";
      if (Arrays.equals(data, back)) {
        finding(Level.OK, "probe", written + " and read them back intact");
      } else {
        finding(Level.PROBLEM, "probe", written + " but read back other"
            + " bytes");
      }
      if (sent == bytes) {
        finding(Level.OK, "probe", "this JVM sent all " + bytes + " bytes"
            + " as UCX descriptors");
      } else {
        finding(Level.PROBLEM, "probe", "this JVM sent " + sent + " of "
            + bytes + " bytes as UCX descriptors, the rest over TCP"
            + (runtime() == null ? " (no UCX runtime in this JVM)" : ""));
      }
      if (seeDataNodes) {
        dataNodes(expected, blocks, httpByXfer, before);
      }
    } catch (IOException | RuntimeException | LinkageError e) {
      finding(Level.PROBLEM, "probe", "failed: " + e);
    } finally {
      try {
        dfs.delete(path, false);
      } catch (IOException e) {
        finding(Level.WARN, "probe", "cannot delete " + path + ": " + e);
      }
    }
  }

  /**
   * The probe file's block locations once the NameNode knows as many
   * replicas of each block as the file asks for (or as there are live
   * DataNodes, when known), or after {@link #REPLICAS_WAIT_MS} with a
   * warning. A file closes once each block has its minimum replication;
   * the other DataNodes report their replicas a heartbeat later, so
   * locations read right after the close can list fewer, and the probe
   * would leave their counters unchecked.
   */
  private BlockLocation[] settledLocations(DistributedFileSystem dfs,
      Path path, long bytes, int liveDataNodes) throws IOException {
    FileStatus status = dfs.getFileStatus(path);
    int want = status.getReplication();
    if (liveDataNodes > 0) {
      want = Math.min(want, liveDataNodes);
    }
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(REPLICAS_WAIT_MS);
    while (true) {
      BlockLocation[] locations = dfs.getFileBlockLocations(status, 0, bytes);
      int fewest = want;
      for (BlockLocation b : locations) {
        fewest = Math.min(fewest, b.getNames().length);
      }
      if (fewest >= want) {
        return locations;
      }
      if (System.nanoTime() - deadline >= 0) {
        finding(Level.WARN, "probe", "after " + REPLICAS_WAIT_MS + " ms the"
            + " NameNode lists " + fewest + " of " + want + " replicas of a"
            + " block of " + path + "; only the DataNodes it lists are"
            + " checked");
        return locations;
      }
      try {
        Thread.sleep(REPLICAS_POLL_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while waiting for the"
            + " replicas of " + path);
      }
    }
  }

  private static long sent() {
    UcxRuntime r = runtime();
    return r == null ? 0 : r.metrics().dataBytesSent();
  }

  /**
   * This JVM's UCX runtime, or null. On another Hadoop the runtime's class
   * is not even loaded: it links against the Guava that Hadoop 2.9 ships
   * and Hadoop 3's shaded client hides.
   */
  private static UcxRuntime runtime() {
    return HadoopVersionCheck.problem() != null ? null : UcxRuntime.current();
  }

  /**
   * Each DataNode of the probe's pipelines must have fetched at least its
   * replicas' bytes by UCX get since before the write (other writers may
   * add to its counter, never take away).
   */
  private void dataNodes(Map<String, Long> expected,
      Map<String, Integer> blocks, Map<String, String> httpByXfer,
      Map<String, DataNodeJmxMetrics> before) {
    long total = 0;
    for (Map.Entry<String, Long> e : expected.entrySet()) {
      String node = e.getKey();
      String http = httpByXfer.get(node);
      long want = e.getValue();
      DataNodeJmxMetrics b0 = before.get(node);
      long f0 = b0 == null ? 0 : b0.dataBytesFetched();
      long u0 = b0 == null ? 0 : b0.blocksOverUcx();
      long t0 = b0 == null ? 0 : b0.blocksOverTcp();
      DataNodeJmxMetrics b1 = null;
      long deadline = System.currentTimeMillis() + BEAN_WAIT_MS;
      try {
        do {
          // Done when the bytes are there, or when the node counted its
          // replicas and some came over TCP (then they never will be).
          b1 = DataNodeJmxMetrics.read(http);
          if (b1 == null || b1.dataBytesFetched() - f0 >= want
              || (b1.blocksOverTcp() > t0 && b1.blocksOverUcx() - u0
                  + b1.blocksOverTcp() - t0 >= blocks.get(node))) {
            break;
          }
          Thread.sleep(100);
        } while (System.currentTimeMillis() < deadline);
      } catch (IOException ex) {
        finding(Level.PROBLEM, "probe", "DataNode " + node + ": cannot read"
            + " http://" + http + "/jmx: " + ex);
        continue;
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        return;
      }
      if (b1 == null) {
        finding(Level.PROBLEM, "probe", "DataNode " + node + " (http://"
            + http + ") has no " + DataNodeJmxMetrics.NAME + " bean: hdfs-rdma"
            + " is not running there (no agent, no UcxDataNodePlugin in its"
            + " dfs.datanode.plugins, or UCX off: see its log)");
        continue;
      }
      long fetched = b1.dataBytesFetched() - f0;
      total += fetched;
      String counts = "fetched " + fetched + " bytes over UCX (the"
          + " probe's replicas there: " + want + "), blocks over UCX +"
          + (b1.blocksOverUcx() - u0) + ", over TCP +"
          + (b1.blocksOverTcp() - t0);
      String transports = b1.getString("tag.Transports");
      if (transports != null && !transports.isEmpty()) {
        counts += "; transports " + transports;
      }
      finding(fetched >= want ? Level.OK : Level.PROBLEM, "probe",
          "DataNode " + node + " " + counts);
    }
    finding(Level.INFO, "probe", "DataNodes of the probe fetched " + total
        + " bytes over UCX in all (gets, or same-host reads of the client's"
        + " shared memory)");
  }

  private static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "localhost";
    }
  }

  private static String pid() {
    String name = ManagementFactory.getRuntimeMXBean().getName();
    int at = name.indexOf('@');
    return at > 0 ? name.substring(0, at) : name;
  }
}
