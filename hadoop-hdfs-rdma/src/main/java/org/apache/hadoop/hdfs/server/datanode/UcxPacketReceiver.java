package org.apache.hadoop.hdfs.server.datanode;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;

import org.apache.hadoop.classification.InterfaceAudience;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketReceiver;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.datanode.FetchedPacket;
import org.hdfsrdma.hadoop.datanode.PacketFetcher;
import org.hdfsrdma.hadoop.datanode.UcxPathException;
import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes.Phase;
import org.hdfsrdma.hadoop.protocol.FallbackAck;
import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.slf4j.LoggerFactory;

/**
 * A BlockReceiver's packet source when the block arrives over UCX: Hadoop's
 * {@code PacketReceiver} API over a {@link PacketFetcher}, presenting
 * header, checksums and data exactly as the socket PacketReceiver would.
 * Mirroring offers the packet to a DataNode this one feeds (chain, hybrid)
 * and is otherwise a no-op: every other DataNode fetches for itself.
 *
 * <p>The header and the checksum and data slices are reused while packets
 * keep their size: nothing is allocated per packet. When the client sends
 * the block over the socket after all, the rest of it is read by a stock
 * PacketReceiver. When the UCX path fails the block
 * ({@link UcxPathException}), the DataNode asks the client to continue
 * over TCP with an out-of-band ack upstream ({@link FallbackAck}), and the
 * block ends here as stock's does on a broken socket; the client restarts
 * the pipeline over TCP with every DataNode.
 *
 * <p>Part of the per-release layer: {@code PacketReceiver} and
 * {@code PacketHeader} are Hadoop internals. The static methods are
 * BlockReceiver's hooks.
 */
@InterfaceAudience.Private
public final class UcxPacketReceiver extends PacketReceiver {

  /** A header whose fields are set per packet (no proto, no allocation). */
  private static final class ReusedHeader extends PacketHeader {
    int packetLen;
    long offsetInBlock;
    long seqno;
    boolean lastPacketInBlock;
    int dataLen;
    boolean syncBlock;

    @Override
    public int getDataLen() {
      return dataLen;
    }

    @Override
    public boolean isLastPacketInBlock() {
      return lastPacketInBlock;
    }

    @Override
    public long getSeqno() {
      return seqno;
    }

    @Override
    public long getOffsetInBlock() {
      return offsetInBlock;
    }

    @Override
    public int getPacketLen() {
      return packetLen;
    }

    @Override
    public boolean getSyncBlock() {
      return syncBlock;
    }

    @Override
    public String toString() {
      return "PacketHeader with packetLen=" + packetLen + " offsetInBlock="
          + offsetInBlock + " seqno=" + seqno + " lastPacketInBlock="
          + lastPacketInBlock + " dataLen=" + dataLen + " syncBlock="
          + syncBlock;
    }
  }

  /** Refusals that fail UCX blocks, one line per 10 s at most. */
  private static final RateLimitedLog FALLBACKS = RateLimitedLog.of(
      LoggerFactory.getLogger(UcxPacketReceiver.class));

  private final PacketFetcher fetcher;
  private final BlockReceiver receiver;
  private final ReusedHeader header = new ReusedHeader();
  private ByteBuffer checksums = ByteBuffer.allocate(0);
  private ByteBuffer data = ByteBuffer.allocate(0);
  private int slicedChecksumLength = -1;
  private int slicedDataLength = -1;
  private PacketReceiver overSocket;
  private InputStream pushedBack;
  private UcxCrc32cVerifier verifier;
  private boolean verifierChosen;
  private boolean closed;

  /**
   * @param receiver the block's receiver, whose responder sends the
   *     fallback ack upstream; null where there is none (tests)
   */
  public UcxPacketReceiver(PacketFetcher fetcher, BlockReceiver receiver) {
    super(false);
    this.fetcher = fetcher;
    this.receiver = receiver;
  }

  /** The fetcher behind this receiver. */
  public PacketFetcher fetcher() {
    return fetcher;
  }

  @Override
  public PacketHeader getHeader() {
    return overSocket != null ? overSocket.getHeader() : header;
  }

  @Override
  public ByteBuffer getDataSlice() {
    return overSocket != null ? overSocket.getDataSlice() : data;
  }

  @Override
  public ByteBuffer getChecksumSlice() {
    return overSocket != null ? overSocket.getChecksumSlice() : checksums;
  }

  /** Whether the block's packets came over the socket after all. */
  public boolean isOverSocket() {
    return overSocket != null;
  }

  @Override
  public void receiveNextPacket(ReadableByteChannel in) throws IOException {
    if (overSocket != null) {
      overSocket.receiveNextPacket(in);
      return;
    }
    try {
      fetcher.next(null);
    } catch (UcxPathException e) {
      throw fallBack(e);
    }
    present();
  }

