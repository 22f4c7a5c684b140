package org.hdfsrdma.hadoop.client;

import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ReadableByteChannel;

import org.hdfsrdma.hadoop.metrics.ClientReads;
import org.hdfsrdma.hadoop.protocol.ReadAnswer;
import org.hdfsrdma.hadoop.runtime.RegionCache;
import org.hdfsrdma.hadoop.util.LogOnce;
import org.hdfsrdma.ucx.MessageHeader;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.ReadCredit;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.UcxEndpoint;

/**
 * The channel a block reader reads a UCX read's packets from (DESIGN.md
 * section 9): to the reader it is the socket, delivering the stock packets
 * byte for byte, so Hadoop's own parsing and checksum verification run
 * unchanged; underneath, the DataNode's descriptors on the socket name
 * buffers of its registered memory, which this channel takes (read
 * directly from a same-host DataNode's shared memory, or with a get into a
 * landing buffer of its own), and each buffer taken is credited back on
 * the socket. Stock packets the DataNode writes to the socket instead pass
 * through. A buffer a get brought that fails its checksums is read again
 * as stock packets ({@link PacketVerifier}): Hadoop reports a replica
 * only for what TCP delivered too.
 *
 * <p>Every message is checked against what this side knows (the read id,
 * the next buffer's number, the regions announced for this read, the
 * answer's buffer size) before it is used; anything else fails the read
 * with an IOException naming the DataNode, and Hadoop tries the next
 * replica. One reader thread; per buffer no allocation.
 */
public final class ReadChannel implements ReadableByteChannel {

  /** Most regions one read may announce: one per buffer of its window. */
  private final int maxRegions;
  private final ReadableByteChannel socket;
  private final OutputStream credits;
  private final UcxEndpoint endpoint;
  private final RegionCache regionCache;
  private final ReadAnswer answer;
  private final long blockId;
  private final String description;
  private final ClientReads counters;
  /** Tells the runtime's back-off that UCX failed a read of this node. */
  private final Runnable fellBackHook;
  /** Checks what gets bring before it is credited. */
  private final PacketVerifier verifier;

  private final ByteBuffer message = ByteBuffer.allocate(
      Math.max(RegionAnnouncement.MAX_LENGTH, PacketDescriptor.LENGTH))
      .order(ByteOrder.BIG_ENDIAN);
  private final PacketDescriptor descriptor = new PacketDescriptor();
  private final RegionAnnouncement announcement = new RegionAnnouncement();
  private final byte[] creditBytes = new byte[ReadCredit.LENGTH];
  private final ReadCredit credit =
      new ReadCredit().wrap(ByteBuffer.wrap(creditBytes), 0);
  private final int[] regionIds;
  private final RemoteRegion[] regions;
  private int regionCount;

  /** The stock bytes a packet's first read took off the socket. */
  private final ByteBuffer stockHead =
      (ByteBuffer) ByteBuffer.allocate(6).limit(0);
  private long stockRemaining;

  /** What is left of the buffer being delivered, or null. */
  private ByteBuffer current;
  private long currentSeqno = -1;
  private boolean currentLast;
  private boolean creditOwed;
  private long nextSeqno;
  private boolean ended;
  /** UCX failed this read: the DataNode sends the rest as stock packets. */
  private boolean fellBack;

  /** The read's gets; null without an endpoint. */
  private final LandingGet gets;
  private boolean closed;

  /**
   * @param socket the socket's channel the reader read from
   * @param credits the socket's output
   * @param landing where gets land (buffers of at least the answer's
   *     packet bytes)
   */
  ReadChannel(ReadableByteChannel socket, OutputStream credits,
      UcxEndpoint endpoint, RegionCache regionCache, ReadAnswer answer,
      long blockId, RegisteredBufferPool landing, long timeoutMs,
      ClientReads counters, Runnable fellBackHook, PacketVerifier verifier,
      String description) {
    this.socket = socket;
    this.credits = credits;
    this.endpoint = endpoint;
    this.regionCache = regionCache;
    this.answer = answer;
    this.blockId = blockId;
    this.counters = counters;
    this.fellBackHook = fellBackHook;
    this.verifier = verifier;
    this.description = description;
    this.maxRegions = answer.getWindow();
    this.regionIds = new int[maxRegions];
    this.regions = new RemoteRegion[maxRegions];
    this.gets = endpoint == null ? null
        : new LandingGet(endpoint, landing, timeoutMs);
  }

