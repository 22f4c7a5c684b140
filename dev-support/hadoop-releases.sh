#!/usr/bin/env bash
# Builds the per-release classes of the drop-in jar, for every Hadoop
# release of patches/releases.txt.
#
#   hadoop-releases.sh build CLASSES_DIR [offline=true|false]
#       Called by the hadoop-hdfs-rdma build after compilation (CLASSES_DIR
#       holds the release-neutral classes, compiled once). Per release R:
#         1. resolves R's jars and class paths (releases/pom.xml, its own
#            Maven run, so no two releases meet on one class path) into
#            target/releases/R/;
#         2. takes the files of patches/hadoop-files.txt from R's sources
#            and applies R's series (dev-support/hadoop-sources.sh);
#         3. compiles, against R's jars, the patched files, the per-release
#            layer (the sources in Hadoop's packages under src/main/java
#            and src/LAYER/java) and the compat classes with their protobuf
#            messages, relocated to R's protobuf package;
#         4. checks the patched files compile to the very classes R's jars
#            have (the agent can only replace classes Hadoop has), and,
#            where R has a shaded client (hadoop-client-api), that no class
#            refers to a package it relocates (dev-support/relocate.sh).
#       It writes into CLASSES_DIR/hdfs-rdma-patched/:
#         - R/..., every class of steps 3, at its normal path under R/;
#         - groups.properties: per release, the classes of each group the
#           agent replaces all or nothing ("client": hadoop-hdfs-client,
#           "datanode": hadoop-hdfs), the SHA-256 of Apache's class file of
#           each (and of the shaded client's where it differs), and the
#           layer classes the agent hands the JVM with them.
#       A layer class that only some releases have is also copied to its
#       normal path in CLASSES_DIR, so that the class loader finds a file
#       of that name in the jar (the agent then supplies R's bytes).
#       offline=true runs the nested Maven with -o.
#
#   hadoop-releases.sh classpath R
#       Prints R's runtime class path (a NameNode's, DataNode's or client's;
#       the build must have run).
#
#   hadoop-releases.sh test-classes R TEST_CLASSPATH_FILE
#       Compiles this module's own tests for R into target/releases/R/
#       test-classes (hadoop-tests.sh's project mode runs them): the sources
#       of src/test/java and of the tests' layer (src/test/LAYER/java), with
#       the protobuf package relocated as the compat sources are, against
#       R's classes (the build's), this module's and the UCX jars, and the
#       test class path in TEST_CLASSPATH_FILE (R's test libraries); the
#       test resources beside them, as in Maven's test-classes.
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
module="$top/hadoop-hdfs-rdma"
work="$module/target/releases"

die() {
  echo "hadoop-releases.sh: $*" >&2
  exit 1
}

# "release sources series layer protobuf shaded" lines.
list_releases() {
  local release
  for release in $("$top/dev-support/releases.sh" list); do
    "$top/dev-support/releases.sh" row "$release"
  done
}

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

# a/b/C and a/b/C$Inner names a source path compiles to in DIR.
classes_in_dir() {
  local dir="$1" base="${2%.java}"
  (cd "$dir" && find . -path "./${base}.class" -o -path "./${base}\$*.class") \
    | sed 's|^\./||;s/\.class$//' | sort
}

resolve() {
  local release="$1" sources="$2" offline="$3" shaded="$4" out="$work/$1"
  local flags=(-B -q -ntp)
  [ "$offline" = true ] && flags+=(-o)
  [ "$shaded" = - ] || flags+=(-Dclient.api.artifact="$shaded")
  # Hadoop 2.9's jars bring their slf4j binding; later releases leave it to
  # the distribution's lib/, so without one every daemon logs nothing.
  case "$release" in 2.9.*) ;; *) flags+=(-Dlog.binding=slf4j-reload4j) ;; esac
  mkdir -p "$out"
  mvn "${flags[@]}" -Dstyle.color=never -f "$module/releases/pom.xml" generate-resources \
    -Dhadoop.release="$release" -Dhadoop.sources.release="$sources" \
    -Dout.dir="$out" >/dev/null \
    || die "could not resolve Hadoop $release's jars (run" \
      "dev-support/setup.sh online once)"
}

