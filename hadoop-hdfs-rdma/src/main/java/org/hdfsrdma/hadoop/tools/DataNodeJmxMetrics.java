package org.hdfsrdma.hadoop.tools;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.hdfsrdma.hadoop.metrics.UcxDataNodeMetrics;
import org.hdfsrdma.hadoop.metrics.UcxJvmMetrics;

/**
 * One DataNode's hdfs-rdma metrics as its web server serves them in JMX
 * ({@code /jmx}), the way an operator's monitoring would read them: the
 * DataNode's metrics2 source
 * {@code Hadoop:service=DataNode,name=HdfsRdmaDataNode-<host>-<port>}
 * ({@code UcxDataNodeMetrics}: bytes fetched, blocks) and its JVM's
 * {@code Hadoop:service=DataNode,name=HdfsRdma} ({@code UcxJvmMetrics}:
 * transports), read in one query. Being metrics2 sources, not beans of
 * their own, they show their values as of metrics2's last snapshot, which
 * a read refreshes only when a metrics period ({@code *.period} in
 * hadoop-metrics2.properties, 10 s by default) has passed since the
 * previous refresh: a read can be up to one period old.
 */
public final class DataNodeJmxMetrics {

  /** The JMX query that finds both beans (one DataNode per web server). */
  public static final String NAME = "Hadoop:service=DataNode,name="
      + UcxJvmMetrics.SOURCE_NAME + "*";

  /** The DataNode source's name up to the DataNode's host and port. */
  private static final String NAME_PREFIX = "Hadoop:service=DataNode,name="
      + UcxDataNodeMetrics.SOURCE_PREFIX;

  private static final int TIMEOUT_MS = 10_000;

  private final String json;

  private DataNodeJmxMetrics(String json) {
    this.json = json;
  }

  /**
   * The bean of the DataNode whose web server is at {@code httpAddress}
   * (host:port), or null when that DataNode has none (hdfs-rdma's runtime
   * did not start there).
   *
   * @throws IOException when the web server cannot be read
   */
  public static DataNodeJmxMetrics read(String httpAddress) throws IOException {
    URL url = new URL("http://" + httpAddress + "/jmx?qry=" + NAME);
    HttpURLConnection c = (HttpURLConnection) url.openConnection();
    c.setConnectTimeout(TIMEOUT_MS);
    c.setReadTimeout(TIMEOUT_MS);
    try {
      if (c.getResponseCode() != 200) {
        throw new IOException(url + ": HTTP " + c.getResponseCode());
      }
      String json;
      try (InputStream in = c.getInputStream()) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        for (int n; (n = in.read(buf)) > 0;) {
          out.write(buf, 0, n);
        }
        json = new String(out.toByteArray(), StandardCharsets.UTF_8);
      }
      return json.contains("\"name\" : \"" + NAME_PREFIX)
          || json.contains("\"name\":\"" + NAME_PREFIX)
          ? new DataNodeJmxMetrics(json) : null;
    } finally {
      c.disconnect();
    }
  }

  /** A numeric attribute, e.g. DataBytesFetched, BlocksOverUcx. */
  public long get(String attribute) {
    Matcher m = Pattern.compile("\"" + Pattern.quote(attribute)
        + "\"\\s*:\\s*(-?\\d+)").matcher(json);
    if (!m.find()) {
      throw new IllegalArgumentException("no numeric attribute " + attribute
          + " in " + json);
    }
    return Long.parseLong(m.group(1));
  }

  /** A string attribute, or null when the bean has no such attribute. */
  public String getString(String attribute) {
    Matcher m = Pattern.compile("\"" + Pattern.quote(attribute)
        + "\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"").matcher(json);
    return m.find() ? m.group(1) : null;
  }

  public long dataBytesFetched() {
    return get("DataBytesFetched");
  }

  public long blocksOverUcx() {
    return get("BlocksOverUcx");
  }

  public long blocksOverTcp() {
    return get("BlocksOverTcp");
  }
}
