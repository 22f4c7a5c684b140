package org.hdfsrdma.hadoop.datanode;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.hdfsrdma.hadoop.protocol.SessionIds;
import org.hdfsrdma.hadoop.runtime.RegionCache;
import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.hdfsrdma.ucx.HelloMessage;
import org.hdfsrdma.ucx.MalformedMessageException;
import org.hdfsrdma.ucx.MessageHandler;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RemoteRegion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.google.common.cache.Cache;
import com.google.common.cache.CacheBuilder;

/**
 * The blocks this JVM's DataNodes receive over UCX, by session id, and the
 * UCX message handler that routes every message to its block.
 *
 * <p>Runs inside UCX's callback on whichever thread progresses the worker,
 * one call at a time. A packet descriptor costs no allocation: the session
 * is found in an open-addressing table (copied when a block opens or
 * closes, read without a lock) and the descriptor is copied into the
 * session's ring.
 *
 * <p>Nothing is accepted that does not name an open session: session ids
 * are an HMAC only the authenticated client and the DataNode can compute
 * ({@link SessionIds#of}), so a forged or stale descriptor is dropped and
 * counted. Rejections are counted and logged at most once per
 * {@link RateLimitedLog#INTERVAL_MS} per peer endpoint, with the count of
 * what was suppressed.
 */
public final class SessionTable implements MessageHandler {

  private static final Logger LOG = LoggerFactory.getLogger(SessionTable.class);

  /** An immutable open-addressing map of session id to session. */
  private static final class Index {
    final long[] ids;
    final UcxBlockSession[] sessions;
    final int mask;

    Index(int capacity) {
      ids = new long[capacity];
      sessions = new UcxBlockSession[capacity];
      mask = capacity - 1;
    }

    UcxBlockSession get(long id) {
      if (id == 0) {
        return null;
      }
      int i = (int) mix(id) & mask;
      while (true) {
        long k = ids[i];
        if (k == id) {
          return sessions[i];
        }
        if (k == 0) {
          return null;
        }
        i = (i + 1) & mask;
      }
    }

    void put(UcxBlockSession s) {
      int i = (int) mix(s.sessionId()) & mask;
      while (ids[i] != 0) {
        i = (i + 1) & mask;
      }
      ids[i] = s.sessionId();
      sessions[i] = s;
    }

    private static long mix(long id) {
      return id ^ (id >>> 32) ^ (id >>> 17);
    }
  }

  private final UcxConnections connections;
  private final RegionCache regions;
  private volatile Index index = new Index(16);
  private int open;
  private final PacketDescriptor packet = new PacketDescriptor();
  private final RegionAnnouncement announcement = new RegionAnnouncement();
  private final HelloMessage hello = new HelloMessage();
  private final AtomicLong routed = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  private final Cache<Long, RateLimitedLog> peerLogs = CacheBuilder.newBuilder()
      .maximumSize(1024).expireAfterAccess(10, TimeUnit.MINUTES).build();

  SessionTable(UcxConnections connections, RegionCache regions) {
    this.connections = connections;
    this.regions = regions;
  }

  /**
   * Registers the session of one block.
   *
   * @throws IOException when a session with that id is open already, or
   *     the id is 0
   */
  public synchronized UcxBlockSession open(long sessionId, long blockId,
      long generationStamp, int maxPacketBytes, int maxQueued, int maxRegions,
      String description) throws IOException {
    if (sessionId == 0) {
      throw new IOException("UCX session id of " + description + " is 0");
    }
    UcxBlockSession previous = index.get(sessionId);
    if (previous != null) {
      throw new IOException("UCX session of " + description
          + " collides with the open session of " + previous.description());
    }
    UcxBlockSession session = new UcxBlockSession(this, sessionId, blockId,
        generationStamp, maxPacketBytes, maxQueued, maxRegions, description);
    open++;
    rebuild(session, null);
    return session;
  }

