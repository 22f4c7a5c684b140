package org.hdfsrdma.benchmarks;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.hdfsrdma.ucx.HelloMessage;
import org.hdfsrdma.ucx.MessageHandler;
import org.hdfsrdma.ucx.MessageHeader;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;
import org.openucx.jucx.UcxUtils;

/**
 * The other side of {@link TransferBenchmark}, in its own JVM (the product
 * runs one UCX worker per JVM). For payloads of SIZE bytes it serves, on
 * this host:
 *
 * <ul>
 * <li>a TCP server socket on loopback: each connection reads exactly SIZE
 * bytes at a time and answers each with an 8-byte ack (one thread per
 * connection, as a DataNode's DataXceiver);</li>
 * <li>a UCX worker of the bridge, created with the product's settings
 * ({@link Wire#ucxOptions()}), reachable by its worker address (the bridge
 * has no listener). Its message handler takes a payload as consecutive
 * messages of at most {@link UcxWorker#MAX_MESSAGE_BYTES} bytes, copies
 * each into a landing buffer, and after SIZE bytes answers with an 8-byte
 * message over this side's own endpoint back to the benchmark, made once
 * from the benchmark's {@link HelloMessage} (the bridge sends only on an
 * endpoint of one's own, as a DataNode connects back to a client);</li>
 * <li>a buffer of SIZE bytes in a {@link RegisteredBufferPool} (memory UCX
 * allocated: a SysV segment on this host), announced by a
 * {@link RegionAnnouncement} that the benchmark opens to read it.</li>
 * </ul>
 *
 * <pre>java -cp benchmarks.jar org.hdfsrdma.benchmarks.TransferPeer SIZE</pre>
 *
 * Prints {@code READY socketPort workerAddressHex announcementHex} and
 * serves until its standard input closes.
 */
public final class TransferPeer {

  /** Bound on connecting back to the benchmark. */
  private static final long CONNECT_TIMEOUT_MS = 30_000;

  private TransferPeer() {
  }

  public static void main(String[] args) throws Exception {
    Wire.defaultLogLevel();
    int size = Integer.parseInt(args[0]);
    InetAddress loopback = InetAddress.getLoopbackAddress();
    UcxContext context = new UcxContext(Wire.ucxOptions());
    UcxWorker worker = null;
    RegisteredBufferPool exposed = null;
    Receiver receiver = null;
    long token = RegisteredBufferPool.NO_LEASE;
    try {
      worker = new UcxWorker(context, "bench-peer");
      receiver = new Receiver(worker, size);
      worker.setMessageHandler(receiver);
      worker.start();
      // One slab of exactly one buffer: the region is the payload.
      exposed = new RegisteredBufferPool(context, "exposed", size, size, size,
          false);
      token = exposed.acquire(1000);
      ByteBuffer bytes = exposed.buffer(token);
      for (int i = 0; i < size; i++) {
        bytes.put(i, Wire.payloadByte(i));
      }
      int region = exposed.regionId(token);
      if (exposed.address(token) != exposed.regionAddress(region)) {
        throw new IllegalStateException("the exposed buffer does not start"
            + " its region");
      }
      ByteBuffer message = ByteBuffer.allocateDirect(
          RegionAnnouncement.MAX_LENGTH);
      RegionAnnouncement announcement = new RegionAnnouncement().wrap(message,
          0, message.capacity()).encode(1L, 1, exposed.regionAddress(region),
              exposed.regionLength(region), exposed.regionKey(region));
      byte[] encoded = new byte[announcement.length()];
      message.duplicate().get(encoded);
      try (SocketServer sockets = new SocketServer(
          new InetSocketAddress(loopback, 0), size)) {
        System.out.println(Wire.READY + " " + sockets.port() + " "
            + Wire.hex(worker.address()) + " " + Wire.hex(encoded));
        System.out.flush();
        while (System.in.read() >= 0) {
          // Serve until the benchmark closes our standard input.
        }
      }
    } finally {
      if (receiver != null) {
        receiver.close();
      }
      if (exposed != null) {
        exposed.release(token);
        exposed.close();
      }
      if (worker != null) {
        worker.close();
      }
      context.close();
    }
    System.exit(0);
  }

  /**
   * The worker's message handler, inside UCX's callback: a hello makes the
   * endpoint back to the benchmark (on the progress thread, never inside
   * the callback) and is answered once that is up; payload messages are
   * copied into a landing buffer and answered after SIZE bytes. Never
   * throws; allocates nothing per message.
   */
  private static final class Receiver implements MessageHandler, Closeable {
    private static final int ACK_RING = 16;

