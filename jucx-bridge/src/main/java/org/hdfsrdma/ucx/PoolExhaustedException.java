package org.hdfsrdma.ucx;

import java.io.IOException;

/** No registered buffer became free within the caller's timeout. */
public class PoolExhaustedException extends IOException {
  private static final long serialVersionUID = 1L;

  public PoolExhaustedException(String message) {
    super(message);
  }
}
