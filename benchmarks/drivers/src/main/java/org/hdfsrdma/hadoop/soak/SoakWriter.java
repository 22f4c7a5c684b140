package org.hdfsrdma.hadoop.soak;

import java.io.EOFException;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.util.Tool;
import org.hdfsrdma.hadoop.bench.ToolArgs;

/**
 * One long-lived client JVM of the soak test (dev-support/soak.sh): N
 * threads writing continuously, until a deadline, a mix of what HDFS
 * clients do, each file read back and compared byte for byte:
 * <ul>
 * <li>whole files of {@code -min-size} (1 KiB unless given) to
 * {@code -max-size} (log-uniform, odd sizes,
 * writes of 1 byte to 1 MiB), replication 1 to 3, with a block size of a
 * quarter of {@code -max-size} so the larger files span blocks;</li>
 * <li>streams that {@code hflush} or {@code hsync} after each of 3 to 8
 * segments, one flushed prefix read back while the stream is open (what
 * hflush promises readers);</li>
 * <li>appends to the thread's earlier files.</li>
 * </ul>
 * Content comes from {@link SoakData} (a seed per file), so nothing big is
 * kept. Each thread keeps at most {@code -keep-files} files and its share
 * of {@code -keep-bytes}, deleting its oldest, so the disk stays bounded.
 * The pipeline shape is the JVM's ({@code -D dfs.client.rdma.distribution},
 * a generic option).
 *
 * <p>Every {@code -interval-seconds} it prints one line {@code SOAK
 * key=value ...}: totals (files, bytes written and verified, mismatches,
 * errors), per operation kind the count, mean and max latency over the
 * interval, and this JVM's hdfs-rdma gauges ({@code ucx.*}: registered
 * pool bytes, connections opened). A client has no http server; to read
 * those gauges it starts the metrics system as a daemon does (no sinks)
 * and reads its own {@code HdfsRdma} bean from the platform MBean server.
 * The last line is {@code SOAK-END}. Exits 1 on any mismatch or error.
 */
public final class SoakWriter extends Configured implements Tool {

  /** Service name of this JVM's metrics system, the JMX beans' service=. */
  static final String METRICS_PREFIX = "SoakWriter";
  static final String[] UCX_GAUGES = {"ClientPoolRegisteredBytes",
      "ClientPoolInUseBytes", "ClientConnects", "DataBytesSent",
      "CallbackFailures", "StrayMessages"};
  private static final int MAX_CHUNK = 1 << 20;

  private final PrintStream out = System.out;
  private FileSystem fs;
  private int threads = 8;
  private long seconds = 120;
  private long minSize = 1024;
  private long maxSize = 256L << 20;
  private long keepBytes = 1L << 30;
  private int keepFiles = 3;
  private long intervalMs = 60_000;
  private long seed = 1;
  private Path dir = new Path("/soak");
  private volatile boolean stopping;

  private final AtomicLong files = new AtomicLong();
  private final AtomicLong written = new AtomicLong();
  private final AtomicLong verified = new AtomicLong();
  private final AtomicLong mismatches = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();
  private final AtomicLong deleted = new AtomicLong();
  private final Latency[] latencies = {new Latency("write"),
      new Latency("flush"), new Latency("append"), new Latency("read")};

  /** Per operation kind: count, total and max latency since last taken. */
  private static final class Latency {
    final String name;
    long count;
    long totalNanos;
    long maxNanos;

    Latency(String name) {
      this.name = name;
    }

    synchronized void add(long nanos) {
      count++;
      totalNanos += nanos;
      maxNanos = Math.max(maxNanos, nanos);
    }

    /** "name_n=.. name_ms_avg=.. name_ms_max=..", then reset. */
    synchronized String take() {
      String s = String.format(Locale.ROOT,
          "%s_n=%d %s_ms_avg=%.1f %s_ms_max=%.1f", name, count, name,
          count == 0 ? 0.0 : totalNanos / 1e6 / count, name, maxNanos / 1e6);
      count = 0;
      totalNanos = 0;
      maxNanos = 0;
      return s;
    }
  }

