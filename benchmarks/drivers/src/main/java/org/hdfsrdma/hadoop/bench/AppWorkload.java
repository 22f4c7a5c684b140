package org.hdfsrdma.hadoop.bench;

import java.io.EOFException;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.util.Tool;

/**
 * One client JVM of an application-shaped workload of
 * {@code benchmarks/run.sh --apps} ({@code hdfsrdma_bench/apps.py}), the
 * way a long-lived application writes to HDFS rather than the way
 * {@code hdfs dfs -put} does: one JVM, warmed up, many files or many
 * flushes. It uses only Hadoop's public FileSystem API of 2.9
 * ({@code create}, {@code write}, {@code hflush}, {@code hsync},
 * {@code close}, {@code getFileStatus}, {@code open}), so the same class
 * measures stock HDFS, the drop-in jar with UCX off and the UCX path; the
 * harness runs it from a jar of this package only, nothing else of
 * hdfs-rdma on its class path.
 *
 * <p>Four modes, the first argument after Hadoop's generic options:
 * <ul>
 * <li>{@code writer}: writes {@code -files} files of {@code -size} bytes
 * at replication {@code -rep}, one after the other, in writes of
 * {@code -write-size} bytes; times each file from {@code create} to the
 * return of {@code close}. With {@code -threads N}, N threads started
 * together each do so with files of their own (the measured span: the
 * first {@code create} to the last {@code close} of any thread).</li>
 * <li>{@code wal}: {@code -threads} logs, one file each at replication
 * {@code -rep}, each appending records of {@code -record} bytes and
 * calling {@code hflush} (or {@code hsync}: {@code -sync hsync}) after
 * every record, for {@code -seconds}; times each record from before its
 * {@code write} to the return of its flush.</li>
 * <li>{@code mixed}: both at once in one JVM, as a region server flushes
 * and compacts beside its write-ahead log: {@code -threads} writer
 * threads as in {@code writer}, and one log of {@code -record} records
 * flushed with {@code hflush}, appending from the writers' start until
 * the last of them closed its last file (at most {@code -seconds}); the
 * writers' span and bytes, the log's records and latencies.</li>
 * <li>{@code idle}: after its warm-up, which connects it to the DataNodes
 * (and starts UCX), keeps its FileSystem open without a call for
 * {@code -seconds}, as a long-lived application does between writes; the
 * harness reads the JVM's CPU and the DataNodes' meanwhile.</li>
 * </ul>
 * Warm-up first, unrecorded ({@code -warmup-files} files of
 * {@code -warmup-size} bytes; for logs then {@code -warmup-seconds} of
 * records), then, with {@code -ready FILE -go FILE}, it creates the ready
 * file and waits for the go file, so that the harness starts several
 * JVMs' measured phases together. Latencies go into arrays allocated
 * before the measured phase (nothing is allocated per record by this
 * class), and afterwards, as big-endian 64-bit nanoseconds, into
 * {@code -lat-file}. Then it checks what it wrote: every file's length
 * and replication by {@code getFileStatus}, and the content of a sample
 * of up to {@code -verify-bytes} bytes read back (whole files, or a log's
 * head and tail).
 *
 * <p>Its last line on stdout is {@code APP-RESULT key=value ...}: the
 * measured phase's start and end ({@code System.nanoTime}, which on Linux
 * is CLOCK_MONOTONIC, the clock the harness's own time.monotonic reads,
 * so phases of several JVMs can be put on one time line), bytes and
 * files measured, everything written (warm-up included) and its blocks,
 * the bytes verified, and {@code status=ok}. Any error or mismatch
 * prints {@code APP-ERROR ...} and exits 1.
 */
public final class AppWorkload extends Configured implements Tool {

  /** Most records a log's latency array holds per second of run. */
  static final int MAX_RATE = 50_000;
  /** Most latency slots of one JVM: 256 MiB of longs. */
  static final long MAX_SLOTS = 1L << 25;
  private static final int READ_CHUNK = 1 << 20;

