package org.hdfsrdma.hadoop.compat;

import static org.hdfsrdma.hadoop.compat.WriteBlockOps.afterReadOp;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.bytesField;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.frame;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.readOp;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.readWriteBlock;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.stockOp;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.withField;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.writeBlockBytes;
import static org.hdfsrdma.hadoop.protocol.WireSamples.NONCE;
import static org.hdfsrdma.hadoop.protocol.WireSamples.request;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;

import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.WriteRequestProto;
import org.hdfsrdma.hadoop.protocol.WireLimits;
import org.junit.Test;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;

/**
 * {@link OpPeek} on streams as DataXceiver holds them: the
 * request found, and the stream left exactly where Hadoop's Receiver
 * expects it, whatever the op holds.
 *
 * <p>For every buffer size (1 to 8,192 bytes, DataXceiver's 512 among them). A
 * malformed request, a truncated op, the field of another wire type, an op
 * beyond {@code WireLimits.PEEK_LIMIT} and a stream without mark support give
 * no request, the op left for Hadoop as it came.
 */
public class TestWriteBlockOpPeek {

  @Test(timeout = 10000)
  public void testPeekLeavesStreamUntouched() throws IOException {
    byte[] ours = writeBlockBytes(request());
    byte[] trailer = {9, 8, 7};
    byte[] bytes = Arrays.copyOf(ours, ours.length + trailer.length);
    System.arraycopy(trailer, 0, bytes, ours.length, trailer.length);
    // 512 is DataXceiver's smallBufferSize: the op spans several fills
    for (int bufferSize : new int[] {1, 16, 512, 8192}) {
      DataInputStream never = afterReadOp(bytes, bufferSize);
      OpWriteBlockProto expected = readWriteBlock(never);

      DataInputStream peeked = afterReadOp(bytes, bufferSize);
      assertEquals(request(), OpPeek.peekWriteRequest(peeked));
      OpWriteBlockProto actual = readWriteBlock(peeked);
      assertEquals(expected, actual);
      assertArrayEquals(expected.toByteArray(), actual.toByteArray());
      byte[] rest = new byte[3];
      peeked.readFully(rest);
      assertArrayEquals(trailer, rest);
      assertEquals(-1, peeked.read());
    }
  }

  @Test(timeout = 10000)
  public void testPeekWithoutRequest() throws IOException {
    byte[] plain = writeBlockBytes(null);
    DataInputStream in = afterReadOp(plain, 512);
    assertNull(OpPeek.peekWriteRequest(in));
    assertEquals(stockOp(), readWriteBlock(in));
    assertEquals(-1, in.read());
  }

  @Test(timeout = 10000)
  public void testPeekWithoutMarkSupport() throws IOException {
    byte[] ours = writeBlockBytes(request());
    final ByteArrayInputStream raw = new ByteArrayInputStream(ours);
    InputStream noMark = new InputStream() {
      @Override
      public int read() {
        return raw.read();
      }

      @Override
      public int read(byte[] b, int off, int len) {
        return raw.read(b, off, len);
      }
    };
    DataInputStream in = new DataInputStream(noMark);
    assertFalse(in.markSupported());
    assertEquals(Op.WRITE_BLOCK, readOp(in));
    int before = raw.available();
    assertNull(OpPeek.peekWriteRequest(in));
    assertEquals(before, raw.available());
    assertEquals(request(), WriteRequestField.requestOf(readWriteBlock(in)));
  }

  @Test(timeout = 10000)
  public void testPeekOfBadOpsResets() throws IOException {
    // truncated op: null, and Hadoop's parse sees the same truncation
    byte[] ours = writeBlockBytes(request());
    byte[] cut = Arrays.copyOf(ours, ours.length - 10);
    DataInputStream in = afterReadOp(cut, 512);
    assertNull(OpPeek.peekWriteRequest(in));
    assertEquals(cut.length - 3, in.available());

    // a malformed request: ignored (the pipeline stays on TCP), the op
    // left for Hadoop exactly as it came
    WriteRequestProto good = WriteRequestProto.newBuilder()
        .setNonce(ByteString.copyFrom(NONCE)).setPacketSize(65536)
        .setFeeders(0).build();
    byte[] junk = {(byte) 0xff, (byte) 0xff, (byte) 0xff};
    for (byte[] payload : new byte[][] {
        good.toBuilder().setFeeders(16).build().toByteArray(),
        good.toBuilder().setPacketSize(0).build().toByteArray(),
        good.toBuilder().clearNonce().build().toByteArray(),
        Arrays.copyOf(good.toByteArray(), good.getSerializedSize() - 1),
        junk, new byte[0]}) {
      OpWriteBlockProto badField = withField(stockOp(),
          WriteRequestField.NUMBER, bytesField(payload));
      in = afterReadOp(frame(badField), 512);
      assertNull(OpPeek.peekWriteRequest(in));
      assertEquals(badField, readWriteBlock(in));
      assertEquals(-1, in.read());
    }
    // the request field as a varint: ignored as well
    OpWriteBlockProto varint = withField(stockOp(), WriteRequestField.NUMBER,
        UnknownFieldSet.Field.newBuilder().addVarint(2).build());
    in = afterReadOp(frame(varint), 512);
    assertNull(OpPeek.peekWriteRequest(in));
    assertEquals(varint, readWriteBlock(in));

    // an op over the peek limit: nothing read past the varint, reset
    OpWriteBlockProto huge = stockOp().toBuilder()
        .setHeader(stockOp().getHeader().toBuilder()
            .setClientName(new String(new char[WireLimits.PEEK_LIMIT])
                .replace('\0', 'x')))
        .build();
    huge = WriteRequestField.withRequest(huge, request());
    in = afterReadOp(frame(huge), 512);
    assertNull(OpPeek.peekWriteRequest(in));
    assertEquals(huge, readWriteBlock(in));

    // end of stream right away
    in = afterReadOp(Arrays.copyOf(ours, 3), 512);
    assertNull(OpPeek.peekWriteRequest(in));
  }
}
