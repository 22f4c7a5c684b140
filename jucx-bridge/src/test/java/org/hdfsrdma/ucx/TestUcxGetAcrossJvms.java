package org.hdfsrdma.ucx;

import static org.hdfsrdma.ucx.UcxTestUtils.TIMEOUT_MS;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gets between two JVMs in both roles of the write path: this JVM as the
 * DataNode fetching from a client process, and as the client whose memory
 * a DataNode process fetches. Over tcp and over shared memory, bytes
 * verified.
 */
public class TestUcxGetAcrossJvms {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestUcxGetAcrossJvms.class);
  static final int[] SIZES = {1, 64 * 1024, 1024 * 1024, 4 * 1024 * 1024};

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  @Test(timeout = 180_000)
  public void testGetFromClientJvmOverTcp() throws Exception {
    getFromClientJvm(UcxTestUtils.TLS_TCP, true);
  }

  @Test(timeout = 180_000)
  public void testGetFromClientJvmOverSharedMemory() throws Exception {
    getFromClientJvm(UcxTestUtils.TLS_SHM, true);
  }

  @Test(timeout = 180_000)
  public void testGetFromClientJvmWithoutPeerErrorHandling()
      throws Exception {
    getFromClientJvm(UcxTestUtils.TLS_SHM, false);
  }

  @Test(timeout = 180_000)
  public void testDataNodeJvmGetsOverTcp() throws Exception {
    dataNodeJvmGets(UcxTestUtils.TLS_TCP);
  }

  @Test(timeout = 180_000)
  public void testDataNodeJvmGetsOverSharedMemory() throws Exception {
    dataNodeJvmGets(UcxTestUtils.TLS_SHM);
  }

  private void getFromClientJvm(String tls, boolean peerErrorHandling)
      throws Exception {
    UcxTestUtils.QueueingHandler handler = new UcxTestUtils.QueueingHandler();
    UcxContext.Options options = UcxTestUtils.options(tls)
        .withPeerErrorHandling(peerErrorHandling);
    try (UcxContext context = new UcxContext(options);
         UcxWorker worker = new UcxWorker(context, "getter");
         RegisteredBufferPool landing = new RegisteredBufferPool(context,
             "landing", 4 << 20, 4 << 20, 4 << 20, true)) {
      worker.setDescriptorHandler(handler);
      worker.setMaxPacketBytes(4 << 20);
      worker.start();
      UcxListener listener = UcxListener.open(worker,
          UcxTestUtils.loopbackPort0(), c -> { })
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      try (PeerProcess client = PeerProcess.expose(listener.address().getPort(),
               tls, peerErrorHandling, SIZES);
           RegisteredBuffer target = landing.acquire(TIMEOUT_MS)) {
        UcxConnection connection = null;
        long total = 0;
        for (int i = 0; i < SIZES.length; i++) {
          Object[] got = handler.take();
          connection = (UcxConnection) got[0];
          PacketDescriptor d = (PacketDescriptor) got[1];
          assertEquals(SIZES[(int) d.seqno()], d.packetLength());
          long start = System.nanoTime();
          connection.get(d, target, TIMEOUT_MS)
              .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
          long micros = (System.nanoTime() - start) / 1000;
          assertEquals("first mismatching byte", -1, UcxTestUtils
              .firstMismatch(target.buffer(), d.packetLength(), d.seqno()));
          total += d.packetLength();
          LOG.info("{} (peer error handling {}): get of {} bytes from another"
              + " JVM took {} us", tls, peerErrorHandling, d.packetLength(),
              micros);
        }
        assertEquals(total, connection.bytesFetched());
        TransportReport report = connection.transports()
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        LOG.info("{} (peer error handling {}): {}", tls, peerErrorHandling,
            report);
        if (tls.equals(UcxTestUtils.TLS_TCP)) {
          UcxTestUtils.assertOnlyTcp(report);
        } else {
          UcxTestUtils.assertSharedMemory(report);
        }
      }
      landing.assertNoLeaks();
    }
  }

  private void dataNodeJvmGets(String tls) throws Exception {
    try (UcxContext context = new UcxContext(UcxTestUtils.options(tls));
         UcxWorker worker = new UcxWorker(context, "client");
         RegisteredBufferPool exposed = new RegisteredBufferPool(context,
             "exposed", 4 << 20, 4 << 20, 16 << 20, true);
         EndpointCache cache = new EndpointCache(worker);
         PeerProcess dataNode = PeerProcess.serve(0, tls, true)) {
      worker.start();
      InetSocketAddress address = new InetSocketAddress(
          InetAddress.getLoopbackAddress(), dataNode.port());
      UcxConnection connection = null;
      for (int i = 0; i < SIZES.length; i++) {
        UcxConnection c = cache.get(address)
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        if (connection != null) {
          assertSame("one connection per peer, reused", connection, c);
        }
        connection = c;
        try (RegisteredBuffer packet = exposed.acquire(TIMEOUT_MS)) {
          UcxTestUtils.fill(packet.buffer(), SIZES[i], i);
          ByteBuffer message = ByteBuffer.allocateDirect(
              PacketDescriptor.MAX_LENGTH);
          connection.sendDescriptor(UcxTestUtils.describe(packet, SIZES[i], i,
              message), TIMEOUT_MS).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
          // The buffer stays exposed until the DataNode reports.
          assertEquals("VERIFIED " + i + " " + SIZES[i],
              dataNode.nextLine(TIMEOUT_MS));
        }
      }
      assertEquals(1, cache.connectCount());
      exposed.assertNoLeaks();
    }
  }
}
