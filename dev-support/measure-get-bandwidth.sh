#!/usr/bin/env bash
# Measures 64 KiB (and 1 MiB) get bandwidth between two processes: the
# bridge (Java, org.hdfsrdma.ucx.tools.GetBandwidth in benchmarks/jmh's
# benchmarks.jar, with the bridge and JUCX) next to the native
# fan-out benchmark with one getter, on the same transports, alternating
# the two, REPS times each; prints every run and the medians.
# Run after dev-support/setup.sh. Usage: measure-get-bandwidth.sh [REPS]
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$here/dev-support/java-env.sh"
reps="${1:-3}"
cd "$here"
bench=native/target/cmake/ucx_fanout_bench
classpath=benchmarks/jmh/target/benchmarks.jar
[ -f "$classpath" ] || { echo "no $classpath: build first" >&2; exit 1; }

bridge() { # tls-or-default errh(on|off) size
  local args=(-s "$3" -w 8 --csv)
  [ "$1" != default ] && args+=(--tls "$1")
  [ "$2" = off ] && args+=(--no-err-handling)
  java -cp "$classpath" org.hdfsrdma.ucx.tools.GetBandwidth "${args[@]}" \
    2>/dev/null | grep -E '^[0-9]+,' | tail -1 | cut -d, -f7
}
native() { # tls-or-default errh(on|off) size
  # --ucx-alloc: UCX allocates the exposed memory, as the bridge's pools do.
  local args=(--csv -s "$3" -r 1 -w 8 --ucx-alloc)
  [ "$1" != default ] && args+=(--tls "$1")
  [ "$2" = on ] && args+=(--err-handling)
  # The bridge sets UCX_MM_ERROR_HANDLING=y; give native the same setting.
  UCX_MM_ERROR_HANDLING=y UCX_WARN_UNUSED_ENV_VARS=n "$bench" "${args[@]}" \
    2>/dev/null | grep -E '^[0-9]+,' | tail -1 | cut -d, -f7
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1}
  END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "size,UCX_TLS,peer_err_handling,bridge_GBps_runs,native_GBps_runs,bridge_median,native_median,ratio"
for size in 65536 1048576; do
  for config in "default on" "default off" "tcp on"; do
    set -- $config
    b="" n=""
    for _ in $(seq "$reps"); do
      b="$b $(bridge "$1" "$2" "$size")"
      n="$n $(native "$1" "$2" "$size")"
    done
    bm=$(echo "$b" | median)
    nm=$(echo "$n" | median)
    ratio=$(awk -v b="$bm" -v n="$nm" 'BEGIN {printf "%.2f", b / n}')
    echo "$size,$1,$2,${b# },${n# },$bm,$nm,$ratio"
  done
done
