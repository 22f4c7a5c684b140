package org.hdfsrdma.ucx;

import static org.hdfsrdma.ucx.UcxTestUtils.TIMEOUT_MS;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gets between two workers of one JVM over real UCX: every size the write
 * path cares about, over tcp and over shared memory, bytes verified.
 */
public class TestUcxGet {

  private static final Logger LOG = LoggerFactory.getLogger(TestUcxGet.class);
  private static final int[] SIZES = {1, 64 * 1024, 1024 * 1024,
      4 * 1024 * 1024};
  private static final int BUFFER = 4 * 1024 * 1024;

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  @Test(timeout = 120_000)
  public void testGetOverTcp() throws Exception {
    UcxTestUtils.assertOnlyTcp(getAllSizes(UcxTestUtils.options(
        UcxTestUtils.TLS_TCP)));
  }

  @Test(timeout = 120_000)
  public void testGetOverSharedMemory() throws Exception {
    UcxTestUtils.assertSharedMemory(getAllSizes(UcxTestUtils.options(
        UcxTestUtils.TLS_SHM)));
  }

  @Test(timeout = 120_000)
  public void testGetOverSharedMemoryWithoutPeerErrorHandling()
      throws Exception {
    TransportReport report = getAllSizes(UcxTestUtils.options(
        UcxTestUtils.TLS_SHM).withPeerErrorHandling(false));
    assertTrue(report.toString(), report.rmaTransports().contains("cma"));
  }

  private TransportReport getAllSizes(UcxContext.Options options)
      throws Exception {
    UcxTestUtils.QueueingHandler handler = new UcxTestUtils.QueueingHandler();
    try (UcxContext context = new UcxContext(options);
         UcxWorker getterWorker = new UcxWorker(context, "getter");
         UcxWorker exposerWorker = new UcxWorker(context, "exposer");
         RegisteredBufferPool exposed = new RegisteredBufferPool(context,
             "exposed", BUFFER, BUFFER, BUFFER, true);
         RegisteredBufferPool landing = new RegisteredBufferPool(context,
             "landing", BUFFER, BUFFER, BUFFER, true)) {
      getterWorker.setDescriptorHandler(handler);
      getterWorker.setMaxPacketBytes(BUFFER);
      getterWorker.start();
      exposerWorker.start();
      UcxListener listener = UcxListener.open(getterWorker,
          UcxTestUtils.loopbackPort0(), c -> { }).get(TIMEOUT_MS,
              TimeUnit.MILLISECONDS);
      UcxConnection toGetter = UcxConnection.connect(exposerWorker,
          listener.address()).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      RegisteredBuffer packet = exposed.acquire(TIMEOUT_MS);
      RegisteredBuffer target = landing.acquire(TIMEOUT_MS);
      ByteBuffer message = ByteBuffer.allocateDirect(PacketDescriptor.MAX_LENGTH);
      UcxConnection fromExposer = null;
      long seqno = 0;
      for (int size : SIZES) {
        UcxTestUtils.fill(packet.buffer(), size, seqno);
        PacketDescriptor sent = UcxTestUtils.describe(packet, size, seqno,
            message);
        toGetter.sendDescriptor(sent, TIMEOUT_MS)
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        Object[] got = handler.take();
        fromExposer = (UcxConnection) got[0];
        PacketDescriptor received = (PacketDescriptor) got[1];
        assertEquals(seqno, received.seqno());
        assertEquals(size, received.packetLength());
        long start = System.nanoTime();
        fromExposer.get(received, target, TIMEOUT_MS)
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        long micros = (System.nanoTime() - start) / 1000;
        assertEquals("byte mismatch at", -1,
            UcxTestUtils.firstMismatch(target.buffer(), size, seqno));
        LOG.info("{}: get of {} bytes took {} us", options, size, micros);
        seqno++;
      }
      assertEquals(sumOfSizes(), fromExposer.bytesFetched());
      TransportReport report = fromExposer.transports()
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      LOG.info("{}: {}", options, report);
      packet.release();
      target.release();
      exposed.assertNoLeaks();
      landing.assertNoLeaks();
      return report;
    }
  }

  private static long sumOfSizes() {
    long sum = 0;
    for (int size : SIZES) {
      sum += size;
    }
    return sum;
  }
}
