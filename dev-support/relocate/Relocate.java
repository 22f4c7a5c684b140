import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.commons.ClassRemapper;
import org.objectweb.asm.commons.Remapper;

/**
 * Relocates compiled classes the way maven-shade-plugin relocates them.
 *
 * <p>Why: Spark 3.5/4.x ship Hadoop's shaded client (hadoop-client-api and
 * hadoop-client-runtime), whose classes went through maven-shade-plugin with
 * Hadoop's relocations (for instance {@code com/} to
 * {@code org/apache/hadoop/shaded/com/}, except a list of excluded
 * packages). The patched DataStreamer, DFSPacket and DFSOutputStream are
 * compiled against the plain hadoop-hdfs-client; before the agent may hand
 * them to a JVM that loads hadoop-client-api, every reference they make must
 * be rewritten as shade rewrote Apache's own copies. This tool does that
 * rewrite at build time, with no network and no Maven plugin run, using the
 * ASM remapper that maven-shade-plugin itself uses.
 *
 * <p>What it does, per class file under IN_DIR: it reads the class with
 * {@code ClassReader.EXPAND_FRAMES}, passes it through a
 * {@link ClassRemapper} into a {@code new ClassWriter(0)} (a rebuilt
 * constant pool), exactly as maven-shade-plugin's {@code DefaultShader}
 * does, and writes it under OUT_DIR at its relocated path. Like shade, it
 * rewrites type names wherever they occur (descriptors, signatures,
 * annotations, constants) and also String constants that look like a
 * relocatable class or resource name ({@code "com.google.common.X"},
 * {@code "com/google/X"}, {@code "Lcom/google/X;"}); every rewritten String
 * is printed, since a configuration key can look like a package name (this
 * is why Hadoop excludes {@code io/file/buffer/size} and friends).
 * A class in which nothing maps is copied byte for byte, as
 * maven-shade-plugin 3.3 and later do (Hadoop 3.4 and 3.5 use shade 3.4.1
 * and 3.6.0); {@code --rewrite-all} rewrites every class instead, as shade
 * 3.2.1 did (Hadoop 3.3.x), which reproduces Apache's hadoop-client-api
 * 3.3.x class files byte for byte.
 *
 * <p>Usage: {@code Relocate [--rewrite-all] IN_DIR OUT_DIR MAPPING_FILE}.
 * Other files than {@code *.class} are not copied. The mapping file holds
 * one rule per line, {@code FROM TO} (an optional {@code ->} between them),
 * as internal-name prefixes such as {@code com/ org/apache/hadoop/shaded/com/};
 * a following line {@code !PREFIX} excludes names from the rule above it:
 * a PREFIX ending in {@code /} excludes that package and all below it (shade's
 * {@code P/*} and {@code P/**}/{@code *} globs), any other PREFIX that exact
 * name. The first rule that takes a name wins; {@code #} starts a comment.
 * Exit status: 0 done, 2 bad usage or mapping.
 */
public final class Relocate {

  /** One relocation rule: a prefix, its replacement, and exclusions. */
  private static final class Rule {
    final String from;
    final String to;
    final List<String> excludes = new ArrayList<>();

    Rule(String from, String to) {
      this.from = from;
      this.to = to;
    }

    /** Whether this rule relocates the internal (slash) name. */
    boolean takes(String name) {
      if (!name.startsWith(from)) {
        return false;
      }
      for (String ex : excludes) {
        if (ex.endsWith("/") ? name.startsWith(ex) : name.equals(ex)) {
          return false;
        }
      }
      return true;
    }
  }

  private static final Pattern DESCRIPTOR = Pattern.compile("(\\[*)?L(.+);");

  /** Shade's RelocatorRemapper: maps names, records what it changed. */
  private static final class RuleRemapper extends Remapper {
    final List<Rule> rules;
    final TreeSet<String> changedNames = new TreeSet<>();
    final TreeSet<String> changedStrings = new TreeSet<>();

    RuleRemapper(List<Rule> rules) {
      this.rules = rules;
    }

    void reset() {
      changedNames.clear();
      changedStrings.clear();
    }

    /** Relocates a slash name, or returns null when no rule takes it. */
    private String relocatePath(String path) {
      String p = path.endsWith(".class")
          ? path.substring(0, path.length() - 6) : path;
      if (p.startsWith("/")) {
        p = p.substring(1);
      }
      for (Rule r : rules) {
        if (r.takes(p)) {
          return r.to + path.substring(path.indexOf(r.from) + r.from.length());
        }
      }
      return null;
    }

    @Override
    public String map(String internalName) {
      String prefix = "";
      String suffix = "";
      String name = internalName;
      Matcher m = DESCRIPTOR.matcher(name);
      if (m.matches()) {
        prefix = (m.group(1) == null ? "" : m.group(1)) + "L";
        suffix = ";";
        name = m.group(2);
      }
      String mapped = relocatePath(name);
      if (mapped == null) {
        return internalName;
      }
      String result = prefix + mapped + suffix;
      changedNames.add(internalName + " -> " + result);
      return result;
    }