  /**
   * The channel of an answered read that UCX cannot take at all (no
   * connection to the DataNode, an answer that does not fit the offer): it
   * asks for stock packets at once, and Hadoop reads them as from any
   * DataNode.
   */
  static ReadChannel fallenBack(ReadableByteChannel socket,
      OutputStream credits, ReadAnswer answer, long blockId,
      ClientReads counters, Runnable fellBackHook, String description,
      String why) throws IOException {
    ReadChannel c = new ReadChannel(socket, credits, null, null, answer,
        blockId, null, 0, counters, fellBackHook, null, description);
    c.fallBack(why, true);
    return c;
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    if (closed) {
      throw new IOException("hdfs-rdma: " + description + " is closed");
    }
    if (!dst.hasRemaining()) {
      return 0;
    }
    while (true) {
      if (current != null) {
        int n = Math.min(dst.remaining(), current.remaining());
        int limit = current.limit();
        current.limit(current.position() + n);
        dst.put(current);
        current.limit(limit);
        if (!current.hasRemaining()) {
          delivered();
        }
        return n;
      }
      if (stockHead.hasRemaining()) {
        int n = Math.min(dst.remaining(), stockHead.remaining());
        for (int i = 0; i < n; i++) {
          dst.put(stockHead.get());
        }
        return n;
      }
      if (stockRemaining > 0) {
        int limit = dst.limit();
        if (dst.remaining() > stockRemaining) {
          dst.limit(dst.position() + (int) stockRemaining);
        }
        int n;
        try {
          n = socket.read(dst);
        } finally {
          dst.limit(limit);
        }
        if (n > 0) {
          stockRemaining -= n;
        }
        return n;
      }
      if (ended) {
        throw new IOException("hdfs-rdma: " + description + " read past"
            + " its last buffer");
      }
      nextUnit();
    }
  }

  /** Reads what comes next on the socket: a message or a stock packet. */
  private void nextUnit() throws IOException {
    message.clear();
    fill(message, 4);
    int first = message.getInt(0);
    if (first != MessageHeader.MAGIC) {
      // A stock packet: its 4-byte length (itself included), then the
      // 2-byte header length, then the rest.
      stockHead.clear();
      stockHead.putInt(first);
      fill(message, 6);
      short headerLen = message.getShort(4);
      stockHead.putShort(headerLen);
      if (first < 4 || headerLen < 0) {
        throw new IOException("hdfs-rdma: " + description + ": a stock"
            + " packet of length " + first + ", header " + headerLen);
      }
      stockHead.flip();
      stockRemaining = (long) first - 4 + headerLen;
      return;
    }
    fill(message, MessageHeader.LENGTH);
    int type = PacketDescriptor.typeOf(message, MessageHeader.LENGTH);
    if (type == RegionAnnouncement.TYPE) {
      fill(message, RegionAnnouncement.RKEY_LENGTH_OFFSET + 2);
      int rkeyLength = message.getShort(
          RegionAnnouncement.RKEY_LENGTH_OFFSET) & 0xffff;
      if (rkeyLength < 1 || rkeyLength > RegionAnnouncement.MAX_RKEY_LENGTH) {
        throw bad("a region announcement with a key of " + rkeyLength
            + " bytes");
      }
      fill(message, RegionAnnouncement.encodedLength(rkeyLength));
      if (!fellBack) { // after a fallback its buffers come as stock packets
        region(announcement.wrap(message, 0,
            RegionAnnouncement.encodedLength(rkeyLength)));
      }
    } else if (type == PacketDescriptor.TYPE) {
      fill(message, PacketDescriptor.LENGTH);
      if (!fellBack) {
        take(descriptor.wrap(message, 0));
      }
    } else {
      throw bad("a message of type " + type);
    }
  }

  /** Checks and opens a region the DataNode announced for this read. */
  private void region(RegionAnnouncement a) throws IOException {
    a.validate();
    if (a.session() != answer.getReadId()) {
      throw bad("a region of another read");
    }
    if (regionCount == maxRegions || find(a.regionId()) != null) {
      throw bad("region " + a.regionId() + " announced again or past "
          + maxRegions);
    }
    RemoteRegion r;
    try {
      r = regionCache.open(endpoint.handle(), a,
          answer.getDataNode().getXferAddr(), "client reads");
    } catch (IOException | RuntimeException e) {
      fallBack("region " + a.regionId() + " refused: " + e.getMessage(),
          true);
      return;
    }
    regionIds[regionCount] = a.regionId();
    regions[regionCount++] = r;
  }

