package org.hdfsrdma.hadoop.compat;

import static org.hdfsrdma.hadoop.compat.WriteBlockOps.bytesField;
import static org.hdfsrdma.hadoop.protocol.WireSamples.assertIOException;
import static org.hdfsrdma.hadoop.protocol.WireSamples.commits;
import static org.hdfsrdma.hadoop.protocol.WireSamples.hostId;
import static org.hdfsrdma.hadoop.protocol.WireSamples.previousReleaseEntry;
import static org.hdfsrdma.hadoop.protocol.WireSamples.workerAddress;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.hdfs.protocol.datatransfer.DataTransferProtoUtil;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReadOpChecksumInfoProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.CommitEntryProto;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.WireLimits;
import org.junit.Test;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;

/**
 * {@link CommitListField} against Hadoop's real {@code BlockOpResponseProto}:
 * the list survives the trip, a stock client parses what it parsed before,
 * and a list or entry of another shape (malformed, a newer peer's, the
 * previous release's) is refused or ignored as documented.
 *
 * <p>In detail: the documented layout and the round trip; Hadoop's fields and
 * foreign unknown fields kept; refused with an IOException: the field of
 * another wire type, an entry that does not parse, every truncation, each
 * missing value (named), values out of range, more than
 * {@code WireLimits.MAX_COMMIT_ENTRIES} entries; ignored: a newer peer's fields
 * of every wire type, and the previous release's field 5152, so that mixed
 * releases stay on TCP.
 */
public class TestCommitListField {

  /** Where the release before the protobuf payload put its entries. */
  private static final int OLD_FIELD = 5152;

  private static final byte[] WORKER = workerAddress(8, 4);

  /** A valid entry's payload, by protobuf's own encoder. */
  private static CommitEntryProto.Builder entry() {
    return CommitEntryProto.newBuilder().setXferAddr("h:1")
        .setWorkerAddress(ByteString.copyFrom(WORKER)).setUid(1000)
        .setHostId(ByteString.copyFrom(hostId(4)));
  }

  private static BlockOpResponseProto reply(UnknownFieldSet.Field f,
      int number) {
    return BlockOpResponseProto.newBuilder().setStatus(Status.SUCCESS)
        .setUnknownFields(UnknownFieldSet.newBuilder().addField(number, f)
            .build()).build();
  }

  private static List<CommitEntry> read(byte[] payload) throws IOException {
    return CommitListField.commitsOf(reply(bytesField(payload),
        CommitListField.NUMBER));
  }

  private static CommitEntry read(CommitEntryProto.Builder p)
      throws IOException {
    return read(p.build().toByteArray()).get(0);
  }

