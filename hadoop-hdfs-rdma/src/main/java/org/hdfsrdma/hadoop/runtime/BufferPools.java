package org.hdfsrdma.hadoop.runtime;

import java.io.Closeable;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntPredicate;

import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.conf.RdmaSettings;
import org.hdfsrdma.ucx.Closeables;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxContext;

/**
 * The JVM's pools of registered memory, each created on first use: the
 * client's packet buffers, the DataNodes' landing buffers and the landing
 * buffers of the client's reads. After
 * creation a pool is read without a lock (a DataNode resolves it once per
 * block, a client once per stream).
 */
public final class BufferPools implements Closeable {

  /** Most bytes of header in front of a packet's checksums and data. */
  private final int maxHeaderBytes;
  private final UcxContext context;
  private final RdmaConf conf;
  private volatile RegisteredBufferPool landing;
  private volatile RegisteredBufferPool client;
  private volatile RegisteredBufferPool readLanding;
  private boolean closed;
  /** Memory this JVM exposes besides these pools (a DataNode's reads). */
  private final List<IntPredicate> otherOwners =
      new CopyOnWriteArrayList<IntPredicate>();

  /**
   * @param maxHeaderBytes most bytes of a packet header (Hadoop's
   *     {@code PacketHeader.PKT_MAX_HEADER_LEN})
   */
  BufferPools(UcxContext context, RdmaConf conf, int maxHeaderBytes) {
    this.context = context;
    this.conf = conf;
    this.maxHeaderBytes = maxHeaderBytes;
  }

  /** The DataNode side's registered memory that gets land in. */
  public RegisteredBufferPool landing() {
    RegisteredBufferPool p = landing;
    return p != null ? p : createLanding();
  }

  private synchronized RegisteredBufferPool createLanding() {
    checkOpen();
    if (landing == null) {
      landing = pool("datanode-landing", conf.maxPacketBytes(),
          RdmaSettings.LANDING_SLAB_BYTES, conf.dataNodePoolMaxBytes());
    }
    return landing;
  }

  /**
   * The client side's registered memory that packets are written into, with
   * buffers for packets of up to {@code packetSize} bytes (the first
   * stream's dfs.client-write-packet-size sets it for the JVM).
   */
  public RegisteredBufferPool client(int packetSize) {
    RegisteredBufferPool p = client;
    return p != null ? p : createClient(packetSize);
  }

  private synchronized RegisteredBufferPool createClient(int packetSize) {
    checkOpen();
    if (client == null) {
      client = pool("client-packets", maxHeaderBytes + packetSize,
          conf.clientPoolSlabBytes(), conf.clientPoolMaxBytes());
    }
    return client;
  }

  /**
   * The client side's registered memory that reads' gets land in, with
   * buffers of {@code bufferBytes} (the largest a read offer takes; the
   * first read sets it for the JVM).
   */
  public RegisteredBufferPool readLanding(int bufferBytes) {
    RegisteredBufferPool p = readLanding;
    return p != null ? p : createReadLanding(bufferBytes);
  }

  private synchronized RegisteredBufferPool createReadLanding(
      int bufferBytes) {
    checkOpen();
    if (readLanding == null) {
      readLanding = pool("client-read-landing", bufferBytes,
          RdmaSettings.LANDING_SLAB_BYTES, conf.clientPoolMaxBytes());
    }
    return readLanding;
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("the UCX runtime's pools are closed");
    }
  }

  /** The landing pool, or null before the first block needs it. */
  public RegisteredBufferPool landingIfCreated() {
    return landing;
  }

  /** The client pool, or null before the first stream needs it. */
  public RegisteredBufferPool clientIfCreated() {
    return client;
  }

  /** Whether SysV segment {@code shmid} is one of this JVM's pools. */
  public boolean ownsSegment(int shmid) {
    RegisteredBufferPool c = client;
    RegisteredBufferPool l = landing;
    RegisteredBufferPool r = readLanding;
    if (c != null && c.ownsSegment(shmid)
        || l != null && l.ownsSegment(shmid)
        || r != null && r.ownsSegment(shmid)) {
      return true;
    }
    for (IntPredicate other : otherOwners) {
      if (other.test(shmid)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Adds memory this JVM exposes from pools of its own (a DataNode's read
   * buffers) to what {@link #ownsSegment} knows, so that a reader in the
   * same JVM may read it.
   */
  public void alsoOwns(IntPredicate owner) {
    otherOwners.add(owner);
  }

  /**
   * A pool of {@code buffer}-byte buffers registered in slabs of about
   * {@code slab} bytes, up to about {@code cap} bytes: both rounded down to
   * whole multiples (at least one buffer, one slab), as the pool requires
   * ({@link RdmaConf#landingBuffers} counts the landing pool's the same
   * way).
   */
  private RegisteredBufferPool pool(String name, int buffer, long slab,
      long cap) {
    long slabBytes = Math.max(buffer, slab / buffer * buffer);
    long capBytes = Math.max(slabBytes, cap / slabBytes * slabBytes);
    return new RegisteredBufferPool(context, name, buffer, slabBytes,
        capBytes, false);
  }

  /** Closes both pools; later requests fail. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    Closeables.closeAll(readLanding, landing, client);
  }
}
