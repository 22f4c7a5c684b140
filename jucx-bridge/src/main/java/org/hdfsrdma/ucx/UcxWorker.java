package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

import org.openucx.jucx.ucp.UcpWorker;
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
 * thread is progressing; every other id is only counted (MessageDispatch).
 *
 * <p><b>Nothing throws on its threads.</b> An exception from the message
 * handler, a task, a callback inside progress or the progress loop is
 * counted ({@link #callbackFailures()}), logged by one rate-limited policy,
 * and the thread goes on.
 *
 * <p>Life cycle: construct, {@link #start()}, use, {@link #close()}.
 *
 * <p>Its parts, each package-private: NativeWorker (the UCX worker, every
 * native call on it and the threads inside them), MessageDispatch (the
 * native message handlers and their counters), WaiterHandoff (the waiter
 * role and the drivers), ProgressLoop (the progress thread and its tasks)
 * and InFlightMemory (the memory operations complete into).
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

  /** How long close() waits for drivers and the progress thread. */
  private static final long CLOSE_WAIT_MS = 10_000;

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
  private final CallbackFailures failures;
  private final NativeWorker ucx;
  private final MessageDispatch dispatch;
  private final WaiterHandoff waiters;
  private final ProgressLoop loop;
  private final InFlightMemory inFlight = new InFlightMemory();
  private boolean closed;

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
    this.failures = new CallbackFailures(name);
    NativeWorker created = new NativeWorker(context, name, failures);
    try {
      this.dispatch = new MessageDispatch(created.handle(), name, failures);
    } catch (UcxUnavailableException | RuntimeException | Error e) {
      Closeables.closeAfterFailure(e, created);
      throw e;
    }
    this.ucx = created;
    this.waiters = new WaiterHandoff(this, created);
    this.loop = new ProgressLoop(this, created, waiters, dispatch, inFlight,
        failures);
    context.retain();
  }

  /** Starts the progress thread. */
  public synchronized UcxWorker start() {
    if (loop.thread() != null || closed) {
      throw new IllegalStateException("worker " + name + " already started"
          + " or closed");
    }
    loop.start();
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

  /** The UCX worker, for the native side of this worker's endpoints. */
  NativeWorker natives() {
    return ucx;
  }

  /** The JUCX worker, for tests that make endpoints of their own. */
  UcpWorker ucp() {
    return ucx.ucp();
  }

  /**
   * This worker's UCX address: what a peer needs to connect to it. It names
   * the worker's transports (shared-memory segment ids, device addresses);
   * it carries no secret.
   */
  public byte[] address() {
    return ucx.address();
  }

  /**
   * Receives every message of id {@link #MESSAGE_AM_ID}, inside UCX's
   * callback, on whichever thread progresses the worker.
   */
  public void setMessageHandler(MessageHandler handler) {
    dispatch.setHandler(handler);
  }

  /** True between construction and {@link #close()}. */
  public boolean isRunning() {
    return !ucx.isClosing();
  }

  /** True when called on this worker's own progress thread. */
  public boolean inProgressThread() {
    return Thread.currentThread() == loop.thread();
  }

  /** The progress thread, for tests and diagnostics. */
  public Thread progressThread() {
    return loop.thread();
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
   * endpoint). A task that throws is counted ({@link #callbackFailures()})
   * and logged, and the next one runs.
   *
   * @throws IllegalStateException when the worker is closed
   */
  public void execute(Runnable task) {
    if (ucx.isClosing()) {
      throw new IllegalStateException("UCX worker " + name + " is closed");
    }
    loop.execute(task);
  }

  // ------------------------------------------------------------- progress

  /**
   * Progresses the worker once on the calling thread: completions and
   * message handlers run here. Returns the number of events, 0 when the
   * worker is closing. Never throws: an exception a callback threw inside
   * UCX's progress is counted ({@link #callbackFailures()}).
   */
  public int progress() {
    int events = ucx.progress();
    if (events > 0) {
      waiters.wakeWaitingDriver();
    }
    return events;
  }

  /** Wakes whichever thread sleeps in the worker's event wait. */
  public void signal() {
    ucx.signal();
  }

  /**
   * Registers the calling thread as a driver of this worker (for one
   * block, say). The progress thread then stops taking the waiter role.
   */
  public Driver registerDriver() {
    return waiters.register();
  }

  /** Unregisters a driver; idempotent. */
  public void unregisterDriver(Driver d) {
    waiters.unregister(d);
  }

  /**
   * Drives the worker from the calling thread (a registered driver) until
   * {@code ready} says so or {@code timeoutNanos} passes: progress, and when
   * nothing arrived, sleep in the worker's event wait if nobody else does,
   * or park until woken. Returns {@code ready.isReady()}. Allocates nothing.
   */
  public boolean drive(Driver d, Readiness ready, long timeoutNanos) {
    return waiters.drive(d, ready, timeoutNanos);
  }

  // ------------------------------------------------------------- counters

  /** Messages handed to the message handler. */
  public long messagesDelivered() {
    return dispatch.delivered();
  }

  /** Messages with an active-message id nobody registered. */
  public long strayMessages() {
    return dispatch.stray();
  }

  /**
   * Messages of our id refused before the handler: longer than
   * {@link #MAX_MESSAGE_BYTES}, with a user header, or offered by
   * rendezvous.
   */
  public long oversizedMessages() {
    return dispatch.oversized();
  }

  /**
   * Exceptions caught on this worker's threads so far: thrown by the
   * message handler, a task, a callback inside UCX's progress, the progress
   * loop, an endpoint's error handler or close listener, plus messages
   * whose handler the native code could not call. Each was logged (the
   * first of its kind with its stack trace, later ones rate-limited) and
   * the thread went on. The write path publishes it as a metric.
   */
  public long callbackFailures() {
    return failures.total() + dispatch.upcallFailures();
  }

  /** The failure policy of this worker's callbacks and threads. */
  CallbackFailures failures() {
    return failures;
  }

  /** Times a thread slept in the worker's event wait. */
  public long sleeps() {
    return ucx.sleeps();
  }

  /** Times a parked driver was woken to take the waiter role. */
  public long promotions() {
    return waiters.promotions();
  }

  /** UCX's own description of this worker (transports, config). */
  public CompletableFuture<String> describe() {
    CompletableFuture<String> f = new CompletableFuture<String>();
    try {
      f.complete(ucx.describe());
    } catch (Throwable t) {
      f.completeExceptionally(t);
    }
    return f;
  }

  /**
   * Stops the progress thread and destroys the UCX worker once no thread is
   * inside it. Endpoints of this worker must be closed first. Idempotent.
   * If a thread stays inside the worker past the wait, the native worker is
   * left allocated rather than freed under it, and with it its handlers,
   * the memory its operations complete into and its context.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    ucx.beginClose();
    waiters.unparkDrivers();
    // Once the progress thread ended, pending endpoint closes are
    // progressed from here.
    if (!loop.awaitEnd(CLOSE_WAIT_MS)
        || !ucx.destroyWhenIdle(CLOSE_WAIT_MS)) {
      inFlight.keepForever();
      return;
    }
    // Destroyed: no handler runs and no operation completes into memory now.
    dispatch.close();
    inFlight.clear();
    context.release();
    LOG.debug("UCX worker {} closed after {} sleeps", name, ucx.sleeps());
  }

  @Override
  public String toString() {
    return "UcxWorker(" + name + (ucx.isClosing() ? ", closed" : "") + ")";
  }
}
