#!/usr/bin/env bash
# Prints what a crashed test JVM left behind, briefly, so that a CI log
# whose tail is all that survives still names the crash: the signal and
# native frames of each JVM fatal error log (hs_err_pid*.log), and UCX's
# own fatal lines (assertions, backtraces), which a forked test JVM writes
# to its stderr and Maven copies into its own output, so they sit far above
# Maven's closing lines. Prints nothing when there is nothing to report.
# Usage: crash-report.sh DIR [MAVEN_LOG]
set -uo pipefail

root="$1"
mvnlog="${2:-}"

# JVM fatal error logs: the header and the native stack, not the rest.
find "$root" -name 'hs_err_pid*.log' -newer "$root/pom.xml" 2>/dev/null |
  while read -r log; do
    echo "==== crash: $log"
    grep -m 1 -E '^# +(SIGSEGV|SIGBUS|SIGILL|SIGFPE|SIGABRT|Internal Error)' \
      "$log"
    grep -m 1 -A 1 '^# Problematic frame:' "$log"
    awk '/^Native frames:/ { on = 1 } on && /^$/ { exit } on' "$log" |
      head -n 14 | cut -c 1-160
    awk '/^Java frames:/ { on = 1 } on && /^$/ { exit } on' "$log" |
      head -n 6 | cut -c 1-160
  done

# UCX's fatal messages and backtraces, from Maven's output (a fork's
# stderr) and the tests' own output files: the first of each, four files at
# most.
{
  [ -n "$mvnlog" ] && echo "$mvnlog"
  find "$root" -name '*-output.txt' -path '*reports*' \
    -newer "$root/pom.xml" 2>/dev/null
} | head -n 4 | while read -r f; do
  hits=$(grep -n -E 'Assertion .* failed|Fatal:|==== backtrace' \
    "$f" 2>/dev/null | head -n 1 | cut -d: -f1)
  if [ -n "$hits" ]; then
    echo "==== fatal error in $f (from line $hits)"
    tail -n +"$hits" "$f" | head -n 24 | cut -c 1-200
  fi
done
exit 0
