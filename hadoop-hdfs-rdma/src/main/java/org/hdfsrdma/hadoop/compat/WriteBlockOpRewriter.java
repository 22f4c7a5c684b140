package org.hdfsrdma.hadoop.compat;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;

import org.apache.hadoop.hdfs.protocol.datatransfer.DataTransferProtocol;
import org.apache.hadoop.hdfs.protocol.datatransfer.Op;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;

/**
 * The stream the patched DataStreamer and DataXceiver give
 * {@code new Sender(...)}, so that the {@code writeBlock} op Hadoop's own
 * Sender writes carries the request ({@link WriteRequestField}) without a
 * copy of Sender's code.
 *
 * <p>{@code Sender.send} writes one op as
 * <pre>
 *   u16 DATA_TRANSFER_VERSION | u8 op code | varint n | n bytes of proto
 * </pre>
 * and then flushes. This stream buffers everything written until its
 * first {@code flush()}, then, if the buffered bytes are exactly one such
 * {@code WRITE_BLOCK} op, writes the op on with the request's field
 * appended to the proto (protobuf concatenation: Hadoop's fields keep
 * Sender's exact bytes, the varint length is rewritten) and flushes.
 * Anything else, another op or bytes that are not one complete op, goes on
 * unchanged (the latter logged). From the first flush on the stream
 * passes every byte straight through; closing it flushes, then closes the
 * stream under it.
 */
public final class WriteBlockOpRewriter extends FilterOutputStream {

  private static final Logger LOG =
      LoggerFactory.getLogger(WriteBlockOpRewriter.class);

  private final WriteRequest request;
  /** Buffer of the first op; null once it went out. */
  private ByteArrayOutputStream op = new ByteArrayOutputStream(1024);

  private WriteBlockOpRewriter(OutputStream out, WriteRequest request) {
    super(out);
    this.request = request;
  }

  /**
   * @param out the stream to the DataNode
   * @param request the request to carry, or null for none
   * @return the stream to give {@code new Sender(...)}: {@code out} itself
   *     when {@code request} is null
   */
  public static DataOutputStream opOut(DataOutputStream out,
      WriteRequest request) {
    if (request == null) {
      return out;
    }
    return new DataOutputStream(new WriteBlockOpRewriter(out, request));
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
      out.write(rewrite(bytes, request));
    }
    out.flush();
  }

  /**
   * @return {@code frame} with {@code request}'s field appended to its
   *     proto when it is exactly one WRITE_BLOCK op, else {@code frame}
   */
  private static byte[] rewrite(byte[] frame, WriteRequest request)
      throws IOException {
    // u16 version, u8 op code, varint length (1 to 5 bytes)
    if (frame.length < 4) {
      LOG.warn("Not one data-transfer op ({} bytes); sent without the"
          + " hdfs-rdma request", frame.length);
      return frame;
    }
    if (frame[2] != Op.WRITE_BLOCK.code) {
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
      LOG.warn("Not exactly one writeBlock op of data-transfer version {}"
          + " (version {}, {} bytes, proto length {}); sent without the"
          + " hdfs-rdma request", DataTransferProtocol.DATA_TRANSFER_VERSION,
          version, frame.length, protoLen);
      return frame;
    }
    byte[] field = WriteRequestField.asUnknownFields(request).toByteArray();
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
