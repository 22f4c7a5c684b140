package org.hdfsrdma.hadoop.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.datanode.FetchedPacket;
import org.hdfsrdma.hadoop.datanode.PacketFetcher;
import org.hdfsrdma.hadoop.datanode.UcxBlockSession;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.SessionIds;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.HostIdentity;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * A client stream over real UCX against a DataNode session of this JVM:
 * it offers, commits, and then sends every packet as a descriptor the
 * DataNode reads (directly, same host); and its per-packet send path
 * allocates nothing: over 1,000 packets the sending thread's allocated
 * bytes (the JVM's own count) stay within a small constant per packet.
 *
 * <p>3,000 packets, every one read back by the DataNode; the allocation is
 * measured over the last 1,000: under 8 bytes per packet allowed, 0 measured.
 */
public class TestClientStream {

  private static final String DN = "127.0.0.1:50010";
  private static final String POOL = "BP-test";
  private static final long BLOCK = 1073741825L;
  private static final long STAMP = 1001L;
  private static final int PACKET_SIZE = 64 * 1024;
  private static final int CHECKSUMS = 4 * 126;
  private static final int DATA = 512 * 126;
  /** Where a packet's checksums start in its buffer (after the header). */
  private static final int AT = PacketHeader.PKT_MAX_HEADER_LEN;

  private UcxRuntime runtime;
  private UcxDataNode dataNode;

  /** Restarts the stream asked for; none expected. */
  private final AtomicInteger restarts = new AtomicInteger();
  private final PipelineFailures failures = new PipelineFailures() {
    @Override
    public void restartOverTcp() {
      restarts.incrementAndGet();
    }

    @Override
    public void forgive() {
    }

    @Override
    public boolean pipelineFailed() {
      return restarts.get() > 0;
    }
  };

  @Before
  public void setUp() {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    UcxRuntime.shutdown();
  }

  @After
  public void tearDown() {
    if (dataNode != null) {
      dataNode.stop();
    }
    UcxRuntime.shutdown();
  }

  @Test(timeout = 300_000)
  public void testSendPathAllocatesNothingPerPacket() throws Exception {
    Configuration conf = new Configuration();
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
    conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY, "fan-out");
    runtime = UcxRuntime.get(conf);
    dataNode = UcxDataNode.start(new Object(), DN, conf, runtime);
    ClientStream stream = ClientStream.open(UcxClients.start(conf),
        PACKET_SIZE, failures);
    assertNotNull("UCX on for the stream", stream);

    byte[] password = "block token password".getBytes("UTF-8");
    WriteRequest request = stream.offer("the test block", new String[] {DN},
        new String[] {DN}, POOL, BLOCK, STAMP, password, PACKET_SIZE, null);
    assertNotNull("the pipeline is offered UCX", request);
    final UcxBlockSession session = dataNode.server().sessions().open(
        SessionIds.of(password, request.getNonce(), POOL, DN, BLOCK, STAMP),
        BLOCK, STAMP, request.getPacketSize(), 128, 64, "the test block");
    stream.committed(Collections.singletonList(new CommitEntry(DN,
        runtime.workerAddress(), HostIdentity.uid(), HostIdentity.hostId(),
        0, runtime.sharedMemoryProfile())), null);
    assertTrue("every node committed: the pipeline moves over UCX",
        stream.isActive());

    final int buffers = 16;
    final int warmUp = 2_000;
    final int measured = 1_000;
    final int total = warmUp + measured;
    RegisteredBufferPool pool = stream.pool();
    long[] tokens = new long[buffers];
    for (int b = 0; b < buffers; b++) {
      tokens[b] = pool.acquire(10_000);
      ByteBuffer buf = pool.buffer(tokens[b]);
      for (int i = 0; i < CHECKSUMS + DATA; i++) {
        buf.put(AT + i, (byte) (b * 31 + i));
      }
    }

    // The DataNode side: a receiver thread reading every packet.
    final AtomicLong received = new AtomicLong();
    final AtomicReference<Throwable> receiverFailure =
        new AtomicReference<Throwable>();
    Thread receiver = new Thread(() -> {
      try (PacketFetcher fetcher = new PacketFetcher(session, dataNode,
          null, false)) {
        for (int p = 0; p < total; p++) {
          fetcher.next(null);
          FetchedPacket f = fetcher.current();
          int b = p % buffers;
          if (f.seqno() != p || f.dataLength() != DATA
              || f.bytes()[CHECKSUMS] != (byte) (b * 31 + CHECKSUMS)) {
            throw new AssertionError("packet " + p + " wrong");
          }
          fetcher.written();
          received.incrementAndGet();
        }
      } catch (Throwable t) {
        receiverFailure.set(t);
      }
    }, "test-datanode");
    receiver.start();

    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long self = Thread.currentThread().getId();
    OutgoingPacket out = new OutgoingPacket();
    long allocated;
    try {
      long before = 0;
      for (int p = 0; p < total; p++) {
        if (p == warmUp) {
          before = threads.getThreadAllocatedBytes(self);
        }
        // As Hadoop's limit of packets in flight does, stay within the
        // session's queue.
        while (p - received.get() >= 32 && receiverFailure.get() == null) {
          LockSupport.parkNanos(20_000);
        }
        long token = tokens[p % buffers];
        out.set(p, (long) p * DATA, false, p == total - 1, false, token,
            pool.address(token) + AT, CHECKSUMS, DATA);
        if (stream.send(out, true) != ClientStream.Sent.DESCRIBED) {
          throw new AssertionError("packet " + p + " not described");
        }
      }
      allocated = threads.getThreadAllocatedBytes(self) - before;
      receiver.join(60_000);
    } finally {
      stream.endPipeline();
      receiver.join(60_000);
      for (long t : tokens) {
        pool.release(t);
      }
    }
    assertNull(receiverFailure.get());
    assertFalse(receiver.isAlive());
    assertEquals(0, restarts.get());
    assertEquals(total, received.get());
    assertEquals((long) total * DATA, runtime.metrics().dataBytesSent());
    assertEquals((long) total * DATA, dataNode.metrics().dataBytesFetched());
    System.out.println("sending thread allocated " + allocated
        + " bytes over " + measured + " packets");
    // Any object is at least 16 bytes: one per packet would show.
    assertTrue("the sending thread allocated " + allocated + " bytes for "
        + measured + " packets", allocated >= 0 && allocated < 8L * measured);
  }
}
