package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketReceiver;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.compat.OpPeek;
import org.hdfsrdma.hadoop.compat.OpRewriter;
import org.hdfsrdma.hadoop.compat.ReadAnswerField;
import org.hdfsrdma.hadoop.compat.ReadOfferField;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.ReadOfferProto;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.datanode.DataNodeServer;
import org.hdfsrdma.hadoop.datanode.UcxDataNode;
import org.hdfsrdma.hadoop.protocol.ReadAnswer;
import org.hdfsrdma.hadoop.protocol.ReadOffer;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.ReadCredit;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;

/**
 * Readers that break the read protocol, against a real DataNode serving
 * UCX reads (DESIGN.md section 9) with block tokens on. Forged credits:
 * after Hadoop's own {@code readBlock} op with an offer and the DataNode's
 * answer, each sends credits no honest reader sends (another read's id, a
 * buffer never described, a final credit too early, a cancel, a fallback
 * from the future, random bytes) or goes away. Hostile offers: offers in
 * every shape but a valid one, and valid offers for reads the DataNode
 * refuses. Every such read ends, is counted as no UCX read, and leaves
 * no buffer held; the DataNode keeps serving, and an honest reader then
 * reads the file byte for byte over UCX.
 */
public class TestHostileReaders {

  private static final Logger LOG =
      LoggerFactory.getLogger(TestHostileReaders.class);

  private static final int BLOCK_SIZE = 1024 * 1024;
  private static final Path FILE = new Path("/f");
  /** Hostile offers sent to the DataNode, each in its own readBlock op. */
  private static final int OFFERS = 10_000;
  /** The bytes each of those ops asks for. */
  private static final int OFFER_READ_BYTES = 4096;

  private static MiniDFSCluster cluster;
  private static FileSystem fs;
  private static byte[] data;

