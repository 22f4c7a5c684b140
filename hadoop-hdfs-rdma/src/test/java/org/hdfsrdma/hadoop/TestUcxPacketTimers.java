package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.net.URL;
import java.util.Random;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.io.IOUtils;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes.Phase;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The per-packet phase timers an operator and the benchmarks read: off by
 * default, every phase counted once per packet when on, the client's in
 * the JVM's metrics and each DataNode's in its own (how they reach sinks
 * and JMX: {@link TestHdfsRdmaMetrics}).
 *
 * <p>The phases: every same-host packet with bytes is timed once in copy,
 * verify and disk (no get wait), every packet in the descriptor wait; the
 * client's send and send-to-ack.
 */
public class TestUcxPacketTimers {

  private MiniDFSCluster cluster;

  @Before
  public void checkUcx() {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
  }

  @After
  public void tearDown() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
  }

  private void writeFile(Configuration conf, int bytes) throws Exception {
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(3).build();
    cluster.waitActive();
    FileSystem fs = cluster.getFileSystem();
    byte[] data = new byte[bytes];
    new Random(3).nextBytes(data);
    try (FSDataOutputStream out = fs.create(new Path("/timed"), (short) 3)) {
      out.write(data);
    }
    assertEquals(bytes, DFSTestUtil.readFileBuffer(fs, new Path("/timed"))
        .length);
  }

  @Test(timeout = 300_000)
  public void testTimersAreOffByDefault() throws Exception {
    writeFile(TestUcxWritePath.ucxConf(), 1024 * 1024);
    UcxRuntime runtime = UcxRuntime.current();
    assertNull(runtime.metrics().clientTimes());
    for (DataNode d : cluster.getDataNodes()) {
      assertNull(UcxDataNode.of(d).metrics().times());
    }
    assertEquals(3L * 1024 * 1024, UcxCounters.dataBytesFetched());
  }

  /** The phase timers of every DataNode of the cluster, added up. */
  private PacketPhaseTimes dataNodeTimes() {
    PacketPhaseTimes sum = new PacketPhaseTimes();
    for (DataNode d : cluster.getDataNodes()) {
      PacketPhaseTimes times = UcxDataNode.of(d).metrics().times();
      for (Phase p : Phase.values()) {
        sum.add(p, times.count(p), times.nanos(p));
      }
    }
    return sum;
  }

  @Test(timeout = 300_000)
  public void testEveryPhaseIsTimedPerPacket() throws Exception {
    Configuration conf = TestUcxWritePath.ucxConf();
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_KEY, true);
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_KEY, true);
    writeFile(conf, 2 * 1024 * 1024);
    UcxRuntime runtime = UcxRuntime.current();
    PacketPhaseTimes dn = dataNodeTimes();
    long fetched = UcxCounters.dataBytesFetchedByDataNode().values().stream()
        .mapToLong(Long::longValue).sum();
    assertEquals(3L * 2 * 1024 * 1024, fetched);
    // Same host: every packet with bytes is copied straight from the
    // client's memory (no get), verified and written, each timed once.
    long packets = dn.count(Phase.COPY);
    assertTrue("packets copied: " + packets, packets >= 3 * 32);
    for (Phase p : new Phase[] {Phase.VERIFY, Phase.DISK}) {
      assertEquals(p.label(), packets, dn.count(p));
    }
    assertEquals("no gets on the same-host path", 0,
        dn.count(Phase.GET_WAIT));
    assertTrue("every packet waited for its descriptor, empty ones too",
        dn.count(Phase.DESCRIPTOR_WAIT) >= packets);
    for (Phase p : Phase.values()) {
      // Every total is a sum of positive intervals of one write.
      assertTrue(p.label(), dn.nanos(p) >= 0 && dn.nanos(p) < 60_000_000_000L);
    }
    assertTrue(dn.nanos(Phase.COPY) > 0);
    assertTrue(dn.nanos(Phase.DISK) > 0);
    PacketPhaseTimes client = runtime.metrics().clientTimes();
    // Packets with data are timed until their ack releases the buffer; the
    // two empty end-of-block packets are sent but hold no buffer.
    assertTrue(client.count(Phase.CLIENT_SENT_TO_ACK) >= 32);
    assertEquals(client.count(Phase.CLIENT_SEND) - 2,
        client.count(Phase.CLIENT_SENT_TO_ACK));

  }
}
