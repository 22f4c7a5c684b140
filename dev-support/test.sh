#!/usr/bin/env bash
# Runs every test of every module: the native tools' ctest suite and the
# Java tests (real UCX over tcp and shared memory, two-JVM and kill -9
# tests). Expects dev-support/setup.sh to have run once.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$here/dev-support/java-env.sh"
cd "$here"
# Every JVM of the test command but the soak's (Maven's, the test JVMs and
# the daemons, clients, Spark and YARN JVMs they start) compiles with C1
# only and collects with one thread: most live seconds, and on 2 cores
# C2's compiler threads took a third of the CPU the suite is bound by
# (RESULTS-LOG, "CI times"). The soak and the benchmarks run the JIT and
# collector production runs.
export JDK_JAVA_OPTIONS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
rm -f hadoop-hdfs-rdma/target/ucx-totals.txt \
  hadoop-hdfs-rdma/target/ucx-totals-chain.txt
# Maven's output is kept: a test JVM that crashes writes why (a UCX
# assertion, the JVM's fatal error banner) far above Maven's last lines.
mkdir -p target
mvnlog=target/test-sh-maven.log
# -DskipStockComparison: the stock baselines of Hadoop's tests are
# recorded (dev-support/hadoop-tests-baseline.sh), not rerun every time.
# A UCX release other than Debian's: the newest PyPI publishes, fetched by
# setup.sh (dev-support/ucx-wheel.sh). TestMixedUcxReleases runs clients
# and DataNodes on it and on Debian's; the UCX leg below runs on it alone.
other_ucx="$(dev-support/ucx-wheel.sh)"
# How long each part took, printed at the end (also when a part fails):
# the profile of the suite that CI's 60-minute budget is kept by.
phases=""
phase_name="maven build and module tests"
phase_start=$SECONDS
phase() { # next phase's name ("" at the end)
  phases="$phases$(printf '%6d s  %s' $((SECONDS - phase_start)) \
    "$phase_name")"$'\n'
  phase_name="$1"
  phase_start=$SECONDS
}
trap '[ -z "$phase_name" ] || phase ""; printf "test.sh, time per part:\n%s" \
  "$phases"; printf "%6d s  in all\n" $SECONDS' EXIT
# The drop-in jar's tests (failsafe) run in a lane of their own below.
if ! mvn -B -ntp verify -DskipStockComparison -DskipITs \
    -Dhdfsrdma.test.other-ucx="$other_ucx" "$@" 2>&1 | tee "$mvnlog"; then
  dev-support/crash-report.sh "$here" "$mvnlog"
  exit 1
fi

phase "checks of the build"
# The product's packages form no cycle (jdeps over the built classes).
dev-support/package-cycles.sh
# The patch sizes patches/README.md gives are the patches' own (the build
# above already refused any patch touching an unlisted file).
dev-support/hadoop-sources.sh stats --check
# The documents name only what exists (links, paths, configuration keys,
# script flags, classes) and the configuration table is hdfs-rdma-default.xml's;
# the self-test proves each kind of mistake is caught.
dev-support/readme-check.py --self-test
dev-support/readme-check.py
# The release an operator downloads: the tarball holds the jar just built
# (its manifest naming the version), the defaults, README, LICENSE and
# NOTICE, and its checksum verifies.
mapfile -t release < <(dev-support/release.sh --no-build)
(cd "$(dirname "${release[1]}")" && sha512sum -c --quiet \
  "$(basename "${release[1]}")")
release_dir="$(basename "${release[0]}" .tar.gz)"
diff <(tar -tzf "${release[0]}" | sort) <(printf '%s\n' "$release_dir/" \
  "$release_dir/$release_dir.jar" "$release_dir/hdfs-rdma-default.xml" \
  "$release_dir/README.md" "$release_dir/LICENSE" "$release_dir/NOTICE" | sort)
cmp <(tar -xzOf "${release[0]}" "$release_dir/$release_dir.jar") \
  hadoop-hdfs-rdma/target/hadoop-hdfs-rdma-*-dropin.jar
