package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.tools.DFSck;
import org.apache.hadoop.util.ToolRunner;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Faults of every process of a write pipeline, one case each, on one
 * cluster of separate JVMs (a NameNode and five DataNodes, so that
 * re-replication and pipeline replacement have a target): {@code kill -9},
 * and SIGSTOP held past the socket and UCX get timeouts then SIGCONT, of
 * the writer and of the DataNode in pipeline position 1, 2 and 3, at
 * replication 3, on fan-out and chain pipelines, in the middle of a block
 * and right after one ended, with and without hflush.
 *
 * <p>The writer is {@link KillMatrixWriter} in a JVM of its own; it
 * reports its pipeline in order (the DataStreamer's own nodes) and what
 * was acknowledged to it. After each case: a surviving writer closed and
 * every byte reads back; a dead or failed writer's lease is recovered and
 * every acknowledged byte (returned from hflush) reads back identical, the
 * file holding nothing but a prefix of what was written; the cluster is
 * healthy (fsck HEALTHY; no corrupt, missing or under-replicated block); a
 * killed DataNode is restarted on its data directory and ports, and a
 * DataNode victim (restarted, or continued) fetches over UCX again in the
 * next write; the DataNodes' counters show UCX carried the case's bytes
 * (from the writer, or in a chain from the DataNode feeding them).
 *
 * <p>The full matrix (64 cases) runs with {@code -Dhdfsrdma.killmatrix=full};
 * by default eight cases, an orthogonal array in which every pair of
 * values of any two factors (victim, fault, shape, point, hflush) occurs.
 * The matrix is printed at the end: case, outcome, bytes checked, UCX
 * bytes fetched.
 *
 * <p>The UCX connect timeout is 3 s too; blocks of 1 MiB, files of 2.5 MiB; no
 * JVM may write a crash report. DataNodes send full block reports every 5 s
 * here: a DataNode restarted after the NameNode declared it dead reports its
 * stale replica, which the NameNode marks corrupt but deletes only at the next
 * full report (6 h by default; Hadoop's behaviour, seen in this matrix).
 */
@RunWith(Parameterized.class)
public class TestKillMatrix {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestKillMatrix.class);

  private static final int MIB = 1024 * 1024;
  private static final int BLOCK = MIB;
  /** The client's and DataNodes' socket timeout, and the UCX get timeout. */
  private static final int TIMEOUT_MS = 3000;
  /** How long a SIGSTOP lasts at least: past every timeout above. */
  private static final long STOP_MS = 2L * TIMEOUT_MS + 1000;
  private static final int DATANODES = 5;
  /** Three blocks, the last one partial. */
  private static final int LENGTH = 2 * MIB + 512 * 1024 + 333;
  /** The pause in the middle of the first block, off any chunk boundary. */
  private static final int MID_BLOCK = 512 * 1024 + 1000;
  private static final long WAIT_MS = 180_000;

  /** What happens to the victim. */
  enum Fault {
    KILL("kill -9"), STOP("SIGSTOP");
    final String label;
    Fault(String label) {
      this.label = label;
    }
  }

  /** Where the writer pauses to let the fault happen. */
  enum Point {
    MID_BLOCK("mid-block"), BOUNDARY("block end");
    final String label;
    Point(String label) {
      this.label = label;
    }
  }

  /** One case of the matrix. */
  static final class Case {
    /** 0: the writer; 1 to 3: the DataNode at that pipeline position. */
    final int victim;
    final Fault fault;
    final String shape;
    final Point point;
    final boolean hflush;

    Case(int victim, Fault fault, String shape, Point point,
        boolean hflush) {
      this.victim = victim;
      this.fault = fault;
      this.shape = shape;
      this.point = point;
      this.hflush = hflush;
    }

    String victimName() {
      return victim == 0 ? "client" : "dn" + victim;
    }

    @Override
    public String toString() {
      return String.format("%-6s %-7s %-7s %-9s %s", victimName(),
          fault.label, shape, point.label, hflush ? "hflush" : "no-hflush");
    }
  }

  /**
   * Every case, or (the default) an orthogonal array L8(4 x 2^4): with
   * bits a, b, c, victim = 2a + b, fault = c, shape = a^c, point = b^c,
   * hflush = a^b^c. Each victim meets both values of every other factor,
   * and any two two-valued factors meet in all four combinations.
   */
  @Parameters(name = "{index}: {0}")
  public static List<Object[]> cases() {
    String[] shapes = {"fan-out", "chain"};
    List<Object[]> cases = new ArrayList<Object[]>();
    if ("full".equals(System.getProperty("hdfsrdma.killmatrix"))) {
      for (Fault fault : Fault.values()) {
        for (int victim = 0; victim <= 3; victim++) {
          for (String shape : shapes) {
            for (Point point : Point.values()) {
              for (boolean hflush : new boolean[] {true, false}) {
                cases.add(new Object[] {new Case(victim, fault, shape,
                    point, hflush)});
              }
            }
          }
        }
      }
      return cases;
    }
    for (int a = 0; a <= 1; a++) {
      for (int b = 0; b <= 1; b++) {
        for (int c = 0; c <= 1; c++) {
          cases.add(new Object[] {new Case(2 * a + b, Fault.values()[c],
              shapes[a ^ c], Point.values()[b ^ c], (a ^ b ^ c) == 1)});
        }
      }
    }
    return cases;
  }

  private static ProcessCluster cluster;
  private static DistributedFileSystem fs;
  private static final List<String> MATRIX = new ArrayList<String>();
  private static int caseNumber;
  private static long started;

  private final Case c;

  public TestKillMatrix(Case c) {
    this.c = c;
  }

  @BeforeClass
  public static void startCluster() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    started = System.nanoTime();
    String timeout = String.valueOf(TIMEOUT_MS);
    cluster = new ProcessCluster("killmatrix").daemonConf(
        // Dead DataNodes noticed in 2 x 2 s + 10 heartbeats, replicas
        // scheduled every second, a replication to a dead target retried
        // after 10 s.
        "dfs.heartbeat.interval=1",
        "dfs.namenode.heartbeat.recheck-interval=2000",
        "dfs.namenode.replication.interval=1",
        "dfs.namenode.replication.pending.timeout-sec=10",
        "dfs.client.socket-timeout=" + timeout,
        "dfs.datanode.socket.write.timeout=" + timeout)
        .start(DATANODES, -1, ProcessCluster.Jvm.PATCHED,
            HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY + "="
            + timeout,
            // A stale replica reported in the first block report of a
            // DataNode whose storage the NameNode had dropped (dead, then
            // back) is marked corrupt but its deletion postponed (storage
            // contents stale) until the next full report: 6 h by default.
            "dfs.blockreport.intervalMsec=5000");
    Configuration conf = new Configuration();
    for (String kv : clientConf("fan-out")) {
      String[] pair = kv.split("=", 2);
      conf.set(pair[0], pair[1]);
    }
    fs = cluster.client(conf, DATANODES);
  }

  @AfterClass
  public static void stopCluster() throws IOException {
    StringBuilder b = new StringBuilder(String.format(
        "Kill matrix (%d cases, %d s):%n  %-3s %-6s %-7s %-7s %-9s %-9s"
        + " | %-60s | %13s | %s%n", MATRIX.size(),
        started == 0 ? 0 : TimeUnit.NANOSECONDS.toSeconds(
            System.nanoTime() - started), "#", "victim", "fault", "shape",
        "point", "flush", "outcome", "bytes checked", "UCX bytes fetched"));
    for (String row : MATRIX) {
      b.append("  ").append(row).append(String.format("%n"));
    }
    System.out.print(b);
    LOG.info("{}", b);
    if (fs != null) {
      fs.close();
    }
    UcxRuntime.shutdown();
    if (cluster != null) {
      cluster.close();
    }
  }

  /**
   * A writer's client settings for pipelines of {@code shape}. Hadoop 3's
   * close gives up waiting for the last ack after the client's write
   * timeout (that setting plus 5 s a DataNode; Hadoop 2 waits on), and a
   * pipeline set-up through a stopped DataNode takes its read timeout
   * (dfs.client.socket-timeout plus 5 s a DataNode): with both at 3 s, a
   * close beside such a set-up failed in both runs on 3.4.2 (stock Hadoop's
   * logic). The writer's write timeout outlasts a set-up, its abandon and
   * the next one.
   */
  private static List<String> clientConf(String shape) {
    String timeout = String.valueOf(TIMEOUT_MS);
    return Arrays.asList(
        "fs.defaultFS=" + cluster.fsUri(),
        "dfs.namenode.http-address=" + cluster.httpAddress(),
        "dfs.blocksize=" + BLOCK,
        "dfs.client.socket-timeout=" + timeout,
        "dfs.datanode.socket.write.timeout=" + 10 * TIMEOUT_MS,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY + "=true",
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_KEY + "="
        + timeout,
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY + "=" + shape);
  }

  /** What one case found, for its row of the matrix. */
  private String outcome = "";
  private long checked;
  private long ucxBytes;

  @Test(timeout = 400_000)
  public void testCase() throws Exception {
    int n = ++caseNumber;
    long t0 = System.nanoTime();
    try {
      run(n);
      MATRIX.add(row(n, outcome + String.format(" (%d s)",
          TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0))));
    } catch (Throwable e) {
      MATRIX.add(row(n, "FAILED: " + e.toString().replace('\n', ' ')));
      throw e;
    }
  }

  private String row(int n, String what) {
    return String.format("%-3d %-43s | %-60s | %13d | %d", n, c, what,
        checked, ucxBytes);
  }

  private void run(int n) throws Exception {
    for (DataNodeProcess d : cluster.dataNodes()) {
      assertTrue(d.name + " runs at the start of the case",
          d.process.isAlive());
    }
    long[][] before = counters(null);
    Path path = new Path("/case-" + n);
    byte[] data = KillMatrixWriter.data(n, LENGTH);
    int pause = c.point == Point.MID_BLOCK ? MID_BLOCK : BLOCK;
    List<String> args = new ArrayList<String>(Arrays.asList(
        path.toString(), String.valueOf(n), String.valueOf(LENGTH),
        String.valueOf(pause), String.valueOf(c.hflush)));
    args.addAll(clientConf(c.shape));
    String name = "writer-" + n;
    Process writer = cluster.start(name, ProcessCluster.Jvm.PATCHED,
        KillMatrixWriter.class.getName(), args.toArray(new String[0]));
    DataNodeProcess victim = null;
    int victimIndex = -1;
    boolean stopped = false;
    try {
      awaitLine(writer, name, "READY");
      String[] pipeline = lastValue(name, "PIPELINE").split(",");
      assertEquals("pipeline " + Arrays.toString(pipeline), 3,
          pipeline.length);
      long acked = c.hflush ? Long.parseLong(lastValue(name, "ACKED")) : 0;
      assertEquals(c.hflush ? pause : 0, acked);
      if (c.victim > 0) {
        String address = pipeline[c.victim - 1];
        for (int i = 0; i < DATANODES; i++) {
          if (cluster.dataNodes().get(i).xferAddress().equals(address)) {
            victimIndex = i;
          }
        }
        assertTrue("no DataNode at " + address, victimIndex >= 0);
        victim = cluster.dataNodes().get(victimIndex);
      }
      if (!c.hflush) {
        // Nothing acked yet says a packet left the writer: wait until the
        // DataNodes fetched some of them, so that the fault hits a block
        // in flight over UCX rather than a pipeline that sent nothing yet.
        WaitFor.waitFor(() -> fetchedSince(before) > 0, 50, WAIT_MS);
      }
      Process target = victim == null ? writer : victim.process;
      long stopAt = System.nanoTime();
      if (c.fault == Fault.KILL) {
        target.destroyForcibly();
        assertTrue(target.waitFor(60, TimeUnit.SECONDS));
      } else {
        signal(target, "STOP");
        stopped = true;
      }
      if (victim == null && c.fault == Fault.STOP) {
        // The writer held past the DataNodes' timeouts, then resumed.
        awaitElapsed(stopAt, STOP_MS);
        signal(writer, "CONT");
        stopped = false;
      }
      if (writer.isAlive()) {
        go(writer);
      }
      if (stopped) {
        // A DataNode held until the writer got past it (or gave up), and
        // at least past the timeouts.
        final Process w = writer;
        try {
          WaitFor.waitFor(() -> !w.isAlive()
              && System.nanoTime() - stopAt
              >= TimeUnit.MILLISECONDS.toNanos(STOP_MS), 100, WAIT_MS);
        } catch (TimeoutException e) {
          throw new AssertionError("the writer did not get past DataNode "
              + victim.name + ", stopped, in " + WAIT_MS + " ms: hung?\n"
              + tail(name), e);
        } finally {
          signal(victim.process, "CONT");
          stopped = false;
        }
      }
      assertTrue("writer still runs after " + WAIT_MS + " ms\n" + tail(name),
          writer.waitFor(WAIT_MS, TimeUnit.MILLISECONDS));
      String writerOutcome;
      if (c.victim == 0 && c.fault == Fault.KILL) {
        writerOutcome = "killed";
      } else if (writer.exitValue() == 0) {
        assertEquals(String.valueOf(LENGTH), lastValue(name, "CLOSED"));
        writerOutcome = "closed";
      } else if (writer.exitValue() == KillMatrixWriter.FAILED
          && c.victim == 0) {
        // The stopped writer itself may fail cleanly once it resumes.
        writerOutcome = "failed cleanly (" + lastValue(name, "FAILED")
            .replaceAll("^.*Exception: ", "") + ")";
        writerOutcome = writerOutcome.substring(0,
            Math.min(40, writerOutcome.length()));
      } else {
        throw new AssertionError("writer exited " + writer.exitValue()
            + (c.victim == 0 ? "" : " although only a DataNode failed")
            + "\n" + tail(name));
      }
      cluster.assertNoCrash();
      if (writerOutcome.equals("closed")) {
        checked = checkPrefix(path, data, LENGTH, true);
      } else {
        if (c.hflush) {
          acked = Long.parseLong(lastValue(name, "ACKED"));
        }
        recoverLease(path);
        checked = checkPrefix(path, data, acked, false);
        writerOutcome += ", lease recovered";
      }

      // UCX carried the case's bytes: counted by the DataNodes that ran
      // throughout (a killed one's counters went with it).
      long[][] after = counters(c.fault == Fault.KILL ? victim : null);
      long fromDataNodes = 0;
      for (int i = 0; i < DATANODES; i++) {
        if (after[i] != null) {
          ucxBytes += after[i][0] - before[i][0];
          fromDataNodes += after[i][1] - before[i][1];
        }
      }
      assertTrue("no byte over UCX", ucxBytes > 0);
      if (c.shape.equals("chain")) {
        assertTrue("no DataNode fed another", fromDataNodes > 0);
      } else {
        assertEquals("bytes fetched from DataNodes in a fan-out", 0,
            fromDataNodes);
      }

      String dataNodeOutcome = "";
      if (victim != null) {
        if (c.fault == Fault.KILL) {
          victim = cluster.restartDataNode(victimIndex);
          dataNodeOutcome = ", restarted";
        } else {
          dataNodeOutcome = ", continued";
        }
        servesUcx(victim, n);
        dataNodeOutcome += ", UCX again";
      }
      waitHealthy();
      outcome = writerOutcome + dataNodeOutcome + ", healthy";
    } finally {
      if (stopped) {
        signal(victim == null ? writer : victim.process, "CONT");
      }
      writer.destroyForcibly();
      writer.waitFor(60, TimeUnit.SECONDS);
    }
  }

  /** Sends a process a signal ({@code kill -NAME pid}). */
  static void signal(Process p, String name) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + name,
        String.valueOf(ProcessCluster.pid(p))).inheritIO().start();
    assertTrue(kill.waitFor(30, TimeUnit.SECONDS));
    assertEquals("kill -" + name, 0, kill.exitValue());
  }

  private static void go(Process writer) throws IOException {
    OutputStream in = writer.getOutputStream();
    in.write("GO\n".getBytes(StandardCharsets.UTF_8));
    in.flush();
  }

  /** Waits until {@code ms} passed since {@code since} (nanoTime). */
  private static void awaitElapsed(long since, long ms) throws Exception {
    WaitFor.waitFor(() -> System.nanoTime() - since
        >= TimeUnit.MILLISECONDS.toNanos(ms), 50, ms + 10_000);
  }

  /** Waits for the writer's line {@code key}, failing if it exits first. */
  private static void awaitLine(Process writer, String name, String key)
      throws Exception {
    try {
      WaitFor.waitFor(() -> value(name, key) != null || !writer.isAlive(),
          50, WAIT_MS);
    } catch (TimeoutException e) {
      throw new AssertionError("no " + key + " from the writer\n"
          + tail(name), e);
    }
    if (value(name, key) == null) {
      throw new AssertionError("the writer exited before " + key + "\n"
          + tail(name));
    }
  }

  /** The value of the writer's last line {@code KEY value}, or null. */
  private static String value(String name, String key) {
    try {
      Matcher m = Pattern.compile("(?m)^" + key + " (.*)$")
          .matcher(cluster.log(name));
      String last = null;
      while (m.find()) {
        last = m.group(1).trim();
      }
      return last;
    } catch (IOException e) {
      return null;
    }
  }

  private static String lastValue(String name, String key) throws IOException {
    String v = value(name, key);
    if (v == null) {
      throw new AssertionError("no " + key + " line from the writer\n"
          + tail(name));
    }
    return v;
  }

  /** The last lines of a JVM's log, for failure messages. */
  private static String tail(String name) {
    try {
      String[] lines = cluster.log(name).split("\n");
      return String.join("\n", Arrays.asList(lines).subList(
          Math.max(0, lines.length - 40), lines.length));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  /**
   * Reads the file back: at least {@code acked} bytes, every byte the
   * writer's ({@code complete}: all of them); returns the bytes compared.
   */
  private static long checkPrefix(Path path, byte[] data, long acked,
      boolean complete) throws IOException {
    byte[] got = DFSTestUtil.readFileBuffer(fs, path);
    assertTrue(path + ": " + got.length + " bytes, " + acked
        + " acknowledged", got.length >= acked && got.length <= data.length);
    if (complete) {
      assertEquals(path + " length", data.length, got.length);
    }
    for (int i = 0; i < got.length; i++) {
      if (got[i] != data[i]) {
        fail(path + ": byte " + i + " differs (" + acked
            + " acknowledged, " + got.length + " read)");
      }
    }
    return got.length;
  }

  /** Recovers the lease of a file whose writer is gone, until closed. */
  private static void recoverLease(Path path) throws Exception {
    try {
      WaitFor.waitFor(() -> {
        try {
          return fs.recoverLease(path);
        } catch (IOException e) {
          return false;
        }
      }, 500, WAIT_MS);
    } catch (TimeoutException e) {
      throw new AssertionError(path + " not closed by lease recovery", e);
    }
  }

  /**
   * Per DataNode {DataBytesFetched, DataBytesFetchedFromDataNodes} as of
   * now (null for {@code skip}).
   */
  private static long[][] counters(DataNodeProcess skip) throws Exception {
    List<DataNodeProcess> dns = cluster.dataNodes();
    long[][] values = new long[dns.size()][];
    boolean fresh = false;
    for (int i = 0; i < dns.size(); i++) {
      DataNodeProcess d = dns.get(i);
      if (d == skip) {
        continue;
      }
      long fetched = fresh ? ProcessCluster.rdmaBeanAsServed(d,
          "DataBytesFetched") : ProcessCluster.rdmaBean(d, "DataBytesFetched");
      fresh = true;
      values[i] = new long[] {fetched,
          ProcessCluster.rdmaBeanAsServed(d, "DataBytesFetchedFromDataNodes")};
    }
    return values;
  }

  /**
   * Data bytes the DataNodes fetched over UCX since {@code before}, as JMX
   * serves them now (up to a metrics period old); 0 when one cannot say.
   */
  private static long fetchedSince(long[][] before) {
    long sum = 0;
    List<DataNodeProcess> dns = cluster.dataNodes();
    for (int i = 0; i < dns.size(); i++) {
      try {
        sum += ProcessCluster.rdmaBeanAsServed(dns.get(i),
            "DataBytesFetched") - before[i][0];
      } catch (Exception e) {
        return 0;
      }
    }
    return sum;
  }

  /**
   * The DataNode, once it serves again, fetches over UCX in the next
   * write: a file at replication {@link #DATANODES}, so on every DataNode.
   */
  private static void servesUcx(DataNodeProcess d, int n) throws Exception {
    try {
      // Registered (its plugin may start before that): a block report sent.
      WaitFor.waitFor(() -> {
        try {
          ProcessCluster.rdmaBeanAsServed(d, "DataBytesFetched");
          return cluster.log(d.logName).contains(
              "Successfully sent block report")
              && fs.getDataNodeStats(DatanodeReportType.LIVE).length
              == DATANODES;
        } catch (IOException e) {
          return false;
        }
      }, 200, WAIT_MS);
    } catch (TimeoutException e) {
      throw new AssertionError(d.name + " not serving again", e);
    }
    long before = ProcessCluster.rdmaBean(d, "DataBytesFetched");
    Path probe = new Path("/probe-" + n);
    byte[] data = KillMatrixWriter.data(-n, 256 * 1024 + 7);
    try (FSDataOutputStream out = fs.create(probe, (short) DATANODES)) {
      out.write(data);
    }
    assertEquals(d.name + " fetched the next write over UCX", data.length,
        ProcessCluster.rdmaBean(d, "DataBytesFetched") - before);
    checkPrefix(probe, data, data.length, true);
  }

  /**
   * Waits until fsck says HEALTHY and no block is corrupt (not even one
   * replica), missing or under-replicated.
   */
  private static void waitHealthy() throws Exception {
    final String[] last = {""};
    try {
      WaitFor.waitFor(() -> {
        try {
          ByteArrayOutputStream report = new ByteArrayOutputStream();
          ToolRunner.run(new DFSck(fs.getConf(),
              new PrintStream(report, true)), new String[] {"/"});
          last[0] = report.toString() + "\ncorrupt replica blocks "
              + fs.getCorruptBlocksCount() + ", missing "
              + fs.getMissingBlocksCount() + ", under-replicated "
              + ReleaseApi.underReplicatedBlocks(fs);
          return last[0].contains("Status: HEALTHY")
              && zero(last[0], "Under-replicated blocks:")
              && zero(last[0], "Corrupt blocks:")
              && zero(last[0], "Missing replicas:")
              && fs.getCorruptBlocksCount() == 0
              && fs.getMissingBlocksCount() == 0
              && ReleaseApi.underReplicatedBlocks(fs) == 0;
        } catch (Exception e) {
          last[0] = e.toString();
          return false;
        }
      }, 1000, WAIT_MS);
    } catch (TimeoutException e) {
      throw new AssertionError("not healthy after " + WAIT_MS + " ms: "
          + last[0], e);
    }
  }

  private static boolean zero(String report, String label) {
    return Pattern.compile(Pattern.quote(label) + "\\s+0\\b").matcher(report)
        .find();
  }
}
