package org.hdfsrdma.hadoop;

import java.io.ByteArrayInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.SequenceInputStream;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongConsumer;

import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketReceiver;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.PacketPhaseTimes.Phase;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBuffer;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A BlockReceiver's packet source when the block arrives over UCX: each
 * "read" takes the block's next descriptor and fetches the packet from the
 * client's memory with a one-sided get, then presents header, checksums and
 * data exactly as Hadoop's socket PacketReceiver would. Mirroring is a
 * no-op: every DataNode of the pipeline fetches from the client itself.
 *
 * <p>Gets overlap BlockReceiver's work: while it verifies and writes one
 * packet, the gets of up to {@code dfs.datanode.rdma.gets-in-flight} next
 * packets whose descriptors arrived are in flight.
 *
 * <p>The slices are heap buffers (BlockReceiver writes them to disk through
 * {@code array()}); the get lands in registered memory and is copied out
 * once, as Hadoop's socket path also copies through a buffer.
 *
 * <p>While waiting for a descriptor it watches the block's socket, which
 * carries no packet bytes on the UCX path: end of stream means the client
 * gave up the pipeline (fail now, as a socket read would), and packet bytes
 * before any UCX packet mean the client could not reach a UCX listener of
 * the pipeline and sends over TCP after all: the rest of the block is read
 * (and mirrored) exactly as stock.
 */
public class UcxPacketReceiver extends PacketReceiver {

  private static final Logger LOG =
      LoggerFactory.getLogger(UcxPacketReceiver.class);

  /** DFSPacket.HEART_BEAT_SEQNO (DFSPacket is package-private). */
  private static final long HEART_BEAT_SEQNO = -1L;
  /** How often a waiting receiver looks at the socket. */
  private static final long SOCKET_CHECK_MS = 20;

  /** One packet being fetched. */
  private static final class Fetch {
    final UcxBlockSession.Arrival arrival;
    final RegisteredBuffer target;
    final CompletableFuture<Void> done;

    Fetch(UcxBlockSession.Arrival arrival, RegisteredBuffer target,
        CompletableFuture<Void> done) {
      this.arrival = arrival;
      this.target = target;
      this.done = done;
    }
  }

  private final UcxBlockSession session;
  private final RegisteredBufferPool landing;
  private final long timeoutMs;
  private final int getsInFlight;
  private final SelectableChannel socket;
  private final LongConsumer dataFetched;
  private final Runnable onSocketFallback;
  private final java.util.function.Consumer<UcxConnection> onFirstConnection;
  private final PacketPhaseTimes times;
  private final ArrayDeque<Fetch> inFlight = new ArrayDeque<Fetch>();
  private final ByteBuffer probe = ByteBuffer.allocate(1);
  private byte[] packet = new byte[0];
  private PacketHeader header;
  private ByteBuffer checksums = ByteBuffer.allocate(0);
  private ByteBuffer data = ByteBuffer.allocate(0);
  private boolean sawLastPacket;
  private boolean issuedLastPacket;
  private long lastIssuedSeqno = -1;
  private long packetsReceived;
  private long bytesFetched;
  private PacketReceiver overSocket;
  private Crc32cVerifier verifier;
  private boolean verifierChosen;
  private InputStream pushedBack;
  // Phase timers: when the packet was handed over, and the last mark since.
  private long lastMarkNanos;
  private Phase lastMark;

