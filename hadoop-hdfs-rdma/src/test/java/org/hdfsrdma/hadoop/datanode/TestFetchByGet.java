package org.hdfsrdma.hadoop.datanode;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.hdfs.server.datanode.UcxPacketReceiver;
import org.apache.hadoop.hdfs.server.datanode.UcxReceiverHooks;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.UcxTestClient;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes.Phase;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.junit.Test;

import com.google.common.util.concurrent.Uninterruptibles;

/**
 * Packets fetched by get ({@link GetWindow}), over UCX's tcp transport
 * from a client with a worker of its own, with
 * {@code dfs.datanode.rdma.allow-emulated-gets} (without it the region is
 * refused and nothing is read): 8 packets fetched three ahead of the
 * reader into landing buffers over the DataNode's own endpoint back, each
 * phase timed once a packet, every landing buffer back, also when the
 * block is given up with gets in flight; a receiver asleep on a get wakes
 * when another thread completes it (150 blocks of 8 packets, none slower
 * than 5 s); a get a frozen client leaves queued fails the block after the
 * get timeout (1 s), and closing the block then keeps the client's remote
 * key; a connection that opened blocks outlives the unbound timeout
 * (200 ms, idled 600 ms) and serves the next block's gets, while one that
 * opened none is closed.
 */
public class TestFetchByGet extends ReceivePathTestBase {

  @Test(timeout = 120_000)
  public void testGetsOverTcpRunAheadAndReturnTheirLandingBuffers()
      throws Exception {
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_KEY, true);
    startTcp(true);
    final int packets = 8;
    PacketPhaseTimes times = dataNode.metrics().times();
    RegisteredBufferPool landing = runtime.pools().landing();
    long landingInUse = landing.metrics().inUseBytes();
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long[] tokens = new long[packets];
    try {
      for (int p = 0; p < packets; p++) {
        tokens[p] = client.fill(AT, CHECKSUMS + DATA, 100 + p);
      }
      announce(tokens[0]);
      for (int p = 0; p < packets; p++) {
        describe(client, tokens[p], p, 0);
      }
      GenericTestUtils.waitFor(() -> s.queued() == packets, 10, 30_000);
      RemoteRegion region = s.region(1);
      assertNotNull(region);
      assertFalse("tcp: read with gets, not directly", region.isDirect());
      for (int p = 0; p < packets; p++) {
        receive(r);
        if (p == 0) {
          // The next three packets' gets are in flight, each holding a
          // landing buffer.
          assertEquals(landingInUse + 3L * landing.bufferSize(),
              landing.metrics().inUseBytes());
        }
        assertPacket(r, p, 100 + p);
        UcxReceiverHooks.verifyChunkedSums(r, DataChecksum.newDataChecksum(
            DataChecksum.Type.NULL, 512), r.getDataSlice(),
            r.getChecksumSlice(), "test");
        UcxReceiverHooks.written(r);
      }
      assertEquals("every landing buffer back", landingInUse,
          landing.metrics().inUseBytes());
      assertEquals((long) packets * DATA, fetched());
      assertEquals(packets, times.count(Phase.GET_WAIT));
      assertEquals(packets, times.count(Phase.COPY));
      assertEquals(packets, times.count(Phase.VERIFY));
      assertEquals(packets, times.count(Phase.DISK));
      assertEquals(packets, times.count(Phase.DESCRIPTOR_WAIT));
      assertNotNull("gets went over this DataNode's own endpoint back",
          DataNodeInternals.endpointBack(runtime, s.boundEndpoint()));
    } finally {
      r.close();
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertEquals(landingInUse, landing.metrics().inUseBytes());
  }

