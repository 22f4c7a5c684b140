#!/usr/bin/env bash
# The one reader of patches/releases.txt (what each column means is
# written at the top of that file):
#
#   releases.sh list                  every release, in the file's order
#   releases.sh lines                 the newest release of each line
#                                     (2.9, 2.10, 3.3, ...), oldest line first
#   releases.sh field RELEASE COLUMN  one column of RELEASE's row: sources,
#                                     series, layer, protobuf or shaded
#   releases.sh row RELEASE           the row, columns separated by spaces
#   releases.sh reads RELEASE         exits 0 when RELEASE's patch series
#                                     hooks the block reader (reads over
#                                     UCX), 1 when it reads stock
#
# Exits 1, saying why, for a release or column the file does not have.
set -euo pipefail

file="$(cd "$(dirname "$0")/.." && pwd)/patches/releases.txt"
die() {
  echo "releases.sh: $*" >&2
  exit 1
}
rows() {
  awk '!/^[[:space:]]*#/ && NF' "$file"
}
row() {
  local r
  r="$(rows | awk -v r="$1" '$1 == r')"
  [ -n "$r" ] || die "$1 is not in $file"
  echo "$r"
}

case "${1:-}" in
  list) rows | awk '{ print $1 }' ;;
  lines) rows | awk '{ split($1, v, "."); line = v[1] "." v[2]
      newest[line] = $1 } END { for (l in newest) print newest[l] }' \
      | sort -V ;;
  row) [ $# -eq 2 ] || die "usage: row RELEASE"; row "$2" | tr -s ' \t' ' ' ;;
  field)
    [ $# -eq 3 ] || die "usage: field RELEASE COLUMN"
    case "$3" in
      sources) n=2 ;; series) n=3 ;; layer) n=4 ;; protobuf) n=5 ;;
      shaded) n=6 ;;
      *) die "no column $3 (sources, series, layer, protobuf, shaded)" ;;
    esac
    row "$2" | awk -v n="$n" '{ print $n }' ;;
  reads)
    [ $# -eq 2 ] || die "usage: reads RELEASE"
    series="$(row "$2" | awk '{ print $3 }')"
    for s in ${series//+/ }; do
      if grep -qsE '^\+\+\+ .*/BlockReaderRemote2?\.java' \
          "$(dirname "$file")/$s"/[0-9]*.patch; then
        exit 0
      fi
    done
    exit 1 ;;
  *) die "usage: releases.sh list|lines|row RELEASE|field RELEASE COLUMN|reads RELEASE" ;;
esac
