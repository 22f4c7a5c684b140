#!/usr/bin/env bash
# Downloads a UCX build other than Debian's for the test command's UCX
# leg: the libraries PyPI publishes as libucx-cu12 (shared memory, cma and
# tcp; their CUDA modules stay unused without a GPU), unpacked outside the
# repository:
#
#   dev-support/ucx-wheel.sh [VERSION [DIR]]
#
# VERSION defaults to the newest release the jar is tested with (below),
# DIR to ~/.cache/hdfs-rdma/ucx. Prints the library directory to put first
# on every JVM's loader path (put.sh --ucx, LD_LIBRARY_PATH); UCX finds its
# transport modules in ucx/ beside it. Needs pip and the network; does
# nothing when the release is there already. dev-support/setup.sh runs it.
set -euo pipefail

newest=1.22.0
version="${1:-$newest}"
dir="${2:-$HOME/.cache/hdfs-rdma/ucx}/$version"
lib="$dir/libucx/lib"
if [ ! -f "$lib/libucp.so.0" ]; then
  mkdir -p "$dir"
  # 1.14 to 1.17 are published as .postN builds only.
  python3 -m pip download -q --no-deps "libucx-cu12==$version.*" -d "$dir" >&2
  (cd "$dir" && python3 -m zipfile -e libucx_cu12-*.whl . \
    && rm -f libucx_cu12-*.whl)
fi
[ -f "$lib/libucp.so.0" ] || {
  echo "ucx-wheel.sh: no libucp.so.0 in $lib" >&2
  exit 1
}
echo "$lib"