  private final PrintStream out = System.out;
  private FileSystem fs;

  private String mode;
  private Path dir;
  private short rep = 3;
  private int files = 1;
  private long size = 1 << 20;
  private int writeSize = 1 << 20;
  private int warmupFiles;
  private long warmupSize = 1 << 20;
  private int record = 1024;
  private boolean hsync;
  private int threads = 1;
  private double seconds = 30;
  private double warmupSeconds = 2;
  private long verifyBytes = 256L << 20;
  private File latFile;
  private File ready;
  private File go;

  // What the run did, for APP-RESULT.
  private long startNanos;
  private long endNanos;
  private long measuredBytes;
  private long measuredFiles;
  private long records;
  private long totalBytes;
  private long totalBlocks;
  private long verified;
  private long[] latencies;
  private int samples;

  // The writer threads' start (writer, several threads).
  private CountDownLatch gate;
  // The logs' start and deadline (wal, mixed).
  private CountDownLatch warmed;
  private volatile boolean failed;
  private long walDeadline;
  // The writers of a mixed JVM are all done: its log stops.
  private volatile boolean bulkDone;

  private void parse(String[] args) {
    if (args.length == 0) {
      throw new IllegalArgumentException(
          "usage: writer|wal|mixed|idle -dir PATH ...");
    }
    mode = args[0];
    if (!mode.equals("writer") && !mode.equals("wal")
        && !mode.equals("mixed") && !mode.equals("idle")) {
      throw new IllegalArgumentException("unknown mode " + mode);
    }
    for (Map.Entry<String, String> option
        : ToolArgs.pairs(args, 1).entrySet()) {
      String v = option.getValue();
      switch (option.getKey()) {
      case "-dir":
        dir = new Path(v);
        break;
      case "-rep":
        rep = Short.parseShort(v);
        break;
      case "-files":
        files = Integer.parseInt(v);
        break;
      case "-size":
        size = Long.parseLong(v);
        break;
      case "-write-size":
        writeSize = Integer.parseInt(v);
        break;
      case "-warmup-files":
        warmupFiles = Integer.parseInt(v);
        break;
      case "-warmup-size":
        warmupSize = Long.parseLong(v);
        break;
      case "-record":
        record = Integer.parseInt(v);
        break;
      case "-sync":
        if (!v.equals("hflush") && !v.equals("hsync")) {
          throw new IllegalArgumentException("-sync hflush or hsync");
        }
        hsync = v.equals("hsync");
        break;
      case "-threads":
        threads = Integer.parseInt(v);
        break;
      case "-seconds":
        seconds = Double.parseDouble(v);
        break;
      case "-warmup-seconds":
        warmupSeconds = Double.parseDouble(v);
        break;
      case "-verify-bytes":
        verifyBytes = Long.parseLong(v);
        break;
      case "-lat-file":
        latFile = new File(v);
        break;
      case "-ready":
        ready = new File(v);
        break;
      case "-go":
        go = new File(v);
        break;
      default:
        throw new IllegalArgumentException(
            "unknown option " + option.getKey());
      }
    }
    if (dir == null) {
      throw new IllegalArgumentException("-dir is required");
    }
    if ((ready == null) != (go == null)) {
      throw new IllegalArgumentException("-ready and -go go together");
    }
    if (files < 1 || size < 1 || writeSize < 1 || record < 1 || threads < 1
        || seconds <= 0 || rep < 1) {
      throw new IllegalArgumentException("counts and sizes must be > 0");
    }
  }

  // -- writer ---------------------------------------------------------------

