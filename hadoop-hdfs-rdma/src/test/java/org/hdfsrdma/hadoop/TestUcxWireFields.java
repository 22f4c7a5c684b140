package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FsTracer;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.datatransfer.DataTransferProtocol;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.apache.hadoop.hdfs.protocol.datatransfer.Receiver;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReadOpChecksumInfoProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm.SlotId;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.UcxWireFields.CommitEntry;
import org.hdfsrdma.hadoop.UcxWireFields.WriteRequest;
import org.junit.Test;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;

/**
 * Tests of {@link UcxWireFields} against Hadoop's real protobuf messages,
 * Sender and Receiver: what a stock peer parses must stay exactly what it
 * parsed before, and our fields must survive the trip.
 */
public class TestUcxWireFields {

  private static final String DN = "127.0.0.1:1";

  private static final byte[] NONCE = new byte[] {
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, (byte) 0xff};

  private static final ExtendedBlock BLOCK =
      new ExtendedBlock("BP-1-10.0.0.1-1700000000000", 1073741825L, 4096L,
          1001L);

  private static WriteRequest request() {
    return new WriteRequest(NONCE, 65536, 0x8001);
  }

  private static List<CommitEntry> commits() {
    return Arrays.asList(
        new CommitEntry("10.0.0.1:9866", "10.0.0.1", 19866),
        new CommitEntry("10.0.0.2:9866", "dn2.example.com", 19867),
        new CommitEntry("[::1]:9866", "::1", 65535));
  }

  private static Token<BlockTokenIdentifier> token() {
    return new Token<>("identifier".getBytes(StandardCharsets.UTF_8),
        "password".getBytes(StandardCharsets.UTF_8),
        new Text("HDFS_BLOCK_TOKEN"), new Text("service"));
  }

  /** Fixed once: DFSTestUtil gives every DatanodeInfo a random UUID. */
  private static final DatanodeInfo[] TARGETS = {
      DFSTestUtil.getDatanodeInfo("10.0.0.1", "dn1", 9866),
      DFSTestUtil.getDatanodeInfo("10.0.0.2", "dn2", 9866),
      DFSTestUtil.getDatanodeInfo("10.0.0.3", "dn3", 9866)};

  private static final DatanodeInfo SOURCE =
      DFSTestUtil.getDatanodeInfo("10.0.0.9", "src", 9866);

