package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.util.Collections;

import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Packets between two JVMs in both roles of the write path: this JVM as the
 * DataNode reading from a client process ({@code PeerMain expose}), and as
 * the client whose packets a DataNode process reads ({@code PeerMain get}).
 * Worker addresses travel on the command line and the peer's standard
 * output, as they travel in Hadoop's authenticated op in the product.
 *
 * <p>Over the product's transports (everything but tcp) the getter must
 * read the exposer's segment directly (its policy forbids emulated gets);
 * over tcp it reads with UCX gets. Every byte is checked against the
 * pattern seeded with the packet's seqno.
 */
public class TestUcxAcrossJvms {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestUcxAcrossJvms.class);
  static final int[] SIZES = {1, 4096, 65536 + 516, 1 << 20, 4 << 20};
  private static final long WAIT_MS = 30_000;

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  @After
  public void killPeers() {
    PeerProcess.killAll();
  }

  @Test(timeout = 180_000)
  public void testReadingFromAClientJvmOverSharedMemory() throws Exception {
    readFromClientJvm(UcxTestUtils.TLS_SHM);
  }

  @Test(timeout = 180_000)
  public void testReadingFromAClientJvmOverTcp() throws Exception {
    readFromClientJvm(UcxTestUtils.TLS_TCP);
  }

  @Test(timeout = 180_000)
  public void testADataNodeJvmReadsOverSharedMemory() throws Exception {
    dataNodeJvmReads(UcxTestUtils.TLS_SHM);
  }

  @Test(timeout = 180_000)
  public void testADataNodeJvmReadsOverTcp() throws Exception {
    dataNodeJvmReads(UcxTestUtils.TLS_TCP);
  }

  /** This JVM is the DataNode; the client is the peer JVM. */
  private void readFromClientJvm(String tls) throws Exception {
    boolean tcp = tls.equals(UcxTestUtils.TLS_TCP);
    try (TestGetter getter = new TestGetter(tls,
            new RemoteRegion.Policy(id -> false, tcp));
         RegisteredBufferPool landing = new RegisteredBufferPool(
             getter.context, "landing", 4 << 20, 4 << 20, 4 << 20, true);
         PeerProcess client = PeerProcess.exposer(tls,
             getter.worker.address(), SIZES)) {
      assertEquals("SENT " + SIZES.length, client.firstLine());
      StatusSlots slots = new StatusSlots(1);
      UcxWorker.Driver driver = getter.worker.registerDriver();
      long bytes = 0;
      try {
        for (int i = 0; i < SIZES.length; i++) {
          PacketDescriptor d = getter.next(driver, WAIT_MS);
          assertEquals(i, d.seqno());
          assertEquals(SIZES[i], d.packetLength());
          RemoteRegion region = getter.regions.get(d.regionId());
          assertEquals("direct read on shared memory, gets over tcp", !tcp,
              region.isDirect());
          byte[] packet = getter.fetch(driver, d, landing, slots, WAIT_MS);
          assertEquals(SIZES[i], packet.length);
          assertEquals("first corrupt byte of packet " + i, -1,
              UcxTestUtils.firstMismatch(ByteBuffer.wrap(packet),
                  packet.length, i));
          bytes += packet.length;
        }
      } finally {
        getter.worker.unregisterDriver(driver);
      }
      assertTrue(getter.rejections.toString(), getter.rejections.isEmpty());
      TransportReport lanes = getter.back.transports();
      assertTransports(tls, lanes);
      LOG.info("{}: read {} bytes of {} packets from a client JVM; {}", tls,
          bytes, SIZES.length, lanes);
      landing.assertNoLeaks();
    }
  }

  /** This JVM is the client; the DataNode is the peer JVM. */
  private void dataNodeJvmReads(String tls) throws Exception {
    try (PeerProcess dataNode = PeerProcess.getter(tls);
         TestExposer exposer = new TestExposer(tls, dataNode.address(),
             4 << 20, SIZES.length)) {
      long[] tokens = new long[SIZES.length];
      for (int i = 0; i < SIZES.length; i++) {
        tokens[i] = exposer.pool.acquire(1000);
        UcxTestUtils.fill(exposer.pool.buffer(tokens[i]), SIZES[i], i);
      }
      exposer.announce(7L, 1, tokens[0]);
      for (int i = 0; i < SIZES.length; i++) {
        exposer.describe(7L, 1, tokens[i], SIZES[i], i);
      }
      String how = tls.equals(UcxTestUtils.TLS_TCP) ? " get" : " direct";
      for (int i = 0; i < SIZES.length; i++) {
        assertEquals("VERIFIED " + i + " " + SIZES[i] + how,
            dataNode.expectLine(WAIT_MS));
      }
      TransportReport lanes = exposer.endpoint.transports();
      assertTransports(tls, lanes);
      LOG.info("{}: a DataNode JVM read {} packets; {}", tls, SIZES.length,
          lanes);
      for (long t : tokens) {
        exposer.pool.release(t);
      }
      exposer.pool.assertNoLeaks();
    }
  }

  private static void assertTransports(String tls, TransportReport lanes) {
    assertTrue("UCX described the endpoint", lanes.isKnown());
    if (tls.equals(UcxTestUtils.TLS_TCP)) {
      assertEquals(lanes.raw(), Collections.singleton("tcp"),
          lanes.transports());
    } else {
      assertTrue(lanes.raw(), lanes.usesSharedMemory());
      assertTrue(lanes.raw(), !lanes.transports().contains("tcp"));
    }
  }
}
