#!/usr/bin/env bash
# Runs every test of every module: the native tools' ctest suite and the
# Java tests (real UCX over tcp and shared memory, two-JVM and kill -9
# tests). Expects dev-support/setup.sh to have run once.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$here/dev-support/java-env.sh"
cd "$here"
mvn -B -ntp verify "$@"