echo "release: ${release[0]}"

# Hadoop's own tests of the Maven build (2.9.2's classes built from the
# patches): with the UCX path on, and on the stock jars.
count() { # reports-dir
  dev-support/test-counts.py "$1" --classes '^org\.apache\.hadoop\.hdfs\..*Test' \
    --exclude 'TestUcx' --names
}
reports=hadoop-hdfs-rdma/target
echo "Hadoop 2.9.2's write-path tests on the classes built from the" \
  "patches, UCX on: $(count "$reports/surefire-reports")"
if [ -d "$reports/surefire-reports-stock" ]; then
  echo "Hadoop's write-path tests on the stock 2.9.2 jars: $(count \
    "$reports/surefire-reports-stock")"
fi
if [ -d "$reports/surefire-reports-chain" ]; then
  echo "Hadoop's write-path tests with every pipeline a chain by gets:" \
    "$(count "$reports/surefire-reports-chain")"
fi

# Maven failed on any test that failed for good. hdfs-rdma's own tests run
# once; a method of Hadoop's that passed only on its rerun fails the test
# command too, unless the module pom names it rerunnable with its evidence
# (the same flake on the stock jars).
check_reports() { # reports-dir: fails unless every test passed at once
  # or is a listed flake of Hadoop's
  dev-support/test-counts.py "$1" --names --check \
    --rerunnable hadoop-hdfs-rdma/pom.xml > /dev/null || {
    echo "a test failed once, and is not one of Hadoop's known flakes:" >&2
    dev-support/test-counts.py "$1" --names --traces 40 \
      --rerunnable hadoop-hdfs-rdma/pom.xml >&2
    return 1
  }
}
for dir in surefire-reports surefire-reports-chain; do
  [ -d "$reports/$dir" ] || continue
  check_reports "$reports/$dir" || exit 1
done

# What the UCX path carried during the HDFS tests, summed over their JVMs.
totals=hadoop-hdfs-rdma/target/ucx-totals.txt
if [ -f "$totals" ]; then
  awk -F'[= ]' '{ sent += $2; fetched += $4 } END {
    printf "UCX path over the HDFS tests: %d JVMs, %d data bytes sent as" \
      " descriptors, %d data bytes fetched by DataNodes over UCX\n",
      NR, sent, fetched }' "$totals"
fi
totals=hadoop-hdfs-rdma/target/ucx-totals-chain.txt
if [ -f "$totals" ]; then
  awk -F'[= ]' '{ fetched += $4; chained += $6 } END {
    printf "UCX path over the HDFS tests with chains forced: %d JVMs, %d" \
      " data bytes fetched by DataNodes over UCX, %d of them from the" \
      " DataNode before\n", NR, fetched, chained }' "$totals"
fi

