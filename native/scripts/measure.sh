#!/bin/sh
# Runs the measurements quoted in native/README.md ("Measured here").
# Usage: native/scripts/measure.sh [BUILD_DIR]   (default native/target/cmake)
# Prints CSV (one header per block) to stdout; the machine load before each
# block goes to stdout as a '#' comment since other work skews the numbers.
set -eu
B=${1:-$(dirname "$0")/../target/cmake}
BENCH=$B/ucx_fanout_bench
REPS=${REPS:-2}

echo "# ucx_probe"
"$B/ucx_probe"

echo "# fan-out at 64 KiB, 1 GiB per getter, $REPS repetitions"
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BENCH" --csv -n 1 -s 8 -r 1 >/dev/null 2>&1 || true  # warm-up (page cache, libs)
printf 'size,getters,tls,err_handling,bytes,seconds,gbps_aggregate,gbps_per_getter,lat_mean_us,lat_p50_us,lat_p99_us\n'
rep=1
while [ "$rep" -le "$REPS" ]; do
  for tls in tcp posix,cma,tcp; do
    for eh in "" --err-handling; do
      for r in 1 3 4; do
        "$BENCH" --csv -s 64K -r "$r" --tls "$tls" $eh | tail -n 1
      done
    done
  done
  rep=$((rep + 1))
done

echo "# sweep, 1 getter, UCX_TLS unset (UCX default transports)"
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
env -u UCX_TLS "$BENCH" --sweep -r 1
