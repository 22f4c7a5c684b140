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

With --check, exits 1 when a method failed or passed only on a rerun,
unless it is one of the Class#method names in the property
hadoop.tests.rerunnable of the pom given with --rerunnable (Hadoop's own
methods that flake on the stock jars too; the pom gives the evidence).
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
    return run, failed, flaky, skipped, names


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
    args = parser.parse_args()
    run, failed, flaky, skipped, names = counts(args.reports, args.classes,
                                                args.exclude)
    print("%d run, %d failed, %d passed only on a rerun, %d skipped"
          % (run, failed, flaky, skipped))
    allowed = rerunnable(args.rerunnable) if args.rerunnable else set()
    if args.names:
        for line in names:
            print(line + (" (rerunnable: it flakes on the stock jars too)"
                          if line[6:] in allowed and
                          line.startswith("rerun ") else ""))
    if args.check and violations(names, allowed):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
