package org.hdfsrdma.hadoop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;

/**
 * The writer of {@link TestKillMatrix}, in a JVM of its own so that the
 * test can kill or stop it. It writes {@link #data} of a seed to a file
 * at replication 3, pauses at a given offset (hflushed there or not),
 * and tells on stdout, one line each, what the test needs to know:
 * <ul>
 * <li>{@code PIPELINE a,b,c}: the transfer addresses of its first block's
 * pipeline, in pipeline order, as its DataStreamer holds them;</li>
 * <li>{@code ACKED n}: an hflush of the first n bytes returned;</li>
 * <li>{@code READY n}: n bytes written, waiting for {@code GO} on
 * stdin;</li>
 * <li>{@code CLOSED n}: close returned, n bytes in all;</li>
 * <li>{@code FAILED why} (exit code 3): the write failed with an
 * IOException, cleanly.</li>
 * </ul>
 * After {@code GO} it writes the rest in steps of {@link #STEP} bytes,
 * each hflushed when hflush is on.
 *
 * <p>Arguments: path, seed, total length, pause offset, hflush
 * ({@code true}/{@code false}), then "key=value" settings of its client.
 */
public final class KillMatrixWriter {

  /** Bytes written before the pipeline is reported. */
  static final int FIRST = 128 * 1024;
  /** Bytes between hflushes after the pause. */
  static final int STEP = 256 * 1024;
  /** Exit code of a write that failed with an IOException. */
  static final int FAILED = 3;

  private KillMatrixWriter() {
  }

  /** The bytes a writer of {@code seed} writes. */
  static byte[] data(long seed, int length) {
    byte[] b = new byte[length];
    new Random(seed).nextBytes(b);
    return b;
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = System.out;
    Path path = new Path(args[0]);
    byte[] data = data(Long.parseLong(args[1]), Integer.parseInt(args[2]));
    int pause = Integer.parseInt(args[3]);
    boolean hflush = Boolean.parseBoolean(args[4]);
    Configuration conf = new Configuration();
    for (int i = 5; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      conf.set(kv[0], kv[1]);
    }
    try {
      FileSystem fs = FileSystem.newInstance(
          URI.create(conf.get("fs.defaultFS")), conf);
      FSDataOutputStream stream = fs.create(path, true, 4096, (short) 3,
          conf.getLong("dfs.blocksize", 1024 * 1024));
      DFSOutputStream dfs = (DFSOutputStream)
          ((HdfsDataOutputStream) stream).getWrappedStream();
      int first = Math.min(FIRST, pause);
      stream.write(data, 0, first);
      // A full packet is queued: the DataStreamer sets its pipeline up.
      long deadline = System.nanoTime() + 120_000_000_000L;
      DatanodeInfo[] pipeline;
      while ((pipeline = dfs.getPipeline()) == null) {
        if (System.nanoTime() - deadline > 0) {
          throw new IOException("no pipeline after 120 s");
        }
        Thread.sleep(10);
      }
      StringBuilder line = new StringBuilder("PIPELINE ");
      for (int i = 0; i < pipeline.length; i++) {
        line.append(i == 0 ? "" : ",").append(pipeline[i].getXferAddr());
      }
      out.println(line);
      out.flush();
      stream.write(data, first, pause - first);
      if (hflush) {
        stream.hflush();
        out.println("ACKED " + pause);
      }
      out.println("READY " + pause);
      out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(
          System.in, StandardCharsets.UTF_8));
      String go = in.readLine();
      if (!"GO".equals(go)) {
        throw new IOException("expected GO, read " + go);
      }
      for (int at = pause; at < data.length;) {
        int n = Math.min(STEP, data.length - at);
        stream.write(data, at, n);
        at += n;
        if (hflush) {
          stream.hflush();
          out.println("ACKED " + at);
          out.flush();
        }
      }
      stream.close();
      out.println("CLOSED " + data.length);
      out.flush();
      fs.close();
    } catch (IOException e) {
      out.println("FAILED " + e);
      e.printStackTrace(out);
      out.flush();
      System.exit(FAILED);
    }
    System.exit(0);
  }
}
