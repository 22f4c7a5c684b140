package org.hdfsrdma.hadoop.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.metrics.ClientReads;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.ReadAnswer;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.ReadCredit;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * A client's read that UCX cannot take at all, over a real socket against
 * a DataNode played by the test: an answer that does not fit the offer
 * (here, one naming another DataNode than the one connected to) makes the
 * channel ask for stock packets at once ({@code FALLBACK(0)}), skip the
 * descriptors already on their way, and hand the reader the stock packets
 * byte for byte: the read is never lost to UCX. A DataNode whose reads
 * fall back twice is then read over TCP for a while.
 */
public class TestReadChannel {

  private static UcxRuntime runtime;

  @BeforeClass
  public static void start() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    runtime = UcxRuntime.get(new Configuration());
  }

  @AfterClass
  public static void stop() {
    UcxRuntime.shutdown();
  }

  @Test(timeout = 60_000)
  public void testAnswerThatDoesNotFitFallsBackToStockPackets()
      throws Exception {
    ClientReads counters = runtime.metrics().reads();
    long fellBack = counters.readsFellBack();
    fallBackOnce("127.0.0.1:9866");
    assertEquals(fellBack + 1, counters.readsFellBack());
  }

  /**
   * A DataNode whose UCX reads fell back twice within
   * dfs.client.rdma.unreachable-retry-ms gets no offer for that long: its
   * reads are stock from the start, counted as withheld; other DataNodes
   * are still offered UCX.
   */
  @Test(timeout = 60_000)
  public void testTwoFallbacksBackTheDataNodeOff() throws Exception {
    Configuration conf = readConf();
    String dataNode = "127.0.0.2:9866";
    ClientReads counters = runtime.metrics().reads();
    long withheld = counters.readsWithheld();
    fallBackOnce(dataNode);
    assertNotNull("one fallback may be a passing one",
        BlockReads.offer(conf, false, Long.MAX_VALUE, dataNode));
    fallBackOnce(dataNode);
    assertNull("backed off after the second",
        BlockReads.offer(conf, false, Long.MAX_VALUE, dataNode));
    assertEquals(withheld + 1, counters.readsWithheld());
    assertNotNull("another DataNode is still offered UCX",
        BlockReads.offer(conf, false, Long.MAX_VALUE, "127.0.0.3:9866"));
    assertEquals("10.0.0.9:9866", BlockReads.transferAddress(
        "dn9.example.com/10.0.0.9:9866"));
    assertEquals("10.0.0.9:9866", BlockReads.transferAddress(
        "/10.0.0.9:9866"));
  }

  private static Configuration readConf() {
    Configuration conf = new Configuration();
    conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        true);
    return conf;
  }

  /**
   * One read of {@code xferAddr} whose answer names another DataNode: the
   * channel asks for stock packets at once and returns them byte for byte.
   */
  private static void fallBackOnce(String xferAddr) throws Exception {
    BlockReads reads = BlockReads.offer(readConf(), false, Long.MAX_VALUE,
        null);
    assertNotNull(reads);
    long readId = 0x1234_5678_9abcL;
    CommitEntry other = new CommitEntry("10.0.0.9:9866",
        runtime.workerAddress(), 0, new byte[CommitEntry.HOST_ID_LENGTH]);
    ReadAnswer answer = new ReadAnswer(other, readId, 1 << 20, 4);
    byte[] stock = stockPacket(70_000);
    try (ServerSocketChannel server = ServerSocketChannel.open()) {
      server.bind(new InetSocketAddress("127.0.0.1", 0));
      CompletableFuture<String> dataNode = CompletableFuture.supplyAsync(
          () -> playDataNode(server, readId, stock));
      try (Socket s = new Socket("127.0.0.1",
          server.socket().getLocalPort())) {
        ReadableByteChannel channel = reads.channel(answer,
            Channels.newChannel(s.getInputStream()), s.getOutputStream(),
            xferAddr, PacketVerifier.TYPE_CRC32C, 512, 4, 42L, "blk_42");
        ByteBuffer got = ByteBuffer.allocate(stock.length);
        while (got.hasRemaining()) {
          assertTrue(channel.read(got) > 0);
        }
        assertArrayEquals("the stock packet, byte for byte", stock,
            got.array());
        channel.close();
      }
      assertEquals("", dataNode.get(30, TimeUnit.SECONDS));
    }
  }

  /**
   * A DataNode that had described a buffer before the client's fallback
   * arrived: it then sends the packet stock. Returns what went wrong, or
   * "".
   */
  private static String playDataNode(ServerSocketChannel server,
      long readId, byte[] stock) {
    try (SocketChannel c = server.accept()) {
      Socket s = c.socket();
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      ByteBuffer d = ByteBuffer.allocate(PacketDescriptor.LENGTH)
          .order(ByteOrder.BIG_ENDIAN);
      new PacketDescriptor().wrap(d, 0).encode(readId, 42L, 1L, 0, 0, 0, 1,
          0x10000, 0, 4096);
      out.write(d.array());
      out.flush();
      byte[] creditBytes = new byte[ReadCredit.LENGTH];
      new DataInputStream(s.getInputStream()).readFully(creditBytes);
      ReadCredit credit = new ReadCredit().wrap(ByteBuffer.wrap(creditBytes),
          0).validate(ReadCredit.LENGTH);
      if (!credit.isFallback() || credit.seqno() != 0
          || credit.readId() != readId) {
        return "expected FALLBACK(0), got " + credit;
      }
      out.write(stock);
      out.flush();
      return "";
    } catch (IOException e) {
      return e.toString();
    }
  }

  /** A stock packet's bytes: length, header length, header, data. */
  private static byte[] stockPacket(int dataLength) {
    int headerLength = 25;
    ByteBuffer b = ByteBuffer.allocate(6 + headerLength + dataLength);
    b.putInt(4 + dataLength).putShort((short) headerLength);
    byte[] rest = new byte[headerLength + dataLength];
    new Random(dataLength).nextBytes(rest);
    b.put(rest);
    return b.array();
  }
}
