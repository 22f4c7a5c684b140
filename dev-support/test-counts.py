#!/usr/bin/env python3
"""Counts the test methods of surefire or failsafe XML reports.

    test-counts.py REPORTS_DIR [--classes REGEX] [--exclude REGEX] [--names]
                   [--check [--rerunnable POM]]

Prints "N run, F failed, K passed only on a rerun, S skipped" over the
TEST-*.xml files of REPORTS_DIR whose class name matches --classes and not
--exclude. It reads each <testcase> rather than the per-class .txt
summaries: when a method fails and its rerun passes, surefire (3.2 with the
JUnit platform) rewrites the class's .txt and the suite's totals for the
rerun alone ("Tests run: 1"), which hid every other method of the class.
With --names, one more line per method that failed or passed only on its
rerun: "failed Class#method" or "rerun Class#method".

With --traces N, each method --check refuses is followed, on standard
error, by the first N lines of its failure's message and stack trace (of
its first run's, where the rerun passed), without a thread dump the
message may hold: CI prints little else of a run.

With --check, exits 1 when a method failed or passed only on a rerun,
unless it is one of the Class#method names in the property
hadoop.tests.rerunnable of the pom given with --rerunnable (Hadoop's own
methods that flake on the stock jars too; the pom gives the evidence), or
every failed run of it failed binding a daemon that MiniDFSCluster
restarted on its former ports ("Address already in use": between the
stop and the restart, any process of the machine may take such a port).
hdfs-rdma's own tests run without reruns, so any failure of theirs fails.
"""

import argparse
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET


def counts(reports, classes, exclude):
    run = failed = flaky = skipped = 0
    names = []
    traces = {}
    restarts = set()
    for path in sorted(glob.glob(os.path.join(reports, "TEST-*.xml"))):
        name = os.path.basename(path)[len("TEST-"):-len(".xml")]
        if not re.search(classes, name) or (exclude and
                                            re.search(exclude, name)):
            continue
        for case in ET.parse(path).getroot().iter("testcase"):
            tags = {child.tag for child in case}
            if "skipped" in tags:
                skipped += 1
                continue
            run += 1
            method = "%s#%s" % (name.rsplit(".", 1)[-1], case.get("name"))
            if tags & {"failure", "error"}:
                failed += 1
                names.append("failed " + method)
            elif tags & {"flakyFailure", "flakyError"}:
                flaky += 1
                names.append("rerun " + method)
                if port_taken_on_restart(case):
                    restarts.add(method)
            else:
                continue
            traces[names[-1]] = trace(case)
    return run, failed, flaky, skipped, names, traces, restarts


# The frames of the test runners, reflection and threads below a test
# method: the same in every trace.
RUNNERS = ("org.junit.", "jdk.internal.reflect.", "java.lang.reflect.",
           "org.apache.maven.surefire.", "java.util.concurrent.FutureTask",
           "java.lang.Thread.run")


# Lines of a failure's message shown after its first: a test's own report
# (ProcessCluster's DataNodes, their exit codes and last log lines) up to
# a blank line or a thread dump.
MESSAGE_LINES = 16


def message_lines(message):
    """A failure message's first line and the report lines after it."""
    lines = message.splitlines() or [""]
    kept = lines[:1]
    for line in lines[1:MESSAGE_LINES + 1]:
        if not line.strip() or line.startswith('"') \
                or "Thread diagnostics" in line:
            break
        kept.append(line)
    return kept


def trace(case):
    """The message and stack trace of a test case's first failed run."""
    for child in case:
        if child.tag in ("failure", "error", "flakyFailure", "flakyError"):
            text = (child.text or "").strip()
            if not text:  # surefire's flaky elements keep it in a child
                text = (child.findtext("stackTrace") or "").strip()
            # The exception's own lines: a thread dump in its message
            # (GenericTestUtils.waitFor's) indents its frames with spaces.
            lines = text.splitlines()
            frames = [line for line in lines[1:]
                      if line.startswith(("\tat ", "Caused by: ", "\t..."))
                      and not any(runner in line for runner in RUNNERS)]
            message = message_lines(child.get("message") or "")
            head = "%s: %s" % (child.get("type"), message[0])
            return "\n".join([head] + message[1:] + frames)
    return ""


# A daemon restarted on its former ports (MiniDFSCluster's restartDataNode
# and restartNameNode keep them) whose port was taken meanwhile.
RESTARTS = ("MiniDFSCluster.restartDataNode", "MiniDFSCluster.restartNameNode")


def port_taken_on_restart(case):
    """Whether every failed run of a test case failed that way."""
    runs = [child for child in case
            if child.tag in ("flakyFailure", "flakyError")]
    for run in runs:
        text = (run.text or "") + (run.findtext("stackTrace") or "")
        if (run.get("type") != "java.net.BindException"
                or "Address already in use" not in text
                or not any(frame in text for frame in RESTARTS)):
            return False
    return bool(runs)


POM = "{http://maven.apache.org/POM/4.0.0}"


def rerunnable(pom):
    """The Class#method names of the pom's hadoop.tests.rerunnable."""
    text = ET.parse(pom).getroot().findtext(
        POM + "properties/" + POM + "hadoop.tests.rerunnable") or ""
    return {name.strip() for name in text.split(",") if name.strip()}


def violations(names, allowed):
    """The lines of names that --check refuses."""
    return [line for line in names
            if not (line.startswith("rerun ") and line[6:] in allowed)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports")
    parser.add_argument("--classes", default="")
    parser.add_argument("--exclude", default="")
    parser.add_argument("--names", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--rerunnable", metavar="POM")
    parser.add_argument("--traces", type=int, default=0, metavar="N")
    args = parser.parse_args()
    run, failed, flaky, skipped, names, traces, restarts = counts(
        args.reports, args.classes, args.exclude)
    print("%d run, %d failed, %d passed only on a rerun, %d skipped"
          % (run, failed, flaky, skipped))
    allowed = rerunnable(args.rerunnable) if args.rerunnable else set()
    if args.names:
        for line in names:
            why = ""
            if line.startswith("rerun ") and line[6:] in allowed:
                why = " (rerunnable: a race of Hadoop's test, the pom says why)"
            elif line.startswith("rerun ") and line[6:] in restarts:
                why = " (rerunnable: a port taken before a daemon's restart)"
            print(line + why)
    allowed = allowed | restarts
    refused = violations(names, allowed)
    if args.traces:
        for line in refused:
            print("%s:" % line, file=sys.stderr)
            for text in traces[line].splitlines()[:args.traces]:
                print("    " + text, file=sys.stderr)
    if args.check and refused:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
