#!/usr/bin/env bash
# Compiles hadoop-hdfs-rdma's .proto files to Java.
#
#   protoc.sh PROTOC PROTO_DIR JAVA_OUT
#
# Called by the hadoop-hdfs-rdma build in generate-sources. PROTOC is the
# protoc executable the build copied from Maven Central (the copy has no
# execute bit). JAVA_OUT is emptied first, so that a message removed from
# a .proto file leaves no stale class behind.
set -euo pipefail

[ $# -eq 3 ] || {
  echo "usage: protoc.sh PROTOC PROTO_DIR JAVA_OUT" >&2
  exit 1
}
protoc="$1"
protos="$2"
out="$3"

chmod +x "$protoc"
rm -rf "$out"
mkdir -p "$out"
"$protoc" --proto_path="$protos" --java_out="$out" "$protos"/*.proto
