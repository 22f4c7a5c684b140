package org.hdfsrdma.hadoop.compat;

import static org.hdfsrdma.hadoop.compat.WriteBlockOps.BLOCK;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.frame;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.readOp;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.readWriteBlock;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.sendWriteBlock;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.stockOp;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.stripped;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.token;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.writeBlockBytes;
import static org.hdfsrdma.hadoop.protocol.WireSamples.request;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;

import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.datatransfer.Receiver;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.junit.Test;

import com.google.protobuf.CodedInputStream;

/**
 * {@link OpRewriter} against Hadoop's real Sender and Receiver:
 * the op Sender writes carries the request, Hadoop's own fields keep
 * their exact bytes, and everything else passes untouched.
 *
 * <p>Other ops, and incomplete ops, pass through unchanged.
 */
public class TestWriteBlockOpRewriter {

  private static byte[] readBlockBytes(WriteRequest r) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    new Sender(OpRewriter.withRequest(out, r)).readBlock(BLOCK, token(),
        "DFSClient_test", 0L, 4096L, true,
        CachingStrategy.newDefaultStrategy());
    return bytes.toByteArray();
  }

  @Test(timeout = 10000)
  public void testOpOutWithoutRequestIsIdentity() {
    DataOutputStream out = new DataOutputStream(new ByteArrayOutputStream());
    assertSame(out, OpRewriter.withRequest(out, null));
  }

  @Test(timeout = 10000)
  public void testOpOutCarriesRequest() throws IOException {
    byte[] plain = writeBlockBytes(null);
    byte[] ours = writeBlockBytes(request());
    assertTrue(ours.length > plain.length);

    DataInputStream in =
        new DataInputStream(new ByteArrayInputStream(ours));
    assertEquals(Op.WRITE_BLOCK, readOp(in));
    OpWriteBlockProto op = readWriteBlock(in);
    assertEquals(-1, in.read());
    assertEquals(request(), WriteRequestField.requestOf(op));
    assertEquals(stockOp(), stripped(op));
  }

  /**
   * The rewritten op, byte for byte: Sender's header, the new length, then
   * Sender's proto bytes verbatim (every field of Hadoop's as Sender wrote
   * it) and the request's field, nothing else.
   */
  @Test(timeout = 10000)
  public void testHadoopsFieldsKeepTheirBytes() throws IOException {
    byte[] plain = writeBlockBytes(null);
    byte[] ours = writeBlockBytes(request());
    DataInputStream p = new DataInputStream(new ByteArrayInputStream(plain));
    readOp(p);
    byte[] stockProto = readWriteBlock(p).toByteArray();
    assertArrayEquals("Sender's proto", stockProto, Arrays.copyOfRange(
        plain, plain.length - stockProto.length, plain.length));
    byte[] field = WriteRequestField.asUnknownFields(request()).toByteArray();
    // tag of field 5153, wire type 2: varint (5153 << 3 | 2)
    assertArrayEquals(new byte[] {(byte) 0x8a, (byte) 0xc2, 0x02},
        Arrays.copyOf(field, 3));

    int varint = ours.length - 3 - stockProto.length - field.length;
    assertArrayEquals(Arrays.copyOf(plain, 3), Arrays.copyOf(ours, 3));
    assertEquals(stockProto.length + field.length,
        CodedInputStream.newInstance(ours, 3, varint).readRawVarint32());
    assertArrayEquals(stockProto, Arrays.copyOfRange(ours, 3 + varint,
        3 + varint + stockProto.length));
    assertArrayEquals(field, Arrays.copyOfRange(ours,
        ours.length - field.length, ours.length));
    // what withRequest serialises is what the rewriter sends
    assertArrayEquals(frame(WriteRequestField.withRequest(stockOp(),
        request())), ours);
  }

  @Test(timeout = 10000)
  public void testStockReceiverReadsRewrittenOp() throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    DataOutputStream opOut = OpRewriter.withRequest(out, request());
    sendWriteBlock(opOut);
    // what follows the op passes through
    opOut.write(new byte[] {1, 2, 3});
    opOut.writeInt(0x01020304);
    opOut.flush();
    // a second op on the same stream is not rewritten
    sendWriteBlock(opOut);
    opOut.close();

    byte[] plain = writeBlockBytes(null);
    byte[] all = bytes.toByteArray();
    byte[] tail = Arrays.copyOfRange(all, all.length - plain.length,
        all.length);
    assertArrayEquals(plain, tail);

    CapturingReceiver r = new CapturingReceiver(new DataInputStream(
        new ByteArrayInputStream(all)));
    r.receiveOne();
    assertEquals(BLOCK, r.call().block);
    assertEquals(StorageType.DISK, r.call().storageType);
    assertEquals("DFSClient_test", r.call().clientName);
    assertEquals(2, r.call().targets.length); // Sender drops the first target
    assertEquals("10.0.0.2:9866", r.call().targets[0].getXferAddr());
    assertEquals(BlockConstructionStage.PIPELINE_SETUP_CREATE, r.call().stage);
    assertEquals(1001L, r.call().latestGenerationStamp);
    assertEquals(token(), r.call().token);
    byte[] after = new byte[7];
    r.in().readFully(after);
    assertArrayEquals(new byte[] {1, 2, 3, 1, 2, 3, 4}, after);
    r.receiveOne();
    assertEquals(BLOCK, r.call().block);
    assertEquals(-1, r.in().read());
  }

  @Test(timeout = 10000)
  public void testOpOutPassesOtherOps() throws IOException {
    assertArrayEquals(readBlockBytes(null), readBlockBytes(request()));
    DataInputStream in = new DataInputStream(
        new ByteArrayInputStream(readBlockBytes(request())));
    assertEquals(Op.READ_BLOCK, readOp(in));
    OpReadBlockProto op =
        OpReadBlockProto.parseFrom(PBHelperClient.vintPrefixed(in));
    assertEquals(0, op.getUnknownFields().asMap().size());
  }

  @Test(timeout = 10000)
  public void testOpOutPassesIncompleteOps() throws IOException {
    byte[] plain = writeBlockBytes(null);
    for (int cut : new int[] {1, 3, 4, plain.length - 1}) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      DataOutputStream o =
          OpRewriter.withRequest(new DataOutputStream(bytes), request());
      o.flush(); // nothing buffered: does not end the op
      o.write(plain, 0, cut);
      o.flush();
      o.write(plain, cut, plain.length - cut);
      o.flush();
      assertArrayEquals("cut at " + cut, plain, bytes.toByteArray());
    }
  }
}
