#!/usr/bin/env bash
# Prepares the patched Hadoop classes for the drop-in jar's Java agent.
#
#   agent-classes.sh JARS_DIR CLASSES_DIR
#
# Called by the hadoop-hdfs-rdma build after compilation. For every file in
# patches/hadoop-files.txt, the classes it compiles to (outer and nested)
# form a group per Hadoop artifact: "client" (hadoop-hdfs-client) and
# "datanode" (hadoop-hdfs). It writes into CLASSES_DIR/hdfs-rdma-patched/:
#   - a copy of every patched class, at its normal path under that prefix
#     (the drop-in jar carries only these copies; the agent hands them to
#     the JVM in place of Apache's bytes);
#   - groups.properties: each group's classes and, per class, the SHA-256 of
#     Apache's class file in every release in $releases (the agent replaces
#     a group only when every original class matches one of them).
# The build fails when the patched sources compile to another set of
# classes than Apache's, since the agent can only replace classes that
# Hadoop has.
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
files="$top/patches/hadoop-files.txt"
releases="2.9.1 2.9.2"

die() {
  echo "agent-classes.sh: $*" >&2
  exit 1
}

[ $# -eq 2 ] || die "usage: agent-classes.sh JARS_DIR CLASSES_DIR"
jars="$1"
classes="$2"
out="$classes/hdfs-rdma-patched"
rm -rf "$out"
mkdir -p "$out"

group_of() {
  case "$1" in
    hadoop-hdfs-client) echo client ;;
    hadoop-hdfs) echo datanode ;;
    *) die "no agent group for artifact $1" ;;
  esac
}

# a/b/C and a/b/C$Inner names a source path compiles to in JAR.
classes_in_jar() {
  local jar="$1" base="${2%.java}"
  unzip -Z1 "$jar" | grep -E "^${base//\$/\\$}(\\\$[^/]*)?\\.class$" \
    | sed 's/\.class$//' | sort
}

props="$out/groups.properties"
{
  echo "# Written by dev-support/agent-classes.sh: the Hadoop classes the"
  echo "# agent replaces, by group, and the SHA-256 of Apache's class files."
  echo "releases=$releases"
} > "$props"
declare -A members
count=0
while read -r artifact path; do
  group="$(group_of "$artifact")"
  base="${path%.java}"
  ours="$(cd "$classes" && find . -path "./${base}.class" -o \
    -path "./${base}\$*.class" | sed 's|^\./||;s/\.class$//' | sort)"
  reference=""
  for release in $releases; do
    jar="$jars/$artifact-$release.jar"
    [ -f "$jar" ] || die "missing $jar"
    theirs="$(classes_in_jar "$jar" "$path")"
    [ -n "$reference" ] || reference="$theirs"
    [ "$theirs" = "$reference" ] \
      || die "$path compiles to other classes in $artifact $release"
  done
  [ "$ours" = "$reference" ] || die "the patched $path compiles to" \
    "[$(echo $ours)], Apache's to [$(echo $reference)]: the agent can only" \
    "replace classes Hadoop has"
  for cls in $ours; do
    mkdir -p "$out/$(dirname "$cls")"
    cp "$classes/$cls.class" "$out/$cls.class"
    digests=""
    for release in $releases; do
      d="$(unzip -p "$jars/$artifact-$release.jar" "$cls.class" \
        | sha256sum | cut -d' ' -f1)"
      case " $digests " in *" $d "*) ;; *) digests="$digests $d" ;; esac
    done
    echo "sha256.$cls=${digests# }" >> "$props"
    members[$group]="${members[$group]:-} $cls"
    count=$((count + 1))
  done
done < <(grep -v '^\s*#' "$files" | grep -v '^\s*$')
for group in client datanode; do
  echo "$group.classes=${members[$group]# }" >> "$props"
done
echo "agent-classes.sh: $count patched classes in 2 groups for the agent"