    private final UcxWorker worker;
    private final int size;
    private final ByteBuffer landing;
    private final HelloMessage hello = new HelloMessage();
    private final ByteBuffer acks = ByteBuffer.allocateDirect(
        ACK_RING * Wire.ACK_BYTES);
    private final long acksAddress;
    private final StatusSlots ackSlots = new StatusSlots(ACK_RING);
    private volatile UcxEndpoint back;
    private int received;
    private long answered;

    Receiver(UcxWorker worker, int size) {
      this.worker = worker;
      this.size = size;
      this.landing = ByteBuffer.allocateDirect(size);
      this.acksAddress = UcxUtils.getAddress(acks);
    }

    @Override
    public void onMessage(ByteBuffer message, int length, long replyEndpoint) {
      try {
        if (received == 0 && length >= 8
            && message.getInt(0) == MessageHeader.MAGIC
            && PacketDescriptor.typeOf(message, length) == HelloMessage.TYPE) {
          onHello(hello.wrap(message, 0, length).validate().address());
          return;
        }
        if (received + length > size) {
          System.err.println("peer: dropped " + length + " bytes past a"
              + " payload of " + size);
          received = 0;
          return;
        }
        ByteBuffer from = message.duplicate();
        from.limit(length).position(0);
        ByteBuffer into = landing.duplicate();
        into.position(received);
        into.put(from);
        received += length;
        if (received == size) {
          received = 0;
          answer();
        }
      } catch (Throwable t) {
        System.err.println("peer: message failed: " + t);
      }
    }

    /** Connects back to the benchmark; answers once connected. */
    private void onHello(byte[] address) {
      worker.execute(() -> UcxEndpoint.connect(worker, address, "benchmark",
          CONNECT_TIMEOUT_MS).whenComplete((e, error) -> {
            if (error != null) {
              System.err.println("peer: no endpoint back to the benchmark: "
                  + error);
              return;
            }
            UcxEndpoint old = back;
            back = e;
            if (old != null) {
              worker.execute(old::close);
            }
            answer();
          }));
    }

    /** Sends an 8-byte answer; UCX's callback or the progress thread. */
    private synchronized void answer() {
      UcxEndpoint e = back;
      if (e == null) {
        System.err.println("peer: a payload arrived before the benchmark's"
            + " hello; not answered");
        return;
      }
      int slot = (int) (answered % ACK_RING);
      if (ackSlots.inProgress(slot)) {
        System.err.println("peer: answer ring full; not answered");
        return;
      }
      answered++;
      acks.putLong(slot * Wire.ACK_BYTES, answered);
      try {
        e.send(acksAddress + (long) slot * Wire.ACK_BYTES, Wire.ACK_BYTES,
            ackSlots.address(slot));
      } catch (IOException ex) {
        System.err.println("peer: answer failed: " + ex.getMessage());
      }
    }

    @Override
    public void close() {
      UcxEndpoint e = back;
      if (e != null) {
        e.close();
      }
    }
  }

/** Blocking TCP server: a thread per connection, as HDFS's DataXceiver. */
  private static final class SocketServer implements Closeable {
    private final ServerSocketChannel server;
    private final ExecutorService handlers = Executors.newCachedThreadPool(
        r -> {
          Thread t = new Thread(r, "peer-socket");
          t.setDaemon(true);
          return t;
        });
    /** Handler threads are reused: their buffers with them. */
    private final ThreadLocal<ByteBuffer> buffers;

    SocketServer(InetSocketAddress bind, int size) throws IOException {
      this.buffers = ThreadLocal.withInitial(
          () -> ByteBuffer.allocateDirect(size));
      this.server = ServerSocketChannel.open();
      server.bind(bind, 128);
      Thread acceptor = new Thread(this::accept, "peer-accept");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    int port() {
      return server.socket().getLocalPort();
    }

    private void accept() {
      while (server.isOpen()) {
        try {
          SocketChannel channel = server.accept();
          channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
          handlers.execute(() -> serve(channel));
        } catch (ClosedChannelException e) {
          return;
        } catch (IOException e) {
          System.err.println("peer: accept failed: " + e);
        }
      }
    }

    private void serve(SocketChannel channel) {
      ByteBuffer in = buffers.get();
      ByteBuffer ack = ByteBuffer.allocateDirect(Wire.ACK_BYTES);
      long seqno = 0;
      try (SocketChannel c = channel) {
        while (true) {
          in.clear();
          while (in.hasRemaining()) {
            if (c.read(in) < 0) {
              return; // the benchmark closed the connection
            }
          }
          ack.clear();
          ack.putLong(0, ++seqno);
          while (ack.hasRemaining()) {
            c.write(ack);
          }
        }
      } catch (IOException e) {
        // The benchmark went away mid-transfer: nothing to serve.
      }
    }

    @Override
    public void close() throws IOException {
      server.close();
      handlers.shutdownNow();
    }
  }
}
