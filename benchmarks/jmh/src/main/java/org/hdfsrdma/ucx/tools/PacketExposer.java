package org.hdfsrdma.ucx.tools;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.hdfsrdma.ucx.HelloMessage;
import org.hdfsrdma.ucx.PacketDescriptor;
import org.hdfsrdma.ucx.RegionAnnouncement;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.StatusSlots;
import org.hdfsrdma.ucx.UcxContext;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxWorker;
import org.openucx.jucx.UcxUtils;

/**
 * The client process of a {@link GetBandwidth} run, a JVM of its own as an
 * HDFS client is: it connects to the getter, says hello, exposes a ring of
 * {@value #RING} packets in one region, announces it and sends one
 * descriptor per packet, as the write path does; then its worker serves
 * the getter's gets (over tcp the client's CPU sends the bytes) until its
 * standard input closes. Started by {@link #start}, which also fixes its
 * command line ({@code GetBandwidth expose ...}, read by {@link #main}).
 */
final class PacketExposer {

  /** Packets the client exposes and describes. */
  static final int RING = 64;
  /** The session the descriptors name. */
  private static final long SESSION = 1;
  private static final long WAIT_MS = GetBandwidth.WAIT_MS;

  private PacketExposer() {
  }

  /**
   * Starts the client process for {@code m}, connecting to the getter at
   * {@code getterAddress}; its output is this process's. Closing its
   * standard input ends it.
   */
  static Process start(byte[] getterAddress, Measurement m)
      throws IOException {
    List<String> command = new ArrayList<String>();
    command.add(System.getProperty("java.home") + File.separator + "bin"
        + File.separator + "java");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(GetBandwidth.class.getName());
    command.add("expose");
    command.add(hex(getterAddress));
    command.add(m.tls == null ? "" : m.tls);
    command.add(String.valueOf(m.errorHandling));
    command.add(String.valueOf(m.size));
    command.addAll(m.ucxConfig);
    return new ProcessBuilder(command).redirectOutput(
        ProcessBuilder.Redirect.INHERIT).redirectError(
            ProcessBuilder.Redirect.INHERIT).start();
  }

  /**
   * The client process's entry: {@code expose GETTER-ADDRESS-HEX TLS
   * ERRH SIZE [KEY VALUE]...}, as {@link #start} writes it.
   */
  static void main(String[] args) throws Exception {
    List<String> config = new ArrayList<String>(
        Arrays.asList(args).subList(5, args.length));
    expose(unhex(args[1]), Measurement.ucxOptions(args[2],
        Boolean.parseBoolean(args[3]), config), Integer.parseInt(args[4]));
  }

  private static void expose(byte[] getterAddress, UcxContext.Options options,
      int size) throws Exception {
    try (UcxContext context = new UcxContext(options);
         UcxWorker worker = new UcxWorker(context, "client").start();
         RegisteredBufferPool pool = new RegisteredBufferPool(context,
             "exposed", size, (long) size * RING, (long) size * RING,
             false)) {
      UcxEndpoint e = UcxEndpoint.connect(worker, getterAddress, "getter",
          WAIT_MS).get(WAIT_MS, TimeUnit.MILLISECONDS);
      ByteBuffer messages = ByteBuffer.allocateDirect(8192);
      long base = UcxUtils.getAddress(messages);
      StatusSlots slots = new StatusSlots(1);
      send(e, base, new HelloMessage().wrap(messages, 0, 8192)
          .encode(worker.address()).length(), slots);
      long[] tokens = new long[RING];
      for (int i = 0; i < RING; i++) {
        tokens[i] = pool.acquire(1000);
        ByteBuffer b = pool.buffer(tokens[i]);
        for (int j = 0; j < size; j += 4096) {
          b.put(j, (byte) i);
        }
      }
      send(e, base, new RegionAnnouncement().wrap(messages, 0, 8192).encode(
          SESSION, 1, pool.regionAddress(0), pool.regionLength(0),
          pool.regionKey(0)).length(), slots);
      for (int i = 0; i < RING; i++) {
        new PacketDescriptor().wrap(messages, 0).encode(SESSION, 1, 1, i,
            (long) i * size, 0, 1, pool.address(tokens[i]), 0, size);
        send(e, base, PacketDescriptor.LENGTH, slots);
      }
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
          StandardCharsets.UTF_8));
      while (in.readLine() != null) {
        // Serve gets until the getter closes our standard input.
      }
      e.close();
      for (long t : tokens) {
        pool.release(t);
      }
    }
  }

  /** Sends one message and waits until UCX is done with its bytes. */
  private static void send(UcxEndpoint e, long address, int length,
      StatusSlots slots) throws Exception {
    if (e.send(address, length, slots.address(0)) == 0) {
      return;
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (slots.inProgress(0)) {
      if (e.worker().progress() == 0) {
        Thread.yield();
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("a message to the getter was not sent in "
            + WAIT_MS + " ms");
      }
    }
    if (slots.status(0) < 0) {
      throw new IOException("sending to the getter failed: "
          + StatusSlots.describe(slots.status(0)));
    }
  }

  private static String hex(byte[] bytes) {
    StringBuilder sb = new StringBuilder(bytes.length * 2);
    for (byte b : bytes) {
      sb.append(Character.forDigit((b >> 4) & 0xF, 16))
          .append(Character.forDigit(b & 0xF, 16));
    }
    return sb.toString();
  }

  private static byte[] unhex(String s) {
    byte[] bytes = new byte[s.length() / 2];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return bytes;
  }
}
