package org.hdfsrdma.hadoop.bench;

import java.io.EOFException;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.util.Tool;

/**
 * One client JVM of a read workload of {@code benchmarks/run.sh --reads}
 * ({@code hdfsrdma_bench/reads.py}): a long-lived application reading
 * HDFS files, through Hadoop's public FileSystem API only ({@code open},
 * {@code read}, positional {@code readFully}, {@code close}), so the same
 * class measures stock HDFS and the UCX read path.
 *
 * <p>The files are {@code -dir}/f000000... of {@code -size} bytes, each
 * file {@code i} holding {@link AppContent} of shift id {@code i}. Modes,
 * the first argument after Hadoop's generic options:
 * <ul>
 * <li>{@code prepare}: writes the {@code -files} files at replication
 * {@code -rep} where they are not there yet with that length (not
 * measured).</li>
 * <li>{@code seq}: {@code -threads} threads started together; thread
 * {@code t} reads files {@code t, t + threads, ...} of the first
 * {@code -files} whole, in reads of {@code -read} bytes, {@code -passes}
 * times; the latency of each file is its open, reads and close.</li>
 * <li>{@code pread}: {@code -threads} threads, each making
 * {@code -count} positional reads of {@code -read} bytes at random
 * offsets (a fixed seed per thread) of file {@code t mod files}, through
 * one open stream per thread, as Parquet and ORC readers do; the latency
 * of each read is its {@code readFully}.</li>
 * </ul>
 * Before the measured phase each thread reads its first file (or makes
 * a tenth of its reads) once, unrecorded: connections made, the UCX
 * runtime started. Every byte read is compared with what the file holds
 * after its read is timed; a difference fails the run. The comparing is
 * no part of a latency, and its time ({@code verify_ns}, the longest of
 * any thread's) is left out of the throughput. Latencies go into
 * arrays allocated before the measured phase and then into
 * {@code -lat-file} as {@link AppWorkload} writes them; the last line is
 * an {@code APP-RESULT} line of the same keys.
 */
public final class ReadWorkload extends Configured implements Tool {

  private final PrintStream out = System.out;
  private FileSystem fs;

  private String mode;
  private Path dir;
  private short rep;
  private int files;
  private long size;
  private int read;
  private int threads;
  private int passes;
  private int count;
  private File latFile;

  private AppContent content;
  private CountDownLatch gate;
  private long totalBytes;
  private long totalBlocks;

  /** The options, each with its default ("" where it has none). */
  private static final String[][] OPTIONS = {{"-dir", ""}, {"-rep", "3"},
      {"-files", "1"}, {"-size", "1048576"}, {"-read", "1048576"},
      {"-threads", "1"}, {"-passes", "1"}, {"-count", "100"},
      {"-lat-file", ""}};

  private void parse(String[] args) {
    if (args.length == 0 || !Arrays.asList("prepare", "seq", "pread")
        .contains(args[0])) {
      throw new IllegalArgumentException(
          "usage: prepare|seq|pread -dir PATH ...");
    }
    mode = args[0];
    Map<String, String> given = ToolArgs.pairs(args, 1);
    Map<String, String> o = new HashMap<>();
    for (String[] option : OPTIONS) {
      o.put(option[0], given.getOrDefault(option[0], option[1]));
    }
    given.keySet().removeAll(o.keySet());
    if (!given.isEmpty() || o.get("-dir").isEmpty()) {
      throw new IllegalArgumentException("unknown options " + given.keySet()
          + " or no -dir");
    }
    dir = new Path(o.get("-dir"));
    rep = Short.parseShort(o.get("-rep"));
    files = Integer.parseInt(o.get("-files"));
    size = Long.parseLong(o.get("-size"));
    read = Integer.parseInt(o.get("-read"));
    threads = Integer.parseInt(o.get("-threads"));
    passes = Integer.parseInt(o.get("-passes"));
    count = Integer.parseInt(o.get("-count"));
    latFile = o.get("-lat-file").isEmpty() ? null : new File(o.get(
        "-lat-file"));
    if (files < 1 || size < 1 || read < 1 || threads < 1 || passes < 1
        || count < 1 || rep < 1 || read > size) {
      throw new IllegalArgumentException(
          "counts and sizes must be > 0, -read at most -size");
    }
  }

