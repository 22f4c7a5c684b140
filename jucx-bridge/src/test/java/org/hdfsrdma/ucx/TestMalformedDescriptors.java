package org.hdfsrdma.ucx;

import static org.hdfsrdma.ucx.UcxTestUtils.TIMEOUT_MS;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hostile or broken descriptors arrive over real UCX: each is rejected with
 * a clear error, nothing crashes, and the same connection keeps serving
 * good descriptors.
 */
public class TestMalformedDescriptors {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestMalformedDescriptors.class);

  private static final int MAX_PACKET = 128 * 1024;

  private UcxContext context;
  private UcxWorker getter;
  private UcxWorker exposer;
  private RegisteredBufferPool exposed;
  private RegisteredBufferPool landing;
  private UcxTestUtils.QueueingHandler handler;
  private UcxConnection toGetter;
  private RegisteredBuffer packet;
  private RegisteredBuffer target;
  private ByteBuffer message;

  @Before
  public void setUp() throws Exception {
    UcxTestUtils.assumeUcx();
    start(UcxTestUtils.TLS_TCP);
  }

  private void start(String tls) throws Exception {
    context = new UcxContext(UcxTestUtils.options(tls));
    getter = new UcxWorker(context, "getter");
    exposer = new UcxWorker(context, "exposer");
    exposed = new RegisteredBufferPool(context, "exposed", MAX_PACKET,
        MAX_PACKET, MAX_PACKET, true);
    landing = new RegisteredBufferPool(context, "landing", MAX_PACKET,
        MAX_PACKET, MAX_PACKET, true);
    handler = new UcxTestUtils.QueueingHandler();
    getter.setDescriptorHandler(handler);
    getter.setMaxPacketBytes(MAX_PACKET);
    getter.start();
    exposer.start();
    UcxListener listener = UcxListener.open(getter,
        UcxTestUtils.loopbackPort0(), c -> { })
        .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    toGetter = UcxConnection.connect(exposer, listener.address())
        .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    packet = exposed.acquire(TIMEOUT_MS);
    target = landing.acquire(TIMEOUT_MS);
    message = ByteBuffer.allocateDirect(2 * PacketDescriptor.MAX_LENGTH);
  }

  @After
  public void tearDown() {
    if (packet != null) {
      packet.release();
      target.release();
      packet = null;
      exposed.assertNoLeaks();
      landing.assertNoLeaks();
    }
    for (AutoCloseableQuietly c : new AutoCloseableQuietly[] {
        exposer::close, getter::close, () -> close(exposed),
        () -> close(landing), () -> close(context)}) {
      c.close();
    }
  }

  private interface AutoCloseableQuietly {
    void close();
  }

  private static void close(java.io.Closeable c) {
    try {
      if (c != null) {
        c.close();
      }
    } catch (java.io.IOException ignored) {
      // Tear-down.
    }
  }

  /** A good descriptor for {@code length} bytes of the packet, in message. */
  private PacketDescriptor good(int length, long seqno) {
    UcxTestUtils.fill(packet.buffer(), length, seqno);
    return UcxTestUtils.describe(packet, length, seqno, message);
  }

  /** Reseals the message so a test reaches the check it is about. */
  private int sealed(int length) {
    new PacketDescriptor().wrap(message, 0, length).seal();
    return length;
  }

  private void send(int length) throws Exception {
    toGetter.sendMessage(message, 0, length, TIMEOUT_MS)
        .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
  }

  private void assertRejected(int length, String expected) throws Exception {
    send(length);
    MalformedDescriptorException e = handler.takeRejected();
    assertTrue("'" + e.getMessage() + "' should mention '" + expected + "'",
        e.getMessage().contains(expected));
    assertServesGoodDescriptor();
  }

  /** The connection still works after a rejection. */
  private void assertServesGoodDescriptor() throws Exception {
    long seqno = System.nanoTime();
    PacketDescriptor d = good(64 * 1024, seqno);
    send(d.length());
    Object[] got = handler.take();
    PacketDescriptor received = (PacketDescriptor) got[1];
    ((UcxConnection) got[0]).get(received, target, TIMEOUT_MS)
        .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    assertEquals(-1, UcxTestUtils.firstMismatch(target.buffer(), 64 * 1024,
        seqno));
  }

  @Test(timeout = 60_000)
  public void testTruncated() throws Exception {
    good(100, 1);
    assertRejected(40, "truncated");
    good(100, 1);
    assertRejected(0, "truncated");
  }

  @Test(timeout = 60_000)
  public void testWrongMagic() throws Exception {
    int length = good(100, 1).length();
    message.putInt(PacketDescriptor.MAGIC_OFFSET, 0xCAFEBABE);
    assertRejected(sealed(length), "magic");
  }

  @Test(timeout = 60_000)
  public void testWrongVersion() throws Exception {
    int length = good(100, 1).length();
    message.putShort(PacketDescriptor.VERSION_OFFSET, (short) 2);
    assertRejected(sealed(length), "version 2");
  }

  @Test(timeout = 60_000)
  public void testLengthOverCap() throws Exception {
    int length = good(100, 1).length();
    message.putInt(PacketDescriptor.DATA_LENGTH_OFFSET, MAX_PACKET + 1);
    assertRejected(sealed(length), "exceeds the cap");
    length = good(100, 1).length();
    message.putInt(PacketDescriptor.CHECKSUM_LENGTH_OFFSET, -4);
    assertRejected(sealed(length), "negative length");
  }

  @Test(timeout = 60_000)
  public void testRemoteKeyLengthLies() throws Exception {
    int length = good(100, 1).length();
    message.putShort(PacketDescriptor.RKEY_LENGTH_OFFSET, (short) 0);
    assertRejected(sealed(length), "remote key length 0");
    length = good(100, 1).length();
    message.putShort(PacketDescriptor.RKEY_LENGTH_OFFSET,
        (short) (packet.remoteKey().length + 10));
    assertRejected(length, "does not match");
  }

  @Test(timeout = 60_000)
  public void testMessageOverMaximumSize() throws Exception {
    good(100, 1);
    assertRejected(PacketDescriptor.MAX_LENGTH + 1, "exceeds");
  }

  @Test(timeout = 60_000)
  public void testRangeOutsideExposedRegion() throws Exception {
    int length = good(100, 1).length();
    message.putLong(PacketDescriptor.ADDRESS_OFFSET,
        packet.regionAddress() + packet.regionLength() - 50);
    assertRejected(sealed(length), "outside the exposed region");
    length = good(100, 1).length();
    message.putLong(PacketDescriptor.ADDRESS_OFFSET,
        packet.regionAddress() - 4096);
    assertRejected(sealed(length), "outside the exposed region");
    length = good(100, 1).length();
    message.putLong(PacketDescriptor.ADDRESS_OFFSET, Long.MAX_VALUE - 10);
    assertRejected(sealed(length), "outside the exposed region");
  }

  /** Corrupted bytes anywhere in a message fail its checksum. */
  @Test(timeout = 60_000)
  public void testCorruptedRemoteKey() throws Exception {
    Random random = new Random(17);
    for (int round = 0; round < 10; round++) {
      int length = good(100, 1).length();
      int rkeyLength = packet.remoteKey().length;
      for (int i = 0; i < rkeyLength; i++) {
        message.put(PacketDescriptor.RKEY_OFFSET + i, (byte) random.nextInt());
      }
      assertRejected(length, "checksum mismatch");
    }
  }

  /**
   * A garbage remote key with a valid checksum (a buggy or hostile peer)
   * under a region id the getter has not seen reaches UCX: over tcp UCX
   * does not use the key at all (the owner serves the validated range);
   * over shared memory UCX rejects it or the get fails. Either way no
   * crash, no hang, and good descriptors are served afterwards.
   */
  @Test(timeout = 120_000)
  public void testGarbageRemoteKeyWithValidChecksumOverTcp()
      throws Exception {
    garbageRemoteKeyWithValidChecksum(UcxTestUtils.TLS_TCP);
  }

  @Test(timeout = 120_000)
  public void testGarbageRemoteKeyWithValidChecksumOverSharedMemory()
      throws Exception {
    tearDown();
    start(UcxTestUtils.TLS_SHM);
    garbageRemoteKeyWithValidChecksum(UcxTestUtils.TLS_SHM);
  }

  private void garbageRemoteKeyWithValidChecksum(String tls)
      throws Exception {
    Random random = new Random(23);
    int failed = 0;
    for (int round = 0; round < 20; round++) {
      int length = good(100, 1).length();
      message.putInt(PacketDescriptor.REGION_ID_OFFSET, 1000 + round);
      int rkeyLength = packet.remoteKey().length;
      for (int i = 0; i < rkeyLength; i++) {
        message.put(PacketDescriptor.RKEY_OFFSET + i, (byte) random.nextInt());
      }
      send(sealed(length));
      Object[] got = handler.take();
      UcxConnection from = (UcxConnection) got[0];
      try {
        from.get((PacketDescriptor) got[1], target, 5_000)
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        failed++;
        assertTrue(String.valueOf(e.getCause()),
            e.getCause() instanceof java.io.IOException);
      }
      if (!from.isUsable()) {
        reconnect();
      }
    }
    LOG.info("{}: {} of 20 gets with a garbage remote key failed, the rest"
        + " read the validated range", tls, failed);
    assertServesGoodDescriptor();
  }

  private void reconnect() throws Exception {
    java.net.InetSocketAddress address = toGetterAddress();
    toGetter.close();
    toGetter = UcxConnection.connect(exposer, address)
        .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
  }

  /** A region announced once cannot change its key or bounds. */
  @Test(timeout = 60_000)
  public void testRegionCannotChangeKey() throws Exception {
    assertServesGoodDescriptor();
    int length = good(100, 1).length();
    message.putLong(PacketDescriptor.REGION_LENGTH_OFFSET,
        packet.regionLength() + 4096);
    send(sealed(length));
    Object[] got = handler.take();
    try {
      ((UcxConnection) got[0]).get((PacketDescriptor) got[1], target,
          TIMEOUT_MS).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      fail("a region changed its bounds");
    } catch (ExecutionException e) {
      assertTrue(e.getCause() instanceof MalformedDescriptorException);
    }
    assertServesGoodDescriptor();
  }

  private java.net.InetSocketAddress toGetterAddress() {
    String[] hostPort = toGetter.peer().split(":");
    return new java.net.InetSocketAddress(hostPort[0],
        Integer.parseInt(hostPort[1]));
  }
}
