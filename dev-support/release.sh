#!/usr/bin/env bash
# Makes the release an operator downloads:
#
#   dev-support/release.sh [--no-build]
#
# target/hdfs-rdma-VERSION.tar.gz and target/hdfs-rdma-VERSION.tar.gz.sha512
# (sha512sum's format: check with "sha512sum -c"), VERSION being the
# project's version (pom.xml). Inside, in hdfs-rdma-VERSION/:
#   hdfs-rdma-VERSION.jar   the drop-in jar: the Java agent and the check
#                           command (its manifest's Implementation-Version
#                           is VERSION)
#   hdfs-rdma-default.xml   every setting with its default and meaning
#   README.md, LICENSE, NOTICE
# Builds the jar first (the Hadoop module and what it needs, no tests, no
# test applications) unless --no-build, which packs the jar already built.
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$top/dev-support/java-env.sh"
die() {
  echo "release.sh: $*" >&2
  exit 1
}
build=1
case "${1:-}" in
  "") ;;
  --no-build) build=0 ;;
  *) die "usage: release.sh [--no-build]" ;;
esac
version="$(python3 -c 'import sys, xml.etree.ElementTree as ET
print(ET.parse(sys.argv[1]).getroot().findtext(
    "{http://maven.apache.org/POM/4.0.0}version"))' "$top/pom.xml")"
[ -n "$version" ] || die "no version in pom.xml"
if [ "$build" = 1 ]; then
  mvn -B -ntp -q -f "$top/pom.xml" -pl hadoop-hdfs-rdma -am -DskipTests \
    package
fi
jar="$top/hadoop-hdfs-rdma/target/hadoop-hdfs-rdma-$version-dropin.jar"
[ -f "$jar" ] || die "no $jar: build it, or run without --no-build"
manifest_version="$(unzip -p "$jar" META-INF/MANIFEST.MF \
  | sed -n 's/^Implementation-Version: *//p' | tr -d '\r')"
[ "$manifest_version" = "$version" ] \
  || die "$jar says version '$manifest_version', the pom $version: rebuild"
name="hdfs-rdma-$version"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
cp "$jar" "$stage/$name/$name.jar"
cp "$top/hadoop-hdfs-rdma/src/main/resources/hdfs-rdma-default.xml" \
  "$top/README.md" "$top/LICENSE" "$top/NOTICE" "$stage/$name/"
mkdir -p "$top/target"
tarball="$top/target/$name.tar.gz"
# Reproducible: sorted entries, one owner, the commit's time.
mtime="$(git -C "$top" log -1 --format=%cI 2>/dev/null || date -Iseconds)"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" \
  -C "$stage" -czf "$tarball" "$name"
(cd "$top/target" && sha512sum "$name.tar.gz" > "$name.tar.gz.sha512")
echo "$tarball"
echo "$tarball.sha512"
