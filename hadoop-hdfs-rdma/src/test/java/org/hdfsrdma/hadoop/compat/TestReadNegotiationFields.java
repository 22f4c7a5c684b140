package org.hdfsrdma.hadoop.compat;

import static org.hdfsrdma.hadoop.compat.WriteBlockOps.BLOCK;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.readOp;
import static org.hdfsrdma.hadoop.compat.WriteBlockOps.token;
import static org.hdfsrdma.hadoop.protocol.WireSamples.NONCE;
import static org.hdfsrdma.hadoop.protocol.WireSamples.assertIOException;
import static org.hdfsrdma.hadoop.protocol.WireSamples.commits;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Random;

import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.CommitEntryProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.ReadAnswerProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.ReadOfferProto;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.ReadAnswer;
import org.hdfsrdma.hadoop.protocol.ReadOffer;
import org.junit.Test;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;

/**
 * The read path's offer in Hadoop's real {@code readBlock} op and its
 * answer in the real reply: each survives the trip beside Hadoop's fields
 * and foreign unknown ones, a stock parse sees what it saw before, and
 * what a peer sends is refused with an IOException naming the problem
 * when it is of another wire type, repeated, cut short, lacks a value or
 * holds one out of range; a newer peer's subfields are ignored.
 */
public class TestReadNegotiationFields {

  private static final ReadOffer OFFER = new ReadOffer(NONCE, 65536, 8);
  private static final CommitEntry DN = commits().get(4);
  private static final ReadAnswer ANSWER =
      new ReadAnswer(DN, 0x1234_5678_9abc_def0L, 65536, 8);

