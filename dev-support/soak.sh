#!/usr/bin/env bash
# The soak test of the UCX write path: a NameNode and four DataNodes (each its
# own JVM on a Hadoop release's stock jars, 3.4.2 unless --hadoop says
# otherwise, the drop-in jar as agent, UCX on) and long-lived client JVMs
# writing, reading back and deleting a mix of files (1 KiB up to 256 MiB,
# replication 1-3, hflush/hsync streams, appends, fan-out and chain pipelines)
# for --minutes, while every JVM's memory, threads, fds, JNI global
# references, shared-memory mappings, registered pools and UCX connections are
# sampled. Fails on any byte that differs, any writer error, a JVM that died
# or crashed, or a quantity still growing after warm-up (bounds and reasons:
# benchmarks/hdfsrdma_bench/soak_bounds.py). Needs the build (the drop-in jar
# and the soak's writer, benchmarks/drivers).
#
#   dev-support/soak.sh --minutes M [--out DIR] [--writers JVMS:THREADS]
#                       [--executor THREADS] [--interval-seconds S]
#                       [--hadoop RELEASE] [--keep]
#                       [--help for more]
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$here/dev-support/java-env.sh"

# shellcheck source=dev-support/python-env.sh
. "$here/dev-support/python-env.sh"

PYTHONPATH="$here/benchmarks${PYTHONPATH:+:$PYTHONPATH}" \
  exec "$python" -m hdfsrdma_bench.soak "$@"
