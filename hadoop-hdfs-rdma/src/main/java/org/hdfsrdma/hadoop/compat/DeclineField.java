package org.hdfsrdma.hadoop.compat;

import java.io.IOException;
import java.util.List;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.DeclineProto;
import org.hdfsrdma.hadoop.protocol.Decline;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;

/**
 * A {@link Decline} in Hadoop's reply to the {@code writeBlock} op: one
 * {@code DeclineProto} ({@code hdfs_rdma.proto}), length-delimited, in
 * field {@link #NUMBER} of {@code BlockOpResponseProto}. Stock peers
 * ignore and drop it, as they do the commit list
 * ({@link CommitListField}). Read as a peer sent it: more than one value,
 * one that does not parse or lacks the address is an {@link IOException}.
 */
public final class DeclineField {

  /** Field number in {@code BlockOpResponseProto}, next to the commits. */
  public static final int NUMBER = 5155;

  private DeclineField() {
  }

  /** Puts {@code d} into {@code b}, replacing any decline it had. */
  public static BlockOpResponseProto.Builder withDecline(
      BlockOpResponseProto.Builder b, Decline d) {
    UnknownFieldSet.Builder fields =
        UnknownFields.without(b.getUnknownFields(), NUMBER);
    fields.addField(NUMBER, UnknownFieldSet.Field.newBuilder()
        .addLengthDelimited(DeclineProto.newBuilder()
            .setXferAddr(d.getXferAddr())
            .setReason(d.getReason().code()).build().toByteString())
        .build());
    return b.setUnknownFields(fields.build());
  }

  /**
   * @return the decline {@code resp} carries, or null when it has none
   * @throws IOException when it is malformed (see the class comment)
   */
  public static Decline declineOf(BlockOpResponseProto resp)
      throws IOException {
    List<ByteString> values = UnknownFields.lengthDelimited(
        resp.getUnknownFields(), NUMBER, "hdfs-rdma decline");
    if (values.isEmpty()) {
      return null;
    }
    if (values.size() > 1) {
      throw new IOException(values.size() + " hdfs-rdma declines, not 1");
    }
    DeclineProto p;
    try {
      p = DeclineProto.parseFrom(values.get(0));
    } catch (InvalidProtocolBufferException e) {
      throw new IOException("hdfs-rdma decline does not parse: "
          + e.getMessage(), e);
    }
    if (!p.hasXferAddr()) {
      throw new IOException("hdfs-rdma decline without xfer_addr");
    }
    return Decline.received(p.getXferAddrBytes().toByteArray(),
        p.getReason());
  }
}
