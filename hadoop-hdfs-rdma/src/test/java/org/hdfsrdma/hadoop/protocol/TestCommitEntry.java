package org.hdfsrdma.hadoop.protocol;

import static org.hdfsrdma.hadoop.protocol.WireSamples.assertIOException;
import static org.hdfsrdma.hadoop.protocol.WireSamples.commits;
import static org.hdfsrdma.hadoop.protocol.WireSamples.hostId;
import static org.hdfsrdma.hadoop.protocol.WireSamples.workerAddress;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.junit.Test;

/**
 * {@link CommitEntry} as a value: what it holds, and every value out of
 * range refused, unchecked from this side and with an IOException from a
 * peer. How it travels: {@code org.hdfsrdma.hadoop.compat}'s tests.
 *
 * <p>The values: transfer address, worker address, uid, host id, ingest rate;
 * the entry is immutable; the limits are {@code WireLimits}' string and worker
 * address lengths, and what a peer sent beyond them or out of range, or an
 * xferAddr that is not UTF-8, is refused with an IOException naming the value.
 */
public class TestCommitEntry {

  private static final byte[] UTF8_ADDR =
      "h\u00e9:1".getBytes(StandardCharsets.UTF_8);

  private static CommitEntry received(CommitEntry e) throws IOException {
    return CommitEntry.received(
        e.getXferAddr().getBytes(StandardCharsets.UTF_8),
        e.getWorkerAddress(), e.getUid(), e.getHostId(),
        e.getIngestBytesPerSecond(), e.getSharedMemoryProfile() == null
            ? null : e.getSharedMemoryProfile().getBytes(
                StandardCharsets.UTF_8));
  }

  @Test(timeout = 10000)
  public void testValues() throws IOException {
    for (CommitEntry e : commits()) {
      CommitEntry d = received(e);
      assertEquals(e, d);
      assertEquals(e.hashCode(), d.hashCode());
      assertEquals(e.toString(), d.toString());
    }
    CommitEntry e = new CommitEntry("h\u00e9:1", new byte[] {9, 8, 7},
        0x01020304, hostId(5), 3_000_000_000L);
    assertEquals("h\u00e9:1", e.getXferAddr());
    assertArrayEquals(new byte[] {9, 8, 7}, e.getWorkerAddress());
    assertEquals(0x01020304, e.getUid());
    assertArrayEquals(hostId(5), e.getHostId());
    assertEquals(3_000_000_000L, e.getIngestBytesPerSecond());
    assertEquals(e, CommitEntry.received(UTF8_ADDR, new byte[] {9, 8, 7},
        0x01020304, hostId(5), 3_000_000_000L, null));
    assertEquals(0, new CommitEntry("a:1", new byte[1], 0, hostId(1))
        .getIngestBytesPerSecond());
    // longest values allowed
    char[] c = new char[WireLimits.MAX_STRING_BYTES];
    Arrays.fill(c, 'a');
    CommitEntry longest = new CommitEntry(new String(c),
        workerAddress(WireLimits.MAX_WORKER_ADDRESS_BYTES, 9),
        Integer.MIN_VALUE, hostId(9), Long.MAX_VALUE);
    assertEquals(longest, received(longest));
    // equality covers every value
    CommitEntry first = commits().get(0);
    assertNotEquals(first, new CommitEntry(first.getXferAddr(),
        first.getWorkerAddress(), first.getUid() + 1, first.getHostId()));
    assertNotEquals(first, new CommitEntry(first.getXferAddr(),
        first.getWorkerAddress(), first.getUid(), hostId(7)));
    assertNotEquals(first, new CommitEntry(first.getXferAddr(),
        workerAddress(197, 2), first.getUid(), first.getHostId()));
    assertNotEquals(first, new CommitEntry("10.0.0.1:9867",
        first.getWorkerAddress(), first.getUid(), first.getHostId()));
    assertNotEquals(first, new CommitEntry(first.getXferAddr(),
        first.getWorkerAddress(), first.getUid(), first.getHostId(), 1));
  }

  @Test(timeout = 10000)
  public void testIsImmutable() {
    byte[] worker = workerAddress(10, 1);
    byte[] host = hostId(1);
    CommitEntry e = new CommitEntry("a:1", worker, 7, host);
    worker[0] ^= 1;
    host[1] ^= 1;
    e.getWorkerAddress()[2] ^= 1;
    e.getHostId()[3] ^= 1;
    assertArrayEquals(workerAddress(10, 1), e.getWorkerAddress());
    assertArrayEquals(hostId(1), e.getHostId());
  }

