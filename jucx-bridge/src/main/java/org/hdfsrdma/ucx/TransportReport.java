package org.hdfsrdma.ucx;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which UCX transports a connection really uses, read from UCX's own
 * endpoint description (ucp_ep_print_info): one lane per transport and
 * device, each with the roles UCX gave it (rma_bw for large gets, am for
 * active messages, rkey_ptr for direct mapping of shared memory, ...).
 *
 * <p>For logs, benchmarks and diagnostics: "get over cma/memory" and "get
 * over tcp/lo" differ by an order of magnitude in bandwidth.
 */
public final class TransportReport {

  /** One UCX lane: a transport on a device with its roles. */
  public static final class Lane {
    private final int index;
    private final String transport;
    private final String device;
    private final Set<String> roles;
    private final int peerMemoryDomain;
    private final String peerComponent;

    Lane(int index, String transport, String device, Set<String> roles,
        int peerMemoryDomain, String peerComponent) {
      this.index = index;
      this.transport = transport;
      this.device = device;
      this.roles = Collections.unmodifiableSet(roles);
      this.peerMemoryDomain = peerMemoryDomain;
      this.peerComponent = peerComponent;
    }

    public int index() {
      return index;
    }

    /** UCX transport name: tcp, cma, posix, sysv, rc_mlx5, dc_mlx5, ud... */
    public String transport() {
      return transport;
    }

    public String device() {
      return device;
    }

    /** Roles without priorities: rma_bw, rma, am, am_bw, rkey_ptr... */
    public Set<String> roles() {
      return roles;
    }

    /**
     * The index of the peer's memory domain this lane reaches (the index
     * the peer's packed remote keys use), or -1 when UCX did not say.
     */
    public int peerMemoryDomain() {
      return peerMemoryDomain;
    }

    /**
     * The UCX component of that memory domain (sysv, posix, tcp, cma, ib,
     * ...): the one whose code unpacks the key entries of that domain.
     */
    public String peerComponent() {
      return peerComponent;
    }

    /** True when UCX uses this lane for gets and puts. */
    public boolean carriesRma() {
      return roles.contains("rma_bw") || roles.contains("rma")
          || roles.contains("rkey_ptr");
    }

    @Override
    public String toString() {
      return transport + "/" + device + roles;
    }
  }

  // "lane[0]:  8:tcp/lo.0 md[4]     -> md[4]/tcp/sysdev[255] rma_bw#0 am"
  private static final Pattern LANE = Pattern.compile(
      "lane\\[(\\d+)\\]:\\s*\\d+:([^/\\s]+)/(\\S+?)\\.\\d+\\s.*?->\\s*\\S+(.*)$");

  // "-> md[4]/tcp/sysdev[255]" (UCX may print "addr[N]." before "md[").
  private static final Pattern PEER_DOMAIN = Pattern.compile(
      "->\\s*(?:addr\\[\\d+\\]\\.)?md\\[(\\d+)\\]/([^/\\s]+)/");

  private static final TransportReport UNKNOWN_REPORT = new TransportReport(
      Collections.<Lane>emptyList(), null);

  private final List<Lane> lanes;
  private final String raw;

  private TransportReport(List<Lane> lanes, String raw) {
    this.lanes = Collections.unmodifiableList(lanes);
    this.raw = raw;
  }

  /** A report for when UCX's description could not be had. */
  public static TransportReport unknown() {
    return UNKNOWN_REPORT;
  }

  /** Parses ucp_ep_print_info output; unknown lines are ignored. */
  public static TransportReport parse(String endpointInfo) {
    if (endpointInfo == null) {
      return UNKNOWN_REPORT;
    }
    List<Lane> lanes = new ArrayList<Lane>();
    for (String line : endpointInfo.split("\n")) {
      Matcher m = LANE.matcher(line);
      if (!m.find()) {
        continue;
      }
      Set<String> roles = new LinkedHashSet<String>();
      for (String role : m.group(4).trim().split("\\s+")) {
        if (!role.isEmpty() && !role.startsWith("{")) {
          int hash = role.indexOf('#');
          roles.add(hash < 0 ? role : role.substring(0, hash));
        }
      }
      Matcher peer = PEER_DOMAIN.matcher(line);
      boolean known = peer.find();
      lanes.add(new Lane(Integer.parseInt(m.group(1)), m.group(2),
          m.group(3), roles, known ? Integer.parseInt(peer.group(1)) : -1,
          known ? peer.group(2) : null));
    }
    return new TransportReport(lanes, endpointInfo);
  }

  /** True when UCX described the endpoint. */
  public boolean isKnown() {
    return raw != null;
  }

  public List<Lane> lanes() {
    return lanes;
  }

  /**
   * The peer's memory domains this endpoint's lanes reach, by index, with
   * the UCX component of each: what ucp_ep_rkey_unpack will unpack a key
   * entry of that domain as.
   */
  public Map<Integer, String> peerMemoryDomains() {
    Map<Integer, String> domains = new TreeMap<Integer, String>();
    for (Lane lane : lanes) {
      if (lane.peerMemoryDomain() >= 0) {
        domains.put(lane.peerMemoryDomain(), lane.peerComponent());
      }
    }
    return domains;
  }

  /** Every transport the endpoint has a lane on. */
  public Set<String> transports() {
    Set<String> names = new LinkedHashSet<String>();
    for (Lane lane : lanes) {
      names.add(lane.transport());
    }
    return names;
  }

  /** Transports UCX uses for gets (RMA lanes), in lane order. */
  public Set<String> rmaTransports() {
    Set<String> names = new LinkedHashSet<String>();
    for (Lane lane : lanes) {
      if (lane.carriesRma()) {
        names.add(lane.transport());
      }
    }
    return names;
  }

  /** Transports UCX uses for active messages (our descriptors). */
  public Set<String> amTransports() {
    Set<String> names = new LinkedHashSet<String>();
    for (Lane lane : lanes) {
      if (lane.roles().contains("am") || lane.roles().contains("am_bw")) {
        names.add(lane.transport());
      }
    }
    return names;
  }

  /** UCX's full text, or null when unknown. */
  public String raw() {
    return raw;
  }

  /** True when some lane is a shared-memory transport (one host). */
  public boolean usesSharedMemory() {
    for (String t : transports()) {
      if (t.equals("cma") || t.equals("posix") || t.equals("sysv")
          || t.equals("xpmem") || t.equals("knem")) {
        return true;
      }
    }
    return false;
  }

  /**
   * One line for logs, with UCX's lanes as UCX names them: "RMA lanes cma,
   * AM lanes sysv". Over tcp UCX 1.13 has no native get; the bytes of a
   * get then move as UCX's active-message protocol on the lanes it picked.
   */
  @Override
  public String toString() {
    if (!isKnown()) {
      return "transports unknown";
    }
    return "RMA lanes " + join(rmaTransports()) + ", AM lanes "
        + join(amTransports());
  }

  private static String join(Set<String> names) {
    return names.isEmpty() ? "none" : String.join("+", names);
  }
}
