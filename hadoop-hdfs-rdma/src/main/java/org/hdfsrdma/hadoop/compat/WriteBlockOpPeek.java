package org.hdfsrdma.hadoop.compat;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.hdfsrdma.hadoop.protocol.WireLimits;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;

/**
 * The DataNode's read of the client's request in a {@code writeBlock} op,
 * made before Hadoop's Receiver reads the op, without a copy of
 * Receiver's code.
 */
public final class WriteBlockOpPeek {

  private static final Logger LOG =
      LoggerFactory.getLogger(WriteBlockOpPeek.class);

  /** Malformed offers come from the network: logged at a bounded rate. */
  private static final RateLimitedLog BAD_OFFERS = RateLimitedLog.of(LOG);

  private WriteBlockOpPeek() {
  }

  /**
   * The request in the {@code writeBlock} op that {@code in} is about to
   * deliver, leaving {@code in} where it was.
   *
   * <p>For {@code DataXceiver.run}, right after {@code readOp()} returned
   * {@code WRITE_BLOCK} and before {@code processOp} reads the op's
   * varint-delimited {@code OpWriteBlockProto}: marks {@code in}, reads and
   * parses the op, and resets {@code in}, so Hadoop then reads exactly the
   * bytes it would have read without us.
   *
   * <p>Returns null, without reading, when {@code in} does not support
   * mark; returns null, after resetting, when the op is longer than
   * {@link WireLimits#PEEK_LIMIT} (its varint length is read first, so
   * nothing past the mark limit is ever read), when the stream ends within
   * the op, when the op does not parse, or when its request is malformed
   * (logged). In all those cases Hadoop's own parse then behaves as it does
   * in stock Hadoop, and the pipeline stays on TCP.
   *
   * @throws IOException when reading {@code in} fails (after trying to
   *     reset it)
   */
  public static WriteRequest peekWriteRequest(DataInputStream in)
      throws IOException {
    if (!in.markSupported()) {
      return null;
    }
    in.mark(WireLimits.PEEK_LIMIT);
    try {
      OpWriteBlockProto op;
      try {
        int first = in.read();
        if (first < 0) {
          return null;
        }
        int len = CodedInputStream.readRawVarint32(first, in);
        if (len < 0 || len > WireLimits.PEEK_LIMIT - 5) {
          BAD_OFFERS.warn("writeBlock op of " + len + " bytes, over the peek"
              + " limit " + WireLimits.PEEK_LIMIT
              + "; no hdfs-rdma request read");
          return null;
        }
        byte[] proto = new byte[len];
        in.readFully(proto);
        op = OpWriteBlockProto.parseFrom(proto);
      } catch (EOFException | InvalidProtocolBufferException e) {
        // truncated or malformed op: Hadoop's own parse will say so
        LOG.debug("writeBlock op unreadable; no hdfs-rdma request", e);
        return null;
      }
      try {
        WriteRequest r = WriteRequestField.requestOf(op);
        LOG.debug("Peeked {}", r);
        return r;
      } catch (IOException e) {
        BAD_OFFERS.warn("Ignoring an hdfs-rdma request: " + e.getMessage());
        return null;
      }
    } finally {
      in.reset();
    }
  }
}
