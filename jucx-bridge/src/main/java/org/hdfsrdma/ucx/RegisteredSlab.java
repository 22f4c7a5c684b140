package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One slab of a {@link RegisteredBufferPool}: memory UCX allocated and
 * registered, with its packed remote key and the SysV segment it lives in,
 * counted as a registration of its context while it is registered.
 *
 * <p>{@link #close()} deregisters it, once (JUCX's own deregister fails the
 * second time). A deregistration UCX refuses is logged and leaves the
 * registration counted, so that the context is not cleaned up under it.
 */
final class RegisteredSlab implements Closeable {

  /** Its lines are the pool's. */
  private static final Logger LOG =
      LoggerFactory.getLogger(RegisteredBufferPool.class);

  final int id;
  final long address;
  final long length;
  final byte[] rkey;
  /** The SysV segments its key names (one for memory UCX allocated). */
  final int[] sharedSegments;
  /** Buffers of this slab currently leased. */
  final AtomicInteger leased = new AtomicInteger();
  private final UcxContext context;
  private final UcpMemory memory;
  private final String pool;
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * Has UCX allocate and register {@code bytes} bytes.
   *
   * @throws IllegalStateException when UCX refuses
   */
  static RegisteredSlab allocate(UcxContext context, int id, long bytes,
      String pool) {
    UcpMemory memory;
    try {
      // Memory UCX allocates itself lives in a shared-memory segment (and
      // is registered with every RDMA device): a peer on the same host can
      // then read it with no work by this process.
      memory = context.ucp().memoryMap(new UcpMemMapParams().allocate()
          .setLength(bytes));
    } catch (RuntimeException e) {
      throw new IllegalStateException("UCX could not allocate a slab of "
          + bytes + " bytes for pool " + pool + ": " + e.getMessage(), e);
    }
    return new RegisteredSlab(context, id, memory, pool);
  }

  /**
   * Takes over {@code memory}, registered on {@code context}; deregisters
   * it when it cannot describe it.
   */
  RegisteredSlab(UcxContext context, int id, UcpMemory memory, String pool) {
    this.context = context;
    this.id = id;
    this.memory = memory;
    this.pool = pool;
    context.retain();
    try {
      this.address = memory.getAddress();
      this.length = memory.getLength();
      ByteBuffer packed = memory.getRemoteKeyBuffer();
      this.rkey = new byte[packed.remaining()];
      packed.duplicate().get(rkey);
      List<PackedRemoteKey.SysvEntry> segments =
          new ArrayList<PackedRemoteKey.SysvEntry>(1);
      PackedRemoteKey.ownSysvEntries(rkey, segments);
      this.sharedSegments = new int[segments.size()];
      for (int i = 0; i < sharedSegments.length; i++) {
        sharedSegments[i] = segments.get(i).shmid;
      }
    } catch (RuntimeException | Error e) {
      Closeables.closeAfterFailure(e, this);
      throw e;
    }
  }

  /** Whether {@link #close()} ran. */
  boolean isClosed() {
    return closed.get();
  }

  /** Deregisters the memory; only the first call does anything. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      memory.deregister();
    } catch (RuntimeException e) {
      LOG.warn("Pool {} could not deregister slab {}", pool, id, e);
      return;
    }
    context.release();
  }
}
