package org.hdfsrdma.hadoop.runtime;

import java.io.Closeable;

import org.hdfsrdma.hadoop.conf.RdmaConf;
import org.hdfsrdma.hadoop.conf.RdmaSettings;
import org.hdfsrdma.ucx.Closeables;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxContext;

/**
 * The JVM's two pools of registered memory, each created on first use: the
 * client's packet buffers and the DataNodes' landing buffers. After
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
  private boolean closed;

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
    return c != null && c.ownsSegment(shmid)
        || l != null && l.ownsSegment(shmid);
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
    Closeables.closeAll(landing, client);
  }
}
