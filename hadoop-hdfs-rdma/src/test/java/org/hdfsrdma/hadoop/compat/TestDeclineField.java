package org.hdfsrdma.hadoop.compat;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;

import java.io.IOException;
import java.util.Arrays;
import java.util.Collections;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.DeclineProto;
import org.hdfsrdma.hadoop.protocol.CommitEntry;
import org.hdfsrdma.hadoop.protocol.Decline;
import org.hdfsrdma.hadoop.protocol.WireLimits;
import org.junit.Test;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;

/**
 * The decline in Hadoop's writeBlock reply: what this side writes reads
 * back the same, next to a commit list and Hadoop's own fields; what a
 * peer sends is checked against this side's limits, and a reason code
 * this release does not know reads as REFUSED.
 */
public class TestDeclineField {

  private static BlockOpResponseProto.Builder reply() {
    return BlockOpResponseProto.newBuilder().setStatus(Status.SUCCESS)
        .setFirstBadLink("");
  }

  private static BlockOpResponseProto withRaw(ByteString... values) {
    UnknownFieldSet.Field.Builder f = UnknownFieldSet.Field.newBuilder();
    for (ByteString v : values) {
      f.addLengthDelimited(v);
    }
    return reply().setUnknownFields(UnknownFieldSet.newBuilder()
        .addField(DeclineField.NUMBER, f.build()).build()).build();
  }

  @Test(timeout = 10_000)
  public void testRoundTripBesideTheCommitList() throws Exception {
    for (Decline.Reason r : Decline.Reason.values()) {
      BlockOpResponseProto.Builder b = CommitListField.withCommits(reply(),
          Collections.<CommitEntry>emptyList());
      BlockOpResponseProto sent = DeclineField.withDecline(
          DeclineField.withDecline(b, new Decline("dn:1", r)),
          new Decline("dn:2", r)).build();
      BlockOpResponseProto got = BlockOpResponseProto.parseFrom(
          sent.toByteString());
      Decline d = DeclineField.declineOf(got);
      assertEquals("the last one put replaces the first", "dn:2",
          d.getXferAddr());
      assertEquals(r, d.getReason());
      assertEquals(Status.SUCCESS, got.getStatus());
      assertEquals(0, CommitListField.commitsOf(got).size());
    }
    assertNull(DeclineField.declineOf(reply().build()));
  }

  @Test(timeout = 10_000)
  public void testWhatAPeerSendsIsChecked() throws Exception {
    ByteString ok = DeclineProto.newBuilder().setXferAddr("dn:1")
        .setReason(2).build().toByteString();
    assertEquals(Decline.Reason.OFF,
        DeclineField.declineOf(withRaw(ok)).getReason());
    // A later release's reason.
    assertEquals(Decline.Reason.REFUSED, DeclineField.declineOf(withRaw(
        DeclineProto.newBuilder().setXferAddr("dn:1").setReason(99)
            .build().toByteString())).getReason());
    assertThrows(IOException.class,
        () -> DeclineField.declineOf(withRaw(ok, ok)));
    assertThrows(IOException.class, () -> DeclineField.declineOf(withRaw(
        DeclineProto.newBuilder().setReason(1).build().toByteString())));
    assertThrows(IOException.class, () -> DeclineField.declineOf(withRaw(
        ByteString.copyFrom(new byte[] {(byte) 0xff, 0x01, 0x02}))));
    assertThrows(IOException.class, () -> DeclineField.declineOf(withRaw(
        DeclineProto.newBuilder().setXferAddrBytes(ByteString.copyFrom(
            new byte[] {(byte) 0xc3, 0x28})).build().toByteString())));
    byte[] long1 = new byte[WireLimits.MAX_STRING_BYTES + 1];
    Arrays.fill(long1, (byte) 'a');
    assertThrows(IOException.class, () -> DeclineField.declineOf(withRaw(
        DeclineProto.newBuilder().setXferAddrBytes(ByteString.copyFrom(
            long1)).build().toByteString())));
    assertThrows(IOException.class, () -> DeclineField.declineOf(withRaw(
        DeclineProto.newBuilder().setXferAddr("").build().toByteString())));
  }
}
