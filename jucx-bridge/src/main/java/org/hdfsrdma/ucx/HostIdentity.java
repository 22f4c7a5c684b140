package org.hdfsrdma.ucx;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * Who this process is, as far as UCX's shared memory cares: its user and
 * its host (kernel boot and IPC namespace). UCX creates its shared-memory
 * segments and FIFOs readable and writable by their owner only, and SysV
 * segment ids mean something only inside one IPC namespace, so two
 * processes can talk over shared memory only when both match. A client
 * compares a DataNode's identity with its own before it tries.
 */
public final class HostIdentity {

  /** Length of {@link #hostId()}. */
  public static final int HOST_ID_LENGTH = 16;

  private static final byte[] HOST_ID = computeHostId();

  private HostIdentity() {
  }

  /**
   * 16 bytes naming this kernel boot and IPC namespace: SHA-256 of
   * /proc/sys/kernel/random/boot_id and /proc/self/ns/ipc. Processes in
   * separate containers of one host (own IPC namespace) differ.
   */
  public static byte[] hostId() {
    return HOST_ID.clone();
  }

  /** This process's effective user id, or -1 when it cannot be known. */
  public static int uid() {
    if (!NativeIntrospection.isAvailable()) {
      return -1;
    }
    try {
      return NativeUcx.euid();
    } catch (UnsatisfiedLinkError e) {
      return -1;
    }
  }

  /**
   * Whether a peer of {@code hostId} running as {@code uid} can share
   * memory with this process.
   */
  public static boolean canShareMemoryWith(byte[] hostId, int uid) {
    int own = uid();
    return own >= 0 && own == uid && Arrays.equals(HOST_ID, hostId);
  }

  private static byte[] computeHostId() {
    String boot = read("/proc/sys/kernel/random/boot_id");
    String ipc;
    try {
      ipc = Files.readSymbolicLink(Paths.get("/proc/self/ns/ipc")).toString();
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      ipc = "unknown-ipc-namespace";
    }
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update(boot.getBytes(StandardCharsets.UTF_8));
      sha.update((byte) 0);
      sha.update(ipc.getBytes(StandardCharsets.UTF_8));
      return Arrays.copyOf(sha.digest(), HOST_ID_LENGTH);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 unavailable", e);
    }
  }

  private static String read(String path) {
    try {
      return new String(Files.readAllBytes(Paths.get(path)),
          StandardCharsets.UTF_8).trim();
    } catch (IOException | SecurityException e) {
      // No boot id: a random one, so that nothing is taken for shared.
      return "unknown-" + System.nanoTime() + "-" + Math.random();
    }
  }
}
