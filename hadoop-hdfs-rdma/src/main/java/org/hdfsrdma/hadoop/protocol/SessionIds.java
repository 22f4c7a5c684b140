package org.hdfsrdma.hadoop.protocol;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The UCX session id S that binds one DataNode's part of a pipeline to the
 * authenticated socket its {@code writeBlock} op came on (DESIGN.md
 * section 2).
 */
public final class SessionIds {

  /**
   * Domain label of the HMAC input. Its "2" numbers this derivation, not
   * the encoding of the request that carries the nonce: both sides of a
   * pipeline must compute the same S, so it changes only with the inputs.
   */
  private static final byte[] LABEL =
      "hdfs-rdma/2".getBytes(StandardCharsets.US_ASCII);

  private static final String HMAC = "HmacSHA256";

  private SessionIds() {
  }

  /**
   * The first 8 bytes, as a big-endian long, of HMAC-SHA256 with
   * {@code key} over
   * <pre>
   *   u32 len | "hdfs-rdma/2" | u32 len | nonce | u32 len |
   *   blockPoolId (UTF-8) | u32 len | dataNode (UTF-8) | u64 blockId |
   *   u64 generationStamp
   * </pre>
   * Every variable-length part is length-prefixed, so no two input tuples
   * give the same message. The client and the DataNode compute S
   * independently; it never travels on the socket. It names the DataNode,
   * so each node of a pipeline has its own session even where several
   * DataNodes share one JVM and one UCX worker (MiniDFSCluster), and a
   * descriptor meant for one DataNode is refused by another.
   *
   * @param key the block token's password; when null or empty (block
   *     tokens off, data transfer unauthenticated anyway), the nonce is
   *     the key
   * @param nonce the request's nonce R, {@link WriteRequest#NONCE_LENGTH}
   *     bytes
   * @param dataNode the DataNode's transfer address, ip:port
   */
  public static long of(byte[] key, byte[] nonce, String blockPoolId,
      String dataNode, long blockId, long generationStamp) {
    if (nonce == null || nonce.length != WriteRequest.NONCE_LENGTH) {
      throw new IllegalArgumentException("nonce must be "
          + WriteRequest.NONCE_LENGTH + " bytes");
    }
    if (blockPoolId == null || dataNode == null) {
      throw new IllegalArgumentException("blockPoolId or dataNode is null");
    }
    byte[] k = key == null || key.length == 0 ? nonce : key;
    byte[] pool = blockPoolId.getBytes(StandardCharsets.UTF_8);
    byte[] node = dataNode.getBytes(StandardCharsets.UTF_8);
    ByteBuffer msg = ByteBuffer.allocate(16 + LABEL.length + nonce.length
        + pool.length + node.length + 16);
    msg.putInt(LABEL.length).put(LABEL)
        .putInt(nonce.length).put(nonce)
        .putInt(pool.length).put(pool)
        .putInt(node.length).put(node)
        .putLong(blockId).putLong(generationStamp);
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(new SecretKeySpec(k, HMAC));
      return ByteBuffer.wrap(mac.doFinal(msg.array())).getLong();
    } catch (GeneralSecurityException e) {
      // every Java 8 platform has HmacSHA256
      throw new IllegalStateException(HMAC + " unavailable", e);
    }
  }
}
