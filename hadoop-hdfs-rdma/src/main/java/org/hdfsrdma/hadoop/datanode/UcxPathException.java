package org.hdfsrdma.hadoop.datanode;

import java.io.IOException;

/**
 * The UCX path failed a block on this DataNode: a message refused, a get
 * failed or timed out, the endpoint back unreachable, no landing buffer,
 * no packet over UCX in time. UCX is an accelerator: the DataNode asks the
 * client to continue the block over TCP ({@code FallbackAck}) rather than
 * fail it, and the client restarts the pipeline with every DataNode.
 * Failures of the block itself (its socket closed, an interrupt) are other
 * exceptions.
 */
public class UcxPathException extends IOException {

  private static final long serialVersionUID = 1L;

  public UcxPathException(String message) {
    super(message);
  }

  public UcxPathException(String message, Throwable cause) {
    super(message, cause);
  }
}