  @BeforeClass
  public static void start() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    assumeTrue("this release's block reader has no UCX read hook",
        TestUcxReads.readHooked());
    Configuration conf = TestUcxWritePath.ucxConf();
    conf.setBoolean(DFSConfigKeys.DFS_BLOCK_ACCESS_TOKEN_ENABLE_KEY, true);
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
    cluster.waitActive();
    fs = cluster.getFileSystem();
    data = new byte[BLOCK_SIZE];
    new Random(5).nextBytes(data);
    try (FSDataOutputStream out = fs.create(FILE, (short) 1)) {
      out.write(data);
    }
  }

  @AfterClass
  public static void stop() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
  }

  /** What a hostile reader sends after the answer. */
  private interface Credits {
    void send(DataOutputStream out, long readId) throws IOException;
  }

  private static Credits credit(long readIdDelta, int flags, long seqno) {
    return (out, readId) -> {
      byte[] b = new byte[ReadCredit.LENGTH];
      new ReadCredit().wrap(ByteBuffer.wrap(b), 0).encode(
          readId + readIdDelta, flags, seqno);
      out.write(b);
      out.flush();
    };
  }

  /**
   * Sends Hadoop's readBlock op with an offer, reads the answer, then
   * lets {@code hostile} speak and reads what the DataNode sends until it
   * closes the connection.
   */
  private static void hostileRead(Credits hostile) throws Exception {
    DataNode dn = cluster.getDataNodes().get(0);
    ExtendedBlock block = DFSTestUtil.getFirstBlock(fs, FILE);
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", dn.getXferPort()));
      s.setSoTimeout(60_000);
      DataOutputStream out = new DataOutputStream(new BufferedOutputStream(
          s.getOutputStream()));
      byte[] key = new byte[ReadOffer.CLIENT_KEY_LENGTH];
      new Random().nextBytes(key);
      new Sender(OpRewriter.withOffer(out, new ReadOffer(key,
          ReadOffer.MAX_PACKET_BYTES, 4))).readBlock(block, token(),
          "hostile", 0, BLOCK_SIZE, true,
          CachingStrategy.newDefaultStrategy());
      DataInputStream in = new DataInputStream(s.getInputStream());
      BlockOpResponseProto reply = BlockOpResponseProto.parseFrom(
          PBHelperClient.vintPrefixed(in));
      ReadAnswer answer = ReadAnswerField.answerOf(reply);
      assertNotNull("the DataNode answered the offer", answer);
      if (hostile != null) {
        hostile.send(out, answer.getReadId());
      }
      s.shutdownOutput();
      drain(in);
    }
  }

  private static void drain(InputStream in) {
    byte[] sink = new byte[65536];
    try {
      while (in.read(sink) >= 0) {
        // the descriptors the DataNode sent before it ended the read
      }
    } catch (IOException e) {
      // the DataNode reset the connection: the read is over
    }
  }

  @Test(timeout = 300_000)
  public void testForgedCreditsEndOnlyTheirRead() throws Exception {
    UcxDataNode dn = UcxDataNode.of(cluster.getDataNodes().get(0));
    long readsBefore = dn.metrics().readsOverUcx();
    Credits[] hostile = {
        null, // goes away without a credit
        credit(1, 0, 0), // another read's id
        credit(0, 0, 1_000_000), // a buffer never described
        credit(0, ReadCredit.FLAG_FINAL, 0), // final before the last
        credit(0, ReadCredit.FLAG_CANCEL, -1), // a cancel
        credit(0, ReadCredit.FLAG_FALLBACK, 1_000), // a fallback from beyond
        (out, id) -> { // random bytes
          byte[] b = new byte[ReadCredit.LENGTH * 3];
          new Random(id).nextBytes(b);
          out.write(b);
          out.flush();
        },
        (out, id) -> { // half a credit
          out.write(new byte[ReadCredit.LENGTH / 2]);
          out.flush();
        },
    };
    Random r = new Random(11);
    for (int i = 0; i < 80; i++) {
      hostileRead(hostile[i % hostile.length]);
      if (i % 8 == 7) {
        // And a random forged credit of each flag.
        hostileRead(credit(r.nextInt(3) - 1, new int[] {0,
            ReadCredit.FLAG_FINAL, ReadCredit.FLAG_FALLBACK}[r.nextInt(3)],
            r.nextInt(5) + 2));
      }
    }
    assertHonestReaderStillServed(dn, readsBefore);
  }

  /**
   * readBlock ops whose offer is anything but a valid one
   * ({@link NegotiationFuzz#hostileReadOffer}), end to end: the DataNode
   * answers none of them with UCX and serves each read stock, byte for
   * byte, as it serves an op without an offer (or, when the offer's bytes
   * break Hadoop's own parse of the op, fails the op as stock does). And
   * valid offers in ops the DataNode refuses (a forged block token, a
   * block it does not hold, a range past the replica, a newer generation
   * stamp): refused as stock, with no answer and no buffer.
   */
  @Test(timeout = 600_000)
  public void testHostileReadOffers() throws Exception {
    UcxDataNode dn = UcxDataNode.of(cluster.getDataNodes().get(0));
    long readsBefore = dn.metrics().readsOverUcx();
    ExtendedBlock block = DFSTestUtil.getFirstBlock(fs, FILE);
    Token<BlockTokenIdentifier> token = token();
    Random r = new Random(5156);
    int answered = 0;
    int servedStock = 0;
    int failedAsStock = 0;
    for (int i = 0; i < OFFERS; i++) {
      int offset = r.nextInt(BLOCK_SIZE - OFFER_READ_BYTES);
      byte[] op = NegotiationFuzz.readBlockOp(block, token, offset,
          OFFER_READ_BYTES, NegotiationFuzz.hostileReadOffer(r));
      try (Socket s = connect()) {
        s.getOutputStream().write(op);
        DataInputStream in = new DataInputStream(s.getInputStream());
        BlockOpResponseProto reply = replyOrNull(in);
        if (!hadoopParses(op)) {
          assertTrue("a reply to an op Hadoop cannot parse: " + reply,
              reply == null || reply.getStatus() != Status.SUCCESS);
          failedAsStock++;
          continue;
        }
        assertNotNull("no reply to a readable op", reply);
        assertEquals(Status.SUCCESS, reply.getStatus());
        if (ReadAnswerField.answerOf(reply) != null) {
          // Flipped bits that left the offer valid (any client key is):
          // answered as any reader is, and this one goes away.
          assertNotNull("the DataNode answered an offer it should refuse",
              peekedOffer(op));
          answered++;
          continue;
        }
        readStockRange(in, offset, OFFER_READ_BYTES);
        servedStock++;
      }
    }
    LOG.info("hostile read offers: {} served stock, {} failed as stock"
        + " (Hadoop cannot parse the op), {} valid after all", servedStock,
        failedAsStock, answered);
    assertEquals(OFFERS, servedStock + failedAsStock + answered);
    assertTrue("hardly any offer was malformed", answered < OFFERS / 10);

    // Valid offers for reads the DataNode refuses as it would any reader.
    Token<BlockTokenIdentifier> forged = new Token<BlockTokenIdentifier>(
        token.getIdentifier(), new byte[token.getPassword().length],
        token.getKind(), token.getService());
    ExtendedBlock absent = new ExtendedBlock(block.getBlockPoolId(),
        block.getBlockId() + 1_000, block.getNumBytes(),
        block.getGenerationStamp());
    ExtendedBlock newer = new ExtendedBlock(block.getBlockPoolId(),
        block.getBlockId(), block.getNumBytes(),
        block.getGenerationStamp() + 1);
    Object[][] refused = {
        {block, forged, 0L, (long) BLOCK_SIZE, "a forged block token"},
        {block, new Token<BlockTokenIdentifier>(), 0L, (long) BLOCK_SIZE,
            "no block token"},
        {absent, token, 0L, (long) BLOCK_SIZE, "a block not held"},
        {block, token, BLOCK_SIZE - 100L, 1000L, "a range past the replica"},
        {newer, token, 0L, (long) BLOCK_SIZE, "a newer generation stamp"},
    };
    for (Object[] c : refused) {
      byte[] op = NegotiationFuzz.readBlockOp((ExtendedBlock) c[0],
          asToken(c[1]), (Long) c[2], (Long) c[3], validOffer());
      try (Socket s = connect()) {
        s.getOutputStream().write(op);
        BlockOpResponseProto reply = replyOrNull(
            new DataInputStream(s.getInputStream()));
        assertTrue(c[4] + ": served " + reply,
            reply == null || reply.getStatus() != Status.SUCCESS);
        assertTrue(c[4] + ": answered with UCX", reply == null
            || ReadAnswerField.answerOf(reply) == null);
      }
    }
    assertHonestReaderStillServed(dn, readsBefore);
  }

  @SuppressWarnings("unchecked")
  private static Token<BlockTokenIdentifier> asToken(Object o) {
    return (Token<BlockTokenIdentifier>) o;
  }

  /** The protobuf bytes of one valid offer in field 5156. */
  private static byte[] validOffer() {
    byte[] key = new byte[ReadOffer.CLIENT_KEY_LENGTH];
    new Random().nextBytes(key);
    ReadOfferProto p = ReadOfferProto.newBuilder()
        .setClientKey(ByteString.copyFrom(key))
        .setPacketBytes(ReadOffer.MAX_PACKET_BYTES).setWindow(4).build();
    return UnknownFieldSet.newBuilder().addField(ReadOfferField.NUMBER,
        UnknownFieldSet.Field.newBuilder().addLengthDelimited(
            p.toByteString()).build()).build().toByteArray();
  }

  /** The block token the NameNode hands readers of the file. */
  private static Token<BlockTokenIdentifier> token() throws IOException {
    return DFSTestUtil.getAllBlocks(fs, FILE).get(0).getBlockToken();
  }

  private static Socket connect() throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress("127.0.0.1",
        cluster.getDataNodes().get(0).getXferPort()));
    s.setSoTimeout(60_000);
    return s;
  }

  /** The DataNode's reply, or null when it closed without one. */
  private static BlockOpResponseProto replyOrNull(DataInputStream in) {
    try {
      return BlockOpResponseProto.parseFrom(PBHelperClient.vintPrefixed(in));
    } catch (IOException e) {
      return null;
    }
  }

  /** Whether Hadoop's own parse of the op's proto succeeds. */
  private static boolean hadoopParses(byte[] op) throws IOException {
    try {
      OpReadBlockProto.parseFrom(proto(op));
      return true;
    } catch (InvalidProtocolBufferException e) {
      return false;
    }
  }

  /** The offer the DataNode's own peek reads in the op, or null. */
  private static ReadOffer peekedOffer(byte[] op) throws IOException {
    return OpPeek.peekReadOffer(new DataInputStream(new BufferedInputStream(
        new ByteArrayInputStream(op, 3, op.length - 3))));
  }

  /** The op's proto: after version and op code, varint-delimited. */
  private static byte[] proto(byte[] op) throws IOException {
    CodedInputStream c = CodedInputStream.newInstance(op, 3, op.length - 3);
    return c.readRawBytes(c.readRawVarint32());
  }

  /**
   * Reads the stock packets of a read of [offset, +length) after its
   * reply and checks each byte against the file.
   */
  private static void readStockRange(DataInputStream in, int offset,
      int length) throws IOException {
    int end = offset + length;
    int covered = offset;
    try (PacketReceiver packets = new PacketReceiver(false)) {
      while (true) {
        packets.receiveNextPacket(in);
        PacketHeader h = packets.getHeader();
        ByteBuffer d = packets.getDataSlice();
        int at = (int) h.getOffsetInBlock();
        byte[] got = new byte[d.remaining()];
        d.get(got);
        assertArrayEquals("stock bytes at " + at, Arrays.copyOfRange(data,
            at, at + got.length), got);
        if (got.length > 0) {
          assertTrue("a gap before " + at, at <= covered);
          covered = Math.max(covered, at + got.length);
        }
        if (h.isLastPacketInBlock()) {
          break;
        }
      }
    }
    assertTrue("served up to " + covered + " of " + end, covered >= end);
  }

  /**
   * No hostile read held a buffer or counted as a UCX read, and the
   * DataNode still serves an honest reader over UCX.
   */
  private static void assertHonestReaderStillServed(UcxDataNode dn,
      long readsBefore) throws Exception {
    DataNodeServer server = DataNodeServer.of(UcxRuntime.current());
    GenericTestUtils.waitFor(() -> server.readers().held() == 0, 50,
        30_000);
    assertEquals("hostile reads counted as UCX reads", readsBefore,
        dn.metrics().readsOverUcx());
    Configuration readConf = new Configuration(cluster.getConfiguration(0));
    readConf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        true);
    try (FileSystem reader = FileSystem.newInstance(fs.getUri(), readConf)) {
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(reader, FILE));
    }
    GenericTestUtils.waitFor(() -> dn.metrics().readsOverUcx()
        == readsBefore + 1, 50, 30_000);
  }
}
