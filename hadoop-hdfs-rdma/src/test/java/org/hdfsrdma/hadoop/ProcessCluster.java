package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertTrue;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.test.GenericTestUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A NameNode and DataNodes, each its own JVM on this test's class path (so
 * on this module's patched classes and test configuration: UCX on), on
 * loopback ports, for tests that kill, measure or attack daemons. Each JVM
 * writes its log and any crash report ({@code hs_err}) to the cluster's
 * directory.
 */
final class ProcessCluster implements Closeable {

  private static final Logger LOG =
      LoggerFactory.getLogger(ProcessCluster.class);

  /** What a started JVM runs. */
  enum Jvm {
    /** This module's classes and configuration (UCX on). */
    PATCHED,
    /** The same, on a host whose UCX libraries cannot load. */
    UCX_BROKEN,
    /** Stock Hadoop 2.9.2 jars only: none of hdfs-rdma, no UCX settings. */
    STOCK
  }

  /** One DataNode JVM. */
  static final class DataNodeProcess {
    final Process process;
    final int xferPort;
    final int httpPort;
    final int ipcPort;
    final String name;
    /** Its log's name for {@link ProcessCluster#log}. */
    final String logName;
    /** What started it, so that it can be started again as itself. */
    private final Jvm kind;
    private final String[] args;

    DataNodeProcess(Process process, int xferPort, int httpPort, int ipcPort,
        String name, String logName, Jvm kind, String[] args) {
      this.process = process;
      this.xferPort = xferPort;
      this.httpPort = httpPort;
      this.ipcPort = ipcPort;
      this.name = name;
      this.logName = logName;
      this.kind = kind;
      this.args = args;
    }

    String xferAddress() {
      return "127.0.0.1:" + xferPort;
    }
  }

  /** Log lines per DataNode in a report of DataNodes that are not live. */
  private static final int REPORT_LINES = 15;

  private final File work;
  private final List<Process> daemons = new ArrayList<Process>();
  private final List<DataNodeProcess> dataNodes =
      new ArrayList<DataNodeProcess>();
  private String fsUri;
  private String httpAddress;
  private String[] common;
  /** "-D key=value" pairs of every daemon started from now on. */
  private final List<String> daemonConf = new ArrayList<String>();
  /** Environment variables of every JVM started from now on. */
  private final Map<String, String> environment =
      new HashMap<String, String>();

  ProcessCluster(String name) {
    work = GenericTestUtils.getTestDir(name + "-" + System.nanoTime());
    work.mkdirs();
  }

  /**
   * Sets an environment variable of every JVM started after this call, or
   * with {@code value} null, leaves it as this JVM has it.
   */
  ProcessCluster environment(String name, String value) {
    if (value == null) {
      environment.remove(name);
    } else {
      environment.put(name, value);
    }
    return this;
  }

  /**
   * Adds "key=value" settings to every daemon (NameNode and DataNodes)
   * started after this call, e.g. the NameNode's replication and
   * heartbeat intervals, which {@link #start(int, int, Jvm, String...)}
   * gives only DataNodes otherwise.
   */
  ProcessCluster daemonConf(String... keyValues) {
    for (String kv : keyValues) {
      Collections.addAll(daemonConf, "-D", kv);
    }
    return this;
  }

  File work() {
    return work;
  }

  String fsUri() {
    return fsUri;
  }

  /** The NameNode's http address (for fsck). */
  String httpAddress() {
    return httpAddress;
  }

  List<DataNodeProcess> dataNodes() {
    return Collections.unmodifiableList(dataNodes);
  }

  static int freePort() throws IOException {
    return FreePorts.next();
  }

