package org.hdfsrdma.ucx;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import org.openucx.jucx.ucp.UcpAmRecvCallback;
import org.openucx.jucx.ucp.UcpConstants;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpWorker;

/**
 * What the transfer benchmarks need of the bridge that it does not
 * publish: the JUCX worker and endpoint under a {@link UcxWorker} and a
 * {@link UcxConnection}, so a benchmark can send active messages of any
 * size on the bridge's own worker and progress thread (the bridge only
 * sends descriptors). Benchmarks only: everything here must be called on,
 * or handed to, the worker's progress thread, as the bridge itself does.
 */
public final class BenchmarkAccess {

  private BenchmarkAccess() {
  }

  /** The JUCX worker; use it on the progress thread only. */
  public static UcpWorker ucp(UcxWorker worker) {
    return worker.ucp();
  }

  /** The JUCX endpoint of a connection; progress thread only. */
  public static UcpEndpoint endpoint(UcxConnection connection) {
    return connection.ucp();
  }

  /**
   * Installs an active-message handler for {@code id} on the worker (whole
   * messages only), on its progress thread, and waits until it is in place.
   * The handler runs on the progress thread and must not throw.
   */
  public static void setActiveMessageHandler(UcxWorker worker, int id,
      UcpAmRecvCallback handler) throws IOException {
    await(worker, () -> worker.ucp().setAmRecvHandler(id, handler,
        UcpConstants.UCP_AM_FLAG_WHOLE_MSG));
  }

  /** Removes the handler of {@code id}; waits until it is gone. */
  public static void removeActiveMessageHandler(UcxWorker worker, int id)
      throws IOException {
    await(worker, () -> worker.ucp().removeAmRecvHandler(id));
  }

  private static void await(UcxWorker worker, Runnable onProgressThread)
      throws IOException {
    try {
      worker.call(() -> {
        onProgressThread.run();
        return null;
      }).get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IOException("on the progress thread of " + worker.name()
          + ": " + e, e);
    }
  }
}
