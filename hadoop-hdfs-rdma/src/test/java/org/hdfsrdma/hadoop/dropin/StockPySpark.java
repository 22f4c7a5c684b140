package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.metrics.Totals;
import org.hdfsrdma.hadoop.tools.DataNodeJmxMetrics;
import org.junit.Test;

/**
 * A Spark as PyPI publishes it (the pyspark package: Spark's own jars with
 * its own shaded Hadoop client, hadoop-client-api) writing to HDFS with
 * nothing added but the drop-in jar as agent: {@code bin/spark-submit
 * --conf spark.driver.extraJavaOptions=-javaagent:JAR --conf
 * spark.executor.extraJavaOptions=-javaagent:JAR}, HADOOP_CONF_DIR the
 * cluster's configuration (dfs.client.rdma.enabled=true in its
 * hdfs-site.xml). The cluster ({@link AgentCluster}) runs the Hadoop
 * release the Spark bundles (TestPySpark35OverUcx, TestPySpark4OverUcx),
 * or a Hadoop 2 release (TestPySparkOnHadoop2OverUcx: a Hadoop 3 client,
 * Hadoop 2 DataNodes). The drop-in jar must carry the Spark's Hadoop
 * release (patches/releases.txt): a pyspark whose Hadoop it lacks fails
 * here rather than pass over TCP.
 *
 * <p>The pyspark packages come from PyPI through dev-support/pyspark.sh
 * (setup.sh runs it), unpacked under the directory of the system property
 * {@code hdfsrdma.test.pyspark.dir}; never from the repository. The job is
 * test-apps/spark's SparkWrite, a Java job (no Python needed): it uses
 * Spark's Java API only, which Spark 3.5 (Scala 2.12) and 4 (Scala 2.13)
 * both have.
 *
 * <p>What UCX carried is read from the DataNodes' counters: every block
 * replica over UCX and exactly three times the bytes written fetched, none
 * over TCP.
 */
abstract class StockPySpark {

  /** The Spark under test; each subclass starts its own per class. */
  abstract PySpark spark();

  /** The HDFS cluster the Spark writes to. */
  abstract AgentCluster hdfs();

  /**
   * Whether to run the job on a Spark standalone cluster too: the
   * mixed-version case runs the two modes that start executors of both
   * kinds (the driver's, their own), standalone only adds how they start.
   */
  boolean standaloneToo() {
    return true;
  }

  /** Whether to run the job in executor JVMs too (local-cluster). */
  boolean executorsToo() {
    return true;
  }

  /**
   * local[2]: the tasks write, and then (where the Spark's Hadoop offers
   * UCX reads) read back, from the driver's JVM.
   */
  @Test(timeout = 540_000)
  public void testLocal() throws Exception {
    long wrote = writeAndCheck(hdfs(), spark(), "local", "local[2]");
    if (readsOffered()) {
      readAndCheck(hdfs(), spark(), "local", "local[2]", 0, wrote);
    }
  }

  /**
   * local-cluster[2,1,1024]: a Master and two Workers in the driver's JVM,
   * and two executors, each its own JVM that a Worker starts from the
   * pyspark's jars with spark.executor.extraJavaOptions: the tasks write,
   * and then (where the Spark's Hadoop offers UCX reads) read back, from
   * there.
   */
  @Test(timeout = 540_000)
  public void testExecutorJvms() throws Exception {
    assumeTrue("executors run with other clusters", executorsToo());
    long wrote = writeAndCheck(hdfs(), spark(), "executors",
        "local-cluster[2,1,1024]");
    assertAgentIn(spark(), executorLogs(new File(hdfs().work(),
        "executors-spark-home/work")));
    if (readsOffered()) {
      readAndCheck(hdfs(), spark(), "executors", "local-cluster[2,1,1024]",
          2, wrote);
    }
  }

  /**
   * Spark standalone: a Master and two Workers started from the pyspark's
   * jars, each its own JVM, and the job submitted to the Master; the tasks
   * write from the executors the Workers start.
   */
  @Test(timeout = 300_000)
  public void testStandalone() throws Exception {
    assumeTrue("standalone runs with the Spark's own Hadoop only",
        standaloneToo());
    List<Process> started = new ArrayList<Process>();
    try {
      String master = standalone(hdfs(), spark(), started);
      writeAndCheck(hdfs(), spark(), "standalone-job", master);
      List<File> logs = new ArrayList<File>();
      for (int i = 0; i < 2; i++) {
        logs.addAll(executorLogs(new File(hdfs().work(),
            "standalone-work" + i)));
      }
      assertAgentIn(spark(), logs);
    } finally {
      stop(started);
    }
  }

