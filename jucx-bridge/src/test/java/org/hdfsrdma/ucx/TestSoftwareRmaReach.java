package org.hdfsrdma.ucx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assume.assumeTrue;

import java.nio.ByteBuffer;

import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.junit.Test;

/**
 * Pins the premise of DESIGN.md's threat model for UCX peers: a peer that
 * reaches a worker whose context has RMA (every hdfs-rdma context) reads
 * and writes any memory of that process, not only what it registered.
 * UCX emulates gets and puts over tcp with active messages whose handlers
 * take the address from the wire and check it against no registration
 * (its software RMA; the same handlers serve every transport that carries
 * active messages, RDMA ones included, for a peer that sends them). Here
 * an unmodified UCX peer, given the remote key of one registered 4 KiB
 * buffer, gets and puts at another buffer that was never registered. If a
 * UCX release bounds software RMA, this test fails: section 7 of DESIGN.md
 * is then to be revisited, not this test loosened.
 */
public class TestSoftwareRmaReach {

  private static final int SIZE = 4096;

  private static UcpContext context() {
    return new UcpContext(new UcpParams().requestAmFeature()
        .requestRmaFeature().setConfig("TLS", UcxTestUtils.TLS_TCP));
  }

  /** Progresses both workers until {@code r} completes or 30 s pass. */
  private static boolean await(UcpRequest r, UcpWorker a, UcpWorker b)
      throws Exception {
    long end = System.nanoTime() + UcxTestUtils.TIMEOUT_MS * 1_000_000L;
    while (!r.isCompleted() && System.nanoTime() < end) {
      a.progress();
      b.progress();
    }
    return r.isCompleted();
  }

  @Test(timeout = 60_000)
  public void testGetAndPutOutsideTheRegistrationOverTcp() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    ByteBuffer registered = ByteBuffer.allocateDirect(SIZE);
    ByteBuffer unregistered = ByteBuffer.allocateDirect(SIZE);
    ByteBuffer landing = ByteBuffer.allocateDirect(SIZE);
    ByteBuffer payload = ByteBuffer.allocateDirect(SIZE);
    for (int i = 0; i < SIZE; i++) {
      registered.put(i, (byte) 'R');
      unregistered.put(i, (byte) 'S');
      payload.put(i, (byte) 'X');
    }
    try (UcpContext ownerContext = context();
        UcpContext peerContext = context();
        UcpWorker owner = ownerContext.newWorker(new UcpWorkerParams());
        UcpWorker peer = peerContext.newWorker(new UcpWorkerParams());
        UcpMemory memory = ownerContext.memoryMap(new UcpMemMapParams()
            .setAddress(UcxUtils.getAddress(registered)).setLength(SIZE));
        UcpEndpoint endpoint = peer.newEndpoint(new UcpEndpointParams()
            .setUcpAddress(owner.getAddress()).setPeerErrorHandlingMode());
        UcpRemoteKey key = endpoint.unpackRemoteKey(
            memory.getRemoteKeyBuffer())) {
      long outside = UcxUtils.getAddress(unregistered);
      UcpRequest get = endpoint.getNonBlocking(outside, key,
          UcxUtils.getAddress(landing), SIZE, null);
      assertEquals("the get outside the registration completed", true,
          await(get, owner, peer));
      assertEquals("it read the unregistered buffer", 'S',
          (char) landing.get(SIZE - 1));

      UcpRequest put = endpoint.putNonBlocking(UcxUtils.getAddress(payload),
          SIZE, outside, key, null);
      assertEquals("the put outside the registration completed", true,
          await(put, owner, peer));
      UcpRequest flush = endpoint.flushNonBlocking(null);
      assertEquals(true, await(flush, owner, peer));
      assertEquals("it wrote the unregistered buffer", 'X',
          (char) unregistered.get(SIZE - 1));
    }
  }
}
