package org.hdfsrdma.ucx;

import java.nio.ByteBuffer;

/**
 * Receives the hdfs-rdma messages that arrive on a worker
 * ({@link UcxWorker#MESSAGE_AM_ID}), inside UCX's callback, on whichever
 * thread progresses the worker. Calls never overlap (UCX serializes them
 * under the worker's lock). An implementation must be quick, must not
 * block, must not progress the worker, and should not allocate per message;
 * it must validate every byte: the message may come from any peer that can
 * reach the worker's transports.
 */
public interface MessageHandler {

  /**
   * One message.
   *
   * @param message big-endian buffer holding the message in bytes
   *     [0, length); valid only during this call, its position and limit
   *     undefined
   * @param length the message's length, 1 to
   *     {@link UcxWorker#MAX_MESSAGE_BYTES}
   * @param replyEndpoint UCX's endpoint back to the sender (a
   *     {@code ucp_ep_h}), or 0; valid only during this call, for
   *     {@link RemoteRegion#open} and {@link RemoteRegion#startGet}
   */
  void onMessage(ByteBuffer message, int length, long replyEndpoint);
}
