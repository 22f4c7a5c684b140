package org.hdfsrdma.hadoop.runtime;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RemoteRegion;

import com.google.common.cache.Cache;
import com.google.common.cache.CacheBuilder;
import com.google.common.cache.RemovalListener;
import com.google.common.cache.RemovalNotification;

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
 * another segment meanwhile.
 */
public final class RegionCache implements Closeable {

  /** Regions read directly stay mapped this long after their last use. */
  static final long IDLE_SECONDS = 30;

  private final TransportNotes notes;
  private final RemoteRegion.Policy policy;
  private final Cache<ByteBuffer, RemoteRegion> direct;

  /**
   * @param policy what a region may be besides what every region passes
   * @param notes where the transports regions are read over are noted
   */
  RegionCache(RemoteRegion.Policy policy, TransportNotes notes) {
    this.notes = notes;
    this.policy = policy;
    this.direct = CacheBuilder.newBuilder()
        .expireAfterAccess(IDLE_SECONDS, TimeUnit.SECONDS)
        .removalListener(new RemovalListener<ByteBuffer, RemoteRegion>() {
          @Override
          public void onRemoval(
              RemovalNotification<ByteBuffer, RemoteRegion> n) {
            n.getValue().release();
          }
        }).build();
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
    RemoteRegion cached = direct.getIfPresent(key);
    if (cached != null) {
      try {
        return cached.retain();
      } catch (IllegalStateException released) {
        direct.invalidate(key);
      }
    }
    RemoteRegion r = RemoteRegion.open(endpoint, a, policy, owner);
    if (r.isDirect()) {
      direct.put(key, r.retain());
    }
    notes.add(r.isDirect() ? role + ": shared memory"
        : role + ": " + r.toString().replaceAll(".*\\((.*)\\)$", "$1"));
    return r;
  }

  /** Unmaps regions idle for too long; the housekeeping thread. */
  public void sweep() {
    direct.cleanUp();
  }

  /** Releases every cached region. Idempotent. */
  @Override
  public void close() {
    direct.invalidateAll();
    direct.cleanUp();
  }
}
