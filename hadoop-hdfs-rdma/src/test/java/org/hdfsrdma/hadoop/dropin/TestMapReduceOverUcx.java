package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobCounter;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.NullOutputFormat;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.hdfsrdma.hadoop.WaitFor;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.junit.Test;

/**
 * A MapReduce job on YARN, installed the way the README says, writes to a
 * UCX cluster through the drop-in agent: every container (the
 * ApplicationMaster, two maps, one reduce) is its own JVM started with
 * {@code -javaagent:} in its java opts and the hdfs-rdma totals file in
 * its log directory ({@code <LOG_DIR>}), and the submitter (this JVM)
 * has the agent for its staging writes. The DataNodes' beans must show
 * exactly three times (the pipeline size) what those JVMs sent as UCX
 * descriptors, no replica over TCP, each task JVM must have sent exactly
 * the bytes of the files it wrote, and the output must read back intact.
 * The check command, run with a map task's JVM options and class path,
 * must pass its probe. Where the release has the read hooks, a second job
 * reads the side files back over UCX ({@link #readJobAndCheck}).
 *
 * <p>Here on Hadoop 2.9.2's MiniMRYarnCluster, the totals file given as
 * {@code -Dhdfsrdma.stats.file=<LOG_DIR>/...}; the maps write side files and
 * feed the reduce. Every container leaves one totals line with the bytes it
 * sent, and the agent's line in its syslog. Run by
 * {@code dev-support/hadoop-tests.sh RELEASE project}, it is a job on that
 * release's own YARN, whose containers' syslogs name the release's classes the
 * agent replaced.
 */
public class TestMapReduceOverUcx {

  private static final int MAPS = 2;
  private static final int LINES = 20_000;
  private static final String SIDE_DIR = "/mr-side";
  private static final String TOTALS = "hdfs-rdma-totals.txt";

  /** Line j of map p: key and value of the record, 10 and 120 chars. */
  static String key(int p, int j) {
    return String.format("%02d-%07d", p, j);
  }

  static String value(int p, int j) {
    Random r = new Random(p * 1_000_003L + j);
    StringBuilder sb = new StringBuilder(120);
    while (sb.length() < 120) {
      sb.append(Character.forDigit(r.nextInt(16), 16));
    }
    return sb.toString();
  }

  /** What map p writes straight to HDFS (its side file). */
  static byte[] sideFile(int p) {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < LINES; j++) {
      sb.append(key(p, j)).append(' ').append(value(p, j)).append('\n');
    }
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Reads its map number from its input line; emits LINES records to the
   * reduce and writes them to a side file of its own on HDFS.
   */
  public static class GenerateMapper
      extends Mapper<LongWritable, Text, Text, Text> {
    @Override
    protected void map(LongWritable offset, Text line, Context context)
        throws IOException, InterruptedException {
      int p = Integer.parseInt(line.toString().trim());
      FileSystem fs = FileSystem.get(context.getConfiguration());
      try (FSDataOutputStream out = fs.create(
          new Path(SIDE_DIR, "map-" + p), true)) {
        out.write(sideFile(p));
      }
      for (int j = 0; j < LINES; j++) {
        context.write(new Text(key(p, j)), new Text(value(p, j)));
      }
    }
  }

