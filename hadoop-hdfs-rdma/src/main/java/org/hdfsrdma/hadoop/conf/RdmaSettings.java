package org.hdfsrdma.hadoop.conf;

import static org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys.*;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.hadoop.protocol.ReadOffer;
import org.hdfsrdma.hadoop.protocol.WriteRequest;
import org.hdfsrdma.hadoop.util.LogOnce;

/**
 * What hdfs-rdma's settings may be: the one list of its keys (the
 * {@code *_KEY} constants of {@link HdfsRdmaConfigKeys}, read by
 * reflection, so that a key added there is known everywhere) and the one
 * table of the range of each numeric key. {@link RdmaConf} checks every
 * value against it as it reads it, and {@code check} reports from both. A
 * value that is out of range or does not parse is replaced by its default
 * and said once, never thrown: UCX is an accelerator, and a bad setting
 * must not fail a write or stop a daemon. hdfs-rdma-default.xml states
 * each range too ("Range: a..b"), for operators; a test holds the two
 * equal.
 */
public final class RdmaSettings {

  /**
   * Bytes the DataNode's landing pool registers at a time (its slab; a
   * landing buffer larger than this is a slab of its own).
   */
  public static final long LANDING_SLAB_BYTES = 4L * 1024 * 1024;

  /**
   * Hadoop's default {@code dfs.client-write-packet-size}: the packet a
   * client of default settings sends.
   */
  static final long HADOOP_PACKET_BYTES = 64 * 1024;
  /**
   * The largest packet a Hadoop DataNode takes
   * ({@code PacketReceiver.MAX_PACKET_SIZE}).
   */
  static final long HADOOP_MAX_PACKET_BYTES = 16 * 1024 * 1024;
  /**
   * Buffers a registered pool can number (RegisteredBufferPool indexes
   * them in 24 bits and refuses a cap of more).
   */
  static final long POOL_MAX_BUFFERS = 1L << 24;
  /** Most client lanes ({@code dfs.client.rdma.workers}). */
  public static final int MAX_CLIENT_WORKERS = 16;
  /** The allowed values of one numeric key, and what the key means. */
  public static final class Range {
    private final String key;
    private final long min;
    private final long max;
    private final String meaning;

    Range(String key, long min, long max, String meaning) {
      this.key = key;
      this.min = min;
      this.max = max;
      this.meaning = meaning;
    }

    public String key() {
      return key;
    }

    public long min() {
      return min;
    }

    public long max() {
      return max;
    }

    /** What the key sets, in a few words, for messages. */
    public String meaning() {
      return meaning;
    }

    public boolean contains(long value) {
      return value >= min && value <= max;
    }

    @Override
    public String toString() {
      return min + ".." + max;
    }
  }

  /**
   * The ranges, by key. A bound is either what the code can take at all
   * (a wire field, a pool's index) or the point past which the setting
   * defeats itself; the reason follows each where it is not plain.
   */
  private static final Map<String, Range> RANGES;

