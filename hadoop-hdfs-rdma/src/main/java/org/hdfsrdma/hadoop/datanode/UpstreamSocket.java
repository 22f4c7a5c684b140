package org.hdfsrdma.hadoop.datanode;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.nio.ByteBuffer;
import java.net.SocketTimeoutException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.net.SocketInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A block's socket from its upstream (client or DataNode), watched while
 * the block waits for descriptors: on the UCX path it carries no packet
 * bytes, so end of stream means the client gave up the pipeline, and
 * packet bytes before any UCX packet mean the client could not use UCX
 * for the pipeline after all (the block then continues on the socket, from
 * {@link #pushedBack}). Where the client offered to write the descriptors
 * on the socket, the first byte may instead begin a descriptor
 * ({@link SocketDescriptors}); then the receiver waits on the socket
 * itself ({@link #awaitReadable}) rather than on UCX.
 */
final class UpstreamSocket {

  private static final Logger LOG =
      LoggerFactory.getLogger(UpstreamSocket.class);

  /** How often a waiting receiver looks at the socket. */
  private static final long CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private final SelectableChannel channel;
  private final String block;
  private final ByteBuffer probe = ByteBuffer.allocate(1);
  /** Waits for the socket with Hadoop's selectors, or null. */
  private final SocketInputStream waiter;
  private boolean carriesTheBlock;
  private boolean carriesDescriptors;

  /**
   * @param channel the socket, non-blocking; null to not watch it
   * @param descriptorsOffered whether the client offered to write the
   *     block's descriptors on it
   */
  UpstreamSocket(SelectableChannel channel, String block,
      boolean descriptorsOffered) {
    this.channel = channel;
    this.block = block;
    this.waiter = channel == null || !descriptorsOffered ? null
        : waiterOn(channel);
  }

  /** A stream that only waits on {@code channel}; never closed. */
  private SocketInputStream waiterOn(SelectableChannel c) {
    try {
      return new SocketInputStream((ReadableByteChannel) c,
          TimeUnit.NANOSECONDS.toMillis(CHECK_NANOS));
    } catch (IOException e) {
      // Watched as where descriptors come over UCX: found, if later.
      LOG.debug("hdfs-rdma: cannot wait on the socket of {}: {}", block,
          e.toString());
      return null;
    }
  }

  /** Whether the receiver waits on the socket first ({@link #awaitReadable}).
   */
  boolean waitsOnSocket() {
    return waiter != null;
  }

  /**
   * Waits up to one check interval for the socket to have something to
   * read; whether it has. Only where {@link #waitsOnSocket}.
   */
  boolean awaitReadable() throws IOException {
    try {
      waiter.waitForReadable();
      return true;
    } catch (SocketTimeoutException e) {
      return false;
    }
  }

  /**
   * How long a receiver that may wait {@code remaining} nanoseconds more
   * waits before it looks at the socket again.
   */
  long slice(long remaining) {
    return channel == null ? remaining : Math.min(remaining, CHECK_NANOS);
  }

  /**
   * Reads at most one byte without waiting: true when the client sends
   * packets over the socket (the byte is kept for {@link #pushedBack});
   * false when there is no socket to watch.
   *
   * @param packetsReceived packets that came over UCX so far
   * @throws IOException at end of stream, or on packet bytes after UCX
   *     packets
   */
  boolean saysSomething(long packetsReceived) throws IOException {
    if (channel == null) {
      return false;
    }
    probe.clear();
    int n = ((ReadableByteChannel) channel).read(probe);
    if (n < 0) {
      throw new EOFException("the upstream of " + block
          + " closed its connection while waiting for packet "
          + packetsReceived + " over UCX");
    }
    if (n == 0) {
      return false;
    }
    if (packetsReceived > 0) {
      throw new IOException("packet bytes on the socket for " + block
          + " after " + packetsReceived + " packets over UCX");
    }
    if (waiter != null
        && (probe.get(0) & 0xff) == SocketDescriptors.FIRST_BYTE) {
      // No packet starts so: its length would be over 1 GiB.
      carriesDescriptors = true;
      return true;
    }
    LOG.info("hdfs-rdma: the upstream of {} sends it over TCP (the client"
        + " could not use UCX for the pipeline)", block);
    carriesTheBlock = true;
    return true;
  }

  /**
   * Whether the byte {@link #saysSomething} read begins the block's first
   * descriptor, not a packet.
   */
  boolean carriesDescriptors() {
    return carriesDescriptors;
  }

  /** The byte {@link #saysSomething} read. */
  int probedByte() {
    return probe.get(0) & 0xff;
  }

  /** Whether the block's packets came on the socket instead of UCX. */
  boolean carriesTheBlock() {
    return carriesTheBlock;
  }

  /** The socket's stream with the byte read while watching put back. */
  InputStream pushedBack(InputStream in) {
    return new SequenceInputStream(
        new ByteArrayInputStream(new byte[] {probe.get(0)}), in);
  }
}