  synchronized void remove(UcxBlockSession session) {
    if (index.get(session.sessionId()) == session) {
      open--;
      rebuild(null, session);
    }
  }

  /** Copies the index with {@code add} and without {@code drop}. */
  private void rebuild(UcxBlockSession add, UcxBlockSession drop) {
    Index old = index;
    int capacity = 16;
    while (capacity < open * 4) {
      capacity <<= 1;
    }
    Index next = new Index(capacity);
    for (UcxBlockSession s : old.sessions) {
      if (s != null && s != drop) {
        next.put(s);
      }
    }
    if (add != null) {
      next.put(add);
    }
    index = next;
  }

  /** Sessions open now. */
  public synchronized int size() {
    return open;
  }

  /** Messages handed to a session. */
  public long routedCount() {
    return routed.get();
  }

  /** Messages dropped: malformed, for no open session, or refused by one. */
  public long rejectedCount() {
    return rejected.get();
  }

  @Override
  public void onMessage(ByteBuffer message, int length, long replyEndpoint) {
    int type = PacketDescriptor.typeOf(message, length);
    try {
      if (type == PacketDescriptor.TYPE) {
        onPacket(message, length, replyEndpoint);
      } else if (type == RegionAnnouncement.TYPE) {
        onRegion(message, length, replyEndpoint);
      } else if (type == HelloMessage.TYPE) {
        connections.onHello(
            hello.wrap(message, 0, length).validate().address(),
            replyEndpoint);
        routed.incrementAndGet();
      } else {
        reject(replyEndpoint, "message of unknown type " + type + " ("
            + length + " bytes)", null);
      }
    } catch (MalformedMessageException e) {
      reject(replyEndpoint, e.getMessage(), null);
    } catch (IOException | RuntimeException e) {
      reject(replyEndpoint, e.toString(), null);
    }
  }

  private void onPacket(ByteBuffer message, int length, long replyEndpoint)
      throws MalformedMessageException {
    packet.wrap(message, 0).validate(length);
    UcxBlockSession s = index.get(packet.session());
    if (s == null) {
      reject(replyEndpoint, "descriptor for no open session", null);
      return;
    }
    String refusal = s.bind(replyEndpoint);
    if (refusal == null) {
      refusal = s.offer(packet);
    }
    if (refusal != null) {
      reject(replyEndpoint, refusal, s);
      return;
    }
    routed.incrementAndGet();
  }

  private void onRegion(ByteBuffer message, int length, long replyEndpoint)
      throws IOException {
    announcement.wrap(message, 0, length).validate();
    UcxBlockSession s = index.get(announcement.session());
    if (s == null) {
      reject(replyEndpoint, "region announcement for no open session", null);
      return;
    }
    String refusal = s.bind(replyEndpoint);
    if (refusal == null && s.failure() != null) {
      // No more work for a client whose block already failed.
      refusal = "region for " + s.description() + ", which failed";
    }
    if (refusal != null) {
      reject(replyEndpoint, refusal, s);
      return;
    }
    RemoteRegion region;
    try {
      region = regions.open(replyEndpoint, announcement,
          "the client of " + s.description(), "DataNode reads");
    } catch (IOException e) {
      reject(replyEndpoint, s.fail(e.getMessage()), s);
      return;
    }
    refusal = s.addRegion(announcement.regionId(), region);
    if (refusal != null) {
      reject(replyEndpoint, refusal, s);
      return;
    }
    routed.incrementAndGet();
  }

  /** Counts a rejection and logs it, at most once per interval per peer. */
  private void reject(long endpoint, String why, UcxBlockSession session) {
    rejected.incrementAndGet();
    RateLimitedLog log = peerLogs.getIfPresent(endpoint);
    if (log == null) {
      log = RateLimitedLog.of(LOG);
      peerLogs.put(endpoint, log);
    }
    log.warn("hdfs-rdma: refused a UCX message from endpoint 0x"
        + Long.toHexString(endpoint) + (session == null ? ""
            : " (" + session.description() + ")") + ": " + why);
  }
}
