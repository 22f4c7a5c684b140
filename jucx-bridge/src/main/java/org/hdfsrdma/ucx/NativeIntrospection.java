package org.hdfsrdma.ucx;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small JNI helper built in native/ and packed in this jar, with two jobs
 * JUCX does not do:
 *
 * <ul>
 * <li>Prepare the environment before UCX loads. libucs installs SIGSEGV,
 * SIGBUS... handlers in its load-time constructor; in a JVM they take the
 * faults the JIT uses for implicit null checks and kill the process (seen
 * here: a crash in String.equals while JUCX was still unpacking its own
 * library). UCX_HANDLE_ERRORS=none before libucs loads prevents it. The
 * helper does not link UCX, so loading it loads no UCX. It also lets a
 * peer's stray messages fill no log (UCX_LOG_LEVEL=error).</li>
 * <li>Describe an endpoint or a worker (ucp_ep_print_info): which transports
 * really carry the bytes.</li>
 * </ul>
 *
 * <p>Optional: when the helper cannot be loaded the answers say so, and the
 * operator must set UCX_HANDLE_ERRORS=none in the JVM's environment.
 */
public final class NativeIntrospection {

  private static final Logger LOG =
      LoggerFactory.getLogger(NativeIntrospection.class);
  private static final String LIBRARY = "libhdfsrdma.so";
  private static final String RESOURCE = "/native/linux-"
      + System.getProperty("os.arch") + "/" + LIBRARY;
  private static final String LOAD_ERROR = load();
  private static volatile Map<String, String> applied =
      Collections.emptyMap();

  private NativeIntrospection() {
  }

