package org.hdfsrdma.ucx;

import java.io.IOException;

/** A descriptor message failed validation; it is dropped, never used. */
public class MalformedDescriptorException extends IOException {
  private static final long serialVersionUID = 1L;

  public MalformedDescriptorException(String message) {
    super(message);
  }
}
