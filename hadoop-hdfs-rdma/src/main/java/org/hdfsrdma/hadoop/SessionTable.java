package org.hdfsrdma.hadoop;

import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.hdfsrdma.ucx.DescriptorHandler;
import org.hdfsrdma.ucx.MalformedDescriptorException;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.UcxConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The blocks this JVM's DataNodes are receiving over UCX, by session id,
 * and the worker's descriptor handler that routes each arriving descriptor
 * to its block. A descriptor for no known session (an old generation
 * stamp, a closed block, a stranger) is dropped and counted.
 */
public final class SessionTable implements DescriptorHandler {

  private static final Logger LOG = LoggerFactory.getLogger(SessionTable.class);

  private final ConcurrentHashMap<Long, UcxBlockSession> sessions =
      new ConcurrentHashMap<Long, UcxBlockSession>();
  private final AtomicLong routed = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();

  /**
   * Registers the session of one block.
   *
   * @throws IOException when a session with that id is open already
   */
  public UcxBlockSession open(long sessionId, long blockId,
      long generationStamp, int maxQueued, String description)
      throws IOException {
    UcxBlockSession session = new UcxBlockSession(this, sessionId, blockId,
        generationStamp, maxQueued, description);
    UcxBlockSession previous = sessions.putIfAbsent(sessionId, session);
    if (previous != null) {
      throw new IOException("UCX session of " + description
          + " collides with the open session of " + previous.description());
    }
    return session;
  }

  void remove(UcxBlockSession session) {
    sessions.remove(session.sessionId(), session);
  }

  /** Sessions open now. */
  public int size() {
    return sessions.size();
  }

  /** Descriptors handed to a session. */
  public long routedCount() {
    return routed.get();
  }

  /** Descriptors that matched no open session, or were refused by one. */
  public long droppedCount() {
    return dropped.get();
  }

  @Override
  public void onDescriptor(UcxConnection from, PacketDescriptor descriptor) {
    UcxBlockSession session = sessions.get(descriptor.session());
    String refusal = session == null ? "no open session"
        : session.offer(from, descriptor);
    if (refusal == null) {
      routed.incrementAndGet();
      return;
    }
    dropped.incrementAndGet();
    LOG.debug("Dropped {} from {}: {}", descriptor, from.peer(), refusal);
  }

  @Override
  public void onMalformed(UcxConnection from,
      MalformedDescriptorException error) {
    dropped.incrementAndGet();
  }
}
