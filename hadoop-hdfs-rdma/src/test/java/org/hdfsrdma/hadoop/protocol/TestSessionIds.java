package org.hdfsrdma.hadoop.protocol;

import static org.hdfsrdma.hadoop.protocol.WireSamples.NONCE;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.junit.Test;

/**
 * {@link SessionIds}: the documented HMAC, different for every input, and
 * the very ids the release before the protobuf payloads computed, so that
 * a client and a DataNode agree whichever class computes them.
 */
public class TestSessionIds {

  private static final String DN = "127.0.0.1:1";

  private static final String POOL = "BP-1-10.0.0.1-1700000000000";

  private static final byte[] KEY = "password".getBytes(
      StandardCharsets.UTF_8);

  @Test(timeout = 10000)
  public void testSessionId() {
    long s = SessionIds.of(KEY, NONCE, POOL, DN, 7L, 1001L);
    assertEquals(s, SessionIds.of(KEY.clone(), NONCE.clone(),
        new String(POOL), DN, 7L, 1001L));

    byte[] otherNonce = NONCE.clone();
    otherNonce[15] ^= 1;
    long[] others = {
        SessionIds.of("passwore".getBytes(StandardCharsets.UTF_8), NONCE,
            POOL, DN, 7L, 1001L),
        SessionIds.of(KEY, otherNonce, POOL, DN, 7L, 1001L),
        SessionIds.of(KEY, NONCE, POOL + "x", DN, 7L, 1001L),
        SessionIds.of(KEY, NONCE, POOL, DN, 8L, 1001L),
        SessionIds.of(KEY, NONCE, POOL, DN, 7L, 1002L),
        SessionIds.of(KEY, NONCE, POOL, DN, 1001L, 7L),
        SessionIds.of(KEY, NONCE, POOL, "127.0.0.1:2", 7L, 1001L)};
    for (long o : others) {
      assertNotEquals(s, o);
    }

    // no key: the nonce is the key
    long noKey = SessionIds.of(new byte[0], NONCE, POOL, DN, 7L, 1001L);
    assertEquals(noKey, SessionIds.of(null, NONCE, POOL, DN, 7L, 1001L));
    assertEquals(noKey, SessionIds.of(NONCE, NONCE, POOL, DN, 7L, 1001L));
    assertNotEquals(noKey, s);
    assertNotEquals(noKey,
        SessionIds.of(null, otherNonce, POOL, DN, 7L, 1001L));

    try {
      SessionIds.of(KEY, new byte[8], POOL, DN, 7L, 1001L);
      fail("accepted an 8-byte nonce");
    } catch (IllegalArgumentException expected) {
    }
  }

  /** The documented HMAC input, computed here independently. */
  private static long expectedSessionId(byte[] key, byte[] nonce,
      String pool, String dataNode, long blockId, long stamp)
      throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream m = new DataOutputStream(bytes);
    byte[] label = "hdfs-rdma/2".getBytes(StandardCharsets.US_ASCII);
    byte[] p = pool.getBytes(StandardCharsets.UTF_8);
    byte[] d = dataNode.getBytes(StandardCharsets.UTF_8);
    m.writeInt(label.length);
    m.write(label);
    m.writeInt(nonce.length);
    m.write(nonce);
    m.writeInt(p.length);
    m.write(p);
    m.writeInt(d.length);
    m.write(d);
    m.writeLong(blockId);
    m.writeLong(stamp);
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key, "HmacSHA256"));
    return ByteBuffer.wrap(mac.doFinal(bytes.toByteArray())).getLong();
  }

  @Test(timeout = 10000)
  public void testSessionIdIsTheDocumentedHmac() throws Exception {
    assertEquals(expectedSessionId(KEY, NONCE, POOL, DN, 7L, 1001L),
        SessionIds.of(KEY, NONCE, POOL, DN, 7L, 1001L));
    // no block token: keyed by the nonce
    assertEquals(expectedSessionId(NONCE, NONCE, POOL, "[::1]:9866", -1L,
        Long.MAX_VALUE), SessionIds.of(null, NONCE, POOL, "[::1]:9866", -1L,
            Long.MAX_VALUE));
    // length prefixes: moving a byte between pool and DataNode changes it
    assertNotEquals(SessionIds.of(KEY, NONCE, "ab", "c", 1L, 1L),
        SessionIds.of(KEY, NONCE, "a", "bc", 1L, 1L));
    for (String[] bad : new String[][] {{null, DN}, {POOL, null}}) {
      try {
        SessionIds.of(KEY, NONCE, bad[0], bad[1], 7L, 1001L);
        fail("accepted a null block pool or DataNode");
      } catch (IllegalArgumentException expected) {
      }
    }
    try {
      SessionIds.of(KEY, null, POOL, DN, 7L, 1001L);
      fail("accepted a null nonce");
    } catch (IllegalArgumentException expected) {
    }
  }

  /**
   * Ids computed by {@code UcxWireFields.sessionId} of the release that
   * carried the request as a hand-encoded payload: the move to protobuf
   * changed how the nonce travels, not the HMAC's input or result.
   */
  @Test(timeout = 10000)
  public void testVectorsOfThePreviousRelease() {
    assertEquals(0x80d384433a1dbed1L, SessionIds.of(KEY, NONCE, POOL, DN,
        1073741825L, 1001L));
    assertEquals(0x8d09a657e2db8799L, SessionIds.of(null, NONCE, POOL,
        "[::1]:9866", -1L, Long.MAX_VALUE));
    assertEquals(0x136a6560387922fdL, SessionIds.of(KEY, NONCE,
        "BP-\u00e9", "10.0.0.2:9866", 7L, 1001L));
  }
}