  /** A file a thread wrote and keeps until it is deleted. */
  private static final class SoakFile {
    final Path path;
    final long seed;
    long length;

    SoakFile(Path path, long seed, long length) {
      this.path = path;
      this.seed = seed;
      this.length = length;
    }
  }

  /** What one thread owns: its random source, buffers and files. */
  private final class Writer implements Runnable {
    final int id;
    final Random rnd;
    final byte[] buf = new byte[MAX_CHUNK];
    final byte[] scratch = new byte[MAX_CHUNK];
    final ArrayDeque<SoakFile> kept = new ArrayDeque<SoakFile>();
    long keptBytes;
    long next;

    Writer(int id) {
      this.id = id;
      this.rnd = new Random(seed * 1_000_003L + id);
    }

    @Override
    public void run() {
      while (!stopping) {
        SoakFile f = null;
        String what = "?";
        try {
          int dice = rnd.nextInt(100);
          if (dice < 25 && !kept.isEmpty()) {
            what = "append";
            f = pick();
            append(f);
          } else if (dice < 55) {
            what = "flush";
            f = flushStream();
          } else {
            what = "write";
            f = plainWrite();
          }
          verify(f);
          trim();
        } catch (Throwable e) {
          errors.incrementAndGet();
          synchronized (out) {
            out.printf("SOAK-ERROR thread=%d op=%s path=%s: %s%n", id, what,
                f == null ? "-" : f.path, e);
            e.printStackTrace(out);
          }
          // The file's state is unknown now: forget it.
          if (f != null && kept.remove(f)) {
            keptBytes -= f.length;
            deleteQuietly(f.path);
          }
          sleepQuietly(1000);
        }
      }
    }

    SoakFile pick() {
      int i = rnd.nextInt(kept.size());
      for (SoakFile f : kept) {
        if (i-- == 0) {
          return f;
        }
      }
      throw new IllegalStateException("no file");
    }

    Path newPath() {
      return new Path(dir, String.format(Locale.ROOT, "t%02d-%06d", id,
          next++));
    }

    long size(long max) {
      double lo = Math.log(minSize);
      double hi = Math.log(Math.max(minSize + 1, max));
      return (long) Math.exp(lo + rnd.nextDouble() * (hi - lo));
    }

    short replication() {
      return (short) (1 + rnd.nextInt(3));
    }

    long blockSize() {
      // A multiple of the 512-byte checksum chunk, at least 1 MiB.
      return Math.max(1L << 20, (maxSize / 4) & ~511L);
    }

    SoakFile keep(Path p, long fileSeed, long length) {
      SoakFile f = new SoakFile(p, fileSeed, length);
      kept.addLast(f);
      keptBytes += length;
      files.incrementAndGet();
      return f;
    }

    SoakFile plainWrite() throws IOException {
      Path p = newPath();
      long fileSeed = rnd.nextLong();
      long size = size(maxSize);
      long t0 = System.nanoTime();
      try (FSDataOutputStream o = fs.create(p, true, 4096, replication(),
          blockSize())) {
        writeRange(o, fileSeed, 0, size);
      }
      latencies[0].add(System.nanoTime() - t0);
      return keep(p, fileSeed, size);
    }

    SoakFile flushStream() throws IOException {
      Path p = newPath();
      long fileSeed = rnd.nextLong();
      long size = size(maxSize / 2);
      int segments = 3 + rnd.nextInt(6);
      int readAt = rnd.nextInt(segments);
      long pos = 0;
      long t0 = System.nanoTime();
      try (FSDataOutputStream o = fs.create(p, true, 4096, replication(),
          blockSize())) {
        for (int s = 0; s < segments; s++) {
          long end = size * (s + 1) / segments;
          writeRange(o, fileSeed, pos, end - pos);
          pos = end;
          if (rnd.nextBoolean()) {
            o.hflush();
          } else {
            o.hsync();
          }
          if (s == readAt) {
            // hflush's promise: a new reader sees every flushed byte.
            long r0 = System.nanoTime();
            compare(p, fileSeed, pos);
            latencies[3].add(System.nanoTime() - r0);
          }
        }
      }
      latencies[1].add(System.nanoTime() - t0);
      return keep(p, fileSeed, size);
    }

