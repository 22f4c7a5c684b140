#!/usr/bin/env bash
# The Hadoop sources the drop-in jar replaces: prove, patch, edit, export.
#
#   hadoop-sources.sh build JARS_DIR CLASSPATH_FILE OUT_DIR
#       Called by the hadoop-hdfs-rdma build. For every file listed in
#       patches/hadoop-files.txt: take it from the 2.9.1 sources jar, prove it
#       is the 2.9.2 source, and write the patched copy to OUT_DIR/patched.
#       The proof, per class the file compiles to (outer and nested):
#         1. Apache's 2.9.1 and 2.9.2 class files disassemble identically
#            (javap -c -p), so the two releases built the same source;
#         2. the unpatched source compiled here declares exactly the members
#            of Apache's 2.9.2 class (javap -p -s, less what javac versions
#            synthesise differently: $values(), lambda$ and access$ methods,
#            "final" on anonymous classes), and compiles to the same set of
#            classes.
#       Comparing our bytecode with Apache's would not be sound: another
#       javac emits different bytecode for the same source.
#       Then applies patches/[0-9]*.patch in order (patch -p1); any reject
#       fails the build.
#
#   hadoop-sources.sh edit
#       Makes hadoop-hdfs-rdma/target/hadoop-src-edit, a git repository with
#       the pristine sources as its first commit and one commit per patch.
#       Edit there and commit (one commit per patch, message = patch name).
#
#   hadoop-sources.sh export
#       Rewrites patches/[0-9]*.patch from the commits of the edit tree, so
#       nobody edits patch files by hand.
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
files="$top/patches/hadoop-files.txt"
edit_dir="$top/hadoop-hdfs-rdma/target/hadoop-src-edit"
hadoop_source_version=2.9.1
hadoop_version=2.9.2

die() {
  echo "hadoop-sources.sh: $*" >&2
  exit 1
}

# "artifact path" lines of the file list.
list_files() {
  grep -v '^\s*#' "$files" | grep -v '^\s*$'
}

# Unpacks every listed file of the 2.9.1 sources jars in JARS_DIR into DIR.
unpack_sources() {
  local jars="$1" dir="$2" artifact path
  mkdir -p "$dir"
  while read -r artifact path; do
    local jar="$jars/$artifact-$hadoop_source_version-sources.jar"
    [ -f "$jar" ] || die "missing $jar"
    unzip -q -o "$jar" "$path" -d "$dir" \
      || die "$path is not in $(basename "$jar")"
  done < <(list_files)
}

# Class names (a/b/C and a/b/C$Inner) that a source path compiles to in JAR.
classes_in_jar() {
  local jar="$1" path="$2" base
  base="${path%.java}"
  unzip -Z1 "$jar" | grep -E "^${base//\$/\\$}(\\\$[^/]*)?\\.class$" \
    | sed 's/\.class$//' | sort
}