  private Path file(int i) {
    return new Path(dir, String.format(Locale.ROOT, "f%06d", i));
  }

  // -- prepare --------------------------------------------------------------

  private void prepare() throws IOException {
    for (int i = 0; i < files; i++) {
      Path p = file(i);
      if (fs.exists(p) && fs.getFileStatus(p).getLen() == size) {
        continue;
      }
      int shift = AppContent.shift(i);
      try (FSDataOutputStream o = fs.create(p, true, 4096, rep,
          fs.getDefaultBlockSize(p))) {
        long pos = 0;
        while (pos < size) {
          int n = (int) Math.min(content.maxSlice(), size - pos);
          o.write(content.array(), content.offset(shift, pos), n);
          pos += n;
        }
      }
    }
  }

  // -- the readers ----------------------------------------------------------

  /** One reader thread: its latencies, span, bytes and failure. */
  private final class Reader implements Runnable {
    final int id;
    final byte[] buf = new byte[read];
    final long[] lat;
    int samples;
    long first;
    long last;
    long bytes;
    long verified;
    /** Time spent comparing in the measured phase, not reading. */
    long verifyNanos;
    Throwable error;

    Reader(int id) {
      this.id = id;
      int own = (files - id + threads - 1) / threads;
      this.lat = new long[mode.equals("seq") ? own * passes : count];
    }

    @Override
    public void run() {
      try {
        if (mode.equals("seq")) {
          readWhole(id, false);
          gate.await();
          first = System.nanoTime();
          for (int pass = 0; pass < passes; pass++) {
            for (int i = id; i < files; i += threads) {
              lat[samples++] = readWhole(i, true);
            }
          }
        } else {
          preads(Math.max(1, count / 10), false);
          gate.await();
          first = System.nanoTime();
          preads(count, true);
        }
        last = System.nanoTime();
      } catch (Throwable e) {
        error = e;
      }
    }

    /** Reads file i whole; the time of its open, reads and close. */
    private long readWhole(int i, boolean measured) throws IOException {
      Path p = file(i);
      int shift = AppContent.shift(i);
      long spent = 0;
      long t0 = System.nanoTime();
      FSDataInputStream in = fs.open(p);
      try {
        long pos = 0;
        spent += System.nanoTime() - t0;
        while (pos < size) {
          int want = (int) Math.min(buf.length, size - pos);
          t0 = System.nanoTime();
          int n = in.read(buf, 0, want);
          spent += System.nanoTime() - t0;
          if (n < 0) {
            throw new EOFException(p + ": ends at byte " + pos + " of "
                + size);
          }
          verify(p, shift, pos, n, measured);
          pos += n;
        }
        if (measured) {
          bytes += pos;
        }
      } finally {
        t0 = System.nanoTime();
        in.close();
        spent += System.nanoTime() - t0;
      }
      return spent;
    }

    /** n positional reads at random offsets of this thread's file. */
    private void preads(int n, boolean measured) throws IOException {
      int i = id % files;
      Path p = file(i);
      int shift = AppContent.shift(i);
      Random random = new Random(0x7ead + id * 31L + (measured ? 1 : 0));
      long span = size - read + 1;
      try (FSDataInputStream in = fs.open(p)) {
        for (int k = 0; k < n; k++) {
          long pos = (long) (random.nextDouble() * span);
          long t0 = System.nanoTime();
          in.readFully(pos, buf, 0, read);
          long t1 = System.nanoTime();
          verify(p, shift, pos, read, measured);
          if (measured) {
            lat[samples++] = t1 - t0;
            bytes += read;
          }
        }
      }
    }

