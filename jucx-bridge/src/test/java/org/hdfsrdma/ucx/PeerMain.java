package org.hdfsrdma.ucx;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The other JVM of the two-process tests. It lives until its standard input
 * closes, so it dies with the test that started it.
 *
 * <ul>
 * <li>{@code expose PORT TLS ERRH SIZE...}: the client's role. Connects to
 * the listener on PORT, exposes one packet per SIZE (packet i holds the
 * test pattern seeded with i) and sends a descriptor for each. Keeps the
 * memory exposed and progressed.</li>
 * <li>{@code serve PORT TLS ERRH}: the DataNode's role. Listens on PORT
 * (0: any), gets every packet it is sent a descriptor for, checks the
 * pattern and prints {@code VERIFIED seqno bytes} or {@code CORRUPT}.</li>
 * </ul>
 * Either prints {@code READY port} once it can be used.
 */
public final class PeerMain {

  private PeerMain() {
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    int port = Integer.parseInt(args[1]);
    UcxContext.Options options = UcxContext.Options.defaults()
        .withUcxConfig("TLS", args[2])
        .withPeerErrorHandling(Boolean.parseBoolean(args[3]));
    InetSocketAddress address = new InetSocketAddress(
        InetAddress.getLoopbackAddress(), port);
    if (mode.equals("expose")) {
      int[] sizes = new int[args.length - 4];
      for (int i = 0; i < sizes.length; i++) {
        sizes[i] = Integer.parseInt(args[4 + i]);
      }
      expose(options, address, sizes);
    } else {
      serve(options, address);
    }
  }

  private static void expose(UcxContext.Options options,
      InetSocketAddress listener, int[] sizes) throws Exception {
    int largest = 1;
    for (int size : sizes) {
      largest = Math.max(largest, size);
    }
    List<RegisteredBuffer> packets = new ArrayList<RegisteredBuffer>();
    try (UcxContext context = new UcxContext(options);
         UcxWorker worker = new UcxWorker(context, "exposer");
         RegisteredBufferPool pool = new RegisteredBufferPool(context,
             "exposed", largest, largest, (long) largest * sizes.length,
             false)) {
      worker.start();
      UcxConnection connection = UcxConnection.connect(worker, listener)
          .get(30, TimeUnit.SECONDS);
      List<ByteBuffer> messages = new ArrayList<ByteBuffer>();
      for (int i = 0; i < sizes.length; i++) {
        RegisteredBuffer packet = pool.acquire(1000);
        packets.add(packet);
        UcxTestUtils.fill(packet.buffer(), sizes[i], i);
        ByteBuffer message = ByteBuffer.allocateDirect(
            PacketDescriptor.MAX_LENGTH);
        messages.add(message);
        connection.sendDescriptor(UcxTestUtils.describe(packet, sizes[i], i,
            message), 30_000).get(30, TimeUnit.SECONDS);
      }
      System.out.println("READY " + listener.getPort());
      System.out.flush();
      waitForParent();
      for (RegisteredBuffer packet : packets) {
        packet.release();
      }
    }
  }

  private static void serve(UcxContext.Options options,
      InetSocketAddress bindAddress) throws Exception {
    try (UcxContext context = new UcxContext(options);
         UcxWorker worker = new UcxWorker(context, "server");
         RegisteredBufferPool landing = new RegisteredBufferPool(context,
             "landing", 4 << 20, 4 << 20, 16 << 20, false)) {
      worker.setMaxPacketBytes(4 << 20);
      worker.setDescriptorHandler((from, d) -> {
        RegisteredBuffer target;
        try {
          target = landing.acquire(0);
        } catch (Exception e) {
          System.out.println("FAILED " + d.seqno() + " " + e);
          return;
        }
        from.get(d, target, 30_000).whenComplete((ok, error) -> {
          if (error != null) {
            System.out.println("FAILED " + d.seqno() + " " + error);
          } else {
            int bad = UcxTestUtils.firstMismatch(target.buffer(),
                d.packetLength(), d.seqno());
            System.out.println((bad < 0 ? "VERIFIED " : "CORRUPT ")
                + d.seqno() + " " + d.packetLength());
          }
          System.out.flush();
          target.release();
        });
      });
      worker.start();
      UcxListener listener = UcxListener.open(worker, bindAddress, c -> { })
          .get(30, TimeUnit.SECONDS);
      System.out.println("READY " + listener.address().getPort());
      System.out.flush();
      waitForParent();
    }
  }

  private static void waitForParent() throws java.io.IOException {
    while (System.in.read() >= 0) {
      // The parent closes our standard input when it is done with us.
    }
  }
}
