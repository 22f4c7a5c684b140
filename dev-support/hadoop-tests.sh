#!/usr/bin/env bash
# Hadoop's own write-path (or read-path) test classes of one Hadoop
# release (from its tests jars), on that release's jars:
#
#   hadoop-tests.sh RELEASE ucx|reads|stock|project [TESTS [MAVEN_OPTION...]]
#
# ucx: with the drop-in jar as -javaagent: (the agent swaps in RELEASE's
# patched classes) and the UCX path on (hadoop-hdfs-rdma/src/test/resources
# /hdfs-site.xml); reads: the same with clients reading over UCX too, and
# Hadoop's read-path classes by default (the module pom's
# hadoop.tests.reads); stock: the release's jars alone. TESTS is
# surefire's -Dtest (default: the write-path classes below; "" for the
# default with options after it, e.g. -Dhdfsrdma.killmatrix=full). Prints
# "RELEASE MODE: N run, F failed, K passed only on a rerun, S skipped" (and
# each such method by name) and, for ucx and reads, the bytes the
# DataNodes fetched over UCX and those clients read over UCX; project:
# hdfs-rdma's own tests (compiled against RELEASE: hadoop-releases.sh
# test-classes) on RELEASE's jars with the drop-in jar as agent: on the
# home line (3.4) all of them, a MapReduce job on RELEASE's YARN among
# them, elsewhere the write path's (the module pom's project.tests.* say
# which). Exits non-zero when a test failed, for ucx when UCX carried
# nothing, for reads when clients read nothing over UCX. A failed method
# of Hadoop's is rerun (up to 3 times), as the module's 2.9.2 run does,
# and passes only if it is one of the module pom's hadoop.tests.rerunnable
# (flakes the stock jars share); hdfs-rdma's own tests (project) run once.
# Reports: hadoop-hdfs-rdma/target/releases/RELEASE/surefire-reports-MODE.
# The drop-in jar must be built (mvn -pl hadoop-hdfs-rdma -am package).
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$top/dev-support/java-env.sh"
module="$top/hadoop-hdfs-rdma"
die() {
  echo "hadoop-tests.sh: $*" >&2
  exit 1
}
[ $# -ge 2 ] || die "usage: hadoop-tests.sh RELEASE ucx|reads|stock|project" \
  "[TESTS [MAVEN_OPTION...]]"
release="$1"
mode="$2"
# Hadoop's write-path classes and the methods left out (those that fail
# on the stock jars; with UCX, what the UCX path does differently on
# purpose), as the module pom lists them for its own 2.9.2 run. NameNode
# failover mid-write (two minutes) on the 3.4 line, the one most clusters
# run.
property() { "$top/dev-support/pom-property.py" "$module/pom.xml" "$1"; }
classes="$(property hadoop.tests.moving),$(property hadoop.tests.namespace)"
case "$release" in
  3.4.*) classes="$classes,$(property hadoop.tests.failover)" ;;
esac
excluded="$(property hadoop.tests.stock-failures)"
[ "$mode" = ucx ] && excluded="$excluded,$(property hadoop.tests.ucx-exclusions)"
if [ "$mode" = reads ]; then
  classes="$(property hadoop.tests.reads)"
  excluded="$(property hadoop.tests.reads-stock-failures)"
  excluded="$excluded,$(property hadoop.tests.reads-ucx-exclusions)"
fi
if [ "$mode" = project ]; then
  case "$release" in
    3.4.*) classes="$(property project.tests.home)" ;;
    3.*) classes="$(property project.tests.line)"
         classes="$classes,$(property project.tests.hadoop3)"
         classes="$classes,$(property project.tests.daemons)" ;;
    *) classes="$(property project.tests.line)"
       classes="$classes,$(property project.tests.daemons)" ;;
  esac
  excluded=
fi
tests="${3:-$classes${excluded:+,$excluded}}"
maven_options=("${@:4}")
out="$module/target/releases/$release"
dropin="$(ls "$module"/target/hadoop-hdfs-rdma-*-dropin.jar 2>/dev/null \
  | head -1)"
[ -n "$dropin" ] || die "no drop-in jar: build hadoop-hdfs-rdma first"
# The release whose sources jar the build patched (2.9.2's come from 2.9.1:
# Maven Central has none of its own), as hadoop-releases.sh resolves it.
sources="$("$top/dev-support/releases.sh" field "$release" sources)" \
  || exit 1
flags=(-B -ntp -Dstyle.color=never -Phadoop-tests -Dhadoop.release="$release"
  -Dhadoop.sources.release="$sources"
  -Dout.dir="$out" -Dtests.mode="$mode" -Dhadoop.tests="$tests")
