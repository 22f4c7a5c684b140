package org.hdfsrdma.hadoop.protocol;

/**
 * How a DataNode whose UCX fails a block asks the client to continue over
 * TCP: an out-of-band pipeline ack (sequence number -2, Hadoop's
 * {@code PipelineAck.UNKOWN_SEQNO}) whose status for that DataNode is
 * {@code OOB_RESERVED3}, sent upstream through Hadoop's own
 * {@code PacketResponder.sendOOBResponse}. Hadoop's DataNodes relay
 * out-of-band acks upstream as they are, adding SUCCESS for themselves, so
 * the client learns which DataNode asked. Only clients that offered UCX
 * for the pipeline are sent one; such a client restarts the pipeline over
 * TCP with every DataNode instead of marking the DataNode bad, as a stock
 * client would for a status it does not know.
 */
public final class FallbackAck {

  /**
   * The number of the ack status: Hadoop's {@code Status.OOB_RESERVED3},
   * the last out-of-band status, reserved and unused by every release
   * the jar serves.
   */
  public static final int STATUS_NUMBER = 11;

  private FallbackAck() {
  }
}
