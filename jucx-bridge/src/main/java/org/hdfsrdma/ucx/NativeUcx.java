package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;

/**
 * The per-packet UCX calls, made through this library's own JNI code
 * (native/src/hdfsrdma_fastpath.c) instead of JUCX: JUCX creates Java
 * objects for every request and every received message and looks methods
 * up per callback, which the write path cannot afford per packet. JUCX
 * still does the control path (contexts, workers, endpoints, memory).
 *
 * <p>Completions are int status slots in native memory ({@link StatusSlots}):
 * {@link #IN_PROGRESS} until UCX's callback stores the final status (0 or a
 * negative UCS status). Handles are the raw {@code ucp_*_h} pointers.
 *
 * <p>The native functions are resolved in the libucp/libucs that JUCX loaded;
 * {@link #ensureBound()} must succeed before any other call.
 */
final class NativeUcx {

  /** UCS_INPROGRESS: an operation that has not completed yet. */
  static final int IN_PROGRESS = 1;
  /** UCS_ERR_BUSY. */
  static final int ERR_BUSY = -4;

  /** Indices of the dispatcher counters (native order longs). */
  static final int COUNTER_DELIVERED = 0;
  static final int COUNTER_FOREIGN = 1;
  static final int COUNTER_OVERSIZED = 2;
  static final int COUNTER_RENDEZVOUS = 3;
  static final int COUNTER_UPCALL_FAILED = 4;
  static final int COUNTER_LAST_FOREIGN_ID = 5;
  static final int COUNTER_COUNT = 6;

  private static volatile String bindProblem = "not bound yet";

  private NativeUcx() {
  }

  /**
   * Resolves the native functions once UCX is loaded.
   *
   * @throws UcxUnavailableException when the JNI library or a UCX function
   *     is missing
   */
  static synchronized void ensureBound() throws UcxUnavailableException {
    if (bindProblem == null) {
      return;
    }
    UcxLibrary.ensureAvailable();
    if (!NativeIntrospection.isAvailable()) {
      throw new UcxUnavailableException("hdfs-rdma JNI library not loaded: "
          + NativeIntrospection.unavailableReason());
    }
    String missing;
    try {
      missing = bind();
    } catch (UnsatisfiedLinkError e) {
      throw new UcxUnavailableException("hdfs-rdma JNI library lacks the"
          + " fast path: " + e, e);
    }
    if (missing != null) {
      throw new UcxUnavailableException("the loaded UCX has no " + missing);
    }
    bindProblem = null;
  }

  /** UCX's text for a status code. */
  static String describe(int status) {
    String text = status == 0 ? "OK" : statusString(status);
    return (text == null ? "status" : text) + " (" + status + ")";
  }

  static native String bind();

  static native String statusString(int status);

  static native int progress(long worker);

  static native int waitEvents(long worker, int eventFd, int timeoutMs);

  static native int eventFd(long worker);

  static native int signal(long worker);

  static native long installHandlers(long worker, int amId, Object dispatcher,
      long scratch, int scratchCapacity, long counters);

  static native void releaseHandlers(long handle);

  static native int amSend(long endpoint, int amId, long address, int length,
      long slot);

  static native int get(long endpoint, long remote, long rkey, long local,
      long length, long slot);

  static native int slotStatus(long slot);

  static native long rkeyUnpack(long endpoint, long packed, long statusSlot);

  static native long rkeyPointer(long rkey, long remote);

  static native void rkeyDestroy(long rkey);

  static native int shmStat(int shmid, long[] facts);

  static native long shmAttach(int shmid);

  static native int shmDetach(long address);

  static native ByteBuffer view(long address, long length);

  static native int pid();

  static native int euid();
}
