#!/usr/bin/env python3
"""Fails when a document of the repository names something that is not there.

    dev-support/readme-check.py             check; exit 1 listing FILE:LINE: what
    dev-support/readme-check.py --update    also rewrite the configuration table
    dev-support/readme-check.py --self-test plant each kind of mistake in a
                                            scratch tree and prove it is caught

The documents: every README.md, DESIGN.md and RESULTS-LOG.md of the
repository (not under target/ or benchmarks/figures/, whose summaries the
benchmark harness writes). In each it checks:

  link    a relative Markdown link [..](PATH) or ![..](PATH) whose PATH does
          not exist (relative to the document);
  path    a backticked repository path (`dir/file`, two components or more,
          only path characters) that exists neither relative to the
          document nor to the top of the repository. Skipped: absolute and
          home paths, build and run outputs (a component `target` or
          `results`), placeholders (a component in capitals, or with < >);
  key     a configuration key, dfs.client.rdma.*, dfs.datanode.rdma.* or
          dfs.rdma.*, that hadoop-hdfs-rdma/src/main/resources/
          hdfs-rdma-default.xml does not define (a key written with a
          trailing .* must be the prefix of one);
  flag    "SCRIPT --flag" in a backticked span or a code block, for
          dev-support/*.sh, benchmarks/run.sh and the check command
          ("JAR check --flag", "tools.Check --flag", `check --flag`), where
          "--flag" does not occur literally in the script's sources (the
          script itself and, for scripts that exec the benchmark harness,
          its Python package; Check.java for the check command);
  class   a backticked Java class name, CamelCase and either Ucx*, Test*
          or ending in a suffix of CLASS_SUFFIXES (also qualified, or with
          #method), with no .java file of that name in the repository (nor
          a nested class of that name declared in one).
          Hadoop's own classes (and other names that are not files here)
          are allowed by dev-support/readme-check-allow.txt, one
          "class NAME" or "path PATH" a line; a name qualified with
          org.apache.hadoop is Hadoop's and skipped.

It also keeps the one table of configuration keys, between the markers
<!-- config-table --> and <!-- /config-table --> in
hadoop-hdfs-rdma/README.md, generated from hdfs-rdma-default.xml: the check
fails when the table is stale, --update rewrites it.

Python 3 standard library only. dev-support/test.sh runs the check and the
self-test.
"""

import bisect
import fnmatch
import glob
import os
import re
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET

DEFAULTS_XML = "hadoop-hdfs-rdma/src/main/resources/hdfs-rdma-default.xml"
CONFIG_TABLE_DOC = "hadoop-hdfs-rdma/README.md"
CHECK_JAVA = "hadoop-hdfs-rdma/src/main/java/org/hdfsrdma/hadoop/tools/Check.java"
ALLOW_FILE = "dev-support/readme-check-allow.txt"
DOC_NAMES = ("README.md", "DESIGN.md", "RESULTS-LOG.md")
SKIP_DIRS = {".git", "target", "results", "node_modules", "figures"}
BEGIN, END = "<!-- config-table -->", "<!-- /config-table -->"

KEY_RE = re.compile(
    r"dfs\.(?:client|datanode)\.rdma\.[a-z.-]+|dfs\.rdma\.[a-z.-]+")
CLASS_SUFFIXES = (
    "Exception", "Metrics", "Keys", "Check", "Plugin", "Agent",
    "Transformer", "Runtime", "Session", "Table", "Cache", "Policy",
    "Chooser", "Fetcher", "Forwarder", "Receiver", "Sender", "Writer",
    "Verifier", "Probe", "Cluster", "Stream", "Field", "Rewriter", "Peek",
    "Counters", "Totals", "State", "Gate", "Worker", "Context", "Endpoint")
CLASS_RE = re.compile(r"^(?:[a-z][a-z0-9_]*\.)*([A-Z][A-Za-z0-9_]*)"
                      r"(?:[.#][A-Za-z0-9_$.]*)?(?:\(\))?$")
PATH_CHARS = re.compile(r"^[A-Za-z0-9_.*\-\[\]/]+$")
FLAG_RE = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
SCRIPT_RE = re.compile(
    r"(?:\.\./)*((?:dev-support/[\w.-]+\.sh)|benchmarks/run\.sh)")
