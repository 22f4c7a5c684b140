#!/usr/bin/env bash
# Records the stock baseline of Hadoop's write-path tests for every release
# of patches/releases.txt (or those named): hadoop-tests.sh RELEASE stock,
# one line per release appended to stdout, in the form the README's table
# uses. The test command does not rerun these (they only show what each
# release's own jars do, which does not change); rerun after adding a
# release or changing the test list, and update the README's table.
#
#   hadoop-tests-baseline.sh [RELEASE ...]
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
releases=("$@")
if [ ${#releases[@]} -eq 0 ]; then
  mapfile -t releases < <("$top/dev-support/releases.sh" list)
fi
for release in "${releases[@]}"; do
  "$top/dev-support/hadoop-tests.sh" "$release" stock || true
done
