package org.hdfsrdma.hadoop.compat;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.hdfsrdma.hadoop.protocol.ReadOffer;
import org.hdfsrdma.hadoop.protocol.WireLimits;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.util.RateLimitedLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;

/**
 * The DataNode's read of what a client offers in an op (a write's
 * request, a read's offer), made before Hadoop's Receiver reads the op,
 * without a copy of Receiver's code.
 *
 * <p>For {@code DataXceiver.run}, right after {@code readOp()} returned
 * the op and before {@code processOp} reads its varint-delimited proto:
 * marks the stream, reads and parses the op, and resets the stream, so
 * Hadoop then reads exactly the bytes it would have read without us.
 *
 * <p>Each peek returns null, without reading, when the stream does not
 * support mark; and null, after resetting, when the op is longer than
 * {@link WireLimits#PEEK_LIMIT} (its varint length is read first, so
 * nothing past the mark limit is ever read), when the stream ends within
 * the op, when the op does not parse, or when the offer in it is malformed
 * (logged at a bounded rate). In all those cases Hadoop's own parse then
 * behaves as it does in stock Hadoop, and the op is served stock.
 */
public final class OpPeek {

  private static final Logger LOG = LoggerFactory.getLogger(OpPeek.class);

  /** Malformed offers come from the network: logged at a bounded rate. */
  private static final RateLimitedLog BAD_OFFERS = RateLimitedLog.of(LOG);

  /** What one op offers, from the op's proto bytes. */
  private interface Offer<T> {
    /**
     * @throws InvalidProtocolBufferException when the op does not parse
     * @throws IOException when the offer in it is malformed
     */
    T of(byte[] op) throws IOException;
  }

  private OpPeek() {
  }

  /**
   * The request in the {@code writeBlock} op that {@code in} is about to
   * deliver, leaving {@code in} where it was.
   *
   * @throws IOException when reading {@code in} fails (after trying to
   *     reset it)
   */
  public static WriteRequest peekWriteRequest(DataInputStream in)
      throws IOException {
    return peek(in, "writeBlock",
        op -> WriteRequestField.requestOf(OpWriteBlockProto.parseFrom(op)));
  }

  /**
   * The offer in the {@code readBlock} op that {@code in} is about to
   * deliver, leaving {@code in} where it was.
   *
   * @throws IOException when reading {@code in} fails (after trying to
   *     reset it)
   */
  public static ReadOffer peekReadOffer(DataInputStream in)
      throws IOException {
    return peek(in, "readBlock",
        op -> ReadOfferField.offerOf(OpReadBlockProto.parseFrom(op)));
  }

  private static <T> T peek(DataInputStream in, String opName,
      Offer<T> offer) throws IOException {
    if (!in.markSupported()) {
      return null;
    }
    in.mark(WireLimits.PEEK_LIMIT);
    try {
      byte[] proto;
      try {
        int first = in.read();
        if (first < 0) {
          return null;
        }
        int len = CodedInputStream.readRawVarint32(first, in);
        if (len < 0 || len > WireLimits.PEEK_LIMIT - 5) {
          BAD_OFFERS.warn(opName + " op of " + len + " bytes, over the peek"
              + " limit " + WireLimits.PEEK_LIMIT
              + "; no hdfs-rdma offer read");
          return null;
        }
        proto = new byte[len];
        in.readFully(proto);
      } catch (EOFException | InvalidProtocolBufferException e) {
        // truncated op or length: Hadoop's own parse will say so
        LOG.debug("{} op unreadable; no hdfs-rdma offer", opName, e);
        return null;
      }
      try {
        T found = offer.of(proto);
        LOG.debug("Peeked {}", found);
        return found;
      } catch (InvalidProtocolBufferException e) {
        LOG.debug("{} op does not parse; no hdfs-rdma offer", opName, e);
        return null;
      } catch (IOException e) {
        BAD_OFFERS.warn("Ignoring an hdfs-rdma offer in a " + opName
            + " op: " + e.getMessage());
        return null;
      }
    } finally {
      in.reset();
    }
  }
}
