package org.hdfsrdma.ucx;

import org.openucx.jucx.NativeLibs;

/**
 * Whether the UCX native libraries can be used in this JVM.
 *
 * <p>JUCX's jar carries only its JNI glue; libucp, libucs, libuct and libucm
 * come from the system. A host without them (or with an incompatible UCX)
 * must keep running HDFS over TCP, so callers ask here first instead of
 * letting an {@link UnsatisfiedLinkError} escape from a constructor.
 */
public final class UcxLibrary {

  private static final String UNAVAILABLE_REASON = probe();

  private UcxLibrary() {
  }

  private static String probe() {
    try {
      // Before any UCX library loads: see NativeIntrospection.
      NativeIntrospection.prepareEnvironment();
      NativeLibs.load();
      NativeIntrospection.warnIfLibcRewritten();
      return null;
    } catch (Throwable t) {
      // UnsatisfiedLinkError, NoClassDefFoundError, ExceptionInInitializer:
      // any of them means the same thing to the caller.
      return t.getClass().getSimpleName() + ": " + t.getMessage();
    }
  }

  /** True when the UCX libraries loaded. */
  public static boolean isAvailable() {
    return UNAVAILABLE_REASON == null;
  }

  /** Why UCX cannot be used, or null when it can. */
  public static String unavailableReason() {
    return UNAVAILABLE_REASON;
  }

  /**
   * Fails with a clear error when UCX cannot be used.
   *
   * @throws UcxUnavailableException naming the reason
   */
  public static void ensureAvailable() throws UcxUnavailableException {
    if (UNAVAILABLE_REASON != null) {
      throw new UcxUnavailableException("UCX native libraries are not usable"
          + " (install libucx0, or point LD_LIBRARY_PATH at a UCX build): "
          + UNAVAILABLE_REASON);
    }
  }
}
