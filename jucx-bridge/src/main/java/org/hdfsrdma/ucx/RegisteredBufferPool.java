package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fixed-size buffers of UCX-registered memory, for packets that peers read
 * with one-sided gets (exposer side) or that gets land in (getter side).
 *
 * <p>Registration is expensive (it pins pages and, on RDMA NICs, programs
 * the NIC), so memory is registered once in slabs and each slab is sliced
 * into buffers that are reused. The pool never holds more than its byte
 * cap: slabs are added on demand up to the cap and acquirers wait, for at
 * most their timeout, when every buffer is in use.
 *
 * <p>Slabs are page-aligned JVM direct memory (counted against
 * -XX:MaxDirectMemorySize) registered with UCX, as RDMA NICs register user
 * memory. Memory allocated by UCX itself (SysV or POSIX shared segments)
 * measured no faster here, and puts shared-segment ids in the remote keys,
 * whose unpacking fails badly in UCX 1.13 once the owner is gone.
 *
 * <p>Thread-safe. {@link #close()} is idempotent and never frees memory a
 * lease still holds: such slabs are released when their last lease is.
 */
public final class RegisteredBufferPool implements Closeable {

  private static final Logger LOG =
      LoggerFactory.getLogger(RegisteredBufferPool.class);

  /** One registered slab; buffers are its equal slices. */
  static final class Slab {
    final int id;
    final UcpMemory memory;
    final long address;
    final long length;
    final byte[] rkey;
    final ByteBuffer view;
    /**
     * The Java memory under the registration, held so GC cannot free it;
     * null when UCX allocated the slab (freed by deregistering it).
     */
    final ByteBuffer backing;
    int leased;
    boolean unmapped;

    Slab(int id, UcpMemory memory, ByteBuffer backing) {
      this.id = id;
      this.memory = memory;
      this.backing = backing;
      this.address = memory.getAddress();
      this.length = memory.getLength();
      ByteBuffer packed = memory.getRemoteKeyBuffer();
      this.rkey = new byte[packed.remaining()];
      packed.duplicate().get(rkey);
      this.view = UcxUtils.getByteBufferView(address, length);
    }
  }

  /** One buffer-sized slot of a slab; reused across leases. */
  static final class Slot {
    final Slab slab;
    final int offset;
    final ByteBuffer buffer;

    Slot(Slab slab, int offset, int size) {
      this.slab = slab;
      this.offset = offset;
      ByteBuffer dup = slab.view.duplicate();
      dup.position(offset);
      dup.limit(offset + size);
      this.buffer = dup.slice();
    }
  }

  private static final int PAGE = 4096;

  private final UcxContext context;
  private final String name;
  private final int bufferSize;
  private final int buffersPerSlab;
  private final long slabBytes;
  private final long capBytes;
  private final boolean recordLeaseSites;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition released = lock.newCondition();
  private final ArrayDeque<Slot> free = new ArrayDeque<Slot>();
  private final List<Slab> slabs = new ArrayList<Slab>();
  private final Set<RegisteredBuffer> leases =
      Collections.newSetFromMap(new IdentityHashMap<RegisteredBuffer, Boolean>());
  private boolean closed;

  private long inUseBytes;
  private long peakInUseBytes;
  private long registeredBytes;
  private long registrations;
  private long acquisitions;
  private long waits;
  private long timeouts;

  /**
   * Creates an empty pool; no memory is registered until first use.
   *
   * @param bufferSize bytes per buffer (an HDFS packet: 64 KiB + headroom)
   * @param slabBytes bytes registered at a time; a multiple of bufferSize
   * @param capBytes hard limit on registered bytes; a multiple of slabBytes
   * @param recordLeaseSites remember where each lease was taken, for leak
   *     reports (costs a stack trace per acquire: tests and debugging)
   */
  public RegisteredBufferPool(UcxContext context, String name, int bufferSize,
      long slabBytes, long capBytes, boolean recordLeaseSites) {
    if (bufferSize <= 0 || slabBytes < bufferSize
        || slabBytes % bufferSize != 0) {
      throw new IllegalArgumentException("slab of " + slabBytes
          + " bytes is not a positive multiple of the buffer size "
          + bufferSize);
    }
    if (capBytes < slabBytes || capBytes % slabBytes != 0) {
      throw new IllegalArgumentException("cap of " + capBytes
          + " bytes is not a positive multiple of the slab size " + slabBytes);
    }
    if (slabBytes > Integer.MAX_VALUE - PAGE) {
      throw new IllegalArgumentException("slab of " + slabBytes
          + " bytes exceeds what one direct buffer can hold");
    }
    this.context = context;
    this.name = name;
    this.bufferSize = bufferSize;
    this.slabBytes = slabBytes;
    this.buffersPerSlab = (int) (slabBytes / bufferSize);
    this.capBytes = capBytes;
    this.recordLeaseSites = recordLeaseSites;
  }

  public int bufferSize() {
    return bufferSize;
  }

  public long capBytes() {
    return capBytes;
  }

  /**
   * Takes a free buffer, registering a new slab when none is free and the
   * cap allows, otherwise waiting up to {@code timeoutMs}.
   *
   * @throws PoolExhaustedException when no buffer is free in time
   * @throws InterruptedIOException-like {@link java.io.InterruptedIOException}
   *     when interrupted while waiting
   */
  public RegisteredBuffer acquire(long timeoutMs)
      throws PoolExhaustedException, java.io.InterruptedIOException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    lock.lock();
    try {
      boolean waited = false;
      while (true) {
        RegisteredBuffer lease = leaseIfFree();
        if (lease != null) {
          return lease;
        }
        long remaining = deadline - System.nanoTime();
        if (remaining <= 0) {
          timeouts++;
          throw new PoolExhaustedException("registered buffer pool " + name
              + " exhausted: " + inUseBytes + " of " + capBytes
              + " bytes in use, none released within " + timeoutMs + " ms");
        }
        if (!waited) {
          waits++;
          waited = true;
        }
        try {
          released.awaitNanos(remaining);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new java.io.InterruptedIOException("interrupted waiting for a"
              + " buffer of pool " + name);
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * A free buffer if one is free now or the cap allows another slab, else
   * null; never waits and never counts as a timeout. For opportunistic use
   * (prefetching) that must not starve callers of {@link #acquire}.
   */
  public RegisteredBuffer tryAcquire() {
    lock.lock();
    try {
      return leaseIfFree();
    } finally {
      lock.unlock();
    }
  }

  /** A lease of a free slot, registering a slab if the cap allows; lock held. */
  private RegisteredBuffer leaseIfFree() {
    if (closed) {
      throw new IllegalStateException("buffer pool " + name + " is closed");
    }
    Slot slot = free.poll();
    if (slot == null && registeredBytes + slabBytes <= capBytes) {
      addSlab();
      slot = free.poll();
    }
    return slot == null ? null : lease(slot);
  }

  private void addSlab() {
    UcpMemory memory;
    ByteBuffer backing = null;
    try {
      // Memory UCX allocates itself lives in a shared-memory segment (and
      // is registered with every RDMA device): a peer on the same host can
      // then read it through the posix/sysv transports with no work by
      // this process, where a get of ordinary memory needs this side's
      // progress thread to serve it (no cma under peer error handling).
      memory = context.ucp().memoryMap(new UcpMemMapParams().allocate()
          .setLength(slabBytes));
    } catch (RuntimeException allocateFailed) {
      try {
        backing = ByteBuffer.allocateDirect((int) slabBytes + PAGE);
        long base = UcxUtils.getAddress(backing);
        long aligned = (base + PAGE - 1) & ~((long) PAGE - 1);
        memory = context.ucp().memoryMap(new UcpMemMapParams()
            .setAddress(aligned)
            .setLength(slabBytes));
      } catch (RuntimeException e) {
        throw new IllegalStateException("UCX could not register a slab of "
            + slabBytes + " bytes for pool " + name + ": " + e.getMessage(),
            e);
      }
      LOG.debug("Pool {}: UCX could not allocate a slab ({}); registered"
          + " JVM memory instead", name, allocateFailed.getMessage());
    }
    context.retain();
    Slab slab;
    try {
      slab = new Slab(slabs.size(), memory, backing);
    } catch (RuntimeException e) {
      memory.deregister();
      context.release();
      throw e;
    }
    slabs.add(slab);
    for (int i = 0; i < buffersPerSlab; i++) {
      free.add(new Slot(slab, i * bufferSize, bufferSize));
    }
    registeredBytes += slabBytes;
    registrations++;
    LOG.debug("Pool {} registered slab {} of {} bytes ({} of {} bytes)", name,
        slab.id, slabBytes, registeredBytes, capBytes);
  }

  private RegisteredBuffer lease(Slot slot) {
    RegisteredBuffer lease = new RegisteredBuffer(this, slot,
        recordLeaseSites ? new Throwable("acquired here") : null);
    leases.add(lease);
    slot.slab.leased++;
    acquisitions++;
    inUseBytes += bufferSize;
    peakInUseBytes = Math.max(peakInUseBytes, inUseBytes);
    return lease;
  }

  /** Returns a lease's slot; called once per lease by the lease. */
  void release(RegisteredBuffer lease, Slot slot) {
    lock.lock();
    try {
      if (!leases.remove(lease)) {
        return;
      }
      inUseBytes -= bufferSize;
      slot.slab.leased--;
      if (closed) {
        if (slot.slab.leased == 0) {
          unmap(slot.slab);
        }
      } else {
        free.push(slot);
        released.signal();
      }
    } finally {
      lock.unlock();
    }
  }

  /** A point-in-time copy of this pool's counters. */
  public PoolMetrics metrics() {
    lock.lock();
    try {
      return new PoolMetrics(inUseBytes, peakInUseBytes, registeredBytes,
          capBytes, registrations, acquisitions, waits, timeouts,
          leases.size());
    } finally {
      lock.unlock();
    }
  }

  /**
   * Describes every lease not yet released; empty when nothing leaked.
   * With lease sites recorded, each entry carries where it was acquired.
   */
  public List<String> outstandingLeases() {
    lock.lock();
    try {
      List<String> out = new ArrayList<String>();
      for (RegisteredBuffer lease : leases) {
        out.add(lease.describeLease());
      }
      return out;
    } finally {
      lock.unlock();
    }
  }

  /** Fails when any buffer is still leased: for tests' tear-down. */
  public void assertNoLeaks() {
    List<String> leaked = outstandingLeases();
    if (!leaked.isEmpty()) {
      throw new IllegalStateException("pool " + name + " leaked "
          + leaked.size() + " buffer(s): " + leaked);
    }
  }

  /**
   * Releases registered memory. Slabs with leased buffers stay mapped until
   * their last buffer is released. Idempotent.
   */
  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      free.clear();
      for (Slab slab : slabs) {
        if (slab.leased == 0) {
          unmap(slab);
        }
      }
      if (!leases.isEmpty()) {
        LOG.warn("Pool {} closed with {} buffer(s) still leased; their slabs"
            + " are freed when they are released", name, leases.size());
      }
      released.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private void unmap(Slab slab) {
    if (slab.unmapped) {
      return;
    }
    slab.unmapped = true;
    registeredBytes -= slabBytes;
    try {
      slab.memory.deregister();
      context.release();
    } catch (RuntimeException e) {
      LOG.warn("Pool {} could not deregister slab {}", name, slab.id, e);
    }
  }

  @Override
  public String toString() {
    return "RegisteredBufferPool(" + name + ", " + metrics() + ")";
  }
}
