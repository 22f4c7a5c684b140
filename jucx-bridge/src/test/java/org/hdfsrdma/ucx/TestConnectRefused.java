package org.hdfsrdma.ucx;

import static org.hdfsrdma.ucx.UcxTestUtils.TIMEOUT_MS;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.Before;
import org.junit.Test;

/**
 * Connecting to an address where nothing listens (a DataNode whose UCX
 * port is closed or firewalled) fails the connect with an IOException
 * naming the peer, and the worker keeps serving.
 */
public class TestConnectRefused {

  @Before
  public void checkUcx() {
    UcxTestUtils.assumeUcx();
  }

  private static int closedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private void refusedThenServed(String tls) throws Exception {
    try (UcxContext context = new UcxContext(UcxTestUtils.options(tls));
         UcxWorker worker = new UcxWorker(context, "refused")) {
      worker.start();
      for (int attempt = 0; attempt < 5; attempt++) {
        InetSocketAddress nobody = new InetSocketAddress("127.0.0.1",
            closedPort());
        try {
          UcxConnection.connect(worker, nobody, 10_000)
              .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
          fail("connected to " + nobody + " where nothing listens");
        } catch (ExecutionException expected) {
          assertTrue(String.valueOf(expected.getCause()),
              expected.getCause() instanceof IOException);
          assertTrue(expected.getCause().getMessage(), expected.getCause()
              .getMessage().contains(String.valueOf(nobody.getPort())));
        }
      }
      UcxListener listener = UcxListener.open(worker,
          UcxTestUtils.loopbackPort0(), c -> { })
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      UcxConnection.connect(worker, listener.address())
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).close();
      listener.close();
    }
  }

  @Test(timeout = 120_000)
  public void testRefusedOverTcp() throws Exception {
    refusedThenServed(UcxTestUtils.TLS_TCP);
  }

  @Test(timeout = 120_000)
  public void testRefusedWithSharedMemory() throws Exception {
    refusedThenServed(UcxTestUtils.TLS_SHM);
  }

  @Test(timeout = 120_000)
  public void testPlainTcpProbesOfAListenerAreHarmless() throws Exception {
    try (UcxContext context = new UcxContext(UcxContext.Options.defaults());
         UcxWorker worker = new UcxWorker(context, "probed")) {
      worker.start();
      UcxListener listener = UcxListener.open(worker,
          UcxTestUtils.loopbackPort0(), c -> { })
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      for (int i = 0; i < 20; i++) {
        try (java.net.Socket probe = new java.net.Socket()) {
          probe.connect(listener.address(), 5000);
        }
      }
      Thread.sleep(500);
      UcxConnection.connect(worker, listener.address())
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).close();
      listener.close();
    }
  }
}
