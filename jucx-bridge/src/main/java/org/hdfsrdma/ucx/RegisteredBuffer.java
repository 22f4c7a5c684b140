package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lease on one buffer of a {@link RegisteredBufferPool}. The buffer is the
 * holder's until {@link #release()}; releasing twice, or closing after
 * releasing, does nothing, so cleanup paths may release freely.
 *
 * <p>A peer may be reading the buffer with a one-sided get: release only
 * after the peer is known to be done (for an HDFS packet, after its ACK).
 */
public final class RegisteredBuffer implements Closeable {

  private final RegisteredBufferPool pool;
  private final RegisteredBufferPool.Slot slot;
  private final Throwable site;
  private final AtomicBoolean released = new AtomicBoolean();

  RegisteredBuffer(RegisteredBufferPool pool, RegisteredBufferPool.Slot slot,
      Throwable site) {
    this.pool = pool;
    this.slot = slot;
    this.site = site;
  }

  /**
   * The buffer's memory as a direct ByteBuffer of {@link #capacity()} bytes.
   * Each call returns an independent view (own position and limit).
   */
  public ByteBuffer buffer() {
    checkLeased();
    return slot.buffer.duplicate();
  }

  /** Native address of the first byte. */
  public long address() {
    return slot.slab.address + slot.offset;
  }

  public int capacity() {
    return slot.buffer.capacity();
  }

  /** Id of the registered region (slab) holding this buffer. */
  public int regionId() {
    return slot.slab.id;
  }

  /** Start of the registered region holding this buffer. */
  public long regionAddress() {
    return slot.slab.address;
  }

  /** Length of the registered region holding this buffer. */
  public long regionLength() {
    return slot.slab.length;
  }

  /** The region's packed remote key, for descriptors. Shared: do not modify. */
  byte[] packedRemoteKey() {
    return slot.slab.rkey;
  }

  /** A copy of the region's packed remote key. */
  public byte[] remoteKey() {
    return slot.slab.rkey.clone();
  }

  public boolean isReleased() {
    return released.get();
  }

  /** Returns the buffer to its pool. Idempotent. */
  public void release() {
    if (released.compareAndSet(false, true)) {
      pool.release(this, slot);
    }
  }

  @Override
  public void close() {
    release();
  }

  private void checkLeased() {
    if (released.get()) {
      throw new IllegalStateException("buffer used after release");
    }
  }

  String describeLease() {
    StringBuilder sb = new StringBuilder("region ").append(slot.slab.id)
        .append(" offset ").append(slot.offset);
    if (site != null) {
      for (StackTraceElement e : site.getStackTrace()) {
        if (!e.getClassName().startsWith(RegisteredBufferPool.class.getName())) {
          sb.append(" acquired at ").append(e);
          break;
        }
      }
    }
    return sb.toString();
  }
}