  /**
   * A receiver asleep in the worker's event wait for a get is woken when
   * another thread (the worker's progress thread sweeping) completes that
   * get: no wait lasts anywhere near the get timeout. Many blocks, because
   * the sweep must win a race: a lost wake-up stalled about one block in
   * thirty until UCX's next keepalive, 20 s later.
   */
  @Test(timeout = 300_000)
  public void testGetWaitsEndWhenTheGetCompletes() throws Exception {
    startTcp(true);
    final int blocks = 150;
    final int packets = 8;
    long[] tokens = new long[packets];
    long slowest = 0;
    try {
      for (int p = 0; p < packets; p++) {
        tokens[p] = client.fill(AT, CHECKSUMS + DATA, 300 + p);
      }
      for (int b = 0; b < blocks; b++) {
        UcxBlockSession s = open(16);
        UcxPacketReceiver r = receiver(s, null);
        try {
          announce(tokens[0]);
          for (int p = 0; p < packets; p++) {
            describe(client, tokens[p], p, 0);
          }
          for (int p = 0; p < packets; p++) {
            long start = System.nanoTime();
            receive(r);
            slowest = Math.max(slowest, System.nanoTime() - start);
            assertEquals(p, r.getHeader().getSeqno());
          }
        } finally {
          r.close();
        }
      }
    } finally {
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertEquals((long) blocks * packets * DATA, fetched());
    assertTrue("a packet took " + TimeUnit.NANOSECONDS.toMillis(slowest)
        + " ms", slowest < TimeUnit.SECONDS.toNanos(5));
  }

  /**
   * A peer keeps its connection for its next block and greets only a new
   * one, so a DataNode must not forget a connection that opened blocks
   * because it idled: the next block would have no endpoint back for its
   * gets (a chain between hosts stalled for the get timeout whenever a
   * feeder came back after the sweep). A connection that never opened a
   * block is still closed after the unbound timeout.
   */
  @Test(timeout = 120_000)
  public void testAConnectionThatOpenedBlocksOutlivesTheUnboundTimeout()
      throws Exception {
    conf.setLong(
        HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_KEY,
        200);
    startTcp(true);
    intruder = UcxTestClient.separate("tcp", runtime.workerAddress(),
        AT + PACKET_SIZE, 1);
    GenericTestUtils.waitFor(
        () -> DataNodeServer.of(runtime).clientConnections() == 2, 10,
        30_000);
    long[] tokens = new long[2];
    try {
      for (int p = 0; p < tokens.length; p++) {
        tokens[p] = client.fill(AT, CHECKSUMS + DATA, 400 + p);
      }
      long connection = -1;
      for (int block = 0; block < 2; block++) {
        UcxBlockSession s = open(16);
        UcxPacketReceiver r = receiver(s, null);
        try {
          announce(tokens[0]);
          for (int p = 0; p < tokens.length; p++) {
            describe(client, tokens[p], p, 0);
          }
          for (int p = 0; p < tokens.length; p++) {
            receive(r);
            assertPacket(r, p, 400 + p);
            UcxReceiverHooks.written(r);
          }
          assertFalse(s.region(1).isDirect());
          if (block == 0) {
            connection = s.boundEndpoint();
          } else {
            assertEquals("the same connection", connection,
                s.boundEndpoint());
          }
        } finally {
          r.close();
        }
        // Idle well past the timeout, then the sweep.
        final long idleFrom = System.nanoTime();
        GenericTestUtils.waitFor(() -> System.nanoTime() - idleFrom
            > TimeUnit.MILLISECONDS.toNanos(600), 10, 30_000);
        DataNodeInternals.sweepConnections(runtime);
        assertTrue("the connection that opened a block is kept",
            DataNodeInternals.knowsConnection(runtime, connection));
      }
      assertEquals("only the connection that opened no block was closed",
          1, DataNodeServer.of(runtime).idleConnectionsClosed());
      assertEquals(1, DataNodeServer.of(runtime).clientConnections());
      assertEquals(2L * tokens.length * DATA, fetched());
    } finally {
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
  }

  @Test(timeout = 120_000)
  public void testAbandonedGetsReturnTheirLandingBuffersOnClose()
      throws Exception {
    startTcp(true);
    RegisteredBufferPool landing = runtime.pools().landing();
    long landingInUse = landing.metrics().inUseBytes();
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long[] tokens = new long[6];
    try {
      for (int p = 0; p < tokens.length; p++) {
        tokens[p] = client.fill(AT, CHECKSUMS + DATA, 200 + p);
      }
      announce(tokens[0]);
      for (int p = 0; p < tokens.length; p++) {
        describe(client, tokens[p], p, 0);
      }
      GenericTestUtils.waitFor(() -> s.queued() == tokens.length, 10,
          30_000);
      receive(r);
      assertPacket(r, 0, 200);
      assertTrue(landing.metrics().inUseBytes() > landingInUse);
    } finally {
      // The block is given up with gets ahead: close waits for them.
      r.close();
      for (long t : tokens) {
        client.pool.release(t);
      }
    }
    assertEquals(landingInUse, landing.metrics().inUseBytes());
  }

  /**
   * A client that stops serving its memory (frozen, not dead: its
   * connection stays up) leaves a get queued past the get timeout. Closing
   * the block then keeps the client's remote key unpacked: UCX may still
   * send that get with it, and a key destroyed under a queued get is a use
   * after free. Thawed, the client serves the get into the landing buffer
   * the receiver kept out of the pool.
   */
  @Test(timeout = 120_000)
  public void testAGetPendingAtCloseKeepsTheClientsRemoteKey()
      throws Exception {
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        1000);
    startTcp(true);
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long token = client.fill(AT, CHECKSUMS + DATA, 400);
    CountDownLatch frozen = new CountDownLatch(1);
    CountDownLatch thaw = new CountDownLatch(1);
    try {
      announce(token);
      describe(client, token, 0, 0);
      // A first packet: the endpoint back to the client is up.
      receive(r);
      assertPacket(r, 0, 400);
      UcxReceiverHooks.written(r);
      RemoteRegion region = s.region(1);
      assertFalse("tcp: read with gets, not directly", region.isDirect());
      // The client's progress thread stops; its tcp transport serves no get.
      client.worker.execute(() -> {
        frozen.countDown();
        Uninterruptibles.awaitUninterruptibly(thaw);
      });
      assertTrue(frozen.await(30, TimeUnit.SECONDS));
      describe(client, token, 1, 0);
      GenericTestUtils.waitFor(() -> s.queued() == 1, 10, 30_000);
      try {
        receive(r);
        fail("a get from a frozen client completed");
      } catch (UcxPathException expected) {
        assertTrue(expected.getMessage(),
            expected.getMessage().contains("did not complete in 1000 ms"));
      }
      r.close();
      // Released, the region would refuse a new reference.
      region.retain();
      region.release();
    } finally {
      thaw.countDown();
      r.close();
      client.pool.release(token);
    }
  }

  @Test(timeout = 120_000)
  public void testEmulatedGetsAreRefusedUnlessAllowed() throws Exception {
    startTcp(false);
    UcxBlockSession s = open(16);
    UcxPacketReceiver r = receiver(s, null);
    long token = client.fill(AT, CHECKSUMS + DATA, 7);
    try {
      announce(token);
      describe(client, token, 0, 0);
      try {
        receive(r);
        fail("read a packet with gets UCX emulates over tcp");
      } catch (IOException expected) {
        assertTrue(expected.getMessage(), expected.getMessage().contains(
            "would be emulated"));
      }
      assertEquals(0, r.fetcher().bytesFetched());
      assertEquals(0, fetched());
    } finally {
      r.close();
      client.pool.release(token);
    }
  }
}