# The bridge and JUCX jars of the module's own class path.
ucx_jars() {
  tr ':' '\n' < "$module/target/hadoop-classpath.txt" \
    | grep -E '/(jucx-bridge|jucx)([-/]|$)' | paste -sd:
}

# protoc for a protobuf package: the Hadoop line's own protobuf version.
protoc_for() {
  case "$1" in
    com.google.protobuf) echo "$module/target/protoc/protoc" ;;
    org.apache.hadoop.thirdparty.protobuf)
      echo "$module/target/protoc/protoc-3" ;;
    *) die "no protoc for protobuf package $1" ;;
  esac
}

# Java sources under DIR written for com.google.protobuf, rewritten for
# protobuf package PACKAGE (Hadoop 3's is relocated).
relocate_protobuf() {
  local dir="$1" package="$2"
  if [ "$package" != com.google.protobuf ]; then
    grep -rl 'com\.google\.protobuf' "$dir" | xargs -r sed -i \
      "s/com\\.google\\.protobuf/$package/g"
  fi
}

# The compat sources and their protobuf messages for PACKAGE, into DIR.
compat_sources() {
  local package="$1" dir="$2" protoc
  protoc="$(protoc_for "$package")"
  mkdir -p "$dir"
  cp -r "$module/src/main/java/org/hdfsrdma/hadoop/compat" "$dir/compat"
  "$top/dev-support/protoc.sh" "$protoc" "$module/src/main/proto" \
    "$dir/proto" >/dev/null
  relocate_protobuf "$dir" "$package"
}

# The Java release Apache compiled JAR's DataNode for (8 for class files
# of Java 8 or older): the patched classes are compiled for the same one,
# so that they compile to the same class files (javac for Java 8 adds
# synthetic classes that later targets do not, which the agent's
# class-for-class replacement would refuse).
java_release() {
  local major
  major="$(unzip -p "$1" org/apache/hadoop/hdfs/server/datanode/DataNode.class \
    | head -c 8 | od -An -j6 -N2 -tu1 | awk '{ print $1 * 256 + $2 }')"
  [ -n "$major" ] || die "no DataNode class in $1"
  if [ "$major" -le 52 ]; then echo 8; else echo $((major - 44)); fi
}

build_release() {
  local classes="$1" release="$2" layer="$4" protobuf="$5"
  local out="$work/$release" compiled="$work/$release/classes"
  local jars="$out/jars" cp
  bash "$top/dev-support/hadoop-sources.sh" build "$release" "$jars" \
    "$out/compile-classpath.txt" "$out/src" >&2
  rm -rf "$compiled" "$out/compat"
  mkdir -p "$compiled"
  compat_sources "$protobuf" "$out/compat"
  local sources=()
  mapfile -t sources < <(
    find "$out/src/patched" "$out/compat" -name '*.java'
    find "$module/src/main/java/org/apache" -name '*.java'
    [ -d "$module/src/$layer/java" ] \
      && find "$module/src/$layer/java" -name '*.java')
  # Release R's jars first; the neutral classes and the UCX jars after them
  # (CLASSES_DIR also holds the default release's layer, which the sources
  # given here shadow).
  cp="$(cat "$out/compile-classpath.txt"):$classes:$(ucx_jars)"
  if ! javac --release "$(java_release "$jars/hadoop-hdfs-$release.jar")" \
      -nowarn -encoding UTF-8 -proc:none \
      -d "$compiled" -cp "$cp" "${sources[@]}" > "$out/javac.log" 2>&1; then
    cat "$out/javac.log" >&2
    die "the $release classes do not compile"
  fi
}

