package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.openucx.jucx.ucp.UcpConstants;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A UCX worker and the one thread that progresses it.
 *
 * <p>UCX workers are not thread-safe in the mode we create them, so every
 * UCX call on this worker and its endpoints runs on the progress thread;
 * other threads hand work over with {@link #execute} or {@link #call}. When
 * there is nothing to progress the thread sleeps in the worker's event wait
 * (epoll on the transports' event fds), and {@link #execute} wakes it with
 * a signal: an idle worker uses no CPU. Over tcp UCX emulates get with
 * active messages, so the side that owns exposed memory must keep this
 * thread running for remote gets to complete.
 *
 * <p>Nothing throws on the progress thread: task and callback failures are
 * logged and turned into failed futures.
 *
 * <p>Life cycle: construct, {@link #start()}, use, {@link #close()}. Closing
 * closes this worker's listeners and connections in reverse order of
 * creation, on the progress thread, then the UCX worker itself.
 */
public final class UcxWorker implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(UcxWorker.class);

  /** Active message id of packet descriptors. */
  static final int DESCRIPTOR_AM_ID = 0x4852;

  /** How late past its deadline an operation may be failed. */
  static final long DEADLINE_SWEEP_MS = 100;

  /** How long {@link #close()} waits for the progress thread. */
  private static final long CLOSE_JOIN_MS = 30_000;

  private enum State { NEW, RUNNING, CLOSING, CLOSED }

  private final UcxContext context;
  private final String name;
  private final UcpWorker worker;
  private final ConcurrentLinkedQueue<Runnable> tasks =
      new ConcurrentLinkedQueue<Runnable>();
  /** Listeners and connections, in creation order; progress thread only. */
  private final LinkedHashSet<WorkerResource> resources =
      new LinkedHashSet<WorkerResource>();
  /** Endpoints by native handle, to map an AM reply endpoint to its owner. */
  private final Map<Long, UcxConnection> connectionsByEndpoint =
      new HashMap<Long, UcxConnection>();
  private final AtomicLong wakeups = new AtomicLong();
  private final AtomicLong progressCalls = new AtomicLong();
  private final AtomicLong malformedDescriptors = new AtomicLong();
  private final AtomicLong descriptorsReceived = new AtomicLong();
  private final AtomicInteger opsWithDeadline = new AtomicInteger();

  private volatile State state = State.NEW;
  /** Guards {@link #signal()} from other threads against worker close. */
  private final Object nativeLock = new Object();
  private boolean nativeClosed;
  private volatile boolean sleeping;
  private volatile DescriptorHandler descriptorHandler;
  private volatile int maxPacketBytes = 16 * 1024 * 1024;
  private Thread thread;
  private ScheduledThreadPoolExecutor timer;

  /** Things owned by a worker and closed with it, on its progress thread. */
  interface WorkerResource {
    void closeOnProgressThread();
  }

  /**
   * Creates the UCX worker. No thread is started until {@link #start()}.
   *
   * @throws UcxUnavailableException when UCX cannot create the worker
   */
  public UcxWorker(UcxContext context, String name)
      throws UcxUnavailableException {
    this(context, name, newUcpWorker(context, name));
  }

  /** Wraps an existing UCX worker; tests inject faults through this. */
  UcxWorker(UcxContext context, String name, UcpWorker worker) {
    this.context = context;
    this.name = name;
    this.worker = worker;
    context.retain();
  }

  private static UcpWorker newUcpWorker(UcxContext context, String name)
      throws UcxUnavailableException {
    try {
      return context.ucp().newWorker(new UcpWorkerParams()
          .requestWakeupRMA()
          .requestWakeupTagSend()
          .requestWakeupTagRecv()
          .requestWakeupTX()
          .requestWakeupRX());
    } catch (RuntimeException e) {
      throw new UcxUnavailableException("cannot create UCX worker " + name
          + ": " + e.getMessage(), e);
    }
  }

  /** Starts the progress thread. */
  public synchronized UcxWorker start() {
    if (state != State.NEW) {
      throw new IllegalStateException("worker " + name + " is " + state);
    }
    timer = new ScheduledThreadPoolExecutor(1, daemonThreads(name + "-timer"));
    timer.scheduleAtFixedRate(this::sweepDeadlinesSoon, DEADLINE_SWEEP_MS,
        DEADLINE_SWEEP_MS, TimeUnit.MILLISECONDS);
    worker.setAmRecvHandler(DESCRIPTOR_AM_ID, this::onDescriptorMessage,
        UcpConstants.UCP_AM_FLAG_WHOLE_MSG);
    thread = daemonThreads(name + "-progress").newThread(this::run);
    state = State.RUNNING;
    thread.start();
    return this;
  }

  private static ThreadFactory daemonThreads(final String threadName) {
    return r -> {
      Thread t = new Thread(r, threadName);
      t.setDaemon(true);
      return t;
    };
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
   * Receives every valid descriptor that arrives on this worker's
   * connections, and every rejected one. Called on the progress thread.
   */
  public void setDescriptorHandler(DescriptorHandler handler) {
    this.descriptorHandler = handler;
  }

  /** The largest packet a received descriptor may describe. */
  public void setMaxPacketBytes(int bytes) {
    this.maxPacketBytes = bytes;
  }

  public int maxPacketBytes() {
    return maxPacketBytes;
  }

  /** True on this worker's progress thread. */
  public boolean inProgressThread() {
    return Thread.currentThread() == thread;
  }

  /** True between {@link #start()} and {@link #close()}. */
  public boolean isRunning() {
    return state == State.RUNNING;
  }

  /**
   * Runs {@code task} on the progress thread: inline when called there,
   * otherwise queued and the thread woken.
   *
   * @throws IllegalStateException when the worker is not running
   */
  public void execute(Runnable task) {
    if (inProgressThread()) {
      runSafely(task);
      return;
    }
    if (state != State.RUNNING) {
      throw new IllegalStateException("UCX worker " + name + " is " + state);
    }
    tasks.add(task);
    if (state != State.RUNNING && tasks.remove(task)) {
      // Lost a race with close(): nobody will run the task any more.
      throw new IllegalStateException("UCX worker " + name + " is " + state);
    }
    if (sleeping) {
      wakeups.incrementAndGet();
      signal();
    }
  }

  /**
   * Runs {@code task} on the progress thread after what it is doing now,
   * even when called from the progress thread: for work started from a
   * completion callback, which may itself complete inline (a get of
   * shared memory does) and would otherwise recurse without bound.
   */
  public void executeLater(Runnable task) {
    if (state != State.RUNNING) {
      throw new IllegalStateException("UCX worker " + name + " is " + state);
    }
    tasks.add(task);
    if (state != State.RUNNING && tasks.remove(task)) {
      throw new IllegalStateException("UCX worker " + name + " is " + state);
    }
    if (!inProgressThread() && sleeping) {
      wakeups.incrementAndGet();
      signal();
    }
  }

  /** Wakes the progress thread; never touches a destroyed worker. */
  private void signal() {
    synchronized (nativeLock) {
      if (!nativeClosed) {
        worker.signal();
      }
    }
  }

  /**
   * Runs {@code task} on the progress thread and completes the returned
   * future with its result or its failure. Never throws.
   */
  public <T> CompletableFuture<T> call(Callable<T> task) {
    CompletableFuture<T> result = new CompletableFuture<T>();
    try {
      execute(() -> {
        try {
          result.complete(task.call());
        } catch (Throwable t) {
          result.completeExceptionally(t);
        }
      });
    } catch (IllegalStateException e) {
      result.completeExceptionally(e);
    }
    return result;
  }

  /** An operation with a deadline started on this worker. */
  void deadlineAdded() {
    opsWithDeadline.incrementAndGet();
  }

  /** An operation with a deadline finished. */
  void deadlineDone() {
    opsWithDeadline.decrementAndGet();
  }

  /**
   * Runs on the timer thread every {@link #DEADLINE_SWEEP_MS}: wakes the
   * progress thread to expire overdue operations, but only when some are
   * pending, so an idle worker stays asleep. One sweep instead of a timer
   * per operation keeps the per-packet cost to two counter updates.
   */
  private void sweepDeadlinesSoon() {
    if (opsWithDeadline.get() > 0 && state == State.RUNNING) {
      try {
        execute(this::sweepDeadlines);
      } catch (IllegalStateException e) {
        // Closing: the close path fails what is still pending.
      }
    }
  }

  private void sweepDeadlines() {
    long now = System.nanoTime();
    for (WorkerResource resource : new ArrayList<WorkerResource>(resources)) {
      if (resource instanceof UcxConnection) {
        ((UcxConnection) resource).expireOverdue(now);
      }
    }
  }

  UcpWorker ucp() {
    return worker;
  }

  /**
   * Closes a listener or connection of this worker on the progress thread
   * and waits, bounded, for it to be done. When the worker is already
   * closing, the worker closes the resource itself.
   */
  void closeOnProgressThread(WorkerResource resource) {
    if (inProgressThread()) {
      resource.closeOnProgressThread();
      return;
    }
    try {
      call(() -> {
        resource.closeOnProgressThread();
        return null;
      }).get(CLOSE_JOIN_MS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      LOG.debug("Closing {} through UCX worker {}: {}", resource, name,
          e.toString());
    }
  }

  void register(WorkerResource resource) {
    resources.add(resource);
  }

  void unregister(WorkerResource resource) {
    resources.remove(resource);
  }

  void mapEndpoint(long handle, UcxConnection connection) {
    connectionsByEndpoint.put(handle, connection);
  }

  void unmapEndpoint(long handle) {
    connectionsByEndpoint.remove(handle);
  }

  /** Times the progress thread was woken by a signal. */
  public long wakeups() {
    return wakeups.get();
  }

  /** Calls of the UCX progress function. */
  public long progressCalls() {
    return progressCalls.get();
  }

  /** Valid descriptors received on this worker. */
  public long descriptorsReceived() {
    return descriptorsReceived.get();
  }

  /** Descriptor messages rejected by validation. */
  public long malformedDescriptors() {
    return malformedDescriptors.get();
  }

  /** The progress thread's CPU identity, for tests and diagnostics. */
  public Thread progressThread() {
    return thread;
  }

  /** UCX's own description of this worker (transports, config), if known. */
  public CompletableFuture<String> describe() {
    return call(() -> NativeIntrospection.workerInfo(
        worker.getNativeId()));
  }

  private void run() {
    LOG.debug("UCX worker {} progress thread started", name);
    try {
      while (state == State.RUNNING) {
        runTasks();
        if (progress() == 0 && tasks.isEmpty()) {
          sleep();
        }
      }
    } catch (Throwable t) {
      LOG.error("UCX worker {} progress thread failed; closing it", name, t);
    } finally {
      shutdownOnProgressThread();
    }
  }

  private void runTasks() {
    Runnable task;
    while ((task = tasks.poll()) != null) {
      runSafely(task);
    }
  }

  private void runSafely(Runnable task) {
    try {
      task.run();
    } catch (Throwable t) {
      LOG.error("Task on UCX worker {} failed", name, t);
    }
  }

  private int progress() {
    int events = 0;
    try {
      int n;
      do {
        progressCalls.incrementAndGet();
        n = worker.progress();
        events += n;
      } while (n != 0 && events < 1024);
    } catch (Throwable t) {
      LOG.error("UCX worker {} progress failed", name, t);
    }
    return events;
  }

  private void sleep() {
    sleeping = true;
    try {
      // A task queued after the check above signals the worker, and the
      // signal makes the wait return at once: no wakeup is lost.
      if (tasks.isEmpty() && state == State.RUNNING) {
        worker.waitForEvents();
      }
    } catch (Throwable t) {
      LOG.warn("UCX worker {} event wait failed; backing off", name, t);
      try {
        Thread.sleep(1);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    } finally {
      sleeping = false;
    }
  }

  /**
   * Called by UCX on the progress thread for each descriptor message. Copies
   * the bytes out (they are valid only during this call) and validates them.
   */
  private int onDescriptorMessage(long headerAddress, long headerLength,
      UcpAmData data, UcpEndpoint replyEndpoint) {
    try {
      UcxConnection from = replyEndpoint == null ? null
          : connectionsByEndpoint.get(replyEndpoint.getNativeId());
      DescriptorHandler handler = descriptorHandler;
      if (from == null || handler == null) {
        malformedDescriptors.incrementAndGet();
        LOG.warn("UCX worker {} dropped a descriptor from an unknown endpoint"
            + " or with no handler installed", name);
        return 0;
      }
      long length = data.getLength();
      if (!data.isDataValid() || length > PacketDescriptor.MAX_LENGTH) {
        rejected(handler, from, new MalformedDescriptorException(
            "descriptor message of " + length + " bytes exceeds "
            + PacketDescriptor.MAX_LENGTH));
        return 0;
      }
      java.nio.ByteBuffer copy = java.nio.ByteBuffer.allocate((int) length);
      if (length > 0) {
        copy.put(UcxUtils.getByteBufferView(data.getDataAddress(), length));
      }
      PacketDescriptor descriptor = new PacketDescriptor()
          .wrap(copy, 0, (int) length);
      try {
        descriptor.validate(maxPacketBytes);
      } catch (MalformedDescriptorException e) {
        rejected(handler, from, e);
        return 0;
      }
      descriptorsReceived.incrementAndGet();
      handler.onDescriptor(from, descriptor);
    } catch (Throwable t) {
      LOG.error("Descriptor handler on UCX worker {} failed", name, t);
    }
    return 0; // UCS_OK: UCX may release the message
  }

  private void rejected(DescriptorHandler handler, UcxConnection from,
      MalformedDescriptorException e) {
    malformedDescriptors.incrementAndGet();
    LOG.warn("Rejected a descriptor from {}: {}", from.peer(), e.getMessage());
    try {
      handler.onMalformed(from, e);
    } catch (Throwable t) {
      LOG.error("Descriptor handler on UCX worker {} failed", name, t);
    }
  }

  /**
   * Stops the progress thread, closing this worker's listeners and
   * connections first. Idempotent; safe from any thread.
   */
  @Override
  public void close() {
    Thread progressThread;
    synchronized (this) {
      if (state == State.CLOSED || state == State.CLOSING) {
        progressThread = thread;
      } else if (state == State.NEW) {
        state = State.CLOSED;
        closeNative();
        return;
      } else {
        state = State.CLOSING;
        progressThread = thread;
        signal();
      }
    }
    if (progressThread != null && progressThread != Thread.currentThread()) {
      try {
        progressThread.join(CLOSE_JOIN_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (progressThread.isAlive()) {
        LOG.error("UCX worker {} progress thread did not stop within {} ms",
            name, CLOSE_JOIN_MS);
      }
    }
  }

  private void shutdownOnProgressThread() {
    synchronized (this) {
      state = State.CLOSING;
    }
    runTasks();
    List<WorkerResource> reverse = new ArrayList<WorkerResource>(resources);
    for (int i = reverse.size() - 1; i >= 0; i--) {
      try {
        reverse.get(i).closeOnProgressThread();
      } catch (Throwable t) {
        LOG.warn("Closing a resource of UCX worker {} failed", name, t);
      }
    }
    resources.clear();
    // Let forced endpoint closes and their callbacks run to completion.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
    while (progress() != 0 && System.nanoTime() < deadline) {
      runTasks();
    }
    runTasks();
    // Tasks queued from now on are refused by execute().
    state = State.CLOSED;
    runTasks();
    try {
      worker.removeAmRecvHandler(DESCRIPTOR_AM_ID);
    } catch (Throwable t) {
      LOG.debug("Removing the descriptor handler of {} failed", name, t);
    }
    closeNative();
    timer.shutdownNow();
    LOG.debug("UCX worker {} closed after {} wakeups", name, wakeups.get());
  }

  private void closeNative() {
    synchronized (nativeLock) {
      if (nativeClosed) {
        return;
      }
      nativeClosed = true;
      try {
        worker.close();
        context.release();
      } catch (Throwable t) {
        LOG.warn("Closing UCX worker {} failed", name, t);
      }
    }
  }

  @Override
  public String toString() {
    return "UcxWorker(" + name + ", " + state + ")";
  }
}
