package org.hdfsrdma.ucx;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;

/**
 * Closing several resources as one step: every one is closed even when an
 * earlier one fails, and no failure is lost.
 *
 * <p>Two flavours, for the two places resources are closed:
 * <ul>
 * <li>{@link #closeAll}, for a {@code close()} that releases several
 * things: it rethrows the first failure with the later ones suppressed on
 * it. An unchecked failure is rethrown as it is; a checked one is wrapped in
 * an {@link UncheckedIOException}, because every {@code close()} of this
 * library declares no checked exception (UCX reports its failures
 * unchecked), and neither should the helper they call: a caller that wants
 * the checked exception back takes the cause.
 * <li>{@link #closeAfterFailure}, for a constructor or an open that failed
 * after acquiring something: the acquired resources are closed and their
 * failures are added to the caller's own exception, which the caller then
 * rethrows; it never throws over it.
 * </ul>
 * Neither logs: a failure is the caller's to report. Callbacks and
 * progress threads, which must not throw at all, report through the
 * worker's counted failure policy instead.
 */
public final class Closeables {

  private Closeables() {
  }

  /**
   * Closes every non-null resource, in the order given.
   *
   * @throws RuntimeException the first unchecked failure, later ones
   *     suppressed on it
   * @throws Error likewise
   * @throws UncheckedIOException wrapping the first failure when it is
   *     checked (an {@link IOException} as it is, another one wrapped in an
   *     IOException first)
   */
  public static void closeAll(AutoCloseable... resources) {
    closeAll(Arrays.asList(resources));
  }

  /** {@link #closeAll(AutoCloseable...)} for a collection of resources. */
  public static void closeAll(Iterable<? extends AutoCloseable> resources) {
    Throwable first = closeEach(null, resources);
    if (first instanceof RuntimeException) {
      throw (RuntimeException) first;
    }
    if (first instanceof Error) {
      throw (Error) first;
    }
    if (first instanceof IOException) {
      throw new UncheckedIOException((IOException) first);
    }
    if (first != null) {
      throw new UncheckedIOException(new IOException(
          "closing failed: " + first, first));
    }
  }

  /**
   * Closes every non-null resource, in the order given, after {@code
   * failure} stopped whatever acquired them; each close failure is added to
   * {@code failure} as suppressed. Never throws: the caller rethrows
   * {@code failure}.
   */
  public static void closeAfterFailure(Throwable failure,
      AutoCloseable... resources) {
    closeEach(failure, Arrays.asList(resources));
  }

  /**
   * Closes each resource; returns {@code primary}, or when it is null the
   * first failure, with every other failure suppressed on it.
   */
  private static Throwable closeEach(Throwable primary,
      Iterable<? extends AutoCloseable> resources) {
    for (AutoCloseable r : resources) {
      if (r == null) {
        continue;
      }
      try {
        r.close();
      } catch (Throwable t) {
        if (t instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        if (primary == null) {
          primary = t;
        } else if (primary != t) {
          primary.addSuppressed(t);
        }
      }
    }
    return primary;
  }
}