    void append(SoakFile f) throws IOException {
      long more = size(maxSize / 4);
      long t0 = System.nanoTime();
      try (FSDataOutputStream o = fs.append(f.path)) {
        if (rnd.nextBoolean()) {
          long half = more / 2;
          writeRange(o, f.seed, f.length, half);
          o.hflush();
          writeRange(o, f.seed, f.length + half, more - half);
        } else {
          writeRange(o, f.seed, f.length, more);
        }
      }
      latencies[2].add(System.nanoTime() - t0);
      f.length += more;
      keptBytes += more;
    }

    /** Writes the file's bytes [from, from + len) in chunks of 1 B-1 MiB. */
    void writeRange(FSDataOutputStream o, long fileSeed, long from, long len)
        throws IOException {
      long pos = from;
      long end = from + len;
      while (pos < end) {
        int max = rnd.nextInt(4) == 0 ? 4096 : MAX_CHUNK;
        int n = (int) Math.min(end - pos, 1 + rnd.nextInt(max));
        SoakData.fill(fileSeed, pos, buf, 0, n);
        o.write(buf, 0, n);
        pos += n;
        written.addAndGet(n);
      }
    }

    void verify(SoakFile f) throws IOException {
      long len = fs.getFileStatus(f.path).getLen();
      if (len != f.length) {
        mismatch(f.path, "length " + len + ", wrote " + f.length);
      }
      long t0 = System.nanoTime();
      compare(f.path, f.seed, f.length);
      latencies[3].add(System.nanoTime() - t0);
    }

    /** Reads the first {@code length} bytes of {@code p} and compares. */
    void compare(Path p, long fileSeed, long length) throws IOException {
      try (FSDataInputStream in = fs.open(p)) {
        long pos = 0;
        while (pos < length) {
          int n = (int) Math.min(length - pos, 1 + rnd.nextInt(MAX_CHUNK));
          try {
            in.readFully(buf, 0, n);
          } catch (EOFException e) {
            mismatch(p, "end of file before byte " + (pos + n) + " of "
                + length);
            return;
          }
          int bad = SoakData.firstMismatch(fileSeed, pos, buf, 0, n,
              scratch);
          if (bad >= 0) {
            mismatch(p, "first differing byte at offset " + (pos + bad)
                + " of " + length);
            return;
          }
          pos += n;
          verified.addAndGet(n);
        }
      }
    }

    void trim() throws IOException {
      long share = keepBytes / threads;
      while (!kept.isEmpty() && (kept.size() > keepFiles
          || keptBytes > share)) {
        SoakFile f = kept.removeFirst();
        keptBytes -= f.length;
        if (!fs.delete(f.path, false)) {
          throw new IOException("could not delete " + f.path);
        }
        deleted.incrementAndGet();
      }
    }
  }

  private void mismatch(Path p, String what) {
    mismatches.incrementAndGet();
    synchronized (out) {
      out.printf("SOAK-MISMATCH path=%s: %s%n", p, what);
    }
  }

