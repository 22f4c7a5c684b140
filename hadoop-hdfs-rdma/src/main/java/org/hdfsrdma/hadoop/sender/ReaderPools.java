package org.hdfsrdma.hadoop.sender;

import java.io.Closeable;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.Closeables;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxContext;

/**
 * The registered memory one DataNode serves UCX reads from (DESIGN.md
 * section 9, "Memory a reader can see is its own"): a small pool per
 * reader, a reader being one user (the block token's) on one client
 * worker, so no other reader's data ever passes through memory a reader
 * may get from.
 *
 * <p>A read takes its whole window of buffers up front ({@link #reserve}),
 * within a cap per user and one per DataNode, or is declined and served
 * stock: it never waits for a buffer in mid-block. Its buffers go back to
 * its reader's pool only when the read ends as agreed
 * ({@link ReadReservation#finish}: the reader's final credit or its cancel);
 * a read that ends any other way {@linkplain ReadReservation#retire retires}
 * the pool: it serves no further read and is deregistered (its remote key
 * revoked) {@link #RETIRED_GRACE_NANOS} after its last read ends, by
 * {@link #sweep}. The grace is for gets the reader sent before the read
 * ended: where UCX emulates gets (its tcp transport) this JVM's worker
 * answers each by copying from the memory, and a get it answers after the
 * memory is gone kills the JVM. Pools left idle are closed by
 * {@link #sweep}; at most {@code maxReaders} exist at once, and as many
 * retired ones.
 *
 * <p>Everything here runs once per read, under this object's lock; nothing
 * per packet.
 */
public final class ReaderPools implements Closeable {

  /** Why a read got no buffers (it is then served stock). */
  public enum Decline {
    /** The user's reads hold {@code userBuffers} already. */
    USER_CAP,
    /** This DataNode's reads hold {@code dataNodeBuffers} already. */
    DATANODE_CAP,
    /** {@code maxReaders} pools exist and none is idle. */
    READERS,
    /** UCX would not register the memory. */
    NO_MEMORY,
    /** The DataNode's UCX side is closing. */
    CLOSED
  }

  /**
   * How long a retired pool stays registered after its last read: enough
   * for this JVM's worker to answer or drop the gets a reader sent before
   * it went away (a stopped DataNode answers them as soon as it runs
   * again, long before this).
   */
  public static final long RETIRED_GRACE_NANOS = TimeUnit.SECONDS.toNanos(10);

  /** Buffers registered at a time in a reader's pool, at most. */
  static final int SLAB_BUFFERS = 4;

  private final UcxContext context;
  private final int bufferSize;
  private final int userBuffers;
  private final int dataNodeBuffers;
  private final int maxReaders;
  private final long readerCapBytes;
  private final long slabBytes;

  private final Map<String, ReaderPool> pools = new HashMap<>();
  /**
   * Pools not closed yet: those of {@link #pools} and retired ones that a
   * read still uses (a reader in this JVM may still read them).
   */
  private final Set<RegisteredBufferPool> open = new HashSet<>();
  /** Retired pools no read uses, each with when it may be closed. */
  private final Map<RegisteredBufferPool, Long> retiring = new HashMap<>();
  private final Map<String, Integer> heldByUser = new HashMap<>();
  private int held;
  private boolean closed;
  private final long[] declines = new long[Decline.values().length];
  private long reservations;
  private long poolsMade;
  private long poolsRetired;

  /**
   * @param bufferSize bytes of one buffer (a packet, its checksums and
   *     header)
   * @param userBuffers buffers one user's reads may hold at once
   * @param dataNodeBuffers buffers all reads may hold at once
   * @param maxReaders pools that may exist at once
   */
  public ReaderPools(UcxContext context, int bufferSize, int userBuffers,
      int dataNodeBuffers, int maxReaders) {
    if (bufferSize <= 0 || userBuffers < 1 || dataNodeBuffers < userBuffers
        || maxReaders < 1) {
      throw new IllegalArgumentException("reader pools of " + bufferSize
          + "-byte buffers, " + userBuffers + " per user, " + dataNodeBuffers
          + " per DataNode, " + maxReaders + " readers");
    }
    this.context = context;
    this.bufferSize = bufferSize;
    this.userBuffers = userBuffers;
    this.dataNodeBuffers = dataNodeBuffers;
    this.maxReaders = maxReaders;
    int slab = Math.min(SLAB_BUFFERS, userBuffers);
    this.slabBytes = (long) slab * bufferSize;
    this.readerCapBytes = (long) ((userBuffers + slab - 1) / slab) * slabBytes;
  }

