package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.metrics.ClientReads;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.AfterClass;
import org.junit.Before;
import org.junit.BeforeClass;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The kill matrix's reader half: the DataNode a UCX read is taking packets
 * from is killed ({@code kill -9}) or stopped (SIGSTOP, held past the
 * client's socket timeout, then SIGCONT) in the middle of a block, on a
 * cluster of separate JVMs (a NameNode and three DataNodes), while this
 * JVM reads a file of replication 3 with {@code read(byte[])} or
 * {@code read(ByteBuffer)}, taking the DataNodes' buffers directly from
 * their shared memory or, in two cases, by get over UCX's tcp transport
 * (the path between hosts). Each case proves: the read completes from
 * another replica, byte for byte what was written; UCX carried its bytes
 * before the fault and the rest after it (the client's counters, and the
 * DataNodes' that served it); no JVM wrote a crash report; every running
 * DataNode, the stopped one once continued, ends holding no read buffer;
 * and the victim, restarted or continued, serves a UCX read again.
 *
 * <p>Reads run only on the lines whose patch series hooks the block reader;
 * elsewhere the class is skipped. The matrix is printed at the end: case,
 * outcome, bytes checked, UCX bytes before and after the fault.
 */
@RunWith(Parameterized.class)
public class TestReadKillMatrix {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestReadKillMatrix.class);

  private static final int KIB = 1024;
  private static final int BLOCK = 1024 * KIB;
  /** The client's and DataNodes' socket timeout. */
  private static final int TIMEOUT_MS = 3000;
  private static final int DATANODES = 3;
  /** Three blocks, the last one partial. */
  private static final int LENGTH = 2 * BLOCK + 512 * KIB + 333;
  /** Where the reader stops for the fault: mid-block, off a chunk. */
  private static final int MID_BLOCK = 300 * KIB + 1000;
  private static final long WAIT_MS = 120_000;
  /** The DataNodes' counter of bytes their reads' clients took. */
  private static final String READ_BYTES = "ReadBytesOverUcx";

  /** What happens to the DataNode being read. */
  enum Fault {
    KILL("kill -9"), STOP("SIGSTOP");
    final String label;
    Fault(String label) {
      this.label = label;
    }
  }

  /** How the client reads. */
  enum Api {
    BYTES("read(byte[])"), BYTE_BUFFER("read(ByteBuffer)");
    final String label;
    Api(String label) {
      this.label = label;
    }
  }

  /** How the client takes the DataNode's buffers. */
  enum Transport {
    DIRECT("direct"), GET("get over tcp");
    final String label;
    Transport(String label) {
      this.label = label;
    }
  }

  /**
   * Every fault and API reading directly from the DataNodes' memory, then
   * two reading by get (UCX over tcp, as between hosts), one case per
   * fault, each API once.
   */
  @Parameters(name = "{index}: {0} {1} {2}")
  public static List<Object[]> cases() {
    List<Object[]> cases = new ArrayList<Object[]>();
    for (Fault f : Fault.values()) {
      for (Api a : Api.values()) {
        cases.add(new Object[] {f, a, Transport.DIRECT});
      }
    }
    cases.add(new Object[] {Fault.KILL, Api.BYTES, Transport.GET});
    cases.add(new Object[] {Fault.STOP, Api.BYTE_BUFFER, Transport.GET});
    return cases;
  }

  private static ProcessCluster cluster;
  private static DistributedFileSystem fs;
  private static final List<String> MATRIX = new ArrayList<String>();
  private static int caseNumber;

  /** The transport of the client {@link #fs} is, or null. */
  private static Transport clientTransport;

  private final Fault fault;
  private final Api api;
  private final Transport transport;

  public TestReadKillMatrix(Fault fault, Api api, Transport transport) {
    this.fault = fault;
    this.api = api;
    this.transport = transport;
  }

  @BeforeClass
  public static void startCluster() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    assumeTrue("this release's block reader has no UCX read hook",
        TestUcxReads.readHooked());
    String timeout = String.valueOf(TIMEOUT_MS);
    cluster = new ProcessCluster("readkills").daemonConf(
        // A stopped DataNode stays live (declared dead after 2 x 5 s + 10
        // heartbeats); a killed one is restarted before that matters.
        "dfs.heartbeat.interval=1",
        "dfs.client.socket-timeout=" + timeout,
        "dfs.datanode.socket.write.timeout=" + timeout)
        .start(DATANODES, -1, ProcessCluster.Jvm.PATCHED,
            // Buffers of three packets, two a read: the DataNode describes
            // at most three buffers ahead of the client's credits (about
            // 600 KiB), so the rest of the first block needs the victim.
            HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_READ_BUFFER_BYTES_KEY
            + "=" + 256 * KIB,
            HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_READ_USER_BUFFERS_KEY
            + "=2",
            // Shared memory for direct readers, tcp for those that get.
            HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY + "=all",
            HdfsRdmaConfigKeys.DFS_RDMA_UCX_ALLOW_TCP_KEY + "=true");
  }

  /**
   * The client of the case's transport: this JVM's UCX runtime is made
   * again when the transport changes (it is one per JVM).
   */
  @Before
  public void client() throws Exception {
    if (clientTransport == transport) {
      return;
    }
    if (fs != null) {
      fs.close();
      fs = null;
    }
    UcxRuntime.shutdown();
    Configuration conf = new Configuration();
    if (transport == Transport.GET) {
      conf.set(HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY, "tcp");
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_RDMA_UCX_ALLOW_TCP_KEY, true);
      conf.setBoolean(
          HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_KEY, true);
      // A get cut by the fault falls back; a victim met again in the next
      // case must not be backed off for the default ten minutes.
      conf.setLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_KEY,
          1000);
    }
    conf.setLong("dfs.blocksize", BLOCK);
    conf.setInt("dfs.client.socket-timeout", TIMEOUT_MS);
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        true);
    // The rest of a block after a failover is below the default 1 MiB.
    conf.setLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_MIN_BYTES_KEY, 0);
    conf.setLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_KEY,
        TIMEOUT_MS);
    fs = cluster.client(conf, DATANODES);
    clientTransport = transport;
  }

  @AfterClass
  public static void stopCluster() throws IOException {
    StringBuilder b = new StringBuilder(String.format(
        "Read kill matrix (%d cases):%n  %-3s %-8s %-17s %-12s | %-52s"
        + " | %13s | %s%n", MATRIX.size(), "#", "fault", "reader", "taken",
        "outcome",
        "bytes checked", "UCX bytes read before / after the fault"));
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

  private String outcome = "";
  private long checked;
  private long ucxBefore;
  private long ucxAfter;

  @Test(timeout = 300_000)
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
    return String.format("%-3d %-8s %-17s %-12s | %-52s | %13d | %d / %d",
        n, fault.label, api.label, transport.label, what, checked, ucxBefore,
        ucxAfter);
  }

  private void run(int n) throws Exception {
    for (DataNodeProcess d : cluster.dataNodes()) {
      assertTrue(d.name + " runs at the start of the case",
          d.process.isAlive());
    }
    Path path = new Path("/read-case-" + n);
    byte[] data = KillMatrixWriter.data(1000 + n, LENGTH);
    try (FSDataOutputStream out = fs.create(path, (short) DATANODES)) {
      out.write(data);
    }
    waitReplicas(path);
    final long[] servedBefore = served();
    ClientReads reads = UcxRuntime.current().metrics().reads();
    long start = reads.bytesRead();
    long directly = reads.bytesReadDirectly();
    long fellBack = reads.readsFellBack();
    long stock = reads.readsStock();
    long answered = reads.readsAnswered();
    byte[] got = new byte[LENGTH];
    DataNodeProcess victim = null;
    int victimIndex = -1;
    boolean stopped = false;
    boolean killed = false;
    long pastFaultMs;
    try {
      try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(path)) {
        readFully(in, got, 0, MID_BLOCK);
        ucxBefore = reads.bytesRead() - start;
        assertTrue("the first " + MID_BLOCK + " bytes came over UCX: "
            + ucxBefore, ucxBefore >= MID_BLOCK);
        String address = in.getCurrentDatanode().getXferAddr();
        victimIndex = indexOf(address);
        victim = cluster.dataNodes().get(victimIndex);
        long atFault = reads.bytesRead();
        if (fault == Fault.KILL) {
          killed = true;
          victim.process.destroyForcibly();
          assertTrue(victim.process.waitFor(60, TimeUnit.SECONDS));
        } else {
          TestKillMatrix.signal(victim.process, "STOP");
          stopped = true;
        }
        long t = System.nanoTime();
        readFully(in, got, MID_BLOCK, LENGTH - MID_BLOCK);
        pastFaultMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t);
        assertEquals("end of file", -1, in.read());
        ucxAfter = reads.bytesRead() - atFault;
        assertNotEquals("the read left " + address, address,
            in.getCurrentDatanode().getXferAddr());
      } finally {
        if (stopped) {
          TestKillMatrix.signal(victim.process, "CONT");
          stopped = false;
        }
      }
      assertArrayEquals(path + " read back", data, got);
      checked = got.length;
      // Every block reader of the case offered UCX and was answered, and
      // none gave UCX up: every packet came over UCX. The blocks after the
      // first came from the other replicas (the stream left the victim):
      // its buffers hold several packets, which the client may still have
      // taken after the fault.
      assertEquals("reads served stock", stock, reads.readsStock());
      if (transport == Transport.DIRECT) {
        assertEquals("reads UCX gave up", fellBack, reads.readsFellBack());
      } else {
        // The victim's read may have been inside a get, which fails (and
        // falls back) before the socket does; no other read gives up.
        assertTrue("reads UCX gave up: " + (reads.readsFellBack()
            - fellBack), reads.readsFellBack() - fellBack <= 1);
        assertEquals("bytes read directly, not by get", directly,
            reads.bytesReadDirectly());
      }
      assertTrue("reads answered", reads.readsAnswered() - answered >= 2);
      long rest = LENGTH - BLOCK;
      assertTrue("bytes over UCX after the fault: " + ucxAfter + " < "
          + rest, ucxAfter >= rest);
      cluster.assertNoCrash();
      othersServed(servedBefore, victimIndex, rest);
      String restored;
      if (killed) {
        killed = false;
        victim = cluster.restartDataNode(victimIndex);
        restored = "restarted";
      } else {
        restored = "continued";
      }
      waitLive();
      noBuffersHeld();
      servesAgain(path, data, victim);
      outcome = String.format("read past it in %.1f s, %s, UCX again",
          pastFaultMs / 1000.0, restored);
    } finally {
      if (killed) { // the next case needs every DataNode
        cluster.restartDataNode(victimIndex);
        waitLive();
      }
    }
  }

  /**
   * The DataNodes but the victim served at least {@code rest} bytes over
   * UCX (counted once a read ended, which the stream's close starts).
   */
  private static void othersServed(long[] before, int victimIndex,
      long rest) throws Exception {
    final long[] byOthers = {0};
    try {
      WaitFor.waitFor(() -> {
        byOthers[0] = 0;
        for (int i = 0; i < DATANODES; i++) {
          if (i != victimIndex) {
            try {
              byOthers[0] += ProcessCluster.dataNodeSourceAsServed(
                  cluster.dataNodes().get(i), READ_BYTES)
                  - before[i];
            } catch (IOException e) {
              return false;
            }
          }
        }
        return byOthers[0] >= rest;
      }, 200, WAIT_MS);
    } catch (TimeoutException e) {
      throw new AssertionError("the other DataNodes served " + byOthers[0]
          + " bytes over UCX, not the " + rest + " of the later blocks", e);
    }
  }

  /** Reads {@code len} bytes into {@code b} at {@code off} by the API. */
  private void readFully(HdfsDataInputStream in, byte[] b, int off, int len)
      throws IOException {
    ByteBuffer direct = api == Api.BYTE_BUFFER
        ? ByteBuffer.allocateDirect(100 * KIB) : null;
    int done = 0;
    while (done < len) {
      int want = Math.min(len - done, 100 * KIB);
      int r;
      if (direct == null) {
        r = in.read(b, off + done, want);
      } else {
        direct.clear().limit(want);
        r = in.read(direct);
        if (r > 0) {
          direct.flip();
          direct.get(b, off + done, r);
        }
      }
      if (r < 0) {
        throw new IOException("end of file at " + (off + done) + " of "
            + LENGTH);
      }
      done += r;
    }
  }

  private static boolean at(HdfsDataInputStream in, DataNodeProcess d) {
    return in.getCurrentDatanode().getXferAddr().equals(d.xferAddress());
  }

  private static int indexOf(String xferAddress) {
    List<DataNodeProcess> dns = cluster.dataNodes();
    for (int i = 0; i < dns.size(); i++) {
      if (dns.get(i).xferAddress().equals(xferAddress)) {
        return i;
      }
    }
    throw new AssertionError("no DataNode at " + xferAddress);
  }

  /** Per DataNode, the bytes it served to UCX reads (fresh JMX). */
  private static long[] served() throws IOException {
    List<DataNodeProcess> dns = cluster.dataNodes();
    long[] v = new long[dns.size()];
    for (int i = 0; i < dns.size(); i++) {
      v[i] = i == 0
          ? ProcessCluster.dataNodeSourceBean(dns.get(i), READ_BYTES)
          : ProcessCluster.dataNodeSourceAsServed(dns.get(i), READ_BYTES);
    }
    return v;
  }

  /** Waits until the NameNode knows every replica of {@code path}. */
  private static void waitReplicas(Path path) throws Exception {
    WaitFor.waitFor(() -> {
      try {
        for (BlockLocation l : fs.getFileBlockLocations(path, 0, LENGTH)) {
          if (l.getNames().length < DATANODES) {
            return false;
          }
        }
        return true;
      } catch (IOException e) {
        return false;
      }
    }, 100, WAIT_MS);
  }

  private static void waitLive() throws Exception {
    try {
      WaitFor.waitFor(() -> {
        try {
          return fs.getDataNodeStats(DatanodeReportType.LIVE).length
              == DATANODES;
        } catch (IOException e) {
          return false;
        }
      }, 200, WAIT_MS);
    } catch (TimeoutException e) {
      throw new AssertionError("fewer than " + DATANODES + " DataNodes live",
          e);
    }
  }

  /** Every DataNode ends holding no read buffer: none leaked. */
  private static void noBuffersHeld() throws Exception {
    final String[] last = {""};
    try {
      WaitFor.waitFor(() -> {
        StringBuilder b = new StringBuilder();
        boolean none = true;
        for (DataNodeProcess d : cluster.dataNodes()) {
          try {
            long held = ProcessCluster.dataNodeSourceAsServed(d,
                "ReadBuffersHeld");
            b.append(d.name).append(' ').append(held).append("; ");
            none &= held == 0;
          } catch (IOException e) {
            b.append(d.name).append(' ').append(e).append("; ");
            none = false;
          }
        }
        last[0] = b.toString();
        return none;
      }, 200, WAIT_MS);
    } catch (TimeoutException e) {
      throw new AssertionError("read buffers still held: " + last[0], e);
    }
  }

  /**
   * The victim serves a UCX read again: once the NameNode lists its
   * replicas, streams of {@code path} are opened until one reads from it
   * (the NameNode orders same-host replicas at random; each stream may
   * also leave its first replica once with {@code seekToNewSource}), and
   * that stream reads the rest of the first block from it, a read the
   * victim counts as served over UCX.
   */
  private static void servesAgain(Path path, byte[] data,
      DataNodeProcess victim) throws Exception {
    waitReplicas(path);
    long before = ProcessCluster.dataNodeSourceBean(victim, "ReadsOverUcx");
    byte[] got = new byte[BLOCK];
    boolean reached = false;
    for (int tries = 0; tries < 20 && !reached; tries++) {
      try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(path)) {
        in.readFully(got, 0, 1);
        if (!at(in, victim)) {
          in.seekToNewSource(in.getPos());
          in.readFully(got, 0, 1);
        }
        if (at(in, victim)) {
          reached = true;
          int pos = (int) in.getPos();
          in.readFully(got, 0, BLOCK - pos);
          for (int i = 0; i < BLOCK - pos; i++) {
            if (got[i] != data[pos + i]) {
              throw new AssertionError("byte " + (pos + i) + " from "
                  + victim.name + " differs");
            }
          }
        }
      }
    }
    assertTrue("no stream of 20 read from " + victim.name, reached);
    try {
      WaitFor.waitFor(() -> {
        try {
          return ProcessCluster.dataNodeSourceAsServed(victim,
              "ReadsOverUcx") > before;
        } catch (IOException e) {
          return false;
        }
      }, 200, WAIT_MS);
    } catch (TimeoutException e) {
      throw new AssertionError(victim.name + " served no UCX read again", e);
    }
  }
}