CHECK_RE = re.compile(
    r"(?:(?:\.jar|JAR)\s+check|tools\.Check|^check)(?=\s|$)")
LINK_RE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def documents(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        for f in sorted(files):
            if f in DOC_NAMES:
                out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def config_keys(root):
    tree = ET.parse(os.path.join(root, DEFAULTS_XML))
    props = []
    for p in tree.getroot().iter("property"):
        name = (p.findtext("name") or "").strip()
        value = (p.findtext("value") or "").strip()
        desc = " ".join((p.findtext("description") or "").split())
        props.append((name, value, desc))
    return props


def config_table(root):
    def cell(s):
        return s.replace("|", "\\|")
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for name, value, desc in config_keys(root):
        rows.append("| `%s` | %s | %s |" % (
            name, "`%s`" % cell(value) if value else "(empty)", cell(desc)))
    return ("%s\n<!-- generated from %s by dev-support/readme-check.py "
            "--update; edit the XML, not this table -->\n%s\n%s"
            % (BEGIN, os.path.relpath(DEFAULTS_XML,
                                      os.path.dirname(CONFIG_TABLE_DOC)),
               "\n".join(rows), END))


def table_span(text):
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < b:
        return None
    return b, e + len(END)


def allow_list(root):
    classes, paths = set(), set()
    p = os.path.join(root, ALLOW_FILE)
    if os.path.exists(p):
        for line in read(p).splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("class "):
                classes.add(line[6:].strip())
            elif line.startswith("path "):
                paths.add(line[5:].strip())
    return classes, paths


def java_classes(root):
    names = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in (".git", "target")]
        for f in files:
            if f.endswith(".java"):
                names.add(f[:-5])
                # Nested classes count too (RemoteRegion.Policy).
                names.update(re.findall(
                    r"\b(?:class|interface|enum)\s+([A-Z]\w*)",
                    read(os.path.join(d, f))))
    return names


def script_sources(root, script):
    """The text a script's flags must occur in."""
    p = os.path.join(root, script)
    if not os.path.exists(p):
        return None
    text = read(p)
    m = re.search(r"-m\s+(hdfsrdma_bench[\w.]*)", text)
    if m:
        pkg = os.path.join(root, "benchmarks", "hdfsrdma_bench")
        mod = m.group(1).split(".")
        files = (glob.glob(os.path.join(pkg, "*.py")) if len(mod) == 1
                 else [os.path.join(pkg, mod[1] + ".py")])
        text += "".join(read(f) for f in files if os.path.exists(f))
    return text


class Doc:
    def __init__(self, root, rel):
        self.root, self.rel = root, rel
        self.dir = os.path.dirname(os.path.join(root, rel))
        self.text = read(os.path.join(root, rel))
        self.starts = [0] + [i + 1 for i, c in enumerate(self.text)
                             if c == "\n"]

    def line(self, offset):
        return bisect.bisect_right(self.starts, offset)

    def code_spans(self):
        """(offset, text) of inline code and of code-block lines; a block
        line continued with a backslash is joined with the next."""
        fenced, lines, out = False, self.text.split("\n"), []
        in_block = [False] * len(lines)
        prev_blank = True
        for i, ln in enumerate(lines):
            if ln.lstrip().startswith("```"):
                fenced = not fenced
                in_block[i] = True
                continue
            if fenced or (ln.startswith("    ") and ln.strip() and (
                    prev_blank or (i and in_block[i - 1]))
                    and not ln.lstrip().startswith(("-", "|", "*"))
                    and not re.match(r"\s*\d+\.", ln)):
                in_block[i] = True
            prev_blank = not ln.strip()
        i = 0
        while i < len(lines):
            if in_block[i]:
                start, joined = self.starts[i], lines[i]
                while joined.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    joined = joined.rstrip()[:-1] + " " + lines[i].strip()
                out.append((start, joined, True))
            i += 1
        prose = "".join(
            (ln if not in_block[k] else " " * len(ln)) + "\n"
            for k, ln in enumerate(lines))
        for m in re.finditer(r"`([^`]+)`", prose):
            out.append((m.start(1), " ".join(m.group(1).split()), False))
        return out, prose


