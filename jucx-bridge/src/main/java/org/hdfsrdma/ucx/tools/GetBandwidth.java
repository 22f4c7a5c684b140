package org.hdfsrdma.ucx.tools;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegisteredBuffer;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.TransportReport;
import org.hdfsrdma.ucx.UcxConnection;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxListener;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * Get bandwidth of the bridge between two JVMs, in the write path's
 * pattern: a client process exposes a ring of packet buffers and sends a
 * descriptor for each; this process gets them round-robin with a window of
 * gets in flight. The counterpart of native/'s ucx_fanout_bench with one
 * getter, so the Java path can be held against raw UCX.
 *
 * <pre>
 * java -cp jucx-bridge.jar:jucx.jar:slf4j-api.jar \
 *   org.hdfsrdma.ucx.tools.GetBandwidth [-s SIZE] [-n GETS] [-w WINDOW]
 *   [--tls TLS] [--no-err-handling] [--csv]
 * </pre>
 */
public final class GetBandwidth {

  private static final int RING = 64;

  private GetBandwidth() {
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("expose")) {
      for (int i = 5; i + 1 < args.length; i += 2) {
        extraConfig.add(args[i]);
        extraConfig.add(args[i + 1]);
      }
      expose(Integer.parseInt(args[1]), args[2], Boolean.parseBoolean(args[3]),
          Integer.parseInt(args[4]));
      return;
    }
    int size = 64 * 1024;
    long gets = -1;
    int window = 16;
    String tls = null;
    boolean errorHandling = true;
    boolean csv = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "-s": size = Integer.parseInt(args[++i]); break;
        case "-n": gets = Long.parseLong(args[++i]); break;
        case "-w": window = Integer.parseInt(args[++i]); break;
        case "--tls": tls = args[++i]; break;
        case "--no-err-handling": errorHandling = false; break;
        case "--csv": csv = true; break;
        case "-v": verbose = true; break;
        case "--ucx":
          String[] kv = args[++i].split("=", 2);
          extraConfig.add(kv[0]);
          extraConfig.add(kv[1]);
          break;
        default:
          System.err.println("unknown argument " + args[i]);
          System.exit(2);
      }
    }
    if (gets < 0) {
      gets = Math.max(256, (1L << 30) / size); // about 1 GiB
    }
    run(size, gets, window, tls, errorHandling, csv);
  }

  /** -v: print UCX's own description of the connection. */
  private static boolean verbose;

  /** UCX settings from --ucx KEY=VALUE, as key, value, key, value... */
  private static final List<String> extraConfig = new ArrayList<String>();

  private static UcxContext.Options options(String tls, boolean errh) {
    UcxContext.Options o = UcxContext.Options.defaults()
        .withPeerErrorHandling(errh);
    for (int i = 0; i < extraConfig.size(); i += 2) {
      o = o.withUcxConfig(extraConfig.get(i), extraConfig.get(i + 1));
    }
    return tls == null || tls.isEmpty() ? o : o.withUcxConfig("TLS", tls);
  }

  private static void run(int size, long gets, int window, String tls,
      boolean errh, boolean csv) throws Exception {
    BlockingQueue<Object[]> descriptors = new LinkedBlockingQueue<Object[]>();
    try (UcxContext context = new UcxContext(options(tls, errh));
         UcxWorker worker = new UcxWorker(context, "getter");
         RegisteredBufferPool landing = new RegisteredBufferPool(context,
             "landing", size, (long) size * window, (long) size * window,
             false)) {
      worker.setMaxPacketBytes(size);
      worker.setDescriptorHandler((from, d) -> descriptors.add(
          new Object[] {from, d}));
      worker.start();
      UcxListener listener = UcxListener.open(worker, new InetSocketAddress(
          InetAddress.getLoopbackAddress(), 0), c -> { }).get(30,
              TimeUnit.SECONDS);
      Process exposer = startExposer(listener.address().getPort(), tls, errh,
          size);
      try {
        UcxConnection from = null;
        PacketDescriptor[] ring = new PacketDescriptor[RING];
        for (int i = 0; i < RING; i++) {
          Object[] got = descriptors.poll(60, TimeUnit.SECONDS);
          if (got == null) {
            throw new IOException("the exposing process sent no descriptors");
          }
          from = (UcxConnection) got[0];
          ring[i] = (PacketDescriptor) got[1];
        }
        RegisteredBuffer[] targets = new RegisteredBuffer[window];
        for (int i = 0; i < window; i++) {
          targets[i] = landing.acquire(1000);
        }
        // Warm up: connection wire-up and remote key unpacking.
        for (int i = 0; i < RING; i++) {
          from.get(ring[i], targets[0], 30_000).get(30, TimeUnit.SECONDS);
        }
        long[] latencies = new long[(int) Math.min(gets, 1 << 22)];
        Refill refill = new Refill(from, ring, targets, gets, latencies);
        long start = System.nanoTime();
        for (int i = 0; i < window; i++) {
          refill.next(i);
        }
        refill.done.get(10, TimeUnit.MINUTES);
        long elapsed = System.nanoTime() - start;
        TransportReport report = from.transports().get(30, TimeUnit.SECONDS);
        if (verbose) {
          System.out.println(report.raw());
        }
        report(size, gets, window, tls, errh, elapsed,
            Arrays.copyOf(latencies, (int) Math.min(gets, latencies.length)),
            report, csv);
        for (RegisteredBuffer t : targets) {
          t.release();
        }
      } finally {
        exposer.getOutputStream().close();
        if (!exposer.waitFor(10, TimeUnit.SECONDS)) {
          exposer.destroyForcibly();
        }
      }
    }
  }

  private static void report(int size, long gets, int window, String tls,
      boolean errh, long elapsedNanos, long[] latencies,
      TransportReport transports, boolean csv) {
    Arrays.sort(latencies);
    double seconds = elapsedNanos / 1e9;
    long bytes = (long) size * gets;
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
          String.join("+", transports.rmaTransports())));
    } else {
      System.out.println(String.format(Locale.ROOT,
          "bridge get: %d x %d B (window %d, UCX_TLS=%s, peer error"
          + " handling %s): %.3f GB/s, latency mean %.1f us, p50 %.1f us,"
          + " p99 %.1f us; %s", gets, size, window, tlsName,
          errh ? "on" : "off", gbps, mean, p50, p99, transports));
    }
  }

  private static Process startExposer(int port, String tls, boolean errh,
      int size) throws IOException {
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + File.separator + "bin"
        + File.separator + "java");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(GetBandwidth.class.getName());
    command.add("expose");
    command.add(String.valueOf(port));
    command.add(tls == null ? "" : tls);
    command.add(String.valueOf(errh));
    command.add(String.valueOf(size));
    command.addAll(extraConfig);
    return new ProcessBuilder(command).redirectOutput(
        ProcessBuilder.Redirect.INHERIT).redirectError(
            ProcessBuilder.Redirect.INHERIT).start();
  }

  /**
   * Keeps a window of gets in flight: each completion starts the next get
   * from the progress thread that ran it, as a DataNode's descriptor
   * handler does, so the measurement includes no extra thread hand-off.
   */
  private static final class Refill {
    private final UcxConnection from;
    private final PacketDescriptor[] ring;
    private final RegisteredBuffer[] targets;
    private final long total;
    private final long[] latencies;
    private final AtomicLong issued = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    final CompletableFuture<Void> done = new CompletableFuture<Void>();

    Refill(UcxConnection from, PacketDescriptor[] ring,
        RegisteredBuffer[] targets, long total, long[] latencies) {
      this.from = from;
      this.ring = ring;
      this.targets = targets;
      this.total = total;
      this.latencies = latencies;
    }

    void next(int target) {
      long n = issued.getAndIncrement();
      if (n >= total) {
        return;
      }
      long posted = System.nanoTime();
      from.get(ring[(int) (n % RING)], targets[target], 30_000)
          .whenComplete((ok, error) -> {
            latencies[(int) (n % latencies.length)] = System.nanoTime()
                - posted;
            if (error != null) {
              done.completeExceptionally(error);
            } else if (completed.incrementAndGet() == total) {
              done.complete(null);
            } else {
              // Not inline: a get of shared memory completes inside the
              // call that starts it, and the chain would grow the stack.
              from.worker().executeLater(() -> next(target));
            }
          });
    }
  }

  /** The exposing process: a ring of packets, one descriptor each. */
  private static void expose(int port, String tls, boolean errh, int size)
      throws Exception {
    try (UcxContext context = new UcxContext(options(tls, errh));
         UcxWorker worker = new UcxWorker(context, "exposer");
         RegisteredBufferPool pool = new RegisteredBufferPool(context,
             "exposed", size, (long) size * RING, (long) size * RING, false)) {
      worker.start();
      UcxConnection connection = UcxConnection.connect(worker,
          new InetSocketAddress(InetAddress.getLoopbackAddress(), port))
          .get(30, TimeUnit.SECONDS);
      List<RegisteredBuffer> packets = new ArrayList<RegisteredBuffer>();
      for (int i = 0; i < RING; i++) {
        RegisteredBuffer packet = pool.acquire(1000);
        packets.add(packet);
        ByteBuffer message = ByteBuffer.allocateDirect(
            PacketDescriptor.MAX_LENGTH);
        PacketDescriptor d = new PacketDescriptor().wrap(message, 0,
            message.capacity()).encode(1, 1, 1, i, (long) i * size, (short) 0,
                packet.regionId(), packet.regionAddress(),
                packet.regionLength(), packet.address(), 0, size,
                packet.remoteKey());
        connection.sendDescriptor(d, 30_000).get(30, TimeUnit.SECONDS);
      }
      while (System.in.read() >= 0) {
        // Serve gets until the getter closes our standard input.
      }
      for (RegisteredBuffer packet : packets) {
        packet.release();
      }
    }
  }
}