    @Override
    public Object mapValue(Object value) {
      if (!(value instanceof String)) {
        return super.mapValue(value);
      }
      String s = (String) value;
      String prefix = "";
      String suffix = "";
      String name = s;
      Matcher m = DESCRIPTOR.matcher(name);
      if (m.matches()) {
        prefix = (m.group(1) == null ? "" : m.group(1)) + "L";
        suffix = ";";
        name = m.group(2);
      }
      String mapped = null;
      if (name.indexOf('/') < 0) {
        String dotted = relocatePath(name.replace('.', '/'));
        if (dotted != null) {
          mapped = dotted.replace('/', '.');
        }
      }
      if (mapped == null) {
        mapped = relocatePath(name);
      }
      if (mapped == null) {
        return s;
      }
      String result = prefix + mapped + suffix;
      changedStrings.add('"' + s + "\" -> \"" + result + '"');
      return result;
    }
  }

  private static List<Rule> readMapping(Path file) throws IOException {
    List<Rule> rules = new ArrayList<>();
    int lineNo = 0;
    for (String raw : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      lineNo++;
      String line = raw.replaceAll("#.*", "").trim();
      if (line.isEmpty()) {
        continue;
      }
      if (line.startsWith("!")) {
        if (rules.isEmpty()) {
          throw new IllegalArgumentException(file + ":" + lineNo
              + ": an exclusion before any rule");
        }
        rules.get(rules.size() - 1).excludes.add(line.substring(1).trim());
        continue;
      }
      List<String> words = new ArrayList<>(Arrays.asList(line.split("\\s+")));
      words.remove("->");
      if (words.size() != 2) {
        throw new IllegalArgumentException(file + ":" + lineNo
            + ": expected FROM TO, got: " + raw);
      }
      rules.add(new Rule(words.get(0).replace('.', '/'),
          words.get(1).replace('.', '/')));
    }
    if (rules.isEmpty()) {
      throw new IllegalArgumentException(file + ": no rules");
    }
    return rules;
  }

  public static void main(String[] args) throws IOException {
    List<String> a = new ArrayList<>(Arrays.asList(args));
    boolean rewriteAll = a.remove("--rewrite-all");
    if (a.size() != 3) {
      System.err.println(
          "usage: Relocate [--rewrite-all] IN_DIR OUT_DIR MAPPING_FILE");
      System.exit(2);
    }
    Path in = Paths.get(a.get(0));
    Path out = Paths.get(a.get(1));
    List<Rule> rules;
    try {
      rules = readMapping(Paths.get(a.get(2)));
    } catch (IllegalArgumentException e) {
      System.err.println("relocate: " + e.getMessage());
      System.exit(2);
      return;
    }
    RuleRemapper remapper = new RuleRemapper(rules);
    List<Path> classes;
    try (Stream<Path> s = Files.walk(in)) {
      classes = s.filter(p -> p.toString().endsWith(".class"))
          .sorted().collect(Collectors.toList());
    }
    int rewritten = 0;
    int copied = 0;
    for (Path file : classes) {
      byte[] original = Files.readAllBytes(file);
      String name = in.relativize(file).toString().replace('\\', '/');
      remapper.reset();
      ClassReader reader = new ClassReader(original);
      // No ClassReader given to the writer: the constant pool is rebuilt,
      // so no entry keeps an old name (maven-shade-plugin does the same).
      ClassWriter writer = new ClassWriter(0);
      ClassVisitor visitor = new ClassRemapper(writer, remapper);
      reader.accept(visitor, ClassReader.EXPAND_FRAMES);
      boolean changed = !remapper.changedNames.isEmpty()
          || !remapper.changedStrings.isEmpty();
      String target = name;
      String mappedPath = remapper.relocatePath(name);
      if (mappedPath != null) {
        target = mappedPath;
      }
      byte[] bytes = changed || rewriteAll ? writer.toByteArray() : original;
      Path dest = out.resolve(target);
      Files.createDirectories(dest.getParent());
      Files.write(dest, bytes);
      if (changed) {
        rewritten++;
        System.out.println("relocated " + name
            + (target.equals(name) ? "" : " as " + target));
        for (String c : remapper.changedNames) {
          System.out.println("  name   " + c);
        }
        for (String c : remapper.changedStrings) {
          System.out.println("  string " + c);
        }
      } else {
        copied++;
      }
    }
    System.out.println("relocate: " + classes.size() + " classes, "
        + rewritten + " with relocated references, " + copied
        + (rewriteAll ? " rewritten with nothing to relocate"
            : " copied unchanged"));
  }

  private Relocate() {
  }
}
