package org.hdfsrdma.hadoop.datanode;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.hdfs.server.datanode.UcxPacketReceiver;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.UcxTestClient;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.junit.Test;

/**
 * The rules of a block's UCX session ({@link UcxBlockSession} in the
 * {@link SessionTable}), over real UCX with a same-JVM client. Each rule,
 * broken after a good packet, fails the block at once with a
 * {@link UcxPathException} that names the block and the rule (within
 * 10 s, not by the get timeout); the refusal is counted, nothing more is
 * read, and a good packet after it is refused too. The rules: a seqno that
 * does not increase (a lower one, the same one), a packet after the last
 * one, a descriptor outside its region (past either end) or in an
 * unannounced one (regions 9 and 0), a region announced twice or with
 * bounds beyond its shared segment, the wrong block or generation stamp, a
 * packet larger than agreed or a heartbeat with bytes, more than
 * max-queued-packets (8) unread, a descriptor from another endpoint than
 * the session's. Two sessions cannot share an id, and none takes id 0;
 * messages for no open session are dropped and counted, without harm to
 * the block.
 */
public class TestSessionRules extends ReceivePathTestBase {

  @Test(timeout = 60_000)
  public void testSessionsCannotCollide() throws Exception {
    start();
    try (UcxBlockSession s = open(16)) {
      try {
        DataNodeServer.of(runtime).sessions().open(session, BLOCK + 1, STAMP,
            PACKET_SIZE, 16,
            64, "second");
        fail("two sessions with one id");
      } catch (IOException expected) {
        assertTrue(expected.getMessage(),
            expected.getMessage().contains(s.description()));
      }
      try {
        DataNodeServer.of(runtime).sessions().open(0, BLOCK, STAMP,
            PACKET_SIZE, 16, 64, "zero");
        fail("session id 0");
      } catch (IOException expected) {
      }
      assertEquals(1, DataNodeServer.of(runtime).sessions().size());
    }
    assertEquals(0, DataNodeServer.of(runtime).sessions().size());
  }

  /**
   * Opens a session, receives one good packet (binding the session to the
   * client's endpoint), runs {@code breakRule}, and expects the receiver's
   * next packet to fail at once with an IOException naming the block and
   * containing {@code expected}, with nothing more read or counted.
   */
  private void assertRefused(String expected, BreakRule breakRule)
      throws Exception {
    UcxBlockSession s = open(8);
    UcxPacketReceiver r = receiver(s, null);
    long good = client.fill(AT, CHECKSUMS + DATA, 1);
    long other = client.fill(AT, CHECKSUMS + DATA, 2);
    try {
      announce(good);
      describe(client, good, 5, 0);
      receive(r);
      assertPacket(r, 5, 1);
      long fetchedBefore = fetched();
      long bytesBefore = r.fetcher().bytesFetched();
      long rejectedBefore = runtime.metrics().rejectedMessages();

      breakRule.run(s, good, other);
      long start = System.nanoTime();
      try {
        receive(r);
        fail("the receiver presented " + r.getHeader() + " after: "
            + expected);
      } catch (IOException e) {
        assertTrue("'" + e.getMessage() + "' lacks '" + expected + "'",
            e.getMessage().contains(expected));
        assertTrue(e.getMessage(),
            e.getMessage().contains(s.description()));
        assertTrue("a UCX failure, for the client to go on over TCP: " + e,
            e instanceof UcxPathException);
        assertFalse("failed by the timeout, not the refusal: " + e,
            e.getMessage().contains("arrived over UCX in"));
      }
      assertTrue("failed at once", System.nanoTime() - start
          < TimeUnit.SECONDS.toNanos(10));
      assertEquals("nothing more fetched", fetchedBefore, fetched());
      assertEquals(bytesBefore, r.fetcher().bytesFetched());
      assertEquals(1, r.fetcher().packetsReceived());
      assertTrue("counted as refused",
          runtime.metrics().rejectedMessages() > rejectedBefore);
      // The block stays failed: a good packet now is refused too.
      long refused = runtime.metrics().rejectedMessages();
      describe(client, good, 6, 0);
      GenericTestUtils.waitFor(
          () -> runtime.metrics().rejectedMessages() > refused,
          10, 30_000);
      try {
        receive(r);
        fail("a failed block presented a packet");
      } catch (IOException e) {
        assertTrue(e.getMessage(), e.getMessage().contains(expected));
      }
      assertEquals(fetchedBefore, fetched());
    } finally {
      r.close();
      client.pool.release(good);
      client.pool.release(other);
    }
  }

