package org.hdfsrdma.hadoop.datanode;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RemoteRegion;

import com.google.common.cache.Cache;
import com.google.common.cache.CacheBuilder;
import com.google.common.cache.RemovalListener;
import com.google.common.cache.RemovalNotification;

/**
 * The regions this JVM's DataNodes read from, as their exposers announce
 * them: every region checked by {@link RemoteRegion#open}, and a region
 * read directly (a same-host SysV segment) mapped once and shared by the
 * blocks that announce it, until it stays unused for
 * {@value #IDLE_SECONDS} s.
 */
final class RegionCache implements Closeable {

  /** Regions read directly stay mapped this long after their last use. */
  static final long IDLE_SECONDS = 30;

  private final UcxRuntime runtime;
  private final RemoteRegion.Policy policy;
  private final Cache<ByteBuffer, RemoteRegion> direct;

  RegionCache(UcxRuntime runtime) {
    this.runtime = runtime;
    // A client, or a DataNode feeding the next (chain), in this very JVM
    // (MiniDFSCluster) exposes these; no other memory of this process.
    this.policy = new RemoteRegion.Policy(runtime.pools()::ownsSegment,
        runtime.conf().dataNodeAllowEmulatedGets());
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
   * Opens a region an exposer announced (inside the message handler, where
   * {@code replyEndpoint} is valid): from the cache when a block already
   * opened the same directly read region, otherwise through every check of
   * {@link RemoteRegion#open}.
   */
  RemoteRegion open(long replyEndpoint, RegionAnnouncement a, String block)
      throws IOException {
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
    RemoteRegion r = RemoteRegion.open(replyEndpoint, a, policy,
        "the client of " + block);
    if (r.isDirect()) {
      direct.put(key, r.retain());
    }
    runtime.noteTransport(r.isDirect() ? "DataNode reads: shared memory"
        : "DataNode reads: " + r.toString().replaceAll(".*\\((.*)\\)$", "$1"));
    return r;
  }

  /** Unmaps regions idle for too long; the housekeeping thread. */
  void sweep() {
    direct.cleanUp();
  }

  /** Releases every cached region. Idempotent. */
  @Override
  public void close() {
    direct.invalidateAll();
    direct.cleanUp();
  }
}
