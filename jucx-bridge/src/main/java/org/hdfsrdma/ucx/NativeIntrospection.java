package org.hdfsrdma.ucx;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * UCX's own account of an endpoint or worker (which transports and devices
 * it uses), through a small JNI helper built in native/ and packed in this
 * jar. JUCX does not expose ucp_ep_print_info, and which transport carried
 * the bytes is what an operator needs to know.
 *
 * <p>Optional: when the helper cannot be loaded the answers say so and
 * nothing else is affected.
 */
public final class NativeIntrospection {

  private static final Logger LOG =
      LoggerFactory.getLogger(NativeIntrospection.class);
  private static final String LIBRARY = "libhdfsrdma_ucxinfo.so";
  private static final String RESOURCE = "/native/linux-"
      + System.getProperty("os.arch") + "/" + LIBRARY;
  private static final String LOAD_ERROR = load();

  private NativeIntrospection() {
  }

  private static String load() {
    if (!UcxLibrary.isAvailable()) {
      return "UCX unavailable: " + UcxLibrary.unavailableReason();
    }
    try (InputStream in = NativeIntrospection.class
        .getResourceAsStream(RESOURCE)) {
      if (in == null) {
        return "resource " + RESOURCE + " is not in the jar";
      }
      File file = File.createTempFile("hdfsrdma_ucxinfo", ".so");
      file.deleteOnExit();
      Files.copy(in, file.toPath(), StandardCopyOption.REPLACE_EXISTING);
      System.load(file.getAbsolutePath());
      return null;
    } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
      LOG.info("UCX introspection helper not loaded: {}", e.toString());
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

  /** The version of the UCX library actually loaded, or a reason. */
  public static String loadedUcxVersion() {
    return isAvailable() ? ucxVersion() : "unknown (" + LOAD_ERROR + ")";
  }

  /** ucp_ep_print_info text; progress thread of the endpoint's worker. */
  static String endpointInfo(Long endpointHandle) {
    if (!isAvailable()) {
      return null;
    }
    return endpointHandle == null ? null : endpointInfo(endpointHandle.longValue());
  }

  /** ucp_worker_print_info text; progress thread of that worker. */
  static String workerInfo(Long workerHandle) {
    if (!isAvailable() || workerHandle == null) {
      return "unavailable: " + LOAD_ERROR;
    }
    return workerInfo(workerHandle.longValue());
  }

  private static native String ucxVersion();

  private static native String endpointInfo(long ucpEp);

  private static native String workerInfo(long ucpWorker);
}