  /**
   * @param getsInFlight packets fetched at once (at least 1)
   * @param socketChannel the block's socket from the upstream node or
   *     client, to watch while waiting; null to not watch it
   * @param dataFetched told the data bytes (checksums excluded) of every
   *     packet fetched, for the DataNode's counters
   * @param onSocketFallback run once if the packets come over the socket
   * @param onFirstConnection told the connection the block's first packet
   *     arrived on (the DataNode notes its transports)
   * @param times where packet phases are timed, or null for no timing
   */
  public UcxPacketReceiver(UcxBlockSession session,
      RegisteredBufferPool landing, long timeoutMs, int getsInFlight,
      ReadableByteChannel socketChannel, LongConsumer dataFetched,
      Runnable onSocketFallback,
      java.util.function.Consumer<UcxConnection> onFirstConnection,
      PacketPhaseTimes times) {
    super(false);
    this.session = session;
    this.landing = landing;
    this.timeoutMs = timeoutMs;
    this.getsInFlight = Math.max(1, getsInFlight);
    this.socket = watchable(socketChannel);
    this.dataFetched = dataFetched;
    this.onSocketFallback = onSocketFallback;
    this.onFirstConnection = onFirstConnection;
    this.times = times;
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

  /** Packet bytes (checksums and data) this receiver fetched by get. */
  public long bytesFetched() {
    return bytesFetched;
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
      ((UcxPacketReceiver) receiver).mark(Phase.DISK);
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
    if (inFlight.isEmpty()) {
      UcxBlockSession.Arrival first = awaitArrival(in);
      if (first == null) {
        return true;
      }
      issue(first, first.descriptor().packetLength() > 0
          ? landing.acquire(timeoutMs) : null);
    }
    if (times != null) {
      times.add(Phase.DESCRIPTOR_WAIT, System.nanoTime() - entered);
    }
    prefetch();
    Fetch head = inFlight.poll();
    PacketDescriptor d = head.arrival.descriptor();
    int checksumLength = d.checksumLength();
    int dataLength = d.dataLength();
    int length = checksumLength + dataLength;
    if (packet.length < length) {
      packet = new byte[length];
    }
    if (head.target != null) {
      try {
        long waitFrom = times == null ? 0 : System.nanoTime();
        await(head);
        long copyFrom = 0;
        if (times != null) {
          copyFrom = System.nanoTime();
          times.add(Phase.GET_WAIT, copyFrom - waitFrom);
        }
        ByteBuffer landed = head.target.buffer();
        landed.limit(length);
        landed.get(packet, 0, length);
        if (times != null) {
          times.add(Phase.COPY, System.nanoTime() - copyFrom);
        }
      } finally {
        // A failed or timed-out get closed its connection first, so no late
        // completion can land in the buffer once it is back in the pool.
        head.target.release();
      }
      bytesFetched += length;
      dataFetched.accept(dataLength);
    }
    checksums = ByteBuffer.wrap(packet, 0, checksumLength).slice();
    data = ByteBuffer.wrap(packet, checksumLength, dataLength).slice();
    header = new PacketHeader(4 + length, d.offsetInBlock(), d.seqno(),
        d.isLastPacketInBlock(), dataLength, d.isSyncBlock());
    sawLastPacket = d.isLastPacketInBlock();
    packetsReceived++;
    if (times != null) {
      lastMarkNanos = System.nanoTime();
      lastMark = Phase.COPY;
    }
    return false;
  }

  /**
   * Waits for the block's next descriptor while watching the socket.
   * Returns null when the client sends the block over the socket instead.
   */
  private UcxBlockSession.Arrival awaitArrival(InputStream in)
      throws IOException {
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (true) {
      long remainingMs = TimeUnit.NANOSECONDS.toMillis(
          deadline - System.nanoTime());
      if (remainingMs <= 0) {
        throw new SocketTimeoutException("no packet for "
            + session.description() + " arrived over UCX in " + timeoutMs
            + " ms");
      }
      UcxBlockSession.Arrival a = session.poll(socket == null ? remainingMs
          : Math.min(remainingMs, SOCKET_CHECK_MS));
      if (a != null) {
        return a;
      }
      if (socket != null && in != null && socketSaysSomething(in)) {
        return null;
      }
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
          + " closed its connection before sending packet "
          + (packetsReceived == 0 ? "0" : "after " + lastIssuedSeqno)
          + " over UCX");
    }
    if (n == 0) {
      return false;
    }
    if (packetsReceived > 0) {
      throw new IOException("packet bytes on the socket for "
          + session.description() + " after " + packetsReceived
          + " packets over UCX");
    }
    LOG.info("hdfs-rdma: the upstream of {} sends it over TCP (a UCX"
        + " listener of the pipeline was unreachable from the client)",
        session.description());
    overSocket = new PacketReceiver(false);
    pushedBack = new SequenceInputStream(
        new ByteArrayInputStream(new byte[] {probe.get(0)}), in);
    session.close();
    onSocketFallback.run();
    return true;
  }

