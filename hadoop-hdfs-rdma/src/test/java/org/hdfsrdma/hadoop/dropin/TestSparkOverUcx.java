package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.hadoop.fs.Path;
import org.junit.Test;

/**
 * A Spark 3.3 job on a Hadoop 2.9.2 client, submitted the way the README
 * says, writes to a UCX cluster through the drop-in agent:
 * {@code spark-submit --master local[2] --conf
 * spark.driver.extraJavaOptions=-javaagent:...}. The submission is what
 * bin/spark-submit does: Spark's launcher (org.apache.spark.launcher.Main,
 * with SPARK_HOME holding the jars and HADOOP_CONF_DIR the cluster's
 * configuration) builds the driver's java command, which is then run. In
 * local mode the tasks run in the driver JVM; the DataNodes' beans must
 * show exactly three times what it sent as UCX descriptors, which must
 * be exactly the bytes of the files it wrote, and the files must read
 * back intact.
 */
public class TestSparkOverUcx {

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

  /** A SPARK_HOME whose jars/ holds Spark and the Hadoop 2.9.2 client. */
  private static File sparkHome(File work, List<String> jars)
      throws Exception {
    File home = new File(work, "spark-home");
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
  private static File appJar(File work) throws Exception {
    File classes = new File(System.getProperty(
        "hdfsrdma.test.spark.classes"));
    assertTrue("no " + classes + ": build test-apps/spark first",
        classes.isDirectory());
    File jar = new File(work, "spark-write.jar");
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

  @Test(timeout = 300_000)
  public void testSparkSubmitLocalWritesThroughUcx() throws Exception {
    AgentCluster hdfs = new AgentCluster("spark", 3);
    try {
      File work = hdfs.work();
      List<String> jars = Arrays.asList(AgentCluster.appClassPath(
          "hdfsrdma.test.spark.classpath").split(File.pathSeparator));
      String launcher = jars.stream()
          .filter(j -> j.matches(".*/spark-launcher_[^/]*\\.jar"))
          .findFirst().get();
      File totals = new File(work, "spark-driver.totals");
      String agent = AgentCluster.agent();
      Map<String, String> env = new HashMap<String, String>();
      env.put("SPARK_HOME", sparkHome(work, jars).getPath());
      env.put("SPARK_SCALA_VERSION", "2.12");
      env.put("HADOOP_CONF_DIR", hdfs.conf().getPath());
      env.put("SPARK_LOCAL_IP", "127.0.0.1");
      env.put("JAVA_HOME", System.getProperty("java.home"));
      String out = hdfs.fsUri() + "/spark-out";

      // bin/spark-submit: the launcher prints the driver's command.
      List<String> submit = new ArrayList<String>(Arrays.asList(
          System.getProperty("java.home") + "/bin/java", "-Xmx128m", "-cp",
          launcher, "org.apache.spark.launcher.Main",
          "org.apache.spark.deploy.SparkSubmit", "--master", "local[2]",
          "--conf", "spark.driver.extraJavaOptions=" + agent
              + " -Dhdfsrdma.stats.file=" + totals,
          "--conf", "spark.executor.extraJavaOptions=" + agent,
          "--conf", "spark.ui.enabled=false",
          "--class", "org.hdfsrdma.testapps.spark.SparkWrite",
          appJar(work).getPath(), out, String.valueOf(PARTITIONS),
          String.valueOf(LINES)));
      ProcessBuilder b = new ProcessBuilder(submit)
          .redirectError(new File(work, "spark-launcher.err"));
      b.environment().putAll(env);
      Process p = b.start();
      ByteArrayOutputStream command = new ByteArrayOutputStream();
      try (InputStream in = p.getInputStream()) {
        org.apache.commons.io.IOUtils.copy(in, command);
      }
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      assertEquals(AgentCluster.read(new File(work, "spark-launcher.err")),
          0, p.exitValue());
      // As bin/spark-class reads it: messages, "\0\n", then the command
      // with every argument ended by \0.
      String printed = new String(command.toByteArray(),
          StandardCharsets.UTF_8);
      int start = printed.indexOf("\0\n");
      assertTrue(printed, start >= 0);
      List<String> driver = new ArrayList<String>(Arrays.asList(
          printed.substring(start + 2).split("\0")));
      assertTrue(driver.toString(), driver.contains(agent));

      long fetchedBefore = hdfs.fetched();
      long tcpBefore = hdfs.blocksOverTcp();
      ProcessBuilder d = new ProcessBuilder(driver).redirectErrorStream(true)
          .redirectOutput(hdfs.log("spark-driver"));
      d.environment().putAll(env);
      Process run = d.start();
      assertTrue(run.waitFor(240, TimeUnit.SECONDS));
      String log = AgentCluster.read(hdfs.log("spark-driver"));
      assertEquals(log, 0, run.exitValue());
      assertTrue(log, log.contains("hdfs-rdma: the UCX write path's client"
          + " classes replace Hadoop 2.9.2's"));

      long wrote = 0;
      for (int part = 0; part < PARTITIONS; part++) {
        StringBuilder expected = new StringBuilder();
        for (int j = 0; j < LINES; j++) {
          expected.append(line(part, j)).append('\n');
        }
        byte[] bytes = expected.toString().getBytes(StandardCharsets.UTF_8);
        assertArrayEquals(bytes, hdfs.readFile(new Path(
            String.format("/spark-out/part-%05d", part))));
        wrote += bytes.length;
      }
      String line = AgentCluster.read(totals).trim();
      assertEquals(line, 1, line.split("\n").length);
      Matcher m = Pattern.compile("ucx-data-bytes-sent=(\\d+)").matcher(line);
      assertTrue(line, m.find());
      long sent = Long.parseLong(m.group(1));
      assertEquals("the driver sent exactly what its tasks wrote", wrote,
          sent);
      assertEquals("DataNodes fetched 3 x what the driver sent", 3 * sent,
          hdfs.fetched() - fetchedBefore);
      assertEquals("no replica over TCP", tcpBefore, hdfs.blocksOverTcp());
    } finally {
      hdfs.close();
    }
  }
}
