package org.hdfsrdma.hadoop;

import java.io.Closeable;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.hdfsrdma.hadoop.compat.WriteRequestField;

/**
 * A DataNode that is no DataNode: accepts the writeBlock op a real
 * DataNode relays to its mirror, notes whether it carried a UCX offer, and
 * answers with whatever reply a test put in {@link #reply}. Then it drains
 * the connection until the real DataNode closes it.
 */
final class FakeMirror implements Closeable {

  private final ServerSocket server;
  private final Thread thread;
  volatile BlockOpResponseProto reply;
  volatile boolean sawOffer;

  FakeMirror() throws IOException {
    server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    thread = new Thread(this::serve, "fake-mirror");
    thread.setDaemon(true);
    thread.start();
  }

  int port() {
    return server.getLocalPort();
  }

  String xferAddress() {
    return "127.0.0.1:" + port();
  }

  private void serve() {
    while (!server.isClosed()) {
      try (Socket s = server.accept()) {
        s.setSoTimeout(30_000);
        DataInputStream in = new DataInputStream(s.getInputStream());
        in.readShort(); // data transfer version
        in.readByte(); // op
        OpWriteBlockProto op = OpWriteBlockProto.parseDelimitedFrom(in);
        sawOffer = WriteRequestField.requestOf(op) != null;
        OutputStream out = s.getOutputStream();
        reply.writeDelimitedTo(out);
        out.flush();
        InputStream raw = s.getInputStream();
        byte[] drain = new byte[4096];
        while (raw.read(drain) >= 0) {
          // until the DataNode lets go
        }
      } catch (IOException e) {
        // next connection
      }
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
