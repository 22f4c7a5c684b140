package org.hdfsrdma.hadoop.dropin;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.hdfsrdma.hadoop.metrics.ClientOutcomes;
import org.hdfsrdma.hadoop.metrics.PipelineOutcome;
import org.junit.After;
import org.junit.Test;

/**
 * An operator's rollback and roll forward, one DataNode at a time, while
 * a job writes: DataNodes on Hadoop 3.4.2 with the agent and the one
 * switch ({@code dfs.datanode.rdma.enabled}, no plugin entry) are
 * restarted without the agent (stock Hadoop, hdfs-site.xml untouched),
 * then with it again. Every DataNode starts each time, every byte written
 * meanwhile (whole files and an hflush log that stays open throughout)
 * reads back the same, and after the roll forward UCX carries the bytes
 * again.
 */
public class TestRollBackAndForward {

  private static final int DATANODES = 3;
  private static final int FILE_BYTES = 2 * 1024 * 1024 + 99;

  private AgentCluster cluster;

  @After
  public void tearDown() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** Writes whole files and an hflush log until stopped; keeps what. */
  private static final class Writer extends Thread {
    private final FileSystem fs;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicReference<Throwable> failure =
        new AtomicReference<Throwable>();
    private final List<Path> files = new ArrayList<Path>();
    private final ByteArrayOutputStream log = new ByteArrayOutputStream();

    Writer(FileSystem fs) {
      super("roll-writer");
      this.fs = fs;
    }

    static byte[] content(Path p) {
      byte[] b = new byte[FILE_BYTES];
      new Random(p.getName().hashCode()).nextBytes(b);
      return b;
    }

    @Override
    public void run() {
      Random r = new Random(7);
      try (FSDataOutputStream logOut = fs.create(new Path("/roll/log"),
          (short) DATANODES)) {
        for (int n = 0; !stop.get(); n++) {
          Path p = new Path("/roll/file-" + n);
          try (FSDataOutputStream out = fs.create(p, (short) DATANODES)) {
            out.write(content(p));
          }
          synchronized (files) {
            files.add(p);
          }
          byte[] record = new byte[4096];
          r.nextBytes(record);
          logOut.write(record);
          logOut.hflush();
          log.write(record);
        }
      } catch (Throwable t) {
        failure.set(t);
      }
    }

    int written() {
      synchronized (files) {
        return files.size();
      }
    }

    /** Waits for {@code more} files beyond those written so far. */
    void awaitMore(int more) throws Exception {
      int target = written() + more;
      long deadline = System.nanoTime() + 120_000_000_000L;
      while (written() < target && failure.get() == null
          && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertNull("the writer failed: " + failure.get(), failure.get());
      assertTrue("the writer wrote no more", written() >= target);
    }
  }

  @Test(timeout = 600_000)
  public void testRollBackAndForwardWhileWriting() throws Exception {
    cluster = new AgentCluster("roll", "3.4.2", DATANODES);
    Configuration conf = cluster.clientConf();
    // Three DataNodes for three replicas: a pipeline that lost one keeps
    // the two left, as small clusters are configured (stock or not).
    conf.setBoolean(
        "dfs.client.block.write.replace-datanode-on-failure.best-effort",
        true);
    Writer writer;
    try (DistributedFileSystem fs = (DistributedFileSystem)
        FileSystem.newInstance(URI.create(cluster.fsUri()), conf)) {
      writer = new Writer(fs);
      writer.start();
      try {
        writer.awaitMore(2);
        long ucxBefore = cluster.fetched();
        assertTrue("UCX carried the first files", ucxBefore > 0);
        long stockBefore = ClientOutcomes.pipelines(
            PipelineOutcome.TCP_STOCK_DATANODE);

        for (int i = 0; i < DATANODES; i++) {
          cluster.restartDataNode(i, false);
          writer.awaitMore(2);
        }
        assertTrue("no DataNode serves UCX once all are stock",
            cluster.beans().isEmpty());
        writer.awaitMore(2);
        assertTrue("the client counts pipelines through stock DataNodes",
            ClientOutcomes.pipelines(PipelineOutcome.TCP_STOCK_DATANODE)
                > stockBefore);

        for (int i = 0; i < DATANODES; i++) {
          cluster.restartDataNode(i, true);
          writer.awaitMore(2);
        }
        assertEquals(DATANODES, cluster.beans().size());
        long fetched = cluster.fetched();
        writer.awaitMore(3);
        assertTrue("UCX carries the bytes after the roll forward",
            cluster.fetched() > fetched);
      } finally {
        writer.stop.set(true);
        writer.join(120_000);
      }
      assertFalse(writer.isAlive());
      assertNull("the writer failed: " + writer.failure.get(),
          writer.failure.get());
      for (Path p : writer.files) {
        assertArrayEquals(p.toString(), Writer.content(p),
            cluster.readFile(p));
      }
      assertArrayEquals(writer.log.toByteArray(),
          cluster.readFile(new Path("/roll/log")));
    }
  }
}