# The SHA-256 of CLASS in JAR, or nothing when JAR lacks it.
digest() {
  unzip -l "$1" "$2.class" > /dev/null 2>&1 || return 0
  unzip -p "$1" "$2.class" | sha256sum | cut -d' ' -f1
}

# Fails unless the release's classes need no relocation to run against
# the shaded client SHADED (hadoop-client-api): Hadoop's shade plugin moved
# third-party packages under org.apache.hadoop.shaded, so a reference to
# one (a Guava class, say) would break there. Apache's own DataNode classes
# (the datanode group) are left out: they run only in a DataNode, on
# hadoop-hdfs's unshaded class path, and refer to what Apache's do.
check_shaded() {
  local release="$1" shaded="$2" offline="$3" compiled="$work/$1/classes"
  local relocated="$work/$1/relocated" offline_env=()
  [ "$offline" = true ] && offline_env=(MAVEN_OFFLINE=1)
  rm -rf "$relocated"
  env "${offline_env[@]}" "$top/dev-support/relocate.sh" "$compiled" \
    "$relocated" \
    "$top/dev-support/relocate/hadoop-client.mapping" > "$work/$1/relocate.log"
  local cls artifact path dataNode=" "
  while read -r artifact path; do
    [ "$(group_of "$artifact")" = datanode ] || continue
    for cls in $(classes_in_dir "$compiled" "$path"); do
      dataNode="$dataNode$cls.class "
    done
  done < <(bash "$top/dev-support/hadoop-sources.sh" files "$release")
  while read -r cls; do
    case "$dataNode" in *" $cls "*) continue ;; esac
    cmp -s "$compiled/$cls" "$relocated/$cls" || die "$release: $cls" \
      "refers to a package $shaded relocates: see $work/$1/relocate.log"
  done < <(cd "$compiled" && find . -name '*.class' | sed 's|^\./||')
}

# Writes R's classes and groups into CLASSES_DIR; prints R's groups.
record_release() {
  local classes="$1" release="$2" shaded="$3" compiled="$work/$2/classes"
  local jars="$work/$2/jars" out="$1/hdfs-rdma-patched/$2"
  local artifact path cls group
  declare -A members=()
  local grouped=" "
  while read -r artifact path; do
    group="$(group_of "$artifact")"
    local jar="$jars/$artifact-$release.jar" ours theirs
    ours="$(classes_in_dir "$compiled" "$path")"
    theirs="$(classes_in_jar "$jar" "$path")"
    [ "$ours" = "$theirs" ] || die "$release: the patched $path compiles" \
      "to [$(echo $ours)], Apache's to [$(echo $theirs)]: the agent can only" \
      "replace classes Hadoop has"
    for cls in $ours; do
      # Apache's class file, and the shaded client's where it differs (the
      # shade plugin of Hadoop 3.3 rewrote every class it copied).
      local d1 d2=""
      d1="$(digest "$jar" "$cls")"
      if [ "$group" = client ] && [ "$shaded" != - ]; then
        d2="$(digest "$jars/$shaded-$release.jar" "$cls")"
        [ -n "$d2" ] || die "$release: $cls is not in $shaded"
        [ "$d2" != "$d1" ] || d2=""
      fi
      echo "$release.sha256.$cls=$d1${d2:+ $d2}"
      members[$group]="${members[$group]:-} $cls"
      grouped="$grouped$cls "
    done
  done < <(bash "$top/dev-support/hadoop-sources.sh" files "$release")
  for group in client datanode; do
    echo "$release.$group.classes=${members[$group]# }"
  done
  local layer=""
  while read -r cls; do
    case "$grouped" in *" $cls "*) continue ;; esac
    layer="$layer $cls"
    if [ ! -f "$classes/$cls.class" ]; then
      mkdir -p "$classes/$(dirname "$cls")"
      cp "$compiled/$cls.class" "$classes/$cls.class"
    fi
  done < <(cd "$compiled" && find . -name '*.class' | sed 's|^\./||;s/\.class$//' \
    | sort)
  echo "$release.layer.classes=${layer# }"
  rm -rf "$out"
  mkdir -p "$out"
  cp -r "$compiled"/. "$out/"
}