# javap -p -s, one line per member with its descriptor, less what javac
# versions synthesise differently: $values(), lambda$ and access$ methods;
# for anonymous classes the "final" modifier and the generic signature of
# the constructor (the descriptor is kept).
members() {
  local anonymous=0
  [[ "$2" =~ \$[0-9]+$ ]] && anonymous=1
  javap -p -s -cp "$1" "$2" | awk -v anonymous="$anonymous" '
    function flush() { if (held != "" && !skip) print held; held = "" }
    /^ *descriptor:/ { if (held != "" && !skip) print held " " $0
                       held = ""; next }
    {
      flush(); held = $0
      skip = ($0 ~ /\$values\(|lambda\$|access\$[0-9]/)
      if (anonymous) {
        sub(/^final class /, "class ", held)
        if (held ~ /\$[0-9]+\(/) held = "  <init>"
      }
    }
    END { flush() }' | sort
}

build() {
  local jars="$1" classpath_file="$2" out="$3"
  local pristine="$out/pristine" patched="$out/patched"
  local compiled="$out/pristine-classes" v1="$out/$hadoop_source_version"
  local v2="$out/$hadoop_version"
  rm -rf "$out"
  mkdir -p "$compiled" "$v1" "$v2"
  unpack_sources "$jars" "$pristine"

  local artifact path sources=() failures=0
  while read -r artifact path; do
    sources+=("$pristine/$path")
    local jar1="$jars/$artifact-$hadoop_source_version.jar"
    local jar2="$jars/$artifact-$hadoop_version.jar"
    [ -f "$jar1" ] && [ -f "$jar2" ] || die "missing $jar1 or $jar2"
    local cls
    for cls in $(classes_in_jar "$jar2" "$path"); do
      unzip -q -o "$jar1" "$cls.class" -d "$v1" 2>/dev/null \
        || { echo "  $cls: absent from $hadoop_source_version" >&2;
             failures=$((failures + 1)); continue; }
      unzip -q -o "$jar2" "$cls.class" -d "$v2"
      if ! cmp -s <(javap -c -p -cp "$v1" "$cls") \
                  <(javap -c -p -cp "$v2" "$cls"); then
        echo "  $cls: $hadoop_source_version and $hadoop_version" \
          "class files differ" >&2
        failures=$((failures + 1))
      fi
    done
  done < <(list_files)

  javac --release 8 -nowarn -encoding UTF-8 -d "$compiled" \
    -cp "$(cat "$classpath_file")" "${sources[@]}" 2>&1 \
    | grep -v '^Note:' >&2 || true
  while read -r artifact path; do
    local jar2="$jars/$artifact-$hadoop_version.jar" base="${path%.java}"
    local ours theirs
    ours="$(cd "$compiled" && find . -path "./${base}.class" -o \
      -path "./${base}\$*.class" | sed 's|^\./||;s/\.class$//' | sort)"
    theirs="$(classes_in_jar "$jar2" "$path")"
    if [ "$ours" != "$theirs" ]; then
      echo "  $path compiles to other classes than $hadoop_version has" >&2
      failures=$((failures + 1))
      continue
    fi
    local cls
    for cls in $theirs; do
      if ! cmp -s <(members "$compiled" "$cls") <(members "$v2" "$cls"); then
        echo "  $cls: the $hadoop_source_version source declares other" \
          "members than $hadoop_version's class" >&2
        diff <(members "$compiled" "$cls") <(members "$v2" "$cls") >&2 || true
        failures=$((failures + 1))
      fi
    done
  done < <(list_files)
  [ "$failures" -eq 0 ] || die "$failures check(s) failed: the" \
    "$hadoop_source_version sources are not the $hadoop_version sources"
  echo "hadoop-sources.sh: $(list_files | wc -l) files proven to be the" \
    "$hadoop_version sources"

  cp -r "$pristine" "$patched"
  local patch n=0
  for patch in "$top"/patches/[0-9]*.patch; do
    [ -e "$patch" ] || continue
    patch -p1 -d "$patched" --batch --forward --no-backup-if-mismatch \
      --quiet < "$patch" || die "$(basename "$patch") does not apply"
    n=$((n + 1))
  done
  echo "hadoop-sources.sh: applied $n patch(es)"
}

jars_from_maven() {
  local dir="$top/hadoop-hdfs-rdma/target/hadoop-jars"
  [ -d "$dir" ] || die "run the build once first (mvn -pl hadoop-hdfs-rdma" \
    "-am -DskipTests install) so that $dir exists"
  echo "$dir"
}

edit() {
  local jars
  jars="$(jars_from_maven)"
  [ -e "$edit_dir" ] && die "$edit_dir exists; export it or remove it first"
  unpack_sources "$jars" "$edit_dir"
  git -C "$edit_dir" init -q
  git -C "$edit_dir" add -A
  git -C "$edit_dir" -c user.name=hdfs-rdma -c user.email=hdfs-rdma@localhost \
    commit -q -m "Apache Hadoop $hadoop_source_version sources"
  git -C "$edit_dir" tag pristine
  local patch
  for patch in "$top"/patches/[0-9]*.patch; do
    [ -e "$patch" ] || continue
    git -C "$edit_dir" -c user.name=hdfs-rdma \
      -c user.email=hdfs-rdma@localhost am -q "$patch" \
      || die "$(basename "$patch") does not apply"
  done
  echo "Edit $edit_dir, commit one commit per patch, then run:" \
    "dev-support/hadoop-sources.sh export"
}

export_patches() {
  [ -d "$edit_dir/.git" ] || die "no edit tree: run 'hadoop-sources.sh edit'"
  [ -z "$(git -C "$edit_dir" status --porcelain)" ] \
    || die "uncommitted changes in $edit_dir"
  rm -f "$top"/patches/[0-9]*.patch
  git -C "$edit_dir" format-patch -q --no-signature --no-numbered \
    --zero-commit -o "$top/patches" pristine..HEAD
  ls "$top"/patches/[0-9]*.patch 2>/dev/null || echo "no patches"
}

case "${1:-}" in
  build) shift; [ $# -eq 3 ] || die "usage: build JARS_DIR CLASSPATH_FILE OUT"
         build "$@" ;;
  edit) edit ;;
  export) export_patches ;;
  *) die "usage: hadoop-sources.sh build|edit|export" ;;
esac
