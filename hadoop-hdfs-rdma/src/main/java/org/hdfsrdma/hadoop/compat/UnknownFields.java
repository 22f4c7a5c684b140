package org.hdfsrdma.hadoop.compat;

import java.io.IOException;
import java.util.List;
import java.util.Map;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;

/**
 * One field among the unknown fields of a Hadoop message, where hdfs-rdma
 * keeps its own: Hadoop's generated code parses a field it does not know
 * into the message's {@link UnknownFieldSet} and writes it back on
 * serialisation.
 */
final class UnknownFields {

  private UnknownFields() {
  }

  /** @return a builder holding every field of {@code set} but one */
  static UnknownFieldSet.Builder without(UnknownFieldSet set, int number) {
    UnknownFieldSet.Builder b = UnknownFieldSet.newBuilder();
    for (Map.Entry<Integer, UnknownFieldSet.Field> e
        : set.asMap().entrySet()) {
      if (e.getKey() != number) {
        b.addField(e.getKey(), e.getValue());
      }
    }
    return b;
  }

  /**
   * @param what what the field holds, for the exception's message
   * @return the length-delimited values of field {@code number} of
   *     {@code set} in the order they came, empty when it has none
   * @throws IOException when the field is there with values of other wire
   *     types only
   */
  static List<ByteString> lengthDelimited(UnknownFieldSet set, int number,
      String what) throws IOException {
    UnknownFieldSet.Field f = set.getField(number);
    List<ByteString> values = f.getLengthDelimitedList();
    if (values.isEmpty() && set.hasField(number)) {
      throw new IOException(what + " field " + number
          + " is not length-delimited");
    }
    return values;
  }
}
