package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fixed-size buffers of UCX-registered memory, for packets that peers read
 * (exposer side) or that gets land in (getter side).
 *
 * <p>Registration is expensive (it pins pages and, on RDMA NICs, programs
 * the NIC), so memory is registered once in slabs, each sliced into buffers
 * that are reused. The pool never holds more than its byte cap: slabs are
 * added on demand up to the cap, and acquirers wait, for at most their
 * timeout, when every buffer is leased. Slabs are allocated by UCX itself
 * (SysV shared memory, registered with every RDMA device): a peer on the
 * same host reads them directly, with no work by this process.
 *
 * <p><b>Leases are tokens.</b> {@link #acquire} returns a {@code long}
 * naming a buffer and a generation; the buffer's accessors and
 * {@link #release} take the token. A token released once, or held past its
 * release, is stale: releasing it again does nothing and its accessors
 * fail. No object is created per lease, and the free list is lock-free (a
 * Treiber stack of buffer indices): acquiring and releasing a buffer takes
 * no lock unless a slab must be registered or the pool is exhausted. So a
 * client may lease a buffer per packet from any thread.
 *
 * <p>{@link #close()} is idempotent and never frees memory a lease still
 * holds: such slabs are released when their last lease is.
 *
 * <p>Its parts, package-private: the slabs and their buffers are a
 * {@link PoolSlabs} (each slab a {@link RegisteredSlab}), the free buffers
 * a {@link BufferFreeList}, the tokens and their counts a
 * {@link LeaseLedger}. The pool decides when to grow, hands buffers out,
 * takes them back, lets acquirers wait, and closes.
 */
public final class RegisteredBufferPool implements Closeable {

  private static final Logger LOG =
      LoggerFactory.getLogger(RegisteredBufferPool.class);

  /** A token that names no buffer. */
  public static final long NO_LEASE = -1L;

  private final String name;
  private final int bufferSize;
  private final long capBytes;
  private final int maxBuffers;

  private final PoolSlabs slabs;
  private final LeaseLedger leases;
  private final BufferFreeList free;

  /** Guards slab registration, waiting and close (the slow paths). */
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition released = lock.newCondition();
  private volatile int waiters;
  private volatile boolean closed;

  private final LongAdder waits = new LongAdder();
  private final LongAdder timeouts = new LongAdder();

  /**
   * Creates an empty pool; no memory is registered until first use.
   *
   * @param bufferSize bytes per buffer (an HDFS packet plus headroom)
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
    if (slabBytes > Integer.MAX_VALUE || capBytes / bufferSize > (1 << 24)) {
      throw new IllegalArgumentException("slab of " + slabBytes
          + " bytes or " + (capBytes / bufferSize) + " buffers is too many");
    }
    this.name = name;
    this.bufferSize = bufferSize;
    this.capBytes = capBytes;
    this.maxBuffers = (int) (capBytes / bufferSize);
    this.slabs = new PoolSlabs(context, name, bufferSize, slabBytes, capBytes);
    this.leases = new LeaseLedger(maxBuffers, recordLeaseSites);
    this.free = new BufferFreeList(maxBuffers);
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
   * @return the lease's token
   * @throws PoolExhaustedException when no buffer is free in time
   * @throws InterruptedIOException when interrupted while waiting
   * @throws IllegalStateException when the pool is closed or UCX refuses to
   *     register more memory
   */
  public long acquire(long timeoutMs)
      throws PoolExhaustedException, InterruptedIOException {
    long token = tryAcquire();
    if (token != NO_LEASE) {
      return token;
    }
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    boolean counted = false;
    lock.lock();
    try {
      waiters++;
      try {
        while (true) {
          token = tryAcquire();
          if (token != NO_LEASE) {
            return token;
          }
          long remaining = deadline - System.nanoTime();
          if (remaining <= 0) {
            timeouts.increment();
            throw new PoolExhaustedException("registered buffer pool " + name
                + " exhausted: " + inUseBytes() + " of " + capBytes
                + " bytes in use, none released within " + timeoutMs
                + " ms");
          }
          if (!counted) {
            waits.increment();
            counted = true;
          }
          released.awaitNanos(remaining);
        }
      } finally {
        waiters--;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted waiting for a buffer of"
          + " pool " + name);
    } finally {
      lock.unlock();
    }
  }

  /**
   * A free buffer if one is free now or the cap allows another slab, else
   * {@link #NO_LEASE}; never waits and never counts as a timeout.
   *
   * @throws IllegalStateException when the pool is closed or UCX refuses to
   *     register more memory
   */
  public long tryAcquire() {
    while (true) {
      if (closed) {
        throw new IllegalStateException("buffer pool " + name + " is closed");
      }
      int index = free.pop();
      if (index >= 0) {
        return lease(index);
      }
      if (slabs.isFull()) {
        return NO_LEASE;
      }
      lock.lock();
      try {
        if (closed) {
          continue;
        }
        if (free.isEmpty() && !slabs.isFull()) {
          addSlab();
        }
      } finally {
        lock.unlock();
      }
    }
  }

  private long lease(int index) {
    long token = leases.lease(index);
    slabs.slabOf(index).leased.incrementAndGet();
    return token;
  }

  /** Returns a lease's buffer. Idempotent: a stale token does nothing. */
  public void release(long token) {
    int index = leases.release(token);
    if (index < 0) {
      return;
    }
    RegisteredSlab slab = slabs.slabOf(index);
    int left = slab.leased.decrementAndGet();
    if (closed) {
      if (left == 0) {
        lock.lock();
        try {
          slab.close();
        } finally {
          lock.unlock();
        }
      }
      return;
    }
    free.push(index);
    if (waiters > 0) {
      lock.lock();
      try {
        released.signal();
      } finally {
        lock.unlock();
      }
    }
  }

  /** Whether {@code token} no longer names a lease. */
  public boolean isReleased(long token) {
    return leases.isReleased(token);
  }

  /**
   * The buffer's memory as a direct ByteBuffer of {@link #bufferSize()}
   * bytes: the same view object for every lease of that buffer, so the
   * holder owns its position and limit and must not hand it on.
   */
  public ByteBuffer buffer(long token) {
    return slabs.view(leases.indexOf(token));
  }

  /** Native address of the buffer's first byte. */
  public long address(long token) {
    return slabs.address(leases.indexOf(token));
  }

  /** Id of the registered slab (region) holding the buffer. */
  public int regionId(long token) {
    return leases.indexOf(token) / slabs.buffersPerSlab();
  }

  /** Address of a region's first byte. */
  public long regionAddress(int regionId) {
    return slabs.slab(regionId).address;
  }

  /** Length of a region. */
  public long regionLength(int regionId) {
    return slabs.slab(regionId).length;
  }

  /** A region's packed remote key; shared: do not modify. */
  public byte[] regionKey(int regionId) {
    return slabs.slab(regionId).rkey;
  }

  /** Regions registered so far (ids 0 to this minus one). */
  public int regionCount() {
    return slabs.count();
  }

  /**
   * Whether the SysV segment {@code shmid} is one of this pool's slabs: a
   * getter in this process may read it when a peer (this process's own
   * client) names it.
   */
  public boolean ownsSegment(int shmid) {
    return slabs.ownsSegment(shmid);
  }

  /** Registers one more slab and frees its buffers; lock held. */
  private void addSlab() {
    RegisteredSlab slab = slabs.grow();
    int first = slab.id * slabs.buffersPerSlab();
    for (int i = slabs.buffersPerSlab() - 1; i >= 0; i--) {
      free.push(first + i);
    }
  }

  private long inUseBytes() {
    return (long) leases.leased() * bufferSize;
  }

  /** A point-in-time copy of this pool's counters. */
  public PoolMetrics metrics() {
    lock.lock();
    try {
      return new PoolMetrics(inUseBytes(),
          (long) leases.peak() * bufferSize, slabs.registeredBytes(),
          capBytes, slabs.registrations(), leases.acquisitions(), waits.sum(),
          timeouts.sum(), leases.leased());
    } finally {
      lock.unlock();
    }
  }

  /**
   * Describes every lease not yet released; empty when nothing leaked.
   * With lease sites recorded, each entry carries where it was acquired.
   */
  public List<String> outstandingLeases() {
    return leases.outstanding(slabs.count() * slabs.buffersPerSlab(),
        slabs::position);
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
      released.signalAll();
      if (leases.leased() != 0) {
        LOG.warn("Pool {} closed with {} buffer(s) still leased; their slabs"
            + " are freed when they are released", name, leases.leased());
      }
      slabs.closeUnleased();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public String toString() {
    return "RegisteredBufferPool(" + name + ", " + leases.leased() + " of "
        + maxBuffers + " buffers leased)";
  }
}