  private void writer() throws Exception {
    AppContent content = new AppContent(Math.max(writeSize, READ_CHUNK));
    writeWarmupFiles(content);
    List<Writer> writers = new ArrayList<Writer>();
    for (int t = 0; t < threads; t++) {
      writers.add(new Writer(t, content));
    }
    latencies = new long[threads * files];
    awaitGo();
    if (threads == 1) {
      writers.get(0).run();
    } else {
      List<Thread> running = startAtGate(writers);
      gate.countDown();
      for (Thread t : running) {
        t.join();
      }
    }
    span(writers);
    for (Writer w : writers) {
      System.arraycopy(w.lat, 0, latencies, w.id * files, files);
    }
    samples = threads * files;
    measuredFiles = (long) threads * files;
    measuredBytes = measuredFiles * size;
    verifyWriters(content, writers, verifyBytes);
  }

  /**
   * Starts a thread per writer, each waiting at a new {@link #gate}, so
   * that all start together when it opens.
   */
  private List<Thread> startAtGate(List<Writer> writers) {
    gate = new CountDownLatch(1);
    List<Thread> running = new ArrayList<Thread>();
    for (Writer w : writers) {
      Thread t = new Thread(w, "app-writer-" + w.id);
      t.start();
      running.add(t);
    }
    return running;
  }

  /**
   * The writers' span, the first create of any thread to the last close;
   * fails on a thread's error.
   */
  private void span(List<Writer> writers) throws IOException {
    startNanos = Long.MAX_VALUE;
    endNanos = Long.MIN_VALUE;
    for (Writer w : writers) {
      if (w.error != null) {
        throw new IOException("writer thread " + w.id + " failed", w.error);
      }
      startNanos = Math.min(startNanos, w.first);
      endNanos = Math.max(endNanos, w.last);
    }
  }

  /**
   * Every file's length and replication; per thread, whole files read
   * back (the first, the last and evenly between) up to its share of
   * {@code budget} bytes, or the head and tail of its last file where one
   * file is more than its share.
   */
  private void verifyWriters(AppContent content, List<Writer> writers,
      long budget) throws IOException {
    checkWarmupFiles();
    byte[] buf = new byte[READ_CHUNK];
    long share = Math.max(READ_CHUNK, budget / threads);
    for (Writer w : writers) {
      for (int i = 0; i < files; i++) {
        check(w.paths[i], size);
      }
      int sample = (int) Math.min(files, share / size);
      if (sample == 0) {
        int i = files - 1;
        long head = share / 2;
        compare(content, w.paths[i], AppContent.shift(w.fileId(i)), 0, head,
            buf);
        compare(content, w.paths[i], AppContent.shift(w.fileId(i)),
            size - (share - head), share - head, buf);
        continue;
      }
      for (int k = 0; k < sample; k++) {
        int i = sample == 1 ? 0
            : (int) ((long) k * (files - 1) / (sample - 1));
        compare(content, w.paths[i], AppContent.shift(w.fileId(i)), 0, size,
            buf);
      }
    }
  }

  /**
   * One writer thread: its own files (one thread: f000000...; several:
   * t00-f000000...), each of its own content (file ids thread x files +
   * i, so no two files of the JVM share a shift), written one after the
   * other; its latencies and span.
   */
  private final class Writer implements Runnable {
    final int id;
    final Path[] paths;
    final long[] lat;
    final AppContent content;
    long first;
    long last;
    Throwable error;

    Writer(int id, AppContent content) {
      this.id = id;
      this.content = content;
      this.paths = new Path[files];
      this.lat = new long[files];
      for (int i = 0; i < files; i++) {
        paths[i] = new Path(dir, threads == 1
            ? String.format(Locale.ROOT, "f%06d", i)
            : String.format(Locale.ROOT, "t%02d-f%06d", id, i));
      }
    }

    long fileId(int i) {
      return (long) id * files + i;
    }

    @Override
    public void run() {
      try {
        if (gate != null) {
          gate.await();
        }
        first = System.nanoTime();
        for (int i = 0; i < files; i++) {
          long t0 = System.nanoTime();
          writeFile(content, paths[i], fileId(i), size);
          lat[i] = System.nanoTime() - t0;
        }
        last = System.nanoTime();
      } catch (Throwable e) {
        error = e;
      }
    }
  }

