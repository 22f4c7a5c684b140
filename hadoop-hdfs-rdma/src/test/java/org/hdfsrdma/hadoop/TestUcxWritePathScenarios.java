package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.hadoop.client.ClientStream;
import org.apache.hadoop.hdfs.UcxTestAccess;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream;
import org.apache.hadoop.hdfs.tools.DFSck;
import org.apache.hadoop.test.GenericTestUtils;
import org.apache.hadoop.util.ToolRunner;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.datanode.DataNodeServer;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.RegisteredBufferPool;
import org.hdfsrdma.ucx.UcxEndpoint;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.LoggerFactory;

/**
 * The UCX write path in the situations a cluster meets, in a
 * MiniDFSCluster whose DataNodes and client share this JVM's UCX runtime:
 * hflush and hsync in the middle of a file, append, concurrent writers, a
 * DataNode stopped in the middle of a block, a DataNode and a client
 * without UCX, a client whose UCX cannot reach the DataNodes, the client's
 * UCX connection failing in the middle of a block, and aborted streams.
 * Where UCX carries the bytes, the DataNodes' counters of bytes fetched
 * prove it; where it must not, they prove it did not.
 *
 * <p>What each of the ten situations (one test each) proves besides the bytes
 * read back: hflush and hsync, the flushed bytes fetched by all three DataNodes
 * and visible to a reader, then an append, fsck healthy; eight concurrent
 * writers, 3 x their total fetched, 3 replicas over UCX per block and none over
 * TCP; a DataNode stopped in the middle of a block at replication 3, the write
 * complete, fsck healthy, the recovered pipeline going on over UCX; a pipeline
 * through a DataNode whose {@code dfs.datanode.rdma.enabled} is false, and a
 * client without UCX: all TCP, nothing fetched, no descriptor sent, every
 * replica counted over the socket, files intact; the client whose UCX reaches
 * no DataNode ({@code dfs.rdma.ucx.tls} tcp, with
 * {@code dfs.rdma.ucx.allow-tcp}): every replica of both its files over the
 * socket and no UCX message reaching the DataNodes; the client's UCX connection
 * closed in the middle of a block: the file intact, fsck healthy; DataNodes
 * refusing the client's second region in the middle of a block (a per-block
 * region limit of 1) ask for TCP with the fallback ack; four aborted streams
 * ({@code closeAllFilesBeingWritten(true)}) give every registered buffer back
 * (the pool's metrics, {@code assertNoLeaks}).
 */
public class TestUcxWritePathScenarios {

  private static final int BLOCK_SIZE = 1024 * 1024;

  private MiniDFSCluster cluster;
  private DistributedFileSystem fs;
  private File work;

  @Before
  public void checkUcx() {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
  }

  @After
  public void tearDown() {
    if (cluster != null) {
      cluster.shutdown();
    }
    UcxRuntime.shutdown();
    if (work != null) {
      FileUtil.fullyDelete(work);
    }
  }

  private void start(int dataNodes) throws Exception {
    start(dataNodes, TestUcxWritePath.ucxConf());
  }

  private void start(int dataNodes, Configuration conf) throws Exception {
    cluster = new MiniDFSCluster.Builder(conf)
        .numDataNodes(dataNodes).build();
    cluster.waitActive();
    fs = cluster.getFileSystem();
  }

  private static UcxRuntime runtime() {
    UcxRuntime r = UcxRuntime.current();
    assertTrue("UCX runtime running", r != null);
    return r;
  }

  private static long fetched() {
    return UcxCounters.dataBytesFetched();
  }

  static byte[] random(int size, long seed) {
    byte[] data = new byte[size];
    new Random(seed).nextBytes(data);
    return data;
  }

  private static long blocks(long size) {
    return Math.max(1, (size + BLOCK_SIZE - 1) / BLOCK_SIZE);
  }