  /** Starts fetching the packets whose descriptors arrived, up to the window. */
  private void prefetch() throws IOException {
    while (inFlight.size() < getsInFlight && !issuedLastPacket) {
      UcxBlockSession.Arrival next = session.poll(0);
      if (next == null) {
        return;
      }
      RegisteredBuffer target = null;
      if (next.descriptor().packetLength() > 0) {
        target = landing.tryAcquire();
        if (target == null) {
          target = landing.acquire(timeoutMs);
        }
      }
      issue(next, target);
    }
  }

  /** Checks a descriptor's place in the block and starts its get. */
  private void issue(UcxBlockSession.Arrival arrival, RegisteredBuffer target)
      throws IOException {
    PacketDescriptor d = arrival.descriptor();
    try {
      if (issuedLastPacket) {
        throw new IOException("received a packet after the last packet of "
            + session.description());
      }
      if (d.seqno() != HEART_BEAT_SEQNO) {
        if (d.seqno() <= lastIssuedSeqno) {
          throw new IOException("packet " + d.seqno() + " of "
              + session.description() + " arrived after packet "
              + lastIssuedSeqno);
        }
        lastIssuedSeqno = d.seqno();
      }
      int length = d.packetLength();
      if (length > PacketReceiver.MAX_PACKET_SIZE) {
        throw new IOException("packet of " + length + " bytes for "
            + session.description() + " exceeds "
            + PacketReceiver.MAX_PACKET_SIZE);
      }
    } catch (IOException e) {
      if (target != null) {
        target.release();
      }
      throw e;
    }
    issuedLastPacket = d.isLastPacketInBlock();
    if (d.packetLength() == 0) {
      if (target != null) {
        target.release();
      }
      inFlight.add(new Fetch(arrival, null, null));
      return;
    }
    if (packetsReceived == 0 && inFlight.isEmpty()) {
      onFirstConnection.accept(arrival.connection());
    }
    final long issued = times == null ? 0 : System.nanoTime();
    final Fetch f = new Fetch(arrival, target,
        arrival.connection().get(d, target, timeoutMs));
    if (times != null) {
      final PacketPhaseTimes t = times;
      f.done.whenComplete((ok, error) -> t.add(Phase.GET_LATENCY,
          System.nanoTime() - issued));
    }
    inFlight.add(f);
  }

  private void await(Fetch f) throws IOException {
    try {
      f.done.get(timeoutMs + 1000, TimeUnit.MILLISECONDS);
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
    }
  }

  /** Every DataNode fetches from the client itself: nothing to forward. */
  @Override
  public void mirrorPacketTo(DataOutputStream mirrorOut) throws IOException {
    if (overSocket != null) {
      overSocket.mirrorPacketTo(mirrorOut);
    }
  }

  /**
   * Closes the session and returns the landing buffers once their gets are
   * over: each get either completes or fails by its deadline (a failed get
   * closes its connection), so no late completion writes into a buffer
   * that is back in the pool.
   */
  @Override
  public void close() {
    session.close();
    boolean interrupted = false;
    for (Fetch f : inFlight) {
      if (f.target == null) {
        continue;
      }
      long deadline = System.nanoTime()
          + TimeUnit.MILLISECONDS.toNanos(timeoutMs + 2000);
      while (!f.done.isDone() && System.nanoTime() - deadline < 0) {
        try {
          f.done.get(Math.max(1, deadline - System.nanoTime()),
              TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true; // recovery stops writers so; finish first
        } catch (ExecutionException | TimeoutException e) {
          // Over either way (a failed get closed its connection).
        }
      }
      if (f.done.isDone()) {
        f.target.release();
      } else {
        LOG.warn("hdfs-rdma: a get of {} is still pending after {} ms;"
            + " its landing buffer stays out of the pool",
            session.description(), timeoutMs + 2000);
      }
    }
    inFlight.clear();
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (overSocket != null) {
      overSocket.close();
    }
    super.close();
  }
}
