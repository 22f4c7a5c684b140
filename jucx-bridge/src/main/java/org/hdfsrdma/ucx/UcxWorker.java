package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A thread-safe UCX worker, the messages that arrive on it, and who waits
 * for them.
 *
 * <p><b>Any thread may progress it.</b> The worker is created in UCX's
 * multi-thread mode, so a client thread sends on its endpoints directly
 * (no hand-over to another thread per packet), and a thread that waits for
 * data of its own (a DataNode's BlockReceiver) progresses the worker itself:
 * under load its next message is usually there already and it never sleeps;
 * when it must sleep, it sleeps in the worker's own event wait and the
 * peer's message wakes it directly. Such threads are {@linkplain Driver
 * drivers}.
 *
 * <p><b>One waiter at a time.</b> Only one thread may arm the worker and
 * sleep on its event fd (UCX releases its lock during that sleep). A driver
 * that finds the role taken parks; whoever then delivers its message, or
 * leaves the role, unparks it. The worker's own progress thread takes the
 * role only while no driver is registered (an idle DataNode, a client), so
 * it sleeps until an event or {@link #signal()}, for at most
 * {@value #MAX_SLEEP_MS} ms: an idle worker uses almost no CPU. While
 * drivers exist it only sweeps every {@value #SWEEP_MS} ms
 * (progress once, promote a parked driver if nobody waits), so a driver
 * stuck in a disk write cannot hold up the others for long. It also runs
 * the control tasks handed to it with {@link #execute}.
 *
 * <p><b>Messages.</b> Every active message of id {@link #MESSAGE_AM_ID} is
 * handed to the {@link MessageHandler}, inside UCX's callback, on whichever
 * thread is progressing; every other id the wire can carry has a handler
 * that only counts it (UCX 1.13 indexes its handler table with the id from
 * the wire unchecked, so a stray id must find an entry). Nothing throws out
 * of the handler.
 *
 * <p>Life cycle: construct, {@link #start()}, use, {@link #close()}.
 */
public final class UcxWorker implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(UcxWorker.class);

  /** Active message id of hdfs-rdma's messages ("HR"). */
  public static final int MESSAGE_AM_ID = 0x4852;

  /** The longest message a handler is given; longer ones are counted. */
  public static final int MAX_MESSAGE_BYTES = 8192;

  /** How often the progress thread sweeps while drivers exist. */
  static final long SWEEP_MS = 10;

  /**
   * The longest any thread sleeps in the worker's event wait before it
   * progresses and arms the worker again. UCX 1.13 sometimes leaves the
   * sleeper of a multi-threaded worker unwoken although work arrived for
   * it: a DataNode's driver waiting for its endpoint back to a client, or
   * for a get over tcp, saw it only at UCX's next keepalive round, 20 s
   * later, even with the progress thread sweeping meanwhile (TestDrivers;
   * a thread that progresses and re-arms it itself does not miss it). A
   * bounded sleep turns such a miss into at most this delay, at about ten
   * wake-ups a second of an idle worker.
   */
  static final int MAX_SLEEP_MS = 100;

  /** Exceptions that escaped a callback on the progress thread. */
  private final AtomicLong callbackFailures = new AtomicLong();

  /** How often counted stray messages are reported, at most. */
  private static final long REPORT_INTERVAL_MS = 10_000;

  /** How long close() waits for drivers and the progress thread. */
  private static final long CLOSE_WAIT_MS = 10_000;

  /** How often the progress thread sweeps {@link InFlightMemory}, at most. */
  private static final long IN_FLIGHT_SWEEP_NANOS =
      TimeUnit.MILLISECONDS.toNanos(100);

  /**
   * Operation memory of workers left allocated by {@link #close()} (a
   * thread stayed inside): their operations may still complete into it.
   */
  private static final List<InFlightMemory> LEFT_ALLOCATED =
      new java.util.concurrent.CopyOnWriteArrayList<InFlightMemory>();

  /** A thread that progresses this worker while it waits for its data. */
  public static final class Driver {
    final Thread thread;
    volatile boolean parked;
    volatile boolean registered = true;

    Driver(Thread thread) {
      this.thread = thread;
    }

    /**
     * Wakes the driver if it is parked waiting; for whoever delivers its
     * data. No system call when it is not parked.
     */
    public void wake() {
      if (parked) {
        LockSupport.unpark(thread);
      }
    }
  }

  /** Whether what a driver waits for has arrived. Must not block. */
  public interface Readiness {
    boolean isReady();
  }

  private final UcxContext context;
  private final String name;
  private final UcpWorker worker;
  private final long handle;
  private final int eventFd;
  private final ByteBuffer scratch;
  private final ByteBuffer counters;
  private final long dispatchHandle;
  private final AtomicReference<Thread> waiter = new AtomicReference<Thread>();
  /** Registered drivers; copied on write (per block, not per packet). */
  private volatile Driver[] drivers = new Driver[0];
  /** Threads inside a native call on this worker; close() waits for 0. */
  private final AtomicInteger inside = new AtomicInteger();
  /**
   * Progress (shared) against starting a send or a get on an endpoint
   * (exclusive, {@link EndpointGate}). UCX 1.13 marks an endpoint whose
   * peer failed as failed, discards its lanes and calls its error callback,
   * all inside one progress call; a get or a send started on it after that crashes the
   * process (SIGSEGV in ucp_get_nbx, and in ucp_am_send_nbx, each seen in
   * about one run in twenty of TestPeerFailure; the get fixed in UCX by
   * openucx/ucx#11629). An operation that holds this gate sees either an
   * endpoint whose error callback already ran (and is refused in Java) or
   * one UCX has not marked yet (whose operation then fails UCX's way).
   */
  private final EndpointGate endpointGate = new EndpointGate();
  private final java.util.concurrent.ConcurrentLinkedQueue<Runnable> tasks =
      new java.util.concurrent.ConcurrentLinkedQueue<Runnable>();
  /** Endpoint closes UCX has not finished; drained before destroying. */
  private final java.util.Set<org.openucx.jucx.ucp.UcpRequest> closes =
      java.util.Collections.newSetFromMap(new java.util.concurrent
          .ConcurrentHashMap<org.openucx.jucx.ucp.UcpRequest, Boolean>());
  private final InFlightMemory inFlight = new InFlightMemory();
  private long lastInFlightSweep = System.nanoTime();
  private final AtomicLong sleeps = new AtomicLong();
  private final AtomicLong promotions = new AtomicLong();
  private volatile MessageHandler handler;
  private volatile boolean closing;
  private boolean closed;
  private Thread progressThread;
  private long lastReportNanos = System.nanoTime();
  private long reportedForeign;
  private long reportedOversized;

  /**
   * Creates the worker and installs its message handlers. No thread runs
   * until {@link #start()}.
   *
   * @throws UcxUnavailableException when UCX cannot create the worker
   */
  public UcxWorker(UcxContext context, String name)
      throws UcxUnavailableException {
    NativeUcx.ensureBound();
    this.context = context;
    this.name = name;
    UcpWorker w;
    try {
      w = context.ucp().newWorker(new UcpWorkerParams()
          .requestThreadSafety()
          .requestWakeupRX()
          .requestWakeupTX()
          .requestWakeupRMA());
    } catch (RuntimeException e) {
      throw new UcxUnavailableException("cannot create UCX worker " + name
          + ": " + e.getMessage(), e);
    }
    long dispatch = 0;
    try {
      this.handle = w.getNativeId();
      int fd = NativeUcx.eventFd(handle);
      if (fd < 0) {
        throw new UcxUnavailableException("UCX worker " + name
            + " has no event fd: " + NativeUcx.describe(fd));
      }
      this.eventFd = fd;
      this.scratch = ByteBuffer.allocateDirect(MAX_MESSAGE_BYTES)
          .order(ByteOrder.BIG_ENDIAN);
      this.counters = ByteBuffer.allocateDirect(8 * NativeUcx.COUNTER_COUNT)
          .order(ByteOrder.nativeOrder());
      dispatch = NativeUcx.installHandlers(handle, MESSAGE_AM_ID,
          new Dispatcher(), UcxUtils.getAddress(scratch), MAX_MESSAGE_BYTES,
          UcxUtils.getAddress(counters));
      if (dispatch <= 0) {
        throw new UcxUnavailableException("cannot install the message"
            + " handlers of UCX worker " + name + ": "
            + NativeUcx.describe((int) dispatch));
      }
    } catch (UcxUnavailableException | RuntimeException | Error e) {
      w.close();
      throw e;
    }
    this.worker = w;
    this.dispatchHandle = dispatch;
    context.retain();
  }

  /** The upcall target of the native handler; never throws. */
  private final class Dispatcher {
    @SuppressWarnings("unused") // called from native code
    void onMessage(int length, long replyEndpoint) {
      MessageHandler h = handler;
      if (h == null) {
        return;
      }
      try {
        h.onMessage(scratch, length, replyEndpoint);
      } catch (Throwable t) {
        LOG.error("Message handler of UCX worker {} failed", name, t);
      }
    }
  }

  /** Starts the progress thread. */
  public synchronized UcxWorker start() {
    if (progressThread != null || closed) {
      throw new IllegalStateException("worker " + name + " already started"
          + " or closed");
    }
    progressThread = new Thread(this::run, name + "-progress");
    progressThread.setDaemon(true);
    progressThread.start();
    return this;
  }

  /** The context this worker belongs to. */
  public UcxContext context() {
    return context;
  }

  /** This worker's name, used in thread names and messages. */
  public String name() {
    return name;
  }

  /**
   * Enters the exclusive side of the gate between progress and endpoint
   * operations: no thread is inside progress until {@link #leaveOperation}.
   * From inside progress (a message handler, a callback) it enters nothing
   * and returns false: UCX's worker lock already excludes other progress.
   */
  boolean enterOperation() {
    return endpointGate.enterExclusive();
  }

  /** Leaves what {@link #enterOperation} entered. */
  void leaveOperation(boolean entered) {
    endpointGate.leaveExclusive(entered);
  }

  /** The JUCX worker, for the control path (endpoints). */
  UcpWorker ucp() {
    return worker;
  }

  /** The ucp_worker_h. */
  long handle() {
    return handle;
  }

  /**
   * This worker's UCX address: what a peer needs to connect to it. It names
   * the worker's transports (shared-memory segment ids, device addresses);
   * it carries no secret.
   */
  public byte[] address() {
    ByteBuffer a = worker.getAddress();
    byte[] copy = new byte[a.remaining()];
    a.duplicate().get(copy);
    return copy;
  }

  /**
   * Receives every message of id {@link #MESSAGE_AM_ID}, inside UCX's
   * callback, on whichever thread progresses the worker.
   */
  public void setMessageHandler(MessageHandler handler) {
    this.handler = handler;
  }

  /** True between construction and {@link #close()}. */
  public boolean isRunning() {
    return !closing;
  }

  /** True when called on this worker's own progress thread. */
  public boolean inProgressThread() {
    return Thread.currentThread() == progressThread;
  }

  /** The progress thread, for tests and diagnostics. */
  public Thread progressThread() {
    return progressThread;
  }

  /**
   * An endpoint close UCX must finish before the worker is destroyed (UCX
   * 1.13 aborts when a worker is destroyed under a pending endpoint close).
   */
  void completeBeforeDestroy(org.openucx.jucx.ucp.UcpRequest request) {
    closes.add(request);
  }

  /**
   * Keeps {@code memory} (buffers that sends started on this worker's
   * endpoints carry) and {@code slots} (the status slots of those
   * operations, and of gets) from the garbage collector for as long as
   * {@code owner} is reachable, and after that until no slot is in progress
   * or the worker is destroyed; see {@link InFlightMemory}. Once per owner,
   * not per operation. {@code memory} may be null and must not refer to
   * {@code owner}.
   */
  public void keepWhileInFlight(Object owner, Object memory,
      StatusSlots... slots) {
    inFlight.register(owner, memory, slots);
  }

  /**
   * Sets of memory kept after their owner went, for operations still in
   * progress, as of the progress thread's last look (at most about 100 ms
   * ago while it runs).
   */
  public int orphanedOperationMemory() {
    return inFlight.orphans();
  }

  /** The operation memory this worker keeps, for tests. */
  InFlightMemory inFlightMemory() {
    return inFlight;
  }

  /**
   * Runs {@code task} on this worker's progress thread, soon: for control
   * work a message handler must not do inside UCX's callback (creating an
   * endpoint). Never throws; a task that throws is logged.
   *
   * @throws IllegalStateException when the worker is closed
   */
  public void execute(Runnable task) {
    if (closing) {
      throw new IllegalStateException("UCX worker " + name + " is closed");
    }
    tasks.add(task);
    Thread t = progressThread;
    if (t != null) {
      LockSupport.unpark(t);
      if (waiter.get() == t) {
        signal();
      }
    }
  }

  private void runTasks() {
    Runnable task;
    while ((task = tasks.poll()) != null) {
      try {
        task.run();
      } catch (Throwable e) {
        LOG.error("Task on UCX worker {} failed", name, e);
      }
    }
  }

  // ------------------------------------------------------------- progress

  /**
   * Progresses the worker once on the calling thread: completions and
   * message handlers run here. Returns the number of events, 0 when the
   * worker is closing.
   */
  public int progress() {
    if (!enter()) {
      return 0;
    }
    int events;
    endpointGate.enterShared();
    try {
      events = NativeUcx.progress(handle);
    } finally {
      endpointGate.leaveShared();
      inside.decrementAndGet();
    }
    if (events > 0) {
      wakeWaitingDriver();
    }
    return events;
  }

  /** Wakes whichever thread sleeps in the worker's event wait. */
  public void signal() {
    if (!enter()) {
      return;
    }
    try {
      NativeUcx.signal(handle);
    } finally {
      inside.decrementAndGet();
    }
  }

  private boolean enter() {
    inside.incrementAndGet();
    if (closing) {
      inside.decrementAndGet();
      return false;
    }
    return true;
  }

  /**
   * Registers the calling thread as a driver of this worker (for one
   * block, say). The progress thread then stops taking the waiter role.
   */
  public Driver registerDriver() {
    Driver d = new Driver(Thread.currentThread());
    synchronized (this) {
      Driver[] next = Arrays.copyOf(drivers, drivers.length + 1);
      next[next.length - 1] = d;
      drivers = next;
    }
    // The progress thread may be asleep in the waiter role: make it leave.
    if (waiter.get() == progressThread) {
      signal();
    }
    return d;
  }

  /** Unregisters a driver; idempotent. */
  public void unregisterDriver(Driver d) {
    if (!d.registered) {
      return;
    }
    d.registered = false;
    boolean none;
    synchronized (this) {
      Driver[] cur = drivers;
      int i = Arrays.asList(cur).indexOf(d);
      if (i < 0) {
        return;
      }
      Driver[] next = new Driver[cur.length - 1];
      System.arraycopy(cur, 0, next, 0, i);
      System.arraycopy(cur, i + 1, next, i, cur.length - i - 1);
      drivers = next;
      none = next.length == 0;
    }
    promoteParked(d);
    if (none && progressThread != null) {
      // Back to waiting for events instead of sweeping.
      LockSupport.unpark(progressThread);
    }
  }

  /**
   * Drives the worker from the calling thread (a registered driver) until
   * {@code ready} says so or {@code timeoutNanos} passes: progress, and when
   * nothing arrived, sleep in the worker's event wait if nobody else does,
   * or park until woken. Returns {@code ready.isReady()}. Allocates nothing.
   */
  public boolean drive(Driver d, Readiness ready, long timeoutNanos) {
    long deadline = System.nanoTime() + timeoutNanos;
    boolean waited = false;
    try {
      while (true) {
        if (ready.isReady()) {
          return true;
        }
        if (closing) {
          return false;
        }
        progress();
        if (ready.isReady()) {
          return true;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        if (waiter.compareAndSet(null, d.thread)) {
          waited = true;
          try {
            awaitEvents(ready, deadline);
          } finally {
            waiter.set(null);
          }
        } else {
          d.parked = true;
          // Either the waiter sees this flag when it leaves the role, or
          // this thread sees the role vacant: no wake-up is lost.
          if (waiter.get() != null && !ready.isReady()) {
            LockSupport.parkNanos(this, left);
          }
          d.parked = false;
        }
      }
    } finally {
      if (waited) {
        promoteParked(d);
      }
    }
  }

  /**
   * Sleeps in the worker's event wait, in the waiter role, until an event
   * or a signal ends the sleep, {@code ready} says so, or the deadline
   * passes. A sleep that ran out its {@value #MAX_SLEEP_MS} ms with nothing
   * to show progresses and arms the worker again without giving up the
   * role, so that parked drivers are not promoted for nothing.
   */
  private void awaitEvents(Readiness ready, long deadline) {
    while (enter()) {
      int woken;
      try {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return;
        }
        sleeps.incrementAndGet();
        woken = NativeUcx.waitEvents(handle, eventFd, (int) Math.max(1,
            Math.min(MAX_SLEEP_MS, TimeUnit.NANOSECONDS.toMillis(left))));
      } finally {
        inside.decrementAndGet();
      }
      if (woken != 0 || ready.isReady() || progress() > 0
          || ready.isReady()) {
        return;
      }
    }
  }

  /**
   * When nobody holds the waiter role, unparks one parked driver other than
   * {@code except} so that someone watches the worker's events.
   */
  private void promoteParked(Driver except) {
    if (waiter.get() != null) {
      return;
    }
    for (Driver o : drivers) {
      if (o != except && o.parked) {
        promotions.incrementAndGet();
        LockSupport.unpark(o.thread);
        return;
      }
    }
  }

  private void run() {
    LOG.debug("UCX worker {} progress thread started", name);
    try {
      while (!closing) {
        try {
          runTasks();
          sweepInFlight();
          if (progress() > 0) {
            continue;
          }
        } catch (RuntimeException escaped) {
          // A callback threw (none should): the worker still needs this
          // thread, so the failure is reported and the loop goes on.
          if (callbackFailures.getAndIncrement() == 0) {
            LOG.error("UCX worker {}: a callback threw on the progress"
                + " thread (later ones at DEBUG)", name, escaped);
          } else {
            LOG.debug("UCX worker {}: a callback threw", name, escaped);
          }
          continue;
        }
        reportStrayMessages();
        if (drivers.length == 0) {
          if (waiter.compareAndSet(null, progressThread)) {
            try {
              if (drivers.length == 0 && tasks.isEmpty() && enter()) {
                try {
                  sleeps.incrementAndGet();
                  NativeUcx.waitEvents(handle, eventFd, MAX_SLEEP_MS);
                } finally {
                  inside.decrementAndGet();
                }
              }
            } finally {
              waiter.set(null);
            }
          } else {
            LockSupport.parkNanos(this,
                TimeUnit.MILLISECONDS.toNanos(SWEEP_MS));
          }
        } else {
          promoteParked(null);
          LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(SWEEP_MS));
        }
      }
    } catch (Throwable t) {
      LOG.error("UCX worker {} progress thread failed", name, t);
    }
    LOG.debug("UCX worker {} progress thread ends after {} sleeps", name,
        sleeps.get());
  }

  /** Progress thread: lets go of operation memory no longer in use. */
  private void sweepInFlight() {
    long now = System.nanoTime();
    if (now - lastInFlightSweep >= IN_FLIGHT_SWEEP_NANOS) {
      lastInFlightSweep = now;
      inFlight.sweep();
    }
  }

  /**
   * After progress on this thread: what it completed (a get, a message)
   * may be what the driver asleep in the event wait waits for, and the
   * events that announced it are consumed, so nothing else would wake that
   * driver before its timeout. Wake it to look (leaving the role, it
   * promotes a parked driver, whose completion may have come too).
   */
  private void wakeWaitingDriver() {
    Thread w = waiter.get();
    if (w != null && w != progressThread && w != Thread.currentThread()) {
      signal();
    }
  }

  // ------------------------------------------------------------- counters

  private long counter(int index) {
    return counters.getLong(8 * index);
  }

  /** Messages handed to the message handler. */
  public long messagesDelivered() {
    return counter(NativeUcx.COUNTER_DELIVERED);
  }

  /** Messages with an active-message id nobody registered. */
  public long strayMessages() {
    return counter(NativeUcx.COUNTER_FOREIGN);
  }

  /**
   * Messages of our id refused before the handler: longer than
   * {@link #MAX_MESSAGE_BYTES}, with a user header, or offered by
   * rendezvous.
   */
  public long oversizedMessages() {
    return counter(NativeUcx.COUNTER_OVERSIZED)
        + counter(NativeUcx.COUNTER_RENDEZVOUS);
  }

  /** Times a thread slept in the worker's event wait. */
  public long sleeps() {
    return sleeps.get();
  }

  /** Times a parked driver was woken to take the waiter role. */
  public long promotions() {
    return promotions.get();
  }

  /** Logs stray and refused messages, at most every 10 s; progress thread. */
  private void reportStrayMessages() {
    long now = System.nanoTime();
    if (now - lastReportNanos < TimeUnit.MILLISECONDS.toNanos(
        REPORT_INTERVAL_MS)) {
      return;
    }
    lastReportNanos = now;
    long stray = strayMessages();
    long oversized = oversizedMessages();
    if (stray != reportedForeign || oversized != reportedOversized) {
      LOG.warn("UCX worker {} dropped {} message(s) with an unregistered"
          + " active-message id and {} oversized or rendezvous message(s)"
          + " in the last {} s (totals {} and {})", name,
          stray - reportedForeign, oversized - reportedOversized,
          REPORT_INTERVAL_MS / 1000, stray, oversized);
      reportedForeign = stray;
      reportedOversized = oversized;
    }
  }

  /** UCX's own description of this worker (transports, config). */
  public CompletableFuture<String> describe() {
    CompletableFuture<String> f = new CompletableFuture<String>();
    if (!enter()) {
      f.completeExceptionally(new IllegalStateException("worker " + name
          + " is closed"));
      return f;
    }
    try {
      f.complete(NativeIntrospection.workerInfo(handle));
    } catch (Throwable t) {
      f.completeExceptionally(t);
    } finally {
      inside.decrementAndGet();
    }
    return f;
  }

  /**
   * Stops the progress thread and destroys the UCX worker once no thread is
   * inside it. Endpoints of this worker must be closed first. Idempotent.
   * If a thread stays inside the worker past the wait, the native worker is
   * left allocated rather than freed under it.
   */
  @Override
  public void close() {
    Thread t;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      t = progressThread;
    }
    closing = true;
    NativeUcx.signal(handle);
    for (Driver d : drivers) {
      LockSupport.unpark(d.thread);
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(CLOSE_WAIT_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    long deadline = System.nanoTime()
        + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MS);
    while (inside.get() != 0 && System.nanoTime() < deadline) {
      NativeUcx.signal(handle);
      Thread.yield();
    }
    if (inside.get() != 0 || (t != null && t.isAlive())) {
      LOG.error("UCX worker {}: a thread is still inside it after {} ms;"
          + " leaving it allocated rather than free it under that thread",
          name, CLOSE_WAIT_MS);
      LEFT_ALLOCATED.add(inFlight);
      return;
    }
    // Let pending endpoint closes finish (the progress thread has stopped).
    deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(
        CLOSE_WAIT_MS);
    closes.removeIf(org.openucx.jucx.ucp.UcpRequest::isCompleted);
    while (!closes.isEmpty() && System.nanoTime() < deadline) {
      NativeUcx.progress(handle);
      closes.removeIf(org.openucx.jucx.ucp.UcpRequest::isCompleted);
    }
    if (!closes.isEmpty()) {
      LOG.error("UCX worker {}: {} endpoint close(s) did not finish in {} ms;"
          + " leaving the worker allocated rather than abort", name,
          closes.size(), CLOSE_WAIT_MS);
      LEFT_ALLOCATED.add(inFlight);
      return;
    }
    try {
      worker.close();
      NativeUcx.releaseHandlers(dispatchHandle);
      // Destroyed: none of its operations can complete into memory now.
      inFlight.clear();
    } catch (Throwable e) {
      LOG.warn("Closing UCX worker {} failed", name, e);
      LEFT_ALLOCATED.add(inFlight);
    } finally {
      context.release();
    }
    LOG.debug("UCX worker {} closed after {} sleeps", name, sleeps.get());
  }

  @Override
  public String toString() {
    return "UcxWorker(" + name + (closing ? ", closed" : "") + ")";
  }
}