  /** Sends a writeBlock op with Hadoop's Sender through {@code out}. */
  private static void sendWriteBlock(DataOutputStream out)
      throws IOException {
    new Sender(out).writeBlock(BLOCK, StorageType.DISK, token(),
        "DFSClient_test", TARGETS.clone(),
        new StorageType[] {StorageType.DISK, StorageType.SSD,
            StorageType.ARCHIVE},
        SOURCE, BlockConstructionStage.PIPELINE_SETUP_CREATE, 3, 0L, 0L, 1001L,
        DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, 512),
        CachingStrategy.newDefaultStrategy(), false, false,
        new boolean[] {false, true, false});
  }

  private static byte[] writeBlockBytes(WriteRequest r) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    sendWriteBlock(UcxWireFields.opOut(out, r));
    return bytes.toByteArray();
  }

  private static byte[] readBlockBytes(WriteRequest r) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    new Sender(UcxWireFields.opOut(out, r)).readBlock(BLOCK, token(),
        "DFSClient_test", 0L, 4096L, true,
        CachingStrategy.newDefaultStrategy());
    return bytes.toByteArray();
  }

  /** Reads the op header the way Receiver.readOp does. */
  private static Op readOp(DataInputStream in) throws IOException {
    assertEquals(DataTransferProtocol.DATA_TRANSFER_VERSION, in.readShort());
    return Op.read(in);
  }

  /** Reads the op's proto the way Receiver.opWriteBlock does. */
  private static OpWriteBlockProto readWriteBlock(DataInputStream in)
      throws IOException {
    return OpWriteBlockProto.parseFrom(PBHelperClient.vintPrefixed(in));
  }

  private static OpWriteBlockProto stripped(OpWriteBlockProto op) {
    return op.toBuilder()
        .setUnknownFields(UnknownFieldSet.getDefaultInstance()).build();
  }

  private static void assertIOException(String expected, Runnable0 r) {
    try {
      r.run();
      fail("no IOException, expected one saying: " + expected);
    } catch (IOException e) {
      assertTrue("message '" + e.getMessage() + "' lacks '" + expected
          + "'", e.getMessage().contains(expected));
    }
  }

  private interface Runnable0 {
    void run() throws IOException;
  }

  // ---------------------------------------------------------------- values

  @Test(timeout = 10000)
  public void testWriteRequestRoundTrip() throws IOException {
    WriteRequest r = request();
    byte[] p = r.encode();
    assertEquals(WriteRequest.ENCODED_LENGTH, p.length);
    // the documented layout
    ByteBuffer b = ByteBuffer.wrap(p);
    assertEquals(1, b.getShort());
    assertEquals((short) 0x8001, b.getShort());
    assertEquals(65536, b.getInt());
    byte[] n = new byte[16];
    b.get(n);
    assertArrayEquals(NONCE, n);

    WriteRequest d = WriteRequest.decode(p);
    assertEquals(r, d);
    assertEquals(r.hashCode(), d.hashCode());
    assertEquals(1, d.getVersion());
    assertEquals(65536, d.getPacketSize());
    assertEquals(0x8001, d.getFlags());
    assertArrayEquals(NONCE, d.getNonce());
    assertNull(WriteRequest.decode(null));

    WriteRequest c = WriteRequest.create(1 << 20, 0);
    assertEquals(c, WriteRequest.decode(c.encode()));
    assertFalse(Arrays.equals(c.getNonce(),
        WriteRequest.create(1 << 20, 0).getNonce()));
    assertFalse(r.toString().contains(Arrays.toString(NONCE)));
  }

  @Test(timeout = 10000)
  public void testWriteRequestIsImmutable() {
    byte[] n = NONCE.clone();
    WriteRequest r = new WriteRequest(n, 4096, 0);
    n[0] = 42;
    r.getNonce()[1] = 42;
    assertArrayEquals(NONCE, r.getNonce());
  }

  @Test(timeout = 10000)
  public void testWriteRequestRejectsBadArguments() {
    int[][] bad = {{0, 1, 0}, {65536, 1, 0}, {1, 0, 0}, {1, -1, 0},
        {1, 1, -1}, {1, 1, 65536}};
    for (int[] a : bad) {
      try {
        new WriteRequest(a[0], NONCE, a[1], a[2]);
        fail("accepted " + Arrays.toString(a));
      } catch (IllegalArgumentException expected) {
      }
    }
    try {
      new WriteRequest(new byte[15], 1, 0);
      fail("accepted a 15-byte nonce");
    } catch (IllegalArgumentException expected) {
    }
  }

  @Test(timeout = 10000)
  public void testMalformedWriteRequest() {
    final byte[] good = request().encode();
    assertIOException("truncated", () -> WriteRequest.decode(new byte[1]));
    assertIOException("truncated", () -> WriteRequest.decode(new byte[0]));
    assertIOException("must be 24 bytes, not 23",
        () -> WriteRequest.decode(Arrays.copyOf(good, 23)));
    assertIOException("must be 24 bytes, not 25",
        () -> WriteRequest.decode(Arrays.copyOf(good, 25)));
    assertIOException("unsupported version 2",
        () -> WriteRequest.decode(new WriteRequest(2, NONCE, 1, 0).encode()));
    final byte[] zero = good.clone();
    zero[0] = 0;
    zero[1] = 0;
    assertIOException("unsupported version 0",
        () -> WriteRequest.decode(zero));
    final byte[] size = good.clone();
    size[4] = (byte) 0x80;
    assertIOException("invalid packet size",
        () -> WriteRequest.decode(size));
  }

  @Test(timeout = 10000)
  public void testCommitEntryRoundTrip() throws IOException {
    for (CommitEntry e : commits()) {
      CommitEntry d = CommitEntry.decode(e.encode());
      assertEquals(e, d);
      assertEquals(e.hashCode(), d.hashCode());
      assertEquals(e.getXferAddr(), d.getXferAddr());
      assertEquals(e.getUcxHost(), d.getUcxHost());
      assertEquals(e.getUcxPort(), d.getUcxPort());
    }
    // the documented layout
    ByteBuffer b = ByteBuffer.wrap(
        new CommitEntry("h:1", "u\u00e9", 300).encode());
    assertEquals(1, b.getShort());
    assertEquals(300, b.getShort());
    assertEquals(3, b.getShort()); // "u" + 2 bytes of UTF-8
    b.position(b.position() + 3);
    assertEquals(3, b.getShort());
    b.position(b.position() + 3);
    assertFalse(b.hasRemaining());
    // longest strings allowed
    char[] c = new char[UcxWireFields.MAX_STRING_BYTES];
    Arrays.fill(c, 'a');
    CommitEntry longest = new CommitEntry(new String(c), new String(c), 1);
    assertEquals(longest, CommitEntry.decode(longest.encode()));
  }

  @Test(timeout = 10000)
  public void testCommitEntryRejectsBadArguments() {
    char[] c = new char[UcxWireFields.MAX_STRING_BYTES + 1];
    Arrays.fill(c, 'a');
    String[][] bad = {{null, "h"}, {"", "h"}, {"a:1", null}, {"a:1", ""},
        {new String(c), "h"}, {"a:1", new String(c)}};
    for (String[] a : bad) {
      try {
        new CommitEntry(a[0], a[1], 1);
        fail("accepted " + Arrays.toString(a));
      } catch (IllegalArgumentException expected) {
      }
    }
    for (int port : new int[] {0, -1, 65536}) {
      try {
        new CommitEntry("a:1", "h", port);
        fail("accepted port " + port);
      } catch (IllegalArgumentException expected) {
      }
    }
  }

  @Test(timeout = 10000)
  public void testMalformedCommitEntry() throws IOException {
    final byte[] good = commits().get(1).encode();
    for (int n = 0; n < good.length; n++) {
      final int len = n;
      assertIOException("truncated",
          () -> CommitEntry.decode(Arrays.copyOf(good, len)));
    }
    assertIOException("1 trailing bytes",
        () -> CommitEntry.decode(Arrays.copyOf(good, good.length + 1)));
    final byte[] v = good.clone();
    v[1] = 7;
    assertIOException("unsupported version 7", () -> CommitEntry.decode(v));
    final byte[] port = good.clone();
    port[2] = 0;
    port[3] = 0;
    assertIOException("ucxPort 0", () -> CommitEntry.decode(port));
    // a host length of 0 and one over the bound, with the bytes present
    final ByteBuffer empty = ByteBuffer.allocate(10);
    empty.putShort((short) 1).putShort((short) 1).putShort((short) 0);
    assertIOException("ucxHost length 0 out of bounds",
        () -> CommitEntry.decode(empty.array()));
    int big = UcxWireFields.MAX_STRING_BYTES + 1;
    final ByteBuffer over = ByteBuffer.allocate(6 + big + 4);
    over.putShort((short) 1).putShort((short) 1).putShort((short) big);
    assertIOException("ucxHost length " + big + " out of bounds",
        () -> CommitEntry.decode(over.array()));
    // xferAddr length over the bound
    final ByteBuffer addr = ByteBuffer.allocate(6 + 1 + 2 + 0xffff);
    addr.putShort((short) 1).putShort((short) 1).putShort((short) 1)
        .put((byte) 'h').putShort((short) 0xffff);
    assertIOException("xferAddr length 65535 out of bounds",
        () -> CommitEntry.decode(addr.array()));
    assertIOException("missing", () -> CommitEntry.decode(null));
  }

  // ------------------------------------------------------ protobuf fields

  private static OpWriteBlockProto stockOp() throws IOException {
    DataInputStream in = new DataInputStream(
        new ByteArrayInputStream(writeBlockBytes(null)));
    assertEquals(Op.WRITE_BLOCK, readOp(in));
    return readWriteBlock(in);
  }

  @Test(timeout = 10000)
  public void testStockParseOfWriteBlockWithRequest() throws IOException {
    OpWriteBlockProto stock = stockOp();
    assertNull(UcxWireFields.requestOf(stock));

    OpWriteBlockProto with = UcxWireFields.withRequest(stock, request());
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
        .hasField(UcxWireFields.WRITE_REQUEST_FIELD));
    assertEquals(request(), UcxWireFields.requestOf(parsed));

    // a second request replaces the first
    WriteRequest other = new WriteRequest(new byte[16], 1, 2);
    OpWriteBlockProto again = UcxWireFields.withRequest(parsed, other);
    assertEquals(1, again.getUnknownFields()
        .getField(UcxWireFields.WRITE_REQUEST_FIELD)
        .getLengthDelimitedList().size());
    assertEquals(other, UcxWireFields.requestOf(again));
  }

  @Test(timeout = 10000)
  public void testOtherUnknownFieldsKept() throws IOException {
    UnknownFieldSet foreign = UnknownFieldSet.newBuilder()
        .addField(4242, UnknownFieldSet.Field.newBuilder()
            .addVarint(7).build())
        .build();
    OpWriteBlockProto op = stockOp().toBuilder()
        .setUnknownFields(foreign).build();
    OpWriteBlockProto with = UcxWireFields.withRequest(op, request());
    assertEquals(Collections.singletonList(7L),
        with.getUnknownFields().getField(4242).getVarintList());

    BlockOpResponseProto.Builder b = BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS).setUnknownFields(foreign);
    UcxWireFields.withCommits(b, commits());
    UcxWireFields.withCommits(b, Collections.<CommitEntry>emptyList());
    assertEquals(foreign, b.build().getUnknownFields());
  }

  @Test(timeout = 10000)
  public void testMalformedRequestField() {
    final OpWriteBlockProto varint = OpWriteBlockProto.newBuilder(
        UcxWireFields.withRequest(stockOpUnchecked(), request()))
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(UcxWireFields.WRITE_REQUEST_FIELD,
                UnknownFieldSet.Field.newBuilder().addVarint(1).build())
            .build()).build();
    assertIOException("not length-delimited",
        () -> UcxWireFields.requestOf(varint));
    final OpWriteBlockProto shortField = stockOpUnchecked().toBuilder()
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(UcxWireFields.WRITE_REQUEST_FIELD,
                UnknownFieldSet.Field.newBuilder()
                    .addLengthDelimited(ByteString.copyFrom(new byte[5]))
                    .build())
            .build()).build();
    assertIOException("unsupported version 0",
        () -> UcxWireFields.requestOf(shortField));
  }

  private static OpWriteBlockProto stockOpUnchecked() {
    try {
      return stockOp();
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  @Test(timeout = 10000)
  public void testStockParseOfResponseWithCommits() throws IOException {
    BlockOpResponseProto stock = BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS)
        .setFirstBadLink("")
        .setMessage("ok")
        .setReadOpChecksumInfo(ReadOpChecksumInfoProto.newBuilder()
            .setChecksum(org.apache.hadoop.hdfs.protocol.datatransfer
                .DataTransferProtoUtil.toProto(DataChecksum.newDataChecksum(
                    DataChecksum.Type.CRC32C, 512)))
            .setChunkOffset(0))
        .build();
    assertEquals(Collections.emptyList(), UcxWireFields.commitsOf(stock));

    BlockOpResponseProto.Builder b = stock.toBuilder();
    assertSame(b, UcxWireFields.withCommits(b, commits()));
    // how a stock client reads the reply
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    b.build().writeDelimitedTo(bytes);
    BlockOpResponseProto parsed = BlockOpResponseProto.parseFrom(
        PBHelperClient.vintPrefixed(
            new ByteArrayInputStream(bytes.toByteArray())));
    assertEquals(stock, parsed.toBuilder()
        .setUnknownFields(UnknownFieldSet.getDefaultInstance()).build());
    assertEquals(Status.SUCCESS, parsed.getStatus());
    assertEquals("ok", parsed.getMessage());
    assertEquals(commits(), UcxWireFields.commitsOf(parsed));

    // replacing, and removing with an empty list
    List<CommitEntry> one = commits().subList(0, 1);
    assertEquals(one, UcxWireFields.commitsOf(
        UcxWireFields.withCommits(parsed.toBuilder(), one).build()));
    BlockOpResponseProto none = UcxWireFields.withCommits(parsed.toBuilder(),
        Collections.<CommitEntry>emptyList()).build();
    assertEquals(Collections.emptyList(), UcxWireFields.commitsOf(none));
    assertEquals(stock, none);
  }

  @Test(timeout = 10000)
  public void testMalformedCommitField() {
    final BlockOpResponseProto varint = BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS)
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(UcxWireFields.COMMIT_FIELD,
                UnknownFieldSet.Field.newBuilder().addFixed32(1).build())
            .build()).build();
    assertIOException("not length-delimited",
        () -> UcxWireFields.commitsOf(varint));

    UnknownFieldSet.Field.Builder f = UnknownFieldSet.Field.newBuilder();
    f.addLengthDelimited(ByteString.copyFrom(commits().get(0).encode()));
    f.addLengthDelimited(ByteString.copyFrom(new byte[3]));
    final BlockOpResponseProto bad = BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS)
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(UcxWireFields.COMMIT_FIELD, f.build()).build())
        .build();
    assertIOException("unsupported version 0",
        () -> UcxWireFields.commitsOf(bad));

    UnknownFieldSet.Field.Builder many = UnknownFieldSet.Field.newBuilder();
    ByteString e = ByteString.copyFrom(commits().get(0).encode());
    for (int i = 0; i <= UcxWireFields.MAX_COMMIT_ENTRIES; i++) {
      many.addLengthDelimited(e);
    }
    final BlockOpResponseProto tooMany = BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS)
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(UcxWireFields.COMMIT_FIELD, many.build()).build())
        .build();
    assertIOException("more than " + UcxWireFields.MAX_COMMIT_ENTRIES,
        () -> UcxWireFields.commitsOf(tooMany));
    List<CommitEntry> list = new ArrayList<>();
    for (int i = 0; i <= UcxWireFields.MAX_COMMIT_ENTRIES; i++) {
      list.add(commits().get(0));
    }
    try {
      UcxWireFields.withCommits(BlockOpResponseProto.newBuilder(), list);
      fail("accepted too many entries");
    } catch (IllegalArgumentException expected) {
    }
  }

  // ----------------------------------------------------------------- opOut

  @Test(timeout = 10000)
  public void testOpOutWithoutRequestIsIdentity() throws IOException {
    DataOutputStream out = new DataOutputStream(new ByteArrayOutputStream());
    assertSame(out, UcxWireFields.opOut(out, null));
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
    assertEquals(request(), UcxWireFields.requestOf(op));
    assertEquals(stockOp(), stripped(op));

    // Sender's proto bytes are kept verbatim, our field is appended
    DataInputStream p = new DataInputStream(new ByteArrayInputStream(plain));
    readOp(p);
    byte[] stockProto = readWriteBlock(p).toByteArray();
    byte[] ourProto = op.toByteArray();
    assertArrayEquals(stockProto,
        Arrays.copyOf(ourProto, stockProto.length));
  }

  @Test(timeout = 10000)
  public void testStockReceiverReadsRewrittenOp() throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    DataOutputStream opOut = UcxWireFields.opOut(out, request());
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
    assertEquals(BLOCK, r.block);
    assertEquals(StorageType.DISK, r.storageType);
    assertEquals("DFSClient_test", r.clientName);
    assertEquals(2, r.targets.length); // Sender drops the first target
    assertEquals("10.0.0.2:9866", r.targets[0].getXferAddr());
    assertEquals(BlockConstructionStage.PIPELINE_SETUP_CREATE, r.stage);
    assertEquals(1001L, r.latestGenerationStamp);
    assertEquals(token(), r.token);
    byte[] after = new byte[7];
    r.in().readFully(after);
    assertArrayEquals(new byte[] {1, 2, 3, 1, 2, 3, 4}, after);
    r.receiveOne();
    assertEquals(BLOCK, r.block);
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
          UcxWireFields.opOut(new DataOutputStream(bytes), request());
      o.flush(); // nothing buffered: does not end the op
      o.write(plain, 0, cut);
      o.flush();
      o.write(plain, cut, plain.length - cut);
      o.flush();
      assertArrayEquals("cut at " + cut, plain, bytes.toByteArray());
    }
  }

  // ------------------------------------------------------ peekWriteRequest

  /** A stream positioned as DataXceiver's is after readOp(). */
  private static DataInputStream afterReadOp(byte[] bytes, int bufferSize)
      throws IOException {
    DataInputStream in = new DataInputStream(new BufferedInputStream(
        new ByteArrayInputStream(bytes), bufferSize));
    assertEquals(Op.WRITE_BLOCK, readOp(in));
    return in;
  }

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
      assertEquals(request(), UcxWireFields.peekWriteRequest(peeked));
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
    assertNull(UcxWireFields.peekWriteRequest(in));
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
    assertNull(UcxWireFields.peekWriteRequest(in));
    assertEquals(before, raw.available());
    assertEquals(request(), UcxWireFields.requestOf(readWriteBlock(in)));
  }

  @Test(timeout = 10000)
  public void testPeekOfBadOpsResets() throws IOException {
    // truncated op: null, and Hadoop's parse sees the same truncation
    byte[] ours = writeBlockBytes(request());
    byte[] cut = Arrays.copyOf(ours, ours.length - 10);
    DataInputStream in = afterReadOp(cut, 512);
    assertNull(UcxWireFields.peekWriteRequest(in));
    assertEquals(cut.length - 3, in.available());

    // a malformed request: ignored (the pipeline stays on TCP)
    OpWriteBlockProto badField = stockOp().toBuilder()
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(UcxWireFields.WRITE_REQUEST_FIELD,
                UnknownFieldSet.Field.newBuilder().addLengthDelimited(
                    ByteString.copyFrom(new WriteRequest(2, NONCE, 1, 0)
                        .encode())).build())
            .build()).build();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    out.writeShort(DataTransferProtocol.DATA_TRANSFER_VERSION);
    Op.WRITE_BLOCK.write(out);
    badField.writeDelimitedTo(out);
    in = afterReadOp(bytes.toByteArray(), 512);
    assertNull(UcxWireFields.peekWriteRequest(in));
    assertEquals(badField, readWriteBlock(in));

    // an op over the peek limit: nothing read past the varint, reset
    bytes.reset();
    out.writeShort(DataTransferProtocol.DATA_TRANSFER_VERSION);
    Op.WRITE_BLOCK.write(out);
    OpWriteBlockProto huge = stockOp().toBuilder()
        .setHeader(stockOp().getHeader().toBuilder()
            .setClientName(new String(new char[UcxWireFields.PEEK_LIMIT])
                .replace('\0', 'x')))
        .build();
    huge = UcxWireFields.withRequest(huge, request());
    huge.writeDelimitedTo(out);
    in = afterReadOp(bytes.toByteArray(), 512);
    assertNull(UcxWireFields.peekWriteRequest(in));
    assertEquals(huge, readWriteBlock(in));

    // end of stream right away
    in = afterReadOp(Arrays.copyOf(ours, 3), 512);
    assertNull(UcxWireFields.peekWriteRequest(in));
  }

  // ------------------------------------------------------------- sessionId

  @Test(timeout = 10000)
  public void testSessionId() {
    byte[] key = "password".getBytes(StandardCharsets.UTF_8);
    String pool = BLOCK.getBlockPoolId();
    long s = UcxWireFields.sessionId(key, NONCE, pool, DN, 7L, 1001L);
    assertEquals(s, UcxWireFields.sessionId(key.clone(), NONCE.clone(),
        new String(pool), DN, 7L, 1001L));

    byte[] otherNonce = NONCE.clone();
    otherNonce[15] ^= 1;
    long[] others = {
        UcxWireFields.sessionId("passwore".getBytes(StandardCharsets.UTF_8),
            NONCE, pool, DN, 7L, 1001L),
        UcxWireFields.sessionId(key, otherNonce, pool, DN, 7L, 1001L),
        UcxWireFields.sessionId(key, NONCE, pool + "x", DN, 7L, 1001L),
        UcxWireFields.sessionId(key, NONCE, pool, DN, 8L, 1001L),
        UcxWireFields.sessionId(key, NONCE, pool, DN, 7L, 1002L),
        UcxWireFields.sessionId(key, NONCE, pool, DN, 1001L, 7L),
        UcxWireFields.sessionId(key, NONCE, pool, "127.0.0.1:2", 7L, 1001L)};
    for (long o : others) {
      assertNotEquals(s, o);
    }

    // no key: the nonce is the key
    long noKey = UcxWireFields.sessionId(new byte[0], NONCE, pool, DN, 7L, 1001L);
    assertEquals(noKey,
        UcxWireFields.sessionId(null, NONCE, pool, DN, 7L, 1001L));
    assertEquals(noKey,
        UcxWireFields.sessionId(NONCE, NONCE, pool, DN, 7L, 1001L));
    assertNotEquals(noKey, s);
    assertNotEquals(noKey,
        UcxWireFields.sessionId(null, otherNonce, pool, DN, 7L, 1001L));

    try {
      UcxWireFields.sessionId(key, new byte[8], pool, DN, 7L, 1001L);
      fail("accepted an 8-byte nonce");
    } catch (IllegalArgumentException expected) {
    }
  }

  /** Hadoop's own Receiver, recording the writeBlock it decodes. */
  private static final class CapturingReceiver extends Receiver {
    private ExtendedBlock block;
    private StorageType storageType;
    private Token<BlockTokenIdentifier> token;
    private String clientName;
    private DatanodeInfo[] targets;
    private BlockConstructionStage stage;
    private long latestGenerationStamp;

    CapturingReceiver(DataInputStream in) {
      super(FsTracer.get(new Configuration()));
      initialize(in);
    }

    DataInputStream in() {
      return in;
    }

    void receiveOne() throws IOException {
      Op op = readOp();
      assertEquals(Op.WRITE_BLOCK, op);
      processOp(op);
    }

    @Override
    public void writeBlock(ExtendedBlock blk, StorageType st,
        Token<BlockTokenIdentifier> blockToken, String client,
        DatanodeInfo[] tgts, StorageType[] targetStorageTypes,
        DatanodeInfo source, BlockConstructionStage stg, int pipelineSize,
        long minBytesRcvd, long maxBytesRcvd, long latestGs,
        DataChecksum requestedChecksum, CachingStrategy cachingStrategy,
        boolean allowLazyPersist, boolean pinning, boolean[] targetPinnings) {
      assertNotNull(requestedChecksum);
      this.block = blk;
      this.storageType = st;
      this.token = blockToken;
      this.clientName = client;
      this.targets = tgts;
      this.stage = stg;
      this.latestGenerationStamp = latestGs;
    }

    @Override
    public void readBlock(ExtendedBlock blk,
        Token<BlockTokenIdentifier> blockToken, String client,
        long blockOffset, long length, boolean sendChecksum,
        CachingStrategy cachingStrategy) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void transferBlock(ExtendedBlock blk,
        Token<BlockTokenIdentifier> blockToken, String client,
        DatanodeInfo[] tgts, StorageType[] targetStorageTypes) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void requestShortCircuitFds(ExtendedBlock blk,
        Token<BlockTokenIdentifier> blockToken, SlotId slotId,
        int maxVersion, boolean supportsReceiptVerification) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void releaseShortCircuitFds(SlotId slotId) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void requestShortCircuitShm(String client) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void replaceBlock(ExtendedBlock blk, StorageType st,
        Token<BlockTokenIdentifier> blockToken, String delHint,
        DatanodeInfo source) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void copyBlock(ExtendedBlock blk,
        Token<BlockTokenIdentifier> blockToken) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void blockChecksum(ExtendedBlock blk,
        Token<BlockTokenIdentifier> blockToken) {
      throw new UnsupportedOperationException();
    }
  }
}
