package org.hdfsrdma.ucx;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Native memory that operations started on one worker point into (the bytes
 * a send carries, the {@link StatusSlots} its completion writes), kept from
 * the garbage collector until those operations end.
 *
 * <p>An owner of such memory (a DataStreamer's send memory, a block
 * receiver's get slots, an endpoint's hello) can become unreachable while
 * an operation it started is still queued in UCX: a send to a DataNode that
 * died with its queue full ends only when UCX fails or closes the
 * endpoint, seconds later. Freed by the collector before that, the
 * operation's completion writes its status into freed C heap, which glibc
 * may later abort the JVM for, and a queued send still to go out reads
 * freed bytes. So each owner registers its memory here: once the owner is
 * unreachable, the memory stays until none of its slots is in progress, or
 * until the worker is destroyed (UCX completes nothing after that).
 *
 * <p>Registering allocates one small object, once per owner (per stream,
 * block or connection), never per operation. Sweeping is for the worker's
 * progress thread. A worker that could not be destroyed (a thread stayed
 * inside it) may still complete operations at any time: its memory is
 * {@linkplain #keepForever() kept} for the JVM's life.
 */
final class InFlightMemory {

  /** The memory of workers left allocated: kept for the JVM's life. */
  private static final List<InFlightMemory> KEPT_FOREVER =
      new CopyOnWriteArrayList<InFlightMemory>();

  /** An owner's memory, enqueued once the owner is unreachable. */
  private static final class Entry extends PhantomReference<Object> {
    final Object memory;
    final StatusSlots[] slots;

    Entry(Object owner, ReferenceQueue<Object> queue, Object memory,
        StatusSlots[] slots) {
      super(owner, queue);
      this.memory = memory;
      this.slots = slots;
    }

    boolean inProgress() {
      for (StatusSlots s : slots) {
        for (int i = 0; i < s.count(); i++) {
          if (s.inProgress(i)) {
            return true;
          }
        }
      }
      return false;
    }
  }

  private final ReferenceQueue<Object> unreachable =
      new ReferenceQueue<Object>();
  /** Entries of live owners: a reference not itself reachable is never enqueued. */
  private final Set<Entry> registered =
      ConcurrentHashMap.<Entry>newKeySet();
  /** Entries whose owner went while an operation was in progress. */
  private final List<Entry> orphans = new ArrayList<Entry>();
  private volatile int orphanCount;

  /**
   * Keeps {@code memory} and {@code slots} reachable for as long as
   * {@code owner} is, and after that until no slot is in progress.
   * {@code memory} must not refer to {@code owner}.
   */
  void register(Object owner, Object memory, StatusSlots... slots) {
    registered.add(new Entry(owner, unreachable, memory, slots.clone()));
  }

  /**
   * Takes in the entries of owners that became unreachable and forgets
   * those whose operations all ended. Returns how many are still kept for
   * operations in progress. One thread at a time (the progress thread).
   */
  synchronized int sweep() {
    Entry e;
    while ((e = (Entry) unreachable.poll()) != null) {
      registered.remove(e);
      if (e.inProgress()) {
        orphans.add(e);
      }
    }
    for (int i = orphans.size() - 1; i >= 0; i--) {
      if (!orphans.get(i).inProgress()) {
        orphans.remove(i);
      }
    }
    orphanCount = orphans.size();
    return orphanCount;
  }

  /** Owners registered and not yet seen gone. */
  int registered() {
    return registered.size();
  }

  /** Memory kept after its owner went, as of the last sweep. */
  int orphans() {
    return orphanCount;
  }

  /**
   * Keeps everything registered, whatever becomes of its owners and of
   * this object's own owner: for a worker left allocated, whose operations
   * may still complete into it.
   */
  void keepForever() {
    KEPT_FOREVER.add(this);
  }

  /**
   * Forgets everything: for after the worker was destroyed, when no
   * operation of it can complete any more.
   */
  synchronized void clear() {
    registered.clear();
    orphans.clear();
    orphanCount = 0;
  }
}
