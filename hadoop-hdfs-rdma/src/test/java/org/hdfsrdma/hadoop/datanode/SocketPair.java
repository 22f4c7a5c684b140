package org.hdfsrdma.hadoop.datanode;

import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

import org.apache.hadoop.net.SocketInputStream;

/**
 * A block's socket for the receive path's tests: a connected pair of
 * loopback sockets, the DataNode's end as Hadoop's.
 */
public final class SocketPair implements Closeable {

  public final SocketChannel upstream;
  public final SocketChannel accepted;
  public final SocketInputStream channel;
  public final DataInputStream in;

  public SocketPair() throws IOException {
    try (ServerSocketChannel server = ServerSocketChannel.open()) {
      server.bind(new InetSocketAddress("127.0.0.1", 0));
      upstream = SocketChannel.open(server.getLocalAddress());
      accepted = server.accept();
    }
    // As DataXceiver's: Hadoop's timeout stream (non-blocking channel).
    channel = new SocketInputStream(accepted, 30_000);
    in = new DataInputStream(new BufferedInputStream(channel, 4096));
  }

  @Override
  public void close() throws IOException {
    upstream.close();
    accepted.close();
  }
}