  /** Creates {@code p} and writes {@code length} bytes of file id. */
  private void writeFile(AppContent content, Path p, long id, long length)
      throws IOException {
    int shift = AppContent.shift(id);
    byte[] base = content.array();
    try (FSDataOutputStream o = fs.create(p, true, 4096, rep,
        fs.getDefaultBlockSize(p))) {
      long pos = 0;
      while (pos < length) {
        int n = (int) Math.min(writeSize, length - pos);
        o.write(base, content.offset(shift, pos), n);
        pos += n;
      }
    }
  }

  // -- wal ------------------------------------------------------------------

  /** One log: its file, stream, latency slots and what it wrote. */
  private final class Log implements Runnable {
    final int id;
    final Path path;
    final int shift;
    final long[] lat;
    final AppContent content;
    FSDataOutputStream stream;
    long written;
    int count;
    long first;
    long last;
    boolean capped;
    Throwable error;

    Log(int id, AppContent content, long slots) {
      this.id = id;
      this.path = new Path(dir, String.format(Locale.ROOT, "log%02d", id));
      this.shift = AppContent.shift(id);
      this.lat = new long[(int) slots];
      this.content = content;
    }

    void open() throws IOException {
      stream = fs.create(path, true, 4096, rep, fs.getDefaultBlockSize(path));
    }

    /** One record: its bytes, then the flush the log asks for. */
    void append() throws IOException {
      stream.write(content.array(), content.offset(shift, written), record);
      if (hsync) {
        stream.hsync();
      } else {
        stream.hflush();
      }
      written += record;
    }

    @Override
    public void run() {
      boolean arrived = false;
      try {
        long warmEnd = System.nanoTime() + (long) (warmupSeconds * 1e9);
        while (System.nanoTime() < warmEnd) {
          append();
        }
        // Every log starts its measured phase at once, and all end at
        // the same deadline.
        warmed.countDown();
        arrived = true;
        warmed.await();
        if (failed) {
          return;
        }
        long end = deadline();
        first = System.nanoTime();
        long t0 = first;
        while (t0 < end && !bulkDone) {
          if (count == lat.length) {
            capped = true;
            break;
          }
          append();
          long t1 = System.nanoTime();
          lat[count++] = t1 - t0;
          t0 = t1;
        }
        last = t0;
        stream.close();
      } catch (Throwable e) {
        error = e;
        failed = true;
      } finally {
        if (!arrived) {
          warmed.countDown();
        }
      }
    }
  }

  /** The logs' common deadline, set by the first to ask. */
  private synchronized long deadline() {
    if (walDeadline == 0) {
      walDeadline = System.nanoTime() + (long) (seconds * 1e9);
    }
    return walDeadline;
  }

  private void wal() throws Exception {
    AppContent content = new AppContent(Math.max(record, READ_CHUNK));
    long slots = Math.min((long) (seconds * MAX_RATE) + 1000,
        MAX_SLOTS / threads);
    // Files first, as a long-lived application has written before its
    // logs: with dfs.client.rdma.defer-start, a JVM's first stream keeps
    // its first block on TCP, and a log is one block.
    writeWarmupFiles(content);
    warmed = new CountDownLatch(threads);
    List<Log> logs = new ArrayList<Log>();
    for (int i = 0; i < threads; i++) {
      Log log = new Log(i, content, slots);
      log.open();
      logs.add(log);
    }
    awaitGo();
    List<Thread> running = new ArrayList<Thread>();
    for (Log log : logs) {
      Thread t = new Thread(log, "app-log-" + log.id);
      t.start();
      running.add(t);
    }
    for (Thread t : running) {
      t.join();
    }
    startNanos = Long.MAX_VALUE;
    endNanos = Long.MIN_VALUE;
    for (Log log : logs) {
      if (log.error != null) {
        throw new IOException("log " + log.id + " failed", log.error);
      }
      if (log.capped) {
        throw new IOException("log " + log.id + " filled its " + slots
            + " latency slots: more than " + MAX_RATE + " records/s");
      }
      startNanos = Math.min(startNanos, log.first);
      endNanos = Math.max(endNanos, log.last);
      samples += log.count;
      records += log.count;
      measuredBytes += (long) log.count * record;
    }
    measuredFiles = threads;
    latencies = new long[samples];
    int at = 0;
    for (Log log : logs) {
      System.arraycopy(log.lat, 0, latencies, at, log.count);
      at += log.count;
    }
    long share = Math.max(record, verifyBytes / threads);
    for (Log log : logs) {
      verifyLog(content, log, share);
    }
    checkWarmupFiles();
  }

