package org.hdfsrdma.hadoop.protocol;

/**
 * Bounds on what a peer's negotiation may hold, so that nothing read from
 * the network can make a receiver allocate or parse more than a real
 * pipeline needs. A value beyond them is refused with an
 * {@link java.io.IOException} when received, and with an
 * {@link IllegalArgumentException} when this side would send it.
 */
public final class WireLimits {

  /**
   * Most commit entries a reply may carry: Hadoop's default
   * {@code dfs.replication.max}, far above any real pipeline length.
   */
  public static final int MAX_COMMIT_ENTRIES = 512;

  /** Most bytes of UTF-8 of a DataNode's transfer address. */
  public static final int MAX_STRING_BYTES = 1024;

  /**
   * Most bytes of a UCX worker address: a few hundred even with several
   * RDMA devices.
   */
  public static final int MAX_WORKER_ADDRESS_BYTES = 4096;

  /**
   * How far a DataNode reads ahead into a {@code writeBlock} op to find the
   * client's request before Hadoop reads the op. An op is about 1 KB (a
   * few hundred bytes per target); 64 KiB leaves room for pipelines far
   * longer than any real one.
   */
  public static final int PEEK_LIMIT = 64 * 1024;

  private WireLimits() {
  }
}
