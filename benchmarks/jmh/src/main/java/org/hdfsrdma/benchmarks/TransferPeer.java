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
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.BenchmarkAccess;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBuffer;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxListener;
import org.hdfsrdma.ucx.UcxWorker;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucp.UcpAmRecvCallback;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * The other side of {@link TransferBenchmark}, in its own JVM (two UCX
 * workers in one process can trip a UCX 1.13 assertion; the product runs
 * one worker per JVM). For payloads of SIZE bytes it serves, on loopback:
 *
 * <ul>
 * <li>a TCP server socket: each connection reads exactly SIZE bytes at a
 * time and answers each with an 8-byte ack (one thread per connection, as
 * a DataNode's DataXceiver);</li>
 * <li>a UCX listener of the bridge, on a worker created as the product's
 * UcxRuntime creates it (default options: UCX picks the transports, peer
 * error handling on). Active messages of SIZE bytes land in registered
 * memory and are answered with an 8-byte active message on the endpoint
 * they came on;</li>
 * <li>one registered buffer of SIZE bytes for gets, described by a packet
 * descriptor.</li>
 * </ul>
 *
 * <pre>java -cp benchmarks.jar org.hdfsrdma.benchmarks.TransferPeer SIZE</pre>
 *
 * Prints {@code READY ucxPort socketPort descriptorHex} and serves until its
 * standard input closes.
 */
public final class TransferPeer {

  private TransferPeer() {
  }

  public static void main(String[] args) throws Exception {
    Wire.defaultLogLevel();
    int size = Integer.parseInt(args[0]);
    InetAddress loopback = InetAddress.getLoopbackAddress();
    try (UcxContext context = new UcxContext(UcxContext.Options.defaults());
         UcxWorker worker = new UcxWorker(context, "bench-peer");
         RegisteredBufferPool exposedPool = new RegisteredBufferPool(context,
             "exposed", size, size, size, false);
         RegisteredBufferPool landingPool = new RegisteredBufferPool(context,
             "landing", size, size, size, false)) {
      worker.start();
      RegisteredBuffer exposed = exposedPool.acquire(1000);
      RegisteredBuffer landing = landingPool.acquire(1000);
      for (int i = 0; i < size; i++) {
        exposed.buffer().put(i, (byte) (i * 31 + 7));
      }
      BenchmarkAccess.setActiveMessageHandler(worker, Wire.DATA_AM_ID,
          new Receiver(landing));
      UcxListener listener = UcxListener.open(worker,
          new InetSocketAddress(loopback, 0), c -> { }).get(30,
              TimeUnit.SECONDS);
      ByteBuffer message = ByteBuffer.allocateDirect(
          PacketDescriptor.MAX_LENGTH);
      PacketDescriptor descriptor = new PacketDescriptor().wrap(message, 0,
          message.capacity()).encode(1, 1, 1, 0, 0, (short) 0,
              exposed.regionId(), exposed.regionAddress(),
              exposed.regionLength(), exposed.address(), 0, size,
              exposed.remoteKey());
      byte[] encoded = new byte[descriptor.length()];
      message.duplicate().get(encoded);
      try (SocketServer sockets = new SocketServer(
          new InetSocketAddress(loopback, 0), size)) {
        System.out.println(Wire.READY + " " + listener.address().getPort()
            + " " + sockets.port() + " " + Wire.hex(encoded));
        System.out.flush();
        while (System.in.read() >= 0) {
          // Serve until the benchmark closes our standard input.
        }
      }
      listener.close();
      BenchmarkAccess.removeActiveMessageHandler(worker, Wire.DATA_AM_ID);
      exposed.release();
      landing.release();
    }
    System.exit(0);
  }

  /**
   * Receives a payload into registered memory and acknowledges it; on the
   * progress thread. Small payloads arrive whole (eager) and are copied;
   * large ones arrive as a rendezvous that UCX completes into the landing
   * buffer. Never throws.
   */
  private static final class Receiver implements UcpAmRecvCallback {
    private final RegisteredBuffer landing;
    private final ByteBuffer ack = ByteBuffer.allocateDirect(Wire.ACK_BYTES);
    private final UcxCallback ackSent = new UcxCallback() {
      @Override
      public void onSuccess(UcpRequest request) {
      }

      @Override
      public void onError(int status, String message) {
        System.err.println("peer: ack failed: " + message + " (" + status
            + ")");
      }
    };

    Receiver(RegisteredBuffer landing) {
      this.landing = landing;
    }

    @Override
    public int onReceive(long headerAddress, long headerLength,
        UcpAmData data, UcpEndpoint replyEndpoint) {
      try {
        long length = data.getLength();
        if (length > landing.capacity() || replyEndpoint == null) {
          System.err.println("peer: dropped a payload of " + length
              + " bytes" + (replyEndpoint == null ? " with no reply endpoint"
                  : ""));
          return UcsConstants.STATUS.UCS_OK;
        }
        if (data.isDataValid()) {
          ByteBuffer into = landing.buffer().duplicate();
          into.clear();
          into.put(UcxUtils.getByteBufferView(data.getDataAddress(),
              (int) length));
          acknowledge(replyEndpoint);
        } else {
          data.receive(landing.address(), new UcxCallback() {
            @Override
            public void onSuccess(UcpRequest request) {
              acknowledge(replyEndpoint);
            }

            @Override
            public void onError(int status, String message) {
              System.err.println("peer: receive failed: " + message + " ("
                  + status + ")");
            }
          });
        }
      } catch (Throwable t) {
        System.err.println("peer: receive failed: " + t);
      }
      return UcsConstants.STATUS.UCS_OK;
    }

    private void acknowledge(UcpEndpoint to) {
      try {
        to.sendAmNonBlocking(Wire.ACK_AM_ID, 0, 0,
            UcxUtils.getAddress(ack), Wire.ACK_BYTES, 0, ackSent);
      } catch (Throwable t) {
        System.err.println("peer: ack failed: " + t);
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