  /**
   * Starts a JVM on this test's class path; {@link Jvm#UCX_BROKEN}: one
   * whose UCX libraries cannot load (an empty libucp.so.0 first on
   * LD_LIBRARY_PATH and java.library.path, as on a host with a broken or
   * missing UCX install).
   */
  Process start(String name, Jvm kind, String mainClass, String... args)
      throws IOException {
    boolean withoutUcx = kind == Jvm.UCX_BROKEN;
    File broken = new File(work, "broken-ucx");
    String errorFile = "-XX:ErrorFile=" + new File(work, "hs_err_pid%p.log");
    List<String> command = kind == Jvm.STOCK
        ? ChildJvm.stockCommand("-Xmx512m", errorFile)
        : ChildJvm.command("-Xmx512m", errorFile);
    if (withoutUcx) {
      // JUCX finds libucp through System.loadLibrary, then the dynamic
      // linker: both must meet the broken library.
      command.add("-Djava.library.path=" + broken.getAbsolutePath());
    }
    command.add("-cp");
    // conf/ first: FsShell insists on a core-site.xml.
    command.add(new File(work, "conf").getAbsolutePath() + File.pathSeparator
        + (kind == Jvm.STOCK ? ChildJvm.stockClassPath()
            : ChildJvm.classPath()));
    command.add(mainClass);
    Collections.addAll(command, args);
    ProcessBuilder builder = new ProcessBuilder(command)
        .directory(work)
        .redirectErrorStream(true)
        .redirectOutput(new File(work, name + ".log"));
    builder.environment().putAll(environment);
    if (withoutUcx) {
      broken.mkdirs();
      new java.io.FileOutputStream(new File(broken, "libucp.so.0")).close();
      String path = builder.environment().get("LD_LIBRARY_PATH");
      builder.environment().put("LD_LIBRARY_PATH", broken.getAbsolutePath()
          + (path == null || path.isEmpty() ? "" : ":" + path));
    }
    Process p = builder.start();
    daemons.add(p);
    return p;
  }

  /**
   * Starts a NameNode and {@code count} DataNodes, the one numbered
   * {@code special} (if any) of the given kind, each DataNode with
   * {@code dataNodeConf} ("key=value" settings) besides the defaults.
   */
  ProcessCluster start(int count, int special, Jvm kind,
      String... dataNodeConf) throws Exception {
    int nnPort = freePort();
    httpAddress = "127.0.0.1:" + freePort();
    fsUri = "hdfs://127.0.0.1:" + nnPort;
    File conf = new File(work, "conf");
    conf.mkdirs();
    Files.write(new File(conf, "core-site.xml").toPath(),
        ("<?xml version=\"1.0\"?>\n<configuration><property><name>"
        + "fs.defaultFS</name><value>" + fsUri + "</value></property>"
        + "</configuration>\n").getBytes(StandardCharsets.UTF_8));
    // JMX serves a metrics2 source's values as of its last snapshot, taken
    // at most once per period: one second, so that a read a second after
    // the last one is fresh.
    Files.write(new File(conf, "hadoop-metrics2.properties").toPath(),
        "*.period=1\n".getBytes(StandardCharsets.UTF_8));
    common = new String[] {
        "-D", "fs.defaultFS=" + fsUri,
        "-D", "dfs.namenode.name.dir=" + new File(work, "name"),
        "-D", "dfs.namenode.http-address=" + httpAddress,
        "-D", "dfs.namenode.datanode.registration.ip-hostname-check=false",
        "-D", "dfs.namenode.fs-limits.min-block-size=0",
        // Tests count replicas; a loaded machine must not drop one.
        "-D", "dfs.namenode.replication.considerLoad=false",
        "-D", "hadoop.tmp.dir=" + new File(work, "tmp")};
    List<String> all = new ArrayList<String>();
    Collections.addAll(all, common);
    all.addAll(daemonConf);
    common = all.toArray(new String[0]);
    List<String> format = new ArrayList<String>();
    Collections.addAll(format, common);
    Collections.addAll(format, "-format", "-force", "-nonInteractive");
    Process f = start("format", Jvm.PATCHED,
        "org.apache.hadoop.hdfs.server.namenode.NameNode",
        format.toArray(new String[0]));
    assertTrue(f.waitFor(120, TimeUnit.SECONDS));
    daemons.remove(f);
    start("namenode", Jvm.PATCHED,
        "org.apache.hadoop.hdfs.server.namenode.NameNode", common);
    for (int i = 0; i < count; i++) {
      addDataNode(i == special ? kind : Jvm.PATCHED, dataNodeConf);
    }
    return this;
  }

  /** Starts one more DataNode. */
  DataNodeProcess addDataNode(Jvm kind, String... dataNodeConf)
      throws IOException {
    int i = dataNodes.size();
    int port = freePort();
    int http = freePort();
    int ipc = freePort();
    List<String> args = new ArrayList<String>();
    Collections.addAll(args, common);
    Collections.addAll(args,
        "-D", "dfs.datanode.data.dir=" + new File(work, "data" + i),
        "-D", "dfs.datanode.address=127.0.0.1:" + port,
        "-D", "dfs.datanode.http.address=127.0.0.1:" + http,
        "-D", "dfs.datanode.ipc.address=127.0.0.1:" + ipc);
    for (String kv : dataNodeConf) {
      Collections.addAll(args, "-D", kv);
    }
    String name = "datanode" + i;
    String[] argv = args.toArray(new String[0]);
    DataNodeProcess d = new DataNodeProcess(start(name, kind,
        "org.apache.hadoop.hdfs.server.datanode.DataNode", argv), port, http,
        ipc, name, name, kind, argv);
    dataNodes.add(d);
    return d;
  }

