#!/usr/bin/env bash
# Runs dev-support/experiments/StaleReportAfterAppend (stock Hadoop in a
# MiniDFSCluster, no UCX) on a Hadoop release: does an append's close on a
# 1-replica file survive a late report of the replica's previous generation
# stamp? Explains a soak failure on Hadoop 2.9.2 (hadoop-hdfs-rdma/README.md,
# Soak). Needs the build (the release's class path) and the release's
# hadoop-hdfs and hadoop-common test jars in the local Maven repository.
#
#   dev-support/stale-report-after-append.sh RELEASE [ROUNDS] [--log]
#
# Prints a line per round and "closes ok=N failed=M"; --log shows Hadoop's
# log with the NameNode's block state changes.
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$top/dev-support/java-env.sh"

[ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
release="$1"
rounds="${2:-6}"
log=false
[ "${3:-}" = "--log" ] && log=true

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The release's test class path as hadoop-tests.sh's Maven run has it (the
# release's jars, its hadoop-hdfs tests jar, the test libraries of its
# line), plus hadoop-common's tests jar (MiniDFSCluster's utilities).
sources="$("$top/dev-support/releases.sh" field "$release" sources)" \
  || exit 1
case "$release" in
  2.*) libraries=hadoop2 ;;
  3.3.*|3.4.*) libraries=hadoop3 ;;
  *) libraries=hadoop3.5 ;;
esac
offline=()
[ -n "${MAVEN_OFFLINE:-}" ] && offline=(-o)
mvn "${offline[@]}" -q -B -ntp -Dstyle.color=never \
  -f "$top/hadoop-hdfs-rdma/releases/pom.xml" dependency:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile="$work/classpath.txt" \
  -Dhadoop.release="$release" -Dhadoop.sources.release="$sources" \
  -Dtests.libraries="$libraries" -Dout.dir="$work/out" > "$work/mvn.log" \
  2>&1 || { cat "$work/mvn.log" >&2; exit 1; }
m2="${MAVEN_REPO:-$HOME/.m2/repository}"
common="$m2/org/apache/hadoop/hadoop-common/$release"
common="$common/hadoop-common-$release-tests.jar"
[ -f "$common" ] || { echo "missing $common" >&2; exit 1; }
cp="$(cat "$work/classpath.txt"):$common"
case "$cp" in
  */junit-4.*) ;;
  *) # Hadoop 2's test libraries leave JUnit 4 to surefire.
     cp="$cp:$(ls "$m2"/junit/junit/4.*/junit-4.*.jar | tail -1)" ;;
esac
case "$cp" in
  *slf4j-log4j12*|*slf4j-reload4j*) ;;
  *) # Hadoop 3's poms leave the SLF4J binding to the distribution.
     binding="$(tr ':' '\n' \
       < "$top/test-apps/hadoop3-client/target/classpath.txt" \
       | grep -m1 slf4j-reload4j)"
     cp="$cp:$binding" ;;
esac

mkdir -p "$work/classes"
level=OFF
$log && level=INFO
cat > "$work/classes/log4j.properties" <<LOG4J
log4j.rootLogger=$level,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d %-5p [%t] %c{2}: %m%n
LOG4J
$log && echo "log4j.logger.BlockStateChange=DEBUG" \
  >> "$work/classes/log4j.properties"
javac -nowarn -d "$work/classes" -cp "$cp" \
  "$top/dev-support/experiments/StaleReportAfterAppend.java" 2>&1 \
  | grep -v '^Note:' || true
[ -f "$work/classes/StaleReportAfterAppend.class" ] || exit 1
# Hadoop 2's web server needs java.lang opened on Java 17.
java --add-opens java.base/java.lang=ALL-UNNAMED \
  -Dtest.build.data="$work/data" -cp "$work/classes:$cp" \
  StaleReportAfterAppend "$rounds"
