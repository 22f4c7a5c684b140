package org.hdfsrdma.ucx;

/** A UCX operation did not complete within its deadline. */
public class UcxTimeoutException extends UcxOperationException {
  private static final long serialVersionUID = 1L;

  public UcxTimeoutException(String peer, String operation, long timeoutMs) {
    super(peer, operation, 0, "no completion within " + timeoutMs + " ms");
  }
}
