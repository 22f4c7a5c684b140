package org.hdfsrdma.ucx;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The free buffers of a {@link RegisteredBufferPool}, by index: a
 * lock-free Treiber stack, whose head carries a tag that every change
 * increments, so that a thread holding an old head cannot install it again
 * (ABA). Pushing and popping allocate nothing.
 */
final class BufferFreeList {

  /** (tag << 32) | (index of the top buffer + 1); 0 when empty. */
  private final AtomicLong head = new AtomicLong();
  /** Per buffer: the index below it on the stack, -1 at the bottom. */
  private final int[] next;

  BufferFreeList(int buffers) {
    this.next = new int[buffers];
  }

  /** The index of a free buffer, taken off the list, or -1 when none is. */
  int pop() {
    while (true) {
      long h = head.get();
      int top = (int) h - 1;
      if (top < 0) {
        return -1;
      }
      long tag = (h >>> 32) + 1;
      if (head.compareAndSet(h, (tag << 32) | (next[top] + 1L))) {
        return top;
      }
    }
  }

  /** Puts buffer {@code index} on the list. */
  void push(int index) {
    while (true) {
      long h = head.get();
      next[index] = (int) h - 1;
      long tag = (h >>> 32) + 1;
      if (head.compareAndSet(h, (tag << 32) | (index + 1L))) {
        return;
      }
    }
  }

  boolean isEmpty() {
    return (int) head.get() == 0;
  }

  /** Forgets every free buffer. */
  void clear() {
    head.set(0);
  }
}
