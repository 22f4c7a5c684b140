package org.hdfsrdma.hadoop;

import java.io.File;
import java.nio.file.Files;
import java.util.Random;

import org.hdfsrdma.ucx.RoguePeer;

/**
 * A rogue UCX peer in a JVM of its own, for tests that kill it: connects
 * to the worker address in the file named by its argument and sends junk
 * until it is killed.
 */
public final class RogueMain {

  private RogueMain() {
  }

  public static void main(String[] args) throws Exception {
    byte[] address = Files.readAllBytes(new File(args[0]).toPath());
    Random random = new Random();
    try (RoguePeer rogue = new RoguePeer(null, address, 4096, 4)) {
      System.out.println("CONNECTED");
      System.out.flush();
      byte[] m = new byte[4096];
      while (true) {
        random.nextBytes(m);
        rogue.send(m);
      }
    }
  }
}