  private String fsck(String... args) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ToolRunner.run(new DFSck(cluster.getConfiguration(0),
        new PrintStream(out, true)), args);
    return out.toString();
  }

  /**
   * {@link DFSTestUtil#waitReplication} (40 s), failing with where the
   * NameNode has each block's replicas: the test's log is gone by the time
   * a CI run is read.
   */
  private void waitReplication(Path path, int replicas) throws Exception {
    try {
      DFSTestUtil.waitReplication(fs, path, (short) replicas);
    } catch (TimeoutException e) {
      throw new AssertionError(e.getMessage() + "; fsck: " + fsck(
          path.toString(), "-files", "-blocks", "-locations"), e);
    }
  }

  private void assertHealthy(String path) throws Exception {
    String report = fsck(path);
    assertTrue(report, report.contains("is HEALTHY"));
  }

  @Test(timeout = 300_000)
  public void testHflushHsyncAndAppend() throws Exception {
    start(3);
    Path path = new Path("/flush");
    byte[] first = random(300_000, 1);
    byte[] second = random(700_123, 2);
    byte[] third = random(1_500_000, 3);
    long before = fetched();
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(first, 0, 100_001);
      out.hflush();
      assertTrue("the flushed bytes went over UCX to all three",
          fetched() - before >= 3L * 100_001);
      // What was flushed is visible to a reader, byte for byte.
      try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(path)) {
        assertEquals(100_001, in.getVisibleLength());
        byte[] flushed = new byte[100_001];
        in.readFully(0, flushed);
        assertArrayEquals(Arrays.copyOf(first, 100_001), flushed);
      }
      out.write(first, 100_001, first.length - 100_001);
      ((HdfsDataOutputStream) out).hsync();
      out.write(second);
    }
    // The append's pipeline is the replicas the NameNode knows of. Appending
    // before the last DataNode's block report arrives leaves that replica
    // out with the old generation stamp; on three DataNodes the NameNode
    // then re-replicates to the only candidate, that DataNode, which refuses
    // (ReplicaAlreadyExistsException), and it retries only after
    // dfs.namenode.replication.pending.timeout-sec (5 min). That is Hadoop's
    // race (stock DataNodes report the same way), seen 2 runs in 40 here.
    waitReplication(path, 3);
    try (FSDataOutputStream out = fs.append(path)) {
      out.write(third);
      out.hflush();
    }
    waitReplication(path, 3);
    byte[] expected = new byte[first.length + second.length + third.length];
    System.arraycopy(first, 0, expected, 0, first.length);
    System.arraycopy(second, 0, expected, first.length, second.length);
    System.arraycopy(third, 0, expected, first.length + second.length,
        third.length);
    assertArrayEquals(expected, DFSTestUtil.readFileBuffer(fs, path));
    // A flushed partial chunk is sent again with the bytes that follow it,
    // as on the socket path: at least every byte once per replica.
    assertTrue("fetched " + (fetched() - before),
        fetched() - before >= 3L * expected.length);
    assertEquals("no replica on the socket", 0, UcxCounters.blocksOverTcp());
    assertHealthy("/flush");
  }

  @Test(timeout = 300_000)
  public void testEightConcurrentWriters() throws Exception {
    // Eight writers on three DataNodes: ucxConf turns load-based placement
    // off, so every block gets 3 replicas.
    start(3, TestUcxWritePath.ucxConf());
    ExecutorService pool = Executors.newFixedThreadPool(8);
    long before = fetched();
    try {
      List<Future<byte[]>> writes = new ArrayList<Future<byte[]>>();
      for (int i = 0; i < 8; i++) {
        final int writer = i;
        writes.add(pool.submit(() -> {
          byte[] data = random(2 * BLOCK_SIZE + writer * 1000, writer);
          try (FSDataOutputStream out = fs.create(new Path("/w" + writer),
              (short) 3)) {
            out.write(data);
          }
          return data;
        }));
      }
      long total = 0;
      long blocks = 0;
      for (int i = 0; i < 8; i++) {
        byte[] data = writes.get(i).get(200, TimeUnit.SECONDS);
        assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs,
            new Path("/w" + i)));
        total += data.length;
        blocks += blocks(data.length);
      }
      assertEquals("every byte fetched by each of the 3 replicas",
          3 * total, fetched() - before);
      assertEquals(3 * blocks, UcxCounters.blocksOverUcx());
      assertEquals(0, UcxCounters.blocksOverTcp());
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * The middle DataNode of the pipeline stops mid-block: its upstream's
   * mirror fails, recovery drops it, and the recovered pipeline (a new
   * generation stamp, a new session per node) goes on over UCX.
   */
  @Test(timeout = 300_000)
  public void testDataNodeStoppedMidBlock() throws Exception {
    stopMidBlock("/recovery", 1, 9);
  }

  /**
   * DataNode 1, which the descriptors go to on the block's socket, stops
   * mid-block: the client's next descriptor write fails as a packet's
   * does in stock, recovery drops that DataNode, and the recovered
   * pipeline goes on over UCX (not kept on TCP).
   */
  @Test(timeout = 300_000)
  public void testFirstDataNodeStoppedMidBlock() throws Exception {
    stopMidBlock("/recovery-first", 0, 10);
  }

  /**
   * Writes half a block to {@code name}, stops the DataNode at
   * {@code position} of the stream's pipeline, writes the rest, and checks
   * the file and that every later byte reached three replicas by get.
   */
  private void stopMidBlock(String name, int position, long seed)
      throws Exception {
    start(4);
    Path path = new Path(name);
    byte[] data = random(3 * BLOCK_SIZE / 2, seed);
    long afterStop;
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(data, 0, BLOCK_SIZE / 2);
      out.hflush();
      assertEquals("the first half went over UCX to all three", 3L
          * BLOCK_SIZE / 2, fetched());
      // The stream's own pipeline: block locations come sorted by distance.
      List<DatanodeInfo> pipeline = pipeline(out);
      assertEquals(3, pipeline.size());
      assertTrue(cluster.stopDataNode(pipeline.get(position).getXferAddr())
          != null);
      afterStop = fetched();
      out.write(data, BLOCK_SIZE / 2, data.length - BLOCK_SIZE / 2);
    }
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    waitReplication(path, 3);
    assertHealthy(name);
    assertTrue("fetched after the stop: " + (fetched() - afterStop),
        fetched() - afterStop >= 3L * (data.length - BLOCK_SIZE / 2));
  }

  /**
   * A replica the NameNode asks for after the write (here: the file's
   * replication raised) is copied DataNode to DataNode by Hadoop's own
   * transfer, which the UCX path must leave working.
   */
  @Test(timeout = 300_000)
  public void testReplicationRaisedAfterTheWrite() throws Exception {
    start(3);
    Path path = new Path("/raised");
    byte[] data = random(2 * BLOCK_SIZE + 4321, 11);
    long before = fetched();
    try (FSDataOutputStream out = fs.create(path, (short) 2)) {
      out.write(data);
    }
    assertEquals("two replicas by get", 2L * data.length, fetched() - before);
    assertTrue(fs.setReplication(path, (short) 3));
    waitReplication(path, 3);
    assertEquals("the third replica was copied, not fetched",
        2L * data.length, fetched() - before);
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    assertHealthy("/raised");
  }

  @Test(timeout = 300_000)
  public void testPipelineThroughADataNodeWithoutUcxStaysOnTcp()
      throws Exception {
    Configuration conf = TestUcxWritePath.ucxConf();
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(2).build();
    Configuration noUcx = new Configuration(conf);
    noUcx.setBoolean(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_ENABLED_KEY, false);
    cluster.startDataNodes(noUcx, 1, true, null, null);
    cluster.waitActive();
    assertFalse(TestUcxDataNodePlugin.plugin(cluster.getDataNodes().get(2))
        .isServing());
    fs = cluster.getFileSystem();
    Path path = new Path("/mixed");
    byte[] data = random(BLOCK_SIZE + 4321, 5);
    long before = fetched();
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(data);
    }
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    assertEquals("every pipeline includes the DataNode without UCX", 0,
        fetched() - before);
    assertEquals("no replica came over UCX", 0, UcxCounters.blocksOverUcx());
    // The DataNode without UCX serves no metrics of hdfs-rdma; the two that
    // serve UCX count their replicas as received over TCP.
    assertEquals("every replica came over the socket",
        2 * blocks(data.length), UcxCounters.blocksOverTcp());
    assertEquals("no descriptor was sent", 0,
        runtime().metrics().dataBytesSent());
    assertHealthy("/mixed");
  }

  @Test(timeout = 300_000)
  public void testClientWithoutUcxWritesOverTcp() throws Exception {
    start(3);
    Configuration clientConf = new Configuration(cluster.getConfiguration(0));
    clientConf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY,
        false);
    FileSystem plain = FileSystem.newInstance(fs.getUri(), clientConf);
    try {
      Path path = new Path("/stock-client");
      byte[] data = random(BLOCK_SIZE + 99, 6);
      long before = fetched();
      try (FSDataOutputStream out = plain.create(path, (short) 3)) {
        out.write(data);
      }
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      assertEquals(0, fetched() - before);
      assertEquals(0, runtime().metrics().dataBytesSent());
      assertEquals(0, UcxCounters.blocksOverUcx());
      assertEquals(3 * blocks(data.length), UcxCounters.blocksOverTcp());
      assertHealthy("/stock-client");
    } finally {
      plain.close();
    }
  }

  /**
   * A client whose UCX has no transport that reaches the DataNodes (its
   * dfs.rdma.ucx.tls is tcp only; theirs, the default, excludes tcp), in a
   * JVM of its own: the DataNodes commit, the client cannot connect, and
   * every replica comes over the socket, nothing by get; the next file
   * skips UCX for those DataNodes without trying to connect again.
   */
  @Test(timeout = 300_000)
  public void testClientThatCannotReachTheDataNodesWritesOverTcp()
      throws Exception {
    start(3);
    UcxRuntime runtime = runtime();
    work = GenericTestUtils.getTestDir("unreachable-" + System.nanoTime());
    assertTrue(work.mkdirs());
    List<String> command = ChildJvm.command("-Xmx512m");
    command.add("-cp");
    command.add(ChildJvm.classPath());
    command.add(UnreachableClient.class.getName());
    command.add(fs.getUri().toString());
    File log = new File(work, "client.log");
    Process child = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(log).start();
    try {
      assertTrue(child.waitFor(200, TimeUnit.SECONDS));
    } finally {
      child.destroyForcibly();
    }
    String out = new String(Files.readAllBytes(log.toPath()),
        StandardCharsets.UTF_8);
    assertEquals(out, 0, child.exitValue());
    assertTrue(out, out.contains("first file: fell back"));
    assertTrue(out, out.contains("second file: skipped UCX"));
    assertTrue(out, out.contains("descriptors sent: 0"));

    for (int i = 0; i < UnreachableClient.SIZES.length; i++) {
      assertArrayEquals(random(UnreachableClient.SIZES[i], 40 + i),
          DFSTestUtil.readFileBuffer(fs, new Path("/unreachable-" + i)));
      assertHealthy("/unreachable-" + i);
    }
    assertEquals("nothing fetched by get", 0, fetched());
    assertEquals(0, UcxCounters.blocksOverUcx());
    assertEquals("every replica came over the socket",
        3 * (blocks(UnreachableClient.SIZES[0])
            + blocks(UnreachableClient.SIZES[1])), UcxCounters.blocksOverTcp());
    assertEquals("no UCX message reached the DataNodes", 0,
        DataNodeServer.of(runtime).clientHellos());
  }

  /** The client JVM of the test above. */
  public static final class UnreachableClient {
    static final int[] SIZES = {2 * BLOCK_SIZE + 77, BLOCK_SIZE / 3};

    public static void main(String[] args) throws Exception {
      Configuration conf = new Configuration();
      conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY,
          BLOCK_SIZE);
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
      conf.set(HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY, "tcp");
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_RDMA_UCX_ALLOW_TCP_KEY, true);
      // Forced: the policy would not even try a DataNode only tcp reaches.
      conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY,
          "fan-out");
      org.slf4j.Logger streamer =
          LoggerFactory.getLogger(ClientStream.class);
      GenericTestUtils.setLogLevel(streamer, org.apache.log4j.Level.DEBUG);
      // The streamer's decisions, and the runtime's one-line reasons.
      GenericTestUtils.LogCapturer log =
          GenericTestUtils.LogCapturer.captureLogs(
              LoggerFactory.getLogger("org.hdfsrdma.hadoop"));
      GenericTestUtils.LogCapturer streamerLog =
          GenericTestUtils.LogCapturer.captureLogs(streamer);
      FileSystem fs = FileSystem.newInstance(URI.create(args[0]), conf);
      try {
        write(fs, 0);
        String first = log.getOutput() + streamerLog.getOutput();
        // The first block's pipeline tried and fell back; its later blocks
        // (through the same DataNodes) did not try again.
        if (first.contains("over TCP: its UCX worker could not be reached")
            && !first.contains("moves over UCX")) {
          System.out.println("first file: fell back");
        }
        log.clearOutput();
        streamerLog.clearOutput();
        write(fs, 1);
        String second = log.getOutput() + streamerLog.getOutput();
        if (second.contains("(pipelines-tcp-unreachable) because of")
            && !second.contains("could not be reached")
            && !second.contains("moves over UCX")) {
          System.out.println("second file: skipped UCX");
        }
        System.out.println("descriptors sent: "
            + UcxRuntime.current().metrics().dataBytesSent());
      } finally {
        log.stopCapturing();
        streamerLog.stopCapturing();
        fs.close();
      }
      System.exit(0);
    }

    private static void write(FileSystem fs, int i) throws Exception {
      try (FSDataOutputStream out = fs.create(new Path("/unreachable-" + i),
          (short) 3)) {
        out.write(random(SIZES[i], 40 + i));
      }
    }
  }

  /**
   * The client's UCX fails in the middle of a block: the pipeline restarts
   * over TCP with the same three DataNodes (none is marked bad, none is
   * replaced), the block completes on the socket, and the next block goes
   * over UCX again, on a new connection. With the descriptors over UCX: on
   * the socket, a same-host packet needs no UCX call, so only a region
   * announced later would meet the failure.
   */
  @Test(timeout = 300_000)
  public void testUcxFailureMidBlockRecoversAndCompletes() throws Exception {
    Configuration conf = TestUcxWritePath.ucxConf();
    conf.setBoolean(
        HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_SOCKET_DESCRIPTORS_KEY, false);
    start(4, conf);
    UcxRuntime runtime = runtime();
    Path path = new Path("/ucx-lost");
    byte[] data = random(3 * BLOCK_SIZE / 2, 14);
    long midBlock;
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(data, 0, BLOCK_SIZE / 2);
      out.hflush();
      assertEquals("the first half went over UCX to all three", 3L
          * BLOCK_SIZE / 2, fetched());
      List<DatanodeInfo> before = pipeline(out);
      // Only UCX fails: the client's connection to the DataNodes' worker
      // (one for all three in this JVM) goes away, sockets stay up.
      UcxEndpoint e = runtime.connect(runtime.workerAddress(), "test")
          .get(10, TimeUnit.SECONDS);
      e.close();
      assertFalse(e.isUsable());
      midBlock = fetched();
      out.write(data, BLOCK_SIZE / 2, BLOCK_SIZE / 4);
      out.hflush();
      assertEquals("every DataNode kept, none replaced", before,
          pipeline(out));
      assertEquals(1, runtime.metrics().pipelines(
          PipelineOutcome.FELL_BACK_CLIENT));
      out.write(data, 3 * BLOCK_SIZE / 4, data.length - 3 * BLOCK_SIZE / 4);
    }
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    waitReplication(path, 3);
    assertHealthy("/ucx-lost");
    // The first block finished over the socket after its recovery; the
    // second went over UCX again, on a new connection.
    assertTrue("replicas on the socket: " + UcxCounters.blocksOverTcp(),
        UcxCounters.blocksOverTcp() >= 3);
    assertTrue("fetched after the failure: " + (fetched() - midBlock),
        fetched() - midBlock >= 3L * (data.length - BLOCK_SIZE));
  }

  /**
   * DataNodes that refuse what the client announces in the middle of a
   * block (here: a region of its memory beyond the one they accept per
   * block, a real refusal by the DataNodes' checks): each asks the client
   * to continue over TCP, and the pipeline restarts over TCP with the same
   * three DataNodes, none marked bad. The write succeeds, every byte
   * arrives, and the DataNodes keep no session of the refused block.
   */
  @Test(timeout = 300_000)
  public void testDataNodesRefusingTheClientRestartOverTcp() throws Exception {
    Configuration conf = TestUcxWritePath.ucxConf();
    // One packet buffer per slab (a slab is a region), one region a block.
    conf.setLong(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_POOL_SLAB_BYTES_KEY,
        128 * 1024);
    conf.setInt(HdfsRdmaConfigKeys.DFS_DATANODE_RDMA_MAX_REGIONS_PER_BLOCK_KEY,
        1);
    start(3, conf);
    UcxRuntime runtime = runtime();
    Path path = new Path("/refused");
    byte[] data = random(BLOCK_SIZE / 2, 15);
    try (FSDataOutputStream out = fs.create(path, (short) 3)) {
      out.write(data, 0, 1000);
      out.hflush();
      assertEquals("the first packet went over UCX to all three", 3000L,
          fetched());
      List<DatanodeInfo> before = pipeline(out);
      // The next packet's buffer comes from a second region, whatever the
      // timing: every buffer of the regions so far is held here.
      RegisteredBufferPool pool = runtime.pools().client(
          cluster.getConfiguration(0).getInt(
              HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_KEY,
              HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_DEFAULT));
      List<Long> held = holdRegisteredRegions(pool);
      try {
        out.write(data, 1000, data.length - 1000);
        out.hflush();
      } finally {
        held.forEach(pool::release);
      }
      assertEquals("every DataNode kept, none replaced", before,
          pipeline(out));
    }
    assertEquals(1, runtime.metrics().pipelines(
        PipelineOutcome.FELL_BACK_DATANODE));
    long fellBack = 0;
    for (UcxDataNodeMetrics m : runtime.metrics().dataNodes()) {
      fellBack += m.blocksFellBack();
    }
    assertTrue("DataNodes that asked for TCP: " + fellBack, fellBack >= 1);
    assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
    waitReplication(path, 3);
    assertHealthy("/refused");
    DataNodeServer server = DataNodeServer.of(runtime);
    WaitFor.waitFor(() -> server.sessions().size() == 0, 50, 30_000);
    assertTrue(runtime.worker().isRunning());
  }

  /**
   * Leases every buffer of {@code pool}'s regions registered so far, once
   * the stream in flight gave its buffers back, and registers one more
   * region whose buffers stay free: the next packet is built in it.
   */
  private static List<Long> holdRegisteredRegions(RegisteredBufferPool pool)
      throws Exception {
    WaitFor.waitFor(() -> pool.metrics().inUseBytes() == 0, 20, 30_000);
    int regions = pool.regionCount();
    List<Long> held = new ArrayList<>();
    while (true) {
      long token = pool.tryAcquire();
      assertTrue("the pool grows", token != RegisteredBufferPool.NO_LEASE);
      if (pool.regionId(token) >= regions) {
        pool.release(token);
        return held;
      }
      held.add(token);
    }
  }

  /** The DataNodes of {@code out}'s current pipeline, in order. */
  private static List<DatanodeInfo> pipeline(FSDataOutputStream out) {
    return Arrays.asList(((DFSOutputStream) out.getWrappedStream())
        .getPipeline());
  }

  @Test(timeout = 300_000)
  public void testAbortedStreamsGiveTheirBuffersBack() throws Exception {
    start(3);
    UcxRuntime runtime = runtime();
    RegisteredBufferPool pool = runtime.pools().client(
        cluster.getConfiguration(0).getInt(
            HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_KEY,
            HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_DEFAULT));
    long acquisitions = pool.metrics().acquisitions();
    // No reference to the streams is kept here: an aborted stream's
    // packet under construction gets its buffer back once it is garbage.
    for (int i = 0; i < 4; i++) {
      FSDataOutputStream out = fs.create(new Path("/aborted" + i),
          (short) 3);
      out.write(random(100_000, 30 + i));
      out.hflush();
      out.write(random(10_000, 40 + i)); // a packet under construction
    }
    assertTrue("packets in registered memory",
        pool.metrics().acquisitions() > acquisitions);
    assertTrue(pool.metrics().inUseBytes() > 0);
    assertTrue("the flushed bytes went over UCX",
        fetched() >= 3L * 4 * 100_000);
    // What a lease expiry or a client shutting down does to its streams.
    fs.getClient().closeAllFilesBeingWritten(true);
    WaitFor.waitFor(() -> {
      System.gc();
      UcxTestAccess.reclaimAbandoned();
      return pool.metrics().inUseBytes() == 0;
    }, 100, 60_000);
    assertEquals(0, pool.metrics().outstandingLeases());
    pool.assertNoLeaks();
  }
}
