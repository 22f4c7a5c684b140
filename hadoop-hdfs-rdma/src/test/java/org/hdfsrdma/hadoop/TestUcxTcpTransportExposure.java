package org.hdfsrdma.hadoop;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.util.StringUtils;
import org.hdfsrdma.hadoop.ProcessCluster.DataNodeProcess;
import org.hdfsrdma.hadoop.conf.HdfsRdmaConfigKeys;
import org.hdfsrdma.hadoop.runtime.UcxRuntime;
import org.hdfsrdma.ucx.UcxLibrary;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Why UCX's tcp transport stays off unless an operator says the network is
 * trusted ({@code dfs.rdma.ucx.allow-tcp}): with it on, a DataNode's UCX
 * listens on a port any host can reach, and a stranger's crafted bytes
 * there kill the DataNode JVM (UCX 1.13 asserts or crashes parsing its tcp
 * connection protocol). This test shows the hazard is real on the UCX this
 * build runs with; when a UCX release stops dying here, it fails, and the
 * default deserves another look (DESIGN.md, "Threat model").
 *
 * <p>With {@code dfs.rdma.ucx.tls=tcp} and {@code dfs.rdma.ucx.allow-tcp=true},
 * a put first works over UCX's tcp; then crafted connections to UCX's tcp port
 * kill the DataNode JVM. The test fails if the DataNode survives 1,000 of them.
 */
public class TestUcxTcpTransportExposure {
  private static final Logger LOG =
      LoggerFactory.getLogger(TestUcxTcpTransportExposure.class);

  /** Connections tried before concluding UCX survives its tcp port. */
  private static final int CASES = 1000;

