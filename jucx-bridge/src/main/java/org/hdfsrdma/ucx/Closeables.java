package org.hdfsrdma.ucx;

/**
 * Closes sequences of resources as Agrona's {@code CloseHelper} does: every
 * one, in the order given, whatever an earlier one threw.
 */
public final class Closeables {

  private Closeables() {
  }

  /**
   * Closes every non-null resource in order. The first exception is
   * rethrown once all were closed (a checked one wrapped in an unchecked
   * {@link IllegalStateException}), the later ones suppressed in it.
   */
  public static void closeAll(AutoCloseable... resources) {
    Throwable first = null;
    for (AutoCloseable r : resources) {
      if (r == null) {
        continue;
      }
      try {
        r.close();
      } catch (Throwable t) {
        if (first == null) {
          first = t;
        } else {
          first.addSuppressed(t);
        }
      }
    }
    if (first instanceof RuntimeException) {
      throw (RuntimeException) first;
    }
    if (first instanceof Error) {
      throw (Error) first;
    }
    if (first != null) {
      throw new IllegalStateException(first);
    }
  }
}
