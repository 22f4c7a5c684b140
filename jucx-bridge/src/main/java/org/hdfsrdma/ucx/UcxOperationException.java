package org.hdfsrdma.ucx;

import java.io.IOException;

/**
 * A UCX operation failed. The message names the peer and the operation so
 * that a log line or an HDFS pipeline-recovery message is self-explanatory.
 */
public class UcxOperationException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String peer;
  private final String operation;
  private final int ucsStatus;

  public UcxOperationException(String peer, String operation, int ucsStatus,
      String detail) {
    this(peer, operation, ucsStatus, detail, null);
  }

  public UcxOperationException(String peer, String operation, int ucsStatus,
      String detail, Throwable cause) {
    super(operation + " with peer " + peer + " failed: " + detail
        + (ucsStatus != 0 ? " (ucs status " + ucsStatus + ")" : ""), cause);
    this.peer = peer;
    this.operation = operation;
    this.ucsStatus = ucsStatus;
  }

  /** The remote side, as host:port. */
  public String getPeer() {
    return peer;
  }

  /** What was being done, for example "get of 65536 bytes". */
  public String getOperation() {
    return operation;
  }

  /** The UCS status code, 0 when the failure did not come from UCX. */
  public int getUcsStatus() {
    return ucsStatus;
  }
}
