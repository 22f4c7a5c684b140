package org.hdfsrdma.ucx.tools;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.Closeables;
import org.hdfsrdma.ucx.HelloMessage;
import org.hdfsrdma.ucx.MessageHandler;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.TransportReport;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * Packet read bandwidth of the bridge between two JVMs, in the write
 * path's pattern: a client process exposes a ring of packet buffers in one
 * region, announces it and sends a descriptor for each packet; this
 * process, the DataNode, reads the packets round-robin from one driver
 * thread, as a BlockReceiver does: straight from the client's shared
 * memory into a heap buffer when the region is read directly (same host),
 * otherwise with UCX gets into registered landing buffers, a window of
 * them in flight, each copied to the heap buffer once it landed. The
 * counterpart of native/'s {@code ucx_fanout_bench -r 1}, so that the Java
 * path can be held against raw UCX
 * ({@code dev-support/measure-get-bandwidth.sh}).
 *
 * <pre>
 * java -cp jucx-bridge.jar:jucx.jar:slf4j-api.jar \
 *   org.hdfsrdma.ucx.tools.GetBandwidth [-s SIZE] [-n READS] [-w WINDOW]
 *   [--tls TLS] [--no-err-handling] [--ucx KEY=VALUE]... [--csv] [-v]
 * </pre>
 *
 * <p>CSV (one line): size, 1 (getters), UCX_TLS, peer error handling (1 or
 * 0), bytes, seconds, GB/s, GB/s per getter, read latency mean, p50 and
 * p99 in us, window, how the bytes moved ("direct", or "get over" UCX's
 * RMA lanes, or "am:" its active-message lanes when UCX emulates gets).
 *
 * <p>This class is the getter and its measuring loop; the command line and
 * the result line are a {@link Measurement}'s, the client process a
 * {@link PacketExposer}.
 */
public final class GetBandwidth {

  /** The longest any step may take, in either process. */
  static final long WAIT_MS = 60_000;
  private static final int RING = PacketExposer.RING;

  private GetBandwidth() {
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("expose")) {
      PacketExposer.main(args);
      Runtime.getRuntime().halt(0);
    }
    Measurement m;
    try {
      m = Measurement.parse(args);
    } catch (IllegalArgumentException | ArrayIndexOutOfBoundsException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    int rc = run(m);
    // UCX's own threads must not keep a finished measurement alive.
    Runtime.getRuntime().halt(rc);
  }

  // ---------------------------------------------------------- the getter

  /**
   * What the client sent, as a DataNode's handler takes it: the hello (its
   * worker address, to connect back to), the region, RING descriptors.
   */
  private static final class Session implements MessageHandler {
    final UcxWorker worker;
    final byte[][] ring = new byte[RING][];
    volatile int described;
    volatile RemoteRegion region;
    volatile UcxEndpoint back;
    volatile String problem;
    private final HelloMessage hello = new HelloMessage();
    private final RegionAnnouncement announcement = new RegionAnnouncement();
    private final PacketDescriptor descriptor = new PacketDescriptor();

    Session(UcxWorker worker) {
      this.worker = worker;
    }

    @Override
    public void onMessage(ByteBuffer message, int length, long replyEndpoint) {
      try {
        int type = PacketDescriptor.typeOf(message, length);
        if (type == HelloMessage.TYPE) {
          byte[] address = hello.wrap(message, 0, length).validate()
              .address();
          worker.execute(() -> UcxEndpoint.connect(worker, address, "client",
              WAIT_MS).whenComplete((e, error) -> {
                if (error != null) {
                  problem = "connecting back: " + error;
                } else {
                  back = e;
                }
              }));
        } else if (type == RegionAnnouncement.TYPE) {
          announcement.wrap(message, 0, length).validate();
          region = RemoteRegion.open(replyEndpoint, announcement,
              new RemoteRegion.Policy(id -> false, true), "client");
        } else {
          descriptor.wrap(message, 0).validate(length);
          int i = described;
          if (i < RING) {
            byte[] copy = new byte[PacketDescriptor.LENGTH];
            descriptor.copyTo(ByteBuffer.wrap(copy), 0);
            ring[i] = copy;
            described = i + 1;
          }
        }
      } catch (IOException | RuntimeException e) {
        problem = e.toString();
      }
    }
  }

