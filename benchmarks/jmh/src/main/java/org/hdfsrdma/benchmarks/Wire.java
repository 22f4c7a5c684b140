package org.hdfsrdma.benchmarks;

import org.hdfsrdma.ucx.UcxContext;

/** What the benchmark JVM and its {@link TransferPeer} agree on. */
final class Wire {

  /** Bytes of an acknowledgement, on the socket and as a UCX message. */
  static final int ACK_BYTES = 8;

  /**
   * First line the peer prints: READY socketPort workerAddressHex
   * regionAnnouncementHex.
   */
  static final String READY = "READY";

  /** UCX_TLS of the product (dfs.rdma.ucx.tls's default): no tcp. */
  static final String PRODUCT_TLS = "^tcp";

  private Wire() {
  }

  /**
   * The UCX context options of both JVMs: what the product's UcxRuntime
   * runs with (peer error handling on, UCX_TLS {@value #PRODUCT_TLS}),
   * except that a UCX_TLS set in the environment wins, so that a run can
   * force other transports (both JVMs inherit it).
   *
   * <p>Like the product, it keeps UCX's default shared-memory queue
   * depth (64): UCX 1.13 sizes a peer's queue by the sender's own
   * setting, so every JVM on a host must agree on it (DESIGN.md).
   */
  static UcxContext.Options ucxOptions() {
    UcxContext.Options options = UcxContext.Options.defaults();
    String tls = System.getenv("UCX_TLS");
    if (tls == null || tls.isEmpty()) {
      // Set here, UCX would ignore the environment's: only when unset.
      options = options.withUcxConfig("TLS", PRODUCT_TLS);
    }
    return options;
  }

  static String hex(byte[] bytes) {
    StringBuilder s = new StringBuilder(bytes.length * 2);
    for (byte b : bytes) {
      s.append(Character.forDigit((b >> 4) & 0xf, 16));
      s.append(Character.forDigit(b & 0xf, 16));
    }
    return s.toString();
  }

  static byte[] unhex(String hex) {
    byte[] bytes = new byte[hex.length() / 2];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
    }
    return bytes;
  }

  /**
   * The payload's byte {@code i}. Every 8 KiB message of a payload starts
   * with 7 (8192 is a multiple of 256), never with the "H" of an
   * hdfs-rdma message's magic, so the peer tells payload from a hello.
   */
  static byte payloadByte(int i) {
    return (byte) (i * 31 + 7);
  }

  /** Quiet logging unless asked otherwise; before any logger exists. */
  static void defaultLogLevel() {
    String key = "org.slf4j.simpleLogger.defaultLogLevel";
    if (System.getProperty(key) == null) {
      System.setProperty(key, "warn");
    }
  }
}
