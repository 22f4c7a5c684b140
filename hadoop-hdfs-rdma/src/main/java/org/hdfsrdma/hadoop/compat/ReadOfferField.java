package org.hdfsrdma.hadoop.compat;

import java.io.IOException;
import java.util.List;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.hdfsrdma.hadoop.compat.proto.HdfsRdmaProtos.ReadOfferProto;
import org.hdfsrdma.hadoop.protocol.ReadOffer;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;

/**
 * A reader's {@link ReadOffer} in Hadoop's {@code readBlock} op: one
 * {@code ReadOfferProto} ({@code hdfs_rdma.proto}), length-delimited, in
 * field {@link #NUMBER} of {@code OpReadBlockProto}. A stock DataNode
 * parses the op and ignores the offer, and the read is stock. Read as a
 * peer sent it: more than one value, one that does not parse, lacks a
 * value or holds one out of range is an {@link IOException}; a field of
 * {@code ReadOfferProto} this release does not know is ignored.
 */
public final class ReadOfferField {

  /** Field number in {@code OpReadBlockProto}, after the write path's. */
  public static final int NUMBER = 5156;

  private ReadOfferField() {
  }

  /**
   * @return {@code op} with {@code offer} in field {@link #NUMBER},
   *     replacing any it had; every other field is kept
   */
  public static OpReadBlockProto withOffer(OpReadBlockProto op,
      ReadOffer offer) {
    UnknownFieldSet fields = UnknownFields.without(op.getUnknownFields(),
        NUMBER).mergeFrom(asUnknownFields(offer)).build();
    return op.toBuilder().setUnknownFields(fields).build();
  }

  /** @return a set of one field, {@link #NUMBER}, holding {@code offer} */
  static UnknownFieldSet asUnknownFields(ReadOffer offer) {
    ByteString payload = ReadOfferProto.newBuilder()
        .setClientKey(ByteString.copyFrom(offer.getClientKey()))
        .setPacketBytes(offer.getPacketBytes())
        .setWindow(offer.getWindow())
        .build().toByteString();
    return UnknownFieldSet.newBuilder().addField(NUMBER,
        UnknownFieldSet.Field.newBuilder().addLengthDelimited(payload)
            .build()).build();
  }

  /**
   * @return the offer in {@code op}, or null when it has none
   * @throws IOException when it is malformed (see the class comment)
   */
  public static ReadOffer offerOf(OpReadBlockProto op) throws IOException {
    List<ByteString> values = UnknownFields.lengthDelimited(
        op.getUnknownFields(), NUMBER, "hdfs-rdma read offer");
    if (values.isEmpty()) {
      return null;
    }
    if (values.size() > 1) {
      throw new IOException(values.size() + " hdfs-rdma read offers, not 1");
    }
    ReadOfferProto p;
    try {
      p = ReadOfferProto.parseFrom(values.get(0));
    } catch (InvalidProtocolBufferException e) {
      throw new IOException("hdfs-rdma read offer does not parse: "
          + e.getMessage(), e);
    }
    String missing = !p.hasClientKey() ? "client_key"
        : !p.hasPacketBytes() ? "packet_bytes"
        : !p.hasWindow() ? "window" : null;
    if (missing != null) {
      throw new IOException("hdfs-rdma read offer without " + missing);
    }
    return ReadOffer.received(p.getClientKey().toByteArray(),
        p.getPacketBytes(), p.getWindow());
  }
}
