#!/usr/bin/env bash
# Put latency of stock HDFS, the drop-in jar with UCX off and the UCX write
# path, in one run, every JVM on one Hadoop release (--hadoop RELEASE,
# default 3.4.2): two clusters (1 NameNode + 4 DataNodes each,
# separate JVMs, storage on disk; the jar system writes to the UCX one),
# FsShell -put alternating stock / jar / UCX, the machine's limit,
# concurrent writers and the targets (benchmarks/README.md); or the same
# puts against an existing cluster (--conf). See benchmarks/README.md.
#
#   benchmarks/run.sh [--tiny | --small (default) | --paper] [--scale]
#                     [--hadoop RELEASE] [--runs N] [--out DIR] [--work DIR]
#                     [--help for more]
#   benchmarks/run.sh --conf HADOOP_CONF_DIR [--stock-classpath CP]
#                     [--hadoop-classpath CP] [--hdfs-dir PATH] [...]
#   benchmarks/run.sh --conf-self-test       # --conf against a scratch cluster
#   benchmarks/run.sh --apps [--tiny] [--apps-only W1,W2] [--apps-scale F]
#                     [--ucx-workers 1,4]
#                     # application-shaped workloads instead of the puts
#
# Needs the build (dev-support/setup.sh, or mvn -DskipTests install) and
# python3 with matplotlib for the plots (Debian: python3-matplotlib).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$here/dev-support/java-env.sh"

# shellcheck source=dev-support/python-env.sh
. "$here/dev-support/python-env.sh"

# The harness is the package benchmarks/hdfsrdma_bench; its processes
# (the --conf-self-test's scratch cluster) find it on PYTHONPATH too.
PYTHONPATH="$here/benchmarks${PYTHONPATH:+:$PYTHONPATH}" \
  exec "$python" -m hdfsrdma_bench "$@"