  /**
   * Takes {@code window} buffers for one read of {@code user} on the client
   * worker {@code workerAddress}, from that reader's own pool; a declined
   * reservation ({@link ReadReservation#declined()}) when the caps or UCX do
   * not allow it.
   */
  public synchronized ReadReservation reserve(String user, byte[] workerAddress,
      int window) {
    if (window < 1 || window > userBuffers) {
      throw new IllegalArgumentException("a window of " + window
          + " buffers, not 1 to " + userBuffers);
    }
    if (closed) {
      return declined(Decline.CLOSED);
    }
    int byUser = heldByUser.getOrDefault(user, 0);
    if (byUser + window > userBuffers) {
      return declined(Decline.USER_CAP);
    }
    if (held + window > dataNodeBuffers) {
      return declined(Decline.DATANODE_CAP);
    }
    String key = key(user, workerAddress);
    ReaderPool pool = pools.get(key);
    if (pool == null) {
      if (retiring.size() >= maxReaders
          || pools.size() >= maxReaders && !evictIdle()) {
        return declined(Decline.READERS);
      }
      pool = new ReaderPool(key, user, new RegisteredBufferPool(context,
          "reader-" + key, bufferSize, slabBytes, readerCapBytes, false));
      pools.put(key, pool);
      open.add(pool.buffers);
      poolsMade++;
    }
    long[] tokens = new long[window];
    int taken = 0;
    try {
      for (; taken < window; taken++) {
        long t = pool.buffers.tryAcquire();
        if (t == RegisteredBufferPool.NO_LEASE) {
          break;
        }
        tokens[taken] = t;
      }
    } catch (IllegalStateException e) {
      // UCX refused to register a slab.
    }
    if (taken < window) {
      for (int i = 0; i < taken; i++) {
        pool.buffers.release(tokens[i]);
      }
      closeIfUnused(pool);
      return declined(Decline.NO_MEMORY);
    }
    pool.reservations++;
    heldByUser.put(user, byUser + window);
    held += window;
    reservations++;
    return new ReadReservation(this, pool, tokens);
  }

  /**
   * Closes the pools idle (no read) for {@code idleNanos} at
   * {@code nowNanos}, and the retired ones past their grace; how many.
   */
  public synchronized int sweep(long nowNanos, long idleNanos) {
    int n = 0;
    for (Iterator<Map.Entry<RegisteredBufferPool, Long>> it =
        retiring.entrySet().iterator(); it.hasNext();) {
      Map.Entry<RegisteredBufferPool, Long> e = it.next();
      if (nowNanos - e.getValue() >= 0) {
        it.remove();
        open.remove(e.getKey());
        e.getKey().close();
        n++;
      }
    }
    for (Iterator<ReaderPool> it = pools.values().iterator(); it.hasNext();) {
      ReaderPool p = it.next();
      if (p.reservations == 0 && nowNanos - p.lastUsedNanos >= idleNanos) {
        it.remove();
        closePool(p);
        n++;
      }
    }
    return n;
  }

  /**
   * Whether SysV segment {@code shmid} is memory of one of these pools: a
   * reader in this very JVM (MiniDFSCluster) may read it.
   */
  public synchronized boolean ownsSegment(int shmid) {
    for (RegisteredBufferPool p : open) {
      if (p.ownsSegment(shmid)) {
        return true;
      }
    }
    return false;
  }

  /** Pools that exist now. */
  public synchronized int readers() {
    return pools.size();
  }