  /** A log's length and replication; its head and tail read back. */
  private void verifyLog(AppContent content, Log log, long share)
      throws IOException {
    byte[] buf = new byte[READ_CHUNK];
    check(log.path, log.written);
    long head = Math.min(log.written, share / 2);
    compare(content, log.path, log.shift, 0, head, buf);
    long tail = Math.min(log.written - head, share - head);
    compare(content, log.path, log.shift, log.written - tail, tail, buf);
  }

  // -- mixed ----------------------------------------------------------------

  private void mixed() throws Exception {
    AppContent content = new AppContent(Math.max(Math.max(writeSize,
        record), READ_CHUNK));
    writeWarmupFiles(content);
    List<Writer> writers = new ArrayList<Writer>();
    for (int t = 0; t < threads; t++) {
      writers.add(new Writer(t, content));
    }
    // The log's id follows the writers' files', so no content repeats.
    long slots = Math.min((long) (seconds * MAX_RATE) + 1000, MAX_SLOTS);
    Log log = new Log(threads * files, content, slots);
    log.open();
    warmed = new CountDownLatch(1);
    awaitGo();
    List<Thread> running = startAtGate(writers);
    Thread logThread = new Thread(log, "app-log");
    // The log warms up (its -warmup-seconds) while the writers wait.
    logThread.start();
    warmed.await();
    gate.countDown();
    for (Thread t : running) {
      t.join();
    }
    bulkDone = true;
    logThread.join();
    span(writers);
    if (log.error != null) {
      throw new IOException("the log failed", log.error);
    }
    if (log.capped || log.last < endNanos) {
      throw new IOException("the log stopped before the writers' end: "
          + "raise -seconds (" + seconds + ")");
    }
    measuredFiles = (long) threads * files;
    measuredBytes = measuredFiles * size;
    records = log.count;
    samples = log.count;
    latencies = log.lat;
    // The log and the writers share the verification's bytes.
    verifyLog(content, log, Math.max(record, verifyBytes / 4));
    verifyWriters(content, writers, verifyBytes - verifyBytes / 4);
  }

  // -- idle -----------------------------------------------------------------

  private void idle() throws Exception {
    AppContent content = new AppContent(Math.max(writeSize, READ_CHUNK));
    writeWarmupFiles(content);
    awaitGo();
    startNanos = System.nanoTime();
    TimeUnit.NANOSECONDS.sleep((long) (seconds * 1e9));
    endNanos = System.nanoTime();
    byte[] buf = new byte[READ_CHUNK];
    for (int i = 0; i < warmupFiles; i++) {
      Path p = new Path(dir, "warmup-" + i);
      check(p, warmupSize);
      compare(content, p, AppContent.shift(-1 - i), 0, warmupSize, buf);
    }
  }

  // -- shared ---------------------------------------------------------------

  /** The -warmup-files files, unrecorded, before the measured phase. */
  private void writeWarmupFiles(AppContent content) throws IOException {
    for (int i = 0; i < warmupFiles; i++) {
      writeFile(content, new Path(dir, "warmup-" + i), -1 - i, warmupSize);
    }
  }

  /** The warm-up files' lengths and replication (counted as written). */
  private void checkWarmupFiles() throws IOException {
    for (int i = 0; i < warmupFiles; i++) {
      check(new Path(dir, "warmup-" + i), warmupSize);
    }
  }