  private interface BreakRule {
    void run(UcxBlockSession s, long good, long other) throws Exception;
  }

  @Test(timeout = 120_000)
  public void testOutOfOrderSeqnoFailsTheBlock() throws Exception {
    start();
    assertRefused("packet 4 after packet 5",
        (s, good, other) -> describe(client, other, 4, 0));
    assertRefused("packet 5 after packet 5",
        (s, good, other) -> describe(client, other, 5, 0));
  }

  @Test(timeout = 120_000)
  public void testPacketAfterTheLastFailsTheBlock() throws Exception {
    start();
    assertRefused("packet 7 after the last packet", (s, good, other) -> {
      describeEmpty(6, 6L * DATA, PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK);
      describe(client, other, 7, 0);
      // The last packet itself is good: a receiver that took it before
      // packet 7 came would rightly present it. Once packet 7 failed the
      // block, nothing more is presented, the last packet included.
      GenericTestUtils.waitFor(() -> s.failure() != null, 10, 30_000);
    });
  }

  @Test(timeout = 120_000)
  public void testDescriptorOutsideItsRegionFailsTheBlock() throws Exception {
    start();
    assertRefused("lies outside", (s, good, other) -> {
      int region = client.pool.regionId(good);
      long end = client.pool.regionAddress(region)
          + client.pool.regionLength(region);
      // The last bytes of the packet past the region's end.
      client.describe(session, BLOCK, STAMP, 6, 6L * DATA, 0,
          UcxTestClient.sessionRegionId(region), end - DATA, CHECKSUMS, DATA);
    });
    assertRefused("lies outside", (s, good, other) -> {
      int region = client.pool.regionId(good);
      client.describe(session, BLOCK, STAMP, 6, 6L * DATA, 0,
          UcxTestClient.sessionRegionId(region),
          client.pool.regionAddress(region) - 1, CHECKSUMS, DATA);
    });
  }

  @Test(timeout = 120_000)
  public void testUnannouncedRegionFailsTheBlock() throws Exception {
    start();
    assertRefused("region 9, which was not announced",
        (s, good, other) -> client.describe(session, BLOCK, STAMP, 6,
            6L * DATA, 0, 9, client.pool.address(other) + AT, CHECKSUMS,
            DATA));
    assertRefused("region 0, which was not announced",
        (s, good, other) -> client.describe(session, BLOCK, STAMP, 6,
            6L * DATA, 0, 0, client.pool.address(other) + AT, CHECKSUMS,
            DATA));
  }

  @Test(timeout = 120_000)
  public void testHostileAnnouncementsFailTheBlock() throws Exception {
    start();
    assertRefused("announced twice",
        (s, good, other) -> announce(other));
    // Bounds beyond the shared segment the key names: the kernel's size
    // of the segment says no before UCX sees the key.
    assertRefused("does not lie inside", (s, good, other) -> {
      int region = client.pool.regionId(good);
      client.announceRaw(session, 7, client.pool.regionAddress(region),
          2 * client.pool.regionLength(region),
          client.pool.regionKey(region));
    });
  }

