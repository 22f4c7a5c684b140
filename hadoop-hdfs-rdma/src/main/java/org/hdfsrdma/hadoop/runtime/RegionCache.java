package org.hdfsrdma.hadoop.runtime;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RemoteRegion;

/**
 * The regions this JVM reads from as their owners announce them: a
 * client's exposed packets for its DataNodes' gets, a DataNode's read
 * buffers for its readers. Every region is checked by
 * {@link RemoteRegion#open}; a region read directly (a same-host SysV
 * segment) is mapped once and shared by the blocks and reads that
 * announce it, until it stays unused for {@value #IDLE_SECONDS} s, so that
 * a read of a few KiB does not map and unmap a segment. The announcement
 * is still checked per use: only its exact key and bounds find the
 * mapping, which this JVM's attachment keeps the kernel from handing to
 * another segment meanwhile. At most {@value #MAX_REGIONS} are kept; past
 * that a region serves only the block or read that opened it.
 *
 * <p>No Guava: clients on Hadoop 3's shaded client jars have none on
 * their class path.
 */
public final class RegionCache implements Closeable {

  /** Regions read directly stay mapped this long after their last use. */
  static final long IDLE_SECONDS = 30;
  /** Regions kept mapped at once, at most. */
  static final int MAX_REGIONS = 4096;

  private final TransportNotes notes;
  private final RemoteRegion.Policy policy;
  private final Map<ByteBuffer, Kept> direct = new ConcurrentHashMap<>();

  /** A region the cache holds a reference to, and its last use. */
  private static final class Kept {
    final RemoteRegion region;
    volatile long usedNanos = System.nanoTime();

    Kept(RemoteRegion region) {
      this.region = region;
    }
  }

  /**
   * @param policy what a region may be besides what every region passes
   * @param notes where the transports regions are read over are noted
   */
  RegionCache(RemoteRegion.Policy policy, TransportNotes notes) {
    this.notes = notes;
    this.policy = policy;
  }

  /**
   * Opens a region announced to this JVM (over {@code endpoint}: the one
   * a message handler was handed, or this side's own to the owner): from
   * the cache when a block or read already opened the same directly read
   * region, otherwise through every check of {@link RemoteRegion#open}.
   * The caller releases what it gets.
   *
   * @param owner who announced it, for messages
   * @param role who reads, for the transport notes ("DataNode reads")
   */
  public RemoteRegion open(long endpoint, RegionAnnouncement a, String owner,
      String role) throws IOException {
    byte[] rkey = a.rkey();
    ByteBuffer key = ByteBuffer.allocate(rkey.length + 16);
    key.put(rkey).putLong(a.regionBase()).putLong(a.regionLength()).flip();
    Kept kept = direct.get(key);
    if (kept != null) {
      try {
        RemoteRegion r = kept.region.retain();
        kept.usedNanos = System.nanoTime();
        return r;
      } catch (IllegalStateException released) {
        direct.remove(key, kept);
      }
    }
    RemoteRegion r = RemoteRegion.open(endpoint, a, policy, owner);
    if (r.isDirect() && direct.size() < MAX_REGIONS) {
      Kept mine = new Kept(r.retain());
      if (direct.putIfAbsent(key, mine) != null) {
        r.release(); // another block or read cached it first
      }
    }
    notes.add(r.isDirect() ? role + ": shared memory"
        : role + ": " + r.toString().replaceAll(".*\\((.*)\\)$", "$1"));
    return r;
  }

  /** Unmaps regions idle for too long; the housekeeping thread. */
  public void sweep() {
    long now = System.nanoTime();
    long idle = TimeUnit.SECONDS.toNanos(IDLE_SECONDS);
    for (Iterator<Map.Entry<ByteBuffer, Kept>> it =
        direct.entrySet().iterator(); it.hasNext();) {
      Map.Entry<ByteBuffer, Kept> e = it.next();
      if (now - e.getValue().usedNanos >= idle
          && direct.remove(e.getKey(), e.getValue())) {
        e.getValue().region.release();
      }
    }
  }

  /** Regions kept mapped now. */
  int size() {
    return direct.size();
  }

  /** Releases every cached region. Idempotent. */
  @Override
  public void close() {
    for (Map.Entry<ByteBuffer, Kept> e : direct.entrySet()) {
      if (direct.remove(e.getKey(), e.getValue())) {
        e.getValue().region.release();
      }
    }
  }
}
