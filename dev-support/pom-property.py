#!/usr/bin/env python3
"""Prints a property of a pom's <properties>, with the ${...} references
to other properties of the same pom resolved, so that scripts read a list
the pom holds (Hadoop's test classes, say) instead of keeping a copy.

    pom-property.py POM NAME

Exits 1 when NAME, or a property it refers to, is not in the pom.
"""
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://maven.apache.org/POM/4.0.0}"


def properties(pom):
    props = ET.parse(pom).getroot().find(NS + "properties")
    if props is None:
        return {}
    return {child.tag[len(NS):]: (child.text or "").strip()
            for child in props if isinstance(child.tag, str)}


def resolve(props, name, seen=()):
    if name in seen:
        raise KeyError("a cycle through " + name)
    if name not in props:
        raise KeyError(name)
    return re.sub(r"\$\{([^}]+)\}",
                  lambda m: resolve(props, m.group(1), seen + (name,)),
                  props[name])


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: pom-property.py POM NAME")
    try:
        print(resolve(properties(sys.argv[1]), sys.argv[2]))
    except KeyError as e:
        sys.exit("pom-property.py: no property %s in %s" % (e, sys.argv[1]))


if __name__ == "__main__":
    main()
