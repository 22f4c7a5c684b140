package org.hdfsrdma.ucx;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A SysV segment of another process, optionally of another user: native/'s
 * {@code shm_fixture} (native/test/shm_fixture.c). The segment is already
 * marked for removal, so it goes with the fixture process, which ends when
 * its standard input closes: {@link #close()}, or this JVM dying.
 */
final class ShmFixture implements AutoCloseable {

  final int shmid;
  /** The fixture process's address of the segment. */
  final long ownerAddress;
  final long size;
  private final Process process;

  private ShmFixture(Process process, int shmid, long ownerAddress,
      long size) {
    this.process = process;
    this.shmid = shmid;
    this.ownerAddress = ownerAddress;
    this.size = size;
  }

  static File executable() {
    File dir = new File(System.getProperty("hdfsrdma.native.build.dir",
        "../native/target/cmake"));
    File exe = new File(dir, "shm_fixture");
    if (!exe.canExecute()) {
      throw new AssertionError(exe + " is missing: build native/ first"
          + " (mvn -pl native,jucx-bridge ...)");
    }
    return exe;
  }

  /**
   * A segment of {@code size} bytes filled with 0xA5, owned by {@code uid}
   * (or by this user when {@code uid} is negative).
   */
  static ShmFixture start(long size, int uid) throws IOException,
      InterruptedException {
    List<String> command = new ArrayList<String>();
    command.add(executable().getPath());
    command.add(String.valueOf(size));
    if (uid >= 0) {
      command.add(String.valueOf(uid));
    }
    Process p = new ProcessBuilder(command)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(
        p.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    if (line == null || !line.startsWith("SHMID ")) {
      p.destroyForcibly();
      throw new IOException("shm_fixture " + command + " said " + line);
    }
    String[] parts = line.split(" ");
    return new ShmFixture(p, Integer.parseInt(parts[1]),
        Long.decode(parts[2]), size);
  }

  @Override
  public void close() throws InterruptedException {
    try {
      process.getOutputStream().close();
    } catch (IOException ignored) {
      // Killed below if it does not end.
    }
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
