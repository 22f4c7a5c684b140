package org.hdfsrdma.hadoop.datanode;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;

import org.hdfsrdma.hadoop.sender.ReadReservation;
import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.hdfsrdma.ucx.MalformedMessageException;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.ReadCredit;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The stream {@code BlockSender} writes a UCX read's packets to (DESIGN.md
 * section 9): the stock packets, byte for byte, go into the read's window
 * of registered buffers instead of the socket, and each full buffer is
 * described on the socket (a {@link PacketDescriptor}, after a
 * {@link RegionAnnouncement} of its region the first time), for the client
 * to take with a get. A buffer is filled again only after the client's
 * {@link ReadCredit} says it took it; {@link #flush()}, which
 * {@code BlockSender} calls once after the block's last (empty) packet,
 * describes the rest as the read's last and waits for the final credit, so
 * that Hadoop then reads the client's status from the socket as in stock.
 *
 * <p>Per packet: one copy into registered memory, no allocation, no lock.
 * A failure of the socket or a credit that is not the read's ends the read
 * with a {@link SocketException}, as a client going away ends a stock read
 * (a credit breaking the protocol is also logged, at a bounded rate).
 */
final class ReadExposer extends OutputStream {

  private static final Logger LOG = LoggerFactory.getLogger(
      ReadExposer.class);
  /** Readers breaking the protocol come from the network: rate-limited. */
  private static final RateLimitedLog BAD_READERS = RateLimitedLog.of(LOG);

  private final ReadReservation reservation;
  private final RegisteredBufferPool pool;
  private final ByteBuffer[] window;
  private final long[] addresses;
  private final int[] regions;
  /** Bytes described in each buffer of the window. */
  private final int[] lengths;
  private final long readId;
  private final long blockId;
  private final long generationStamp;
  private final int capacity;
  private final DataInputStream in;
  private final OutputStream socket;
  private final String description;
  private final ByteBuffer message = ByteBuffer.allocate(
      Math.max(RegionAnnouncement.MAX_LENGTH, PacketDescriptor.LENGTH))
      .order(ByteOrder.BIG_ENDIAN);
  private final PacketDescriptor descriptor = new PacketDescriptor();
  private final RegionAnnouncement announcement = new RegionAnnouncement();
  private final byte[] creditBytes = new byte[ReadCredit.LENGTH];
  private final ReadCredit credit =
      new ReadCredit().wrap(ByteBuffer.wrap(creditBytes), 0);
  private final byte[] one = new byte[1];
  /** Region ids announced to the client, at most one per window buffer. */
  private final int[] announced;
  private int announcedCount;
  private int fill;
  private long described;
  private long credited = -1;
  private boolean finished;
  /** The client asked for the rest as stock packets: they go to the socket. */
  private boolean stock;
  /** Bytes of stock packets in the buffers the client credited. */
  private long bytesTaken;

  /**
   * @param capacity bytes of stock packets one buffer takes (the answer's
   *     packet bytes)
   * @param in the socket's input, where the client's credits arrive
   * @param socket the socket's output, where descriptors go
   */
  ReadExposer(ReadReservation reservation, long readId,
      long blockId, long generationStamp, int capacity, DataInputStream in,
      OutputStream socket, String description) {
    this.reservation = reservation;
    this.pool = reservation.buffers();
    int w = reservation.window();
    this.window = new ByteBuffer[w];
    this.addresses = new long[w];
    this.regions = new int[w];
    this.lengths = new int[w];
    this.announced = new int[w];
    for (int i = 0; i < w; i++) {
      long token = reservation.token(i);
      window[i] = pool.buffer(token).duplicate();
      addresses[i] = pool.address(token);
      regions[i] = pool.regionId(token);
    }
    this.readId = readId;
    this.blockId = blockId;
    this.generationStamp = generationStamp;
    this.capacity = capacity;
    this.in = in;
    this.socket = socket;
    this.description = description;
  }

  @Override
  public void write(int b) throws IOException {
    one[0] = (byte) b;
    write(one, 0, 1);
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    if (!stock) {
      makeRoom(len);
    }
    if (stock) { // from the start, or the client asked for it meanwhile
      socket.write(b, off, len);
      return;
    }
    ByteBuffer buf = window[(int) (described % window.length)];
    buf.clear().position(fill);
    buf.put(b, off, len);
    fill += len;
  }

  /**
   * A packet of {@code bytes} (header, checksums and data) starts: it goes
   * whole into the buffer being filled, or the next one. Then its bytes
   * come by {@link #write} and {@link #transferFrom}. Does nothing once the
   * client asked for stock packets ({@link #fellBack()}).
   */
  void startPacket(int bytes) throws IOException {
    if (!stock) {
      makeRoom(bytes);
    }
  }

  /**
   * Makes room for {@code bytes} more in the buffer being filled: the
   * next buffer when they do not fit, once the client freed it.
   */
  private void makeRoom(int bytes) throws IOException {
    if (finished) {
      throw new SocketException("hdfs-rdma: " + description
          + " was written to after its last packet");
    }
    if (bytes > capacity) {
      throw new SocketException("hdfs-rdma: a packet of " + bytes + " bytes"
          + " of " + description + " does not fit its read buffers of "
          + capacity);
    }
    if (fill + bytes > capacity) {
      describe(false);
    }
    if (fill == 0) {
      awaitFreeBuffer();
    }
  }

  /**
   * Reads {@code count} bytes of {@code file} from {@code position} into
   * the buffer being filled, after the bytes of its packet written so far
   * (the page cache's bytes copied once, straight into registered memory).
   * Only between {@link #startPacket} and the packet's end, and never once
   * the client asked for stock packets.
   */
  void transferFrom(FileChannel file, long position, int count)
      throws IOException {
    if (stock || fill + count > capacity) {
      throw new IllegalStateException(description + ": " + count
          + " bytes of file past its packet's buffer");
    }
    ByteBuffer buf = window[(int) (described % window.length)];
    buf.clear().position(fill).limit(fill + count);
    long at = position;
    while (buf.hasRemaining()) {
      int n = file.read(buf, at);
      if (n < 0) {
        throw new EOFException(description + ": the block file ends at "
            + at + ", before " + (position + count));
      }
      at += n;
    }
    fill += count;
  }

  /**
   * Describes what is buffered as the read's last and waits until the
   * client took it all (its final credit).
   */
  @Override
  public void flush() throws IOException {
    if (stock) {
      socket.flush();
      return;
    }
    if (finished) {
      return;
    }
    describe(true);
    finished = true;
    while (credited < described - 1 && !stock) {
      readCredit();
    }
    if (stock) {
      socket.flush();
    }
  }

  /**
   * Whether the read ended as agreed: the client took every packet, or
   * asked for the rest as stock packets and got them.
   */
  boolean isFinished() {
    return finished && credited == described - 1;
  }

  /** Whether the client asked for the rest as stock packets. */
  boolean fellBack() {
    return stock;
  }

  /**
   * Bytes of stock packets the client took from the read's buffers (those
   * it credited), however the read ended.
   */
  long bytesTaken() {
    return bytesTaken;
  }

  /** Waits for the credit that frees the buffer to be filled next. */
  private void awaitFreeBuffer() throws IOException {
    while (described - credited > window.length) {
      readCredit();
    }
  }

  private void describe(boolean last) throws IOException {
    int slot = (int) (described % window.length);
    int region = regions[slot];
    lengths[slot] = fill;
    try {
      if (fill == 0) { // nothing was written: an empty last buffer
        descriptor.wrap(message, 0).encode(readId, blockId, generationStamp,
            described, 0, PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK, 0, 0,
            0, 0);
      } else if (!isAnnounced(region)) {
        // On the wire a region is named by its pool index plus one.
        announcement.wrap(message, 0, message.capacity()).encode(readId,
            region + 1, pool.regionAddress(region),
            pool.regionLength(region), pool.regionKey(region));
        socket.write(message.array(), 0, announcement.length());
        announced[announcedCount++] = region;
      }
      if (fill > 0) {
        descriptor.wrap(message, 0).encode(readId, blockId,
            generationStamp, described, 0,
            last ? PacketDescriptor.FLAG_LAST_PACKET_IN_BLOCK : 0,
            region + 1, addresses[slot], 0, fill);
      }
      socket.write(message.array(), 0, PacketDescriptor.LENGTH);
      socket.flush();
    } catch (IOException e) {
      throw asSocketException("describing a packet to", e);
    }
    described++;
    fill = 0;
  }

  private boolean isAnnounced(int region) {
    for (int i = 0; i < announcedCount; i++) {
      if (announced[i] == region) {
        return true;
      }
    }
    return false;
  }

  /** Reads and checks one credit from the client. */
  private void readCredit() throws IOException {
    try {
      in.readFully(creditBytes);
    } catch (EOFException e) {
      throw new SocketException("hdfs-rdma: the reader of " + description
          + " closed the connection with " + (described - credited - 1)
          + " buffers untaken");
    } catch (IOException e) {
      throw asSocketException("reading a credit from", e);
    }
    String wrong;
    try {
      credit.validate(ReadCredit.LENGTH);
      long seqno = credit.seqno();
      wrong = credit.readId() != readId ? "a credit of another read"
          : credit.isCancel() ? "a cancel (not served)"
          : credit.isFallback() ? (seqno <= credited || seqno > described
              ? "a fallback from buffer " + seqno + " (" + (credited + 1)
                  + " to " + described + " allowed)" : null)
          : seqno >= described ? "a credit for buffer " + seqno + " of "
              + described + " described"
          : seqno < credited ? "a credit going back from " + credited
              + " to " + seqno
          : credit.isFinal() && credit.seqno() != described - 1
              ? "a final credit for " + credit.seqno() + " of " + described
          : null;
    } catch (MalformedMessageException e) {
      wrong = e.getMessage();
    }
    if (wrong != null) {
      String message = "hdfs-rdma: the reader of " + description + " sent "
          + wrong + "; the read ends";
      BAD_READERS.warn(message);
      throw new SocketException(message);
    }
    if (credit.isFallback()) {
      taken(credit.seqno() - 1);
      resendFrom(credit.seqno());
    } else {
      taken(credit.seqno());
      credited = credit.seqno();
    }
  }

  /** Counts the bytes of the buffers after the last credited to seqno. */
  private void taken(long seqno) {
    for (long s = credited + 1; s <= seqno; s++) {
      bytesTaken += lengths[(int) (s % lengths.length)];
    }
  }

  /**
   * The client takes no more buffers: the packets of buffers
   * {@code seqno} on, and of the one being filled, go to the socket as
   * stock packets, and so does every later packet.
   */
  private void resendFrom(long seqno) throws IOException {
    byte[] copy = new byte[capacity];
    try {
      for (long s = seqno; s < described; s++) {
        int slot = (int) (s % window.length);
        resend(slot, lengths[slot], copy);
      }
      if (fill > 0 && !finished) {
        resend((int) (described % window.length), fill, copy);
      }
    } catch (IOException e) {
      throw asSocketException("resending stock packets to", e);
    }
    fill = 0;
    credited = described - 1;
    stock = true;
  }

  private void resend(int slot, int length, byte[] copy) throws IOException {
    ByteBuffer buf = window[slot];
    buf.clear().limit(length);
    buf.get(copy, 0, length);
    socket.write(copy, 0, length);
  }

  private SocketException asSocketException(String what, IOException e) {
    if (e instanceof SocketException) {
      return (SocketException) e;
    }
    SocketException s = new SocketException("hdfs-rdma: " + what
        + " the reader of " + description + ": " + e);
    s.initCause(e);
    return s;
  }

  /**
   * The read is over: its buffers go back to the reader's pool when the
   * client took them all, otherwise the pool is retired (the client may
   * still be getting from it). Idempotent.
   */
  @Override
  public void close() {
    if (isFinished()) {
      reservation.finish();
    } else {
      reservation.retire();
    }
  }
}