  private RemoteRegion find(int regionId) {
    for (int i = 0; i < regionCount; i++) {
      if (regionIds[i] == regionId) {
        return regions[i];
      }
    }
    return null;
  }

  /** Checks a descriptor and makes its buffer the one delivered. */
  private void take(PacketDescriptor d) throws IOException {
    d.validate(PacketDescriptor.LENGTH);
    long length = d.packetLength();
    String wrong = d.session() != answer.getReadId() ? "a descriptor of"
        + " another read"
        : d.seqno() != nextSeqno ? "buffer " + d.seqno() + " where "
            + nextSeqno + " was next"
        : d.blockId() != blockId ? "a buffer of block " + d.blockId()
        : d.checksumLength() != 0
            || length < (d.isLastPacketInBlock() ? 0 : 1)
            || length > answer.getPacketBytes() ? "a buffer of "
            + length + " bytes (at most " + answer.getPacketBytes() + ")"
        : null;
    if (wrong != null) {
      throw bad(wrong);
    }
    if (length == 0) { // an empty last buffer: nothing to take
      credit(nextSeqno++, ReadCredit.FLAG_FINAL, true);
      ended = true;
      return;
    }
    RemoteRegion r = find(d.regionId());
    if (r == null || !r.contains(d.address(), length)) {
      throw bad("a buffer outside the regions it announced");
    }
    boolean last = d.isLastPacketInBlock();
    if (r.isDirect()) {
      ByteBuffer view = r.reader();
      int at = (int) (d.address() - r.base());
      view.limit(at + (int) length).position(at);
      current = view;
      creditOwed = true;
      counters.read(length, true);
    } else {
      long seqno = d.seqno();
      String failed = gets.get(r, d.address(), (int) length);
      if (failed != null) {
        fallBack(failed, true);
        return;
      }
      String damaged = gets.damage(verifier, (int) length);
      if (damaged != null) { // uncredited: the DataNode can send it again
        counters.failedVerification();
        fallBack("buffer " + seqno + " arrived by get with " + damaged,
            false);
        return;
      }
      current = gets.view();
      current.clear().limit((int) length);
      // The DataNode's buffer is ours no more: its bytes landed here.
      credit(seqno, ReadCredit.FLAG_FINAL, last);
      counters.read(length, false);
    }
    currentSeqno = nextSeqno++;
    currentLast = last;
    ended = last;
  }

  /**
   * UCX cannot take this read's next buffer: asks the DataNode for the
   * rest as stock packets on the socket (messages already on their way are
   * skipped), which Hadoop then reads as from any DataNode. Only when
   * {@code ucxFailed} (not for a checksum) is the DataNode backed off.
   */
  private void fallBack(String why, boolean ucxFailed) throws IOException {
    fellBack = true;
    current = null;
    counters.fellBack();
    if (ucxFailed) {
      fellBackHook.run();
    }
    LogOnce.warn("read-fallback", "hdfs-rdma: " + description
        + " continues with stock packets: " + why);
    credit(nextSeqno, ReadCredit.FLAG_FALLBACK, true);
  }

  /** The buffer being delivered is all read: credit a direct one. */
  private void delivered() throws IOException {
    current = null;
    if (creditOwed) {
      creditOwed = false;
      credit(currentSeqno, ReadCredit.FLAG_FINAL, currentLast);
    }
  }

  /** Sends a credit for {@code seqno}, with {@code flag} when {@code set}. */
  private void credit(long seqno, int flag, boolean set) throws IOException {
    credit.encode(answer.getReadId(), set ? flag : 0, seqno);
    credits.write(creditBytes);
    credits.flush();
  }

  /** Fills {@code buf} from the socket up to {@code upTo} bytes. */
  private void fill(ByteBuffer buf, int upTo) throws IOException {
    buf.limit(upTo);
    fillFrom(buf);
  }

  private void fillFrom(ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      if (socket.read(buf) < 0) {
        throw new EOFException("hdfs-rdma: " + description + ": the"
            + " DataNode closed the connection");
      }
    }
  }

  private IOException bad(String what) {
    return new IOException("hdfs-rdma: " + description + ": the DataNode"
        + " sent " + what);
  }

  @Override
  public boolean isOpen() {
    return !closed && socket.isOpen();
  }

  /**
   * Releases what the read holds (regions, its landing buffer); the socket
   * is the block reader's to close. Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    current = null;
    for (int i = 0; i < regionCount; i++) {
      regions[i].release();
      regions[i] = null;
    }
    regionCount = 0;
    if (gets != null) {
      gets.close();
    }
  }
}