  static final int PARTITIONS = 4;
  /** 121 bytes a line: about 3 MiB a file. */
  static final int LINES = 26_000;

  private static final String WRITE_JOB =
      "org.hdfsrdma.testapps.spark.SparkWrite";
  private static final String READ_JOB =
      "org.hdfsrdma.testapps.spark.SparkRead";

  /** An unpacked pyspark: SPARK_HOME and the Hadoop it bundles. */
  static final class PySpark {
    final String version;
    /** The directory holding bin/spark-submit and jars/. */
    final File home;
    /** The version of its hadoop-client-api (common-version-info). */
    final String hadoop;
    final File clientApi;

    PySpark(String version) throws IOException {
      this.version = version;
      File dir = new File(System.getProperty("hdfsrdma.test.pyspark.dir",
          System.getProperty("user.home") + "/.cache/hdfs-rdma/pyspark"),
          "pyspark-" + version);
      // The sdist PyPI serves keeps bin/ and jars/ under deps/; an
      // installed package or a wheel has them under pyspark/.
      File found = null;
      for (String sub : new String[] {"deps", "pyspark"}) {
        File h = new File(dir, sub);
        if (new File(h, "bin/spark-submit").isFile()
            && new File(h, "jars").isDirectory()) {
          found = h;
        }
      }
      if (found == null) {
        fail("no pyspark " + version + " unpacked in " + dir + ": run"
            + " dev-support/pyspark.sh (dev-support/setup.sh does)");
      }
      home = found;
      File[] api = new File(home, "jars").listFiles(
          (d, n) -> n.matches("hadoop-client-api-.*\\.jar"));
      assertTrue("pyspark " + version + " has no hadoop-client-api jar",
          api != null && api.length == 1);
      clientApi = api[0];
      try (ZipFile zip = new ZipFile(clientApi)) {
        ZipEntry e = zip.getEntry("common-version-info.properties");
        Properties p = new Properties();
        try (InputStream in = zip.getInputStream(e)) {
          p.load(in);
        }
        hadoop = p.getProperty("version");
      }
      List<String> carried = AgentCluster.releasesInJar();
      assertTrue("pyspark " + version + " bundles Hadoop " + hadoop
          + ", which the drop-in jar does not carry (it has " + carried
          + "): add the release to patches/releases.txt or test another"
          + " pyspark", carried.contains(hadoop));
    }
  }

  /**
   * The newest Hadoop 2 release the jar carries: the cluster of a Hadoop 3
   * client in the mixed-version test.
   */
  static String newestHadoop2() throws IOException {
    return newest("2.");
  }

  /**
   * The newest release the jar carries whose version starts with
   * {@code prefix}.
   */
  static String newest(String prefix) throws IOException {
    String newest = null;
    for (String r : AgentCluster.releasesInJar()) {
      if (r.startsWith(prefix)) {
        newest = r;
      }
    }
    assertTrue("the jar carries no Hadoop " + prefix + "x release",
        newest != null);
    return newest;
  }

  /**
   * A SPARK_HOME of links to the pyspark's bin/ and jars/: the same
   * scripts and jars, while the work/ of local-cluster's Worker (the
   * executors' logs) lands in the test's directory, not in the cache.
   */
  static File sparkHome(AgentCluster hdfs, PySpark spark, String name)
      throws IOException {
    File home = new File(hdfs.work(), name + "-spark-home");
    assertTrue(home.mkdirs());
    for (String sub : new String[] {"bin", "jars"}) {
      Files.createSymbolicLink(new File(home, sub).toPath(),
          new File(spark.home, sub).toPath());
    }
    return home;
  }