  /** Buffers the reads hold now. */
  public synchronized int held() {
    return held;
  }

  /** Reservations made so far. */
  public synchronized long reservations() {
    return reservations;
  }

  /** Reads declined for {@code why} so far. */
  public synchronized long declines(Decline why) {
    return declines[why.ordinal()];
  }

  /** Reader pools made so far. */
  public synchronized long poolsMade() {
    return poolsMade;
  }

  /** Retired pools waiting for their grace to end. */
  public synchronized int retiring() {
    return retiring.size();
  }

  /** Reader pools retired so far (a read that did not end as agreed). */
  public synchronized long poolsRetired() {
    return poolsRetired;
  }

  /**
   * Declines every later read and closes every pool; memory a read still
   * holds is deregistered when that read ends.
   */
  @Override
  public void close() {
    List<RegisteredBufferPool> all = new ArrayList<>();
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      for (ReaderPool p : pools.values()) {
        p.retired = true;
        all.add(p.buffers);
      }
      all.addAll(retiring.keySet());
      pools.clear();
      retiring.clear();
      open.clear();
    }
    Closeables.closeAll(all);
  }

  private ReadReservation declined(Decline why) {
    declines[why.ordinal()]++;
    return ReadReservation.DECLINED[why.ordinal()];
  }

  /** Closes the least recently used idle pool; whether there was one. */
  private boolean evictIdle() {
    ReaderPool oldest = null;
    for (ReaderPool p : pools.values()) {
      if (p.reservations == 0
          && (oldest == null || p.lastUsedNanos < oldest.lastUsedNanos)) {
        oldest = p;
      }
    }
    if (oldest == null) {
      return false;
    }
    pools.remove(oldest.key);
    closePool(oldest);
    return true;
  }

  private void closeIfUnused(ReaderPool pool) {
    if (pool.reservations == 0 && (pool.retired
        || pool.buffers.metrics().registeredBytes() == 0)) {
      pools.remove(pool.key, pool);
      closePool(pool);
    }
  }

  /** A read leasing {@code tokens} of {@code pool} ended. */
  synchronized void ended(ReaderPool pool, long[] tokens, boolean retire) {
    for (long t : tokens) {
      pool.buffers.release(t);
    }
    pool.reservations--;
    pool.lastUsedNanos = System.nanoTime();
    int window = tokens.length;
    held -= window;
    int byUser = heldByUser.get(pool.user) - window;
    if (byUser == 0) {
      heldByUser.remove(pool.user);
    } else {
      heldByUser.put(pool.user, byUser);
    }
    if (retire && !pool.retired) {
      pool.retired = true;
      pools.remove(pool.key, pool);
      poolsRetired++;
    }
    if (pool.retired && pool.reservations == 0) {
      if (closed) {
        closePool(pool); // no sweep comes any more
      } else {
        retiring.put(pool.buffers, pool.lastUsedNanos + RETIRED_GRACE_NANOS);
      }
    }
  }

  private void closePool(ReaderPool pool) {
    open.remove(pool.buffers);
    pool.buffers.close();
  }

  /**
   * A reader's pool key: the user and a digest of the worker address (the
   * address itself is hundreds of bytes, and only its identity matters).
   */
  static String key(String user, byte[] workerAddress) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update(user.getBytes(StandardCharsets.UTF_8));
      sha.update((byte) 0);
      byte[] d = sha.digest(workerAddress);
      return Base64.getUrlEncoder().withoutPadding().encodeToString(d)
          .substring(0, 22);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("no SHA-256 in this JVM", e);
    }
  }

  /** One reader's pool and the reads it serves now. */
  static final class ReaderPool {
    final String key;
    final String user;
    final RegisteredBufferPool buffers;
    int reservations;
    long lastUsedNanos = System.nanoTime();
    boolean retired;

    ReaderPool(String key, String user, RegisteredBufferPool buffers) {
      this.key = key;
      this.user = user;
      this.buffers = buffers;
    }
  }
}