  @Test(timeout = 10000)
  public void testRejectsBadArguments() {
    char[] c = new char[WireLimits.MAX_STRING_BYTES + 1];
    Arrays.fill(c, 'a');
    // 342 three-byte characters: 1026 bytes of UTF-8 in 342 chars
    char[] wide = new char[342];
    Arrays.fill(wide, '\u20ac');
    Object[][] bad = {
        {null, workerAddress(8, 1), hostId(1), 0L},
        {"", workerAddress(8, 1), hostId(1), 0L},
        {new String(c), workerAddress(8, 1), hostId(1), 0L},
        {new String(wide), workerAddress(8, 1), hostId(1), 0L},
        {"a:1", null, hostId(1), 0L},
        {"a:1", new byte[0], hostId(1), 0L},
        {"a:1", new byte[WireLimits.MAX_WORKER_ADDRESS_BYTES + 1],
            hostId(1), 0L},
        {"a:1", workerAddress(8, 1), null, 0L},
        {"a:1", workerAddress(8, 1), new byte[15], 0L},
        {"a:1", workerAddress(8, 1), new byte[17], 0L},
        {"a:1", workerAddress(8, 1), hostId(1), -1L},
        {"a:1", workerAddress(8, 1), hostId(1), Long.MIN_VALUE}};
    for (Object[] a : bad) {
      try {
        new CommitEntry((String) a[0], (byte[]) a[1], 0, (byte[]) a[2],
            (Long) a[3]);
        fail("accepted " + Arrays.deepToString(a).substring(0, 60));
      } catch (IllegalArgumentException expected) {
      }
    }
  }

  @Test(timeout = 10000)
  public void testReceivedValuesOutOfRange() {
    byte[] w = workerAddress(8, 4);
    byte[] h = hostId(4);
    byte[] longAddr = new byte[WireLimits.MAX_STRING_BYTES + 1];
    Arrays.fill(longAddr, (byte) 'a');
    assertIOException("hdfs-rdma commit entry with no xferAddr",
        () -> CommitEntry.received(null, w, 0, h, 0, null));
    assertIOException("an xferAddr of 0 bytes, not 1 to 1024",
        () -> CommitEntry.received(new byte[0], w, 0, h, 0, null));
    assertIOException("an xferAddr of 1025 bytes, not 1 to 1024",
        () -> CommitEntry.received(longAddr, w, 0, h, 0, null));
    assertIOException("a worker address of null, not 1 to 4096",
        () -> CommitEntry.received(UTF8_ADDR, null, 0, h, 0, null));
    assertIOException("a worker address of 0 bytes, not 1 to 4096",
        () -> CommitEntry.received(UTF8_ADDR, new byte[0], 0, h, 0, null));
    assertIOException("a worker address of 4097 bytes",
        () -> CommitEntry.received(UTF8_ADDR, new byte[4097], 0, h, 0,
            null));
    assertIOException("a host id of null, not 16",
        () -> CommitEntry.received(UTF8_ADDR, w, 0, null, 0, null));
    for (int n : new int[] {0, 15, 17}) {
      assertIOException("a host id of " + n + " bytes, not 16",
          () -> CommitEntry.received(UTF8_ADDR, w, 0, new byte[n], 0,
              null));
    }
    assertIOException("ingest rate -5",
        () -> CommitEntry.received(UTF8_ADDR, w, 0, h, -5, null));
    assertIOException("a shared-memory profile of 0 bytes, not 1 to 1024",
        () -> CommitEntry.received(UTF8_ADDR, w, 0, h, 0, new byte[0]));
    assertIOException("a shared-memory profile of 1025 bytes, not 1 to 1024",
        () -> CommitEntry.received(UTF8_ADDR, w, 0, h, 0, longAddr));
    byte[] invalid = {(byte) 0xff, (byte) 0xfe};
    assertIOException("shared-memory profile is not UTF-8",
        () -> CommitEntry.received(UTF8_ADDR, w, 0, h, 0, invalid));
  }

  /** The shared-memory profile travels when set, and counts in equality. */
  @Test(timeout = 10000)
  public void testSharedMemoryProfile() throws IOException {
    CommitEntry e = new CommitEntry("a:1", new byte[] {1}, 7, hostId(2), 0,
        "1.13.1 UCX_MM_FIFO_SIZE=16");
    assertEquals("1.13.1 UCX_MM_FIFO_SIZE=16", e.getSharedMemoryProfile());
    assertEquals(e, received(e));
    assertNotEquals(e, new CommitEntry("a:1", new byte[] {1}, 7, hostId(2)));
    assertNotEquals(e, new CommitEntry("a:1", new byte[] {1}, 7, hostId(2),
        0, "1.22.0"));
    assertTrue(e.toString(), e.toString().contains(
        "UCX 1.13.1 UCX_MM_FIFO_SIZE=16"));
  }

  /**
   * An xferAddr that is not UTF-8 is a malformed entry like any other (an
   * IOException: the pipeline stays on TCP), even when its replacement
   * characters would make the decoded string longer than the bound.
   */
  @Test(timeout = 10000)
  public void testReceivedInvalidUtf8IsRefused() {
    for (int n : new int[] {1, 3, 400, WireLimits.MAX_STRING_BYTES}) {
      byte[] invalid = new byte[n];
      Arrays.fill(invalid, (byte) 0xff);
      assertIOException("xferAddr is not UTF-8", () -> CommitEntry.received(
          invalid, workerAddress(8, 4), 0, hostId(4), 0, null));
    }
  }
}