  /** With -ready and -go: says it is ready and waits for the go file. */
  private void awaitGo() throws IOException, InterruptedException {
    if (ready == null) {
      return;
    }
    if (!ready.createNewFile()) {
      throw new IOException(ready + " exists already");
    }
    long giveUp = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
    while (!go.exists()) {
      if (System.nanoTime() > giveUp) {
        throw new IOException("no " + go + " within 10 minutes");
      }
      Thread.sleep(1);
    }
  }

  /** Length and replication of {@code p}; counts its bytes and blocks. */
  private void check(Path p, long length) throws IOException {
    FileStatus st = fs.getFileStatus(p);
    if (st.getLen() != length || st.getReplication() != rep) {
      throw new IOException(p + ": length " + st.getLen() + " replication "
          + st.getReplication() + ", expected " + length + " and " + rep);
    }
    totalBytes += length;
    totalBlocks += Math.max(1, (length + st.getBlockSize() - 1)
        / st.getBlockSize());
  }

  /** Reads [from, from + length) of {@code p} and compares it. */
  private void compare(AppContent content, Path p, int shift, long from,
      long length, byte[] buf) throws IOException {
    if (length <= 0) {
      return;
    }
    try (FSDataInputStream in = fs.open(p)) {
      in.seek(from);
      long pos = from;
      long end = from + length;
      while (pos < end) {
        int n = (int) Math.min(buf.length, end - pos);
        try {
          in.readFully(buf, 0, n);
        } catch (EOFException e) {
          throw new IOException(p + ": ends before byte " + (pos + n), e);
        }
        int bad = content.firstMismatch(shift, pos, buf, n);
        if (bad >= 0) {
          throw new IOException(p + ": byte " + (pos + bad)
              + " differs from what was written");
        }
        pos += n;
        verified += n;
      }
    }
  }

  /**
   * The first {@code samples} of {@code latencies}, big-endian longs of
   * nanoseconds, into {@code file} (the harness's latency file).
   */
  static void writeLatencies(File file, long[] latencies, int samples)
      throws IOException {
    ByteBuffer b = ByteBuffer.allocate(8 * 8192);
    try (FileOutputStream f = new FileOutputStream(file);
        FileChannel ch = f.getChannel()) {
      for (int i = 0; i < samples; i++) {
        if (!b.hasRemaining()) {
          b.flip();
          while (b.hasRemaining()) {
            ch.write(b);
          }
          b.clear();
        }
        b.putLong(latencies[i]);
      }
      b.flip();
      while (b.hasRemaining()) {
        ch.write(b);
      }
    }
  }

  @Override
  public int run(String[] args) throws Exception {
    parse(args);
    Configuration conf = getConf();
    fs = FileSystem.get(conf);
    if (!fs.mkdirs(dir)) {
      throw new IOException("cannot create " + dir);
    }
    out.printf(Locale.ROOT, "APP-START mode=%s dir=%s rep=%d rdma=%s%n",
        mode, dir, rep, conf.get("dfs.client.rdma.enabled", "unset"));
    if (mode.equals("writer")) {
      writer();
    } else if (mode.equals("wal")) {
      wal();
    } else if (mode.equals("mixed")) {
      mixed();
    } else {
      idle();
    }
    if (latFile != null) {
      writeLatencies(latFile, latencies, samples);
    }
    out.printf(Locale.ROOT, "APP-RESULT mode=%s start_ns=%d end_ns=%d"
        + " measured_bytes=%d measured_files=%d records=%d samples=%d"
        + " bytes=%d blocks=%d verified_bytes=%d status=ok%n", mode,
        startNanos, endNanos, measuredBytes, measuredFiles, records,
        samples, totalBytes, totalBlocks, verified);
    return 0;
  }

  public static void main(String[] args) {
    ToolArgs.runAndExit(new AppWorkload(), args);
  }
}
