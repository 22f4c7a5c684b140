package org.hdfsrdma.hadoop.compat;

import java.io.IOException;
import java.util.List;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.WriteRequestProto;
import org.hdfsrdma.hadoop.protocol.WriteRequest;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;

/**
 * The client's {@link WriteRequest} in Hadoop's {@code writeBlock} op: a
 * {@code WriteRequestProto} ({@code hdfs_rdma.proto}), length-delimited, in
 * field {@link #NUMBER} of {@code OpWriteBlockProto}.
 *
 * <p>Hadoop's messages are generated for the full protobuf runtime, which
 * keeps unknown fields on parse and writes them back on serialisation: a
 * stock Hadoop peer parses the op and ignores the request, and since
 * nothing in stock Hadoop relays it, a stock DataNode anywhere in the
 * pipeline drops it, and the pipeline stays on TCP (DESIGN.md section 1).
 * Nothing read from the network is trusted: a request that does not
 * parse, lacks a value or holds one out of range is an
 * {@link IOException}; a field of {@code WriteRequestProto} this release
 * does not know (a newer peer's) is ignored.
 */
public final class WriteRequestField {

  /**
   * Field number of the request in {@code OpWriteBlockProto}: far above
   * the fields Hadoop has given its data-transfer messages (all below
   * about 20, through Hadoop 3), so that no newer Hadoop peer parses our
   * bytes as a field of its own, and outside protobuf's reserved range
   * 19000-19999. New with the protobuf payload: earlier releases put a
   * hand-encoded request in field 5151, which this one neither writes nor
   * reads, and they ignore this field as any unknown one (no parse error,
   * no refusal), so a pipeline mixing releases stays on TCP.
   */
  public static final int NUMBER = 5153;

  private WriteRequestField() {
  }

  /**
   * @return {@code op} with {@code r} in field {@link #NUMBER}, replacing
   *     any request it had; every other field is kept
   */
  public static OpWriteBlockProto withRequest(OpWriteBlockProto op,
      WriteRequest r) {
    UnknownFieldSet fields = UnknownFields.without(op.getUnknownFields(),
        NUMBER).mergeFrom(asUnknownFields(r)).build();
    return op.toBuilder().setUnknownFields(fields).build();
  }

  /** @return a set of one field, {@link #NUMBER}, holding {@code r} */
  static UnknownFieldSet asUnknownFields(WriteRequest r) {
    WriteRequestProto.Builder p = WriteRequestProto.newBuilder()
        .setNonce(ByteString.copyFrom(r.getNonce()))
        .setPacketSize(r.getPacketSize())
        .setFeeders(r.feeders());
    if (r.socketDescriptors()) {
      p.setSocketDescriptors(true);
    }
    ByteString payload = p.build().toByteString();
    return UnknownFieldSet.newBuilder().addField(NUMBER,
        UnknownFieldSet.Field.newBuilder().addLengthDelimited(payload)
            .build()).build();
  }

  /**
   * @return the request in {@code op}, or null when it has none. Should the
   *     field occur more than once, the last occurrence counts, as protobuf
   *     does for a singular field.
   * @throws IOException when the field is not length-delimited or its
   *     request is malformed (see the class comment)
   */
  public static WriteRequest requestOf(OpWriteBlockProto op)
      throws IOException {
    List<ByteString> values = UnknownFields.lengthDelimited(
        op.getUnknownFields(), NUMBER, "hdfs-rdma write request");
    if (values.isEmpty()) {
      return null;
    }
    WriteRequestProto p;
    try {
      p = WriteRequestProto.parseFrom(values.get(values.size() - 1));
    } catch (InvalidProtocolBufferException e) {
      throw new IOException("hdfs-rdma write request does not parse: "
          + e.getMessage(), e);
    }
    String missing = !p.hasNonce() ? "nonce"
        : !p.hasPacketSize() ? "packet_size"
        : !p.hasFeeders() ? "feeders" : null;
    if (missing != null) {
      throw new IOException("hdfs-rdma write request without " + missing);
    }
    return WriteRequest.received(p.getNonce().toByteArray(),
        p.getPacketSize(), p.getFeeders())
        .withSocketDescriptors(p.getSocketDescriptors());
  }
}
