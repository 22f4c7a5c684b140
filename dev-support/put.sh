#!/usr/bin/env bash
# The main job: put a local file onto HDFS through the UCX write path, the
# way `hdfs dfs -put` does (FsShell, one client JVM), read it back, compare,
# and say how many bytes the DataNodes fetched over UCX (one-sided gets,
# or same-host reads of the client's shared memory).
#
#   dev-support/put.sh FILE                  embedded cluster (default)
#   dev-support/put.sh --hadoop VERSION FILE embedded cluster and client of
#                                            that Hadoop release (one of
#                                            patches/releases.txt; default
#                                            2.9.2)
#   dev-support/put.sh --conf DIR FILE       an existing cluster whose client
#                                            configuration is in DIR (the
#                                            client runs on --hadoop's jars)
#   dev-support/put.sh --java JDK ...        every JVM on the JDK (or JRE)
#                                            at JDK instead of Java 17: the
#                                            Java 8 or 11 a cluster of
#                                            2.x, 3.3 or 3.4 may run
#   dev-support/put.sh --ucx LIBDIR ...      every JVM on the UCX libraries
#                                            in LIBDIR (first on its loader
#                                            path; dev-support/ucx-wheel.sh
#                                            fetches one) instead of the
#                                            system's
#   --datanode-ucx LIBDIR, --client-ucx LIBDIR
#                                            the same for the NameNode and
#                                            DataNodes, or the client JVMs
#                                            only: clients and DataNodes
#                                            on different UCX releases
#   --allow-tcp                              succeed when the put went over
#                                            TCP in part or in full (mixed
#                                            UCX releases may not share
#                                            memory); the read-back still
#                                            has to be identical
#   --read-ucx                               the read-back (hdfs dfs -get)
#                                            reads over UCX too (the read
#                                            preview, Hadoop 3.4 and 3.5):
#                                            fails unless every byte came
#                                            over UCX
#
# The embedded cluster is a NameNode and three DataNodes, each its own JVM
# on loopback on that release's jars from Maven Central, started with the
# drop-in jar as Java agent (-javaagent:, as HADOOP_OPTS does on a
# cluster); it is stopped afterwards. Replication 3. The client JVMs get
# the agent too. Needs dev-support/setup.sh first. Exits non-zero when the
# read-back differs or, on the embedded cluster, when UCX did not carry
# every byte. Its work directory (/tmp/hdfs-rdma-put.*: the cluster, the
# logs) is deleted when it succeeds and kept when it fails.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$here/dev-support/java-env.sh"

conf_dir=""
release=2.9.2
datanode_ucx=""
client_ucx=""
allow_tcp=false
read_ucx=false
while [ $# -gt 1 ]; do
  case "$1" in
    --conf) conf_dir="$(cd "$2" && pwd)"; shift 2 ;;
    --hadoop) release="$2"; shift 2 ;;
    --java) export PATH="$(cd "$2" && pwd)/bin:$PATH"; shift 2 ;;
    --ucx) datanode_ucx="$(cd "$2" && pwd)"; client_ucx="$datanode_ucx"
           shift 2 ;;
    --datanode-ucx) datanode_ucx="$(cd "$2" && pwd)"; shift 2 ;;
    --client-ucx) client_ucx="$(cd "$2" && pwd)"; shift 2 ;;
    --allow-tcp) allow_tcp=true; shift ;;
    --read-ucx) read_ucx=true; shift ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] && [ -f "$1" ] || {
  echo "usage: dev-support/put.sh [--hadoop VERSION] [--conf" \
    "HADOOP_CONF_DIR] [--java JDK] [--ucx LIBDIR | --datanode-ucx LIBDIR" \
    "--client-ucx LIBDIR] [--allow-tcp] [--read-ucx] FILE" >&2
  exit 2
}
# The JVMs of the cluster (NameNode, DataNodes) and of the client, each on
# its UCX: "${cluster_env[@]}" java ... (env execs java, so $! is its pid).
cluster_env=()
client_env=()
[ -z "$datanode_ucx" ] || cluster_env=(env \
  "LD_LIBRARY_PATH=$datanode_ucx${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
[ -z "$client_ucx" ] || client_env=(env \
  "LD_LIBRARY_PATH=$client_ucx${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
file="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
size=$(stat -c %s "$file")

dropin=$(ls "$here"/hadoop-hdfs-rdma/target/hadoop-hdfs-rdma-*-dropin.jar \
  2>/dev/null | head -1)
[ -n "$dropin" ] || { echo "no drop-in jar: run dev-support/setup.sh" >&2;
  exit 1; }
work="$(mktemp -d /tmp/hdfs-rdma-put.XXXXXX)"
# The release's jars and their dependencies, nothing of hdfs-rdma: the
# bridge and JUCX come with the drop-in jar, which the agent appends.
hadoop_cp="$("$here/dev-support/hadoop-releases.sh" classpath "$release")" \
  || exit 1
agent="-javaagent:$dropin"

pids=()
stop_cluster() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
}
finish() {
  local status=$?
  stop_cluster
  if [ "$status" -eq 0 ]; then
    rm -rf "$work"
  else
    echo "logs and cluster kept in $work" >&2
  fi
}
trap finish EXIT

# A free port below the kernel's ephemeral range: the DataNodes connect to
# the NameNode's port before it listens, and a source port from that range
# can be that very port (a TCP self-connection, which then holds it).
free_port() {
  python3 - <<'PY'
import random, socket
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 0
for attempt in range(1000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randrange(10000, low) if low > 11000 else 0))
    except OSError:
        s.close()
        continue
    print(s.getsockname()[1])
    s.close()
    break
PY
}