case "$mode" in
  ucx) flags+=(-Ddropin.jar="$dropin") ;;
  # A JVM per class, as Hadoop's build runs them: several read-path
  # classes set TRACE on the block reader's logger for the JVM's life, and
  # a class after them in the same JVM (TestDFSInputStream's skip tests:
  # a million one-byte reads) then logs every read and ran past its 60 s
  # timeout on a loaded machine.
  reads) flags+=(-Ddropin.jar="$dropin" -Dhdfsrdma.test.reads=true \
    -Dtests.reuse.forks=false) ;;
  project) flags+=(-Ddropin.jar="$dropin" -Dtests.reruns=0 \
    -Dtests.reuse.forks=false -Dtests.dropin.classpath="$dropin" \
    -Dtests.release.classes="$module/target/classes/hdfs-rdma-patched/$release" \
    -Dhdfsrdma.test.other-ucx="$("$top/dev-support/ucx-wheel.sh")") ;;
  stock) flags+=(-Dagent.option= \
           -Dtest.resources="$module/src/test/stock-resources") ;;
  *) die "mode must be ucx, reads, stock or project, not $mode" ;;
esac
# hdfs-rdma's own tests are JUnit 4 on every line: 3.5's JUnit 5 set has
# no runner for them.
case "$release:$mode" in
  2.*) flags+=(-Dtests.libraries=hadoop2) ;;
  3.3.*|3.4.*|*:project) flags+=(-Dtests.libraries=hadoop3) ;;
  *) flags+=(-Dtests.libraries=hadoop3.5) ;;
esac
[ -n "${MAVEN_OFFLINE:-}" ] && flags+=(-o)
# Project mode: hdfs-rdma's own tests, compiled against RELEASE.
if [ "$mode" = project ]; then
  mkdir -p "$out"
  mvn "${flags[@]}" -q -f "$module/releases/pom.xml" \
    dependency:build-classpath -Dmdep.includeScope=test \
    -Dmdep.outputFile="$out/test-classpath.txt" > "$out/test-classpath.log" \
    2>&1 || die "no test class path for $release; see $out/test-classpath.log"
  flags+=(-Dtests.classes="$("$top/dev-support/hadoop-releases.sh" \
    test-classes "$release" "$out/test-classpath.txt")")
fi
rm -rf "$out/surefire-reports-$mode" "$out/ucx-totals-$mode.txt" \
  "$out/test-data-$mode" "$out/test-dir-$mode"
log="$out/hadoop-tests-$mode.log"
mkdir -p "$out"
status=0
mvn "${flags[@]}" "${maven_options[@]}" -f "$module/releases/pom.xml" test \
  > "$log" 2>&1 || status=$?
check=(--check --rerunnable "$module/pom.xml" --traces 40)
[ "$mode" = stock ] && check=() # a baseline records what stock does
counts="$("$top/dev-support/test-counts.py" "$out/surefire-reports-$mode" \
  --names "${check[@]}")" || status=1
summary="$(head -1 <<< "$counts")"
case "$summary" in
  "0 run,"*) echo "no test ran; see $log" >&2; status=1 ;;
esac
if [ "$mode" = project ]; then
  echo "hdfs-rdma's tests on Hadoop $release: $summary"
else
  path=write
  [ "$mode" = reads ] && path=read
  echo "Hadoop $release's $path-path tests, $mode: $summary"
fi
# The methods that failed, or passed only on their rerun, by name.
tail -n +2 <<< "$counts" | sed 's/^/  /'

# Project mode: each test asserts that UCX carried its bytes itself (most of
# them count DataNodes in processes of their own, not in this file).
if [ "$mode" = ucx ] || [ "$mode" = reads ]; then
  total() { # the sum of one key of the JVMs' totals lines
    awk -v key="$1" '{ for (i = 1; i <= NF; i++) { split($i, kv, "=");
      if (kv[1] == key) t += kv[2] } } END { printf "%.0f\n", t }' \
      "$out/ucx-totals-$mode.txt" 2>/dev/null || echo 0
  }
  fetched="$(total ucx-data-bytes-fetched)"
  echo "  data bytes the DataNodes fetched over UCX: $fetched"
  read_bytes="$(total ucx-read-bytes)"
  echo "  bytes clients read over UCX: $read_bytes"
  [ "$mode" = reads ] && [ "$read_bytes" -eq 0 ] && {
    echo "clients read nothing over UCX; see $log" >&2; status=1; }
  [ "$fetched" -gt 0 ] || { echo "UCX carried nothing; see $log" >&2;
    status=1; }
fi
[ "$status" -eq 0 ] || { grep -E 'Tests run:.*FAIL|<<< (FAILURE|ERROR)' \
  "$log" | head -20 >&2; exit 1; }