  static {
    Map<String, Range> r = new LinkedHashMap<String, Range>();
    // At least one slab's least. At most 8 GiB: 2^24 buffers of the
    // smallest packet Hadoop builds.
    add(r, DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY, HADOOP_PACKET_BYTES,
        8L << 30, "most bytes of the client's registered packet memory");
    // At least a packet of Hadoop's default size (a slab is rounded down to
    // whole packet buffers, and up to one). At most 1 GiB: a slab is one
    // registration and one Java buffer, which stops short of 2 GiB.
    add(r, DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY, HADOOP_PACKET_BYTES,
        1L << 30, "bytes the client registers at a time");
    // 0: build the packet on the heap at once. At most Hadoop's default
    // socket timeout: a writer waits this long per packet.
    add(r, DFS_CLIENT_RDMA_BUFFER_WAIT_MS_KEY, 0, 60_000,
        "how long a writer waits for a registered packet buffer");
    // 0 would time out every connect. At most Hadoop's default socket
    // timeout: a writer or a DataNode waits this long for a peer.
    add(r, DFS_CLIENT_RDMA_CONNECT_TIMEOUT_MS_KEY, 1, 60_000,
        "how long a UCX connect may take");
    // 0: try UCX again with the next pipeline. At most a day (the time is
    // added to the clock).
    add(r, DFS_CLIENT_RDMA_UNREACHABLE_RETRY_MS_KEY, 0, 24L * 3600 * 1000,
        "how long pipelines through an unreachable DataNode stay on TCP");
    // The request carries feeders in 4 bits.
    add(r, DFS_CLIENT_RDMA_HYBRID_FEEDERS_KEY, 1, WriteRequest.MAX_FEEDERS,
        "DataNodes a hybrid pipeline's client feeds");
    // Each lane is a UCX worker with its own progress thread and
    // connections to every DataNode; a DataNode takes 4096 connections.
    // Past 16 the lanes outnumber the cores that would send on them.
    add(r, DFS_CLIENT_RDMA_WORKERS_KEY, 1, MAX_CLIENT_WORKERS,
        "UCX workers the client's streams send on");
    // At least one landing slab, which is registered whole. At most 2^24
    // buffers of the smallest packet buffer.
    add(r, DFS_DATANODE_RDMA_POOL_MAX_BYTES_KEY, LANDING_SLAB_BYTES,
        POOL_MAX_BUFFERS * HADOOP_PACKET_BYTES,
        "most bytes of the DataNode's registered landing memory");
    // At least Hadoop's default packet: a smaller buffer turns away every
    // client of default settings. At most Hadoop's largest packet; each
    // block also takes a heap buffer of this size.
    add(r, DFS_DATANODE_RDMA_PACKET_BUFFER_BYTES_KEY, HADOOP_PACKET_BYTES,
        HADOOP_MAX_PACKET_BYTES, "the largest packet the DataNode takes"
        + " over UCX");
    // 0 would fail every get. At most ten minutes: a get that hangs holds
    // its block's pipeline this long before Hadoop recovers it.
    add(r, DFS_DATANODE_RDMA_GET_TIMEOUT_MS_KEY, 1, 600_000,
        "how long a DataNode waits for one get");
    // At least Hadoop's default dfs.client.write.max-packets-in-flight: a
    // client keeps that many packets un-acked, and one more than the ring
    // holds fails the block's pipeline. At most 8192: the ring (72 bytes
    // a packet) is allocated with every block.
    add(r, DFS_DATANODE_RDMA_MAX_QUEUED_PACKETS_KEY, 80, 8192,
        "packet descriptors a block may have waiting");
    // Each get in flight holds a landing buffer; the receiver writes one
    // packet at a time, so more than 64 only holds memory.
    add(r, DFS_DATANODE_RDMA_GETS_IN_FLIGHT_KEY, 1, 64,
        "gets of one block in flight at once");
    // Region ids are 16 bits in a packet descriptor.
    add(r, DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_KEY, 1, 65_535,
        "registered regions one block may announce");
    // 0 would close connections before their block opens (the sweep runs
    // every second, so that is the timeout's resolution). At most a day.
    add(r, DFS_DATANODE_RDMA_UNBOUND_CONNECTION_TIMEOUT_MS_KEY, 1,
        24L * 3600 * 1000, "how long a connection that opened no block is"
        + " kept");
    // 0: every read offers UCX. At most a tebibyte: past any block's size
    // no read offers it.
    add(r, DFS_CLIENT_RDMA_READ_MIN_BYTES_KEY, 0, 1L << 40,
        "the shortest block read that offers UCX");
    // Whole pages of stock packets; at most what a read offer takes.
    add(r, DFS_DATANODE_RDMA_READ_BUFFER_BYTES_KEY, ReadOffer.MIN_PACKET_BYTES,
        ReadOffer.MAX_PACKET_BYTES, "bytes of one buffer a read is served"
        + " from");
    // A read takes a window of at least two buffers; past the most a read
    // offer asks for, a user's cap only holds memory.
    add(r, DFS_DATANODE_RDMA_READ_USER_BUFFERS_KEY, ReadOffer.MIN_WINDOW,
        ReadOffer.MAX_WINDOW, "read buffers one user's reads may hold");
    add(r, DFS_DATANODE_RDMA_READ_MAX_BUFFERS_KEY, ReadOffer.MIN_WINDOW,
        POOL_MAX_BUFFERS, "read buffers all reads of a DataNode may hold");
    RANGES = Collections.unmodifiableMap(r);
  }