  @Test(timeout = 120_000)
  public void testWrongBlockOrGenerationStampFailsTheBlock()
      throws Exception {
    start();
    assertRefused("descriptor for block " + (BLOCK + 1) + "_" + STAMP,
        (s, good, other) -> client.describe(session, BLOCK + 1, STAMP, 6,
            6L * DATA, 0, 1, client.pool.address(good) + AT, CHECKSUMS,
            DATA));
    assertRefused("descriptor for block " + BLOCK + "_" + (STAMP - 1),
        (s, good, other) -> client.describe(session, BLOCK, STAMP - 1, 6,
            6L * DATA, 0, 1, client.pool.address(good) + AT, CHECKSUMS,
            DATA));
  }

  @Test(timeout = 120_000)
  public void testOversizedPacketFailsTheBlock() throws Exception {
    start();
    assertRefused("more than the agreed " + PACKET_SIZE,
        (s, good, other) -> client.describe(session, BLOCK, STAMP, 6,
            6L * DATA, 0, 1, client.pool.address(good), 4,
            PACKET_SIZE - 3));
    assertRefused("heartbeat with", (s, good, other) -> client.describe(
        session, BLOCK, STAMP, -1, 0, 0, 1, client.pool.address(good), 4,
        512));
  }

  @Test(timeout = 120_000)
  public void testMoreThanMaxQueuedPacketsFailsTheBlock() throws Exception {
    start();
    UcxBlockSession s = open(8);
    UcxPacketReceiver r = receiver(s, null);
    long token = client.fill(AT, CHECKSUMS + DATA, 3);
    try {
      announce(token);
      for (int p = 0; p < 9; p++) {
        describe(client, token, p, 0);
      }
      GenericTestUtils.waitFor(() -> s.failure() != null, 10, 30_000);
      assertEquals(8, s.queued());
      try {
        receive(r);
        fail("presented a packet of an overrun block");
      } catch (IOException e) {
        assertTrue(e.getMessage(),
            e.getMessage().contains("more than 8 unread packets"));
      }
      assertEquals("nothing read", 0, r.fetcher().bytesFetched());
      assertEquals(0, fetched());
    } finally {
      r.close();
      client.pool.release(token);
    }
  }

  /**
   * A session belongs to the endpoint its first message came on: a
   * descriptor for it from any other endpoint (which could only come from
   * a peer that learned the session id) fails the block, and its packet is
   * not read.
   */
  @Test(timeout = 120_000)
  public void testDescriptorFromAnotherEndpointFailsTheBlock()
      throws Exception {
    start();
    intruder = UcxTestClient.separate("^tcp", runtime.workerAddress(),
        AT + PACKET_SIZE, 1);
    assertRefused("another UCX endpoint", (s, good, other) ->
        // Points at the client's own packet, in the region the session
        // knows: only the endpoint is wrong.
        intruder.describe(session, BLOCK, STAMP, 6, 6L * DATA, 0, 1,
            client.pool.address(good) + AT, CHECKSUMS, DATA));
  }

  @Test(timeout = 120_000)
  public void testStrangersAreDroppedAndTheBlockGoesOn() throws Exception {
    start();
    UcxBlockSession s = open(8);
    UcxPacketReceiver r = receiver(s, null);
    long token = client.fill(AT, CHECKSUMS + DATA, 4);
    try {
      announce(token);
      long rejected = runtime.metrics().rejectedMessages();
      // For no open session: dropped, counted, nobody's block fails.
      client.describe(session + 1, BLOCK, STAMP, 0, 0, 0, 1,
          client.pool.address(token) + AT, CHECKSUMS, DATA);
      client.announce(session - 1, 1, token);
      GenericTestUtils.waitFor(
          () -> runtime.metrics().rejectedMessages() == rejected + 2, 10,
          30_000);
      assertNull(s.failure());
      assertEquals(0, s.queued());
      describe(client, token, 0, 0);
      receive(r);
      assertPacket(r, 0, 4);
      assertEquals(DATA, fetched());
    } finally {
      r.close();
      client.pool.release(token);
    }
  }
}
