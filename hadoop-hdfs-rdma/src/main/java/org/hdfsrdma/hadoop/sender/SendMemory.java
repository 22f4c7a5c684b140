package org.hdfsrdma.hadoop.sender;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxWorker;
import org.openucx.jucx.UcxUtils;

/**
 * The native memory an exposer (a client's DataStreamer, or a DataNode
 * feeding the next one) sends descriptors and region announcements from,
 * with the completion slot of each send: a ring of {@code ring} descriptors
 * per destination and one announcement per destination. Allocated once per
 * sender; nothing per packet.
 *
 * <p>A send UCX had to queue (the receiver's queue was full) keeps its slot
 * until it ends; the slot's next user waits for it with {@link #await}.
 * Its worker keeps the memory after this object is dropped, for as long as
 * such a send has not ended (to a peer that died with its queue full, until
 * UCX fails or closes the endpoint): UCX may still read the bytes and will
 * write the send's status ({@link UcxWorker#keepWhileInFlight}).
 */
public final class SendMemory {

  /** Polling a full receive queue: first pause, and the longest. */
  private static final long MIN_PAUSE_NANOS = 20_000;
  private static final long MAX_PAUSE_NANOS = 1_000_000;

  private final int ringPerDestination;
  private final int destinations;
  private final ByteBuffer ring;
  private final long ringAddress;
  private final StatusSlots ringStatus;
  private final ByteBuffer announcements;
  private final long announcementsAddress;
  private final StatusSlots announcementStatus;

  /**
   * @param worker the worker whose endpoints send from this memory
   * @param ring descriptors in flight per destination
   * @param destinations how many sessions this memory sends to
   */
  public SendMemory(UcxWorker worker, int ring, int destinations) {
    this.ringPerDestination = ring;
    this.destinations = destinations;
    this.ring = ByteBuffer.allocateDirect(ring * destinations
        * PacketDescriptor.LENGTH).order(ByteOrder.BIG_ENDIAN);
    this.ringAddress = UcxUtils.getAddress(this.ring);
    this.ringStatus = new StatusSlots(ring * destinations);
    this.announcements = ByteBuffer.allocateDirect(destinations
        * RegionAnnouncement.MAX_LENGTH).order(ByteOrder.BIG_ENDIAN);
    this.announcementsAddress = UcxUtils.getAddress(announcements);
    this.announcementStatus = new StatusSlots(destinations);
    worker.keepWhileInFlight(this, new ByteBuffer[] {this.ring,
        announcements}, ringStatus, announcementStatus);
  }

  /** Descriptors in flight per destination. */
  public int ringSize() {
    return ringPerDestination;
  }

  /** The ring entry of descriptor {@code slot} to {@code destination}. */
  public int entry(int slot, int destination) {
    return slot * destinations + destination;
  }

  /** The descriptor ring (big-endian), for a flyweight to encode into. */
  public ByteBuffer ring() {
    return ring;
  }

  /** Offset of ring entry {@code entry} in {@link #ring()}. */
  public int ringOffset(int entry) {
    return entry * PacketDescriptor.LENGTH;
  }

  public long ringAddress(int entry) {
    return ringAddress + ringOffset(entry);
  }

  public StatusSlots ringStatus() {
    return ringStatus;
  }

  /** The announcement buffer (big-endian), one per destination. */
  public ByteBuffer announcements() {
    return announcements;
  }

  /** Offset of {@code destination}'s announcement in the buffer. */
  public int announcementOffset(int destination) {
    return destination * RegionAnnouncement.MAX_LENGTH;
  }

  public long announcementAddress(int destination) {
    return announcementsAddress + announcementOffset(destination);
  }

  public StatusSlots announcementStatus() {
    return announcementStatus;
  }

  /** Whether a send from this memory has not ended yet. */
  public boolean inUse() {
    return anyInProgress(ringStatus) || anyInProgress(announcementStatus);
  }

  private static boolean anyInProgress(StatusSlots slots) {
    for (int i = 0; i < slots.count(); i++) {
      if (slots.inProgress(i)) {
        return true;
      }
    }
    return false;
  }

  /** How a wait for a send ended. */
  public enum Wait {
    /** The send is over (how it ended is its connection's business). */
    DONE,
    /** The caller's condition said to stop waiting. */
    GAVE_UP,
    /** The deadline passed first. */
    TIMED_OUT,
    /** The thread was interrupted (the interrupt stays set). */
    INTERRUPTED
  }

  /**
   * Waits until the send that last used {@code slot} is over, progressing
   * {@code worker} from this thread: nothing else would (a receiver freeing
   * room in its queue wakes nobody on this side), and a full queue is
   * back-pressure, as a full socket buffer is for a socket write. Polls at
   * a falling rate rather than spin the core the receiver needs.
   *
   * @param giveUp checked between polls: true stops the wait
   */
  public static Wait await(UcxWorker worker, StatusSlots slots, int slot,
      long deadlineNanos, BooleanSupplier giveUp) {
    long pause = 0;
    while (slots.inProgress(slot)) {
      if (worker.progress() != 0) {
        pause = 0;
      } else {
        pause = Math.min(MAX_PAUSE_NANOS, Math.max(MIN_PAUSE_NANOS,
            pause * 2));
        LockSupport.parkNanos(pause);
      }
      if (Thread.currentThread().isInterrupted()) {
        return Wait.INTERRUPTED;
      }
      if (giveUp.getAsBoolean()) {
        return Wait.GAVE_UP;
      }
      if (System.nanoTime() - deadlineNanos > 0) {
        return Wait.TIMED_OUT;
      }
    }
    return Wait.DONE;
  }
}