  private static BlockOpResponseProto withCommits(List<CommitEntry> list) {
    return CommitListField.withCommits(BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS), list).build();
  }

  @Test(timeout = 10000)
  public void testRoundTripAndLayout() throws IOException {
    assertEquals(commits(), CommitListField.commitsOf(withCommits(
        commits())));
    // the documented layout, field by field
    CommitEntry e = new CommitEntry("h\u00e9:1", new byte[] {9, 8, 7},
        0x01020304, hostId(5));
    UnknownFieldSet.Field f = withCommits(Collections.singletonList(e))
        .getUnknownFields().getField(CommitListField.NUMBER);
    assertEquals(1, f.getLengthDelimitedList().size());
    UnknownFieldSet p =
        UnknownFieldSet.parseFrom(f.getLengthDelimitedList().get(0));
    assertEquals(ByteString.copyFromUtf8("h\u00e9:1"),
        p.getField(1).getLengthDelimitedList().get(0));
    assertEquals(ByteString.copyFrom(new byte[] {9, 8, 7}),
        p.getField(2).getLengthDelimitedList().get(0));
    assertEquals(Collections.singletonList(0x01020304L),
        p.getField(3).getVarintList());
    assertEquals(ByteString.copyFrom(hostId(5)),
        p.getField(4).getLengthDelimitedList().get(0));
    assertFalse("no ingest rate while unknown", p.hasField(5));
    assertEquals(4, p.asMap().size());
    // uid as uint32, the ingest rate when known
    CommitEntry rated = new CommitEntry("h:1", new byte[1], -1, hostId(5),
        Long.MAX_VALUE);
    p = UnknownFieldSet.parseFrom(withCommits(Collections.singletonList(
        rated)).getUnknownFields().getField(CommitListField.NUMBER)
        .getLengthDelimitedList().get(0));
    assertEquals(Collections.singletonList(0xffffffffL),
        p.getField(3).getVarintList());
    assertEquals(Collections.singletonList(Long.MAX_VALUE),
        p.getField(5).getVarintList());
    assertEquals(rated, CommitListField.commitsOf(withCommits(
        Collections.singletonList(rated))).get(0));
  }

  @Test(timeout = 10000)
  public void testStockParseOfResponseWithCommits() throws IOException {
    BlockOpResponseProto stock = BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS)
        .setFirstBadLink("")
        .setMessage("ok")
        .setReadOpChecksumInfo(ReadOpChecksumInfoProto.newBuilder()
            .setChecksum(DataTransferProtoUtil.toProto(
                DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, 512)))
            .setChunkOffset(0))
        .build();
    assertEquals(Collections.emptyList(), CommitListField.commitsOf(stock));

    BlockOpResponseProto.Builder b = stock.toBuilder();
    assertSame(b, CommitListField.withCommits(b, commits()));
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
    assertEquals(commits(), CommitListField.commitsOf(parsed));

    // replacing, and removing with an empty list
    List<CommitEntry> one = commits().subList(0, 1);
    assertEquals(one, CommitListField.commitsOf(
        CommitListField.withCommits(parsed.toBuilder(), one).build()));
    BlockOpResponseProto none = CommitListField.withCommits(
        parsed.toBuilder(), Collections.<CommitEntry>emptyList()).build();
    assertEquals(Collections.emptyList(), CommitListField.commitsOf(none));
    assertEquals(stock, none);
  }

  @Test(timeout = 10000)
  public void testOtherUnknownFieldsKept() {
    UnknownFieldSet foreign = UnknownFieldSet.newBuilder()
        .addField(4242, UnknownFieldSet.Field.newBuilder()
            .addVarint(7).build())
        .build();
    BlockOpResponseProto.Builder b = BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS).setUnknownFields(foreign);
    CommitListField.withCommits(b, commits());
    CommitListField.withCommits(b, Collections.<CommitEntry>emptyList());
    assertEquals(foreign, b.build().getUnknownFields());
  }

  @Test(timeout = 10000)
  public void testMalformedCommitField() throws IOException {
    BlockOpResponseProto fixed = reply(UnknownFieldSet.Field.newBuilder()
        .addFixed32(1).build(), CommitListField.NUMBER);
    assertIOException("hdfs-rdma commit list field 5154 is not"
        + " length-delimited", () -> CommitListField.commitsOf(fixed));

    ByteString good = entry().build().toByteString();
    BlockOpResponseProto bad = reply(UnknownFieldSet.Field.newBuilder()
        .addLengthDelimited(good)
        .addLengthDelimited(ByteString.copyFrom(new byte[] {(byte) 0x80}))
        .build(), CommitListField.NUMBER);
    assertIOException("hdfs-rdma commit entry does not parse",
        () -> CommitListField.commitsOf(bad));

    UnknownFieldSet.Field.Builder many = UnknownFieldSet.Field.newBuilder();
    for (int i = 0; i <= WireLimits.MAX_COMMIT_ENTRIES; i++) {
      many.addLengthDelimited(good);
    }
    assertIOException((WireLimits.MAX_COMMIT_ENTRIES + 1)
        + " hdfs-rdma commit entries, more than 512",
        () -> CommitListField.commitsOf(reply(many.build(),
            CommitListField.NUMBER)));
    many.clear();
    for (int i = 0; i < WireLimits.MAX_COMMIT_ENTRIES; i++) {
      many.addLengthDelimited(good);
    }
    assertEquals(WireLimits.MAX_COMMIT_ENTRIES, CommitListField.commitsOf(
        reply(many.build(), CommitListField.NUMBER)).size());
    List<CommitEntry> list = new ArrayList<>();
    for (int i = 0; i <= WireLimits.MAX_COMMIT_ENTRIES; i++) {
      list.add(commits().get(0));
    }
    assertThrows(IllegalArgumentException.class, () -> withCommits(list));
  }

  /**
   * An entry lacking a value the client needs, or holding one out of
   * range, is refused with an IOException naming it.
   */
  @Test(timeout = 10000)
  public void testMalformedCommitEntry() throws IOException {
    assertIOException("without xfer_addr", () -> read(new byte[0]));
    assertIOException("without xfer_addr", () -> read(entry()
        .clearXferAddr()));
    assertIOException("without worker_address", () -> read(entry()
        .clearWorkerAddress()));
    assertIOException("without uid", () -> read(entry().clearUid()));
    assertIOException("without host_id", () -> read(entry().clearHostId()));
    byte[] longAddr = new byte[WireLimits.MAX_STRING_BYTES + 1];
    Arrays.fill(longAddr, (byte) 'a');
    assertIOException("hdfs-rdma commit entry with an xferAddr of 0 bytes",
        () -> read(entry().setXferAddr("")));
    assertIOException("an xferAddr of 1025 bytes", () -> read(entry()
        .setXferAddrBytes(ByteString.copyFrom(longAddr))));
    assertIOException("a worker address of 0 bytes", () -> read(entry()
        .setWorkerAddress(ByteString.EMPTY)));
    assertIOException("a worker address of 4097 bytes", () -> read(entry()
        .setWorkerAddress(ByteString.copyFrom(new byte[4097]))));
    for (int n : new int[] {0, 15, 17}) {
      assertIOException("a host id of " + n + " bytes", () -> read(entry()
          .setHostId(ByteString.copyFrom(new byte[n]))));
    }
    // uint64 on the wire: 2^63 and above are negative longs
    assertIOException("ingest rate -5",
        () -> read(entry().setIngestBytesPerSecond(-5)));
    assertEquals(0, read(entry().setIngestBytesPerSecond(0))
        .getIngestBytesPerSecond());
    assertEquals(3_000_000_000L, read(entry()
        .setIngestBytesPerSecond(3_000_000_000L)).getIngestBytesPerSecond());
    // every truncation of a valid entry (its last field is needed)
    byte[] good = entry().build().toByteArray();
    for (int n = 0; n < good.length; n++) {
      byte[] cut = Arrays.copyOf(good, n);
      assertIOException("hdfs-rdma commit entry ", () -> read(cut));
    }
  }

  /**
   * An xferAddr that is not UTF-8 is a malformed entry like any other (an
   * IOException: the pipeline stays on TCP), even when its replacement
   * characters would make the decoded string longer than the bound.
   */
  @Test(timeout = 10000)
  public void testCommitEntryWithInvalidUtf8IsRefused() {
    for (int n : new int[] {1, 3, 400, WireLimits.MAX_STRING_BYTES}) {
      byte[] invalid = new byte[n];
      Arrays.fill(invalid, (byte) 0xff);
      assertIOException("xferAddr is not UTF-8", () -> read(entry()
          .setXferAddrBytes(ByteString.copyFrom(invalid))));
    }
  }

  /**
   * A newer peer's entry with fields this release does not know, of every
   * wire type: ignored, not refused.
   */
  @Test(timeout = 10000)
  public void testNewerPeersFieldsAreIgnored() throws IOException {
    CommitEntry expected = new CommitEntry("h:1", WORKER, 1000, hostId(4));
    UnknownFieldSet newer = UnknownFieldSet.newBuilder()
        .addField(6, UnknownFieldSet.Field.newBuilder().addVarint(-1L)
            .build())
        .addField(7, bytesField(new byte[5000]))
        .addField(8, UnknownFieldSet.Field.newBuilder().addFixed64(3)
            .addFixed32(4).build())
        .build();
    assertEquals(expected, read(entry().setUnknownFields(newer)));
    assertEquals(expected, read(newer.toByteString()
        .concat(entry().build().toByteString()).toByteArray()).get(0));
  }

  /**
   * A reply as the release before the protobuf payloads wrote it: its
   * entries (version 2, and version 1 of the listener-based release) in
   * field 5152. This release reads no commit from it, so a client or
   * DataNode whose mirror is of that release keeps the pipeline on TCP.
   */
  @Test(timeout = 10000)
  public void testPreviousReleasesFieldIsIgnored() throws IOException {
    byte[] addr = "10.0.0.2:9866".getBytes(StandardCharsets.UTF_8);
    ByteBuffer v1 = ByteBuffer.allocate(6 + addr.length);
    v1.putShort((short) 1).putShort((short) 19866)
        .putShort((short) addr.length).put(addr);
    BlockOpResponseProto old = reply(UnknownFieldSet.Field.newBuilder()
        .addLengthDelimited(ByteString.copyFrom(previousReleaseEntry(
            "10.0.0.2:9866", WORKER, 1000, hostId(2))))
        .addLengthDelimited(ByteString.copyFrom(v1.array())).build(),
        OLD_FIELD);
    assertEquals(Collections.emptyList(), CommitListField.commitsOf(old));
    BlockOpResponseProto both = CommitListField.withCommits(
        old.toBuilder(), commits()).build();
    assertEquals(2, both.getUnknownFields().getField(OLD_FIELD)
        .getLengthDelimitedList().size());
    assertEquals(commits(), CommitListField.commitsOf(both));
  }
}
