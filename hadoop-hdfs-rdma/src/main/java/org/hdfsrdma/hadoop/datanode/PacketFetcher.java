package org.hdfsrdma.hadoop.datanode;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.hadoop.metrics.PacketPhaseTimes.Phase;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * A block's packets as they arrive over UCX, for the block's receiver
 * thread: each {@link #next} takes the block's next descriptor and fetches
 * the packet from its exposer's memory into one heap buffer, checksums
 * then data, which Hadoop's BlockReceiver then verifies and writes (through
 * the release's PacketReceiver adapter).
 *
 * <p><b>One thread, no hand-over.</b> The receiver thread is a driver of
 * the UCX worker ({@link UcxWorker#drive}): it progresses the worker
 * itself, so a descriptor that arrived while it wrote the previous packet
 * is simply there, and when it must wait it sleeps in the worker's event
 * wait, woken by the exposer's message. Same-host shared memory regions are
 * read directly (one copy, as a socket read makes one); other regions are
 * fetched with gets ahead of the reader ({@link GetWindow}) into registered
 * landing buffers, then copied. What a packet needs (landing pool, endpoint
 * back, counters) is resolved once per block; nothing is allocated per
 * packet.
 *
 * <p>In a chain or hybrid pipeline this DataNode may feed another
 * ({@link DownstreamFeed}): then every packet is fetched into a landing
 * buffer, which is offered downstream where Hadoop would mirror the packet
 * ({@link #forward}) and stays leased until the mirror's ack
 * ({@link #downstreamAcked}).
 *
 * <p>While waiting it watches the block's socket ({@link UpstreamSocket}):
 * when the client sends the block there after all, {@link #next} returns
 * false and the rest is read from {@link #socketStream} as stock. When the
 * client writes the descriptors there ({@link SocketDescriptors}), the
 * receiver reads them from the socket as stock reads packets, passes them
 * on to its mirror where Hadoop mirrors a packet, and makes no UCX call
 * for a same-host packet.
 */
public final class PacketFetcher implements Closeable {

  private final UcxBlockSession session;
  private final UcxDataNode dataNode;
  private final UcxWorker worker;
  private final UcxWorker.Driver driver;
  private final long timeoutMs;
  private final UpstreamSocket socket;
  private final PhaseClock clock;
  private final BlockTally tally;
  private final FetchedPacket current;
  private final ByteBuffer[] readers;
  private final LandingLeases landing;
  private final DownstreamFeed feed;
  private final GetWindow window;
  private final SocketDescriptors onSocket;
  private UcxConnections.Connection connection;
  private boolean closed;

  /**
   * Created on the thread that will read the block (it becomes a driver of
   * the worker).
   *
   * @param socket the block's socket from the upstream node or client, to
   *     watch while waiting (non-blocking); null to not watch it
   * @param descriptorsOffered whether the client offered to write the
   *     descriptors on that socket (and this DataNode took the offer)
   */
  public PacketFetcher(UcxBlockSession session, UcxDataNode dataNode,
      SelectableChannel socket, boolean descriptorsOffered) {
    this.session = session;
    this.dataNode = dataNode;
    this.worker = dataNode.runtime().worker();
    this.timeoutMs = dataNode.conf().getTimeoutMs();
    this.socket = new UpstreamSocket(socket, session.description(),
        descriptorsOffered);
    this.clock = new PhaseClock(dataNode.metrics().times());
    this.tally = new BlockTally(dataNode);
    this.current = new FetchedPacket(session.maxPacketBytes());
    this.readers = new ByteBuffer[dataNode.conf().maxRegionsPerBlock() + 1];
    this.landing = new LandingLeases(dataNode, session.description(),
        timeoutMs);
    this.feed = new DownstreamFeed(landing);
    this.driver = worker.registerDriver();
    session.setDriver(driver);
    EndpointBack back = new EndpointBack(dataNode.server().connections(),
        worker, driver, session, timeoutMs);
    this.window = new GetWindow(session, worker, driver, back, landing,
        dataNode.conf().getsInFlight(), timeoutMs);
    this.onSocket = new SocketDescriptors(session, worker, driver,
        dataNode.conf().getsInFlight(), timeoutMs);
  }

  /** The packet {@link #next} presented last. */
  public FetchedPacket current() {
    return current;
  }

  /** Packet bytes (checksums and data) this fetcher fetched over UCX. */
  public long bytesFetched() {
    return tally.bytes();
  }

  /** Packets this fetcher presented from UCX. */
  public long packetsReceived() {
    return tally.packets();
  }

  /**
   * Makes this DataNode feed another with the block's packets (chain,
   * hybrid); before the first packet.
   */
  public void feed(PacketForwarder f) {
    feed.feed(f);
  }

  /**
   * This DataNode's mirror acked {@code seqno}: landing buffers offered
   * downstream up to it are free. The PacketResponder thread.
   */
  public void downstreamAcked(long seqno) {
    feed.acked(seqno);
  }

  /** Marks the end of a phase of the current packet (timers). */
  public void mark(Phase phase) {
    clock.mark(phase);
  }

  /** The current packet is on disk: its busy time ends here. */
  public void written() {
    mark(Phase.DISK);
    tally.written();
  }

  /**
   * Presents the next packet. Returns false when, instead, the client
   * turned out to send the block over the socket: then the block continues
   * from {@link #socketStream}.
   *
   * @param in the block's socket stream, watched while waiting; null to
   *     not watch it
   */
  public boolean next(InputStream in) throws IOException {
    long entered = clock.now();
    clock.nextPacket(entered);
    if (current.lastPacketInBlock) {
      throw new IOException("received a packet after the last packet of "
          + session.description());
    }
    feed.releaseUnoffered();
    boolean fromSocket = session.descriptorsOnSocket();
    if (fromSocket && in == null) {
      throw new UcxPathException("hdfs-rdma: " + session.description()
          + ": descriptors on a socket this receiver does not read");
    }
    if (window.isEmpty()) {
      if (fromSocket) {
        onSocket.take(in, -1);
      } else if (!awaitDescriptor(in)) {
        return false;
      }
    } else if (!fromSocket) {
      // Move what arrived meanwhile out of UCX's shared-memory receive
      // queue (64 messages, shared by all clients) into the session: only
      // progress empties it, and a full queue stalls the client's sends.
      worker.progress();
    }
    if (session.descriptorsOnSocket()) {
      // Those already buffered, to start their gets (RDMA) and pass them
      // on sooner.
      while (session.queued() < window.room()
          && SocketDescriptors.buffered(in)) {
        onSocket.take(in, -1);
      }
    }
    // From here to the packet's disk write this DataNode is the pipeline's
    // limit, not its upstream: what its ingest rate is measured over.
    tally.busy();
    // Take what already arrived into the window, up to full.
    window.fill();
    clock.since(Phase.DESCRIPTOR_WAIT, entered);
    PacketDescriptor descriptor = window.oldest();
    int dataLength = descriptor.dataLength();
    current.checksumLength = descriptor.checksumLength();
    current.dataLength = dataLength;
    int length = current.checksumLength + dataLength;
    if (length > 0) {
      boolean direct = fetch(descriptor, length);
      tally.fetched(length, dataLength, direct,
          (descriptor.flags() & PacketDescriptor.FLAG_FORWARDED) != 0);
    }
    current.offsetInBlock = descriptor.offsetInBlock();
    current.seqno = descriptor.seqno();
    current.lastPacketInBlock = descriptor.isLastPacketInBlock();
    current.syncBlock = descriptor.isSyncBlock();
    window.remove();
    tally.presented();
    if (connection == null && tally.packets() == 1) {
      connection = dataNode.server().connections().get(
          session.boundEndpoint());
      UcxConnections.bound(connection);
    }
    clock.presented();
    return true;
  }

  /**
   * Copies the packet of {@code descriptor}, the window's oldest, into the
   * heap buffer. Returns whether it was read directly (same-host shared
   * memory) rather than fetched by get.
   */
  private boolean fetch(PacketDescriptor descriptor, int length)
      throws IOException {
    RemoteRegion region = session.region(descriptor.regionId());
    if (region.isDirect()) {
      long copyFrom = clock.now();
      ByteBuffer reader = readers[descriptor.regionId()];
      if (reader == null) {
        reader = region.reader();
        readers[descriptor.regionId()] = reader;
      }
      reader.limit(reader.capacity());
      reader.position((int) (descriptor.address() - region.base()));
      if (!feed.feeds()) {
        reader.get(current.bytes, 0, length);
      } else {
        // The DataNode fed next reads the packet from this one's memory.
        feed.holdCopy(reader, length, current.bytes);
      }
      clock.since(Phase.COPY, copyFrom);
      return true;
    }
    long waitFrom = clock.now();
    long token = window.awaitOldest();
    try {
      clock.since(Phase.GET_WAIT, waitFrom);
      long copyFrom = clock.now();
      ByteBuffer landed = landing.buffer(token);
      landed.clear();
      landed.get(current.bytes, 0, length);
      clock.since(Phase.COPY, copyFrom);
      if (feed.feeds()) {
        feed.hold(token);
        token = RegisteredBufferPool.NO_LEASE;
      }
    } finally {
      if (token != RegisteredBufferPool.NO_LEASE) {
        landing.release(token);
      }
    }
    return false;
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
        throw new UcxPathException("hdfs-rdma: no packet for "
            + session.description() + " arrived over UCX in " + timeoutMs
            + " ms");
      }
      if (socket.waitsOnSocket() && tally.packets() == 0) {
        // Descriptors are offered on the socket: wait there, looking at
        // UCX in between (the client sends them over UCX after all when a
        // DataNode of the pipeline does not take them on its socket).
        boolean readable = socket.awaitReadable();
        worker.progress();
        if (window.take()) {
          return true;
        }
        if (readable && in != null && socket.saysSomething(0)) {
          if (!socket.carriesDescriptors()) {
            return false;
          }
          onSocket.take(in, socket.probedByte());
          return window.take();
        }
        if (Thread.interrupted()) {
          throw new InterruptedIOException("interrupted waiting for a"
              + " packet of " + session.description());
        }
        continue;
      }
      if (worker.drive(driver, session, socket.slice(remaining))) {
        if (window.take()) {
          return true;
        }
        if (!worker.isRunning()) {
          throw new UcxPathException("hdfs-rdma: the UCX worker closed"
              + " while receiving " + session.description());
        }
      }
      if (Thread.interrupted()) {
        throw new InterruptedIOException("interrupted waiting for a"
            + " packet of " + session.description());
      }
      if (in != null && socket.saysSomething(tally.packets())) {
        return false;
      }
    }
  }

  /**
   * The block's socket stream with the byte {@link #next} read while
   * watching it put back in front; after {@link #next} returned false.
   */
  public InputStream socketStream(InputStream in) {
    return socket.pushedBack(in);
  }

  /**
   * Where Hadoop mirrors a packet to {@code mirror}: where the descriptors
   * come on the socket, they go on to the mirror's socket (a failed write
   * is a failed mirror, as stock's); a DataNode that feeds another offers
   * it the packet's landing buffer; otherwise nothing (the DataNodes
   * behind fetch from the client). A failure to offer is a
   * {@link UcxPathException}: the DataNode asks its client to continue
   * over TCP, and Hadoop then sees a failed mirror, as for a failed socket
   * write.
   */
  public void forward(OutputStream mirror) throws IOException {
    if (session.descriptorsOnSocket()) {
      onSocket.forwardTo(mirror);
    } else {
      feed.forward(current);
    }
  }

  /**
   * This block's UCX path failed and the DataNode asked its client to
   * continue over TCP: counted once per block.
   */
  public void fellBack() {
    tally.fellBack();
  }

  /**
   * Closes the session and returns landing buffers once their gets are
   * over. A get that never completes keeps its buffer out of the pool
   * rather than let a late completion write into a reused one, and the
   * client's remote keys unpacked rather than let a late send of the get
   * use a destroyed one. Counts the block as received over UCX when its
   * packets came by UCX, over TCP when they came on the socket, and not at
   * all when none came. Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    boolean getPending = false;
    try {
      getPending = window.drain();
    } finally {
      feed.close();
      worker.unregisterDriver(driver);
      if (getPending) {
        session.closeKeepingRegions();
      } else {
        session.close();
      }
      UcxConnections.unbound(connection);
      tally.close(socket.carriesTheBlock(), session.descriptorsOnSocket());
    }
  }
}