phase "the drop-in jar, Hadoop lines and the UCX leg: four lanes"
# Every Hadoop line the jar carries (2.9, 2.10, 3.3, ...: the newest
# release of each in patches/releases.txt), on that release's own jars with
# the drop-in jar as agent:
#   - the main job: put.sh fails unless UCX carried every byte;
#   - Hadoop's own write-path tests from the release's tests jar, with the
#     UCX path on (2.9 runs them in the Maven build above, on the classes
#     built from the patches). Their stock baselines are recorded per
#     release by dev-support/hadoop-tests-baseline.sh, not rerun here;
#   - on the home line and every other line whose series hooks reads
#     (releases.sh reads), Hadoop's read-path tests with clients reading
#     over UCX, and the main job's read-back over UCX;
#   - hdfs-rdma's own tests, compiled against the release, on its jars:
#     on the home line (3.4) every one of them, the multi-process clusters,
#     kill matrix and hostile peers among them, and a MapReduce job on that
#     release's YARN; on the others the write path's (hadoop-tests.sh and
#     the module pom's project.tests.* say which). 2.9's write-path and
#     project tests run in the Maven build above.
lines="$(dev-support/releases.sh lines)"
newest34="$(grep '^3\.4\.' <<< "$lines" | tail -1)"
put_file=target/put-test-file
head -c $((20 * 1024 * 1024 + 17)) /dev/urandom > "$put_file"
line_tests() { # release [parts: put, hadoop, project, reads; default the
  # first three]
  local status=0 parts="${2:-put,hadoop,project}"
  if [[ ",$parts," == *,put,* ]]; then
    # With the read-path tests, the read-back reads over UCX too.
    local read_opt=()
    [[ ",$parts," != *,reads,* ]] || read_opt=(--read-ucx)
    echo "put.sh --hadoop $1 ${read_opt[*]}:"
    dev-support/put.sh --hadoop "$1" "${read_opt[@]}" "$put_file" \
      || status=1
  fi
  # 2.9's write-path and project tests ran in the Maven build above.
  case "$1" in 2.9.*) parts="${parts//hadoop/}"; parts="${parts//project/}" ;;
  esac
  if [[ ",$parts," == *,hadoop,* ]]; then
    dev-support/hadoop-tests.sh "$1" ucx || status=1
  fi
  if [[ ",$parts," == *,project,* ]]; then
    dev-support/hadoop-tests.sh "$1" project || status=1
  fi
  if [[ ",$parts," == *,reads,* ]]; then
    dev-support/hadoop-tests.sh "$1" reads || status=1
  fi
  return $status
}
# The UCX that RDMA clusters run (vendor stacks bundle 1.16 to 1.22; Debian
# has 1.13): the bridge's tests (the hostile keys among them), the
# write-path tests, the hostile peers and the main job again, with every
# JVM on the newest release PyPI publishes (shared memory, cma and tcp; no
# verbs). The tests run on the classes the Maven build above compiled (their
# reports replace those of the same classes in target/surefire-reports,
# which were checked above). And the main job on Java 11 (the lines
# before 3.5 run on Java 8 or 11 in production; dev-support/jdk11.sh, run
# by setup.sh, fetched it).
ucx_leg() { LD_LIBRARY_PATH="$other_ucx${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$@"; }
other_ucx_tests() {
  echo "UCX leg: $other_ucx"
  ucx_leg mvn -B -ntp -o -pl jucx-bridge surefire:test || return 1
  ucx_leg mvn -B -ntp -o -pl hadoop-hdfs-rdma surefire:test \
    -Dmodule.tests=TestUcxWritePath,TestUcxWritePathScenarios,TestHostilePeers \
    || return 1
  echo "put.sh --hadoop $newest34 --ucx $other_ucx:"
  dev-support/put.sh --hadoop "$newest34" --ucx "$other_ucx" "$put_file" \
    || return 1
  echo "put.sh --hadoop $newest34 --java 11:"
  dev-support/put.sh --hadoop "$newest34" --java "$(dev-support/jdk11.sh)" \
    "$put_file"
}
# Four lanes, a lane's output printed whole when it ends: the home line's
# put, every project test (the longest part) and its read-path tests; the
# drop-in jar's tests; the UCX leg, the home line's Hadoop tests, the
# newest line and then the oldest (put and reads: its other tests ran in
# the Maven build); the lines between. The lanes share the 2 cores, which
# they keep busy (a fresh-clone run, 2026-12-02: 88-100 % busy for the 35
# minutes of three lanes); each command's time is printed at the end.
others="$(grep -vx "$newest34" <<< "$lines")"
newest="$(tail -1 <<< "$others")"
# CI shows the end of this script's output only: each command that fails
# leaves its last lines in target/test-sh-failed-LANE.txt, printed after
# every lane's log.
lane() { # name, then commands: runs them all, fails if one failed
  local name="$1" status=0 part="target/test-sh-lane-$1.part"
  shift
  rm -f "target/test-sh-failed-$name.txt"
  (
    for command in "$@"; do
      local start=$SECONDS
      $command > "$part" 2>&1 || {
        status=1
        { echo "lane $name, '$command' failed; its last lines:"
          tail -n 40 "$part" | sed 's/^/  /'; } \
          >> "target/test-sh-failed-$name.txt"
      }
      cat "$part"
      printf '%6d s  lane %s: %s\n' $((SECONDS - start)) "$name" \
        "$command" >> target/test-sh-lane-times.txt
    done
    rm -f "$part"
    exit $status
  ) > "target/test-sh-lane-$name.log" 2>&1
}
oldest="$(head -1 <<< "$others")"
line_all_parts() { # release: every part the test command runs on it
  local parts=put,hadoop,project
  ! dev-support/releases.sh reads "$1" || parts="$parts,reads"
  line_tests "$1" "$parts"
}
lines_between() {
  local release status=0
  for release in $(grep -vx -e "$newest" -e "$oldest" <<< "$others"); do
    line_all_parts "$release" || status=1
  done
  return $status
}
# The drop-in jar's tests: the jar as agent on Hadoop 2.9.2's jars (and
# the JVMs they start: Spark as PyPI publishes it, a MapReduce job on
# YARN, clients of other releases), as the README installs it.
dropin_tests() {
  mvn -B -ntp -o -pl hadoop-hdfs-rdma failsafe:integration-test \
    failsafe:verify -Dhdfsrdma.test.other-ucx="$other_ucx" || return 1
  echo "the drop-in jar's tests: $(dev-support/test-counts.py \
    "$reports/failsafe-reports" --names)"
  check_reports "$reports/failsafe-reports"
}
rm -f target/test-sh-lane-times.txt
lane home "line_tests $newest34 put,project,reads" &
home_pid=$!
lane dropin dropin_tests &
dropin_pid=$!
lane ucx other_ucx_tests "line_tests $newest34 hadoop" "line_tests $newest" \
  "line_all_parts $oldest" &