  /** test-apps/spark's classes (SparkWrite) as the application jar. */
  static synchronized File appJar(AgentCluster hdfs) throws IOException {
    File jar = new File(hdfs.work(), "spark-write.jar");
    if (jar.isFile()) {
      return jar;
    }
    File classes = new File(System.getProperty(
        "hdfsrdma.test.spark.classes", "../test-apps/spark/target/"
            + "test-classes"));
    assertTrue("no " + classes + ": build test-apps/spark first",
        classes.isDirectory());
    try (JarOutputStream out = new JarOutputStream(
        new FileOutputStream(jar));
        Stream<java.nio.file.Path> files = Files.walk(classes.toPath())) {
      for (java.nio.file.Path f : files.filter(Files::isRegularFile)
          .collect(Collectors.toList())) {
        out.putNextEntry(new JarEntry(classes.toPath().relativize(f)
            .toString()));
        out.write(Files.readAllBytes(f));
        out.closeEntry();
      }
    }
    return jar;
  }

  /**
   * bin/spark-submit of the pyspark, as is, with the agent in the driver's
   * and the executors' java options and nothing else of hdfs-rdma, running
   * {@code job} over {@code dir} with {@code conf} (--conf pairs) added;
   * with {@code totals}, each JVM that ran UCX leaves its totals line
   * there: the driver's in {@link #driverTotals}, the executors' in
   * {@link #executorTotals}. Returns the exit code, the output in
   * {@code work/NAME.log}.
   */
  static int submit(AgentCluster hdfs, PySpark spark, String name,
      String master, String job, List<String> conf, String dir,
      boolean totals) throws Exception {
    String driver = AgentCluster.agent();
    String executor = AgentCluster.agent();
    if (totals) {
      driver += " -D" + Totals.FILE_PROPERTY + "=" + driverTotals(hdfs, name);
      executor += " -D" + Totals.FILE_PROPERTY + "="
          + executorTotals(hdfs, name);
    }
    Map<String, String> env = new HashMap<String, String>();
    File home = sparkHome(hdfs, spark, name);
    env.put("SPARK_HOME", home.getPath());
    env.put("HADOOP_CONF_DIR", hdfs.conf().getPath());
    env.put("SPARK_LOCAL_IP", "127.0.0.1");
    env.put("JAVA_HOME", System.getProperty("java.home"));
    List<String> command = new ArrayList<String>(Arrays.asList(
        "bash", new File(home, "bin/spark-submit").getPath(),
        "--master", master,
        "--conf", "spark.driver.extraJavaOptions=" + driver,
        "--conf", "spark.executor.extraJavaOptions=" + executor,
        "--conf", "spark.ui.enabled=false"));
    for (String c : conf) {
      command.add("--conf");
      command.add(c);
    }
    command.addAll(Arrays.asList("--class", job, appJar(hdfs).getPath(),
        hdfs.fsUri() + dir, String.valueOf(PARTITIONS),
        String.valueOf(LINES)));
    ProcessBuilder b = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(hdfs.log(name));
    b.environment().putAll(env);
    Process p = b.start();
    try {
      if (!p.waitFor(240, TimeUnit.SECONDS)) {
        fail(name + " did not finish in 240 s; see " + hdfs.log(name));
      }
    } finally {
      p.destroyForcibly();
    }
    return p.exitValue();
  }

  static File driverTotals(AgentCluster hdfs, String name) {
    return new File(hdfs.work(), name + "-driver-totals.txt");
  }

  static File executorTotals(AgentCluster hdfs, String name) {
    return new File(hdfs.work(), name + "-executor-totals.txt");
  }

  /**
   * Starts {@code bin/spark-class MAIN ARGS} of the pyspark (a standalone
   * Master or Worker), output in {@code work/NAME.log}.
   */
  static Process sparkClass(AgentCluster hdfs, File home, String name,
      String... mainAndArgs) throws IOException {
    List<String> command = new ArrayList<String>(Arrays.asList("bash",
        new File(home, "bin/spark-class").getPath()));
    command.addAll(Arrays.asList(mainAndArgs));
    ProcessBuilder b = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(hdfs.log(name));
    b.environment().put("SPARK_HOME", home.getPath());
    b.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    b.environment().put("JAVA_HOME", System.getProperty("java.home"));
    return b.start();
  }

  /** Waits up to 60 s for {@code pattern} in a log; returns its group 1. */
  static String awaitLog(File log, String pattern) throws Exception {
    Pattern p = Pattern.compile(pattern);
    String[] found = new String[1];
    GenericTestUtils.waitFor(() -> {
      try {
        Matcher m = p.matcher(AgentCluster.read(log));
        if (m.find()) {
          found[0] = m.groupCount() > 0 ? m.group(1) : m.group();
          return true;
        }
      } catch (IOException e) {
        // not written yet
      }
      return false;
    }, 250, 60_000);
    return found[0];
  }

