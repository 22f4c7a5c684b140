package org.hdfsrdma.ucx;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * The other JVM of the two-process tests ({@link PeerProcess} starts it).
 * It lives until its standard input closes, so it dies with the test JVM
 * that started it, however that one ends.
 *
 * <ul>
 * <li>{@code get TLS}: a DataNode's role. Prints {@code READY <worker
 * address in hex>}, then reads every packet it is sent a descriptor for
 * (directly from shared memory, or with a get over tcp), checks the test
 * pattern seeded with the packet's seqno and prints
 * {@code VERIFIED seqno length direct|get}, {@code CORRUPT seqno index} or
 * {@code FAILED seqno reason}; rejected messages print
 * {@code REJECTED reason}.</li>
 * <li>{@code expose TLS GETTER_ADDRESS SIZE...}: a client's role. Connects
 * to the getter's worker address (hex), says hello, exposes one packet per
 * SIZE in one region (packet i holds the pattern seeded with i), announces
 * the region as id 1 of session 7, sends a descriptor for each packet and
 * prints {@code SENT count}. Keeps the memory exposed.</li>
 * <li>{@code hooks TLS}: loads UCX, opens a context and a worker as a
 * DataNode does, prints {@code HOOKS [names]} (libc's functions UCX
 * rewrote, {@link NativeIntrospection#rewrittenLibcFunctions()}) and
 * exits.</li>
 * </ul>
 */
public final class PeerMain {

  private PeerMain() {
  }

  public static void main(String[] args) throws Exception {
    try {
      if (args[0].equals("get")) {
        get(args[1]);
      } else if (args[0].equals("hooks")) {
        try (TestGetter getter = new TestGetter(args[1])) {
          say("HOOKS [" + NativeIntrospection.rewrittenLibcFunctions() + "]");
        }
      } else if (args[0].equals("expose")) {
        int[] sizes = new int[args.length - 3];
        for (int i = 0; i < sizes.length; i++) {
          sizes[i] = Integer.parseInt(args[3 + i]);
        }
        expose(args[1], UcxTestUtils.unhex(args[2]), sizes);
      } else {
        throw new IllegalArgumentException("unknown mode " + args[0]);
      }
    } catch (Throwable t) {
      System.out.println("ERROR " + t);
      t.printStackTrace();
      Runtime.getRuntime().halt(1);
    }
    // Closing UCX must not keep a dead test's peer alive.
    Runtime.getRuntime().halt(0);
  }

  private static void say(String line) {
    synchronized (System.out) {
      System.out.println(line);
      System.out.flush();
    }
  }

  private static void get(String tls) throws Exception {
    try (TestGetter getter = new TestGetter(tls);
         RegisteredBufferPool landing = new RegisteredBufferPool(
             getter.context, "landing", 4 << 20, 4 << 20, 8 << 20, false)) {
      Thread reader = new Thread(() -> serve(getter, landing), "verifier");
      reader.setDaemon(true);
      reader.start();
      say("READY " + UcxTestUtils.hex(getter.worker.address()));
      awaitEndOfInput();
    }
  }

  private static void serve(TestGetter getter,
      RegisteredBufferPool landing) {
    StatusSlots slots = new StatusSlots(1);
    UcxWorker.Driver driver = getter.worker.registerDriver();
    try {
      while (getter.worker.isRunning()) {
        String rejected;
        while ((rejected = getter.rejections.poll()) != null) {
          say("REJECTED " + rejected);
        }
        PacketDescriptor d = getter.poll(driver, 100);
        if (d == null) {
          continue;
        }
        try {
          RemoteRegion region = getter.regions.get(d.regionId());
          String how = region != null && region.isDirect() ? " direct"
              : " get";
          byte[] bytes = getter.fetch(driver, d, landing, slots, 30_000);
          int bad = UcxTestUtils.firstMismatch(ByteBuffer.wrap(bytes),
              bytes.length, d.seqno());
          say(bad < 0 ? "VERIFIED " + d.seqno() + " " + bytes.length + how
              : "CORRUPT " + d.seqno() + " " + bad);
        } catch (Exception e) {
          say("FAILED " + d.seqno() + " " + e);
        }
      }
    } finally {
      getter.worker.unregisterDriver(driver);
    }
  }

  private static void expose(String tls, byte[] getterAddress, int[] sizes)
      throws Exception {
    int largest = Arrays.stream(sizes).max().orElse(1);
    try (TestExposer exposer = new TestExposer(tls, getterAddress, largest,
        sizes.length)) {
      long[] tokens = new long[sizes.length];
      for (int i = 0; i < sizes.length; i++) {
        tokens[i] = exposer.pool.acquire(1000);
        UcxTestUtils.fill(exposer.pool.buffer(tokens[i]), sizes[i], i);
      }
      exposer.announce(7L, 1, tokens[0]);
      for (int i = 0; i < sizes.length; i++) {
        exposer.describe(7L, 1, tokens[i], sizes[i], i);
      }
      say("SENT " + sizes.length);
      awaitEndOfInput();
      for (long t : tokens) {
        exposer.pool.release(t);
      }
    }
  }

  /** Blocks until the parent closes this process's standard input. */
  private static void awaitEndOfInput() throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
        StandardCharsets.UTF_8));
    while (in.readLine() != null) {
      // The parent closes our standard input when it is done with us.
    }
    // Closing must not hang a peer whose parent is gone.
    Thread halt = new Thread(() -> {
      try {
        TimeUnit.SECONDS.sleep(20);
      } catch (InterruptedException e) {
        return;
      }
      Runtime.getRuntime().halt(3);
    }, "halt-if-stuck");
    halt.setDaemon(true);
    halt.start();
  }
}
