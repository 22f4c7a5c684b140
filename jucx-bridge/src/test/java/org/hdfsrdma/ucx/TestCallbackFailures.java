package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.After;
import org.junit.Test;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRequest;

/**
 * {@link CallbackFailures}: counted, the first of each kind logged with its
 * stack trace, later ones one line per kind per interval, never a throw;
 * and on real workers, a task, a message handler, a callback inside UCX's
 * progress and an endpoint's close listener that throw are counted in
 * {@link UcxWorker#callbackFailures()} while the worker goes on. The log is
 * read from standard error, where the tests' SLF4J binding writes.
 */
public class TestCallbackFailures {

  private static final long WAIT_MS = 30_000;

  private final AtomicLong now = new AtomicLong();
  private final CallbackFailures failures =
      new CallbackFailures("w", now::get);
  private UcxContext context;
  private UcxWorker receiver;
  private UcxWorker sender;
  private UcxEndpoint endpoint;

  @After
  public void tearDown() {
    Closeables.closeAll(endpoint, sender, receiver, context);
  }

  /** A receiving worker, and a sending one connected to it. */
  private void connect() throws Exception {
    connect(UcxTestUtils.TLS_SHM);
  }

  private void connect(String tls) throws Exception {
    UcxTestUtils.assumeUcx();
    context = new UcxContext(UcxTestUtils.options(tls));
    receiver = new UcxWorker(context, "receiver").start();
    sender = new UcxWorker(context, "sender").start();
    endpoint = UcxEndpoint.connect(sender, receiver.address(), "receiver",
        WAIT_MS).get(WAIT_MS, TimeUnit.MILLISECONDS);
  }

