package org.hdfsrdma.ucx;

import java.io.Closeable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The UCX context of this JVM: the features the write path needs (active
 * messages for descriptors, RMA for gets, wakeup so idle threads sleep) and
 * the UCX configuration they run with. Tagged and stream messaging are not
 * requested: nothing here receives them, and UCX would keep every
 * unexpected tagged message a peer sends until the process dies.
 *
 * <p>A JVM needs one; workers, memory registrations and endpoints hang off
 * it and must be closed before it.
 */
public final class UcxContext implements Closeable {

  private static final Logger LOG = LoggerFactory.getLogger(UcxContext.class);

  /** "#      resource 0  :  md 0  dev 0  flags -- tcp/lo" */
  private static final Pattern RESOURCE = Pattern.compile(
      "resource\\s+\\d+\\s*:.*--\\s*(\\S+)");

  /** What a context is created with. Immutable. */
  public static final class Options {
    private final Map<String, String> ucxConfig;
    private final boolean peerErrorHandling;

    private Options(Map<String, String> ucxConfig, boolean peerErrorHandling) {
      this.ucxConfig = Collections.unmodifiableMap(
          new LinkedHashMap<String, String>(ucxConfig));
      this.peerErrorHandling = peerErrorHandling;
    }

    /** The defaults: UCX's own transport choice, peer error handling on. */
    public static Options defaults() {
      return new Options(Collections.<String, String>emptyMap(), true);
    }

    /**
     * The same options with one UCX configuration variable set, as the
     * environment variable UCX_{@code name} would (for example "TLS").
     */
    public Options withUcxConfig(String name, String value) {
      Map<String, String> config = new LinkedHashMap<String, String>(ucxConfig);
      config.put(name, value);
      return new Options(config, peerErrorHandling);
    }

    /**
     * The same options with peer error handling on or off. On: a dead peer
     * fails its endpoint's operations; UCX 1.13 then picks transports that
     * can report peer failure (tcp rather than cma for RMA). Off: UCX may
     * pick the fastest shared-memory lanes but cannot detect a dead peer.
     * See this module's README for the measured trade-off.
     */
    public Options withPeerErrorHandling(boolean on) {
      return new Options(ucxConfig, on);
    }

    public Map<String, String> ucxConfig() {
      return ucxConfig;
    }

    public boolean peerErrorHandling() {
      return peerErrorHandling;
    }

    @Override
    public String toString() {
      return "UCX config " + ucxConfig + ", peer error handling "
          + (peerErrorHandling ? "on" : "off");
    }
  }

  /**
   * UCX's adaptive progress, off unless the operator sets it: with it, a
   * transport interface no endpoint uses is armed from UCX's own code,
   * which aborts the process on any error arming it. From UCX 1.16 an
   * empty datagram to a shared-memory interface's wake-up socket (an
   * abstract unix socket: any local user may send to it) is such an error
   * ({@code ucp_worker.c: Fatal: failed to arm iface ... Connection reset
   * by remote peer}): DataNodes on 1.16 to 1.22 died of it. Without it
   * every interface is armed through {@code ucp_worker_arm}, whose error
   * the caller takes as a wake-up and progresses again.
   */
  static final String ADAPTIVE_PROGRESS = "ADAPTIVE_PROGRESS";

  private final UcpContext context;
  private final Options options;
  private final AtomicBoolean closed = new AtomicBoolean();
  /** Workers and memory registrations still open on this context. */
  private final AtomicInteger dependents = new AtomicInteger();

  /**
   * Creates the UCX context.
   *
   * @throws UcxUnavailableException when the UCX libraries cannot be loaded
   *     or UCX refuses the configuration
   */
  public UcxContext(Options options) throws UcxUnavailableException {
    UcxLibrary.ensureAvailable();
    String release = UcxRelease.loaded();
    String refusal = UcxRelease.refusal(release);
    if (refusal != null) {
      throw new UcxUnavailableException(refusal);
    }
    this.options = options;
    UcpParams params = new UcpParams()
        .requestAmFeature()
        .requestRmaFeature()
        .requestWakeupFeature()
        .setMtWorkersShared(false);
    if (!options.ucxConfig().containsKey(ADAPTIVE_PROGRESS)
        && System.getenv("UCX_" + ADAPTIVE_PROGRESS) == null) {
      params.setConfig(ADAPTIVE_PROGRESS, "n");
    }
    for (Map.Entry<String, String> e : options.ucxConfig().entrySet()) {
      params.setConfig(e.getKey(), e.getValue());
    }
    try {
      this.context = new UcpContext(params);
    } catch (RuntimeException e) {
      throw new UcxUnavailableException("UCX refused to create a context with "
          + options + ": " + e.getMessage(), e);
    }
    String keys = UcxRelease.keyLayoutProblem(this);
    if (keys != null) {
      close();
      throw new UcxUnavailableException("UCX " + release + " packs remote"
          + " keys in a layout hdfs-rdma does not know (" + keys + "); it"
          + " runs on UCX " + UcxRelease.OLDEST + " to "
          + UcxRelease.NEWEST_TESTED);
    }
    if (UcxRelease.newerThanTested(release)) {
      LOG.warn("UCX {} is newer than the releases hdfs-rdma was tested with"
          + " ({} to {}); its remote keys have a known layout, so it runs",
          release, UcxRelease.OLDEST, UcxRelease.NEWEST_TESTED);
    }
    LOG.debug("Created UCX context with {} on UCX {}", options, release);
  }

  /**
   * The transport resources this context opened, as UCX names them
   * ("tcp/eth0", "sysv/memory", "rc_mlx5/mlx5_0:1"...): what its workers
   * will use. Known before any worker exists, so before a transport opens
   * a listening socket.
   */
  public Set<String> resources() {
    Set<String> out = new TreeSet<String>();
    String info = NativeIntrospection.contextInfo(ucp().getNativeId());
    if (info != null) {
      Matcher m = RESOURCE.matcher(info);
      while (m.find()) {
        out.add(m.group(1));
      }
    }
    return out;
  }

  /** The options this context was created with. */
  public Options options() {
    return options;
  }

  UcpContext ucp() {
    if (closed.get()) {
      throw new IllegalStateException("UCX context is closed");
    }
    return context;
  }

  /** A worker or a memory registration was created on this context. */
  void retain() {
    dependents.incrementAndGet();
  }

  /** A worker or a memory registration of this context was released. */
  void release() {
    dependents.decrementAndGet();
  }

  /** Workers and registrations not yet released, for leak checks. */
  public int openDependents() {
    return dependents.get();
  }

  /**
   * Releases the UCX context. When workers or registered memory are still
   * open (a leak elsewhere), the native context is deliberately left alive:
   * UCX aborts the process when a context is cleaned up under live
   * registrations, and a leak is better than a dead DataNode. Idempotent.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      int open = dependents.get();
      if (open != 0) {
        LOG.error("UCX context closed with {} worker(s) or registration(s)"
            + " still open; leaving it allocated rather than crash", open);
        return;
      }
      context.close();
    }
  }
}
