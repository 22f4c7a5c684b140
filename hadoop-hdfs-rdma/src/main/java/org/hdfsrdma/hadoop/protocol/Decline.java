package org.hdfsrdma.hadoop.protocol;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Why a pipeline offered UCX did not commit, as the DataNodes tell the
 * client: which DataNode stopped it and for what reason. It comes back up
 * the pipeline in place of a commit list, unchanged by the DataNodes
 * before the one that declined, so that the client can count the
 * pipeline by its cause and name the DataNode in its warning. A DataNode
 * running no hdfs-rdma sends none: the DataNode before it declines for
 * it ({@link Reason#STOCK}), and the client itself when it is the first.
 * Immutable; checked as {@link CommitEntry} is.
 */
public final class Decline {

  /** The causes a client tells apart; codes are wire values. */
  public enum Reason {
    /** The DataNode runs no hdfs-rdma: stock Hadoop, or no agent. */
    STOCK(1, "runs no hdfs-rdma (stock Hadoop, or started without the"
        + " agent)"),
    /** Its UCX side is off: the setting false, or UCX unavailable there. */
    OFF(2, "serves no UCX (dfs.datanode.rdma.enabled not true, or UCX"
        + " unavailable there: see its log)"),
    /** Data-transfer encryption or SASL integrity/privacy on its side. */
    PROTECTED(3, "requires data-transfer encryption or SASL integrity or"
        + " privacy, which UCX does not give"),
    /** Anything else (limits, a mirror that failed, a later release's). */
    REFUSED(4, "refused the block over UCX (see its log)");

    private final int code;
    private final String meaning;

    Reason(int code, String meaning) {
      this.code = code;
      this.meaning = meaning;
    }

    public int code() {
      return code;
    }

    /** What the reason means, for a log line naming the DataNode. */
    public String meaning() {
      return meaning;
    }

    /** The reason of {@code code}; a code this release does not know is
     * {@link #REFUSED}. */
    public static Reason of(int code) {
      for (Reason r : values()) {
        if (r.code == code) {
          return r;
        }
      }
      return REFUSED;
    }
  }

  private final String xferAddr;
  private final Reason reason;

  /**
   * @param xferAddr the declining DataNode's transfer address, 1 to
   *     {@link WireLimits#MAX_STRING_BYTES} bytes of UTF-8
   */
  public Decline(String xferAddr, Reason reason) {
    if (xferAddr == null || xferAddr.isEmpty() || xferAddr.getBytes(
        StandardCharsets.UTF_8).length > WireLimits.MAX_STRING_BYTES) {
      throw new IllegalArgumentException("bad xferAddr " + xferAddr);
    }
    if (reason == null) {
      throw new IllegalArgumentException("no reason");
    }
    this.xferAddr = xferAddr;
    this.reason = reason;
  }

  /**
   * A decline as a peer sent it: the address's length and encoding are
   * checked against this side's limits.
   *
   * @throws IOException when the address is empty, too long or not UTF-8
   */
  public static Decline received(byte[] xferAddr, int code)
      throws IOException {
    if (xferAddr == null || xferAddr.length == 0
        || xferAddr.length > WireLimits.MAX_STRING_BYTES) {
      throw new IOException("hdfs-rdma decline with an address of "
          + (xferAddr == null ? "no" : xferAddr.length) + " bytes");
    }
    try {
      return new Decline(StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(xferAddr)).toString(), Reason.of(code));
    } catch (CharacterCodingException e) {
      throw new IOException("hdfs-rdma decline address is not UTF-8");
    }
  }

  public String getXferAddr() {
    return xferAddr;
  }

  public Reason getReason() {
    return reason;
  }

  @Override
  public String toString() {
    return xferAddr + " " + reason.meaning();
  }
}