  private static void add(Map<String, Range> table, String key, long min,
      long max, String meaning) {
    table.put(key, new Range(key, min, max, meaning));
  }

  /** Every key of hdfs-rdma and its default, as text, sorted by key. */
  private static final SortedMap<String, String> DEFAULTS =
      Collections.unmodifiableSortedMap(defaultsOf(HdfsRdmaConfigKeys.class));

  /** What each boolean key sets, for messages. */
  private static final Map<String, String> FLAGS;

  static {
    Map<String, String> f = new LinkedHashMap<String, String>();
    f.put(DFS_CLIENT_RDMA_ENABLED_KEY, "whether the client writes over UCX");
    f.put(DFS_CLIENT_RDMA_DEFER_START_KEY, "whether a JVM's first block"
        + " goes over TCP while UCX starts");
    f.put(DFS_CLIENT_RDMA_SOCKET_DESCRIPTORS_KEY, "whether a fan-out's"
        + " descriptors travel on the block's socket");
    f.put(DFS_CLIENT_RDMA_PACKET_TIMERS_ENABLED_KEY,
        "whether client packets are timed");
    f.put(DFS_DATANODE_RDMA_ENABLED_KEY, "whether the DataNode serves UCX");
    f.put(DFS_DATANODE_RDMA_ALLOW_EMULATED_GETS_KEY,
        "whether the DataNode takes gets UCX emulates over tcp");
    f.put(DFS_DATANODE_RDMA_PACKET_TIMERS_ENABLED_KEY,
        "whether DataNode packets are timed");
    f.put(DFS_CLIENT_RDMA_READ_ENABLED_KEY, "whether the client reads over"
        + " UCX");
    f.put(DFS_DATANODE_RDMA_READ_ENABLED_KEY, "whether the DataNode serves"
        + " reads over UCX");
    f.put(DFS_RDMA_UCX_ALLOW_TCP_KEY, "whether UCX may run its tcp"
        + " transport");
    FLAGS = Collections.unmodifiableMap(f);
  }

  private RdmaSettings() {
  }

  /**
   * {@code KEY} constant to {@code _DEFAULT} constant of {@code keys}, as
   * key to default text.
   */
  private static SortedMap<String, String> defaultsOf(Class<?> keys) {
    SortedMap<String, String> defaults = new TreeMap<String, String>();
    for (Field f : keys.getFields()) {
      int mod = f.getModifiers();
      if (!Modifier.isStatic(mod) || !Modifier.isFinal(mod)
          || f.getType() != String.class || !f.getName().endsWith("_KEY")) {
        continue;
      }
      String name = f.getName();
      try {
        String key = (String) f.get(null);
        Field d = keys.getField(name.substring(0,
            name.length() - "_KEY".length()) + "_DEFAULT");
        defaults.put(key, String.valueOf(d.get(null)));
      } catch (NoSuchFieldException | IllegalAccessException e) {
        throw new IllegalStateException(name + " has no _DEFAULT", e);
      }
    }
    return defaults;
  }

  /** Every key of hdfs-rdma with its default as text, sorted by key. */
  public static SortedMap<String, String> defaults() {
    return DEFAULTS;
  }

  /** Whether {@code key} is one of hdfs-rdma's. */
  public static boolean isKnown(String key) {
    return DEFAULTS.containsKey(key);
  }

  /** The range of {@code key}, or null for a key that is not numeric. */
  public static Range range(String key) {
    return RANGES.get(key);
  }

