package org.hdfsrdma.ucx.tools;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
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
import org.openucx.jucx.UcxUtils;

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
 */
public final class GetBandwidth {

  /** Packets the client exposes and describes. */
  private static final int RING = 64;
  private static final long SESSION = 1;
  private static final long WAIT_MS = 60_000;

  private GetBandwidth() {
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("expose")) {
      List<String> config = new ArrayList<String>(
          Arrays.asList(args).subList(5, args.length));
      expose(unhex(args[1]), options(args[2], Boolean.parseBoolean(args[3]),
          config), Integer.parseInt(args[4]));
      Runtime.getRuntime().halt(0);
    }
    int size = 64 * 1024;
    long reads = -1;
    int window = 16;
    String tls = null;
    boolean errorHandling = true;
    boolean csv = false;
    boolean verbose = false;
    List<String> config = new ArrayList<String>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "-s": size = Integer.parseInt(args[++i]); break;
        case "-n": reads = Long.parseLong(args[++i]); break;
        case "-w": window = Integer.parseInt(args[++i]); break;
        case "--tls": tls = args[++i]; break;
        case "--no-err-handling": errorHandling = false; break;
        case "--csv": csv = true; break;
        case "-v": verbose = true; break;
        case "--ucx":
          String[] kv = args[++i].split("=", 2);
          config.add(kv[0]);
          config.add(kv[1]);
          break;
        default:
          System.err.println("unknown argument " + args[i]);
          System.exit(2);
      }
    }
    if (reads < 0) {
      reads = Math.max(256, (1L << 30) / size); // about 1 GiB
    }
    int rc = run(size, reads, window, tls, errorHandling, config, csv,
        verbose);
    // UCX's own threads must not keep a finished measurement alive.
    Runtime.getRuntime().halt(rc);
  }

  private static UcxContext.Options options(String tls, boolean errh,
      List<String> config) {
    UcxContext.Options o = UcxContext.Options.defaults()
        .withPeerErrorHandling(errh);
    for (int i = 0; i + 1 < config.size(); i += 2) {
      o = o.withUcxConfig(config.get(i), config.get(i + 1));
    }
    return tls == null || tls.isEmpty() ? o : o.withUcxConfig("TLS", tls);
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

  private static int run(int size, long reads, int window, String tls,
      boolean errh, List<String> config, boolean csv, boolean verbose)
      throws Exception {
    try (UcxContext context = new UcxContext(options(tls, errh, config))) {
      UcxWorker worker = new UcxWorker(context, "getter");
      Session session = new Session(worker);
      worker.setMessageHandler(session);
      worker.start();
      RegisteredBufferPool landing = new RegisteredBufferPool(context,
          "landing", size, (long) size * window, (long) size * window, false);
      Process client = startClient(worker.address(), tls, errh, size,
          config);
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
            ? new DirectReader(session.region, size)
            : new GetReader(worker, driver, session.region, session.back,
                landing, size, window);
        // Warm up: JIT, and UCX's lazy set-up of the lanes.
        reader.read(ring, RING, new long[RING]);
        long[] latencies = new long[(int) Math.min(reads, 1 << 22)];
        long start = System.nanoTime();
        reader.read(ring, reads, latencies);
        long elapsed = System.nanoTime() - start;
        TransportReport lanes = session.back.transports();
        if (verbose) {
          System.out.println(lanes.raw());
        }
        report(size, reads, window, tls, errh, elapsed, Arrays.copyOf(
            latencies, (int) Math.min(reads, latencies.length)),
            session.region.isDirect() ? "direct" : "get over "
                + (lanes.rmaTransports().isEmpty()
                    ? "am:" + String.join("+", lanes.amTransports())
                    : String.join("+", lanes.rmaTransports())), lanes, csv);
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

  private static void report(int size, long reads, int window, String tls,
      boolean errh, long elapsedNanos, long[] latencies, String how,
      TransportReport lanes, boolean csv) {
    Arrays.sort(latencies);
    double seconds = elapsedNanos / 1e9;
    long bytes = (long) size * reads;
    double gbps = bytes / seconds / 1e9;
    double mean = 0;
    for (long l : latencies) {
      mean += l;
    }
    mean = mean / latencies.length / 1000.0;
    double p50 = latencies[latencies.length / 2] / 1000.0;
    double p99 = latencies[(int) (latencies.length * 0.99)] / 1000.0;
    String tlsName = tls == null ? "default" : tls;
    if (csv) {
      System.out.println(String.format(Locale.ROOT,
          "%d,1,%s,%d,%d,%.3f,%.3f,%.3f,%.1f,%.1f,%.1f,%d,%s", size, tlsName,
          errh ? 1 : 0, bytes, seconds, gbps, gbps, mean, p50, p99, window,
          how));
    } else {
      System.out.println(String.format(Locale.ROOT,
          "bridge read: %d x %d B (%s, window %d, UCX_TLS=%s, peer error"
          + " handling %s): %.3f GB/s, latency mean %.1f us, p50 %.1f us,"
          + " p99 %.1f us; %s", reads, size, how, window, tlsName,
          errh ? "on" : "off", gbps, mean, p50, p99, lanes));
    }
  }

  private static Process startClient(byte[] getterAddress, String tls,
      boolean errh, int size, List<String> config) throws IOException {
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + File.separator + "bin"
        + File.separator + "java");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(GetBandwidth.class.getName());
    command.add("expose");
    command.add(hex(getterAddress));
    command.add(tls == null ? "" : tls);
    command.add(String.valueOf(errh));
    command.add(String.valueOf(size));
    command.addAll(config);
    return new ProcessBuilder(command).redirectOutput(
        ProcessBuilder.Redirect.INHERIT).redirectError(
            ProcessBuilder.Redirect.INHERIT).start();
  }

  // ---------------------------------------------------------- the client

  /**
   * The client process: a ring of packets in one region, announced, one
   * descriptor each; then its worker serves gets (over tcp the client's
   * CPU sends the bytes) until its standard input closes.
   */
  private static void expose(byte[] getterAddress, UcxContext.Options options,
      int size) throws Exception {
    try (UcxContext context = new UcxContext(options);
         UcxWorker worker = new UcxWorker(context, "client").start();
         RegisteredBufferPool pool = new RegisteredBufferPool(context,
             "exposed", size, (long) size * RING, (long) size * RING,
             false)) {
      UcxEndpoint e = UcxEndpoint.connect(worker, getterAddress, "getter",
          WAIT_MS).get(WAIT_MS, TimeUnit.MILLISECONDS);
      ByteBuffer messages = ByteBuffer.allocateDirect(8192);
      long base = UcxUtils.getAddress(messages);
      StatusSlots slots = new StatusSlots(1);
      send(e, base, new HelloMessage().wrap(messages, 0, 8192)
          .encode(worker.address()).length(), slots);
      long[] tokens = new long[RING];
      for (int i = 0; i < RING; i++) {
        tokens[i] = pool.acquire(1000);
        ByteBuffer b = pool.buffer(tokens[i]);
        for (int j = 0; j < size; j += 4096) {
          b.put(j, (byte) i);
        }
      }
      send(e, base, new RegionAnnouncement().wrap(messages, 0, 8192).encode(
          SESSION, 1, pool.regionAddress(0), pool.regionLength(0),
          pool.regionKey(0)).length(), slots);
      for (int i = 0; i < RING; i++) {
        new PacketDescriptor().wrap(messages, 0).encode(SESSION, 1, 1, i,
            (long) i * size, 0, 1, pool.address(tokens[i]), 0, size);
        send(e, base, PacketDescriptor.LENGTH, slots);
      }
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
          StandardCharsets.UTF_8));
      while (in.readLine() != null) {
        // Serve gets until the getter closes our standard input.
      }
      e.close();
      for (long t : tokens) {
        pool.release(t);
      }
    }
  }

  /** Sends one message and waits until UCX is done with its bytes. */
  private static void send(UcxEndpoint e, long address, int length,
      StatusSlots slots) throws Exception {
    if (e.send(address, length, slots.address(0)) == 0) {
      return;
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (slots.inProgress(0)) {
      if (e.worker().progress() == 0) {
        Thread.yield();
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("a message to the getter was not sent in "
            + WAIT_MS + " ms");
      }
    }
    if (slots.status(0) < 0) {
      throw new IOException("sending to the getter failed: "
          + StatusSlots.describe(slots.status(0)));
    }
  }

  private static String hex(byte[] bytes) {
    StringBuilder sb = new StringBuilder(bytes.length * 2);
    for (byte b : bytes) {
      sb.append(Character.forDigit((b >> 4) & 0xF, 16))
          .append(Character.forDigit(b & 0xF, 16));
    }
    return sb.toString();
  }

  private static byte[] unhex(String s) {
    byte[] bytes = new byte[s.length() / 2];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return bytes;
  }
}
