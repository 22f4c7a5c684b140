package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assume.assumeTrue;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.hadoop.compat.OpRewriter;
import org.hdfsrdma.hadoop.compat.ReadAnswerField;
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

/**
 * Readers that break the read protocol, against a real DataNode serving
 * UCX reads (DESIGN.md section 9): after Hadoop's own {@code readBlock} op
 * with an offer and the DataNode's answer, each sends credits no honest
 * reader sends (another read's id, a buffer never described, a final
 * credit too early, a cancel, a fallback from the future, random bytes) or
 * goes away. Every such read ends, is counted as no UCX read, and leaves
 * no buffer held; the DataNode keeps serving, and an honest reader then
 * reads the file byte for byte over UCX.
 */
public class TestHostileReaders {

  private static final int BLOCK_SIZE = 1024 * 1024;

  private static MiniDFSCluster cluster;
  private static FileSystem fs;
  private static byte[] data;

  @BeforeClass
  public static void start() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    assumeTrue("this release's block reader has no UCX read hook",
        TestUcxReads.readHooked());
    cluster = new MiniDFSCluster.Builder(TestUcxWritePath.ucxConf())
        .numDataNodes(1).build();
    cluster.waitActive();
    fs = cluster.getFileSystem();
    data = new byte[BLOCK_SIZE];
    new Random(5).nextBytes(data);
    try (FSDataOutputStream out = fs.create(new Path("/f"), (short) 1)) {
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
    ExtendedBlock block = DFSTestUtil.getFirstBlock(fs, new Path("/f"));
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", dn.getXferPort()));
      s.setSoTimeout(60_000);
      DataOutputStream out = new DataOutputStream(new BufferedOutputStream(
          s.getOutputStream()));
      byte[] key = new byte[ReadOffer.CLIENT_KEY_LENGTH];
      new Random().nextBytes(key);
      new Sender(OpRewriter.withOffer(out, new ReadOffer(key,
          ReadOffer.MAX_PACKET_BYTES, 4))).readBlock(block,
          new Token<BlockTokenIdentifier>(), "hostile", 0, BLOCK_SIZE, true,
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
    DataNodeServer server = DataNodeServer.of(UcxRuntime.current());
    GenericTestUtils.waitFor(() -> server.readers().held() == 0, 50,
        30_000);
    assertEquals("hostile reads counted as UCX reads", readsBefore,
        dn.metrics().readsOverUcx());

    // The DataNode still serves an honest reader over UCX.
    Configuration readConf = new Configuration(cluster.getConfiguration(0));
    readConf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_READ_ENABLED_KEY,
        true);
    try (FileSystem reader = FileSystem.newInstance(fs.getUri(), readConf)) {
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(reader,
          new Path("/f")));
    }
    GenericTestUtils.waitFor(() -> dn.metrics().readsOverUcx()
        == readsBefore + 1, 50, 30_000);
  }
}
