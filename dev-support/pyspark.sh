#!/usr/bin/env bash
# Downloads Spark as PyPI publishes it (the pyspark package: Spark's jars,
# bin/spark-submit and its own shaded Hadoop client) for the
# TestPySpark*OverUcx drop-in tests, and unpacks it outside the repository:
#
#   dev-support/pyspark.sh [DIR]    DIR defaults to ~/.cache/hdfs-rdma/pyspark
#
# The versions are hadoop-hdfs-rdma/pom.xml's pyspark35.version and
# pyspark4.version (the tests read them from there too). Each lands in
# DIR/pyspark-VERSION/ (PyPI serves a source archive: bin/ and jars/ are
# under deps/). Needs pip and the network; does nothing for a version
# already unpacked. dev-support/setup.sh runs it.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$HOME/.cache/hdfs-rdma/pyspark}"
pom="$here/hadoop-hdfs-rdma/pom.xml"
mkdir -p "$dir"
for property in pyspark35.version pyspark4.version; do
  version="$(sed -n "s|.*<$property>\\(.*\\)</$property>.*|\\1|p" "$pom")"
  [ -n "$version" ] || { echo "pyspark.sh: no $property in $pom" >&2;
    exit 1; }
  if [ -f "$dir/pyspark-$version/deps/bin/spark-submit" ]; then
    echo "pyspark.sh: pyspark $version already in $dir"
    continue
  fi
  python3 -m pip download -q --no-deps \
    "pyspark==$version" -d "$dir"
  tar xzf "$dir/pyspark-$version.tar.gz" -C "$dir"
  rm -f "$dir/pyspark-$version.tar.gz"
  echo "pyspark.sh: pyspark $version in $dir/pyspark-$version, with" \
    "$(cd "$dir/pyspark-$version/deps/jars" && ls hadoop-client-api-*.jar)"
done