ucx_pid=$!
lane lines lines_between &
lines_pid=$!
failed=0
for name in home dropin ucx lines; do
  pid_var="${name}_pid"
  wait "${!pid_var}" || failed=1
  cat "target/test-sh-lane-$name.log"
done
echo "time per lane command:"
cat target/test-sh-lane-times.txt
[ "$failed" = 0 ] || { cat target/test-sh-failed-*.txt 2>/dev/null
  echo "a Hadoop line's or the UCX leg's tests failed" >&2; exit 1; }

phase "benchmark harness unit tests and soak"
# The benchmark harness's unit tests (parsing, statistics, targets, the
# results' formats): no cluster, well under a second.
python3 -m unittest discover -s benchmarks/tests -t benchmarks

# The soak, briefly: a NameNode, four DataNodes and two writer JVMs of 8
# threads (one fans out, one chains) on the stock 3.4.2 jars with the
# agent, writing, flushing, appending, reading back and deleting for 2
# minutes (about 2.5 in all). It fails on a differing byte, a writer error,
# a crashed JVM, a session left open, or growth after warm-up beyond the
# bounds benchmarks/hdfsrdma_bench/soak_bounds.py states; it judges no
# timings.
env -u JDK_JAVA_OPTIONS dev-support/soak.sh --minutes 2 \
  --out benchmarks/results/soak-ci

phase "benchmark harness, tiny sweep"
# The benchmark harness on a tiny sweep, to prove it works end to end
# (two multi-process clusters, stock, jar and UCX puts, limit, plots). It
# checks that UCX carried the UCX puts and none of the jar's; it never judges
# timings.
benchmarks/run.sh --tiny --out benchmarks/results/ci
# And on reads (two clusters of 3.4.2, a sequential, a concurrent and two
# positional workloads, one below the read threshold): it checks that the
# UCX client took every byte over UCX at or above the threshold and none
# below, and that the others took none.
benchmarks/run.sh --reads --tiny --read-seq 16M --read-pread 64K,1M \
  --out benchmarks/results/ci-reads
