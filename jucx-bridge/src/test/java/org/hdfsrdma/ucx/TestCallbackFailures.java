package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.Test;

/**
 * {@link CallbackFailures}: counted, the first of each kind logged with its
 * stack trace, later ones one line per kind per interval, never a throw.
 * The log is read from standard error, where the tests' SLF4J binding
 * writes.
 */
public class TestCallbackFailures {

  private final AtomicLong now = new AtomicLong();
  private final CallbackFailures failures =
      new CallbackFailures("w", now::get);

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
}