  /** The op as stock Sender writes it and stock Receiver parses it. */
  private static OpReadBlockProto stockOp() throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    new Sender(new DataOutputStream(bytes)).readBlock(BLOCK, token(),
        "DFSClient_test", 512L, 1L << 20, true,
        CachingStrategy.newDefaultStrategy());
    DataInputStream in = new DataInputStream(
        new ByteArrayInputStream(bytes.toByteArray()));
    assertEquals(Op.READ_BLOCK, readOp(in));
    return OpReadBlockProto.parseFrom(PBHelperClient.vintPrefixed(in));
  }

  private static BlockOpResponseProto.Builder reply() {
    return BlockOpResponseProto.newBuilder().setStatus(Status.SUCCESS);
  }

  private static UnknownFieldSet fields(int number, ByteString... values) {
    UnknownFieldSet.Field.Builder f = UnknownFieldSet.Field.newBuilder();
    for (ByteString v : values) {
      f.addLengthDelimited(v);
    }
    return UnknownFieldSet.newBuilder().addField(number, f.build()).build();
  }

  private static ReadOffer offerOf(ByteString... values) throws IOException {
    return ReadOfferField.offerOf(stockOp().toBuilder().setUnknownFields(
        fields(ReadOfferField.NUMBER, values)).build());
  }

  private static ReadAnswer answerOf(ByteString... values)
      throws IOException {
    return ReadAnswerField.answerOf(reply().setUnknownFields(
        fields(ReadAnswerField.NUMBER, values)).build());
  }

  private static ReadOfferProto.Builder offer() {
    return ReadOfferProto.newBuilder().setClientKey(ByteString.copyFrom(
        NONCE)).setPacketBytes(65536).setWindow(8);
  }

  private static ReadAnswerProto.Builder answer() {
    return ReadAnswerProto.newBuilder()
        .setDataNode(CommitListField.toProto(DN)).setReadId(77)
        .setPacketBytes(65536).setWindow(8);
  }

  @Test(timeout = 10_000)
  public void testOfferRoundTripBesideHadoopsFields() throws IOException {
    OpReadBlockProto stock = stockOp();
    assertNull(ReadOfferField.offerOf(stock));
    UnknownFieldSet.Field seven =
        UnknownFieldSet.Field.newBuilder().addVarint(7).build();
    OpReadBlockProto foreign = stock.toBuilder().setUnknownFields(
        UnknownFieldSet.newBuilder().addField(4242, seven).build()).build();
    OpReadBlockProto sent = ReadOfferField.withOffer(ReadOfferField
        .withOffer(foreign, new ReadOffer(new byte[16], 4096, 2)), OFFER);
    OpReadBlockProto parsed = OpReadBlockProto.parseFrom(
        sent.toByteString());
    assertEquals("the second offer replaces the first", OFFER,
        ReadOfferField.offerOf(parsed));
    assertEquals(seven, parsed.getUnknownFields().getField(4242));
    assertEquals(stock, parsed.toBuilder().setUnknownFields(
        UnknownFieldSet.getDefaultInstance()).build());
    assertEquals(512L, parsed.getOffset());
    assertEquals(1L << 20, parsed.getLen());
    assertEquals(offer().build().toByteString(), parsed.getUnknownFields()
        .getField(ReadOfferField.NUMBER).getLengthDelimitedList().get(0));
  }

  @Test(timeout = 10_000)
  public void testAnswerRoundTripBesideACommitList() throws IOException {
    assertNull(ReadAnswerField.answerOf(reply().build()));
    BlockOpResponseProto sent = ReadAnswerField.withAnswer(ReadAnswerField
        .withAnswer(CommitListField.withCommits(reply(), commits()),
            new ReadAnswer(commits().get(0), 1, 512, 2)), ANSWER).build();
    BlockOpResponseProto parsed = BlockOpResponseProto.parseFrom(
        sent.toByteString());
    assertEquals("the second answer replaces the first", ANSWER,
        ReadAnswerField.answerOf(parsed));
    assertEquals(commits(), CommitListField.commitsOf(parsed));
    assertEquals(Status.SUCCESS, parsed.getStatus());
    // every value of a commit entry survives, the optional ones too
    for (CommitEntry e : commits()) {
      ReadAnswer a = new ReadAnswer(e, -1L, 1, 64);
      assertEquals(a, ReadAnswerField.answerOf(BlockOpResponseProto
          .parseFrom(ReadAnswerField.withAnswer(reply(), a).build()
              .toByteString())));
    }
  }

  @Test(timeout = 10_000)
  public void testMalformedOffersAreRefused() throws IOException {
    assertIOException("2 hdfs-rdma read offers, not 1", () -> offerOf(
        offer().build().toByteString(), offer().build().toByteString()));
    assertIOException("read offer without client_key",
        () -> offerOf(offer().clearClientKey().build().toByteString()));
    assertIOException("read offer without packet_bytes",
        () -> offerOf(offer().clearPacketBytes().build().toByteString()));
    assertIOException("read offer without window",
        () -> offerOf(offer().clearWindow().build().toByteString()));
    assertIOException("client key of 3 bytes", () -> offerOf(offer()
        .setClientKey(ByteString.copyFrom(new byte[3])).build()
        .toByteString()));
    assertIOException("packet bytes -1 out of range", () -> offerOf(offer()
        .setPacketBytes(-1).build().toByteString()));
    assertIOException("window 65 out of range", () -> offerOf(offer()
        .setWindow(65).build().toByteString()));
    assertIOException("read offer does not parse", () -> offerOf(
        ByteString.copyFrom(new byte[] {(byte) 0x0a, 100, 1})));
    ByteString whole = offer().build().toByteString();
    for (int n = 0; n < whole.size(); n++) {
      try {
        offerOf(whole.substring(0, n));
      } catch (IOException expected) {
        continue; // every cut is refused, none throws anything else
      }
      throw new AssertionError("an offer cut at " + n + " was taken");
    }
    OpReadBlockProto varint = stockOp().toBuilder().setUnknownFields(
        UnknownFieldSet.newBuilder().addField(ReadOfferField.NUMBER,
            UnknownFieldSet.Field.newBuilder().addVarint(1).build())
            .build()).build();
    assertIOException("field 5156 is not length-delimited",
        () -> ReadOfferField.offerOf(varint));
    // a newer peer's subfield is ignored
    ByteString newer = offer().build().toByteString().concat(
        UnknownFieldSet.newBuilder().addField(9, UnknownFieldSet.Field
            .newBuilder().addFixed64(5).build()).build().toByteString());
    assertEquals(OFFER, offerOf(newer));
  }

  @Test(timeout = 10_000)
  public void testMalformedAnswersAreRefused() throws IOException {
    assertEquals(new ReadAnswer(DN, 77, 65536, 8),
        answerOf(answer().build().toByteString()));
    assertIOException("2 hdfs-rdma read answers, not 1", () -> answerOf(
        answer().build().toByteString(), answer().build().toByteString()));
    assertIOException("read answer without data_node",
        () -> answerOf(answer().clearDataNode().build().toByteString()));
    assertIOException("read answer without read_id",
        () -> answerOf(answer().clearReadId().build().toByteString()));
    assertIOException("read answer without packet_bytes",
        () -> answerOf(answer().clearPacketBytes().build().toByteString()));
    assertIOException("read answer without window",
        () -> answerOf(answer().clearWindow().build().toByteString()));
    assertIOException("read id 0", () -> answerOf(answer().setReadId(0)
        .build().toByteString()));
    assertIOException("window 1 out of range", () -> answerOf(answer()
        .setWindow(1).build().toByteString()));
    assertIOException("commit entry without host_id", () -> answerOf(
        answer().setDataNode(CommitEntryProto.newBuilder(
            CommitListField.toProto(DN)).clearHostId()).build()
            .toByteString()));
    assertIOException("a worker address of 0 bytes", () -> answerOf(
        answer().setDataNode(CommitEntryProto.newBuilder(
            CommitListField.toProto(DN)).setWorkerAddress(ByteString.EMPTY))
            .build().toByteString()));
  }

  /** A readBlock op from Hadoop's Sender, through the rewriter. */
  private static byte[] readBlockBytes(ReadOffer offer) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    new Sender(OpRewriter.withOffer(new DataOutputStream(bytes), offer))
        .readBlock(BLOCK, token(), "DFSClient_test", 512L, 1L << 20, true,
            CachingStrategy.newDefaultStrategy());
    return bytes.toByteArray();
  }

  /**
   * The client's rewriter: Hadoop's readBlock op goes out with the offer
   * appended and Hadoop's fields byte for byte; without an offer the
   * stream is the caller's own; other ops pass unchanged.
   */
  @Test(timeout = 10_000)
  public void testRewriterCarriesTheOffer() throws IOException {
    DataOutputStream plainOut =
        new DataOutputStream(new ByteArrayOutputStream());
    assertTrue(plainOut == OpRewriter.withOffer(plainOut, null));
    DataInputStream in = new DataInputStream(
        new ByteArrayInputStream(readBlockBytes(OFFER)));
    assertEquals(Op.READ_BLOCK, readOp(in));
    OpReadBlockProto op = OpReadBlockProto.parseFrom(
        PBHelperClient.vintPrefixed(in));
    assertEquals(-1, in.read());
    assertEquals(OFFER, ReadOfferField.offerOf(op));
    OpReadBlockProto stock = stockOp();
    assertArrayEquals(stock.toByteArray(), op.toBuilder().setUnknownFields(
        UnknownFieldSet.getDefaultInstance()).build().toByteArray());
    // a writeBlock op through a read's rewriter goes out as it came
    ByteArrayOutputStream plain = new ByteArrayOutputStream();
    ByteArrayOutputStream through = new ByteArrayOutputStream();
    WriteBlockOps.sendWriteBlock(new DataOutputStream(plain));
    WriteBlockOps.sendWriteBlock(OpRewriter.withOffer(
        new DataOutputStream(through), OFFER));
    assertArrayEquals(plain.toByteArray(), through.toByteArray());
  }

  /** The op's delimited proto and a trailer, as DataXceiver's stream. */
  private static DataInputStream afterReadOp(OpReadBlockProto op,
      int bufferSize) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    op.writeDelimitedTo(bytes);
    bytes.write(new byte[] {9, 8, 7});
    return new DataInputStream(new BufferedInputStream(
        new ByteArrayInputStream(bytes.toByteArray()), bufferSize));
  }

  /** What Hadoop's Receiver then reads: the op, then the trailer. */
  private static void assertUntouched(OpReadBlockProto sent,
      DataInputStream in) throws IOException {
    OpReadBlockProto read = OpReadBlockProto.parseFrom(
        PBHelperClient.vintPrefixed(in));
    assertArrayEquals(sent.toByteArray(), read.toByteArray());
    byte[] rest = new byte[3];
    in.readFully(rest);
    assertArrayEquals(new byte[] {9, 8, 7}, rest);
    assertEquals(-1, in.read());
  }

  /**
   * The DataNode's peek at the offer, for every buffer size (DataXceiver's
   * 512 among them): found when there, null when absent or malformed, and
   * the stream left as Hadoop expects it either way.
   */
  @Test(timeout = 60_000)
  public void testPeekLeavesTheOpToHadoop() throws IOException {
    OpReadBlockProto with = ReadOfferField.withOffer(stockOp(), OFFER);
    OpReadBlockProto bad = stockOp().toBuilder().setUnknownFields(
        fields(ReadOfferField.NUMBER, offer().setWindow(1).build()
            .toByteString())).build();
    for (int bufferSize : new int[] {1, 16, 512, 8192}) {
      DataInputStream in = afterReadOp(with, bufferSize);
      assertEquals(OFFER, OpPeek.peekReadOffer(in));
      assertUntouched(with, in);
      in = afterReadOp(stockOp(), bufferSize);
      assertNull(OpPeek.peekReadOffer(in));
      assertUntouched(stockOp(), in);
      in = afterReadOp(bad, bufferSize);
      assertNull(OpPeek.peekReadOffer(in));
      assertUntouched(bad, in);
    }
    Random random = new Random(5157);
    for (int i = 0; i < 10_000; i++) {
      byte[] junk = new byte[random.nextInt(64)];
      random.nextBytes(junk);
      OpReadBlockProto hostile = stockOp().toBuilder().setUnknownFields(
          fields(ReadOfferField.NUMBER, ByteString.copyFrom(junk))).build();
      DataInputStream in = afterReadOp(hostile, 512);
      assertNull(OpPeek.peekReadOffer(in));
      assertUntouched(hostile, in);
    }
  }

  /**
   * Random payloads and random cuts of valid ones: each is taken or
   * refused with an IOException, never with anything else.
   */
  @Test(timeout = 60_000)
  public void testHostilePayloads() throws IOException {
    Random random = new Random(5156);
    ByteString[] valid = {offer().build().toByteString(),
        answer().build().toByteString()};
    int refused = 0;
    for (int i = 0; i < 10_000; i++) {
      ByteString payload;
      if (i % 2 == 0) {
        byte[] junk = new byte[random.nextInt(200)];
        random.nextBytes(junk);
        payload = ByteString.copyFrom(junk);
      } else {
        byte[] b = valid[random.nextInt(2)].toByteArray();
        b[random.nextInt(b.length)] = (byte) random.nextInt(256);
        payload = ByteString.copyFrom(b);
      }
      try {
        offerOf(payload);
      } catch (IOException expected) {
        refused++;
      }
      try {
        answerOf(payload);
      } catch (IOException expected) {
        refused++;
      }
    }
    assertTrue(refused + " of 20,000 refused", refused > 10_000);
  }
}
