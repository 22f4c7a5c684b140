package org.hdfsrdma.ucx;

import java.io.IOException;

/**
 * A message failed validation; it is dropped, never used. A verdict on
 * input, not a fault of this code: it carries no stack trace, so that a
 * flood of junk costs its sender more than it costs the receiver.
 */
public class MalformedDescriptorException extends IOException {
  private static final long serialVersionUID = 1L;

  public MalformedDescriptorException(String message) {
    super(message);
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
