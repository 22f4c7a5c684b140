package org.hdfsrdma.ucx;

import static org.junit.Assert.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.TimeUnit;

import org.junit.Before;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An idle bridge sleeps: its progress threads wait for UCX events instead
 * of polling, so a JVM that holds one costs no CPU (2-core hosts).
 */
public class TestIdleWorker {

  private static final Logger LOG = LoggerFactory.getLogger(TestIdleWorker.class);

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  @Test(timeout = 60_000)
  public void testIdleConnectedWorkersUseNoCpu() throws Exception {
    for (String tls : new String[] {UcxTestUtils.TLS_TCP, UcxTestUtils.TLS_SHM}) {
      try (UcxContext context = new UcxContext(UcxTestUtils.options(tls));
           UcxWorker server = new UcxWorker(context, "idle-server");
           UcxWorker client = new UcxWorker(context, "idle-client")) {
        server.setDescriptorHandler(new UcxTestUtils.QueueingHandler());
        server.start();
        client.start();
        UcxListener listener = UcxListener.open(server,
            UcxTestUtils.loopbackPort0(), c -> { }).get(30, TimeUnit.SECONDS);
        UcxConnection connection = UcxConnection.connect(client,
            listener.address()).get(30, TimeUnit.SECONDS);
        // Let the wire-up finish, then measure a quiet second.
        UcxTestUtils.waitFor(() -> listener.acceptedCount() == 1, 10, 10_000);
        Thread.sleep(500);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long serverCpu = threads.getThreadCpuTime(server.progressThread().getId());
        long clientCpu = threads.getThreadCpuTime(client.progressThread().getId());
        long serverCalls = server.progressCalls();
        Thread.sleep(2000);
        long serverUsed = threads.getThreadCpuTime(server.progressThread().getId())
            - serverCpu;
        long clientUsed = threads.getThreadCpuTime(client.progressThread().getId())
            - clientCpu;
        LOG.info("{}: idle 2 s: server progress thread {} ms CPU ({} progress"
            + " calls), client {} ms CPU", tls, serverUsed / 1_000_000,
            server.progressCalls() - serverCalls, clientUsed / 1_000_000);
        // A polling thread would burn ~2000 ms here.
        assertTrue("server progress thread busy: " + serverUsed / 1_000_000
            + " ms", serverUsed < TimeUnit.MILLISECONDS.toNanos(100));
        assertTrue("client progress thread busy: " + clientUsed / 1_000_000
            + " ms", clientUsed < TimeUnit.MILLISECONDS.toNanos(100));
        connection.close();
      }
    }
  }
}