def check(root):
    problems = []
    keys = {k for k, _, _ in config_keys(root)}
    classes = java_classes(root)
    allowed_classes, allowed_paths = allow_list(root)
    sources = {}
    check_java = os.path.join(root, CHECK_JAVA)
    check_src = read(check_java) if os.path.exists(check_java) else ""

    def report(doc, off, what):
        problems.append("%s:%d: %s" % (doc.rel, doc.line(off), what))

    for rel in documents(root):
        doc = Doc(root, rel)
        spans, prose = doc.code_spans()

        if rel == CONFIG_TABLE_DOC:
            span = table_span(doc.text)
            if span is None:
                report(doc, 0, "no %s ... %s markers for the configuration"
                       " table" % (BEGIN, END))
            elif doc.text[span[0]:span[1]] != config_table(root):
                report(doc, span[0], "the configuration table is stale: run"
                       " dev-support/readme-check.py --update")

        for m in LINK_RE.finditer(prose):
            target = m.group(1).split("#", 1)[0]
            if not target or re.match(r"^[a-z]+:", target):
                continue
            if not os.path.exists(os.path.join(doc.dir, target)):
                report(doc, m.start(), "link to %s, which does not exist"
                       % m.group(1))

        for m in KEY_RE.finditer(doc.text):
            key = m.group(0).rstrip(".-")
            after = doc.text[m.end():m.end() + 1]
            if m.group(0).endswith(".") and after == "*":
                if not any(k.startswith(key + ".") for k in keys):
                    report(doc, m.start(), "no configuration key %s.*"
                           " in %s" % (key, DEFAULTS_XML))
            elif key not in keys:
                report(doc, m.start(), "configuration key %s is not in %s"
                       % (key, DEFAULTS_XML))

        for off, code, block in spans:
            # Script flags: from the script's name to the end of the span,
            # a shell comment, or the next command (; | &&).
            for sm in list(SCRIPT_RE.finditer(code)) + [
                    m for m in CHECK_RE.finditer(code)]:
                rest = re.split(r"\s#|;|\||&&|\)", code[sm.end():])[0]
                if sm.re is CHECK_RE:
                    name, src = "check (%s)" % CHECK_JAVA, check_src
                else:
                    name = sm.group(1)
                    if name not in sources:
                        sources[name] = script_sources(root, name)
                    src = sources[name]
                    if src is None:
                        report(doc, off, "%s does not exist" % name)
                        continue
                for fm in FLAG_RE.finditer(rest):
                    if fm.group(0) not in src:
                        report(doc, off, "%s has no flag %s"
                               % (name, fm.group(0)))
            if block:
                continue
            # Repository paths.
            if ("/" in code.strip("/") and PATH_CHARS.match(code)
                    and not code.startswith(("/", "~", "-", "."  * 3))
                    and code not in allowed_paths):
                parts = [p for p in code.split("/") if p and p != ".."]
                if not ({"target", "results"} & set(parts)
                        or any(re.match(r"^[A-Z][A-Z0-9_]+$", p)
                               for p in parts)):
                    candidates = [os.path.join(doc.dir, code),
                                  os.path.join(root, code)]
                    if not any(glob.glob(c, recursive=True)
                               for c in candidates):
                        report(doc, off, "path %s does not exist (relative"
                               " to the document or the repository)" % code)
            # Java classes.
            cm = CLASS_RE.match(code)
            if cm and not code.startswith("org.apache.hadoop"):
                name = cm.group(1)
                if (name.startswith(("Ucx", "Test"))
                        or name.endswith(CLASS_SUFFIXES)) \
                        and re.search(r"[a-z]", name) \
                        and name not in allowed_classes:
                    if "*" in code or not any(
                            fnmatch.fnmatchcase(c, name) for c in classes):
                        if "*" in code:
                            pat = code.split(".")[-1]
                            if any(fnmatch.fnmatchcase(c, pat)
                                   for c in classes):
                                continue
                        report(doc, off, "class %s has no .java file in the"
                               " repository" % name)
    return problems


def update(root, quiet=False):
    p = os.path.join(root, CONFIG_TABLE_DOC)
    text = read(p)
    span = table_span(text)
    if span is None:
        sys.exit("%s: no %s ... %s markers" % (CONFIG_TABLE_DOC, BEGIN, END))
    new = text[:span[0]] + config_table(root) + text[span[1]:]
    if new != text:
        with open(p, "w", encoding="utf-8") as f:
            f.write(new)
        if not quiet:
            print("readme-check: rewrote the configuration table in "
                  + CONFIG_TABLE_DOC)


