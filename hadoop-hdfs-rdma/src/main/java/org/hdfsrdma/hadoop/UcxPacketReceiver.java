package org.hdfsrdma.hadoop;

import java.io.ByteArrayInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketReceiver;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.PacketPhaseTimes.Phase;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A BlockReceiver's packet source when the block arrives over UCX: each
 * "read" takes the block's next descriptor and fetches the packet from the
 * client's memory, then presents header, checksums and data exactly as
 * Hadoop's socket PacketReceiver would. Mirroring is a no-op: every
 * DataNode of the pipeline fetches from the client itself.
 *
 * <p><b>One thread, no hand-over.</b> The BlockReceiver thread is a driver
 * of the UCX worker ({@link UcxWorker#drive}): it progresses the worker
 * itself, so a descriptor that arrived while it wrote the previous packet
 * is simply there, and when it must wait it sleeps in the worker's event
 * wait, woken by the client's message. Same-host shared memory regions are
 * read directly into the packet's heap buffer (one copy, as a socket read
 * makes one); other regions are fetched with gets (up to
 * {@code dfs.datanode.rdma.gets-in-flight} ahead, overlapping verify and
 * disk write) into registered landing buffers, then copied. The header and
 * the checksum and data slices are reused while packets keep their size:
 * nothing is allocated per packet.
 *
 * <p>In a chain or hybrid pipeline this DataNode may feed another
 * ({@link PacketForwarder}): then every packet is fetched into a landing
 * buffer, which is offered downstream where Hadoop would mirror the packet
 * ({@link #mirrorPacketTo}) and stays leased until the mirror's ack
 * ({@link #downstreamAcked}).
 *
 * <p>While waiting it watches the block's socket, which carries no packet
 * bytes on the UCX path: end of stream means the client gave up the
 * pipeline (fail now, as a socket read would), and packet bytes before any
 * UCX packet mean the client could not use UCX for the pipeline after all:
 * the rest of the block is read (and mirrored) exactly as stock.
 */
public class UcxPacketReceiver extends PacketReceiver {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxPacketReceiver.class);

  /** How often a waiting receiver looks at the socket. */
  private static final long SOCKET_CHECK_MS = 20;

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

  /** Whether the get of one window entry is over; reused. */
  private final class GetDone implements UcxWorker.Readiness {
    int slot;

    @Override
    public boolean isReady() {
      return !gets.inProgress(slot);
    }
  }

  private final GetDone getDone = new GetDone();
  private final UcxBlockSession session;
  private final UcxRuntime runtime;
  private final UcxWorker worker;
  private final UcxWorker.Driver driver;
  private final long timeoutMs;
  private final SelectableChannel socket;
  private final String dataNode;
  private final PacketPhaseTimes times;
  private final byte[] packet;
  private final ReusedHeader header = new ReusedHeader();
  private final ByteBuffer probe = ByteBuffer.allocate(1);
  private final ByteBuffer[] readers;
  // Descriptors taken from the session, oldest first, with their gets.
  private final int window;
  private final ByteBuffer taken;
  private final PacketDescriptor descriptor = new PacketDescriptor();
  private final long[] landingTokens;
  private final StatusSlots gets;
  private int first;
  private int count;
  private ByteBuffer checksums = ByteBuffer.allocate(0);
  private ByteBuffer data = ByteBuffer.allocate(0);
  private int slicedChecksumLength = -1;
  private int slicedDataLength = -1;
  private UcxConnections.Connection connection;
  /** The DataNode this one feeds (chain, hybrid), or null. */
  private PacketForwarder forwarder;
  /** The current packet's landing buffer, until offered downstream. */
  private long toForward = RegisteredBufferPool.NO_LEASE;
  private int forwardChecksumLength;
  /** When the current packet's descriptor was there, or 0. */
  private long busyFrom;
  /** Time from descriptor to disk write, summed over the block. */
  private long busyNanos;
  private boolean sawLastPacket;
  private long packetsReceived;
  private long bytesFetched;
  private PacketReceiver overSocket;
  private Crc32cVerifier verifier;
  private boolean verifierChosen;
  private InputStream pushedBack;
  private boolean closed;
  // Phase timers: the last mark and when.
  private long lastMarkNanos;
  private Phase lastMark;

  /**
   * Created on the thread that will read the block (it becomes a driver of
   * the worker).
   *
   * @param socketChannel the block's socket from the upstream node or
   *     client, to watch while waiting; null to not watch it
   * @param dataNode the DataNode's transfer address, for its counters
   * @param times where packet phases are timed, or null for no timing
   */
  public UcxPacketReceiver(UcxBlockSession session, UcxRuntime runtime,
      RdmaConf conf, ReadableByteChannel socketChannel, String dataNode,
      PacketPhaseTimes times) {
    super(false);
    this.session = session;
    this.runtime = runtime;
    this.worker = runtime.worker();
    this.timeoutMs = conf.getTimeoutMs();
    this.socket = watchable(socketChannel);
    this.dataNode = dataNode;
    this.times = times;
    this.packet = new byte[session.maxPacketBytes()];
    this.readers = new ByteBuffer[conf.maxRegionsPerBlock() + 1];
    this.window = conf.getsInFlight();
    this.taken = ByteBuffer.allocate(window * PacketDescriptor.LENGTH)
        .order(ByteOrder.BIG_ENDIAN);
    this.landingTokens = new long[window];
    java.util.Arrays.fill(landingTokens, RegisteredBufferPool.NO_LEASE);
    this.gets = new StatusSlots(window);
    // A get still under way when this receiver is dropped completes later.
    worker.keepWhileInFlight(this, null, gets);
    this.driver = worker.registerDriver();
    session.setDriver(driver);
  }

  /** The raw channel under Hadoop's socket stream, if it can be polled. */
  private static SelectableChannel watchable(ReadableByteChannel channel) {
    if (channel instanceof org.apache.hadoop.net.SocketInputStream) {
      channel = ((org.apache.hadoop.net.SocketInputStream) channel)
          .getChannel();
    }
    if (channel instanceof SelectableChannel
        && !((SelectableChannel) channel).isBlocking()) {
      return (SelectableChannel) channel;
    }
    return null;
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

  /**
   * Makes this DataNode feed another with the block's packets (chain,
   * hybrid); before the first packet.
   */
  public void feed(PacketForwarder f) {
    this.forwarder = f;
  }

  /**
   * BlockReceiver's PacketResponder read its mirror's ack for {@code seqno}
   * (hook): landing buffers offered downstream up to it are free.
   */
  public static void downstreamAcked(PacketReceiver receiver, long seqno) {
    if (receiver instanceof UcxPacketReceiver) {
      PacketForwarder f = ((UcxPacketReceiver) receiver).forwarder;
      if (f != null) {
        f.acked(seqno);
      }
    }
  }

  /** Packet bytes (checksums and data) this receiver fetched over UCX. */
  public long bytesFetched() {
    return bytesFetched;
  }

  /** Packets this receiver presented from UCX. */
  public long packetsReceived() {
    return packetsReceived;
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
    receiveNext(null);
  }

  @Override
  public void receiveNextPacket(InputStream in) throws IOException {
    if (overSocket != null) {
      overSocket.receiveNextPacket(pushedBack != null ? pushedBack : in);
      pushedBack = null;
      return;
    }
    if (receiveNext(in) && overSocket != null) {
      overSocket.receiveNextPacket(pushedBack);
      pushedBack = null;
    }
  }

  /**
   * BlockReceiver's checksum verification (hook): for UCX blocks with the
   * JDK's CRC32C where Hadoop would use its pure-Java CRC (see
   * {@link Crc32cVerifier}), timed as the verify phase; otherwise exactly
   * Hadoop's {@code checksum.verifyChunkedSums}.
   */
  public static void verifyChunkedSums(PacketReceiver receiver,
      DataChecksum checksum, ByteBuffer data, ByteBuffer sums,
      String fileName) throws ChecksumException {
    if (!(receiver instanceof UcxPacketReceiver)) {
      checksum.verifyChunkedSums(data, sums, fileName, 0);
      return;
    }
    UcxPacketReceiver ucx = (UcxPacketReceiver) receiver;
    if (ucx.verifier == null && !ucx.verifierChosen) {
      ucx.verifier = Crc32cVerifier.forChecksum(checksum);
      ucx.verifierChosen = true;
    }
    if (ucx.verifier != null && data.hasArray() && sums.hasArray()) {
      ucx.verifier.verify(checksum.getBytesPerChecksum(), data, sums,
          fileName);
    } else {
      checksum.verifyChunkedSums(data, sums, fileName, 0);
    }
    ucx.mark(Phase.VERIFY);
  }

  /** Hook after BlockReceiver wrote (and flushed) a packet to disk. */
  public static void written(PacketReceiver receiver) {
    if (receiver instanceof UcxPacketReceiver) {
      UcxPacketReceiver ucx = (UcxPacketReceiver) receiver;
      ucx.mark(Phase.DISK);
      if (ucx.busyFrom != 0) {
        ucx.busyNanos += System.nanoTime() - ucx.busyFrom;
        ucx.busyFrom = 0;
      }
    }
  }

  private void mark(Phase phase) {
    if (times != null && lastMark != null) {
      long now = System.nanoTime();
      times.add(phase, now - lastMarkNanos);
      lastMarkNanos = now;
      lastMark = phase;
    }
  }

  /**
   * Presents the next packet. Returns true when, instead, the client
   * turned out to send the block over the socket (then
   * {@link #overSocket} reads it, {@link #pushedBack} first).
   */
  private boolean receiveNext(InputStream in) throws IOException {
    long entered = times == null ? 0 : System.nanoTime();
    if (times != null && lastMark != null) {
      times.add(Phase.OTHER, entered - lastMarkNanos);
      lastMark = null;
    }
    if (sawLastPacket) {
      throw new IOException("received a packet after the last packet of "
          + session.description());
    }
    releaseUnforwarded();
    if (count == 0) {
      if (!awaitDescriptor(in)) {
        return true;
      }
    } else {
      // Move what arrived meanwhile out of UCX's shared-memory receive
      // queue (64 messages, shared by all clients) into the session: only
      // progress empties it, and a full queue stalls the client's sends.
      worker.progress();
    }
    // From here to the packet's disk write this DataNode is the pipeline's
    // limit, not its upstream: what its ingest rate is measured over.
    busyFrom = System.nanoTime();
    topUp();
    if (times != null) {
      times.add(Phase.DESCRIPTOR_WAIT, System.nanoTime() - entered);
    }
    int entry = first;
    descriptor.wrap(taken, entry * PacketDescriptor.LENGTH);
    int checksumLength = descriptor.checksumLength();
    int dataLength = descriptor.dataLength();
    int length = checksumLength + dataLength;
    if (length > 0) {
      fetch(entry, length);
      bytesFetched += length;
      runtime.countFetched(dataNode, dataLength,
          (descriptor.flags() & PacketDescriptor.FLAG_FORWARDED) != 0);
    }
    forwardChecksumLength = checksumLength;
    if (checksumLength != slicedChecksumLength
        || dataLength != slicedDataLength) {
      checksums = ByteBuffer.wrap(packet, 0, checksumLength).slice();
      data = ByteBuffer.wrap(packet, checksumLength, dataLength).slice();
      slicedChecksumLength = checksumLength;
      slicedDataLength = dataLength;
    } else {
      checksums.clear();
      data.clear();
    }
    header.packetLen = 4 + length;
    header.offsetInBlock = descriptor.offsetInBlock();
    header.seqno = descriptor.seqno();
    header.lastPacketInBlock = descriptor.isLastPacketInBlock();
    header.dataLen = dataLength;
    header.syncBlock = descriptor.isSyncBlock();
    sawLastPacket = header.lastPacketInBlock;
    first = (first + 1) % window;
    count--;
    packetsReceived++;
    if (connection == null && packetsReceived == 1) {
      connection = runtime.connections().get(session.boundEndpoint());
      UcxConnections.bound(connection);
    }
    if (times != null) {
      lastMarkNanos = System.nanoTime();
      lastMark = Phase.COPY;
    }
    return false;
  }

  /** Copies the packet of window entry {@code entry} into the heap buffer. */
  private void fetch(int entry, int length) throws IOException {
    RemoteRegion region = session.region(descriptor.regionId());
    if (region.isDirect()) {
      long copyFrom = times == null ? 0 : System.nanoTime();
      ByteBuffer reader = readers[descriptor.regionId()];
      if (reader == null) {
        reader = region.reader();
        readers[descriptor.regionId()] = reader;
      }
      reader.limit(reader.capacity());
      reader.position((int) (descriptor.address() - region.base()));
      if (forwarder == null) {
        reader.get(packet, 0, length);
      } else {
        // The DataNode fed next reads the packet from this one's memory.
        long token = leaseLanding();
        ByteBuffer landed = runtime.landingPool().buffer(token);
        landed.clear();
        reader.limit(reader.position() + length);
        landed.put(reader).flip();
        landed.get(packet, 0, length);
        toForward = token;
      }
      if (times != null) {
        times.add(Phase.COPY, System.nanoTime() - copyFrom);
      }
      return;
    }
    long waitFrom = times == null ? 0 : System.nanoTime();
    int slot = entry;
    getDone.slot = slot;
    if (!worker.drive(driver, getDone,
        TimeUnit.MILLISECONDS.toNanos(timeoutMs))) {
      throw new SocketTimeoutException("the get of a packet of "
          + session.description() + " did not complete in " + timeoutMs
          + " ms");
    }
    int status = gets.status(slot);
    RegisteredBufferPool landing = runtime.landingPool();
    long token = landingTokens[entry];
    landingTokens[entry] = RegisteredBufferPool.NO_LEASE;
    try {
      if (status != 0) {
        throw new IOException("hdfs-rdma: the get of a packet of "
            + session.description() + " failed: "
            + StatusSlots.describe(status));
      }
      long copyFrom = 0;
      if (times != null) {
        copyFrom = System.nanoTime();
        times.add(Phase.GET_WAIT, copyFrom - waitFrom);
      }
      ByteBuffer landed = landing.buffer(token);
      landed.clear();
      landed.get(packet, 0, length);
      if (times != null) {
        times.add(Phase.COPY, System.nanoTime() - copyFrom);
      }
      if (forwarder != null) {
        toForward = token;
        token = RegisteredBufferPool.NO_LEASE;
      }
    } finally {
      if (token != RegisteredBufferPool.NO_LEASE) {
        landing.release(token);
      }
    }
  }

  /**
   * Waits for the block's first descriptor in the window while watching
   * the socket. Returns false when the client sends the block over the
   * socket instead.
   */
  private boolean awaitDescriptor(InputStream in) throws IOException {
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (true) {
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        throw new SocketTimeoutException("no packet for "
            + session.description() + " arrived over UCX in " + timeoutMs
            + " ms");
      }
      long slice = socket == null ? remaining
          : Math.min(remaining, TimeUnit.MILLISECONDS.toNanos(SOCKET_CHECK_MS));
      if (worker.drive(driver, session, slice)) {
        if (takeInto((first + count) % window)) {
          return true;
        }
        if (!worker.isRunning()) {
          throw new IOException("the UCX worker closed while receiving "
              + session.description());
        }
      }
      if (Thread.interrupted()) {
        throw new java.io.InterruptedIOException("interrupted waiting for a"
            + " packet of " + session.description());
      }
      if (socket != null && in != null && socketSaysSomething(in)) {
        return false;
      }
    }
  }

  /** Takes descriptors that already arrived into the window, up to full. */
  private void topUp() throws IOException {
    while (count < window && takeInto((first + count) % window)) {
      // issued by takeInto
    }
  }

  /**
   * Takes the session's next descriptor into window entry {@code entry} and
   * starts its get when its region is not read directly.
   */
  private boolean takeInto(int entry) throws IOException {
    if (!session.take(taken, entry * PacketDescriptor.LENGTH)) {
      return false;
    }
    count++;
    descriptor.wrap(taken, entry * PacketDescriptor.LENGTH);
    long length = descriptor.packetLength();
    if (length > 0) {
      RemoteRegion region = session.region(descriptor.regionId());
      if (!region.isDirect()) {
        startGet(entry, region, (int) length);
      }
    }
    return true;
  }

  private void startGet(int entry, RemoteRegion region, int length)
      throws IOException {
    UcxEndpoint back = endpointBack();
    long token = leaseLanding();
    landingTokens[entry] = token;
    region.startGet(back, descriptor.address(),
        runtime.landingPool().address(token), length, gets.address(entry));
  }

  private long leaseLanding() throws IOException {
    RegisteredBufferPool landing = runtime.landingPool();
    long token = landing.tryAcquire();
    if (token == RegisteredBufferPool.NO_LEASE) {
      token = landing.acquire(timeoutMs);
    }
    return token;
  }

  /** A packet's landing buffer that was not offered downstream. */
  private void releaseUnforwarded() {
    if (toForward != RegisteredBufferPool.NO_LEASE) {
      runtime.landingPool().release(toForward);
      toForward = RegisteredBufferPool.NO_LEASE;
    }
  }

  /**
   * This DataNode's own endpoint back to the block's client, made from the
   * client's hello; waits (driving the worker) while it is being made.
   */
  private UcxEndpoint endpointBack() throws IOException {
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (true) {
      UcxConnections.Connection c =
          runtime.connections().get(session.boundEndpoint());
      if (c == null) {
        // It greeted before its first block, so its connection was
        // forgotten (more than MAX_CONNECTIONS): waiting would not help.
        throw new IOException("hdfs-rdma: no UCX endpoint back to the"
            + " client of " + session.description() + " for its gets: this"
            + " DataNode no longer knows its connection");
      }
      UcxEndpoint e = c.endpoint;
      if (e != null && e.isUsable()) {
        return e;
      }
      runtime.connections().connect(c);
      if (System.nanoTime() > deadline) {
        throw new IOException("hdfs-rdma: no UCX endpoint back to the client"
            + " of " + session.description() + " for its gets");
      }
      worker.drive(driver, () -> false, TimeUnit.MILLISECONDS.toNanos(1));
    }
  }

  /**
   * Reads at most one byte from the socket without waiting: true when the
   * client sends packets over it (the byte is pushed back).
   */
  private boolean socketSaysSomething(InputStream in) throws IOException {
    probe.clear();
    int n = ((ReadableByteChannel) socket).read(probe);
    if (n < 0) {
      throw new EOFException("the upstream of " + session.description()
          + " closed its connection while waiting for packet "
          + packetsReceived + " over UCX");
    }
    if (n == 0) {
      return false;
    }
    if (packetsReceived > 0) {
      throw new IOException("packet bytes on the socket for "
          + session.description() + " after " + packetsReceived
          + " packets over UCX");
    }
    LOG.info("hdfs-rdma: the upstream of {} sends it over TCP (the client"
        + " could not use UCX for the pipeline)", session.description());
    overSocket = new PacketReceiver(false);
    pushedBack = new SequenceInputStream(
        new ByteArrayInputStream(new byte[] {probe.get(0)}), in);
    return true;
  }

  /**
   * Where Hadoop mirrors a packet: a DataNode that feeds another offers it
   * the packet's landing buffer; otherwise nothing (the DataNodes behind
   * fetch from the client). A failure here is a failed mirror to Hadoop,
   * as a failed socket write is.
   */
  @Override
  public void mirrorPacketTo(DataOutputStream mirrorOut) throws IOException {
    if (overSocket != null) {
      overSocket.mirrorPacketTo(mirrorOut);
      return;
    }
    if (forwarder != null) {
      long token = toForward;
      toForward = RegisteredBufferPool.NO_LEASE;
      forwarder.forward(header.seqno, header.offsetInBlock,
          header.lastPacketInBlock, header.syncBlock, forwardChecksumLength,
          header.dataLen, token);
    }
  }

  /**
   * Closes the session and returns landing buffers once their gets are
   * over. A get that never completes keeps its buffer out of the pool
   * rather than let a late completion write into a reused one, and the
   * client's remote keys unpacked rather than let a late send of the get
   * use a destroyed one. Counts the block as received over UCX when its
   * packets came by UCX, over TCP when they came on the socket, and not at
   * all when none came.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    boolean getPending = false;
    try {
      for (int i = 0; i < window; i++) {
        long token = landingTokens[i];
        if (token == RegisteredBufferPool.NO_LEASE) {
          continue;
        }
        getDone.slot = i;
        worker.drive(driver, getDone,
            TimeUnit.MILLISECONDS.toNanos(timeoutMs + 2000));
        if (!gets.inProgress(i)) {
          runtime.landingPool().release(token);
        } else {
          getPending = true;
          LOG.warn("hdfs-rdma: a get of {} is still pending after {} ms;"
              + " its landing buffer stays out of the pool and the"
              + " client's remote keys stay unpacked",
              session.description(), timeoutMs + 2000);
        }
        landingTokens[i] = RegisteredBufferPool.NO_LEASE;
      }
    } finally {
      releaseUnforwarded();
      if (forwarder != null) {
        forwarder.close();
      }
      worker.unregisterDriver(driver);
      if (getPending) {
        session.closeKeepingRegions();
      } else {
        session.close();
      }
      UcxConnections.unbound(connection);
      if (overSocket != null) {
        runtime.countReceivedBlock(false);
      } else if (packetsReceived > 0) {
        runtime.countReceivedBlock(true);
        runtime.noteIngest(bytesFetched, busyNanos);
      }
      if (overSocket != null) {
        overSocket.close();
      }
      super.close();
    }
  }
}
