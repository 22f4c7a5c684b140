#!/usr/bin/env bash
# Installs everything hdfs-rdma needs on Debian 12 (UCX from Debian, JDK 17,
# Maven, CMake, a C compiler) and builds every module (Java and native),
# then fetches what only the tests use (Spark from PyPI, a Java 11, a
# second UCX release), outside the repository. With --build-only it
# builds the drop-in jar alone (what dev-support/release.sh packs) and
# fetches nothing for the tests.
# Run as root or with sudo available. Safe to run again.
set -euo pipefail

build_only=0
case "${1:-}" in
  "") ;;
  --build-only) build_only=1 ;;
  *) echo "usage: setup.sh [--build-only]" >&2; exit 2 ;;
esac

here="$(cd "$(dirname "$0")/.." && pwd)"
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -q
$sudo_cmd apt-get install -y -q --no-install-recommends \
  openjdk-17-jdk-headless maven cmake make gcc libc6-dev \
  libucx0 libucx-dev ucx-utils procps ca-certificates patch unzip git python3 \
  python3-pip \
  python3-matplotlib

# shellcheck source=dev-support/java-env.sh
. "$here/dev-support/java-env.sh"
ucx_info -v | head -1
cd "$here"
if [ "$build_only" = 1 ]; then
  mvn -B -ntp -DskipTests -pl hadoop-hdfs-rdma -am package
  ls hadoop-hdfs-rdma/target/hadoop-hdfs-rdma-*-dropin.jar
  exit 0
fi
mvn -B -ntp -DskipTests install
# Spark as PyPI publishes it, for the drop-in tests (outside the repository).
dev-support/pyspark.sh
# A Java 11 runtime, for the test command's put on the Java a Hadoop 3.4
# cluster may run (outside the repository).
dev-support/jdk11.sh > /dev/null
# The newest UCX release PyPI publishes, for the test command's UCX leg
# (outside the repository).
dev-support/ucx-wheel.sh > /dev/null
