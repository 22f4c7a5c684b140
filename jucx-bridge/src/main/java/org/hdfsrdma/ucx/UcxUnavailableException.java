package org.hdfsrdma.ucx;

import java.io.IOException;

/** UCX cannot be used on this host; callers fall back to TCP. */
public class UcxUnavailableException extends IOException {
  private static final long serialVersionUID = 1L;

  public UcxUnavailableException(String message) {
    super(message);
  }

  public UcxUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
