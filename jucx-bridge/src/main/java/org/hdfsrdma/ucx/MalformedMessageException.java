package org.hdfsrdma.ucx;

import java.io.IOException;

/**
 * A peer's message, or what it names, failed validation: a header, length,
 * checksum or field of a {@link PacketDescriptor}, {@link RegionAnnouncement}
 * or {@link HelloMessage}, the packed remote key an announcement carries,
 * or the shared-memory segment it points to. The message says what was
 * wrong; the message is dropped, never used.
 *
 * <p>A verdict on input, not a fault of this code: it carries no stack
 * trace, so that a flood of junk costs its sender more than it costs the
 * receiver.
 */
public class MalformedMessageException extends IOException {
  private static final long serialVersionUID = 1L;

  public MalformedMessageException(String message) {
    super(message);
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