def self_test():
    """Plants one mistake of each kind in a scratch tree; each must be
    reported, and the correct names next to them must not."""
    tmp = tempfile.mkdtemp(prefix="readme-check-")
    try:
        def write(rel, text):
            p = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
        write(DEFAULTS_XML, "<configuration><property><name>"
              "dfs.client.rdma.enabled</name><value>false</value>"
              "<description>On | off.</description></property>"
              "</configuration>\n")
        write(CHECK_JAVA, 'case "--probe": case "--client":\n')
        write("hadoop-hdfs-rdma/src/main/java/UcxReal.java", "")
        write("dev-support/put.sh", "case $1 in --hadoop) ;; esac\n")
        write("benchmarks/run.sh", "exec python3 -m hdfsrdma_bench\n")
        write("benchmarks/hdfsrdma_bench/cli.py", "add_argument('--paper')\n")
        write("docs/real.md", "")
        write(ALLOW_FILE, "class DataStreamer\n")
        write(CONFIG_TABLE_DOC, "x\n" + BEGIN + "\n" + END + "\n")
        update(tmp, quiet=True)
        good = ("# ok\n\nSee [real](docs/real.md), `docs/real.md`,"
                " `dfs.client.rdma.enabled`, `dfs.client.rdma.*`,"
                " `UcxReal`, `DataStreamer`,"
                " `org.apache.hadoop.hdfs.TestHFlush`, `target/x/y.jar`,"
                " `dev-support/put.sh --hadoop 3.4.2 FILE`,"
                " `check --probe`, `hadoop jar JAR check --client`.\n\n"
                "    benchmarks/run.sh --paper   # not --bogus-comment\n")
        bad = ("\nSee [gone](docs/gone.md) and `docs/gone.md`.\n"
               "Set `dfs.client.rdma.no-such-key=1` or dfs.rdma.nothing.\n"
               "Class `UcxMissing` and `TestMissing#testIt`.\n"
               "Run `dev-support/put.sh --no-such-flag FILE`,\n"
               "`hadoop jar JAR check --no-probe`, `dev-support/gone.sh`.\n\n"
               "    benchmarks/run.sh --tiny-bogus \\\n"
               "      --paper\n")
        write("README.md", good)
        found = check(tmp)
        if found:
            raise AssertionError("correct names reported: %s" % found)
        write("README.md", good + bad)
        found = "\n".join(check(tmp))
        expected = [
            "README.md:link to docs/gone.md",
            "README.md:path docs/gone.md",
            "README.md:configuration key dfs.client.rdma.no-such-key",
            "README.md:configuration key dfs.rdma.nothing",
            "README.md:class UcxMissing",
            "README.md:class TestMissing",
            "README.md:dev-support/put.sh has no flag --no-such-flag",
            "has no flag --no-probe",
            "dev-support/gone.sh does not exist",
            "README.md:benchmarks/run.sh has no flag --tiny-bogus",
        ]
        missed = [e for e in expected
                  if not re.search(re.escape(e).replace(":", r":\d+: ", 1)
                                   if e.startswith("README.md:") else
                                   re.escape(e), found)]
        if missed:
            raise AssertionError("not caught: %s\nreported:\n%s"
                                 % (missed, found))
        # A stale configuration table is caught, and --update mends it.
        write(DEFAULTS_XML, read(os.path.join(tmp, DEFAULTS_XML)).replace(
            "false", "true"))
        if "configuration table is stale" not in "\n".join(check(tmp)):
            raise AssertionError("stale configuration table not caught")
        update(tmp, quiet=True)
        if "stale" in "\n".join(check(tmp)):
            raise AssertionError("--update left the table stale")
        print("readme-check self-test: %d planted mistakes caught, a stale"
              " table caught and rewritten, no correct name reported"
              % len(expected))
        for line in found.splitlines():
            print("  " + line)
    finally:
        shutil.rmtree(tmp)


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if argv[1:] == ["--update"]:
        update(root)
    elif argv[1:]:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("readme-check: %d problem(s) in %d document(s)"
              % (len(problems), len(documents(root))))
        return 1
    print("readme-check: %d documents name nothing missing"
          % len(documents(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
