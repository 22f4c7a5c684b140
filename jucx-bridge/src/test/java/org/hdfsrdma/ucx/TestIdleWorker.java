package org.hdfsrdma.ucx;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;

import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An idle bridge sleeps: progress threads and drivers wait in the worker's
 * event wait instead of polling, so a JVM that holds one costs (almost) no
 * CPU on a 2-core host. A polling thread would burn about 2,000 ms of CPU
 * in each 2 s measured here, and the sleeps are counted (at most one per
 * {@link UcxWorker#MAX_SLEEP_MS} and per event). The CPU limit, 250 ms,
 * is an eighth of that: a quiet host measures 5 to 25 ms, and the same
 * wake-ups were measured at 58 ms once, early in a fresh-clone CI run on
 * an otherwise idle host, which failed the earlier limit of 50 ms.
 */
public class TestIdleWorker {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestIdleWorker.class);
  private static final long IDLE_MS = 2_000;
  private static final long CPU_LIMIT_MS = 250;
  private static final long WAIT_MS = 30_000;

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  @Test(timeout = 60_000)
  public void testAnIdleWorkerSleeps() throws Exception {
    try (UcxContext context = new UcxContext(UcxTestUtils.options(
            UcxTestUtils.TLS_SHM));
         UcxWorker worker = new UcxWorker(context, "idle").start()) {
      UcxTestUtils.waitFor(() -> worker.sleeps() > 0, WAIT_MS,
          "the progress thread to sleep");
      long cpu = UcxTestUtils.cpuNanos(worker.progressThread());
      long sleeps = worker.sleeps();
      idle();
      long used = UcxTestUtils.cpuNanos(worker.progressThread()) - cpu;
      long slept = worker.sleeps() - sleeps;
      LOG.info("idle worker, 2 s: progress thread {} us CPU, {} sleeps",
          used / 1000, slept);
      assertCpu("progress thread", used);
      assertTrue(slept + " sleeps", slept <= IDLE_MS / UcxWorker.MAX_SLEEP_MS
          + 5);
    }
  }

  @Test(timeout = 60_000)
  public void testAnIdleConnectedPairSleepsOverSharedMemory()
      throws Exception {
    idlePair(UcxTestUtils.TLS_SHM);
  }

  @Test(timeout = 60_000)
  public void testAnIdleConnectedPairSleepsOverTcp() throws Exception {
    idlePair(UcxTestUtils.TLS_TCP);
  }

  /**
   * A client and a DataNode worker connected both ways (endpoint, hello,
   * endpoint back), as between two packets of a quiet stream.
   */
  private void idlePair(String tls) throws Exception {
    try (TestGetter dataNode = new TestGetter(tls);
         TestExposer client = new TestExposer(tls, dataNode.worker.address(),
             4096, 1)) {
      UcxTestUtils.waitFor(() -> dataNode.back != null, WAIT_MS,
          "the endpoint back");
      // A round trip both ways: the wire-up is complete.
      long t = client.pool.acquire(1000);
      client.announce(7L, 1, t);
      client.describe(7L, 1, t, 4096, 0);
      UcxTestUtils.waitFor(() -> !dataNode.descriptors.isEmpty(), WAIT_MS,
          "the descriptor");
      Thread[] threads = {dataNode.worker.progressThread(),
          client.worker.progressThread()};
      long[] cpu = new long[2];
      for (int i = 0; i < 2; i++) {
        cpu[i] = UcxTestUtils.cpuNanos(threads[i]);
      }
      idle();
      long dataNodeUsed = UcxTestUtils.cpuNanos(threads[0]) - cpu[0];
      long clientUsed = UcxTestUtils.cpuNanos(threads[1]) - cpu[1];
      LOG.info("{}: idle connected pair, 2 s: DataNode progress thread {} us"
          + " CPU, client {} us", tls, dataNodeUsed / 1000,
          clientUsed / 1000);
      assertCpu("DataNode progress thread", dataNodeUsed);
      assertCpu("client progress thread", clientUsed);
      client.pool.release(t);
    }
  }

  /**
   * A driver waiting 2 s for a message that does not come sleeps in the
   * event wait; the progress thread, sweeping every 10 ms while a driver
   * exists, stays cheap too. The wait ends at its timeout, not before.
   */
  @Test(timeout = 60_000)
  public void testADriverWaitingForNothingSleeps() throws Exception {
    try (UcxContext context = new UcxContext(UcxTestUtils.options(
            UcxTestUtils.TLS_SHM));
         UcxWorker worker = new UcxWorker(context, "idle").start()) {
      UcxWorker.Driver d = worker.registerDriver();
      try {
        long progressCpu = UcxTestUtils.cpuNanos(worker.progressThread());
        long sleeps = worker.sleeps();
        long cpu = ManagementFactory.getThreadMXBean()
            .getCurrentThreadCpuTime();
        long start = System.nanoTime();
        assertFalse(worker.drive(d, () -> false,
            TimeUnit.MILLISECONDS.toNanos(IDLE_MS)));
        long waited = System.nanoTime() - start;
        long used = ManagementFactory.getThreadMXBean()
            .getCurrentThreadCpuTime() - cpu;
        long progressUsed = UcxTestUtils.cpuNanos(worker.progressThread())
            - progressCpu;
        long slept = worker.sleeps() - sleeps;
        LOG.info("a driver waiting 2 s for nothing: {} us CPU, {} sleeps;"
            + " progress thread {} us CPU", used / 1000, slept,
            progressUsed / 1000);
        assertTrue("waited " + waited / 1_000_000 + " ms",
            waited >= TimeUnit.MILLISECONDS.toNanos(IDLE_MS)
            && waited < TimeUnit.MILLISECONDS.toNanos(IDLE_MS + 1_000));
        assertCpu("driver", used);
        assertCpu("progress thread (sweeping)", progressUsed);
        assertTrue(slept + " sleeps", slept >= 1
            && slept <= IDLE_MS / UcxWorker.MAX_SLEEP_MS + 5);
      } finally {
        worker.unregisterDriver(d);
      }
    }
  }

  /** Lets 2 s pass (the point of the test: nothing to wait for). */
  private static void idle() throws InterruptedException {
    Thread.sleep(IDLE_MS);
  }

  private static void assertCpu(String who, long nanos) {
    assertTrue(who + " used " + nanos / 1_000_000 + " ms of CPU in "
        + IDLE_MS + " ms idle", nanos < TimeUnit.MILLISECONDS.toNanos(
            CPU_LIMIT_MS));
  }
}
