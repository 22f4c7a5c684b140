package org.hdfsrdma.benchmarks;

/** What the benchmark JVM and its {@link TransferPeer} agree on. */
final class Wire {

  /** Active message id of a benchmark payload (JMH JVM to the peer). */
  static final int DATA_AM_ID = 0x4201;
  /** Active message id of the peer's acknowledgement of a payload. */
  static final int ACK_AM_ID = 0x4202;
  /** Bytes of an acknowledgement, on the socket and as a UCX message. */
  static final int ACK_BYTES = 8;

  /** First line the peer prints: READY ucxPort socketPort descriptorHex. */
  static final String READY = "READY";

  private Wire() {
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

  /** Quiet logging unless asked otherwise; before any logger exists. */
  static void defaultLogLevel() {
    String key = "org.slf4j.simpleLogger.defaultLogLevel";
    if (System.getProperty(key) == null) {
      System.setProperty(key, "warn");
    }
  }
}