  private void deleteQuietly(Path p) {
    try {
      fs.delete(p, false);
    } catch (IOException e) {
      synchronized (out) {
        out.printf("SOAK-WARN could not delete %s: %s%n", p, e);
      }
    }
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** This JVM's hdfs-rdma gauges as " ucx.Name=value ...", or "". */
  private static String ucxGauges() {
    MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
    StringBuilder sb = new StringBuilder();
    try {
      ObjectName name = new ObjectName("Hadoop:service=" + METRICS_PREFIX
          + ",name=HdfsRdma");
      AttributeList list = mbs.getAttributes(name, UCX_GAUGES);
      for (Attribute a : list.asList()) {
        sb.append(" ucx.").append(a.getName()).append('=')
            .append(a.getValue());
      }
    } catch (InstanceNotFoundException e) {
      return ""; // no UCX runtime (yet) in this JVM
    } catch (Exception e) {
      return " ucx.error=" + e.getClass().getSimpleName();
    }
    return sb.toString();
  }

  private String progress(String tag, long startNanos) {
    StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
        "%s t=%.1f files=%d written=%d verified=%d mismatches=%d errors=%d"
            + " deleted=%d", tag, (System.nanoTime() - startNanos) / 1e9,
        files.get(), written.get(), verified.get(), mismatches.get(),
        errors.get(), deleted.get()));
    for (Latency l : latencies) {
      sb.append(' ').append(l.take());
    }
    sb.append(ucxGauges());
    return sb.toString();
  }

  private void parse(String[] args) {
    for (Map.Entry<String, String> option
        : ToolArgs.pairs(args, 0).entrySet()) {
      String v = option.getValue();
      switch (option.getKey()) {
      case "-threads":
        threads = Integer.parseInt(v);
        break;
      case "-seconds":
        seconds = Long.parseLong(v);
        break;
      case "-min-size":
        minSize = Long.parseLong(v);
        break;
      case "-max-size":
        maxSize = Long.parseLong(v);
        break;
      case "-keep-bytes":
        keepBytes = Long.parseLong(v);
        break;
      case "-keep-files":
        keepFiles = Integer.parseInt(v);
        break;
      case "-interval-seconds":
        intervalMs = (long) (Double.parseDouble(v) * 1000);
        break;
      case "-seed":
        seed = Long.parseLong(v);
        break;
      case "-dir":
        dir = new Path(v);
        break;
      default:
        throw new IllegalArgumentException("unknown option " + option.getKey());
      }
    }
  }

  @Override
  public int run(String[] args) throws Exception {
    parse(args);
    Configuration conf = getConf();
    // Before the first write starts the UCX runtime, whose source then
    // publishes into this metrics system's JMX beans.
    DefaultMetricsSystem.initialize(METRICS_PREFIX);
    fs = FileSystem.get(conf);
    fs.mkdirs(dir);
    out.printf(Locale.ROOT, "SOAK-START threads=%d seconds=%d max-size=%d"
        + " keep-bytes=%d distribution=%s dir=%s%n", threads, seconds,
        maxSize, keepBytes, conf.get("dfs.client.rdma.distribution", "auto"),
        dir);
    long start = System.nanoTime();
    long deadline = start + TimeUnit.SECONDS.toNanos(seconds);
    List<Thread> running = new ArrayList<Thread>();
    for (int i = 0; i < threads; i++) {
      Thread t = new Thread(new Writer(i), "soak-writer-" + i);
      t.start();
      running.add(t);
    }
    long nextReport = start + TimeUnit.MILLISECONDS.toNanos(intervalMs);
    while (System.nanoTime() < deadline) {
      long now = System.nanoTime();
      long wait = Math.min(deadline, nextReport) - now;
      if (wait > 0) {
        TimeUnit.NANOSECONDS.sleep(wait);
      }
      if (System.nanoTime() >= nextReport) {
        nextReport += TimeUnit.MILLISECONDS.toNanos(intervalMs);
        synchronized (out) {
          out.println(progress("SOAK", start));
        }
      }
    }
    stopping = true;
    // Each thread finishes the operation it is in (at most a -max-size
    // write and its read-back).
    long joinBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
    for (Thread t : running) {
      t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(
          joinBy - System.nanoTime())));
      if (t.isAlive()) {
        errors.incrementAndGet();
        synchronized (out) {
          out.printf("SOAK-ERROR %s did not finish its operation%n",
              t.getName());
          for (StackTraceElement e : t.getStackTrace()) {
            out.println("\tat " + e);
          }
        }
      }
    }
    boolean ok = mismatches.get() == 0 && errors.get() == 0;
    synchronized (out) {
      out.println(progress("SOAK-END", start) + " status="
          + (ok ? "ok" : "failed"));
    }
    return ok ? 0 : 1;
  }

  public static void main(String[] args) {
    ToolArgs.runAndExit(new SoakWriter(), args);
  }
}