  /**
   * Starts DataNode {@code i} again, on its data directory and ports, once
   * its JVM has ended (killed by a test); its log goes on in a file of its
   * own ({@code datanodeI-restartN.log}). Returns the new process, which
   * {@link #dataNodes()} lists in its place from now on.
   */
  DataNodeProcess restartDataNode(int i) throws IOException,
      InterruptedException {
    DataNodeProcess old = dataNodes.get(i);
    if (!old.process.waitFor(60, TimeUnit.SECONDS)) {
      throw new IOException(old.name + " still runs: kill it first");
    }
    daemons.remove(old.process);
    int n = 1;
    while (new File(work, old.name + "-restart" + n + ".log").exists()) {
      n++;
    }
    String logName = old.name + "-restart" + n;
    Process p = start(logName, old.kind,
        "org.apache.hadoop.hdfs.server.datanode.DataNode", old.args);
    DataNodeProcess d = new DataNodeProcess(p, old.xferPort, old.httpPort,
        old.ipcPort, old.name, logName, old.kind, old.args);
    dataNodes.set(i, d);
    return d;
  }

  /**
   * A client of the cluster (UCX on unless {@code base} says otherwise),
   * once {@code live} DataNodes are live.
   */
  DistributedFileSystem client(Configuration base, int live)
      throws Exception {
    Configuration conf = new Configuration(base);
    conf.set("fs.defaultFS", fsUri);
    conf.set("dfs.namenode.http-address", httpAddress);
    final DistributedFileSystem fs = (DistributedFileSystem)
        FileSystem.newInstance(java.net.URI.create(fsUri), conf);
    try {
      WaitFor.waitFor(() -> {
        try {
          return fs.getDataNodeStats(DatanodeReportType.LIVE).length == live;
        } catch (IOException e) {
          return false;
        }
      }, 500, 120_000);
    } catch (TimeoutException e) {
      fs.close();
      // The cluster's directory, logs included, goes with close().
      TimeoutException why = new TimeoutException("fewer than " + live
          + " DataNodes live after 120 s" + dataNodeReport());
      why.initCause(e);
      throw why;
    } catch (Exception e) {
      fs.close();
      throw e;
    }
    return fs;
  }

  /**
   * Per DataNode: whether its JVM runs (or its exit code) and the warnings
   * and errors of its log, last {@link #REPORT_LINES} of them.
   */
  private String dataNodeReport() {
    StringBuilder b = new StringBuilder();
    for (DataNodeProcess d : dataNodes) {
      b.append("\n").append(d.name).append(" (").append(d.xferAddress())
          .append("): ").append(d.process.isAlive() ? "running"
              : "exited " + d.process.exitValue());
      List<String> notable = new ArrayList<String>();
      try {
        // A JVM that ended: its last lines, whatever they are (a native
        // abort prints its reason without a log level).
        boolean ended = !d.process.isAlive();
        for (String line : log(d.logName).split("\n")) {
          if (ended || line.contains(" WARN ") || line.contains(" ERROR ")
              || line.contains(" FATAL ") || line.startsWith("Caused by")) {
            notable.add(line);
          }
        }
      } catch (IOException e) {
        notable.add("(no log: " + e + ")");
      }
      for (String line : notable.subList(
          Math.max(0, notable.size() - REPORT_LINES), notable.size())) {
        b.append("\n  ").append(line);
      }
    }
    String crashes = crashSummary();
    if (crashes != null) {
      b.append("\n").append(crashes);
    }
    return b.toString();
  }

  /** The pid of a started JVM. */
  static long pid(Process p) {
    try {
      return (Long) Process.class.getMethod("pid").invoke(p);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError("Process.pid() needs Java 9", e);
    }
  }

