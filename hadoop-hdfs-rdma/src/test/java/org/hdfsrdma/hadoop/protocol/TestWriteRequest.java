package org.hdfsrdma.hadoop.protocol;

import static org.hdfsrdma.hadoop.protocol.WireSamples.NONCE;
import static org.hdfsrdma.hadoop.protocol.WireSamples.assertIOException;
import static org.hdfsrdma.hadoop.protocol.WireSamples.request;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.util.Arrays;

import org.junit.Test;

/**
 * {@link WriteRequest} as a value: what it holds, and every value out of
 * range refused, unchecked from this side and with an IOException from a
 * peer. How it travels: {@code org.hdfsrdma.hadoop.compat}'s tests.
 *
 * <p>The values: nonce, packet size, feeders 0 to 15; the request is immutable;
 * what a peer sent out of range is refused with an IOException naming the
 * value.
 */
public class TestWriteRequest {

  @Test(timeout = 10000)
  public void testValues() throws IOException {
    WriteRequest r = request();
    assertEquals(65536, r.getPacketSize());
    assertEquals(1, r.feeders());
    assertArrayEquals(NONCE, r.getNonce());
    WriteRequest same = WriteRequest.received(NONCE, 65536, 1);
    assertEquals(r, same);
    assertEquals(r.hashCode(), same.hashCode());
    // the largest values each field holds
    WriteRequest max = new WriteRequest(NONCE, Integer.MAX_VALUE,
        WriteRequest.MAX_FEEDERS);
    assertEquals(max, WriteRequest.received(NONCE, Integer.MAX_VALUE, 15));
    assertEquals(15, WriteRequest.MAX_FEEDERS);

    WriteRequest c = WriteRequest.create(1 << 20, 0);
    assertEquals(1 << 20, c.getPacketSize());
    assertEquals(0, c.feeders());
    assertEquals(WriteRequest.NONCE_LENGTH, c.getNonce().length);
    assertFalse(Arrays.equals(c.getNonce(),
        WriteRequest.create(1 << 20, 0).getNonce()));
    assertNotEquals(r, new WriteRequest(NONCE, 65536, 0));
    assertNotEquals(r, new WriteRequest(NONCE, 65535, 1));
    byte[] otherNonce = NONCE.clone();
    otherNonce[15] ^= 1;
    assertNotEquals(r, new WriteRequest(otherNonce, 65536, 1));
    // the nonce keys session ids where block tokens are off: never shown
    assertFalse(r.toString().contains(Arrays.toString(NONCE)));
    assertFalse(r.toString().contains("-1"));
  }

  @Test(timeout = 10000)
  public void testIsImmutable() {
    byte[] n = NONCE.clone();
    WriteRequest r = new WriteRequest(n, 4096, 0);
    n[0] = 42;
    r.getNonce()[1] = 42;
    assertArrayEquals(NONCE, r.getNonce());
  }

  /** Packet size and feeders out of range, with what a peer is told. */
  private static final Object[][] BAD_NUMBERS = {
      {0, 0, "invalid packet size 0"},
      {-1, 0, "invalid packet size -1"},
      {Integer.MIN_VALUE, 0, "invalid packet size " + Integer.MIN_VALUE},
      {1, -1, "feeders -1 out of range [0, 15]"},
      {1, 16, "feeders 16 out of range [0, 15]"},
      {1, Integer.MAX_VALUE, "feeders 2147483647 out of range [0, 15]"}};

  @Test(timeout = 10000)
  public void testRejectsBadArguments() {
    for (Object[] a : BAD_NUMBERS) {
      try {
        new WriteRequest(NONCE, (Integer) a[0], (Integer) a[1]);
        fail("accepted " + Arrays.toString(a));
      } catch (IllegalArgumentException expected) {
      }
    }
    for (byte[] nonce : new byte[][] {null, new byte[15], new byte[17]}) {
      try {
        new WriteRequest(nonce, 1, 0);
        fail("accepted a nonce of " + (nonce == null ? "null"
            : nonce.length + " bytes"));
      } catch (IllegalArgumentException expected) {
      }
    }
  }

  @Test(timeout = 10000)
  public void testReceivedValuesOutOfRange() {
    for (Object[] a : BAD_NUMBERS) {
      assertIOException("hdfs-rdma write request with " + a[2],
          () -> WriteRequest.received(NONCE, (Integer) a[0],
              (Integer) a[1]));
    }
    assertIOException("a nonce of null, not 16",
        () -> WriteRequest.received(null, 1, 0));
    for (int n : new int[] {0, 1, 15, 17, 1000}) {
      assertIOException("a nonce of " + n + " bytes, not 16",
          () -> WriteRequest.received(new byte[n], 1, 0));
    }
  }
}
