package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.openucx.jucx.UcxUtils;

/**
 * The sending side of the bridge tests: a client's worker, a pool of
 * exposed buffers and one endpoint to a getter's worker address, with
 * helpers that announce regions and describe packets as the write path
 * does.
 */
final class TestExposer implements Closeable {

  /** How long a queued send may take before it counts as failed. */
  static final long SEND_DEADLINE_MS = 30_000;

  final UcxContext context;
  final UcxWorker worker;
  final RegisteredBufferPool pool;
  final UcxEndpoint endpoint;
  final ByteBuffer messages = ByteBuffer.allocateDirect(64 * 1024);
  final StatusSlots slots = new StatusSlots(64);
  private int next;

  TestExposer(String tls, byte[] getterAddress, int bufferSize, int buffers)
      throws Exception {
    this(UcxTestUtils.options(tls), getterAddress, bufferSize, buffers);
  }

  TestExposer(UcxContext.Options options, byte[] getterAddress,
      int bufferSize, int buffers) throws Exception {
    context = new UcxContext(options);
    UcxWorker w = null;
    RegisteredBufferPool p = null;
    try {
      w = new UcxWorker(context, "exposer").start();
      p = new RegisteredBufferPool(context, "exposed", bufferSize,
          (long) bufferSize * buffers, (long) bufferSize * buffers, true);
      endpoint = UcxEndpoint.connect(w, getterAddress, "getter",
          UcxTestUtils.TIMEOUT_MS).get(UcxTestUtils.TIMEOUT_MS,
              TimeUnit.MILLISECONDS);
    } catch (Exception | Error e) {
      if (p != null) {
        p.close();
      }
      if (w != null) {
        w.close();
      }
      context.close();
      throw e;
    }
    worker = w;
    pool = p;
    HelloMessage hello = new HelloMessage().wrap(messages, 0,
        messages.capacity()).encode(worker.address());
    send(0, hello.length());
  }

  /**
   * Sends the bytes at [offset, offset + length) of {@link #messages} as
   * the write path does: a queued send is awaited at once, with a deadline.
   */
  void send(int offset, int length) throws IOException {
    int slot = next++ % slots.count();
    UcxTestUtils.sendAsWritePath(endpoint,
        UcxUtils.getAddress(messages) + offset, length, slots, slot,
        SEND_DEADLINE_MS);
  }

  /** Announces the region of {@code token} under {@code regionId}. */
  void announce(long session, int regionId, long token) throws IOException {
    int region = pool.regionId(token);
    announce(session, regionId, pool.regionAddress(region),
        pool.regionLength(region), pool.regionKey(region));
  }

  /** Announces whatever it is told to, true or not. */
  void announce(long session, int regionId, long base, long length,
      byte[] key) throws IOException {
    RegionAnnouncement a = new RegionAnnouncement().wrap(messages, 0,
        messages.capacity()).encode(session, regionId, base, length, key);
    send(0, a.length());
  }

  /** Describes the first {@code length} bytes of a leased buffer. */
  void describe(long session, int regionId, long token, int length,
      long seqno) throws IOException {
    describeAt(session, regionId, pool.address(token), length, seqno);
  }

  /** Describes {@code length} bytes at an exposer's address. */
  void describeAt(long session, int regionId, long address, int length,
      long seqno) throws IOException {
    new PacketDescriptor().wrap(messages, 0).encode(session, 1073741825L,
        1001L, seqno, seqno * length, 0, regionId, address, 0, length);
    send(0, PacketDescriptor.LENGTH);
  }

  @Override
  public void close() {
    endpoint.close();
    pool.close();
    worker.close();
    context.close();
  }
}