  @Override
  public void receiveNextPacket(InputStream in) throws IOException {
    if (overSocket != null) {
      overSocket.receiveNextPacket(pushedBack != null ? pushedBack : in);
      pushedBack = null;
      return;
    }
    boolean overUcx;
    try {
      overUcx = fetcher.next(in);
    } catch (UcxPathException e) {
      throw fallBack(e);
    }
    if (overUcx) {
      present();
      return;
    }
    overSocket = new PacketReceiver(false);
    overSocket.receiveNextPacket(fetcher.socketStream(in));
  }

  /** Points header and slices at the fetcher's current packet. */
  private void present() {
    FetchedPacket p = fetcher.current();
    int checksumLength = p.checksumLength();
    int dataLength = p.dataLength();
    if (checksumLength != slicedChecksumLength
        || dataLength != slicedDataLength) {
      byte[] packet = p.bytes();
      checksums = ByteBuffer.wrap(packet, 0, checksumLength).slice();
      data = ByteBuffer.wrap(packet, checksumLength, dataLength).slice();
      slicedChecksumLength = checksumLength;
      slicedDataLength = dataLength;
    } else {
      checksums.clear();
      data.clear();
    }
    header.packetLen = 4 + checksumLength + dataLength;
    header.offsetInBlock = p.offsetInBlock();
    header.seqno = p.seqno();
    header.lastPacketInBlock = p.isLastPacketInBlock();
    header.dataLen = dataLength;
    header.syncBlock = p.isSyncBlock();
  }

  /**
   * Where Hadoop mirrors a packet: descriptors that came on the socket go
   * on to the mirror's; a DataNode that feeds another offers it the
   * packet's landing buffer; otherwise nothing.
   */
  @Override
  public void mirrorPacketTo(DataOutputStream mirrorOut) throws IOException {
    if (overSocket != null) {
      overSocket.mirrorPacketTo(mirrorOut);
      return;
    }
    try {
      fetcher.forward(mirrorOut);
    } catch (UcxPathException e) {
      throw fallBack(e);
    }
  }

  /**
   * The UCX path failed this block: asks the client, through the block's
   * responder, to continue over TCP, and returns {@code e} to end the
   * block. The ack is best effort: a client that does not get it sees the
   * block's socket close, as for any failed DataNode.
   */
  private UcxPathException fallBack(UcxPathException e) {
    fetcher.fellBack();
    FALLBACKS.warn(e.getMessage() + "; asking the client to continue over"
        + " TCP");
    if (receiver != null) {
      try {
        receiver.sendOOB(Status.valueOf(FallbackAck.STATUS_NUMBER));
      } catch (IOException x) {
        e.addSuppressed(x);
      } catch (InterruptedException x) {
        Thread.currentThread().interrupt();
        e.addSuppressed(x);
      }
    }
    return e;
  }

  /** Closes the fetcher (its session, its landing buffers). Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      fetcher.close();
    } finally {
      if (overSocket != null) {
        overSocket.close();
      }
      super.close();
    }
  }

  /**
   * BlockReceiver's PacketResponder read its mirror's ack for {@code seqno}
   * (hook): landing buffers offered downstream up to it are free.
   */
  static void downstreamAcked(PacketReceiver receiver, long seqno) {
    if (receiver instanceof UcxPacketReceiver) {
      ((UcxPacketReceiver) receiver).fetcher.downstreamAcked(seqno);
    }
  }

  /**
   * BlockReceiver's checksum verification (hook): for UCX blocks with the
   * JDK's CRC32C where Hadoop would use its pure-Java CRC (see
   * {@link UcxCrc32cVerifier}), timed as the verify phase; otherwise exactly
   * Hadoop's {@code checksum.verifyChunkedSums}.
   */
  static void verifyChunkedSums(PacketReceiver receiver,
      DataChecksum checksum, ByteBuffer data, ByteBuffer sums,
      String fileName) throws ChecksumException {
    if (!(receiver instanceof UcxPacketReceiver)) {
      checksum.verifyChunkedSums(data, sums, fileName, 0);
      return;
    }
    UcxPacketReceiver ucx = (UcxPacketReceiver) receiver;
    if (ucx.verifier == null && !ucx.verifierChosen) {
      ucx.verifier = UcxCrc32cVerifier.forChecksum(checksum);
      ucx.verifierChosen = true;
    }
    if (ucx.verifier != null && data.hasArray() && sums.hasArray()) {
      ucx.verifier.verify(checksum.getBytesPerChecksum(), data, sums,
          fileName);
    } else {
      checksum.verifyChunkedSums(data, sums, fileName, 0);
    }
    ucx.fetcher.mark(Phase.VERIFY);
  }

  /** Hook after BlockReceiver wrote (and flushed) a packet to disk. */
  static void written(PacketReceiver receiver) {
    if (receiver instanceof UcxPacketReceiver) {
      ((UcxPacketReceiver) receiver).fetcher.written();
    }
  }
}