build() {
  local classes="$1" offline="${2:-offline=false}"
  offline="${offline#offline=}"
  [ -d "$classes" ] || die "no $classes"
  local props="$classes/hdfs-rdma-patched/groups.properties"
  rm -rf "$classes/hdfs-rdma-patched"
  mkdir -p "$classes/hdfs-rdma-patched"
  local all="" release sources series layer protobuf
  local body
  body="$(mktemp)"
  while read -r release sources series layer protobuf shaded; do
    resolve "$release" "$sources" "$offline" "$shaded"
    build_release "$classes" "$release" "$series" "$layer" "$protobuf"
    [ "$shaded" = - ] || check_shaded "$release" "$shaded" "$offline"
    record_release "$classes" "$release" "$shaded" >> "$body"
    all="$all $release"
    echo "hadoop-releases.sh: $release: $(find "$work/$release/classes" \
      -name '*.class' | wc -l) classes ($series, $layer, $protobuf)"
  done < <(list_releases)
  {
    echo "# Written by dev-support/hadoop-releases.sh: per Hadoop release,"
    echo "# the classes the agent replaces by group, the SHA-256 of Apache's"
    echo "# class files, and the layer classes that come with them."
    echo "releases=${all# }"
    cat "$body"
  } > "$props"
  rm -f "$body"
}

test_classes() {
  local release="$1" test_classpath="$2" layer protobuf
  layer="$("$top/dev-support/releases.sh" field "$release" layer)"
  protobuf="$("$top/dev-support/releases.sh" field "$release" protobuf)"
  local src="$work/$release/test-src" dest="$work/$release/test-classes"
  local patched="$module/target/classes/hdfs-rdma-patched/$release"
  [ -d "$patched" ] || die "no classes for $release: build hadoop-hdfs-rdma"
  [ -f "$test_classpath" ] || die "no $test_classpath"
  rm -rf "$src" "$dest"
  mkdir -p "$src" "$dest"
  cp -r "$module/src/test/java/." "$src/"
  [ -d "$module/src/test/$layer/java" ] \
    && cp -r "$module/src/test/$layer/java/." "$src/"
  relocate_protobuf "$src" "$protobuf"
  local sources=() cp
  mapfile -t sources < <(find "$src" -name '*.java')
  # R's classes first: they shadow the default release's layer, which the
  # module's classes also hold.
  cp="$patched:$module/target/classes:$(ucx_jars)"
  cp="$cp:$top/jucx-bridge/target/test-classes:$(cat "$test_classpath")"
  if ! javac -nowarn -encoding UTF-8 -proc:none -d "$dest" -cp "$cp" \
      "${sources[@]}" > "$work/$release/test-javac.log" 2>&1; then
    cat "$work/$release/test-javac.log" >&2
    die "the tests do not compile against $release"
  fi
  # Laid out as Maven's test-classes: the test resources (the UCX path on)
  # beside the classes, for the test JVM and every JVM a test starts.
  cp -r "$module/src/test/resources/." "$dest/"
  echo "$dest"
}

case "${1:-}" in
  test-classes) [ $# -eq 3 ] \
      || die "usage: test-classes RELEASE TEST_CLASSPATH_FILE"
    test_classes "$2" "$3" ;;
  build) shift; [ $# -ge 1 ] || die "usage: build CLASSES_DIR [offline=BOOL]"
         build "$@" ;;
  classpath) [ $# -eq 2 ] || die "usage: classpath RELEASE"
             [ -f "$work/$2/runtime-classpath.txt" ] \
               || die "no class path for $2: build hadoop-hdfs-rdma first"
             cat "$work/$2/runtime-classpath.txt" ;;
  *) die "usage: hadoop-releases.sh build|classpath|test-classes" ;;
esac
