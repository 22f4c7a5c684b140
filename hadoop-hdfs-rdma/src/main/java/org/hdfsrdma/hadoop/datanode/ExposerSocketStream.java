package org.hdfsrdma.hadoop.datanode;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.net.SocketOutputStream;

/**
 * What {@code BlockSender} takes for the socket of a UCX read, so that it
 * sends as it sends to a TCP client (DESIGN.md section 9): packets of
 * 64 KiB whose data it hands over with {@code transferToFully}, which here
 * reads the block file straight into the read's registered buffer
 * ({@link ReadExposer#transferFrom}) where stock's sendfile copies it into
 * the socket. Without this, {@code BlockSender} would read the data into
 * its own buffer first and send packets of {@code io.file.buffer.size}
 * (4 KiB by default): a copy more and sixteen times the packets.
 *
 * <p>Header and checksums come by {@link #write}: the first bytes of each
 * packet give its length, and the packet goes whole into one buffer. Once
 * the client asked for stock packets, everything goes to the socket
 * through {@code socket}, the op's own stream, transferTo included. Never
 * closes the socket: the op owns it. Same on every Hadoop release
 * ({@code SocketOutputStream}'s methods are).
 */
final class ExposerSocketStream extends SocketOutputStream {

  /** Bytes before a packet's header: its length (4) and header length (2). */
  private static final int PREFIX = 6;

  private final ReadExposer exposer;
  private final SocketOutputStream socket;
  /** Bytes of the current packet still to come; 0 between packets. */
  private long packetRemaining;
  private final byte[] one = new byte[1];

  /**
   * @param socket the op's socket stream (its channel backs this one, which
   *     never writes to it itself)
   */
  ExposerSocketStream(ReadExposer exposer, SocketOutputStream socket)
      throws IOException {
    super(socket.getChannel(), 0);
    this.exposer = exposer;
    this.socket = socket;
  }

  @Override
  public void write(int b) throws IOException {
    one[0] = (byte) b;
    write(one, 0, 1);
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    if (exposer.fellBack()) {
      socket.write(b, off, len);
      return;
    }
    if (packetRemaining == 0 && len > 0) {
      if (len < PREFIX) {
        throw new IOException("hdfs-rdma: a packet starting with " + len
            + " bytes, fewer than its length fields");
      }
      // Stock's packet: length (4, itself and what follows the header),
      // header length (2), header, checksums, data.
      int payload = ((b[off] & 0xff) << 24) | ((b[off + 1] & 0xff) << 16)
          | ((b[off + 2] & 0xff) << 8) | (b[off + 3] & 0xff);
      int header = ((b[off + 4] & 0xff) << 8) | (b[off + 5] & 0xff);
      long whole = (long) payload + header + 2;
      if (payload < 4 || whole < len || whole > Integer.MAX_VALUE) {
        throw new IOException("hdfs-rdma: a packet of length " + payload
            + ", header " + header + ", first write " + len);
      }
      exposer.startPacket((int) whole);
      if (exposer.fellBack()) { // the client asked for stock meanwhile
        socket.write(b, off, len);
        packetRemaining = whole - len;
        return;
      }
      packetRemaining = whole;
    }
    if (len > packetRemaining) {
      throw new IOException("hdfs-rdma: " + len + " bytes written where the"
          + " packet has " + packetRemaining + " left");
    }
    exposer.write(b, off, len);
    packetRemaining -= len;
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    int n = src.remaining();
    if (src.hasArray()) {
      write(src.array(), src.arrayOffset() + src.position(), n);
      src.position(src.limit());
    } else {
      byte[] copy = new byte[n];
      src.get(copy);
      write(copy, 0, n);
    }
    return n;
  }

  @Override
  public void transferToFully(FileChannel file, long position, int count,
      LongWritable waitForWritableTime, LongWritable transferToTime)
      throws IOException {
    if (exposer.fellBack()) {
      socket.transferToFully(file, position, count, waitForWritableTime,
          transferToTime);
      packetRemaining = Math.max(0, packetRemaining - count);
      return;
    }
    if (count > packetRemaining) {
      throw new IOException("hdfs-rdma: " + count + " bytes of data where"
          + " the packet has " + packetRemaining + " left");
    }
    long start = System.nanoTime();
    exposer.transferFrom(file, position, count);
    packetRemaining -= count;
    if (transferToTime != null) {
      transferToTime.set(System.nanoTime() - start);
    }
    if (waitForWritableTime != null) {
      waitForWritableTime.set(0);
    }
  }

  @Override
  public void transferToFully(FileChannel file, long position, int count)
      throws IOException {
    transferToFully(file, position, count, null, null);
  }

  @Override
  public void flush() throws IOException {
    if (exposer.fellBack()) {
      socket.flush();
    }
  }

  /** The op closes its socket; nothing to do here. */
  @Override
  public void close() {
  }
}
