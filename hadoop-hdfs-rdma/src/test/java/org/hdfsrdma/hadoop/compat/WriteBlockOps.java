package org.hdfsrdma.hadoop.compat;

import static org.junit.Assert.assertEquals;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.DataTransferProtocol;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.hadoop.ReleaseApi;
import org.hdfsrdma.hadoop.protocol.WriteRequest;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;

/**
 * {@code writeBlock} ops as Hadoop's own Sender writes them and its
 * Receiver reads them, for the tests of this package: what a stock peer
 * parses must stay exactly what it parsed before.
 */
final class WriteBlockOps {

  static final ExtendedBlock BLOCK =
      new ExtendedBlock("BP-1-10.0.0.1-1700000000000", 1073741825L, 4096L,
          1001L);

  /** Fixed once: DFSTestUtil gives every DatanodeInfo a random UUID. */
  private static final DatanodeInfo[] TARGETS = {
      DFSTestUtil.getDatanodeInfo("10.0.0.1", "dn1", 9866),
      DFSTestUtil.getDatanodeInfo("10.0.0.2", "dn2", 9866),
      DFSTestUtil.getDatanodeInfo("10.0.0.3", "dn3", 9866)};

  private static final DatanodeInfo SOURCE =
      DFSTestUtil.getDatanodeInfo("10.0.0.9", "src", 9866);

  private WriteBlockOps() {
  }

  static Token<BlockTokenIdentifier> token() {
    return new Token<>("identifier".getBytes(StandardCharsets.UTF_8),
        "password".getBytes(StandardCharsets.UTF_8),
        new Text("HDFS_BLOCK_TOKEN"), new Text("service"));
  }

  /** Sends a writeBlock op with Hadoop's Sender through {@code out}. */
  static void sendWriteBlock(DataOutputStream out) throws IOException {
    ReleaseApi.writeBlock(new Sender(out), BLOCK, StorageType.DISK, token(),
        "DFSClient_test", TARGETS.clone(),
        new StorageType[] {StorageType.DISK, StorageType.SSD,
            StorageType.ARCHIVE},
        SOURCE, 3, 1001L, new boolean[] {false, true, false});
  }

  /** A whole writeBlock op, through the rewriter with {@code r}. */
  static byte[] writeBlockBytes(WriteRequest r) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    sendWriteBlock(OpRewriter.withRequest(out, r));
    return bytes.toByteArray();
  }

  /** Reads the op header the way Receiver.readOp does. */
  static Op readOp(DataInputStream in) throws IOException {
    assertEquals(DataTransferProtocol.DATA_TRANSFER_VERSION, in.readShort());
    return Op.read(in);
  }

  /** Reads the op's proto the way Receiver.opWriteBlock does. */
  static OpWriteBlockProto readWriteBlock(DataInputStream in)
      throws IOException {
    return OpWriteBlockProto.parseFrom(PBHelperClient.vintPrefixed(in));
  }

  /** The op as stock Sender writes it, as stock Receiver parses it. */
  static OpWriteBlockProto stockOp() throws IOException {
    DataInputStream in = new DataInputStream(
        new ByteArrayInputStream(writeBlockBytes(null)));
    assertEquals(Op.WRITE_BLOCK, readOp(in));
    return readWriteBlock(in);
  }

  static OpWriteBlockProto stripped(OpWriteBlockProto op) {
    return op.toBuilder()
        .setUnknownFields(UnknownFieldSet.getDefaultInstance()).build();
  }

  /** A field of one length-delimited value. */
  static UnknownFieldSet.Field bytesField(byte[] payload) {
    return UnknownFieldSet.Field.newBuilder()
        .addLengthDelimited(ByteString.copyFrom(payload)).build();
  }

  /** {@code op} with {@code field} as its only unknown field, unchecked. */
  static OpWriteBlockProto withField(OpWriteBlockProto op, int number,
      UnknownFieldSet.Field field) {
    return op.toBuilder().setUnknownFields(UnknownFieldSet.newBuilder()
        .addField(number, field).build()).build();
  }

  /** {@code op} framed as Sender frames a writeBlock op. */
  static byte[] frame(OpWriteBlockProto op) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    out.writeShort(DataTransferProtocol.DATA_TRANSFER_VERSION);
    Op.WRITE_BLOCK.write(out);
    op.writeDelimitedTo(out);
    out.flush();
    return bytes.toByteArray();
  }

  /** A stream positioned as DataXceiver's is after readOp(). */
  static DataInputStream afterReadOp(byte[] bytes, int bufferSize)
      throws IOException {
    DataInputStream in = new DataInputStream(new BufferedInputStream(
        new ByteArrayInputStream(bytes), bufferSize));
    assertEquals(Op.WRITE_BLOCK, readOp(in));
    return in;
  }
}
