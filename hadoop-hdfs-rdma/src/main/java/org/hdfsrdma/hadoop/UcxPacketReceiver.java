package org.hdfsrdma.hadoop;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongConsumer;

import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketReceiver;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBuffer;
import org.hdfsrdma.ucx.RegisteredBufferPool;

/**
 * A BlockReceiver's packet source when the block arrives over UCX: each
 * "read" takes the block's next descriptor and fetches the packet from the
 * client's memory with a one-sided get, then presents header, checksums and
 * data exactly as Hadoop's socket PacketReceiver would. Mirroring is a
 * no-op: every DataNode of the pipeline fetches from the client itself.
 *
 * <p>The slices are heap buffers (BlockReceiver writes them to disk through
 * {@code array()}); the get lands in registered memory and is copied out
 * once, as Hadoop's socket path also copies through a buffer.
 */
public class UcxPacketReceiver extends PacketReceiver {

  /** DFSPacket.HEART_BEAT_SEQNO (DFSPacket is package-private). */
  private static final long HEART_BEAT_SEQNO = -1L;

  private final UcxBlockSession session;
  private final RegisteredBufferPool landing;
  private final long timeoutMs;
  private final LongConsumer dataFetched;
  private byte[] packet = new byte[0];
  private PacketHeader header;
  private ByteBuffer checksums = ByteBuffer.allocate(0);
  private ByteBuffer data = ByteBuffer.allocate(0);
  private boolean sawLastPacket;
  private long lastDataSeqno = -1;
  private long bytesFetched;

  /**
   * @param dataFetched told the data bytes (checksums excluded) of every
   *     packet fetched, for the DataNode's counters
   */
  public UcxPacketReceiver(UcxBlockSession session,
      RegisteredBufferPool landing, long timeoutMs, LongConsumer dataFetched) {
    super(false);
    this.session = session;
    this.landing = landing;
    this.timeoutMs = timeoutMs;
    this.dataFetched = dataFetched;
  }

  @Override
  public PacketHeader getHeader() {
    return header;
  }

  @Override
  public ByteBuffer getDataSlice() {
    return data;
  }

  @Override
  public ByteBuffer getChecksumSlice() {
    return checksums;
  }

  /** Packet bytes (checksums and data) this receiver fetched by get. */
  public long bytesFetched() {
    return bytesFetched;
  }

  /** The socket is not read: the packet comes over UCX. */
  @Override
  public void receiveNextPacket(ReadableByteChannel in) throws IOException {
    receiveNext();
  }

  /** The socket is not read: the packet comes over UCX. */
  @Override
  public void receiveNextPacket(InputStream in) throws IOException {
    receiveNext();
  }

  private void receiveNext() throws IOException {
    if (sawLastPacket) {
      throw new IOException("received a packet after the last packet of "
          + session.description());
    }
    UcxBlockSession.Arrival arrival = session.take(timeoutMs);
    PacketDescriptor d = arrival.descriptor();
    boolean heartbeat = d.seqno() == HEART_BEAT_SEQNO;
    if (!heartbeat) {
      if (d.seqno() <= lastDataSeqno) {
        throw new IOException("packet " + d.seqno() + " of "
            + session.description() + " arrived after packet "
            + lastDataSeqno);
      }
      lastDataSeqno = d.seqno();
    }
    int checksumLength = d.checksumLength();
    int dataLength = d.dataLength();
    int length = checksumLength + dataLength;
    if (length > PacketReceiver.MAX_PACKET_SIZE) {
      throw new IOException("packet of " + length + " bytes for "
          + session.description() + " exceeds "
          + PacketReceiver.MAX_PACKET_SIZE);
    }
    if (packet.length < length) {
      packet = new byte[length];
    }
    if (length > 0) {
      fetch(arrival, length);
      dataFetched.accept(dataLength);
    }
    checksums = ByteBuffer.wrap(packet, 0, checksumLength).slice();
    data = ByteBuffer.wrap(packet, checksumLength, dataLength).slice();
    header = new PacketHeader(4 + length, d.offsetInBlock(), d.seqno(),
        d.isLastPacketInBlock(), dataLength, d.isSyncBlock());
    sawLastPacket = d.isLastPacketInBlock();
  }

  private void fetch(UcxBlockSession.Arrival arrival, int length)
      throws IOException {
    RegisteredBuffer target = landing.acquire(timeoutMs);
    try {
      arrival.connection().get(arrival.descriptor(), target, timeoutMs)
          .get(timeoutMs + 1000, TimeUnit.MILLISECONDS);
      ByteBuffer landed = target.buffer();
      landed.limit(length);
      landed.get(packet, 0, length);
      bytesFetched += length;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted fetching a packet of "
          + session.description());
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      throw cause instanceof IOException ? (IOException) cause
          : new IOException("get of a packet of " + session.description()
              + " failed", cause);
    } catch (TimeoutException e) {
      throw new IOException("get of a packet of " + session.description()
          + " did not complete in " + timeoutMs + " ms", e);
    } finally {
      // A failed or timed-out get closed its connection first, so no late
      // completion can land in the buffer once it is back in the pool.
      target.release();
    }
  }

  /** Every DataNode fetches from the client itself: nothing to forward. */
  @Override
  public void mirrorPacketTo(DataOutputStream mirrorOut) {
  }

  @Override
  public void close() {
    session.close();
    super.close();
  }
}
