#!/usr/bin/env python3
"""Counts the test methods of surefire or failsafe XML reports.

    test-counts.py REPORTS_DIR [--classes REGEX] [--exclude REGEX] [--names]

Prints "N run, F failed, K passed only on a rerun, S skipped" over the
TEST-*.xml files of REPORTS_DIR whose class name matches --classes and not
--exclude. It reads each <testcase> rather than the per-class .txt
summaries: when a method fails and its rerun passes, surefire (3.2 with the
JUnit platform) rewrites the class's .txt and the suite's totals for the
rerun alone ("Tests run: 1"), which hid every other method of the class.
With --names, one more line per method that failed or passed only on its
rerun: "failed Class#method" or "rerun Class#method".
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports")
    parser.add_argument("--classes", default="")
    parser.add_argument("--exclude", default="")
    parser.add_argument("--names", action="store_true")
    args = parser.parse_args()
    run, failed, flaky, skipped, names = counts(args.reports, args.classes,
                                                args.exclude)
    print("%d run, %d failed, %d passed only on a rerun, %d skipped"
          % (run, failed, flaky, skipped))
    if args.names:
        for line in names:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
