package org.hdfsrdma.ucx;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.Test;

/**
 * {@link Closeables}: every resource closed in order whatever the others
 * do, the first failure thrown with the rest suppressed on it.
 */
public class TestCloseables {

  /** What the resources of one test did, in order. */
  private final List<String> closed = new ArrayList<String>();

  /** A resource that records its close, then throws {@code failure}. */
  private AutoCloseable resource(String name, Exception failure) {
    return () -> {
      closed.add(name);
      if (failure != null) {
        throw failure;
      }
    };
  }

  private AutoCloseable resource(String name) {
    return resource(name, null);
  }

  @Test
  public void testClosesInTheOrderGivenAndSkipsNulls() {
    Closeables.closeAll(resource("a"), null, resource("b"), null,
        resource("c"));
    assertEquals(Arrays.asList("a", "b", "c"), closed);
    Closeables.closeAll(Arrays.asList(resource("d"), null, resource("e")));
    assertEquals(Arrays.asList("a", "b", "c", "d", "e"), closed);
    Closeables.closeAll();
    Closeables.closeAll(new ArrayList<AutoCloseable>());
  }

  @Test
  public void testTheFirstFailureIsThrownWithTheRestSuppressed() {
    IllegalStateException first = new IllegalStateException("first");
    IllegalArgumentException second = new IllegalArgumentException("second");
    UnsupportedOperationException third =
        new UnsupportedOperationException("third");
    try {
      Closeables.closeAll(resource("a", first), resource("b"),
          resource("c", second), resource("d", third), resource("e"));
      fail("closing should have failed");
    } catch (IllegalStateException e) {
      assertSame(first, e);
      assertArrayEquals(new Throwable[] {second, third}, e.getSuppressed());
    }
    assertEquals(Arrays.asList("a", "b", "c", "d", "e"), closed);
  }

  @Test
  public void testAnErrorIsRethrownAsItIs() {
    AssertionError error = new AssertionError("an error");
    try {
      Closeables.closeAll(Arrays.asList(resource("a"), () -> {
        closed.add("b");
        throw error;
      }, resource("c")));
      fail("closing should have failed");
    } catch (AssertionError e) {
      assertSame(error, e);
    }
    assertEquals(Arrays.asList("a", "b", "c"), closed);
  }

  @Test
  public void testACheckedFailureIsWrappedUnchecked() {
    IOException io = new IOException("io");
    try {
      Closeables.closeAll(resource("a", io), resource("b"));
      fail("closing should have failed");
    } catch (UncheckedIOException e) {
      assertSame(io, e.getCause());
    }
    Exception other = new Exception("other");
    IllegalStateException later = new IllegalStateException("later");
    try {
      Closeables.closeAll(resource("c", other), resource("d", later));
      fail("closing should have failed");
    } catch (UncheckedIOException e) {
      assertSame(other, e.getCause().getCause());
      assertArrayEquals(new Throwable[] {later}, other.getSuppressed());
    }
    assertEquals(Arrays.asList("a", "b", "c", "d"), closed);
  }

  @Test
  public void testAnInterruptedCloseKeepsTheInterrupt() {
    try {
      Closeables.closeAll(resource("a", new InterruptedException()),
          resource("b"));
      fail("closing should have failed");
    } catch (UncheckedIOException e) {
      assertTrue(e.getCause().getCause() instanceof InterruptedException);
      assertTrue(Thread.interrupted());
    }
    assertEquals(Arrays.asList("a", "b"), closed);
  }

  @Test
  public void testTheSameFailureTwiceIsNotSuppressedOnItself() {
    IllegalStateException again = new IllegalStateException("again");
    try {
      Closeables.closeAll(resource("a", again), resource("b", again));
      fail("closing should have failed");
    } catch (IllegalStateException e) {
      assertSame(again, e);
      assertEquals(0, e.getSuppressed().length);
    }
  }

  @Test
  public void testAfterAFailureEverythingIsClosedAndNothingThrown() {
    IOException cause = new IOException("what stopped the constructor");
    IllegalStateException first = new IllegalStateException("first");
    IOException second = new IOException("second");
    Closeables.closeAfterFailure(cause, resource("a", first), null,
        resource("b"), resource("c", second));
    assertEquals(Arrays.asList("a", "b", "c"), closed);
    assertArrayEquals(new Throwable[] {first, second}, cause.getSuppressed());
  }
}
