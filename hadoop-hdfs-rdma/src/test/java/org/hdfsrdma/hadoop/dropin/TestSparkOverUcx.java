package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.hadoop.fs.Path;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Spark 3.3 jobs submitted the way the README says, {@code spark-submit
 * --master local[2] --conf spark.driver.extraJavaOptions=-javaagent:...},
 * against a UCX cluster. The submission is what bin/spark-submit does:
 * Spark's launcher (org.apache.spark.launcher.Main, with SPARK_HOME
 * holding the jars and HADOOP_CONF_DIR the cluster's configuration)
 * builds the driver's java command, which is then run. In local mode the
 * tasks run in the driver JVM.
 *
 * <p>On a Hadoop 2.9.2 client (test-apps/spark) the job writes through
 * UCX: the DataNodes' metrics show exactly three times what the driver sent
 * as UCX descriptors, which is exactly what it wrote, and the check
 * command submitted the same way passes its probe. Spark as published, on
 * its Hadoop 3.3 client (test-apps/spark-stock), crashed with the jar
 * first on its class path (before the jar became an agent): with the
 * agent the job writes over TCP and one line says why, and the check says
 * so in PROBLEM lines.
 *
 * <p>Spark 3.3.4. On the Hadoop 2.9.2 client no replica goes over TCP and the
 * files read back intact; as published, on its Hadoop 3.3.2 client, the job
 * succeeds over TCP with one hdfs-rdma line, and the check exits 1 saying why.
 */
public class TestSparkOverUcx {

  private static AgentCluster hdfs;

  @BeforeClass
  public static void startCluster() throws Exception {
    hdfs = new AgentCluster("spark", 3);
  }

  @AfterClass
  public static void stopCluster() {
    if (hdfs != null) {
      hdfs.close();
    }
  }

  private static final int PARTITIONS = 4;
  private static final int LINES = 20_000;

  /** SparkWrite.line: line j of partition p, 120 characters. */
  static String line(int p, int j) {
    Random r = new Random(p * 1_000_003L + j);
    StringBuilder sb = new StringBuilder(120);
    sb.append(String.format("%04d %08d ", p, j));
    while (sb.length() < 120) {
      sb.append(Character.forDigit(r.nextInt(16), 16));
    }
    return sb.toString();
  }

  /** Spark's jars: on a Hadoop 2.9.2 client, or as published. */
  private static List<String> jars(boolean hadoop2) throws Exception {
    return Arrays.asList(AgentCluster.appClassPath(hadoop2
        ? "hdfsrdma.test.spark.classpath"
        : "hdfsrdma.test.spark-stock.classpath").split(File.pathSeparator));
  }

  /** A SPARK_HOME whose jars/ holds {@code jars}. */
  private static File sparkHome(String name, List<String> jars)
      throws Exception {
    File home = new File(hdfs.work(), name + "-spark-home");
    File dir = new File(home, "jars");
    assertTrue(dir.mkdirs());
    for (String jar : jars) {
      File f = new File(jar);
      Files.createSymbolicLink(new File(dir, f.getName()).toPath(),
          f.toPath());
    }
    return home;
  }