  /**
   * A Spark standalone cluster from the pyspark's jars: a Master and two
   * Workers of one core each, each its own JVM (bin/spark-class, as
   * sbin/start-master.sh and start-worker.sh run them, less the
   * daemonising), on loopback with ports chosen by the system. The job
   * submitted to it runs in executors the Workers start. Returns the
   * master URL; {@code started} gets the processes to stop.
   */
  static String standalone(AgentCluster hdfs, PySpark spark,
      List<Process> started) throws Exception {
    File home = sparkHome(hdfs, spark, "standalone");
    started.add(sparkClass(hdfs, home, "standalone-master",
        "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
        "--port", "0", "--webui-port", "0"));
    String master = awaitLog(hdfs.log("standalone-master"),
        "Starting Spark master at (spark://\\S+)");
    for (int i = 0; i < 2; i++) {
      started.add(sparkClass(hdfs, home, "standalone-worker" + i,
          "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
          "--port", "0", "--webui-port", "0", "--cores", "1", "--memory",
          "1g", "--work-dir", new File(hdfs.work(), "standalone-work" + i)
              .getPath(), master));
    }
    for (int i = 0; i < 2; i++) {
      awaitLog(hdfs.log("standalone-worker" + i),
          "Successfully registered with master");
    }
    return master;
  }