  private static String load() {
    try (InputStream in = NativeIntrospection.class
        .getResourceAsStream(RESOURCE)) {
      if (in == null) {
        return "resource " + RESOURCE + " is not in the jar";
      }
      File file = File.createTempFile("hdfsrdma", ".so");
      try {
        Files.copy(in, file.toPath(), StandardCopyOption.REPLACE_EXISTING);
        System.load(file.getAbsolutePath());
      } finally {
        // Loaded, the library stays mapped: the file can go now, so that a
        // JVM that is killed leaves nothing in the temporary directory.
        if (!file.delete()) {
          file.deleteOnExit();
        }
      }
      return null;
    } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
      return e.toString();
    }
  }

  /** True when the JNI helper is loaded. */
  public static boolean isAvailable() {
    return LOAD_ERROR == null;
  }

  /** Why the helper is not loaded, or null. */
  public static String unavailableReason() {
    return LOAD_ERROR;
  }

  /**
   * Sets the UCX environment defaults this library needs, unless the
   * operator set them, before UCX is loaded. Called once, by
   * {@link UcxLibrary}, before JUCX loads UCX.
   */
  static void prepareEnvironment() {
    String unset = unsetDefaults();
    if (unset.isEmpty()) {
      return;
    }
    if (!isAvailable()) {
      LOG.warn("UCX helper not loaded ({}); set {} in the environment of"
          + " JVMs that use UCX, or UCX's signal handlers may crash the JVM",
          LOAD_ERROR, unset);
    } else if (isUcxLoaded()) {
      LOG.warn("UCX was loaded before hdfs-rdma could set {}; set it in the"
          + " JVM's environment", unset);
    } else {
      Map<String, String> set = new TreeMap<String, String>();
      for (String[] d : ENVIRONMENT_DEFAULTS) {
        if (setenvIfUnset(d[0], d[1])) {
          set.put(d[0], d[1]);
        }
      }
      applied = Collections.unmodifiableMap(set);
    }
  }

  /**
   * The defaults this library set in the process's environment before UCX
   * loaded (name to value): the JVM's own view of the environment, taken
   * at its start, does not show them.
   */
  static Map<String, String> appliedDefaults() {
    return applied;
  }

  /**
   * UCX settings this library relies on, with the reason. Operators may set
   * them otherwise; the library never overrides the environment.
   */
  private static final String[][] ENVIRONMENT_DEFAULTS = {
    // libucs's SIGSEGV/SIGBUS handlers take the JVM's own faults.
    {"UCX_HANDLE_ERRORS", "none"},
    // UCX logs every message it drops below its own layer (an active
    // message of a feature this context did not request, a stray tagged
    // message) at WARN with a hex dump and a backtrace: a peer could fill
    // the disk. Errors still show.
    {"UCX_LOG_LEVEL", "error"},
    // Lets endpoints with peer error handling use shared-memory lanes on
    // one host (4-5x tcp here); peer death is still detected (keepalive,
    // process checks). See the module README for the measurements.
    {"UCX_MM_ERROR_HANDLING", "y"},
    // The worker lock as a mutex, not UCX's default spin lock: many threads
    // enter one worker (a DataNode's receivers progress it while they
    // wait) in JVMs with more threads than cores. Eight logs calling hflush
    // from one client kept the DataNodes' threads spinning on it (68% of
    // their CPU samples) while the holder waited for a core: a fifth of
    // stock's records per second. See the module README.
    {"UCX_USE_MT_MUTEX", "y"},
    // The receive queue of UCX's shared-memory transports, shared by every
    // sender on the host: at UCX's 64 entries a DataNode's queue was full
    // under eight writer threads of one client, which then waited for the
    // sends UCX held back. Every process of a host must run with the same
    // sizes (UcxRelease.sharedMemoryProfile). UCX_MM_ sets every such
    // transport and yields to an operator's UCX_SYSV_, UCX_POSIX_...
    // See the module README.
    {"UCX_MM_FIFO_SIZE", "256"},
    // UCX's memory events: libucs's load-time constructor rewrites the
    // first bytes of libc's mmap, munmap, sbrk... in place while the JVM's
    // threads run in them, and a thread resumed inside the rewritten bytes
    // kills the JVM (DataNode JVMs died so at start-up). The events feed
    // UCX's registration cache; hdfs-rdma hands UCX only memory it
    // registered itself, so it needs none. See the module README.
    {"UCX_MEM_EVENTS", "n"},
    // The defaults above are process-wide and not all apply to every
    // transport set; UCX would warn about each unused one on stdout.
    {"UCX_WARN_UNUSED_ENV_VARS", "n"},
  };

  private static String unsetDefaults() {
    StringBuilder sb = new StringBuilder();
    for (String[] d : ENVIRONMENT_DEFAULTS) {
      if (System.getenv(d[0]) == null) {
        sb.append(sb.length() == 0 ? "" : " ").append(d[0]).append('=')
            .append(d[1]);
      }
    }
    return sb.toString();
  }

  /**
   * Warns, once per JVM (UCX loads once), when UCX rewrote libc's memory
   * functions as it loaded: an operator's or another library's
   * {@code UCX_MEM_EVENTS}, or UCX loaded before this library could set
   * its defaults. Such a JVM may have died already; one that did not may
   * still hang in UCX's event lock.
   */
  static void warnIfLibcRewritten() {
    String rewritten = rewrittenLibcFunctions();
    if (rewritten != null && !rewritten.isEmpty()) {
      LOG.warn("UCX rewrote libc's {} as it loaded (its memory events are"
          + " on: UCX_MEM_EVENTS={}); a JVM thread inside one of them at"
          + " that moment crashes the JVM. hdfs-rdma needs no memory events:"
          + " leave UCX_MEM_EVENTS unset (hdfs-rdma sets n) unless another"
          + " library of this JVM needs them", rewritten,
          System.getenv("UCX_MEM_EVENTS"));
    }
  }

  /**
   * The names of libc's memory functions whose code in this process is no
   * longer libc's file ("" when none), or null when that cannot be told.
   */
  static String rewrittenLibcFunctions() {
    return isAvailable() ? patchedLibc() : null;
  }

  /** The version of the UCX library actually loaded, or a reason. */
  public static String loadedUcxVersion() {
    if (!isAvailable()) {
      return "unknown (" + LOAD_ERROR + ")";
    }
    String version = ucxVersion();
    return version == null ? "unknown (UCX not loaded)" : version;
  }

  /** ucp_ep_print_info text; progress thread of the endpoint's worker. */
  static String endpointInfo(Long endpointHandle) {
    if (!isAvailable() || endpointHandle == null) {
      return null;
    }
    return endpointInfo(endpointHandle.longValue());
  }

  /** ucp_context_print_info text: the context's transport resources. */
  static String contextInfo(long contextHandle) {
    if (!isAvailable()) {
      return null;
    }
    return contextInfo0(contextHandle);
  }

  /** ucp_worker_print_info text; progress thread of that worker. */
  static String workerInfo(Long workerHandle) {
    if (!isAvailable() || workerHandle == null) {
      return null;
    }
    return workerInfo(workerHandle.longValue());
  }

  private static native boolean setenvIfUnset(String name, String value);

  private static native boolean isUcxLoaded();

  private static native String patchedLibc();

  private static native String ucxVersion();

  private static native String endpointInfo(long ucpEp);

  private static native String workerInfo(long ucpWorker);

  private static native String contextInfo0(long ucpContext);
}
