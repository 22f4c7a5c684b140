package org.hdfsrdma.hadoop;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.EndpointCache;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;
import org.openucx.jucx.UcxUtils;

/**
 * The sending side of a UCX pipeline for the DataNode tests, sending what
 * {@code UcxStreamerState} sends, the way it sends it: a connection made
 * through an {@link EndpointCache} (so its first message is the client's
 * hello), a {@link RegionAnnouncement} per pool region, and one 72-byte
 * {@link PacketDescriptor} per packet, each from a direct buffer through
 * {@link UcxEndpoint#send} with a completion slot, a queued send awaited by
 * progressing the worker.
 *
 * <p>Two kinds: {@link #sameJvm} uses the JVM's {@link UcxRuntime} (its
 * worker and client pool) as an HDFS client in a DataNode's JVM does, which
 * the DataNode reads directly (same-host shared memory); {@link #separate}
 * has its own UCX context, worker and pool, as another process would.
 */
public final class UcxTestClient implements Closeable {

  public static final long TIMEOUT_MS = 30_000;
  private static final int SLOTS = 256;

  public final UcxWorker worker;
  public final RegisteredBufferPool pool;
  public final UcxEndpoint endpoint;
  private final UcxContext ownContext;
  private final EndpointCache ownEndpoints;
  private final ByteBuffer messages = ByteBuffer.allocateDirect(
      SLOTS * PacketDescriptor.LENGTH + RegionAnnouncement.MAX_LENGTH)
      .order(ByteOrder.BIG_ENDIAN);
  private final long messagesAddress = UcxUtils.getAddress(messages);
  private final StatusSlots slots = new StatusSlots(SLOTS + 1);
  private final PacketDescriptor descriptor = new PacketDescriptor();
  private final RegionAnnouncement announcement = new RegionAnnouncement();
  private int next;

  private UcxTestClient(UcxWorker worker, RegisteredBufferPool pool,
      UcxEndpoint endpoint, UcxContext ownContext,
      EndpointCache ownEndpoints) {
    this.worker = worker;
    this.pool = pool;
    this.endpoint = endpoint;
    this.ownContext = ownContext;
    this.ownEndpoints = ownEndpoints;
  }

  /**
   * A client of this JVM's runtime, connected to the runtime's own worker
   * (where its DataNode sessions are), with packets in the runtime's client
   * pool of {@code packetSize}-byte packets.
   */
  public static UcxTestClient sameJvm(UcxRuntime runtime, int packetSize)
      throws Exception {
    UcxEndpoint e = runtime.connect(runtime.workerAddress(),
        "the DataNode under test").get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    return new UcxTestClient(runtime.worker(),
        runtime.pools().client(packetSize),
        e, null, null);
  }

  /**
   * A client with a UCX context, worker and pool of its own (transports
   * {@code tls}), connected to the worker at {@code dataNodeAddress} with
   * its hello sent first; {@code buffers} buffers of {@code bufferSize}.
   */
  public static UcxTestClient separate(String tls, byte[] dataNodeAddress,
      int bufferSize, int buffers) throws Exception {
    UcxContext context = new UcxContext(UcxContext.Options.defaults()
        .withUcxConfig("TLS", tls));
    UcxWorker w = null;
    RegisteredBufferPool p = null;
    EndpointCache cache = null;
    try {
      w = new UcxWorker(context, "test-client").start();
      p = new RegisteredBufferPool(context, "test-client-packets",
          bufferSize, (long) bufferSize * buffers,
          (long) bufferSize * buffers, true);
      cache = new EndpointCache(w, TIMEOUT_MS, w.address());
      UcxEndpoint e = cache.get(dataNodeAddress, "the DataNode under test")
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      return new UcxTestClient(w, p, e, context, cache);
    } catch (Exception | Error e) {
      if (cache != null) {
        cache.close();
      }
      if (p != null) {
        p.close();
      }
      if (w != null) {
        w.close();
      }
      context.close();
      throw e;
    }
  }

  /**
   * Leases a buffer and fills {@code length} bytes from {@code offset} with
   * the pattern of {@code seed}.
   */
  public long fill(int offset, int length, long seed) throws IOException {
    long token = pool.acquire(TIMEOUT_MS);
    ByteBuffer b = pool.buffer(token);
    for (int i = 0; i < length; i++) {
      b.put(offset + i, pattern(seed, i));
    }
    return token;
  }

  public static byte pattern(long seed, int i) {
    long x = seed * 0x9E3779B97F4A7C15L + i;
    x ^= x >>> 29;
    return (byte) (x * 0xBF58476D1CE4E5B9L >>> 56);
  }

  /** The id a session knows a pool region by (UcxStreamerState's). */
  public static int sessionRegionId(int poolRegion) {
    return poolRegion + 1;
  }

  /**
   * Announces the pool region holding {@code token} to {@code session}
   * under {@code regionId}.
   */
  public void announce(long session, int regionId, long token)
      throws IOException {
    int region = pool.regionId(token);
    announceRaw(session, regionId, pool.regionAddress(region),
        pool.regionLength(region), pool.regionKey(region));
  }

  /** Announces any bounds under any key (for hostile announcements). */
  public void announceRaw(long session, int regionId, long base, long length,
      byte[] rkey) throws IOException {
    int offset = SLOTS * PacketDescriptor.LENGTH;
    announcement.wrap(messages, offset, RegionAnnouncement.MAX_LENGTH)
        .encode(session, regionId, base, length, rkey);
    send(offset, announcement.length(), SLOTS);
  }

  /** Sends one descriptor, every field as given. */
  public void describe(long session, long blockId, long generationStamp,
      long seqno, long offsetInBlock, int flags, int regionId, long address,
      int checksumLength, int dataLength) throws IOException {
    int slot = next;
    next = (next + 1) % SLOTS;
    await(slot);
    int offset = slot * PacketDescriptor.LENGTH;
    descriptor.wrap(messages, offset).encode(session, blockId,
        generationStamp, seqno, offsetInBlock, flags, regionId, address,
        checksumLength, dataLength);
    send(offset, PacketDescriptor.LENGTH, slot);
  }

  private void send(int offset, int length, int slot) throws IOException {
    await(slot);
    int rc = endpoint.send(messagesAddress + offset, length,
        slots.address(slot));
    if (rc != 0) {
      await(slot);
    }
    int status = slots.status(slot);
    if (status < 0) {
      throw new IOException("send failed: " + StatusSlots.describe(status));
    }
  }

  /** Waits, progressing the worker, until the slot's send is over. */
  private void await(int slot) throws IOException {
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
    while (slots.inProgress(slot)) {
      if (worker.progress() == 0) {
        Thread.yield();
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("a send did not complete in " + TIMEOUT_MS
            + " ms");
      }
    }
  }

  /** Waits for every send of this client to be over. */
  public void flush() throws IOException {
    for (int i = 0; i <= SLOTS; i++) {
      await(i);
    }
  }

  @Override
  public void close() {
    if (ownContext == null) {
      return; // the runtime's: closed with it
    }
    ownEndpoints.close();
    endpoint.close();
    pool.close();
    worker.close();
    ownContext.close();
  }
}