  /** Stops what {@link #standalone} started. */
  static void stop(List<Process> started) throws InterruptedException {
    for (Process p : started) {
      p.destroy();
    }
    for (Process p : started) {
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
  }

  /** Reads the job's part files back, compares; returns their bytes. */
  static long readBack(AgentCluster hdfs, String dir) throws Exception {
    long wrote = 0;
    for (int part = 0; part < PARTITIONS; part++) {
      StringBuilder expected = new StringBuilder();
      for (int j = 0; j < LINES; j++) {
        expected.append(TestSparkOverUcx.line(part, j)).append('\n');
      }
      byte[] bytes = expected.toString().getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(bytes, hdfs.readFile(new Path(
          String.format("%s/part-%05d", dir, part))));
      wrote += bytes.length;
    }
    return wrote;
  }

  /** The executors' logs (stderr) under a Worker's work directory. */
  static List<File> executorLogs(File work) throws IOException {
    if (!work.isDirectory()) {
      return new ArrayList<File>();
    }
    try (Stream<java.nio.file.Path> files = Files.walk(work.toPath())) {
      return files.filter(f -> f.getFileName().toString().equals("stderr"))
          .map(java.nio.file.Path::toFile).collect(Collectors.toList());
    }
  }

  /**
   * Checks that each of {@code logs} (two executors') shows the agent's
   * decision for this Spark's client.
   */
  static void assertAgentIn(PySpark spark, List<File> logs)
      throws IOException {
    assertEquals(logs.toString(), 2, logs.size());
    for (File log : logs) {
      String text = AgentCluster.read(log);
      assertTrue(text, text.contains("hdfs-rdma: the UCX write path's client"
          + " classes replace Hadoop " + spark.hadoop + "'s"));
    }
  }

  /** What the DataNodes' counters say, before and after a job. */
  static final class Counters {
    final long fetched;
    final long overUcx;
    final long overTcp;

    /** One snapshot of every DataNode's metrics. */
    Counters(AgentCluster hdfs) throws IOException {
      long f = 0;
      long u = 0;
      long t = 0;
      for (DataNodeJmxMetrics b : hdfs.beans().values()) {
        f += b.dataBytesFetched();
        u += b.blocksOverUcx();
        t += b.blocksOverTcp();
      }
      fetched = f;
      overUcx = u;
      overTcp = t;
    }
  }

  /**
   * Submits the job with {@code master}, reads it back and checks what
   * the DataNodes counted: every replica and three times the bytes over
   * UCX, none over TCP, and the agent's line in the driver's log. Returns
   * the bytes the job wrote.
   */
  static long writeAndCheck(AgentCluster hdfs, PySpark spark,
      String name, String master) throws Exception {
    Counters before = new Counters(hdfs);
    long start = System.nanoTime();
    int exit = submit(hdfs, spark, name, master, WRITE_JOB,
        new ArrayList<String>(), "/" + name, false);
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    String log = AgentCluster.read(hdfs.log(name));
    assertEquals(log, 0, exit);
    long wrote = readBack(hdfs, "/" + name);
    Counters after = new Counters(hdfs);
    System.out.printf("%s: pyspark %s (Hadoop %s client) on a Hadoop %s"
        + " cluster, %s: %d bytes written in %d ms; DataNodes fetched %d"
        + " over UCX; replicas %d over UCX, %d over TCP%n", name,
        spark.version, spark.hadoop, hdfs.release(), master, wrote,
        millis, after.fetched - before.fetched,
        after.overUcx - before.overUcx, after.overTcp - before.overTcp);
    assertTrue(log, log.contains("hdfs-rdma: the UCX write path's client"
        + " classes replace Hadoop " + spark.hadoop + "'s"));
    assertEquals("DataNodes fetched 3 x what the job wrote", 3 * wrote,
        after.fetched - before.fetched);
    assertEquals("every replica over UCX", 3 * PARTITIONS,
        after.overUcx - before.overUcx);
    assertEquals("no replica over TCP", before.overTcp, after.overTcp);
    return wrote;
  }

  /** Whether the Spark's Hadoop client offers reads over UCX at all. */
  boolean readsOffered() throws IOException {
    return AgentCluster.readHooked(spark().hadoop);
  }

  /**
   * Submits SparkRead over what the job {@code wrote} wrote to {@code /NAME},
   * with UCX reads on in the Spark's Hadoop configuration and offered by
   * every block reader (read.min-bytes 0, as the test's files are small),
   * each JVM's totals kept: the driver's, and the {@code executors}
   * executor JVMs' (0 in local mode, where the tasks run in the driver).
   * The job verifies every line. On a cluster whose DataNodes serve reads
   * over UCX (the release's DataXceiver has the hook), every block reader
   * must have been answered over UCX, none served stock, withheld or
   * fallen back, and the JVMs must have taken at least twice the files'
   * bytes over UCX (the job reads its input twice): every byte came over
   * UCX; and the DataNodes must end holding no read buffer. On a cluster
   * without the hook, every offer is served stock and no byte comes over
   * UCX.
   */
  static void readAndCheck(AgentCluster hdfs, PySpark spark, String name,
      String master, int executors, long wrote) throws Exception {
    String job = name + "-read";
    long start = System.nanoTime();
    int exit = submit(hdfs, spark, job, master, READ_JOB, Arrays.asList(
        "spark.hadoop." + HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY
            + "=true",
        "spark.hadoop." + HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_MIN_BYTES_KEY
            + "=0"), "/" + name, true);
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    String log = AgentCluster.read(hdfs.log(job));
    assertEquals(log, 0, exit);
    assertTrue(log, log.contains("SparkRead: "));
    // An executor appends its line as it exits, after the driver's end.
    List<String> lines = new ArrayList<String>();
    if (executors > 0) {
      File f = executorTotals(hdfs, job);
      GenericTestUtils.waitFor(() -> TotalsLines.in(f).size() >= executors,
          250, 60_000);
      lines.addAll(TotalsLines.in(f));
      assertEquals(lines.toString(), executors, lines.size());
    }
    lines.addAll(TotalsLines.in(driverTotals(hdfs, job)));
    TotalsLines totals = new TotalsLines(lines);
    boolean served = AgentCluster.readHooked(hdfs.release());
    System.out.printf("%s: pyspark %s (Hadoop %s client) on a Hadoop %s"
        + " cluster, %s: read %d bytes twice in %d ms; %s%n", job,
        spark.version, spark.hadoop, hdfs.release(), master, wrote, millis,
        totals.reads());
    if (served) {
      totals.assertEveryReadOverUcx(2 * wrote);
      // Tasks stop reading inside blocks: their DataNodes let go of
      // every read buffer all the same.
      GenericTestUtils.waitFor(() -> {
        try {
          for (DataNodeJmxMetrics b : hdfs.beans().values()) {
            if (b.get("ReadBuffersHeld") != 0) {
              return false;
            }
          }
          return true;
        } catch (IOException e) {
          return false;
        }
      }, 250, 30_000);
    } else {
      assertTrue("offers served stock",
          totals.get("read-offers-served-stock") > 0);
      assertEquals("block reads over UCX", 0, totals.get("reads-over-ucx"));
      assertEquals("bytes over UCX", 0, totals.get("ucx-read-bytes"));
    }
  }
}
