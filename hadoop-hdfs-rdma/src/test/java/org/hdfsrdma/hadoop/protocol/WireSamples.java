package org.hdfsrdma.hadoop.protocol;

import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.junit.function.ThrowingRunnable;

/**
 * Values the tests of the negotiation share, here and in
 * {@code org.hdfsrdma.hadoop.compat}, and the check that a peer's value is
 * refused the way a receiver expects.
 */
public final class WireSamples {

  public static final byte[] NONCE = new byte[] {
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, (byte) 0xff};

  private WireSamples() {
  }

  public static WriteRequest request() {
    return new WriteRequest(NONCE, 65536, 1);
  }

  /** A worker address as UCX writes them: opaque bytes, a few hundred. */
  public static byte[] workerAddress(int length, int seed) {
    byte[] a = new byte[length];
    new Random(seed).nextBytes(a);
    return a;
  }

  public static byte[] hostId(int seed) {
    byte[] h = new byte[CommitEntry.HOST_ID_LENGTH];
    Arrays.fill(h, (byte) seed);
    h[0] = (byte) 0xfe;
    return h;
  }

  /**
   * Entries with the extremes of every value, one with an ingest rate, one
   * with a shared-memory profile.
   */
  public static List<CommitEntry> commits() {
    return Arrays.asList(
        new CommitEntry("10.0.0.1:9866", workerAddress(197, 1), 0,
            hostId(1)),
        new CommitEntry("10.0.0.2:9866", workerAddress(1, 2), 1000,
            hostId(2)),
        new CommitEntry("[::1]:9866", workerAddress(
            WireLimits.MAX_WORKER_ADDRESS_BYTES, 3), -1, hostId(3)),
        new CommitEntry("10.0.0.4:9866", workerAddress(64, 4), 1000,
            hostId(4), 1_250_000_000L),
        new CommitEntry("10.0.0.5:9866", workerAddress(80, 5), 1000,
            hostId(5), 0, "1.22.0 UCX_MM_FIFO_SIZE=64"));
  }

  /**
   * A request as the release before the protobuf payloads encoded it, 24
   * bytes: u16 version (2; 1 was the listener-based release), u16 flags
   * (feeders in the low four bits), i32 packet size, the nonce.
   */
  public static byte[] previousReleaseRequest(int version, byte[] nonce,
      int packetSize, int flags) {
    return ByteBuffer.allocate(24).putShort((short) version)
        .putShort((short) flags).putInt(packetSize).put(nonce).array();
  }

  /**
   * A commit entry as the release before the protobuf payloads encoded it
   * (version 2): u16 version, u16 flags (0), i32 uid, the host id, then
   * the transfer address and the worker address, each after a u16 length.
   */
  public static byte[] previousReleaseEntry(String xferAddr, byte[] worker,
      int uid, byte[] hostId) {
    byte[] addr = xferAddr.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(8 + hostId.length + 2 + addr.length + 2
        + worker.length).putShort((short) 2).putShort((short) 0).putInt(uid)
        .put(hostId).putShort((short) addr.length).put(addr)
        .putShort((short) worker.length).put(worker).array();
  }

  /**
   * Runs {@code r}, which must throw an IOException (what a receiver
   * catches: never an unchecked exception) whose message contains
   * {@code expected}.
   */
  public static void assertIOException(String expected, ThrowingRunnable r) {
    IOException e = assertThrows(IOException.class, r);
    assertTrue("message '" + e.getMessage() + "' lacks '" + expected + "'",
        e.getMessage().contains(expected));
  }
}