  /** What the log said while {@code action} ran. */
  static String logOf(Runnable action) {
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true));
    try {
      action.run();
    } finally {
      System.setErr(original);
    }
    String log = new String(captured.toByteArray(), StandardCharsets.UTF_8);
    original.print(log);
    return log;
  }

  /** How often {@code what} stands in {@code text}. */
  static int occurrences(String text, String what) {
    int n = 0;
    for (int at = text.indexOf(what); at >= 0;
        at = text.indexOf(what, at + what.length())) {
      n++;
    }
    return n;
  }

  private void at(long seconds, CallbackFailures.Kind kind, String message) {
    now.set(TimeUnit.SECONDS.toNanos(seconds));
    failures.record(kind, new IllegalStateException(message));
  }

  @Test
  public void testTheFirstFailureOfAKindIsLoggedWithItsStackTrace() {
    String log = logOf(() -> at(0, CallbackFailures.Kind.TASK, "boom"));
    assertEquals(log, 1, occurrences(log, "UCX worker w: a task on the"
        + " progress thread threw"));
    assertTrue(log, log.contains("IllegalStateException: boom"));
    assertTrue(log, log.contains("\tat " + TestCallbackFailures.class
        .getName()));
    assertEquals(1, failures.count(CallbackFailures.Kind.TASK));
    assertEquals(0, failures.count(CallbackFailures.Kind.MESSAGE_HANDLER));
    assertEquals(1, failures.total());
  }

  @Test
  public void testLaterFailuresGetOneLinePerKindPerInterval() {
    String log = logOf(() -> {
      at(0, CallbackFailures.Kind.MESSAGE_HANDLER, "first");
      for (int s = 1; s < 10; s++) {
        at(s, CallbackFailures.Kind.MESSAGE_HANDLER, "quiet " + s);
      }
      at(5, CallbackFailures.Kind.CLOSE_LISTENER, "another kind");
      at(10, CallbackFailures.Kind.MESSAGE_HANDLER, "after ten seconds");
      at(15, CallbackFailures.Kind.MESSAGE_HANDLER, "quiet again");
      at(20, CallbackFailures.Kind.MESSAGE_HANDLER, "after twenty");
    });
    assertEquals(log, 4, occurrences(log, "UCX worker w:"));
    assertFalse(log, log.contains("quiet"));
    assertTrue(log, log.contains("the message handler threw again:"
        + " java.lang.IllegalStateException: after ten seconds (9 more not"
        + " logged since the last line; 11 in all)"));
    assertTrue(log, log.contains("the message handler threw again:"
        + " java.lang.IllegalStateException: after twenty (1 more not"
        + " logged since the last line; 13 in all)"));
    assertTrue(log, log.contains("an endpoint's close listener threw;"));
    // Stack traces: the first of each kind only.
    assertEquals(log, 2, occurrences(log, "\tat " + TestCallbackFailures
        .class.getName() + ".at("));
    assertEquals(13, failures.count(CallbackFailures.Kind.MESSAGE_HANDLER));
    assertEquals(14, failures.total());
  }

  @Test
  public void testRecordingNeverThrows() {
    Throwable hostile = new RuntimeException() {
      @Override
      public String toString() {
        throw new IllegalStateException("toString fails");
      }

      @Override
      public String getMessage() {
        throw new IllegalStateException("getMessage fails");
      }

      @Override
      public void printStackTrace(PrintStream s) {
        throw new IllegalStateException("printStackTrace fails");
      }

      @Override
      public void printStackTrace(PrintWriter s) {
        throw new IllegalStateException("printStackTrace fails");
      }
    };
    logOf(() -> {
      for (int s = 0; s < 30; s += 10) {
        now.set(TimeUnit.SECONDS.toNanos(s));
        failures.record(CallbackFailures.Kind.PROGRESS, hostile);
      }
      failures.record(null, hostile);
    });
    assertEquals(3, failures.count(CallbackFailures.Kind.PROGRESS));
    assertEquals(3, failures.total());
  }

  @Test(timeout = 60_000)
  public void testAThrowingTaskIsCountedAndTheNextOneRuns() throws Exception {
    connect();
    CountDownLatch ran = new CountDownLatch(1);
    String log = logOf(() -> {
      for (int i = 0; i < 3; i++) {
        receiver.execute(() -> {
          throw new IllegalStateException("a failing task");
        });
      }
      receiver.execute(ran::countDown);
      UcxTestUtils.waitForUnchecked(() -> ran.getCount() == 0, WAIT_MS,
          "the task after the failing ones");
    });
    assertEquals(3, receiver.callbackFailures());
    assertEquals(log, 1, occurrences(log, "a task on the progress thread"
        + " threw;"));
    assertEquals(log, 1, occurrences(log, "a failing task"));
    assertTrue(receiver.progressThread().isAlive());
    assertEquals(0, sender.callbackFailures());
  }

  @Test(timeout = 60_000)
  public void testAThrowingMessageHandlerIsCountedAndDeliveryGoesOn()
      throws Exception {
    connect();
    AtomicInteger handled = new AtomicInteger();
    receiver.setMessageHandler((message, length, reply) -> {
      handled.incrementAndGet();
      throw new IllegalStateException("a failing handler");
    });
    ByteBuffer messages = ByteBuffer.allocateDirect(64);
    StatusSlots slots = new StatusSlots(1);
    String log = logOf(() -> {
      try {
        for (int i = 0; i < 5; i++) {
          UcxTestUtils.sendAsWritePath(endpoint, UcxUtils.getAddress(
              messages), 64, slots, 0, WAIT_MS);
        }
        UcxTestUtils.waitFor(() -> handled.get() == 5, WAIT_MS,
            "five messages handled");
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
    assertEquals(5, receiver.callbackFailures());
    assertEquals(log, 1, occurrences(log, "the message handler threw;"));
    assertEquals(log, 0, occurrences(log, "threw again"));
    AtomicBoolean delivered = new AtomicBoolean();
    receiver.setMessageHandler((message, length, reply) ->
        delivered.set(true));
    UcxTestUtils.sendAsWritePath(endpoint, UcxUtils.getAddress(messages), 64,
        slots, 0, WAIT_MS);
    UcxTestUtils.waitFor(delivered::get, WAIT_MS, "the next message");
    assertEquals(6, receiver.messagesDelivered());
    assertEquals(5, receiver.callbackFailures());
  }

  /**
   * JUCX's callbacks throw out of UCX's progress call (JUCX's own default
   * callbacks do on errors): progress() counts it instead of throwing at
   * whichever thread progressed. Over tcp, where a new endpoint's flush
   * completes in a later progress call, not at once.
   */
  @Test(timeout = 60_000)
  public void testACallbackThrowingInsideProgressIsCounted()
      throws Exception {
    connect(UcxTestUtils.TLS_TCP);
    UcxWorker getter = new UcxWorker(context, "unstarted");
    try {
      byte[] address = receiver.address();
      ByteBuffer padded = ByteBuffer.allocateDirect(address.length + 4096);
      padded.put(address).clear();
      UcpEndpoint raw = getter.ucp().newEndpoint(new UcpEndpointParams()
          .setUcpAddress(padded).setPeerErrorHandlingMode());
      AtomicBoolean called = new AtomicBoolean();
      String log = logOf(() -> {
        raw.flushNonBlocking(new UcxCallback() {
          @Override
          public void onSuccess(UcpRequest request) {
            called.set(true);
            throw new IllegalStateException("a failing JUCX callback");
          }
        });
        long deadline = System.nanoTime()
            + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        while (!called.get() && System.nanoTime() < deadline) {
          getter.progress();
        }
      });
      assertTrue(called.get());
      assertEquals(1, getter.callbackFailures());
      assertEquals(log, 1, occurrences(log, "a callback inside UCX's"
          + " progress threw;"));
      UcpRequest closing = raw.closeNonBlockingForce();
      while (!closing.isCompleted()) {
        getter.progress();
      }
    } finally {
      getter.close();
    }
  }

  @Test(timeout = 60_000)
  public void testAThrowingCloseListenerIsCountedAndTheOthersRun()
      throws Exception {
    connect();
    AtomicInteger notified = new AtomicInteger();
    endpoint.addCloseListener(e -> {
      throw new IllegalStateException("a failing close listener");
    });
    endpoint.addCloseListener(e -> notified.incrementAndGet());
    String log = logOf(() -> {
      endpoint.close();
      endpoint.addCloseListener(e -> {
        throw new IllegalStateException("a failing late close listener");
      });
    });
    assertEquals(1, notified.get());
    assertTrue(endpoint.closedFuture().isDone());
    assertEquals(2, sender.callbackFailures());
    assertEquals(log, 1, occurrences(log, "an endpoint's close listener"
        + " threw;"));
  }
}
