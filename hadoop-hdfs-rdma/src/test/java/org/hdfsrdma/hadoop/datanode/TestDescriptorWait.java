package org.hdfsrdma.hadoop.datanode;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.hdfs.server.datanode.UcxPacketReceiver;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.junit.Test;

/**
 * A block receiver waiting for its next descriptor, watching the block's
 * socket ({@link UpstreamSocket}) as a DataNode's receiver does, over real
 * UCX with a same-JVM client: the socket's end of stream fails the wait at
 * once (within 5 s, not the 30 s get timeout) with an EOFException naming
 * the block; packet bytes on the socket after a packet over UCX fail the
 * block; with no packet the wait times out after the get timeout (700 ms:
 * at least 650 ms, under 10 s), with and without a socket to watch.
 * Packet bytes before any UCX packet: {@code TestUcxPacketReceiver}.
 */
public class TestDescriptorWait extends ReceivePathTestBase {

  @Test(timeout = 60_000)
  public void testClosedSocketFailsTheWaitAtOnce() throws Exception {
    start();
    UcxBlockSession s = open(16);
    long token = client.fill(AT, CHECKSUMS + DATA, 5);
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver r = receiver(s, socket);
      try {
        announce(token);
        describe(client, token, 0, 0);
        r.receiveNextPacket(socket.in);
        assertPacket(r, 0, 5);
        socket.upstream.close();
        long start = System.nanoTime();
        try {
          r.receiveNextPacket(socket.in);
          fail("waited on a closed socket");
        } catch (EOFException expected) {
          assertTrue(expected.getMessage(),
              expected.getMessage().contains("closed its connection"));
          assertTrue(expected.getMessage(),
              expected.getMessage().contains(s.description()));
        }
        assertTrue("not the 30 s get timeout",
            System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5));
      } finally {
        r.close();
      }
    } finally {
      client.pool.release(token);
    }
    assertEquals(0, DataNodeServer.of(runtime).sessions().size());
  }

  @Test(timeout = 60_000)
  public void testSocketBytesAfterUcxPacketsFailTheBlock() throws Exception {
    start();
    UcxBlockSession s = open(16);
    long token = client.fill(AT, CHECKSUMS + DATA, 6);
    try (SocketPair socket = new SocketPair()) {
      UcxPacketReceiver r = receiver(s, socket);
      try {
        announce(token);
        describe(client, token, 0, 0);
        r.receiveNextPacket(socket.in);
        assertPacket(r, 0, 6);
        socket.upstream.write(ByteBuffer.wrap(socketPacket(1, (byte) 1,
            false)));
        try {
          r.receiveNextPacket(socket.in);
          fail("switched to the socket in the middle of a UCX block");
        } catch (IOException expected) {
          assertTrue(expected.getMessage(), expected.getMessage().contains(
              "packet bytes on the socket"));
        }
        assertFalse(r.isOverSocket());
      } finally {
        r.close();
      }
    } finally {
      client.pool.release(token);
    }
  }

  @Test(timeout = 60_000)
  public void testNoPacketTimesOut() throws Exception {
    conf.setLong(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY,
        700);
    start();
    // Without and with a socket to watch (both silent).
    for (boolean watched : new boolean[] {false, true}) {
      UcxBlockSession s = open(16);
      try (SocketPair socket = new SocketPair()) {
        UcxPacketReceiver r = receiver(s, watched ? socket : null);
        try {
          long start = System.nanoTime();
          try {
            r.receiveNextPacket(socket.in);
            fail("a packet out of nowhere");
          } catch (UcxPathException expected) {
            assertTrue(expected.getMessage(), expected.getMessage().contains(
                "no packet for " + s.description()));
            assertTrue(expected.getMessage(),
                expected.getMessage().contains("in 700 ms"));
          }
          long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
          assertTrue("timed out after " + ms + " ms", ms >= 650 && ms < 10_000);
        } finally {
          r.close();
        }
      }
    }
  }
}