  /** The job's classes (test-apps/spark) as the application jar. */
  private static synchronized File appJar() throws Exception {
    File jar = new File(hdfs.work(), "spark-write.jar");
    if (jar.isFile()) {
      return jar;
    }
    File classes = new File(System.getProperty(
        "hdfsrdma.test.spark.classes"));
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

  /** A finished spark-submit: exit code and the driver's output. */
  private static final class Submitted {
    final int exit;
    final String log;

    Submitted(int exit, String log) {
      this.exit = exit;
      this.log = log;
    }

    /** The lines hdfs-rdma logged or printed ("hdfs-rdma: ..."). */
    List<String> ours() {
      List<String> lines = new ArrayList<String>();
      for (String line : log.split("\n")) {
        if (line.contains("hdfs-rdma: ")) {
          lines.add(line);
        }
      }
      return lines;
    }
  }

  /**
   * spark-submit --master local[2] with the agent in the driver's and
   * executors' java options, the driver's totals to {@code totals}.
   */
  private static Submitted submit(String name, List<String> jars,
      File totals, String mainClass, File appJar, String... args)
      throws Exception {
    File work = hdfs.work();
    String launcher = jars.stream()
        .filter(j -> j.matches(".*/spark-launcher_[^/]*\\.jar"))
        .findFirst().get();
    String agent = AgentCluster.agent();
    Map<String, String> env = new HashMap<String, String>();
    env.put("SPARK_HOME", sparkHome(name, jars).getPath());
    env.put("SPARK_SCALA_VERSION", "2.12");
    env.put("HADOOP_CONF_DIR", hdfs.conf().getPath());
    env.put("SPARK_LOCAL_IP", "127.0.0.1");
    env.put("JAVA_HOME", System.getProperty("java.home"));

    // bin/spark-submit: the launcher prints the driver's command.
    List<String> submit = new ArrayList<String>(Arrays.asList(
        System.getProperty("java.home") + "/bin/java", "-Xmx128m", "-cp",
        launcher, "org.apache.spark.launcher.Main",
        "org.apache.spark.deploy.SparkSubmit", "--master", "local[2]",
        "--conf", "spark.driver.extraJavaOptions=" + agent
            + " -Dhdfsrdma.stats.file=" + totals,
        "--conf", "spark.executor.extraJavaOptions=" + agent,
        "--conf", "spark.ui.enabled=false",
        "--class", mainClass, appJar.getPath()));
    submit.addAll(Arrays.asList(args));
    File err = new File(work, name + "-launcher.err");
    ProcessBuilder b = new ProcessBuilder(submit).redirectError(err);
    b.environment().putAll(env);
    Process p = b.start();
    ByteArrayOutputStream command = new ByteArrayOutputStream();
    try (InputStream in = p.getInputStream()) {
      org.apache.commons.io.IOUtils.copy(in, command);
    }
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(AgentCluster.read(err), 0, p.exitValue());
    // As bin/spark-class reads it: messages, "\0\n", then the command
    // with every argument ended by \0.
    String printed = new String(command.toByteArray(),
        StandardCharsets.UTF_8);
    int start = printed.indexOf("\0\n");
    assertTrue(printed, start >= 0);
    List<String> driver = new ArrayList<String>(Arrays.asList(
        printed.substring(start + 2).split("\0")));
    assertTrue(driver.toString(), driver.contains(agent));

    ProcessBuilder d = new ProcessBuilder(driver).redirectErrorStream(true)
        .redirectOutput(hdfs.log(name));
    d.environment().putAll(env);
    Process run = d.start();
    if (!run.waitFor(240, TimeUnit.SECONDS)) {
      run.destroyForcibly();
      fail(name + " did not finish; see " + hdfs.log(name));
    }
    return new Submitted(run.exitValue(), AgentCluster.read(hdfs.log(name)));
  }

  /** Reads the job's part files back; returns their total bytes. */
  private static long readBack(String dir) throws Exception {
    long wrote = 0;
    for (int part = 0; part < PARTITIONS; part++) {
      StringBuilder expected = new StringBuilder();
      for (int j = 0; j < LINES; j++) {
        expected.append(line(part, j)).append('\n');
      }
      byte[] bytes = expected.toString().getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(bytes, hdfs.readFile(new Path(
          String.format("%s/part-%05d", dir, part))));
      wrote += bytes.length;
    }
    return wrote;
  }

  private static final String JOB = "org.hdfsrdma.testapps.spark.SparkWrite";
  private static final String CHECK = "org.hdfsrdma.hadoop.tools.Check";

  @Test(timeout = 300_000)
  public void testSparkSubmitLocalWritesThroughUcx() throws Exception {
    File totals = new File(hdfs.work(), "spark-driver.totals");
    long fetchedBefore = hdfs.fetched();
    long tcpBefore = hdfs.blocksOverTcp();
    Submitted s = submit("spark-driver", jars(true), totals, JOB, appJar(),
        hdfs.fsUri() + "/spark-out", String.valueOf(PARTITIONS),
        String.valueOf(LINES));
    assertEquals(s.log, 0, s.exit);
    assertTrue(s.log, s.log.contains("hdfs-rdma: the UCX write path's"
        + " client classes replace Hadoop 2.9.2's"));
    long wrote = readBack("/spark-out");
    List<String> lines = TotalsLines.in(totals);
    assertEquals(lines.toString(), 1, lines.size());
    long sent = new TotalsLines(lines).get("ucx-data-bytes-sent");
    assertEquals("the driver sent exactly what its tasks wrote", wrote, sent);
    assertEquals("DataNodes fetched 3 x what the driver sent", 3 * sent,
        hdfs.fetched() - fetchedBefore);
    assertEquals("no replica over TCP", tcpBefore, hdfs.blocksOverTcp());
  }

  /** The check, submitted like the job: the driver's view. */
  @Test(timeout = 300_000)
  public void testCheckInTheSparkDriver() throws Exception {
    Submitted s = submit("spark-check", jars(true),
        new File(hdfs.work(), "spark-check.totals"), CHECK,
        AgentCluster.dropinJar(), "--client", "--probe");
    assertEquals(s.log, 0, s.exit);
    assertTrue(s.log, s.log.contains("OK      patch: the client classes are"
        + " replaced by the agent: Hadoop 2.9.2's"));
    assertTrue(s.log, s.log.contains("OK      probe: this JVM sent all "));
    assertTrue(s.log, s.log.contains("hdfs-rdma check: no problems"));
  }

  @Test(timeout = 300_000)
  public void testSparkAsPublishedWritesOverTcpAndSaysWhy() throws Exception {
    long fetchedBefore = hdfs.fetched();
    long tcpBefore = hdfs.blocksOverTcp();
    Submitted s = submit("spark-stock", jars(false),
        new File(hdfs.work(), "spark-stock.totals"), JOB, appJar(),
        hdfs.fsUri() + "/spark-stock-out", String.valueOf(PARTITIONS),
        String.valueOf(LINES));
    assertEquals(s.log, 0, s.exit);
    assertEquals(s.log, 1, s.ours().size());
    assertTrue(s.log, s.ours().get(0).matches(".* WARN .*hdfs-rdma: the"
        + " client classes stay Hadoop's own and writes stay on TCP:"
        + " this is Hadoop 3\\.3\\.2 \\(from \\S+/hadoop-client-api"
        + "-3\\.3\\.2\\.jar\\), the jar has classes for Apache Hadoop .*"));
    assertFalse(s.log, s.log.contains("NoSuchMethodError"));
    readBack("/spark-stock-out");
    assertEquals("nothing by UCX get", fetchedBefore, hdfs.fetched());
    assertEquals("four files, three replicas each, over TCP", tcpBefore + 12,
        hdfs.blocksOverTcp());
  }

  @Test(timeout = 300_000)
  public void testCheckInSparkAsPublished() throws Exception {
    Submitted s = submit("spark-stock-check", jars(false),
        new File(hdfs.work(), "spark-stock-check.totals"), CHECK,
        AgentCluster.dropinJar(), "--client");
    assertEquals(s.log, 1, s.exit);
    assertTrue(s.log, s.log.contains("PROBLEM hadoop: 3.3.2 "));
    assertTrue(s.log, s.log.contains("PROBLEM patch: the client classes stay"
        + " Hadoop's own: "));
    assertTrue(s.log, s.log.contains("hdfs-rdma check: 2 problem(s)"));
    assertFalse(s.log, s.log.contains("\tat "));
  }
}
