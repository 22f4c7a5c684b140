package org.hdfsrdma.ucx;

/**
 * Receives the packet descriptors that arrive on a worker's connections.
 * Both methods run on the worker's progress thread: they must be quick and
 * must not block (hand the descriptor to another thread or start the get).
 */
public interface DescriptorHandler {

  /**
   * A descriptor passed validation.
   *
   * @param from the connection it arrived on; gets for it go over the same
   *     connection
   * @param descriptor a private copy, valid after this call returns
   */
  void onDescriptor(UcxConnection from, PacketDescriptor descriptor);

  /**
   * A descriptor failed validation and was dropped. The connection keeps
   * serving; the default only relies on the worker's warning log.
   */
  default void onMalformed(UcxConnection from,
      MalformedDescriptorException error) {
  }
}
