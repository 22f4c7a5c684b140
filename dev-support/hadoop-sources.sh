#!/usr/bin/env bash
# The Hadoop sources the drop-in jar replaces, per release of
# patches/releases.txt: prove, patch, edit, export.
#
#   hadoop-sources.sh build RELEASE JARS_DIR CLASSPATH_FILE OUT_DIR
#       For every file listed in patches/hadoop-files.txt: take it from the
#       sources jar of RELEASE's "sources" release in JARS_DIR and write the
#       patched copy to OUT_DIR/patched. Where that is another release (the
#       2.9.2 files come from 2.9.1's sources jars), first prove they are
#       RELEASE's sources, per class the file compiles to (outer and
#       nested):
#         1. Apache's class files of both releases disassemble identically
#            (javap -c -p), so the two releases built the same source;
#         2. the unpatched source compiled here declares exactly the members
#            of Apache's RELEASE class (javap -p -s, less what javac
#            versions synthesise differently: $values(), lambda$ and access$
#            methods, "final" on anonymous classes), and compiles to the
#            same set of classes.
#       Comparing our bytecode with Apache's would not be sound: another
#       javac emits different bytecode for the same source.
#       Then applies the release's series, patches/SERIES/[0-9]*.patch, in
#       order (patch -p1, no fuzz); any reject fails the build. A series
#       written BASE+OVERLAY is BASE's patches with those of the same name
#       in patches/OVERLAY/ instead: a release whose sources differ from
#       the rest of its line in the context of one patch carries only that
#       patch.
#
#   hadoop-sources.sh edit [RELEASE]
#       Makes hadoop-hdfs-rdma/target/hadoop-src-edit, a git repository with
#       RELEASE's pristine sources (default 2.9.2) as its first commit and
#       one commit per patch of its series. Edit there and commit (one
#       commit per patch, message = patch name).
#
#   hadoop-sources.sh export
#       Rewrites the edited series' [0-9]*.patch from the commits of the
#       edit tree, so nobody edits patch files by hand. For a BASE+OVERLAY
#       series it writes into OVERLAY only the patches that differ from
#       BASE's in more than line numbers.
#
#   hadoop-sources.sh files RELEASE
#       Prints the "artifact path" lines of patches/hadoop-files.txt that
#       RELEASE's series replaces.
#
#   hadoop-sources.sh stats [--check|--update]
#       The lines each patch adds and removes, per series, as the table
#       patches/README.md carries between its "patch-stats" markers;
#       --check fails when the README's table differs, --update rewrites
#       it.
#
#   Every command refuses a patch that touches a path not listed in
#   patches/hadoop-files.txt (an editor's .orig or .rej, a new file).
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
files="$top/patches/hadoop-files.txt"
edit_dir="$top/hadoop-hdfs-rdma/target/hadoop-src-edit"
# Set by use_release: the release, where its sources come from, its
# series' directory and the overlay's (or "").
hadoop_version=""
hadoop_source_version=""
series=""
overlay=""

die() {
  echo "hadoop-sources.sh: $*" >&2
  exit 1
}

# Reads RELEASE's line of patches/releases.txt into the variables above.
use_release() {
  local name
  hadoop_source_version="$("$top/dev-support/releases.sh" field "$1" sources)" \
    || exit 1
  name="$("$top/dev-support/releases.sh" field "$1" series)"
  hadoop_version="$1"
  series="$top/patches/${name%%+*}"
  overlay=""
  [ "$name" = "${name#*+}" ] || overlay="$top/patches/${name#*+}"
  [ -d "$series" ] || die "no series $series for $1"
  [ -z "$overlay" ] || [ -d "$overlay" ] || die "no overlay $overlay for $1"
}

# The release's patches in order: the series', each replaced by the
# overlay's patch of the same name where there is one.
series_patches() {
  local patch
  for patch in "$series"/[0-9]*.patch; do
    [ -e "$patch" ] || continue
    if [ -n "$overlay" ] && [ -e "$overlay/$(basename "$patch")" ]; then
      echo "$overlay/$(basename "$patch")"
    else
      echo "$patch"
    fi
  done
}

# "artifact path" lines of the file list that the release's series
# replaces: a line with a third column is for the series it names
# (comma-separated), every other line for all.
list_files() {
  grep -v '^\s*#' "$files" | grep -v '^\s*$' \
    | awk -v s="$(basename "$series")" '
      NF < 3 { print $1, $2; next }
      { n = split($3, for_series, ",")
        for (i = 1; i <= n; i++) if (for_series[i] == s) print $1, $2 }'
}

