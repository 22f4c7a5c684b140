package org.hdfsrdma.hadoop.compat;

import java.io.IOException;
import java.util.List;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.ReadAnswerProto;
import org.hdfsrdma.hadoop.protocol.ReadAnswer;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;

/**
 * A DataNode's {@link ReadAnswer} in Hadoop's reply to the
 * {@code readBlock} op: one {@code ReadAnswerProto}
 * ({@code hdfs_rdma.proto}), length-delimited, in field {@link #NUMBER} of
 * {@code BlockOpResponseProto}. Read as a peer sent it: more than one
 * value, one that does not parse, lacks a value or holds one out of range
 * (its DataNode's entry checked as a commit's) is an {@link IOException};
 * a field this release does not know is ignored.
 */
public final class ReadAnswerField {

  /** Field number in {@code BlockOpResponseProto}, next to the offer's. */
  public static final int NUMBER = 5157;

  private ReadAnswerField() {
  }

  /** Puts {@code a} into {@code b}, replacing any answer it had. */
  public static BlockOpResponseProto.Builder withAnswer(
      BlockOpResponseProto.Builder b, ReadAnswer a) {
    ByteString payload = ReadAnswerProto.newBuilder()
        .setDataNode(CommitListField.toProto(a.getDataNode()))
        .setReadId(a.getReadId())
        .setPacketBytes(a.getPacketBytes())
        .setWindow(a.getWindow())
        .build().toByteString();
    UnknownFieldSet.Builder fields =
        UnknownFields.without(b.getUnknownFields(), NUMBER);
    fields.addField(NUMBER, UnknownFieldSet.Field.newBuilder()
        .addLengthDelimited(payload).build());
    return b.setUnknownFields(fields.build());
  }

  /**
   * @return the answer {@code resp} carries, or null when it has none
   * @throws IOException when it is malformed (see the class comment)
   */
  public static ReadAnswer answerOf(BlockOpResponseProto resp)
      throws IOException {
    List<ByteString> values = UnknownFields.lengthDelimited(
        resp.getUnknownFields(), NUMBER, "hdfs-rdma read answer");
    if (values.isEmpty()) {
      return null;
    }
    if (values.size() > 1) {
      throw new IOException(values.size()
          + " hdfs-rdma read answers, not 1");
    }
    ReadAnswerProto p;
    try {
      p = ReadAnswerProto.parseFrom(values.get(0));
    } catch (InvalidProtocolBufferException e) {
      throw new IOException("hdfs-rdma read answer does not parse: "
          + e.getMessage(), e);
    }
    String missing = !p.hasDataNode() ? "data_node"
        : !p.hasReadId() ? "read_id"
        : !p.hasPacketBytes() ? "packet_bytes"
        : !p.hasWindow() ? "window" : null;
    if (missing != null) {
      throw new IOException("hdfs-rdma read answer without " + missing);
    }
    return ReadAnswer.received(CommitListField.fromProto(p.getDataNode()),
        p.getReadId(), p.getPacketBytes(), p.getWindow());
  }
}