  /**
   * Checks each line it reads of a side file against what map p wrote
   * there, fails the task on any other, and counts them: the read job.
   */
  public static class VerifyMapper
      extends Mapper<LongWritable, Text, NullWritable, NullWritable> {
    private static final Pattern LINE = Pattern.compile("(\\d{2})-(\\d{7}) .*");

    @Override
    protected void map(LongWritable offset, Text line, Context context)
        throws IOException, InterruptedException {
      String s = line.toString();
      Matcher m = LINE.matcher(s);
      if (!m.matches() || !s.substring(m.end(2) + 1).equals(value(
          Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))))) {
        throw new IOException("not a line a map wrote, at " + offset + ": "
            + s);
      }
      context.getCounter(LINES_GROUP, LINES_COUNTER).increment(1);
    }
  }

  private static final String LINES_GROUP = "hdfs-rdma";
  private static final String LINES_COUNTER = "verified-lines";

  /**
   * Container log directories with a totals file, by container id. The
   * NodeManagers delete finished containers' local directories under the
   * same root while this walks it, so a vanished entry is skipped.
   */
  private static Map<String, File> totals(File root) throws IOException {
    final Map<String, File> byContainer = new TreeMap<String, File>();
    Files.walkFileTree(root.toPath(),
        new SimpleFileVisitor<java.nio.file.Path>() {
      @Override
      public FileVisitResult visitFile(java.nio.file.Path f,
          BasicFileAttributes a) {
        if (f.getFileName().toString().equals(TOTALS)) {
          byContainer.put(f.getParent().getFileName().toString(),
              f.getParent().toFile());
        }
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult visitFileFailed(java.nio.file.Path f,
          IOException e) throws IOException {
        if (e instanceof NoSuchFileException) {
          return FileVisitResult.CONTINUE;
        }
        throw e;
      }

      @Override
      public FileVisitResult postVisitDirectory(java.nio.file.Path d,
          IOException e) throws IOException {
        if (e != null && !(e instanceof NoSuchFileException)) {
          throw e;
        }
        return FileVisitResult.CONTINUE;
      }
    });
    return byContainer;
  }

  private static long sentHere() {
    UcxRuntime r = UcxRuntime.current();
    return r == null ? 0 : r.metrics().dataBytesSent();
  }

  /**
   * A map-only job reads the side files back with UCX reads on in its
   * configuration and offered by every block reader (read.min-bytes 0, the
   * files being small), splits of 1 MiB so that maps start and stop inside
   * blocks; every line verified. Every container of the job leaves its
   * totals: together they must show every block read over UCX
   * ({@link TotalsLines#assertEveryReadOverUcx}), at least the side files'
   * bytes. Run where the release has the read hooks.
   */
  private static void readJobAndCheck(MiniMRYarnCluster yarn, File work)
      throws Exception {
    Configuration conf = new Configuration(yarn.getConfig());
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY, true);
    conf.setLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_MIN_BYTES_KEY, 0);
    conf.setLong("mapreduce.input.fileinputformat.split.maxsize", 1 << 20);
    Job job = Job.getInstance(conf, "hdfs-rdma-mr-read");
    job.setMapperClass(VerifyMapper.class);
    job.setNumReduceTasks(0);
    job.setOutputFormatClass(NullOutputFormat.class);
    FileInputFormat.addInputPath(job, new Path(SIDE_DIR));
    assertTrue("the read job succeeded", job.waitForCompletion(true));
    assertEquals("lines verified", MAPS * LINES, job.getCounters()
        .findCounter(LINES_GROUP, LINES_COUNTER).getValue());
    int maps = (int) job.getCounters().findCounter(
        JobCounter.TOTAL_LAUNCHED_MAPS).getValue();
    assertTrue("maps of 1 MiB splits: " + maps, maps > MAPS);

    // The job's containers: the ApplicationMaster and its maps.
    String app = job.getJobID().toString().replace("job_", "_") + "_";
    WaitFor.waitFor(() -> {
      try {
        return containers(work, app).size() >= 1 + maps;
      } catch (IOException e) {
        return false;
      }
    }, 200, 120_000);
    Map<String, File> byContainer = containers(work, app);
    assertEquals(byContainer.toString(), 1 + maps, byContainer.size());
    List<String> lines = new ArrayList<String>();
    for (File dir : byContainer.values()) {
      lines.addAll(TotalsLines.in(new File(dir, TOTALS)));
    }
    TotalsLines totals = new TotalsLines(lines);
    long sideBytes = 0;
    for (int p = 0; p < MAPS; p++) {
      sideBytes += sideFile(p).length;
    }
    System.out.printf("read job: %d maps read %d bytes of side files; %s%n",
        maps, sideBytes, totals.reads());
    totals.assertEveryReadOverUcx(sideBytes);
  }

  /** Of {@link #totals}, the containers of application {@code app}. */
  private static Map<String, File> containers(File root, String app)
      throws IOException {
    Map<String, File> of = new TreeMap<String, File>();
    for (Map.Entry<String, File> e : totals(root).entrySet()) {
      if (e.getKey().contains(app)) {
        of.put(e.getKey(), e.getValue());
      }
    }
    return of;
  }

  @Test(timeout = 600_000)
  public void testJobWritesThroughUcx() throws Exception {
    AgentCluster hdfs = new AgentCluster("mapreduce", 3);
    MiniMRYarnCluster yarn = null;
    try {
      long fetchedBefore = hdfs.fetched();
      long tcpBefore = hdfs.blocksOverTcp();
      long sentBefore = sentHere();

      // The README's YARN settings, in mapred-site.xml terms.
      String agent = AgentCluster.agent();
      String stats = "-Dhdfsrdma.stats.file=<LOG_DIR>/" + TOTALS;
      Configuration conf = hdfs.clientConf();
      conf.set("mapreduce.map.java.opts", "-Xmx300m " + agent + " " + stats);
      conf.set("mapreduce.reduce.java.opts", "-Xmx300m " + agent + " "
          + stats);
      conf.set("yarn.app.mapreduce.am.command-opts", "-Xmx300m --add-opens"
          + " java.base/java.lang=ALL-UNNAMED " + agent + " " + stats);
      conf.setInt("mapreduce.map.memory.mb", 768);
      conf.setInt("mapreduce.reduce.memory.mb", 768);
      conf.setInt("yarn.app.mapreduce.am.resource.mb", 768);
      // The containers run the JDK this test runs on.
      String javaHome = "JAVA_HOME=" + System.getProperty("java.home");
      conf.set("mapreduce.map.env", javaHome);
      conf.set("mapreduce.reduce.env", javaHome);
      conf.set("yarn.app.mapreduce.am.env", javaHome);
      conf.set("yarn.resourcemanager.scheduler.class", "org.apache.hadoop"
          + ".yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
      conf.set("yarn.app.mapreduce.am.staging-dir", "/mr-staging");
      conf.setBoolean("mapreduce.map.speculative", false);
      conf.setBoolean("mapreduce.reduce.speculative", false);
      conf.setInt("dfs.replication", 3);

      yarn = new MiniMRYarnCluster("hdfs-rdma-mr", 1);
      yarn.init(conf);
      yarn.start();

      FileSystem fs = hdfs.fs();
      for (int p = 0; p < MAPS; p++) {
        try (FSDataOutputStream out = fs.create(new Path("/mr-in/" + p))) {
          out.write((p + "\n").getBytes(StandardCharsets.UTF_8));
        }
      }
      Job job = Job.getInstance(new Configuration(yarn.getConfig()),
          "hdfs-rdma-mr");
      job.setMapperClass(GenerateMapper.class);
      job.setReducerClass(Reducer.class);
      job.setNumReduceTasks(1);
      job.setOutputKeyClass(Text.class);
      job.setOutputValueClass(Text.class);
      FileInputFormat.addInputPath(job, new Path("/mr-in"));
      FileOutputFormat.setOutputPath(job, new Path("/mr-out"));
      assertTrue("the job succeeded", job.waitForCompletion(true));

      // The reduce's output and the maps' side files read back intact.
      StringBuilder expected = new StringBuilder();
      for (int p = 0; p < MAPS; p++) {
        for (int j = 0; j < LINES; j++) {
          expected.append(key(p, j)).append('\t').append(value(p, j))
              .append('\n');
        }
      }
      byte[] reduceOut = expected.toString().getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(reduceOut,
          hdfs.readFile(new Path("/mr-out/part-r-00000")));
      long tasksWrote = reduceOut.length;
      for (int p = 0; p < MAPS; p++) {
        byte[] side = sideFile(p);
        assertArrayEquals(side, hdfs.readFile(new Path(SIDE_DIR, "map-" + p)));
        tasksWrote += side.length;
      }
      for (FileStatus s : fs.listStatus(new Path("/mr-out"))) {
        assertTrue(s.getPath().toString(), s.getLen() == 0
            || s.getPath().getName().equals("part-r-00000"));
      }

      // Every container JVM appends its totals to its own log directory
      // when it exits; the ApplicationMaster may still be finishing.
      final File work = yarn.getTestWorkDir();
      WaitFor.waitFor(() -> {
        try {
          return totals(work).size() >= 1 + MAPS + 1;
        } catch (IOException e) {
          return false;
        }
      }, 200, 120_000);
      Map<String, File> byContainer = totals(work);
      assertEquals(byContainer.toString(), 1 + MAPS + 1, byContainer.size());
      long containersSent = 0;
      long tasksSent = 0;
      for (Map.Entry<String, File> e : byContainer.entrySet()) {
        String[] lines = AgentCluster.read(new File(e.getValue(), TOTALS))
            .trim().split("\n");
        assertEquals(e.toString(), 1, lines.length);
        long sent = new TotalsLines(Arrays.asList(lines))
            .get("ucx-data-bytes-sent");
        assertTrue("container " + e.getKey() + " sent by UCX: " + sent,
            sent > 0);
        containersSent += sent;
        if (!e.getKey().endsWith("_000001")) { // not the AM
          tasksSent += sent;
        }
        File syslog = new File(e.getValue(), "syslog");
        assertTrue(syslog + " says the agent replaced the client classes",
            AgentCluster.read(syslog).contains("hdfs-rdma: the UCX write"
                + " path's client classes replace"));
      }
      assertEquals("the tasks sent exactly what they wrote", tasksWrote,
          tasksSent);
      long submitterSent = sentHere() - sentBefore;
      assertTrue("the submitter's staging writes went by UCX",
          submitterSent > 0);
      assertEquals("DataNodes fetched 3 x what the JVMs sent",
          3 * (containersSent + submitterSent),
          hdfs.fetched() - fetchedBefore);
      assertEquals("no replica over TCP", tcpBefore, hdfs.blocksOverTcp());

      // The check, run with a map task's JVM options and the class path
      // containers get here, confirms the same.
      List<String> options = new ArrayList<String>(Arrays.asList(
          conf.get("mapreduce.map.java.opts").replace("<LOG_DIR>",
              hdfs.work().getPath()).split(" ")));
      int exit = hdfs.run("check-as-map-task", options,
          new HashMap<String, String>(), hdfs.conf() + File.pathSeparator
          + System.getProperty("java.class.path"),
          "org.hdfsrdma.hadoop.tools.Check", "--client", "--probe");
      String check = AgentCluster.read(hdfs.log("check-as-map-task"));
      assertEquals(check, 0, exit);
      assertTrue(check, check.contains("OK      probe: this JVM sent all "));

      if (AgentCluster.readHooked(hdfs.release())) {
        readJobAndCheck(yarn, work);
      }
    } finally {
      if (yarn != null) {
        yarn.stop();
      }
      hdfs.close();
    }
  }

}