if [ -z "$conf_dir" ]; then
  conf_dir="$work/conf"
  mkdir -p "$conf_dir"
  nn_port=$(free_port)
  cat > "$conf_dir/core-site.xml" <<EOF
<?xml version="1.0"?>
<configuration>
  <property><name>fs.defaultFS</name><value>hdfs://127.0.0.1:$nn_port</value></property>
  <property><name>hadoop.tmp.dir</name><value>$work/tmp</value></property>
</configuration>
EOF
  cat > "$conf_dir/hdfs-site.xml" <<EOF
<?xml version="1.0"?>
<configuration>
  <property><name>dfs.replication</name><value>3</value></property>
  <property><name>dfs.namenode.name.dir</name><value>$work/name</value></property>
  <property><name>dfs.namenode.http-address</name><value>127.0.0.1:0</value></property>
  <property><name>dfs.namenode.datanode.registration.ip-hostname-check</name><value>false</value></property>
  <property><name>dfs.datanode.rdma.enabled</name><value>true</value></property>
  <property><name>dfs.client.rdma.enabled</name><value>true</value></property>
  <!-- Shows UCX carrying every byte: the first block too. -->
  <property><name>dfs.client.rdma.defer-start</name><value>false</value></property>
</configuration>
EOF
  cat > "$conf_dir/log4j.properties" <<'EOF'
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p %c{2}: %m%n
EOF
  daemon_cp="$conf_dir:$hadoop_cp"
  "${cluster_env[@]}" java "$agent" -cp "$daemon_cp" \
    org.apache.hadoop.hdfs.server.namenode.NameNode -format -force \
    -nonInteractive > "$work/format.log" 2>&1
  "${cluster_env[@]}" java "$agent" -Xmx1g -cp "$daemon_cp" \
    org.apache.hadoop.hdfs.server.namenode.NameNode > "$work/nn.log" 2>&1 &
  pids+=($!)
  for i in 1 2 3; do
    "${cluster_env[@]}" java "$agent" -Xmx1g \
      -Dhdfsrdma.stats.file="$work/totals-dn$i.txt" \
      -cp "$daemon_cp" org.apache.hadoop.hdfs.server.datanode.DataNode \
      -D dfs.datanode.data.dir="$work/data$i" \
      -D dfs.datanode.address=127.0.0.1:0 \
      -D dfs.datanode.http.address=127.0.0.1:0 \
      -D dfs.datanode.ipc.address=127.0.0.1:0 > "$work/dn$i.log" 2>&1 &
    pids+=($!)
  done
  echo "embedded cluster: Hadoop $release, NameNode 127.0.0.1:$nn_port," \
    "3 DataNodes, logs in $work (deleted when it succeeds)"
  deadline=$((SECONDS + 120))
  until "${cluster_env[@]}" java "$agent" -cp "$daemon_cp" \
      org.apache.hadoop.hdfs.tools.DFSAdmin \
      -report 2>/dev/null | grep -q "Live datanodes (3)"; do
    if [ $SECONDS -gt $deadline ]; then
      echo "the embedded cluster did not come up; see $work/*.log" >&2
      exit 1
    fi
    sleep 1
  done
