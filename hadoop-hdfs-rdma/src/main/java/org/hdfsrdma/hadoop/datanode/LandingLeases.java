package org.hdfsrdma.hadoop.datanode;

import java.io.InterruptedIOException;
import java.nio.ByteBuffer;

import org.hdfsrdma.ucx.PoolExhaustedException;
import org.hdfsrdma.ucx.RegisteredBufferPool;

/**
 * A block's landing buffers: leases of the JVM's landing pool (registered
 * memory) that its gets land in, and that a DataNode feeding the next one
 * offers it. The pool is taken on first need: a block read directly from a
 * same-host client needs none. The block's receiver thread only.
 */
final class LandingLeases {

  private final UcxDataNode dataNode;
  private final String block;
  private final long timeoutMs;
  private RegisteredBufferPool pool;

  /**
   * @param block the block, for messages
   * @param timeoutMs how long a lease may wait for a free buffer
   */
  LandingLeases(UcxDataNode dataNode, String block, long timeoutMs) {
    this.dataNode = dataNode;
    this.block = block;
    this.timeoutMs = timeoutMs;
  }

  private RegisteredBufferPool pool() {
    RegisteredBufferPool p = pool;
    if (p == null) {
      p = dataNode.runtime().pools().landing();
      pool = p;
    }
    return p;
  }

  /**
   * A free landing buffer, waiting up to the timeout.
   *
   * @throws UcxPathException when none is free in time
   */
  long lease() throws UcxPathException, InterruptedIOException {
    RegisteredBufferPool p = pool();
    long token = p.tryAcquire();
    if (token == RegisteredBufferPool.NO_LEASE) {
      try {
        token = p.acquire(timeoutMs);
      } catch (PoolExhaustedException e) {
        throw new UcxPathException("hdfs-rdma: no landing buffer for "
            + block + " in " + timeoutMs + " ms", e);
      }
    }
    return token;
  }

  /** The buffer of a lease, its position and limit the caller's. */
  ByteBuffer buffer(long token) {
    return pool.buffer(token);
  }

  /** The registered address of a lease, for a get to land at. */
  long address(long token) {
    return pool.address(token);
  }

  void release(long token) {
    pool.release(token);
  }
}
