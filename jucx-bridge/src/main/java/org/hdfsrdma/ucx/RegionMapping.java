package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;

import org.openucx.jucx.UcxUtils;

/**
 * What a {@link RemoteRegion} holds of the kernel and of UCX: this
 * process's read-only attachments of the SysV segments its key names, and
 * UCX's unpacked remote key. Filled by one thread while the region is
 * opened, then only read.
 *
 * <p>{@link #close()} destroys the key and detaches the segments, once:
 * both when opening fails half-way and when the region's last reference
 * goes.
 */
final class RegionMapping implements Closeable {

  /** Zero bytes after a copied remote key, so UCX never reads past it. */
  private static final int RKEY_PADDING = 256;

  private final long[] attachments;
  private int attached;
  private long rkey;
  private final AtomicBoolean closed = new AtomicBoolean();

  /** Room for {@code segments} attachments. */
  RegionMapping(int segments) {
    this.attachments = new long[segments];
  }

  /**
   * Attaches {@code segment} read-only, as the next attachment.
   *
   * @throws MalformedMessageException when the kernel refuses
   */
  void attach(PackedRemoteKey.SysvEntry segment, String peer)
      throws MalformedMessageException {
    long at = NativeUcx.shmAttach(segment.shmid);
    if (at < 0) {
      throw new MalformedMessageException("cannot attach " + segment
          + " named by " + peer + ": errno " + (-at));
    }
    attachments[attached++] = at;
  }

  /** This process's address of the start of attachment {@code i}. */
  long attachment(int i) {
    return attachments[i];
  }

  /**
   * Has UCX unpack {@code packed} for {@code endpoint} (a ucp_ep_h).
   *
   * @param what the key's region and peer, for the message
   * @throws MalformedMessageException when UCX cannot unpack it
   */
  void unpackKey(long endpoint, byte[] packed, String what)
      throws MalformedMessageException {
    ByteBuffer key = ByteBuffer.allocateDirect(packed.length + RKEY_PADDING);
    key.put(packed).clear();
    ByteBuffer status = ByteBuffer.allocateDirect(4)
        .order(ByteOrder.nativeOrder());
    rkey = NativeUcx.rkeyUnpack(endpoint, UcxUtils.getAddress(key),
        UcxUtils.getAddress(status));
    if (rkey == 0) {
      throw new MalformedMessageException("UCX could not unpack the"
          + " remote key of " + what + ": "
          + NativeUcx.describe(status.getInt(0)));
    }
  }

  /** UCX's remote key (a ucp_rkey_h), 0 once dropped. */
  long key() {
    return rkey;
  }

  /** Whether UCX could map the peer's memory at {@code remote} directly. */
  boolean mapsDirectly(long remote) {
    return NativeUcx.rkeyPointer(rkey, remote) != 0;
  }

  /** Destroys UCX's key early: the region is read through an attachment. */
  void dropKey() {
    NativeUcx.rkeyDestroy(rkey);
    rkey = 0;
  }

  /** Destroys the key and detaches the segments; once. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    if (rkey != 0) {
      NativeUcx.rkeyDestroy(rkey);
    }
    for (int i = 0; i < attached; i++) {
      NativeUcx.shmDetach(attachments[i]);
    }
  }
}
