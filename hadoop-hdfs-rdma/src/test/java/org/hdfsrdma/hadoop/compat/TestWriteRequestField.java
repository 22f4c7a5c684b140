package org.hdfsrdma.hadoop.compat;

import static org.hdfsrdma.hadoop.compat.WriteBlockOps.afterReadOp;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.bytesField;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.frame;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.readWriteBlock;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.stockOp;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.stripped;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.withField;
import static org.hdfsrdma.hadoop.protocol.WireSamples.NONCE;
import static org.hdfsrdma.hadoop.protocol.WireSamples.assertIOException;
import static org.hdfsrdma.hadoop.protocol.WireSamples.previousReleaseRequest;
import static org.hdfsrdma.hadoop.protocol.WireSamples.request;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.Collections;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.WriteRequestProto;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.junit.Test;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;

/**
 * {@link WriteRequestField} against Hadoop's real {@code OpWriteBlockProto}:
 * the request survives the trip, a stock peer parses what it parsed
 * before, and a request of another shape (malformed, a newer peer's, the
 * previous release's) is refused or ignored as documented.
 *
 * <p>In detail: the documented layout and the round trip; Hadoop's fields and
 * foreign unknown fields kept; refused with an IOException: the field of
 * another wire type, a payload that does not parse, every truncation, each
 * missing value (named), values out of range; ignored: a newer peer's fields of
 * every wire type, and the previous release's field 5151, so that mixed
 * releases stay on TCP.
 */
public class TestWriteRequestField {

  /** Where the release before the protobuf payload put its request. */
  private static final int OLD_FIELD = 5151;

  /** The payload of {@code request()}, by protobuf's own encoder. */
  private static WriteRequestProto.Builder payload() {
    return WriteRequestProto.newBuilder()
        .setNonce(ByteString.copyFrom(NONCE)).setPacketSize(65536)
        .setFeeders(1);
  }

  private static WriteRequest read(WriteRequestProto.Builder p)
      throws IOException {
    return read(p.build().toByteArray());
  }

  private static WriteRequest read(byte[] payload) throws IOException {
    return WriteRequestField.requestOf(withField(stockOp(),
        WriteRequestField.NUMBER, bytesField(payload)));
  }

  @Test(timeout = 10000)
  public void testRoundTripAndLayout() throws IOException {
    OpWriteBlockProto op = WriteRequestField.withRequest(stockOp(),
        request());
    assertEquals(request(), WriteRequestField.requestOf(op));
    // the documented layout: one length-delimited WriteRequestProto
    UnknownFieldSet.Field f =
        op.getUnknownFields().getField(WriteRequestField.NUMBER);
    assertEquals(1, f.getLengthDelimitedList().size());
    UnknownFieldSet p =
        UnknownFieldSet.parseFrom(f.getLengthDelimitedList().get(0));
    assertEquals(3, p.asMap().size());
    assertEquals(ByteString.copyFrom(NONCE),
        p.getField(1).getLengthDelimitedList().get(0));
    assertEquals(Collections.singletonList(65536L),
        p.getField(2).getVarintList());
    assertEquals(Collections.singletonList(1L),
        p.getField(3).getVarintList());
    assertEquals(payload().build().toByteString(),
        f.getLengthDelimitedList().get(0));
    // every value each field holds at its ends, every feeders value
    for (int feeders = 0; feeders <= WriteRequest.MAX_FEEDERS; feeders++) {
      for (int size : new int[] {1, Integer.MAX_VALUE}) {
        WriteRequest r = new WriteRequest(NONCE, size, feeders);
        assertEquals(r, WriteRequestField.requestOf(
            WriteRequestField.withRequest(stockOp(), r)));
      }
    }
    WriteRequest c = WriteRequest.create(1 << 20, 0);
    assertEquals(c, WriteRequestField.requestOf(
        WriteRequestField.withRequest(stockOp(), c)));
  }

  @Test(timeout = 10000)
  public void testStockParseOfWriteBlockWithRequest() throws IOException {
    OpWriteBlockProto stock = stockOp();
    assertNull(WriteRequestField.requestOf(stock));

    OpWriteBlockProto with = WriteRequestField.withRequest(stock, request());
    OpWriteBlockProto parsed = OpWriteBlockProto.parseFrom(with.toByteArray());
    // every stock field as it was
    assertEquals(stock, stripped(parsed));
    assertEquals(stock.getHeader(), parsed.getHeader());
    assertEquals(stock.getTargetsList(), parsed.getTargetsList());
    assertEquals(stock.getTargetPinningsList(),
        parsed.getTargetPinningsList());
    assertEquals(1001L, parsed.getLatestGenerationStamp());
    assertEquals(3, parsed.getPipelineSize());
    // and our field recoverable
    assertTrue(parsed.getUnknownFields()
        .hasField(WriteRequestField.NUMBER));
    assertEquals(request(), WriteRequestField.requestOf(parsed));

    // a second request replaces the first
    WriteRequest other = new WriteRequest(new byte[16], 1, 2);
    OpWriteBlockProto again = WriteRequestField.withRequest(parsed, other);
    assertEquals(1, again.getUnknownFields()
        .getField(WriteRequestField.NUMBER)
        .getLengthDelimitedList().size());
    assertEquals(other, WriteRequestField.requestOf(again));
  }