# The paths a patch touches (both sides of each "diff --git" line).
patch_paths() {
  sed -n 's|^diff --git a/\([^ ]*\) b/\([^ ]*\)$|\1\n\2|p' "$1" | sort -u
}

# Dies unless every path PATCH touches is one of the listed files.
check_patch_paths() {
  local patch="$1" path bad=0
  while read -r path; do
    list_files | awk -v p="$path" '$2 == p { found = 1 } END { exit !found }' \
      || { echo "  $(basename "$(dirname "$patch")")/$(basename "$patch"):" \
             "$path is not in $(basename "$files")" >&2; bad=1; }
  done < <(patch_paths "$patch")
  [ "$bad" -eq 0 ] || die "a patch touches files the jar does not replace"
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

# Runs javap ARGS... and writes its output to FILE, dying with that output
# when javap fails: a JVM that cannot start prints its error on standard
# output, which would otherwise be compared as if it were a class.
javap_to() {
  local file="$1"
  shift
  javap "$@" > "$file" 2>&1 \
    || { cat "$file" >&2; die "javap $* failed (above)"; }
}

# javap -p -s of the CLASSES (a/b/C) in DIR, one line per member with its
# descriptor, each prefixed by its class, less what javac versions
# synthesise differently: $values(), lambda$ and access$ methods; for
# anonymous classes the "final" modifier and the generic signature of the
# constructor (the descriptor is kept). Written to FILE, sorted.
members() {
  local file="$1" dir="$2"
  shift 2
  javap_to "$file.javap" -p -s -cp "$dir" "$@"
  awk '
    function flush() { if (held != "" && !skip) print cls ": " held
                       held = "" }
    /^Compiled from / { flush(); next }
    /^[^ }]/ && match($0, /(class|interface) [^ <{]+/) {
      flush()
      cls = substr($0, RSTART, RLENGTH); sub(/^[a-z]+ /, "", cls)
      anonymous = (cls ~ /\$[0-9]+$/)
    }
    /^ *descriptor:/ { if (held != "" && !skip) print cls ": " held " " $0
                       held = ""; next }
    {
      flush(); held = $0
      skip = ($0 ~ /\$values\(|lambda\$|access\$[0-9]/)
      if (anonymous) {
        sub(/^final class /, "class ", held)
        if (held ~ /\$[0-9]+\(/) held = "  <init>"
      }
    }
    END { flush() }' "$file.javap" | sort > "$file"
}

build() {
  use_release "$1"
  local jars="$2" classpath_file="$3" out="$4"
  local pristine="$out/pristine" patched="$out/patched"
  rm -rf "$out"
  mkdir -p "$out"
  unpack_sources "$jars" "$pristine"
  [ "$hadoop_source_version" = "$hadoop_version" ] \
    || prove "$jars" "$classpath_file" "$out"
  apply_series "$pristine" "$patched"
}

# Proves the $hadoop_source_version sources unpacked in $3/pristine are the
# $hadoop_version sources (see the top of this file). javap runs once per
# file and side, never per class.
prove() {
  local jars="$1" classpath_file="$2" out="$3"
  local pristine="$out/pristine" compiled="$out/pristine-classes"
  local v1="$out/$hadoop_source_version" v2="$out/$hadoop_version"
  local javap_out="$out/javap" artifact path sources=() failures=0
  mkdir -p "$compiled" "$v1" "$v2" "$javap_out"
  while read -r artifact path; do
    sources+=("$pristine/$path")
    local jar1="$jars/$artifact-$hadoop_source_version.jar"
    local jar2="$jars/$artifact-$hadoop_version.jar"
    [ -f "$jar1" ] && [ -f "$jar2" ] || die "missing $jar1 or $jar2"
    local cls classes=() name
    for cls in $(classes_in_jar "$jar2" "$path"); do
      unzip -q -o "$jar1" "$cls.class" -d "$v1" 2>/dev/null \
        || { echo "  $cls: absent from $hadoop_source_version" >&2;
             failures=$((failures + 1)); continue; }
      unzip -q -o "$jar2" "$cls.class" -d "$v2"
      classes+=("$cls")
    done
    [ "${#classes[@]}" -gt 0 ] || continue
    name="$javap_out/$(basename "${path%.java}")"
    javap_to "$name.c1" -c -p -cp "$v1" "${classes[@]}"
    javap_to "$name.c2" -c -p -cp "$v2" "${classes[@]}"
    if ! cmp -s "$name.c1" "$name.c2"; then
      echo "  $path: $hadoop_source_version and $hadoop_version class" \
        "files differ:" >&2
      diff "$name.c1" "$name.c2" | head -20 >&2 || true
      failures=$((failures + 1))
    fi
  done < <(list_files)

  javac --release 8 -nowarn -encoding UTF-8 -d "$compiled" \
    -cp "$(cat "$classpath_file")" "${sources[@]}" > "$out/javac.log" 2>&1 \
    || { cat "$out/javac.log" >&2; die "the pristine $hadoop_source_version" \
      "sources do not compile against $hadoop_version"; }
  while read -r artifact path; do
    local jar2="$jars/$artifact-$hadoop_version.jar" base="${path%.java}"
    local ours theirs name
    ours="$(cd "$compiled" && find . -path "./${base}.class" -o \
      -path "./${base}\$*.class" | sed 's|^\./||;s/\.class$//' | sort)"
    theirs="$(classes_in_jar "$jar2" "$path")"
    if [ "$ours" != "$theirs" ]; then
      echo "  $path compiles to other classes than $hadoop_version has" >&2
      failures=$((failures + 1))
      continue
    fi
    name="$javap_out/$(basename "$base")"
    # shellcheck disable=SC2086 # class names have no spaces
    members "$name.ours" "$compiled" $theirs
    # shellcheck disable=SC2086
    members "$name.theirs" "$v2" $theirs
    if ! cmp -s "$name.ours" "$name.theirs"; then
      echo "  $path: the $hadoop_source_version source declares other" \
        "members than $hadoop_version's classes:" >&2
      diff "$name.ours" "$name.theirs" >&2 || true
      failures=$((failures + 1))
    fi
  done < <(list_files)
  [ "$failures" -eq 0 ] || die "$failures check(s) failed: the" \
    "$hadoop_source_version sources are not the $hadoop_version sources"
  echo "hadoop-sources.sh: $(list_files | wc -l) files proven to be the" \
    "$hadoop_version sources"
}

# Copies the pristine sources DIR to OUT and applies the release's series.
apply_series() {
  local pristine="$1" patched="$2" patch n=0
  cp -r "$pristine" "$patched"
  while read -r patch; do
    check_patch_paths "$patch"
    patch -p1 -d "$patched" --batch --forward --no-backup-if-mismatch \
      --fuzz=0 --quiet < "$patch" \
      || die "$(basename "$(dirname "$patch")")/$(basename "$patch") does" \
        "not apply to $hadoop_version"
    n=$((n + 1))
  done < <(series_patches)
  echo "hadoop-sources.sh: $hadoop_version: applied $n patch(es) of" \
    "$(basename "$series")${overlay:++$(basename "$overlay")}"
}

# The jars of RELEASE that the hadoop-hdfs-rdma build resolved.
release_jars() {
  local dir="$top/hadoop-hdfs-rdma/target/releases/$1/jars"
  [ -d "$dir" ] || die "run the build once first (mvn -pl hadoop-hdfs-rdma" \
    "-am -DskipTests package) so that $dir exists"
  echo "$dir"
}

edit() {
  use_release "${1:-2.9.2}"
  local jars
  jars="$(release_jars "$hadoop_version")"
  [ -e "$edit_dir" ] && die "$edit_dir exists; export it or remove it first"
  unpack_sources "$jars" "$edit_dir"
  git -C "$edit_dir" init -q
  git -C "$edit_dir" add -A
  git -C "$edit_dir" -c user.name=hdfs-rdma -c user.email=hdfs-rdma@localhost \
    commit -q -m "Apache Hadoop $hadoop_source_version sources"
  git -C "$edit_dir" tag pristine
  git -C "$edit_dir" config hdfsrdma.series "$series"
  git -C "$edit_dir" config hdfsrdma.overlay "$overlay"
  local patch
  while read -r patch; do
    git -C "$edit_dir" -c user.name=hdfs-rdma \
      -c user.email=hdfs-rdma@localhost am -q "$patch" \
      || die "$(basename "$patch") does not apply"
  done < <(series_patches)
  echo "Edit $edit_dir ($(basename "$series") on $hadoop_version), commit" \
    "one commit per patch, then run: dev-support/hadoop-sources.sh export"
}

export_patches() {
  [ -d "$edit_dir/.git" ] || die "no edit tree: run 'hadoop-sources.sh edit'"
  [ -z "$(git -C "$edit_dir" status --porcelain)" ] \
    || die "uncommitted changes in $edit_dir"
  series="$(git -C "$edit_dir" config hdfsrdma.series)"
  overlay="$(git -C "$edit_dir" config hdfsrdma.overlay || true)"
  local tmp patch base
  tmp="$(mktemp -d)"
  git -C "$edit_dir" format-patch -q --no-signature --no-numbered \
    --zero-commit -o "$tmp" pristine..HEAD
  for patch in "$tmp"/[0-9]*.patch; do
    [ -e "$patch" ] || continue
    check_patch_paths "$patch"
  done
  if [ -z "$overlay" ]; then
    [ -d "$series" ] || mkdir -p "$series"
    rm -f "$series"/[0-9]*.patch
    cp "$tmp"/[0-9]*.patch "$series"/ 2>/dev/null || true
    rm -rf "$tmp"
    ls "$series"/[0-9]*.patch 2>/dev/null || echo "no patches"
    return
  fi
  rm -f "$overlay"/[0-9]*.patch
  for patch in "$tmp"/[0-9]*.patch; do
    base="$series/$(basename "$patch")"
    if [ -e "$base" ] && diff -q -I '^index ' -I '^@@ ' "$base" "$patch" \
        > /dev/null; then
      continue
    fi
    cp "$patch" "$overlay/"
  done
  rm -rf "$tmp"
  ls "$overlay"/[0-9]*.patch 2>/dev/null || echo "no overlay patches"
}

# Lines added and removed by the PATCHes together, as "+A -R" (0 counts
# left out), as git counts them.
patch_size() {
  local patch
  for patch in "$@"; do git apply --numstat "$patch"; done | awk '
    { a += $1; r += $2 }
    END { s = ""; if (a) s = "+" a; if (r) s = s (s ? " " : "") "-" r
          print (s ? s : "0") }'
}

# The series directory whose file list NAME's patches are checked against:
# NAME's own, or for an overlay the series it is laid over
# (patches/releases.txt, "BASE+OVERLAY").
base_series() {
  local base
  base="$(awk -v d="$1" '!/^[[:space:]]*#/ && NF {
      n = split($3, s, "+")
      for (i = 2; i <= n; i++) if (s[i] == d) { print s[1]; exit } }' \
    "$top/patches/releases.txt")"
  echo "$top/patches/${base:-$1}"
}

# The generated table of patches/README.md: every series and overlay.
stats_table() {
  local dir patch series
  echo "| series | patch | file | lines |"
  echo "|---|---|---|---|"
  for dir in "$top"/patches/hadoop-*/; do
    series="$(base_series "$(basename "$dir")")"
    for patch in "$dir"[0-9]*.patch; do
      [ -e "$patch" ] || continue
      check_patch_paths "$patch"
      echo "| $(basename "$dir") | $(basename "$patch" | cut -c1-4) |" \
        "$(patch_paths "$patch" | xargs -n1 basename | sort -u | paste -sd' ')" \
        "| $(patch_size "$patch") |"
    done
    echo "| $(basename "$dir") | all | | $(patch_size "$dir"[0-9]*.patch) |"
  done
}

stats() {
  local readme="$top/patches/README.md" begin='<!-- patch-stats -->'
  local end='<!-- /patch-stats -->' table current
  table="$(stats_table)"
  case "${1:-}" in
    "") echo "$table" ;;
    --check|--update)
      current="$(awk -v b="$begin" -v e="$end" '$0 == e { on = 0 }
        on { print } $0 == b { on = 1 }' "$readme")"
      grep -qxF "$begin" "$readme" && grep -qxF "$end" "$readme" \
        || die "$readme has no $begin ... $end block"
      [ "$current" = "$table" ] && return
      if [ "$1" = --check ]; then
        diff <(echo "$current") <(echo "$table") >&2 || true
        die "patches/README.md's patch table is stale: run" \
          "dev-support/hadoop-sources.sh stats --update"
      fi
      TABLE="$table" awk -v b="$begin" -v e="$end" '$0 == e { on = 0 }
        !on { print } $0 == b { on = 1; print ENVIRON["TABLE"] }' \
        "$readme" > "$readme.tmp"
      mv "$readme.tmp" "$readme" ;;
    *) die "usage: stats [--check|--update]" ;;
  esac
}

case "${1:-}" in
  stats) shift; stats "$@" ;;
  build) shift; [ $# -eq 4 ] \
           || die "usage: build RELEASE JARS_DIR CLASSPATH_FILE OUT"
         build "$@" ;;
  edit) shift; edit "$@" ;;
  export) export_patches ;;
  files) shift; [ $# -eq 1 ] || die "usage: files RELEASE"
         use_release "$1"; list_files ;;
  *) die "usage: hadoop-sources.sh build|edit|export|files|stats" ;;
esac