  /** Every numeric key's range, in the table's order. */
  public static Iterable<Range> ranges() {
    return RANGES.values();
  }

  /**
   * The LogOnce key of a value's warning; {@code id} is the key and value
   * ({@code key=value}), or what else tells the problem apart.
   */
  static String logKey(String id) {
    return "conf " + id;
  }

  /**
   * Reads {@code conf}'s values through the table, collecting what was
   * out of range; {@link RdmaConf} logs the collection once read.
   */
  static final class Reader {
    private final Configuration conf;
    private final List<String[]> problems = new ArrayList<String[]>();

    Reader(Configuration conf) {
      this.conf = conf;
    }

    /** {@code key}'s value, or {@code dflt} if unset or out of range. */
    long getLong(String key, long dflt) {
      Range range = RANGES.get(key);
      long value;
      try {
        value = conf.getLong(key, dflt);
      } catch (NumberFormatException e) {
        outOfRange(range, dflt);
        return dflt;
      }
      if (!range.contains(value)) {
        outOfRange(range, dflt);
        return dflt;
      }
      return value;
    }

    /** {@link #getLong}, for a key whose range fits an int. */
    int getInt(String key, int dflt) {
      return (int) getLong(key, dflt);
    }

    /**
     * {@code key}'s value, or {@code dflt} if unset or neither true nor
     * false (which Hadoop's getBoolean takes silently as the default).
     */
    boolean getBoolean(String key, boolean dflt) {
      String value = conf.getTrimmed(key);
      if (value == null) {
        return dflt;
      }
      if ("true".equalsIgnoreCase(value)) {
        return true;
      }
      if ("false".equalsIgnoreCase(value)) {
        return false;
      }
      noneOf(key, "true, false", FLAGS.get(key), String.valueOf(dflt));
      return dflt;
    }

    private void outOfRange(Range range, long dflt) {
      String value = conf.getTrimmed(range.key());
      problem(range.key() + "=" + value, range.key() + "=" + value
          + " is outside " + range + " (" + range.meaning() + "); using "
          + dflt);
    }

    /** An enum-like value that is none of {@code allowed}. */
    void noneOf(String key, String allowed, String meaning, String dflt) {
      String value = conf.getTrimmed(key);
      problem(key + "=" + value, key + "=" + value + " is none of "
          + allowed + " (" + meaning + "); using " + dflt);
    }

    /** A problem, logged once per {@code id} and JVM. */
    /**
     * Says when a client pool of {@code poolMaxBytes} in slabs of
     * {@code slabBytes} may announce more regions to a block than a
     * DataNode with {@code maxRegions} accepts.
     */
    void checkSlabsAgainstRegions(long poolMaxBytes, long slabBytes,
        int maxRegions) {
      long slabs = (poolMaxBytes + slabBytes - 1) / slabBytes;
      if (slabs <= maxRegions) {
        return;
      }
      // Each slab is a region a block may announce; a DataNode fails the
      // block's pipeline (over to TCP) at one past its limit. Only said:
      // the DataNodes' limit is theirs, this is just the same file's.
      problem(DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY + " slabs " + slabs
          + " > " + maxRegions,
          DFS_CLIENT_RDMA_POOL_MAX_BYTES_KEY + "=" + poolMaxBytes
          + " is up to " + slabs + " slabs of "
          + DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY + "=" + slabBytes
          + ", more than " + DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_KEY
          + "=" + maxRegions + " (a DataNode with that"
          + " limit fails a block's pipeline over to TCP once the pool"
          + " passes it); using them as set: raise the slab size");
    }

    void problem(String id, String message) {
      problems.add(new String[] {logKey(id), "hdfs-rdma: " + message});
    }

    /** Logs every problem once; their messages. */
    List<String> logProblems() {
      List<String> messages = new ArrayList<String>(problems.size());
      for (String[] p : problems) {
        LogOnce.warn(p[0], p[1]);
        messages.add(p[1]);
      }
      return Collections.unmodifiableList(messages);
    }
  }
}
