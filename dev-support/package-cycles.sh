#!/usr/bin/env bash
# Fails when the product's packages depend on each other in a cycle.
#
#   dev-support/package-cycles.sh [CLASSES_DIR...]
#
# Reads the package dependencies of the compiled product (jdeps, with
# Hadoop's jars on the class path), keeps those between the product's own
# packages, and reports every strongly connected group of two or more
# packages. Defaults to the bridge's and the Hadoop module's classes as the
# drop-in jar ships them: without Apache's patched classes
# (patches/hadoop-files.txt), whose packages depend on each other in
# Hadoop itself.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=dev-support/java-env.sh
. "$here/dev-support/java-env.sh"
if [ $# -eq 0 ]; then
  ours="$(mktemp -d)"
  trap 'rm -rf "$ours"' EXIT
  cp -r "$here/hadoop-hdfs-rdma/target/classes/." "$ours/"
  rm -rf "$ours/hdfs-rdma-patched"   # the agent's copies of Apache's classes
  grep -v '^\s*#' "$here/patches/hadoop-files.txt" | grep -v '^\s*$' \
    | while read -r _ path _; do
      base="$ours/${path%.java}"
      rm -f "$base.class" "$base"\$*.class
    done
  set -- "$here/jucx-bridge/target/classes" "$ours"
fi
cp="$(cat "$here/hadoop-hdfs-rdma/target/hadoop-classpath.txt")"
for dir in "$@"; do
  cp="$cp:$dir"
done
jdeps -verbose:package -filter:none -cp "$cp" "$@" 2>/dev/null \
  | python3 -c '
import re, sys
edges = {}
for line in sys.stdin:
    m = re.match(r"\s+(\S+)\s+->\s+(\S+)\s", line)
    if m:
        edges.setdefault(m.group(1), set()).add(m.group(2))
ours = set(edges)
graph = {p: {q for q in qs if q in ours and q != p} for p, qs in edges.items()}
index, low, stack, on, groups = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w in graph[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        group = []
        while True:
            w = stack.pop(); on.discard(w); group.append(w)
            if w == v:
                break
        if len(group) > 1:
            groups.append(sorted(group))
sys.setrecursionlimit(10000)
for v in sorted(graph):
    if v not in index:
        visit(v)
print("package-cycles: %d packages, %d dependencies between them"
      % (len(graph), sum(len(q) for q in graph.values())))
for g in groups:
    print("package-cycles: cycle among " + ", ".join(g))
    for p in g:
        print("  %s -> %s" % (p, ", ".join(sorted(graph[p] & set(g)))))
sys.exit(1 if groups else 0)
'
