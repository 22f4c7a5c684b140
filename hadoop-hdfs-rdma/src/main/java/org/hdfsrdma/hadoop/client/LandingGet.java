package org.hdfsrdma.hadoop.client;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.RemoteRegion;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;

/**
 * The gets of one UCX read (DESIGN.md section 9): a buffer the DataNode
 * describes in a region this JVM cannot read directly is got into a
 * landing buffer the read leases from the JVM's landing pool at its first
 * get and holds until it ends; the reader's own thread drives the worker
 * until the get completes or its time is up. One reader thread; per get
 * no allocation.
 */
final class LandingGet implements Closeable {

  private final UcxEndpoint endpoint;
  private final UcxWorker worker;
  private final RegisteredBufferPool landing;
  private final long timeoutMs;
  private final StatusSlots status = new StatusSlots(1);
  private final UcxWorker.Readiness done = () -> !status.inProgress(0);
  private long token = RegisteredBufferPool.NO_LEASE;
  private ByteBuffer view;
  private UcxWorker.Driver driver;

  /**
   * @param endpoint this side's endpoint to the DataNode
   * @param landing where gets land (buffers of at least the answer's
   *     packet bytes)
   */
  LandingGet(UcxEndpoint endpoint, RegisteredBufferPool landing,
      long timeoutMs) {
    this.endpoint = endpoint;
    this.worker = endpoint.worker();
    this.landing = landing;
    this.timeoutMs = timeoutMs;
    // A get still under way when the read is dropped completes later.
    worker.keepWhileInFlight(this, null, status);
  }

  /**
   * Gets [address, +length) of the DataNode's region {@code r} into the
   * landing buffer ({@link #view()}); why it failed, or null.
   */
  String get(RemoteRegion r, long address, int length) {
    try {
      return tryGet(r, address, length);
    } catch (RuntimeException e) { // UCX refusing, its worker closing
      return e.toString();
    }
  }

  private String tryGet(RemoteRegion r, long address, int length) {
    if (token == RegisteredBufferPool.NO_LEASE) {
      token = landing.tryAcquire();
      if (token == RegisteredBufferPool.NO_LEASE) {
        return "no landing buffer free";
      }
      view = landing.buffer(token);
      if (driver == null) {
        driver = worker.registerDriver();
      }
    }
    int rc;
    try {
      rc = r.startGet(endpoint, address, landing.address(token), length,
          status.address(0));
    } catch (IOException e) {
      return e.getMessage();
    }
    if (rc != 0) { // in progress: the slot receives the status
      if (!worker.drive(driver, done,
          TimeUnit.MILLISECONDS.toNanos(timeoutMs))) {
        // The buffer stays leased: a late completion may still land in it.
        token = RegisteredBufferPool.NO_LEASE;
        return "a get did not complete in " + timeoutMs + " ms";
      }
      rc = status.status(0);
    }
    return rc == 0 ? null : "a get failed: " + StatusSlots.describe(rc);
  }

  /**
   * What is wrong with the {@code length} bytes the last get landed
   * ({@link PacketVerifier#verify}), or null when nothing is.
   */
  String damage(PacketVerifier verifier, int length) {
    ReadFaultInjector.get().landed(view, length);
    return verifier.verify(view, 0, length);
  }

  /** The landing buffer; the last get's bytes are at its start. */
  ByteBuffer view() {
    return view;
  }

  /** Gives the landing buffer back and stops driving. Idempotent. */
  @Override
  public void close() {
    if (token != RegisteredBufferPool.NO_LEASE) {
      landing.release(token);
      token = RegisteredBufferPool.NO_LEASE;
    }
    if (driver != null) {
      worker.unregisterDriver(driver);
      driver = null;
    }
  }
}
