package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * The receiving side of the bridge tests: a DataNode's worker whose message
 * handler opens announced regions (through every check of
 * {@link RemoteRegion}) and queues packet descriptors, and a driver that
 * reads each packet from its region.
 */
final class TestGetter implements Closeable, MessageHandler {

  final UcxContext context;
  final UcxWorker worker;
  final RemoteRegion.Policy policy;
  final Map<Integer, RemoteRegion> regions =
      new ConcurrentHashMap<Integer, RemoteRegion>();
  final BlockingQueue<byte[]> descriptors = new ArrayBlockingQueue<byte[]>(
      100_000);
  final BlockingQueue<String> rejections = new ArrayBlockingQueue<String>(
      100_000);
  /** This side's own endpoint back to the latest exposer, from its hello. */
  volatile UcxEndpoint back;
  /** Every endpoint back this getter made, closed with it. */
  final List<UcxEndpoint> backs = new CopyOnWriteArrayList<UcxEndpoint>();
  private final HelloMessage hello = new HelloMessage();
  private final PacketDescriptor reading = new PacketDescriptor();
  private final RegionAnnouncement announcement = new RegionAnnouncement();

  TestGetter(UcxContext.Options options, RemoteRegion.Policy policy)
      throws Exception {
    context = new UcxContext(options);
    try {
      worker = new UcxWorker(context, "getter");
    } catch (Exception | Error e) {
      context.close();
      throw e;
    }
    this.policy = policy;
    worker.setMessageHandler(this);
    worker.start();
  }

  TestGetter(String tls, RemoteRegion.Policy policy) throws Exception {
    this(UcxTestUtils.options(tls), policy);
  }

  TestGetter(String tls) throws Exception {
    this(tls, new RemoteRegion.Policy(id -> false, true));
  }

  @Override
  public void onMessage(ByteBuffer message, int length, long replyEndpoint) {
    try {
      int type = PacketDescriptor.typeOf(message, length);
      if (type == HelloMessage.TYPE) {
        byte[] address = hello.wrap(message, 0, length).validate().address();
        worker.execute(() -> UcxEndpoint.connect(worker, address, "exposer",
            UcxTestUtils.TIMEOUT_MS).thenAccept(e -> {
              backs.add(e);
              back = e;
            }));
      } else if (type == RegionAnnouncement.TYPE) {
        announcement.wrap(message, 0, length).validate();
        RemoteRegion r = RemoteRegion.open(replyEndpoint, announcement,
            policy, "exposer");
        RemoteRegion old = regions.put(announcement.regionId(), r);
        if (old != null) {
          old.release();
        }
      } else {
        reading.wrap(message, 0).validate(length);
        byte[] copy = new byte[PacketDescriptor.LENGTH];
        message.position(0);
        message.get(copy);
        descriptors.add(copy);
      }
    } catch (Exception e) {
      rejections.add(e.getMessage());
    }
  }

  /** The next descriptor, waiting as a driver of the worker. */
  PacketDescriptor next(UcxWorker.Driver driver, long timeoutMs) {
    PacketDescriptor d = poll(driver, timeoutMs);
    if (d == null) {
      throw new AssertionError("no descriptor within " + timeoutMs + " ms; "
          + "rejections " + rejections);
    }
    return d;
  }

  /** The next descriptor, or null after {@code timeoutMs}. */
  PacketDescriptor poll(UcxWorker.Driver driver, long timeoutMs) {
    worker.drive(driver, () -> !descriptors.isEmpty(),
        TimeUnit.MILLISECONDS.toNanos(timeoutMs));
    byte[] bytes = descriptors.poll();
    return bytes == null ? null
        : new PacketDescriptor().wrap(ByteBuffer.wrap(bytes), 0);
  }

  /** Reads a described packet from its (direct) region. */
  byte[] read(PacketDescriptor d) {
    RemoteRegion r = regions.get(d.regionId());
    if (r == null || !r.contains(d.address(), d.packetLength())) {
      throw new AssertionError("no region " + d.regionId() + " holds " + d);
    }
    ByteBuffer reader = r.reader();
    reader.position((int) (d.address() - r.base()));
    byte[] bytes = new byte[(int) d.packetLength()];
    reader.get(bytes);
    return bytes;
  }

  /** Gets a described packet into {@code into} over {@link #back}. */
  void get(PacketDescriptor d, RegisteredBufferPool into, long token,
      StatusSlots slots, int slot) throws IOException {
    UcxTestUtils.waitForUnchecked(() -> back != null, 10_000, "hello");
    RemoteRegion r = regions.get(d.regionId());
    int rc = r.startGet(back, d.address(), into.address(token),
        (int) d.packetLength(), slots.address(slot));
    if (rc < 0) {
      throw new IOException("get failed: " + StatusSlots.describe(rc));
    }
  }

  /**
   * Reads a described packet whichever way its region is read: directly,
   * or with a get into {@code landing} (one buffer of it) that this thread
   * drives to completion.
   */
  byte[] fetch(UcxWorker.Driver driver, PacketDescriptor d,
      RegisteredBufferPool landing, StatusSlots slots, long timeoutMs)
      throws IOException {
    RemoteRegion r = regions.get(d.regionId());
    if (r == null) {
      throw new IOException("no region " + d.regionId());
    }
    if (r.isDirect()) {
      return read(d);
    }
    long token = landing.acquire(timeoutMs);
    try {
      get(d, landing, token, slots, 0);
    } catch (IOException | RuntimeException e) {
      landing.release(token);
      throw e;
    }
    if (!worker.drive(driver, () -> !slots.inProgress(0),
        TimeUnit.MILLISECONDS.toNanos(timeoutMs))) {
      // The landing buffer stays leased: a late completion may still write.
      throw new IOException("get of " + d + " did not complete in "
          + timeoutMs + " ms");
    }
    try {
      if (slots.status(0) != 0) {
        throw new IOException("get of " + d + " from " + back.peer()
            + " failed: " + StatusSlots.describe(slots.status(0)));
      }
      byte[] bytes = new byte[(int) d.packetLength()];
      ByteBuffer landed = landing.buffer(token);
      landed.clear();
      landed.get(bytes);
      return bytes;
    } finally {
      landing.release(token);
    }
  }

  /** Closes every endpoint back made so far (twice: close is idempotent). */
  void closeBacks() {
    for (UcxEndpoint e : backs) {
      e.close();
      e.close();
      backs.remove(e);
    }
    back = null;
  }

  /** Idempotent. */
  @Override
  public void close() {
    for (UcxEndpoint e : backs) {
      e.close();
    }
    backs.clear();
    for (RemoteRegion r : regions.values()) {
      r.release();
    }
    regions.clear();
    worker.close();
    context.close();
  }
}