  @Test(timeout = 10000)
  public void testOtherUnknownFieldsKept() throws IOException {
    UnknownFieldSet.Field seven =
        UnknownFieldSet.Field.newBuilder().addVarint(7).build();
    OpWriteBlockProto with = WriteRequestField.withRequest(
        withField(stockOp(), 4242, seven), request());
    assertEquals(seven, with.getUnknownFields().getField(4242));
    assertEquals(request(), WriteRequestField.requestOf(with));
  }

  /** The field twice: the last occurrence counts, as for any field. */
  @Test(timeout = 10000)
  public void testLastRequestCounts() throws IOException {
    WriteRequest other = new WriteRequest(new byte[16], 7, 0);
    OpWriteBlockProto op = OpWriteBlockProto.parseFrom(
        WriteRequestField.withRequest(stockOp(), request()).toByteString()
            .concat(WriteRequestField.asUnknownFields(other)
                .toByteString()));
    assertEquals(2, op.getUnknownFields().getField(WriteRequestField.NUMBER)
        .getLengthDelimitedList().size());
    assertEquals(other, WriteRequestField.requestOf(op));
  }

  @Test(timeout = 10000)
  public void testMalformedRequestField() {
    OpWriteBlockProto varint = withField(stockOpUnchecked(),
        WriteRequestField.NUMBER,
        UnknownFieldSet.Field.newBuilder().addVarint(1).build());
    assertIOException("hdfs-rdma write request field 5153 is not"
        + " length-delimited", () -> WriteRequestField.requestOf(varint));
    assertIOException("hdfs-rdma write request does not parse",
        () -> read(new byte[] {(byte) 0xff, (byte) 0xff}));
  }

  /**
   * A payload lacking a value the request needs, or holding one out of
   * range, is refused with an IOException naming it.
   */
  @Test(timeout = 10000)
  public void testMalformedRequest() throws IOException {
    assertIOException("without nonce", () -> read(new byte[0]));
    assertIOException("without nonce", () -> read(payload().clearNonce()));
    assertIOException("without packet_size",
        () -> read(payload().clearPacketSize()));
    assertIOException("without feeders",
        () -> read(payload().clearFeeders()));
    for (int n : new int[] {0, 15, 17}) {
      assertIOException("hdfs-rdma write request with a nonce of " + n
          + " bytes, not 16", () -> read(payload().setNonce(
              ByteString.copyFrom(new byte[n]))));
    }
    // uint32 on the wire: 2^31 and above are negative ints
    for (int size : new int[] {0, -1, Integer.MIN_VALUE}) {
      assertIOException("invalid packet size " + size,
          () -> read(payload().setPacketSize(size)));
    }
    assertIOException("feeders 16 out of range [0, 15]",
        () -> read(payload().setFeeders(16)));
    assertIOException("feeders -1 out of range",
        () -> read(payload().setFeeders(-1)));
    // every truncation of a valid payload
    byte[] good = payload().build().toByteArray();
    for (int n = 0; n < good.length; n++) {
      byte[] cut = Arrays.copyOf(good, n);
      assertIOException("hdfs-rdma write request ", () -> read(cut));
    }
  }

  /**
   * A newer peer's request with fields this release does not know, of
   * every wire type, before and after the ones it knows: ignored, not
   * refused.
   */
  @Test(timeout = 10000)
  public void testNewerPeersFieldsAreIgnored() throws IOException {
    UnknownFieldSet newer = UnknownFieldSet.newBuilder()
        .addField(4, UnknownFieldSet.Field.newBuilder().addVarint(1L << 40)
            .build())
        .addField(5, bytesField(new byte[300]))
        .addField(6, UnknownFieldSet.Field.newBuilder().addFixed32(9)
            .addFixed64(-1L).build())
        .addField(536_870_911, bytesField(new byte[] {1}))
        .build();
    assertEquals(request(), read(payload().setUnknownFields(newer)));
    assertEquals(request(), read(newer.toByteString()
        .concat(payload().build().toByteString()).toByteArray()));
  }

  /**
   * An op as the release before the protobuf payloads sent it: its request
   * (24 bytes of version 2, and version 1 of the listener-based release)
   * in field 5151. This release reads no request from it, neither as a
   * field of the op nor in the peek a DataNode makes, and Hadoop's own
   * parse is untouched: the pipeline stays on TCP.
   */
  @Test(timeout = 10000)
  public void testPreviousReleasesFieldIsIgnored() throws IOException {
    for (int version : new int[] {1, 2}) {
      byte[] old = previousReleaseRequest(version, NONCE, 65536, 1);
      OpWriteBlockProto op = withField(stockOp(), OLD_FIELD,
          bytesField(old));
      assertNull(WriteRequestField.requestOf(op));
      DataInputStream in = afterReadOp(frame(op), 512);
      assertNull(OpPeek.peekWriteRequest(in));
      assertEquals(op, readWriteBlock(in));
      // beside a request of this release, the old field changes nothing
      OpWriteBlockProto both = WriteRequestField.withRequest(op, request());
      assertArrayEquals(old, both.getUnknownFields()
          .getField(OLD_FIELD).getLengthDelimitedList().get(0)
          .toByteArray());
      assertEquals(request(), WriteRequestField.requestOf(both));
    }
  }

  private static OpWriteBlockProto stockOpUnchecked() {
    try {
      return stockOp();
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }
}