  /**
   * A DataNode's memory once a full collection ran and malloc returned its
   * free memory to the system: its Java heap in use, and the resident
   * memory of every mapping outside the Java heap (UCX, malloc, thread
   * stacks, metaspace, code): the two places a flood could leave something
   * behind. Only what something still holds counts: neither the heap pages
   * the collector happened to touch nor the free memory malloc happened to
   * keep moves the second figure.
   */
  static long[] retainedMemory(DataNodeProcess d) throws Exception {
    long pid = pid(d.process);
    jcmd(pid, "GC.run");
    // Each space of the heap as any collector prints it: [start, ..., end).
    Matcher space = Pattern.compile(
        "\\[0x([0-9a-f]+),\\s*(?:0x[0-9a-f]+,\\s*)*0x([0-9a-f]+)\\)")
        .matcher(jcmd(pid, "GC.heap_info"));
    long heapStart = -1;
    long heapEnd = 0;
    while (space.find()) {
      long start = Long.parseUnsignedLong(space.group(1), 16);
      heapStart = heapStart < 0 ? start : Math.min(heapStart, start);
      heapEnd = Math.max(heapEnd, Long.parseUnsignedLong(space.group(2), 16));
    }
    if (heapStart < 0) {
      throw new IOException("no heap range in jcmd GC.heap_info of "
          + d.name);
    }
    try {
      jcmd(pid, "System.trim_native_heap");
    } catch (IOException e) {
      // A JDK without the command: malloc's free memory stays counted.
      LOG.warn("malloc's free memory counted as retained", e);
    }
    return new long[] {memoryUsage(d, "HeapMemoryUsage")[0],
        residentOutside(pid, heapStart, heapEnd)};
  }

  /** What {@code jcmd pid command} printed. */
  private static String jcmd(long pid, String command) throws Exception {
    Process p = new ProcessBuilder(System.getProperty("java.home")
        + "/bin/jcmd", String.valueOf(pid), command)
        .redirectErrorStream(true).start();
    String out = new String(readAll(p.getInputStream()),
        StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0
        || out.contains("Unknown diagnostic command")) {
      throw new IOException("jcmd " + pid + " " + command + " failed: "
          + out);
    }
    return out;
  }

  /** Resident bytes of a process's mappings outside [from, to). */
  static long residentOutside(long pid, long from, long to)
      throws IOException {
    Pattern mapping = Pattern.compile("^([0-9a-f]+)-([0-9a-f]+) ");
    long total = 0;
    boolean outside = false;
    for (String line : Files.readAllLines(new File("/proc/" + pid
        + "/smaps").toPath(), StandardCharsets.UTF_8)) {
      Matcher m = mapping.matcher(line);
      if (m.find()) {
        outside = Long.compareUnsigned(
            Long.parseUnsignedLong(m.group(2), 16), from) <= 0
            || Long.compareUnsigned(
                Long.parseUnsignedLong(m.group(1), 16), to) >= 0;
      } else if (outside && line.startsWith("Rss:")) {
        total += Long.parseLong(line.replaceAll("\\D", "")) * 1024;
      }
    }
    return total;
  }

  /** {used, committed} of a usage attribute of java.lang:type=Memory. */
  private static long[] memoryUsage(DataNodeProcess d, String attribute)
      throws IOException {
    String json = jmx(d, "java.lang:type=Memory");
    Matcher m = Pattern.compile("\"" + attribute
        + "\"\\s*:\\s*\\{([^}]*)\\}").matcher(json);
    if (!m.find()) {
      throw new IOException("no " + attribute + " in " + json);
    }
    return new long[] {field(m.group(1), "used"),
        field(m.group(1), "committed")};
  }

  private static long field(String object, String name) throws IOException {
    Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*(-?\\d+)")
        .matcher(object);
    if (!m.find()) {
      throw new IOException("no " + name + " in " + object);
    }
    return Long.parseLong(m.group(1));
  }

  /** The JVM crash reports written in the cluster's directory. */
  List<File> crashReports() {
    List<File> out = new ArrayList<File>();
    File[] files = work.listFiles();
    if (files != null) {
      for (File f : files) {
        if (f.getName().startsWith("hs_err")) {
          out.add(f);
        }
      }
    }
    return out;
  }

  /**
   * Fails when a JVM of the cluster wrote a crash report, with what each
   * report says of the crash (its header, the crashing thread's frames):
   * the cluster's directory, and the reports with it, are gone by the time
   * anybody reads a CI log.
   */
  void assertNoCrash() throws IOException {
    String why = crashSummary();
    if (why != null) {
      LOG.error(why);
      throw new AssertionError(why);
    }
  }

