package org.hdfsrdma.hadoop.compat;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;

import org.apache.hadoop.hdfs.protocol.datatransfer.DataTransferProtocol;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.hdfsrdma.hadoop.protocol.ReadOffer;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;

/**
 * The stream the hooks give {@code new Sender(...)}, so that the op
 * Hadoop's own Sender writes carries what the client offers (a write's
 * request, {@link WriteRequestField}; a read's offer,
 * {@link ReadOfferField}) without a copy of Sender's code.
 *
 * <p>{@code Sender.send} writes one op as
 * <pre>
 *   u16 DATA_TRANSFER_VERSION | u8 op code | varint n | n bytes of proto
 * </pre>
 * and then flushes. This stream buffers everything written until its
 * first {@code flush()}, then, if the buffered bytes are exactly one such
 * op of the expected kind ({@code WRITE_BLOCK} for a request,
 * {@code READ_BLOCK} for an offer), writes the op on with the field
 * appended to the proto (protobuf concatenation: Hadoop's fields keep
 * Sender's exact bytes, the varint length is rewritten) and flushes.
 * Anything else, another op or bytes that are not one complete op, goes on
 * unchanged (the latter logged). From the first flush on the stream
 * passes every byte straight through; closing it flushes, then closes the
 * stream under it.
 */
public final class OpRewriter extends FilterOutputStream {

  private static final Logger LOG =
      LoggerFactory.getLogger(OpRewriter.class);

  private final Op kind;
  /** The field to append, a serialised UnknownFieldSet. */
  private final byte[] field;
  /** Buffer of the first op; null once it went out. */
  private ByteArrayOutputStream op = new ByteArrayOutputStream(1024);

  private OpRewriter(OutputStream out, Op kind, byte[] field) {
    super(out);
    this.kind = kind;
    this.field = field;
  }

  /**
   * @param out the stream to the DataNode
   * @param request the request a {@code writeBlock} op is to carry, or
   *     null for none
   * @return the stream to give {@code new Sender(...)}: {@code out} itself
   *     when {@code request} is null
   */
  public static DataOutputStream withRequest(DataOutputStream out,
      WriteRequest request) {
    if (request == null) {
      return out;
    }
    return new DataOutputStream(new OpRewriter(out, Op.WRITE_BLOCK,
        WriteRequestField.asUnknownFields(request).toByteArray()));
  }

  /**
   * @param out the stream to the DataNode
   * @param offer the offer a {@code readBlock} op is to carry, or null for
   *     none
   * @return the stream to give {@code new Sender(...)}: {@code out} itself
   *     when {@code offer} is null
   */
  public static DataOutputStream withOffer(DataOutputStream out,
      ReadOffer offer) {
    if (offer == null) {
      return out;
    }
    return new DataOutputStream(new OpRewriter(out, Op.READ_BLOCK,
        ReadOfferField.asUnknownFields(offer).toByteArray()));
  }

  @Override
  public void write(int b) throws IOException {
    if (op != null) {
      op.write(b);
    } else {
      out.write(b);
    }
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    if (op != null) {
      op.write(b, off, len);
    } else {
      out.write(b, off, len);
    }
  }

  @Override
  public void flush() throws IOException {
    if (op != null && op.size() > 0) {
      byte[] bytes = op.toByteArray();
      op = null;
      out.write(rewrite(bytes));
    }
    out.flush();
  }

  /**
   * @return {@code frame} with the field appended to its proto when it is
   *     exactly one op of this stream's kind, else {@code frame}
   */
  private byte[] rewrite(byte[] frame) throws IOException {
    // u16 version, u8 op code, varint length (1 to 5 bytes)
    if (frame.length < 4) {
      LOG.warn("Not one data-transfer op ({} bytes); sent without the"
          + " hdfs-rdma field", frame.length);
      return frame;
    }
    if (frame[2] != kind.code) {
      return frame;
    }
    int version = ((frame[0] & 0xff) << 8) | (frame[1] & 0xff);
    int protoLen;
    int protoStart;
    try {
      CodedInputStream c =
          CodedInputStream.newInstance(frame, 3, frame.length - 3);
      protoLen = c.readRawVarint32();
      protoStart = 3 + c.getTotalBytesRead();
    } catch (InvalidProtocolBufferException e) {
      protoLen = -1;
      protoStart = frame.length;
    }
    if (version != DataTransferProtocol.DATA_TRANSFER_VERSION
        || protoLen < 0 || protoLen != frame.length - protoStart) {
      LOG.warn("Not exactly one {} op of data-transfer version {}"
          + " (version {}, {} bytes, proto length {}); sent without the"
          + " hdfs-rdma field", kind, DataTransferProtocol
          .DATA_TRANSFER_VERSION, version, frame.length, protoLen);
      return frame;
    }
    ByteArrayOutputStream result =
        new ByteArrayOutputStream(frame.length + field.length + 5);
    CodedOutputStream c = CodedOutputStream.newInstance(result);
    c.writeRawBytes(frame, 0, 3);
    c.writeRawVarint32(protoLen + field.length);
    c.writeRawBytes(frame, protoStart, protoLen);
    c.writeRawBytes(field);
    c.flush();
    return result.toByteArray();
  }
}
