package org.hdfsrdma.hadoop;

import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.hadoop.compat.CommitListField;
import org.hdfsrdma.hadoop.compat.OpRewriter;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.SessionIds;
import org.hdfsrdma.hadoop.protocol.WriteRequest;

/**
 * A writer that speaks Hadoop's data-transfer protocol by hand: one
 * writeBlock op for a made-up block (block tokens are off in these tests,
 * so any client may), offering UCX with any payload the test chooses, and
 * the DataNode's reply. Its socket stays open until {@link #close()}, and
 * with it the DataNode's session for the block: the session id is what
 * this writer, like any authenticated writer, can compute.
 */
final class RogueWriter implements Closeable {

  private static final Token<BlockTokenIdentifier> NO_TOKEN =
      new Token<BlockTokenIdentifier>();

  final Socket socket;
  final DataOutputStream out;
  final DataInputStream in;
  final ExtendedBlock block;
  final BlockOpResponseProto reply;
  final List<CommitEntry> commits;

  /**
   * Sends the op to {@code dataNode}, offering {@code request} (null: no
   * offer) and naming {@code mirrors} downstream, and reads the reply.
   */
  RogueWriter(InetSocketAddress dataNode, String blockPoolId, long blockId,
      long generationStamp, WriteRequest request, DatanodeInfo... mirrors)
      throws IOException {
    socket = new Socket();
    socket.connect(dataNode, 10_000);
    socket.setSoTimeout(60_000);
    out = new DataOutputStream(new BufferedOutputStream(
        socket.getOutputStream()));
    in = new DataInputStream(socket.getInputStream());
    block = new ExtendedBlock(blockPoolId, blockId, 0, generationStamp);
    // Hadoop's Sender names the pipeline from its first node, which is the
    // DataNode addressed: the op lists only the nodes after it.
    DatanodeInfo[] pipeline = new DatanodeInfo[mirrors.length + 1];
    pipeline[0] = fakeDataNode(dataNode.getPort());
    System.arraycopy(mirrors, 0, pipeline, 1, mirrors.length);
    StorageType[] storage = new StorageType[pipeline.length];
    Arrays.fill(storage, StorageType.DEFAULT);
    ReleaseApi.writeBlock(new Sender(OpRewriter.withRequest(out,
        request)), block, StorageType.DEFAULT, NO_TOKEN, "rogue-writer",
        pipeline, storage, null, pipeline.length, generationStamp, null);
    out.flush();
    reply = BlockOpResponseProto.parseFrom(PBHelperClient.vintPrefixed(in));
    commits = CommitListField.commitsOf(reply);
  }

  /** Sends raw bytes as the op (anything: the offer is in there). */
  static void sendRawOp(InetSocketAddress dataNode, byte[] op)
      throws IOException {
    try (Socket s = new Socket()) {
      s.connect(dataNode, 10_000);
      s.setSoTimeout(10_000);
      s.getOutputStream().write(op);
      s.getOutputStream().flush();
      // The reply, or the DataNode closing: either ends the op.
      try {
        BlockOpResponseProto.parseFrom(PBHelperClient.vintPrefixed(
            new DataInputStream(s.getInputStream())));
      } catch (IOException eofOrTimeout) {
        // The DataNode refused the op: what stock does too.
      }
    }
  }

  /** The session id the DataNode opened for this block, as the writer knows. */
  long sessionId(WriteRequest request, String dataNodeXferAddr) {
    return SessionIds.of(null, request.getNonce(),
        block.getBlockPoolId(), dataNodeXferAddr, block.getBlockId(),
        block.getGenerationStamp());
  }

  /** A DatanodeInfo naming a (fake) DataNode at a port on loopback. */
  static DatanodeInfo fakeDataNode(int port) {
    return org.apache.hadoop.hdfs.DFSTestUtil.getDatanodeInfo("127.0.0.1",
        "localhost", port);
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