  private static int run(Measurement m) throws Exception {
    try (UcxContext context = new UcxContext(m.ucxOptions())) {
      UcxWorker worker = new UcxWorker(context, "getter");
      Session session = new Session(worker);
      worker.setMessageHandler(session);
      worker.start();
      RegisteredBufferPool landing = new RegisteredBufferPool(context,
          "landing", m.size, (long) m.size * m.window,
          (long) m.size * m.window, false);
      Process client = PacketExposer.start(worker.address(), m);
      UcxWorker.Driver driver = worker.registerDriver();
      try {
        if (!worker.drive(driver, () -> session.problem != null
            || (session.described == RING && session.region != null
                && session.back != null),
            TimeUnit.MILLISECONDS.toNanos(WAIT_MS))
            || session.problem != null) {
          throw new IOException("the client process did not set up its"
              + " session: " + (session.problem != null ? session.problem
                  : "timed out"));
        }
        PacketDescriptor[] ring = new PacketDescriptor[RING];
        for (int i = 0; i < RING; i++) {
          ring[i] = new PacketDescriptor().wrap(ByteBuffer.wrap(
              session.ring[i]), 0);
        }
        Reader reader = session.region.isDirect()
            ? new DirectReader(session.region, m.size)
            : new GetReader(worker, driver, session.region, session.back,
                landing, m.size, m.window);
        // Warm up: JIT, and UCX's lazy set-up of the lanes.
        reader.read(ring, RING, new long[RING]);
        long[] latencies = new long[(int) Math.min(m.reads, 1 << 22)];
        long start = System.nanoTime();
        reader.read(ring, m.reads, latencies);
        long elapsed = System.nanoTime() - start;
        TransportReport lanes = session.back.transports();
        if (m.verbose) {
          System.out.println(lanes.raw());
        }
        m.report(elapsed, Arrays.copyOf(latencies,
            (int) Math.min(m.reads, latencies.length)),
            session.region.isDirect() ? "direct" : "get over "
                + (lanes.rmaTransports().isEmpty()
                    ? "am:" + String.join("+", lanes.amTransports())
                    : String.join("+", lanes.rmaTransports())), lanes);
        reader.release();
        session.region.release();
        Closeables.closeAll(session.back, landing);
        return 0;
      } finally {
        worker.unregisterDriver(driver);
        client.getOutputStream().close();
        if (!client.waitFor(10, TimeUnit.SECONDS)) {
          client.destroyForcibly();
        }
        worker.close();
      }
    }
  }

  /** Reads packets from the ring, round-robin, timing each. */
  private interface Reader {
    void read(PacketDescriptor[] ring, long count, long[] latencies)
        throws IOException;

    /** Returns what the reader holds. */
    default void release() {
    }
  }

  /**
   * Same host: each packet is copied from the client's segment to the heap
   * buffer, as the DataNode's receiver does.
   */
  private static final class DirectReader implements Reader {
    private final RemoteRegion region;
    private final ByteBuffer view;
    private final byte[] packet;

    DirectReader(RemoteRegion region, int size) {
      this.region = region;
      this.view = region.reader();
      this.packet = new byte[size];
    }

    @Override
    public void read(PacketDescriptor[] ring, long count, long[] latencies) {
      for (long n = 0; n < count; n++) {
        PacketDescriptor d = ring[(int) (n % RING)];
        long t = System.nanoTime();
        view.limit(view.capacity());
        view.position((int) (d.address() - region.base()));
        view.get(packet, 0, (int) d.packetLength());
        latencies[(int) (n % latencies.length)] = System.nanoTime() - t;
      }
    }
  }

  /**
   * Gets into registered landing buffers, {@code window} in flight; the
   * oldest is awaited by driving the worker, copied to the heap buffer, and
   * its slot reused for the next get.
   */
  private static final class GetReader implements Reader {
    private final UcxWorker worker;
    private final UcxWorker.Driver driver;
    private final RemoteRegion region;
    private final UcxEndpoint back;
    private final RegisteredBufferPool landing;
    private final int window;
    private final long[] tokens;
    private final long[] posted;
    private final StatusSlots slots;
    private final byte[] packet;

    GetReader(UcxWorker worker, UcxWorker.Driver driver, RemoteRegion region,
        UcxEndpoint back, RegisteredBufferPool landing, int size, int window)
        throws IOException {
      this.worker = worker;
      this.driver = driver;
      this.region = region;
      this.back = back;
      this.landing = landing;
      this.window = window;
      this.tokens = new long[window];
      this.posted = new long[window];
      this.slots = new StatusSlots(window);
      this.packet = new byte[size];
      for (int i = 0; i < window; i++) {
        tokens[i] = landing.acquire(1000);
      }
    }

    @Override
    public void read(PacketDescriptor[] ring, long count, long[] latencies)
        throws IOException {
      long issued = 0;
      for (int i = 0; i < window && issued < count; i++) {
        start(i, ring[(int) (issued++ % RING)]);
      }
      for (long done = 0; done < count; done++) {
        int slot = (int) (done % window);
        if (!worker.drive(driver, () -> !slots.inProgress(slot),
            TimeUnit.MILLISECONDS.toNanos(WAIT_MS))) {
          throw new IOException("a get did not complete in " + WAIT_MS
              + " ms");
        }
        int status = slots.status(slot);
        if (status != 0) {
          throw new IOException("a get failed: "
              + StatusSlots.describe(status));
        }
        ByteBuffer landed = landing.buffer(tokens[slot]);
        landed.clear();
        landed.get(packet, 0, (int) ring[(int) (done % RING)].packetLength());
        latencies[(int) (done % latencies.length)] = System.nanoTime()
            - posted[slot];
        if (issued < count) {
          start(slot, ring[(int) (issued++ % RING)]);
        }
      }
    }

    @Override
    public void release() {
      for (long t : tokens) {
        landing.release(t);
      }
    }

    private void start(int slot, PacketDescriptor d) throws IOException {
      posted[slot] = System.nanoTime();
      int rc = region.startGet(back, d.address(),
          landing.address(tokens[slot]), (int) d.packetLength(),
          slots.address(slot));
      if (rc < 0) {
        throw new IOException("a get failed to start: "
            + StatusSlots.describe(rc));
      }
    }
  }
}
