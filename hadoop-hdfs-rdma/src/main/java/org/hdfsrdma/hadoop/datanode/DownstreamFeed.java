package org.hdfsrdma.hadoop.datanode;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;

import org.hdfsrdma.ucx.RegisteredBufferPool;

/**
 * A block receiver's side of feeding the DataNode behind it (chain,
 * hybrid; {@link PacketForwarder} sends): the current packet's landing
 * buffer, held from its fetch until Hadoop mirrors the packet, when it is
 * offered downstream. The fed DataNode fetches from this DataNode's
 * landing buffers, so a packet read directly lands in one too; a buffer
 * the block ends without offering goes back to the pool, and one offered
 * stays the forwarder's until the mirror's ack. With no DataNode to feed,
 * every call does nothing. The block's receiver thread, but for
 * {@link #acked}.
 */
final class DownstreamFeed {

  private final LandingLeases landing;
  /** The DataNode this one feeds, or null. */
  private PacketForwarder forwarder;
  /** The current packet's landing buffer, until offered downstream. */
  private long held = RegisteredBufferPool.NO_LEASE;

  DownstreamFeed(LandingLeases landing) {
    this.landing = landing;
  }

  /** Feeds {@code f} with the block's packets; before the first packet. */
  void feed(PacketForwarder f) {
    this.forwarder = f;
  }

  /** Whether this DataNode feeds another. */
  boolean feeds() {
    return forwarder != null;
  }

  /** Holds {@code token}, the current packet's, for the next DataNode. */
  void hold(long token) {
    held = token;
  }

  /**
   * Copies {@code length} bytes from {@code from} (a direct read, at its
   * position) into a landing buffer held for the next DataNode, and from
   * there to the start of {@code to}.
   */
  void holdCopy(ByteBuffer from, int length, byte[] to)
      throws UcxPathException, InterruptedIOException {
    long token = landing.lease();
    ByteBuffer landed = landing.buffer(token);
    landed.clear();
    from.limit(from.position() + length);
    landed.put(from).flip();
    landed.get(to, 0, length);
    hold(token);
  }

  /**
   * Offers the current packet downstream with the buffer held for it (none
   * for a packet without bytes). A failure is a {@link UcxPathException}.
   */
  void forward(FetchedPacket p) throws IOException {
    if (forwarder == null) {
      return;
    }
    long token = held;
    held = RegisteredBufferPool.NO_LEASE;
    try {
      forwarder.forward(p.seqno, p.offsetInBlock, p.lastPacketInBlock,
          p.syncBlock, p.checksumLength, p.dataLength, token);
    } catch (UcxPathException | InterruptedIOException e) {
      throw e;
    } catch (IOException e) {
      throw new UcxPathException(e.getMessage(), e);
    }
  }

  /** The mirror acked {@code seqno}. The PacketResponder thread. */
  void acked(long seqno) {
    PacketForwarder f = forwarder;
    if (f != null) {
      f.acked(seqno);
    }
  }

  /** Returns the buffer held for the current packet if it was not offered. */
  void releaseUnoffered() {
    long token = held;
    held = RegisteredBufferPool.NO_LEASE;
    if (token != RegisteredBufferPool.NO_LEASE) {
      landing.release(token);
    }
  }

  /** The block is over here: stops feeding. */
  void close() {
    releaseUnoffered();
    if (forwarder != null) {
      forwarder.close();
    }
  }
}
