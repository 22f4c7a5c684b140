package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.openucx.jucx.UcxUtils;

/**
 * Completion slots of UCX operations started through the fast path: one
 * int per operation in native memory, {@link NativeUcx#IN_PROGRESS} until
 * UCX's callback stores the final status (0 on success, a negative UCS
 * status on failure). A slot may be reused once its operation is over.
 * Allocated once; nothing per operation. The owner registers the slots with
 * the worker ({@link UcxWorker#keepWhileInFlight}): an operation may end
 * after its owner was dropped, and its status must not land in freed memory.
 */
public final class StatusSlots {

  private final ByteBuffer memory;
  private final long base;
  private final int count;

  public StatusSlots(int count) {
    if (count <= 0) {
      throw new IllegalArgumentException("slots: " + count);
    }
    this.count = count;
    // UcxUtils is JUCX's native code: loaded with the UCX libraries.
    UcxLibrary.isAvailable();
    this.memory = ByteBuffer.allocateDirect(4 * count)
        .order(ByteOrder.nativeOrder());
    this.base = UcxUtils.getAddress(memory);
  }

  public int count() {
    return count;
  }

  /** The native address of slot {@code i}, for an operation to complete. */
  public long address(int i) {
    if (i < 0 || i >= count) {
      throw new IndexOutOfBoundsException("slot " + i + " of " + count);
    }
    return base + 4L * i;
  }

  /** The status of slot {@code i}, read with acquire ordering. */
  public int status(int i) {
    return NativeUcx.slotStatus(address(i));
  }

  /** Whether the operation of slot {@code i} is still in progress. */
  public boolean inProgress(int i) {
    return status(i) == NativeUcx.IN_PROGRESS;
  }

  /** UCX's text for a status of a slot. */
  public static String describe(int status) {
    return NativeUcx.describe(status);
  }
}