  /** What the cluster's crash reports say, or null when there are none. */
  private String crashSummary() {
    List<File> reports = crashReports();
    if (reports.isEmpty()) {
      return null;
    }
    StringBuilder why = new StringBuilder("JVM crash reports: " + reports);
    for (File f : reports) {
      why.append("\n==== ").append(f.getName());
      int kept = 0;
      boolean frames = false;
      List<String> lines;
      try {
        lines = Files.readAllLines(f.toPath(), StandardCharsets.ISO_8859_1);
      } catch (IOException e) {
        why.append("\n(unreadable: ").append(e).append(')');
        continue;
      }
      for (String line : lines) {
        if (line.startsWith("Native frames:")
            || line.startsWith("Java frames:")) {
          frames = true;
          kept = 0;
        } else if (line.isEmpty()) {
          frames = false;
        }
        if ((line.startsWith("#") || frames) && kept++ < 40) {
          why.append('\n').append(line);
        }
      }
    }
    return why.toString();
  }

  /** A daemon's log so far. */
  String log(String name) throws IOException {
    return new String(Files.readAllBytes(new File(work, name + ".log")
        .toPath()), StandardCharsets.UTF_8);
  }

  /** How old a value JMX serves may be: the metrics period, plus slack. */
  private static final long JMX_STALENESS_MS = 1100;

  /**
   * A numeric attribute of the DataNode's hdfs-rdma metrics as they are
   * now, from its /jmx servlet: its own source
   * {@code HdfsRdmaDataNode-<host>-<port>} (bytes fetched, blocks) or its
   * JVM's {@code HdfsRdma} (messages, connections). JMX serves a source's
   * values as of its last snapshot, refreshed on a read a metrics period
   * (here one second) after the last: so this waits that long first, and
   * what it returns counts everything that happened before the call.
   */
  static long rdmaBean(DataNodeProcess d, String attribute)
      throws IOException {
    awaitFreshJmx();
    return rdmaBeanAsServed(d, attribute);
  }

  /** Waits until JMX serves no value older than this call. */
  private static void awaitFreshJmx() throws IOException {
    final long until = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(JMX_STALENESS_MS);
    try {
      WaitFor.waitFor(() -> System.nanoTime() - until >= 0, 20,
          10_000);
    } catch (TimeoutException | InterruptedException e) {
      throw new IOException("interrupted waiting for fresh metrics", e);
    }
  }

  /**
   * An attribute of the DataNode's own source only, fresh as
   * {@link #rdmaBean}: for names its JVM's source carries too (the read
   * counters, which the JVM's counts for its clients).
   */
  static long dataNodeSourceBean(DataNodeProcess d, String attribute)
      throws IOException {
    awaitFreshJmx();
    return dataNodeSourceAsServed(d, attribute);
  }

  /** The same attribute as JMX serves it now, up to a period old. */
  static long dataNodeSourceAsServed(DataNodeProcess d, String attribute)
      throws IOException {
    return bean(d, "Hadoop:service=DataNode,name=HdfsRdmaDataNode-*",
        attribute);
  }

  /**
   * The same attribute as JMX serves it now, up to a metrics period old:
   * for loops that wait for a value to be reached.
   */
  static long rdmaBeanAsServed(DataNodeProcess d, String attribute)
      throws IOException {
    return bean(d, "Hadoop:service=DataNode,name=HdfsRdma*", attribute);
  }

  /** A numeric attribute (the first of that name) of a DataNode's bean. */
  static long bean(DataNodeProcess d, String query, String attribute)
      throws IOException {
    String json = jmx(d, query);
    Matcher m = Pattern.compile("\"" + attribute + "\"\\s*:\\s*(-?\\d+)")
        .matcher(json);
    if (!m.find()) {
      throw new IOException("no " + attribute + " in " + json);
    }
    return Long.parseLong(m.group(1));
  }

  /** The JSON a DataNode's /jmx servlet gives for {@code query}. */
  private static String jmx(DataNodeProcess d, String query)
      throws IOException {
    URL url = new URL("http://127.0.0.1:" + d.httpPort + "/jmx?qry="
        + query);
    HttpURLConnection c = (HttpURLConnection) url.openConnection();
    c.setConnectTimeout(10_000);
    c.setReadTimeout(10_000);
    try (InputStream in = c.getInputStream()) {
      return new String(readAll(in), StandardCharsets.UTF_8);
    }
  }

  private static byte[] readAll(InputStream in) throws IOException {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    byte[] buf = new byte[8192];
    int n;
    while ((n = in.read(buf)) > 0) {
      out.write(buf, 0, n);
    }
    return out.toByteArray();
  }

  /** Stops every JVM and removes the cluster's directory. */
  @Override
  public void close() {
    for (Process p : daemons) {
      p.destroyForcibly();
      try {
        p.waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    FileUtil.fullyDelete(work);
  }
}
