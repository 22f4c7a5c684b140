package org.hdfsrdma.hadoop.bench;

import java.io.EOFException;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.TestDFSIO;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * Hadoop's own TestDFSIO write benchmark, run as an operator runs it: a
 * MapReduce job on YARN whose map tasks, each its own JVM, write one file
 * each to the HDFS of the configuration on the class path. The YARN
 * cluster (ResourceManager, one NodeManager, the job history server) runs
 * inside this JVM; every container (the ApplicationMaster, the maps, the
 * reduce) is a separate JVM started by the NodeManager with
 * {@code -task-opts} in its java options, which is where the harness puts
 * the drop-in agent. Hadoop's generic options ({@code -D
 * dfs.client.rdma.enabled=...}) go into the job's configuration and so
 * into every task.
 *
 * <p>Options: {@code -maps N} files (map tasks), {@code -size BYTES} per
 * file (whole MiB), {@code -dir PATH} TestDFSIO's base directory on HDFS
 * (also the job's staging directory, so that deleting it removes every
 * file of the run), {@code -slots K} maps that may run at once (the
 * NodeManager's memory is sized for K maps beside the ApplicationMaster),
 * {@code -task-opts "..."} more java options of every container,
 * {@code -name NAME} the YARN cluster's name (its work directory is
 * {@code target/NAME} under the working directory: container logs, and
 * there the agent's totals files).
 *
 * <p>After the job it checks what the maps wrote: every file's length and
 * replication, and every byte read back against TestDFSIO's pattern. Its
 * last line on stdout is {@code APP-RESULT} as {@link AppWorkload}'s,
 * with TestDFSIO's own figures added: {@code dfsio_throughput} and
 * {@code dfsio_avg_io_rate} (mb/sec as TestDFSIO prints them, MiB per
 * second of map time) and {@code dfsio_exec_s} (the job's wall time).
 * The measured phase is TestDFSIO's run, from its control files to its
 * report; the YARN cluster's start and stop are outside it.
 */
public final class DfsioOnYarn extends Configured implements Tool {

  /** Container memory of every task and the ApplicationMaster, in MB. */
  static final int CONTAINER_MB = 768;
  /** TestDFSIO's write buffer (test.io.file.buffer.size's default). */
  static final int DFSIO_BUFFER = 1_000_000;
  private static final int READ_CHUNK = 1 << 20;

  private final PrintStream out = System.out;
  private int maps = 4;
  private long size = 64L << 20;
  private Path dir;
  private int slots = 4;
  private String taskOpts = "";
  private String name = "dfsio";

  private void parse(String[] args) {
    for (Map.Entry<String, String> option
        : ToolArgs.pairs(args, 0).entrySet()) {
      String v = option.getValue();
      switch (option.getKey()) {
      case "-maps":
        maps = Integer.parseInt(v);
        break;
      case "-size":
        size = Long.parseLong(v);
        break;
      case "-dir":
        dir = new Path(v);
        break;
      case "-slots":
        slots = Integer.parseInt(v);
        break;
      case "-task-opts":
        taskOpts = v;
        break;
      case "-name":
        name = v;
        break;
      default:
        throw new IllegalArgumentException("unknown option " + option.getKey());
      }
    }
    if (dir == null || maps < 1 || slots < 1 || size < (1 << 20)
        || size % (1 << 20) != 0) {
      throw new IllegalArgumentException("need -dir, -maps >= 1, -slots"
          + " >= 1 and -size a positive number of whole MiB");
    }
  }

  /** The YARN and MapReduce settings of the cluster and the job. */
  private void configure(Configuration conf) {
    String javaHome = "JAVA_HOME=" + System.getProperty("java.home");
    String heap = "-Xmx400m ";
    conf.set("mapreduce.map.java.opts", heap + taskOpts);
    conf.set("mapreduce.reduce.java.opts", heap + taskOpts);
    // Guice in the ApplicationMaster's web app needs java.lang open.
    conf.set("yarn.app.mapreduce.am.command-opts", heap
        + "--add-opens java.base/java.lang=ALL-UNNAMED " + taskOpts);
    conf.setInt("mapreduce.map.memory.mb", CONTAINER_MB);
    conf.setInt("mapreduce.reduce.memory.mb", CONTAINER_MB);
    conf.setInt("yarn.app.mapreduce.am.resource.mb", CONTAINER_MB);
    conf.setInt("yarn.nodemanager.resource.memory-mb",
        (slots + 1) * CONTAINER_MB);
    conf.setInt("yarn.scheduler.minimum-allocation-mb", 128);
    conf.set("mapreduce.map.env", javaHome);
    conf.set("mapreduce.reduce.env", javaHome);
    conf.set("yarn.app.mapreduce.am.env", javaHome);
    conf.set("yarn.resourcemanager.scheduler.class", "org.apache.hadoop"
        + ".yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
    conf.set("yarn.app.mapreduce.am.staging-dir",
        new Path(dir, "staging").toString());
    conf.setBoolean("mapreduce.map.speculative", false);
    conf.setBoolean("mapreduce.reduce.speculative", false);
    conf.set("test.build.data", dir.toString());
    conf.setInt("test.io.file.buffer.size", DFSIO_BUFFER);
  }

  /** TestDFSIO's report lines, "key: value", from its result file. */
  static Map<String, String> report(String text) {
    Map<String, String> m = new HashMap<String, String>();
    for (String line : text.split("\n")) {
      int colon = line.indexOf(':');
      if (colon > 0) {
        m.put(line.substring(0, colon).trim(),
            line.substring(colon + 1).trim());
      }
    }
    return m;
  }

  private static String figure(Map<String, String> report, String key)
      throws IOException {
    String v = report.get(key);
    if (v == null) {
      throw new IOException("TestDFSIO's report has no '" + key + "': "
          + report);
    }
    return String.valueOf(Double.parseDouble(v.replace(",", "")));
  }

  /**
   * Byte {@code pos} of a file TestDFSIO wrote: its write mapper means
   * its buffer to repeat '0' + i % 50 (a buffer size that is a multiple
   * of 50 keeps the pattern across writes), but in the releases that fill
   * the buffer before {@code configure} allocates it the buffer is all
   * zeros. Which of the two a file holds is read from its first byte;
   * every other byte must then match.
   */
  static byte expected(long pos, boolean zeros) {
    return zeros ? 0 : (byte) ('0' + pos % 50);
  }

  /** Which of TestDFSIO's two contents the files held. */
  private String content = "none";

  /** Checks one written file: length, replication, every byte. */
  private long verify(FileSystem fs, Path p, short rep) throws IOException {
    FileStatus st = fs.getFileStatus(p);
    if (st.getLen() != size) {
      throw new IOException(p + ": " + st.getLen() + " bytes, wrote "
          + size);
    }
    if (st.getReplication() != rep) {
      throw new IOException(p + ": replication " + st.getReplication()
          + ", expected " + rep);
    }
    byte[] buf = new byte[READ_CHUNK];
    long pos = 0;
    boolean zeros = false;
    try (FSDataInputStream in = fs.open(p)) {
      while (pos < size) {
        int n = (int) Math.min(buf.length, size - pos);
        try {
          in.readFully(buf, 0, n);
        } catch (EOFException e) {
          throw new IOException(p + ": ends before byte " + (pos + n), e);
        }
        if (pos == 0) {
          zeros = buf[0] == 0;
          content = zeros ? "zeros" : "pattern";
        }
        for (int i = 0; i < n; i++) {
          if (buf[i] != expected(pos + i, zeros)) {
            throw new IOException(p + ": byte " + (pos + i)
                + " differs from what TestDFSIO wrote");
          }
        }
        pos += n;
      }
    }
    return fs.getFileBlockLocations(st, 0, st.getLen()).length;
  }

  @Override
  public int run(String[] args) throws Exception {
    parse(args);
    Configuration conf = getConf();
    configure(conf);
    short rep = (short) conf.getInt("dfs.replication", 3);
    FileSystem fs = FileSystem.get(conf);
    fs.delete(dir, true);
    out.printf(Locale.ROOT, "APP-START mode=dfsio dir=%s maps=%d size=%d"
        + " rep=%d rdma=%s%n", dir, maps, size, rep,
        conf.get("dfs.client.rdma.enabled", "unset"));
    MiniMRYarnCluster yarn = new MiniMRYarnCluster(name, 1);
    File resFile = new File(System.getProperty("user.dir"),
        name + "-TestDFSIO_results.log");
    Files.deleteIfExists(resFile.toPath());
    long start;
    long end;
    try {
      yarn.init(conf);
      yarn.start();
      Configuration job = new Configuration(yarn.getConfig());
      start = System.nanoTime();
      int rc = ToolRunner.run(job, new TestDFSIO(), new String[] {
          "-write", "-nrFiles", String.valueOf(maps),
          "-size", (size >> 20) + "MB", "-resFile", resFile.getPath()});
      end = System.nanoTime();
      if (rc != 0) {
        throw new IOException("TestDFSIO exited with " + rc);
      }
    } finally {
      yarn.stop();
    }
    Map<String, String> report = report(new String(
        Files.readAllBytes(resFile.toPath()), StandardCharsets.UTF_8));
    long blocks = 0;
    for (int i = 0; i < maps; i++) {
      blocks += verify(fs, new Path(new Path(dir, "io_data"),
          "test_io_" + i), rep);
    }
    out.printf(Locale.ROOT, "APP-RESULT mode=dfsio start_ns=%d end_ns=%d"
        + " measured_bytes=%d measured_files=%d records=0 samples=0"
        + " bytes=%d blocks=%d verified_bytes=%d dfsio_throughput=%s"
        + " dfsio_avg_io_rate=%s dfsio_exec_s=%s content=%s status=ok%n",
        start, end, maps * size, maps, maps * size, blocks, maps * size,
        figure(report, "Throughput mb/sec"),
        figure(report, "Average IO rate mb/sec"),
        figure(report, "Test exec time sec"), content);
    return 0;
  }

  public static void main(String[] args) {
    ToolArgs.runAndExit(new DfsioOnYarn(), args);
  }
}