    private void verify(Path p, int shift, long pos, int n,
        boolean measured) throws IOException {
      long t0 = System.nanoTime();
      if (!ByteBuffer.wrap(buf, 0, n).equals(ByteBuffer.wrap(
          content.array(), content.offset(shift, pos), n))) {
        int bad = content.firstMismatch(shift, pos, buf, n);
        throw new IOException(p + ": byte " + (pos + Math.max(0, bad))
            + " differs from what was written");
      }
      verified += n;
      if (measured) {
        verifyNanos += System.nanoTime() - t0;
      }
    }
  }

  private List<Reader> readAll() throws Exception {
    gate = new CountDownLatch(1);
    List<Reader> readers = new ArrayList<>();
    List<Thread> running = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Reader r = new Reader(t);
      Thread th = new Thread(r, "app-reader-" + t);
      readers.add(r);
      running.add(th);
      th.start();
    }
    gate.countDown();
    for (Thread th : running) {
      th.join();
    }
    for (Reader r : readers) {
      if (r.error != null) {
        throw new IOException("reader thread " + r.id + " failed", r.error);
      }
    }
    return readers;
  }

  /** Length and replication of every file; counts their bytes and blocks. */
  private void check() throws IOException {
    for (int i = 0; i < files; i++) {
      FileStatus st = fs.getFileStatus(file(i));
      if (st.getLen() != size || st.getReplication() != rep) {
        throw new IOException(file(i) + ": length " + st.getLen()
            + " replication " + st.getReplication() + ", expected " + size
            + " and " + rep);
      }
      totalBytes += size;
      totalBlocks += (size + st.getBlockSize() - 1) / st.getBlockSize();
    }
  }

  @Override
  public int run(String[] args) throws Exception {
    parse(args);
    Configuration conf = getConf();
    fs = FileSystem.get(conf);
    content = new AppContent(read);
    out.printf(Locale.ROOT, "APP-START mode=%s dir=%s read-rdma=%s%n", mode,
        dir, conf.get("dfs.client.rdma.read.enabled", "unset"));
    long start = System.nanoTime();
    long end;
    long measured = 0;
    long verified = 0;
    long verifyNanos = 0;
    int samples = 0;
    long[] lat = new long[0];
    if (mode.equals("prepare")) {
      prepare();
      end = System.nanoTime();
    } else {
      if (mode.equals("pread") && threads > files) {
        throw new IllegalArgumentException("-threads above -files");
      }
      List<Reader> readers = readAll();
      start = Long.MAX_VALUE;
      end = Long.MIN_VALUE;
      for (Reader r : readers) {
        start = Math.min(start, r.first);
        end = Math.max(end, r.last);
        measured += r.bytes;
        verified += r.verified;
        verifyNanos = Math.max(verifyNanos, r.verifyNanos);
        samples += r.samples;
      }
      lat = new long[samples];
      int at = 0;
      for (Reader r : readers) {
        System.arraycopy(r.lat, 0, lat, at, r.samples);
        at += r.samples;
      }
    }
    check();
    if (latFile != null) {
      AppWorkload.writeLatencies(latFile, lat, samples);
    }
    out.printf(Locale.ROOT, "APP-RESULT mode=%s start_ns=%d end_ns=%d"
        + " measured_bytes=%d measured_files=%d records=%d samples=%d"
        + " bytes=%d blocks=%d verified_bytes=%d verify_ns=%d status=ok%n",
        mode, start, end, measured, mode.equals("seq") ? samples : 0,
        mode.equals("pread") ? samples : 0, samples, totalBytes,
        totalBlocks, verified, verifyNanos);
    return 0;
  }

  public static void main(String[] args) {
    ToolArgs.runAndExit(new ReadWorkload(), args);
  }
}
