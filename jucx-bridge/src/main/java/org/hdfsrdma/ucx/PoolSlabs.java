package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.openucx.jucx.UcxUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The registered memory of a {@link RegisteredBufferPool}: its slabs
 * ({@link RegisteredSlab}), registered one at a time up to the pool's cap,
 * each sliced into equal buffers whose address and view are made once,
 * when the slab is added; and the SysV segments they live in. Buffer
 * {@code i} lies in slab {@code i / buffersPerSlab}, which is also the
 * region id peers know it by.
 *
 * <p>Growing and closing run under the pool's lock. Looking a buffer up
 * takes none: a slab's entries are written before the count that
 * publishes it (volatile), and never change after.
 */
final class PoolSlabs {

  /** Its lines are the pool's. */
  private static final Logger LOG =
      LoggerFactory.getLogger(RegisteredBufferPool.class);

  private final UcxContext context;
  private final String pool;
  private final int bufferSize;
  private final int buffersPerSlab;
  private final long slabBytes;
  private final RegisteredSlab[] slabs;
  /** Slabs added so far: ids 0 to this minus one. */
  private volatile int count;
  /** Per buffer: address, view (one per buffer, reused by each lease). */
  private final long[] addresses;
  private final ByteBuffer[] views;
  private final Set<Integer> sharedSegments =
      Collections.newSetFromMap(new ConcurrentHashMap<Integer, Boolean>());
  private long registrations;

  /**
   * Room for {@code capBytes / slabBytes} slabs of {@code slabBytes} bytes,
   * in buffers of {@code bufferSize} (the pool checked the sizes); none
   * registered yet.
   */
  PoolSlabs(UcxContext context, String pool, int bufferSize, long slabBytes,
      long capBytes) {
    this.context = context;
    this.pool = pool;
    this.bufferSize = bufferSize;
    this.slabBytes = slabBytes;
    this.buffersPerSlab = (int) (slabBytes / bufferSize);
    this.slabs = new RegisteredSlab[(int) (capBytes / slabBytes)];
    int buffers = (int) (capBytes / bufferSize);
    this.addresses = new long[buffers];
    this.views = new ByteBuffer[buffers];
  }

  /** Whether the cap allows no more slab. */
  boolean isFull() {
    return count == slabs.length;
  }

  /** Slabs registered so far. */
  int count() {
    return count;
  }

  int buffersPerSlab() {
    return buffersPerSlab;
  }

  /**
   * Has UCX allocate and register one more slab and slices it into
   * buffers; returns it, for the caller to free its buffers (indices from
   * {@code id * buffersPerSlab()}). The pool's lock held, not full.
   *
   * @throws IllegalStateException when UCX refuses
   */
  RegisteredSlab grow() {
    RegisteredSlab slab = RegisteredSlab.allocate(context, count, slabBytes,
        pool);
    int first = slab.id * buffersPerSlab;
    try {
      ByteBuffer whole = UcxUtils.getByteBufferView(slab.address, slabBytes);
      for (int i = 0; i < buffersPerSlab; i++) {
        int index = first + i;
        addresses[index] = slab.address + (long) i * bufferSize;
        ByteBuffer dup = whole.duplicate();
        dup.position(i * bufferSize).limit((i + 1) * bufferSize);
        views[index] = dup.slice();
      }
    } catch (RuntimeException | Error e) {
      Closeables.closeAfterFailure(e, slab);
      throw e;
    }
    for (int shmid : slab.sharedSegments) {
      sharedSegments.add(shmid);
    }
    slabs[slab.id] = slab;
    count = slab.id + 1;
    registrations++;
    LOG.debug("Pool {} registered slab {} of {} bytes ({} of {} bytes)", pool,
        slab.id, slabBytes, (long) count * slabBytes,
        (long) slabs.length * slabBytes);
    return slab;
  }

  /** The slab (region) of id {@code region}. */
  RegisteredSlab slab(int region) {
    return slabs[region];
  }

  /** The slab buffer {@code index} lies in. */
  RegisteredSlab slabOf(int index) {
    return slabs[index / buffersPerSlab];
  }

  long address(int index) {
    return addresses[index];
  }

  ByteBuffer view(int index) {
    return views[index];
  }

  /** Where buffer {@code index} lies, for leak reports. */
  String position(int index) {
    return "region " + (index / buffersPerSlab) + " offset "
        + (long) (index % buffersPerSlab) * bufferSize;
  }

  /** Whether the SysV segment {@code shmid} is one of the slabs'. */
  boolean ownsSegment(int shmid) {
    return sharedSegments.contains(shmid);
  }

  /** Bytes registered now (slabs not yet deregistered). */
  long registeredBytes() {
    long registered = 0;
    for (int i = 0; i < count; i++) {
      if (!slabs[i].isClosed()) {
        registered += slabBytes;
      }
    }
    return registered;
  }

  /** Slabs registered over the pool's life. */
  long registrations() {
    return registrations;
  }

  /**
   * Deregisters every slab none of whose buffers is leased, all of them
   * even when one fails (the first failure thrown, the rest suppressed);
   * the others are the pool's to close when their last lease ends.
   */
  void closeUnleased() {
    List<RegisteredSlab> unleased = new ArrayList<RegisteredSlab>();
    for (int i = 0; i < count; i++) {
      if (slabs[i].leased.get() == 0) {
        unleased.add(slabs[i]);
      }
    }
    Closeables.closeAll(unleased);
  }
}
