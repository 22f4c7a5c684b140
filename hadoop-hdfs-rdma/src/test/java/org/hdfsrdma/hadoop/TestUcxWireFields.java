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
import org.hdfsrdma.hadoop.protocol.UcxWireFields.CommitEntry;
import org.hdfsrdma.hadoop.protocol.UcxWireFields.WriteRequest;
import org.hdfsrdma.hadoop.protocol.UcxWireFields;
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

  /** A worker address as UCX writes them: opaque bytes, a few hundred. */
  private static byte[] workerAddress(int length, int seed) {
    byte[] a = new byte[length];
    new java.util.Random(seed).nextBytes(a);
    return a;
  }

  private static byte[] hostId(int seed) {
    byte[] h = new byte[CommitEntry.HOST_ID_LENGTH];
    Arrays.fill(h, (byte) seed);
    h[0] = (byte) 0xfe;
    return h;
  }

  private static List<CommitEntry> commits() {
    return Arrays.asList(
        new CommitEntry("10.0.0.1:9866", workerAddress(197, 1), 0,
            hostId(1)),
        new CommitEntry("10.0.0.2:9866", workerAddress(1, 2), 1000,
            hostId(2)),
        new CommitEntry("[::1]:9866", workerAddress(
            UcxWireFields.MAX_WORKER_ADDRESS_BYTES, 3), -1, hostId(3)),
        new CommitEntry("10.0.0.4:9866", workerAddress(64, 4), 1000,
            hostId(4), 1_250_000_000L));
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

  /** {@code op} with {@code payload} as its request field, unchecked. */
  private static OpWriteBlockProto withRawRequest(OpWriteBlockProto op,
      byte[] payload) {
    return op.toBuilder().setUnknownFields(UnknownFieldSet.newBuilder()
        .addField(UcxWireFields.WRITE_REQUEST_FIELD,
            UnknownFieldSet.Field.newBuilder()
                .addLengthDelimited(ByteString.copyFrom(payload)).build())
        .build()).build();
  }

  /** {@code op} framed as Sender frames a writeBlock op. */
  private static byte[] frame(OpWriteBlockProto op) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    out.writeShort(DataTransferProtocol.DATA_TRANSFER_VERSION);
    Op.WRITE_BLOCK.write(out);
    op.writeDelimitedTo(out);
    out.flush();
    return bytes.toByteArray();
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
    assertEquals(24, WriteRequest.ENCODED_LENGTH);
    assertEquals(WriteRequest.ENCODED_LENGTH, p.length);
    // the documented layout
    ByteBuffer b = ByteBuffer.wrap(p);
    assertEquals(2, b.getShort());
    assertEquals((short) 0x8001, b.getShort());
    assertEquals(65536, b.getInt());
    byte[] n = new byte[16];
    b.get(n);
    assertArrayEquals(NONCE, n);
    assertFalse(b.hasRemaining());

    WriteRequest d = WriteRequest.decode(p);
    assertEquals(r, d);
    assertEquals(r.hashCode(), d.hashCode());
    assertEquals(WriteRequest.VERSION, d.getVersion());
    assertEquals(2, d.getVersion());
    assertEquals(65536, d.getPacketSize());
    assertEquals(0x8001, d.getFlags());
    assertArrayEquals(NONCE, d.getNonce());
    assertNull(WriteRequest.decode(null));
    // the largest values each field holds
    WriteRequest max = new WriteRequest(NONCE, Integer.MAX_VALUE, 0xffff);
    assertEquals(max, WriteRequest.decode(max.encode()));

    WriteRequest c = WriteRequest.create(1 << 20, 0);
    assertEquals(c, WriteRequest.decode(c.encode()));
    assertEquals(WriteRequest.VERSION, c.getVersion());
    assertFalse(Arrays.equals(c.getNonce(),
        WriteRequest.create(1 << 20, 0).getNonce()));
    assertNotEquals(r, new WriteRequest(NONCE, 65536, 0x8000));
    assertNotEquals(r, new WriteRequest(NONCE, 65535, 0x8001));
    // the nonce keys session ids where block tokens are off: never shown
    assertFalse(r.toString().contains(Arrays.toString(NONCE)));
    assertFalse(r.toString().contains("-1"));
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
    int[][] bad = {{0, 1, 0}, {65536, 1, 0}, {2, 0, 0}, {2, -1, 0},
        {2, 1, -1}, {2, 1, 65536}};
    for (int[] a : bad) {
      try {
        new WriteRequest(a[0], NONCE, a[1], a[2]);
        fail("accepted " + Arrays.toString(a));
      } catch (IllegalArgumentException expected) {
      }
    }
    for (byte[] nonce : new byte[][] {null, new byte[15], new byte[17]}) {
      try {
        new WriteRequest(nonce, 1, 0);
        fail("accepted a nonce of " + (nonce == null ? "null"
            : nonce.length + " bytes"));
      } catch (IllegalArgumentException expected) {
      }
    }
  }

  @Test(timeout = 10000)
  public void testMalformedWriteRequest() {
    final byte[] good = request().encode();
    assertIOException("truncated", () -> WriteRequest.decode(new byte[1]));
    assertIOException("truncated", () -> WriteRequest.decode(new byte[0]));
    for (int n = 2; n < good.length; n++) {
      final int len = n;
      assertIOException("must be 24 bytes, not " + n,
          () -> WriteRequest.decode(Arrays.copyOf(good, len)));
    }
    assertIOException("must be 24 bytes, not 25",
        () -> WriteRequest.decode(Arrays.copyOf(good, 25)));
    assertIOException("unsupported version 3",
        () -> WriteRequest.decode(new WriteRequest(3, NONCE, 1, 0).encode()));
    assertIOException("unsupported version 65535", () -> WriteRequest.decode(
        new WriteRequest(65535, NONCE, 1, 0).encode()));
    final byte[] zero = good.clone();
    zero[0] = 0;
    zero[1] = 0;
    assertIOException("unsupported version 0",
        () -> WriteRequest.decode(zero));
    for (int size : new int[] {0, -1, Integer.MIN_VALUE}) {
      final byte[] bad = good.clone();
      ByteBuffer.wrap(bad).putInt(4, size);
      assertIOException("invalid packet size " + size,
          () -> WriteRequest.decode(bad));
    }
  }

  /**
   * A request as the listener-based release (payload version 1) wrote it:
   * the same 24 bytes but version 1. A DataNode of this release ignores it
   * (the pipeline stays on TCP) rather than serve a client that would
   * connect to a listener.
   */
  @Test(timeout = 10000)
  public void testVersionOneRequestIsRefused() throws IOException {
    final ByteBuffer v1 = ByteBuffer.allocate(24);
    v1.putShort((short) 1).putShort((short) 0).putInt(65536).put(NONCE);
    assertIOException("unsupported version 1 (this side speaks version 2)",
        () -> WriteRequest.decode(v1.array()));
    final OpWriteBlockProto op = withRawRequest(stockOp(), v1.array());
    assertIOException("unsupported version 1",
        () -> UcxWireFields.requestOf(op));
    // what a DataNode of this release does with such an op: no request
    byte[] bytes = frame(op);
    DataInputStream in = afterReadOp(bytes, 512);
    assertNull(UcxWireFields.peekWriteRequest(in));
    assertEquals(op, readWriteBlock(in));
  }

  @Test(timeout = 10000)
  public void testCommitEntryRoundTrip() throws IOException {
    for (CommitEntry e : commits()) {
      byte[] p = e.encode();
      CommitEntry d = CommitEntry.decode(p);
      assertEquals(e, d);
      assertEquals(e.hashCode(), d.hashCode());
      assertEquals(e.getXferAddr(), d.getXferAddr());
      assertArrayEquals(e.getWorkerAddress(), d.getWorkerAddress());
      assertEquals(e.getUid(), d.getUid());
      assertArrayEquals(e.getHostId(), d.getHostId());
      assertArrayEquals(p, d.encode());
    }
    // the documented layout, field by field
    byte[] worker = {9, 8, 7};
    byte[] host = hostId(5);
    ByteBuffer b = ByteBuffer.wrap(
        new CommitEntry("h\u00e9:1", worker, 0x01020304, host).encode());
    assertEquals(2, b.getShort());               // version
    assertEquals(0, b.getShort());               // flags
    assertEquals(0x01020304, b.getInt());        // uid
    byte[] h = new byte[16];
    b.get(h);
    assertArrayEquals(host, h);                  // host id
    assertEquals(5, b.getShort());               // "h", 2 bytes, ":1"
    byte[] addr = new byte[5];
    b.get(addr);
    assertEquals("h\u00e9:1", new String(addr, StandardCharsets.UTF_8));
    assertEquals(3, b.getShort());
    byte[] w = new byte[3];
    b.get(w);
    assertArrayEquals(worker, w);
    assertFalse("nothing after the worker address", b.hasRemaining());
    // longest fields allowed
    char[] c = new char[UcxWireFields.MAX_STRING_BYTES];
    Arrays.fill(c, 'a');
    CommitEntry longest = new CommitEntry(new String(c),
        workerAddress(UcxWireFields.MAX_WORKER_ADDRESS_BYTES, 9),
        Integer.MIN_VALUE, hostId(9));
    assertEquals(longest, CommitEntry.decode(longest.encode()));
    // equality covers every field
    CommitEntry e = commits().get(0);
    assertNotEquals(e, new CommitEntry(e.getXferAddr(), e.getWorkerAddress(),
        e.getUid() + 1, e.getHostId()));
    assertNotEquals(e, new CommitEntry(e.getXferAddr(), e.getWorkerAddress(),
        e.getUid(), hostId(7)));
    assertNotEquals(e, new CommitEntry(e.getXferAddr(), workerAddress(197, 2),
        e.getUid(), e.getHostId()));
    assertNotEquals(e, new CommitEntry("10.0.0.1:9867", e.getWorkerAddress(),
        e.getUid(), e.getHostId()));
  }

  @Test(timeout = 10000)
  public void testCommitEntryIsImmutable() {
    byte[] worker = workerAddress(10, 1);
    byte[] host = hostId(1);
    CommitEntry e = new CommitEntry("a:1", worker, 7, host);
    worker[0] ^= 1;
    host[1] ^= 1;
    e.getWorkerAddress()[2] ^= 1;
    e.getHostId()[3] ^= 1;
    assertArrayEquals(workerAddress(10, 1), e.getWorkerAddress());
    assertArrayEquals(hostId(1), e.getHostId());
  }

  @Test(timeout = 10000)
  public void testCommitEntryRejectsBadArguments() {
    char[] c = new char[UcxWireFields.MAX_STRING_BYTES + 1];
    Arrays.fill(c, 'a');
    // 342 three-byte characters: 1026 bytes of UTF-8 in 342 chars
    char[] wide = new char[342];
    Arrays.fill(wide, '\u20ac');
    Object[][] bad = {
        {null, workerAddress(8, 1), hostId(1)},
        {"", workerAddress(8, 1), hostId(1)},
        {new String(c), workerAddress(8, 1), hostId(1)},
        {new String(wide), workerAddress(8, 1), hostId(1)},
        {"a:1", null, hostId(1)},
        {"a:1", new byte[0], hostId(1)},
        {"a:1", new byte[UcxWireFields.MAX_WORKER_ADDRESS_BYTES + 1],
            hostId(1)},
        {"a:1", workerAddress(8, 1), null},
        {"a:1", workerAddress(8, 1), new byte[15]},
        {"a:1", workerAddress(8, 1), new byte[17]}};
    for (Object[] a : bad) {
      try {
        new CommitEntry((String) a[0], (byte[]) a[1], 0, (byte[]) a[2]);
        fail("accepted " + Arrays.deepToString(a).substring(0, 60));
      } catch (IllegalArgumentException expected) {
      }
    }
  }

  /** A v2 entry built field by field, for malformed variants. */
  private static ByteBuffer entry(int version, int flags, byte[] addr,
      int addrLen, byte[] worker, int workerLen, int extra) {
    ByteBuffer b = ByteBuffer.allocate(8 + 16 + 2 + addr.length + 2
        + worker.length + extra);
    b.putShort((short) version).putShort((short) flags).putInt(1000)
        .put(hostId(1)).putShort((short) addrLen).put(addr)
        .putShort((short) workerLen).put(worker);
    return b;
  }

  @Test(timeout = 10000)
  public void testMalformedCommitEntry() throws IOException {
    final byte[] good = commits().get(1).encode();
    // every truncation, down to nothing
    for (int n = 0; n < good.length; n++) {
      final int len = n;
      assertIOException("truncated",
          () -> CommitEntry.decode(Arrays.copyOf(good, len)));
    }
    for (int extra : new int[] {1, 2, 1000}) {
      assertIOException(extra + " trailing bytes", () -> CommitEntry.decode(
          Arrays.copyOf(good, good.length + extra)));
    }
    for (int version : new int[] {0, 3, 0xffff}) {
      final byte[] v = good.clone();
      ByteBuffer.wrap(v).putShort(0, (short) version);
      assertIOException("unsupported version " + version,
          () -> CommitEntry.decode(v));
    }
    final byte[] flags = good.clone();
    flags[3] = 2;
    assertIOException("unknown flags 0x2", () -> CommitEntry.decode(flags));
    // the ingest flag promises 8 more bytes, of a positive rate
    final byte[] ingest = Arrays.copyOf(good, good.length + 8);
    ingest[3] = CommitEntry.FLAG_INGEST;
    assertIOException("ingest rate 0", () -> CommitEntry.decode(ingest));
    ByteBuffer.wrap(ingest).putLong(good.length, -5);
    assertIOException("ingest rate -5", () -> CommitEntry.decode(ingest));
    ByteBuffer.wrap(ingest).putLong(good.length, 3_000_000_000L);
    assertEquals(3_000_000_000L,
        CommitEntry.decode(ingest).getIngestBytesPerSecond());
    assertIOException("truncated", () -> CommitEntry.decode(
        Arrays.copyOf(ingest, ingest.length - 1)));
    byte[] h = "h:1".getBytes(StandardCharsets.UTF_8);
    byte[] w = workerAddress(8, 4);
    // string lengths of 0 and over the bounds, with the bytes present
    final byte[] noAddr = entry(2, 0, new byte[0], 0, w, w.length, 0)
        .array();
    assertIOException("xferAddr length 0 out of bounds [1, 1024]",
        () -> CommitEntry.decode(noAddr));
    byte[] longAddr = new byte[UcxWireFields.MAX_STRING_BYTES + 1];
    Arrays.fill(longAddr, (byte) 'a');
    final byte[] overAddr = entry(2, 0, longAddr, longAddr.length, w,
        w.length, 0).array();
    assertIOException("xferAddr length 1025 out of bounds",
        () -> CommitEntry.decode(overAddr));
    final byte[] noWorker = entry(2, 0, h, h.length, new byte[0], 0, 0)
        .array();
    assertIOException("worker address length 0 out of bounds [1, 4096]",
        () -> CommitEntry.decode(noWorker));
    byte[] longWorker = new byte[UcxWireFields.MAX_WORKER_ADDRESS_BYTES + 1];
    final byte[] overWorker = entry(2, 0, h, h.length, longWorker,
        longWorker.length, 0).array();
    assertIOException("worker address length 4097 out of bounds",
        () -> CommitEntry.decode(overWorker));
    // a length that claims more than there is
    final byte[] shortAddr = entry(2, 0, h, h.length + w.length + 3, w,
        w.length, 0).array();
    assertIOException("truncated", () -> CommitEntry.decode(shortAddr));
    final byte[] shortWorker = entry(2, 0, h, h.length, w, w.length + 1, 0)
        .array();
    assertIOException("truncated", () -> CommitEntry.decode(shortWorker));
    assertIOException("missing", () -> CommitEntry.decode(null));
  }

  /**
   * An xferAddr that is not UTF-8 is a malformed entry like any other (an
   * IOException: the pipeline stays on TCP), even when its replacement
   * characters would make the decoded string longer than the bound.
   */
  @Test(timeout = 10000)
  public void testCommitEntryWithInvalidUtf8IsRefused() {
    byte[] w = workerAddress(8, 4);
    for (int n : new int[] {1, 3, 400, UcxWireFields.MAX_STRING_BYTES}) {
      byte[] invalid = new byte[n];
      Arrays.fill(invalid, (byte) 0xff);
      final byte[] p = entry(2, 0, invalid, n, w, w.length, 0).array();
      try {
        CommitEntry e = CommitEntry.decode(p);
        fail("decoded " + n + " bytes of invalid UTF-8 as " + e);
      } catch (IOException expected) {
        assertTrue(expected.getMessage(),
            expected.getMessage().contains("xferAddr"));
      } catch (RuntimeException e) {
        throw new AssertionError("not an IOException for " + n
            + " bytes of invalid UTF-8", e);
      }
    }
  }

  /**
   * An entry as the listener-based release (version 1: UCX port, UCX host,
   * xferAddr) wrote it: refused, so a client of this release keeps a
   * pipeline through such a DataNode on TCP, and so does a DataNode whose
   * mirror is of that release.
   */
  @Test(timeout = 10000)
  public void testVersionOneCommitIsRefused() {
    byte[] host = "10.0.0.2".getBytes(StandardCharsets.UTF_8);
    byte[] addr = "10.0.0.2:9866".getBytes(StandardCharsets.UTF_8);
    ByteBuffer v1 = ByteBuffer.allocate(8 + host.length + addr.length);
    v1.putShort((short) 1).putShort((short) 19866)
        .putShort((short) host.length).put(host)
        .putShort((short) addr.length).put(addr);
    final byte[] payload = v1.array();
    assertIOException("unsupported version 1 (this side speaks version 2)",
        () -> CommitEntry.decode(payload));
    UnknownFieldSet.Field.Builder f = UnknownFieldSet.Field.newBuilder();
    f.addLengthDelimited(ByteString.copyFrom(commits().get(0).encode()));
    f.addLengthDelimited(ByteString.copyFrom(payload));
    final BlockOpResponseProto mixed = BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS)
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(UcxWireFields.COMMIT_FIELD, f.build()).build())
        .build();
    assertIOException("unsupported version 1",
        () -> UcxWireFields.commitsOf(mixed));
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

    // a malformed request, or one of another version: ignored (the
    // pipeline stays on TCP), the op left for Hadoop exactly as it came
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    byte[] v1 = request().encode();
    v1[1] = 1;
    byte[] shortPayload = Arrays.copyOf(request().encode(), 23);
    for (byte[] payload : new byte[][] {
        new WriteRequest(3, NONCE, 1, 0).encode(), v1, shortPayload,
        new byte[0]}) {
      OpWriteBlockProto badField = withRawRequest(stockOp(), payload);
      in = afterReadOp(frame(badField), 512);
      assertNull(UcxWireFields.peekWriteRequest(in));
      assertEquals(badField, readWriteBlock(in));
      assertEquals(-1, in.read());
    }
    // the request field as a varint: ignored as well
    OpWriteBlockProto varint = stockOp().toBuilder().setUnknownFields(
        UnknownFieldSet.newBuilder().addField(
            UcxWireFields.WRITE_REQUEST_FIELD, UnknownFieldSet.Field
                .newBuilder().addVarint(2).build()).build()).build();
    in = afterReadOp(frame(varint), 512);
    assertNull(UcxWireFields.peekWriteRequest(in));
    assertEquals(varint, readWriteBlock(in));

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

  /** The documented HMAC input, computed here independently. */
  private static long expectedSessionId(byte[] key, byte[] nonce,
      String pool, String dataNode, long blockId, long stamp)
      throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream m = new DataOutputStream(bytes);
    byte[] label = "hdfs-rdma/2".getBytes(StandardCharsets.US_ASCII);
    byte[] p = pool.getBytes(StandardCharsets.UTF_8);
    byte[] d = dataNode.getBytes(StandardCharsets.UTF_8);
    m.writeInt(label.length);
    m.write(label);
    m.writeInt(nonce.length);
    m.write(nonce);
    m.writeInt(p.length);
    m.write(p);
    m.writeInt(d.length);
    m.write(d);
    m.writeLong(blockId);
    m.writeLong(stamp);
    javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
    mac.init(new javax.crypto.spec.SecretKeySpec(key, "HmacSHA256"));
    return ByteBuffer.wrap(mac.doFinal(bytes.toByteArray())).getLong();
  }

  @Test(timeout = 10000)
  public void testSessionIdIsTheDocumentedHmac() throws Exception {
    byte[] key = "password".getBytes(StandardCharsets.UTF_8);
    String pool = BLOCK.getBlockPoolId();
    assertEquals(expectedSessionId(key, NONCE, pool, DN, 7L, 1001L),
        UcxWireFields.sessionId(key, NONCE, pool, DN, 7L, 1001L));
    // no block token: keyed by the nonce
    assertEquals(expectedSessionId(NONCE, NONCE, pool, "[::1]:9866", -1L,
        Long.MAX_VALUE), UcxWireFields.sessionId(null, NONCE, pool,
            "[::1]:9866", -1L, Long.MAX_VALUE));
    // length prefixes: moving a byte between pool and DataNode changes it
    assertNotEquals(UcxWireFields.sessionId(key, NONCE, "ab", "c", 1L, 1L),
        UcxWireFields.sessionId(key, NONCE, "a", "bc", 1L, 1L));
    for (String[] bad : new String[][] {{null, DN}, {pool, null}}) {
      try {
        UcxWireFields.sessionId(key, NONCE, bad[0], bad[1], 7L, 1001L);
        fail("accepted a null block pool or DataNode");
      } catch (IllegalArgumentException expected) {
      }
    }
    try {
      UcxWireFields.sessionId(key, null, pool, DN, 7L, 1001L);
      fail("accepted a null nonce");
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
