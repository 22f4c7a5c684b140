#!/usr/bin/env bash
# Per-transfer cost against size (the seed paper's Fig. 4): a Java socket,
# UCX messages and a UCX get through jucx-bridge (on one host with the
# product's transports the get is a direct read of the peer's shared
# memory), between two JVMs on this host, with and without connection
# set-up counted in each transfer. Runs the JMH benchmarks jar and writes
# to DIR:
#   jmh.json        JMH's own result
#   jmh.log         JMH's console output (with the UCX lanes of each trial)
#   transports.tsv  benchmark, size, how UCX moved the bytes (lanes, direct
#                   read or get)
#   environment.txt machine, JDK, UCX, commit, JMH options
#   transfer.csv    benchmark,setup_counted,size_bytes,us_per_op,error,transport
#   crossover.csv   the size from which UCX send / get beat the socket
#   transfer.png    transfer time against size, log-log, two panels
#
# Usage: benchmarks/transfer.sh --out DIR [--tiny|--small|--paper]
#                               [-- EXTRA_JMH_ARGS...]
#   --tiny   1 KiB, 64 KiB, 1 MiB; 1 fork, 1+2 iterations of 100 ms (CI,
#            about half a minute)
#   --small  (default) 1 KiB to 4 MiB; 1 fork, 2+3 iterations of 300/400 ms
#            (about 2-3 minutes)
#   --paper  1 KiB to 4 MiB; 2 forks, 3+5 iterations of 1 s (about 15
#            minutes)
# Builds benchmarks/jmh/target/benchmarks.jar first if it is missing.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$here/dev-support/java-env.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }

out=""
mode=small
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --tiny|--small|--paper) mode="${1#--}"; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "transfer.sh: unknown argument $1" >&2; usage ;;
  esac
done
[ -n "$out" ] || usage

all_sizes=1024,4096,16384,65536,262144,1048576,4194304
case "$mode" in
  tiny)  jmh_opts=(-p size=1024,65536,1048576 -f 1 -wi 1 -w 100ms -i 2 -r 100ms) ;;
  small) jmh_opts=(-p size=$all_sizes -f 1 -wi 2 -w 300ms -i 3 -r 400ms) ;;
  paper) jmh_opts=(-p size=$all_sizes -f 2 -wi 3 -w 1s -i 5 -r 1s) ;;
esac

jar="$here/benchmarks/jmh/target/benchmarks.jar"
if [ ! -f "$jar" ]; then
  echo "transfer.sh: building $jar" >&2
  (cd "$here" && mvn -B -q -ntp -DskipTests -pl benchmarks/jmh -am install)
fi

# A python3 with matplotlib (Debian's python3-matplotlib is for /usr/bin's).
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import matplotlib' 2>/dev/null; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  echo "transfer.sh: no python3 with matplotlib; apt-get install -y" \
    "python3-matplotlib (the CSV files are still written)" >&2
  python=python3
fi

mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out/transports.tsv" "$out/jmh.json"
{
  echo "mode: $mode"
  echo "jmh options: ${jmh_opts[*]} ${extra[*]:-}"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "java: $(java -version 2>&1 | head -1)"
  echo "ucx: $(ucx_info -v 2>/dev/null | head -1 || echo unknown)"
  echo "UCX_TLS: ${UCX_TLS:-(unset: ^tcp, as in the product)}"
  echo "UCX environment: $(env | grep '^UCX_' | sort | tr '\n' ' ')"
  echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} > "$out/environment.txt"

start=$(date +%s)
HDFSRDMA_BENCH_TRANSPORTS="$out/transports.tsv" \
  java -jar "$jar" 'org.hdfsrdma.benchmarks.TransferBenchmark' \
    "${jmh_opts[@]}" -rf json -rff "$out/jmh.json" ${extra[@]+"${extra[@]}"} \
    2>&1 | tee "$out/jmh.log"
took=$(( $(date +%s) - start ))
echo "benchmarks took ${took} s" | tee -a "$out/environment.txt"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/environment.txt"
[ -s "$out/jmh.json" ] || { echo "transfer.sh: JMH wrote no result" >&2; exit 1; }

echo
"$python" "$here/benchmarks/plot_transfer.py" --jmh "$out/jmh.json" \
  --transports "$out/transports.tsv" --out "$out" --title "$mode run"