fi

client_cp="$conf_dir:$hadoop_cp"
target="/hdfs-rdma-put/$(basename "$file").$$"
"${client_env[@]}" java "$agent" -cp "$client_cp" org.apache.hadoop.fs.FsShell -mkdir -p \
  /hdfs-rdma-put \
  > "$work/mkdir.log" 2>&1 || { cat "$work/mkdir.log" >&2; exit 1; }
start=$(date +%s.%N)
"${client_env[@]}" java "$agent" -Dhdfsrdma.stats.file="$work/totals-client.txt" \
  -cp "$client_cp" org.apache.hadoop.fs.FsShell \
  -D dfs.client.rdma.enabled=true -put "$file" "$target" > "$work/put.log" 2>&1 \
  || { cat "$work/put.log" >&2; exit 1; }
end=$(date +%s.%N)
get_opts=()
[ "$read_ucx" = false ] || get_opts=(-D dfs.client.rdma.read.enabled=true)
"${client_env[@]}" java "$agent" -Dhdfsrdma.stats.file="$work/totals-get.txt" \
  -cp "$client_cp" org.apache.hadoop.fs.FsShell "${get_opts[@]}" -get \
  "$target" \
  "$work/readback" > "$work/get.log" 2>&1
cmp "$file" "$work/readback" || { echo "read-back differs!" >&2; exit 1; }
replication=$("${client_env[@]}" java "$agent" -cp "$client_cp" \
  org.apache.hadoop.fs.FsShell \
  -stat %r "$target" 2>/dev/null | grep -E '^[0-9]+$' | tail -1)

stop_cluster
pids=()
# The DataNodes' totals lines (none when no DataNode started UCX).
dn_totals="$(cat "$work"/totals-dn*.txt 2>/dev/null || true)"
fetched=$(awk -F'[= ]' '{ f += $4 } END { print f + 0 }' <<< "$dn_totals")
replicas=$(awk '{
  for (i = 1; i <= NF; i++) { split($i, kv, "=");
    if (kv[1] == "blocks-over-ucx") u += kv[2];
    if (kv[1] == "blocks-over-tcp") t += kv[2] } }
  END { printf "%d over UCX, %d over TCP", u, t }' <<< "$dn_totals")
transports=$(grep -ho "transports=[^ ]*" "$work/totals-client.txt" \
  2>/dev/null | head -1 | sed 's/transports=//; s/_/ /g')
expected=$((size * replication))
echo "Hadoop $release, $(java -version 2>&1 | grep -m1 ' version ')"
printf 'put %s (%d bytes, replication %d) in %.2f s; read back identical\n' \
  "$file" "$size" "$replication" "$(awk -v a="$start" -v b="$end" \
  'BEGIN { print b - a }')"
if [ -f "$work/totals-dn1.txt" ]; then
  printf 'bytes the DataNodes fetched over UCX: %d of %d; over TCP: %d\n' "$fetched" \
    "$expected" $((expected - fetched))
  echo "block replicas received: $replicas"
  echo "UCX transports: ${transports:-none}"
  release_in() { grep -ho 'UCX runtime started (UCX [^,]*' "$1" 2>/dev/null \
    | head -1 | sed 's/.*(UCX //'; }
  echo "UCX releases: DataNodes $(release_in "$work/dn1.log"), client" \
    "$(release_in "$work/put.log")"
  [ "$fetched" -eq "$expected" ] || [ "$allow_tcp" = true ] || {
    echo "UCX did not carry every byte; see $work/*.log" >&2; exit 1; }
else
  echo "UCX counters are read from the embedded cluster's DataNodes only"
fi
if [ "$read_ucx" = true ]; then
  # No totals file: the -get JVM never started UCX.
  read_bytes=$( (grep -ho "ucx-read-bytes=[0-9]*" "$work/totals-get.txt" \
    2>/dev/null || true) | head -1 | sed 's/.*=//')
  # The client counts whole packets: data, checksums and headers.
  printf 'bytes the client read over UCX (-get): %d, packets of the' \
    "${read_bytes:-0}"
  printf ' %d data bytes with their checksums and headers\n' "$size"
  [ "${read_bytes:-0}" -ge "$size" ] || {
    echo "the read-back did not take every byte over UCX (the read preview" \
      "hooks Hadoop 3.4 and 3.5 only); see $work/get.log" >&2; exit 1; }
fi