  @Test(timeout = 600_000)
  public void testStrangerKillsADataNodeThroughUcxTcpPort() throws Exception {
    assumeTrue("UCX unavailable: " + UcxLibrary.unavailableReason(),
        UcxLibrary.isAvailable());
    ProcessCluster cluster = new ProcessCluster("tcp-exposure").start(1, -1,
        ProcessCluster.Jvm.PATCHED, "dfs.rdma.ucx.tls=tcp",
        "dfs.rdma.ucx.allow-tcp=true",
        "dfs.datanode.rdma.allow-emulated-gets=true");
    try {
      DataNodeProcess dn = cluster.dataNodes().get(0);
      // UCX over tcp works between trusting peers: a put fetched by gets.
      Configuration conf = new Configuration();
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_ENABLED_KEY, true);
      conf.set(HdfsRdmaConfigKeys.DFS_RDMA_UCX_TLS_KEY, "tcp");
      conf.setBoolean(HdfsRdmaConfigKeys.DFS_RDMA_UCX_ALLOW_TCP_KEY, true);
      conf.set(HdfsRdmaConfigKeys.DFS_CLIENT_RDMA_DISTRIBUTION_KEY,
          "fan-out");
      DistributedFileSystem fs = cluster.client(conf, 1);
      byte[] data = new byte[1 << 20];
      new Random(3).nextBytes(data);
      Path path = new Path("/over-tcp");
      try (FSDataOutputStream out = fs.create(path, (short) 1)) {
        out.write(data);
      }
      assertArrayEquals(data, DFSTestUtil.readFileBuffer(fs, path));
      assertEquals(data.length,
          ProcessCluster.rdmaBean(dn, "DataBytesFetched"));
      fs.close();
      UcxRuntime.shutdown();

      Set<Integer> ports = ucxPorts(cluster, dn);
      assertFalse("UCX's tcp transport listens", ports.isEmpty());
      Random random = new Random(1);
      for (int i = 0; i < CASES; i++) {
        for (int port : ports) {
          byte[] msg = craft(random, i);
          try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
            s.setSoTimeout(200);
            OutputStream o = s.getOutputStream();
            o.write(msg);
            o.flush();
            s.getInputStream().read(new byte[256]);
          } catch (IOException e) {
            // reset, timeout, or the DataNode gone
          }
          if (!dn.process.waitFor(50, TimeUnit.MILLISECONDS)) {
            continue;
          }
          LOG.info("A stranger's connection {} to UCX's tcp port {} ({}"
              + " bytes: {}) killed the DataNode", i + 1, port, msg.length,
              StringUtils.byteToHexString(msg));
          for (String line : cluster.log(dn.name).split("\n")) {
            if (line.contains("Assertion") || line.contains("Caught signal")
                || line.contains("Fatal")) {
              LOG.info("DataNode: {}", line);
            }
          }
          return;
        }
      }
      fail("the DataNode survived " + CASES + " crafted connections to UCX's"
          + " tcp ports " + ports + ": revisit dfs.rdma.ucx.allow-tcp");
    } finally {
      cluster.close();
    }
  }

  /** The DataNode's listening TCP ports that are not Hadoop's. */
  private static Set<Integer> ucxPorts(ProcessCluster cluster,
      DataNodeProcess dn) throws IOException {
    long pid = ProcessCluster.pid(dn.process);
    Set<String> inodes = TestHostilePeers.socketInodes(pid);
    Set<Integer> ports = new HashSet<Integer>();
    for (String table : new String[] {"tcp", "tcp6"}) {
      for (String line : Files.readAllLines(new File("/proc/" + pid
          + "/net/" + table).toPath(), StandardCharsets.UTF_8)) {
        String[] f = line.trim().split("\\s+");
        if (f.length > 9 && f[3].equals("0A") && inodes.contains(f[9])) {
          ports.add(Integer.parseInt(f[1].substring(
              f[1].indexOf(':') + 1), 16));
        }
      }
    }
    ports.remove(dn.xferPort);
    ports.remove(dn.httpPort);
    ports.remove(dn.ipcPort);
    Matcher jetty = Pattern.compile("Jetty bound to port (\\d+)")
        .matcher(cluster.log(dn.name));
    while (jetty.find()) {
      ports.remove(Integer.parseInt(jetty.group(1)));
    }
    return ports;
  }

  /**
   * Bytes a stranger sends: random; UCX's tcp magic number and random
   * bytes; the magic number, a UCX tcp header (connection manager, put
   * request/ack, keepalive or another id; lengths from 0 to 2^31) and a
   * connection request or random bytes.
   */
  private static byte[] craft(Random r, int i) {
    int kind = i % 4;
    if (kind == 0) {
      byte[] b = new byte[r.nextInt(64)];
      r.nextBytes(b);
      return b;
    }
    ByteBuffer b = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(0xCAFEBABE12345678L);
    if (kind == 1) {
      byte[] rest = new byte[r.nextInt(100)];
      r.nextBytes(rest);
      b.put(rest);
    } else {
      // am header: id (CM 64, PUT_REQ 65, PUT_ACK 66, KEEPALIVE 67, other)
      int[] ids = {64, 65, 66, 67, r.nextInt(256)};
      b.put((byte) ids[r.nextInt(ids.length)]);
      int[] lens = {0, 1, 4, 13, 16, 29, 40, r.nextInt(200), 0x7fffffff,
          -1, 1 << 20};
      b.putInt(lens[r.nextInt(lens.length)]);
      if (kind == 2) {
        // conn req: event, flags, cm id (conn_sn u32 + key u64), sockaddr
        b.putInt(1 + r.nextInt(7));
        b.put((byte) r.nextInt(4));
        b.putInt(r.nextInt());
        b.putLong(r.nextLong());
        b.putShort((short) 2);
        b.putShort((short) r.nextInt(65536));
        b.putInt(0x0100007f);
      } else {
        byte[] rest = new byte[r.nextInt(64)];
        r.nextBytes(rest);
        b.put(rest);
      }
    }
    byte[] out = new byte[b.position()];
    b.flip();
    b.get(out);
    return out;
  }
}
