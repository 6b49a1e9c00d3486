#!/usr/bin/env python3
"""Every SIVE_API function of the public headers is documented.

A declaration is documented when a /** ... */ block ends right before it,
or when it directly follows (no blank line) a documented declaration: a
grouped comment such as the one over sive_result_steps/_eval_stride.

With --xml DIR (Doxygen's XML output), also check that every function
appears in the generated reference.

Usage: check_doc_comments.py [--xml DIR] HEADER...
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET

DECL = re.compile(r"(?m)^SIVE_API\s+[^;(]*?\b(sive_\w+)\s*\([^;]*\)\s*;")


def documented(text):
    """(name -> documented?) for the SIVE_API declarations of one header."""
    out = {}
    prev_end, prev_ok = None, False
    for m in DECL.finditer(text):
        before = text[:m.start()].rstrip()
        if before.endswith("*/"):
            start = before.rfind("/*")
            ok = before[start:start + 3] == "/**"
        else:
            # Grouped: only whitespace with at most one newline since the
            # previous declaration.
            gap = text[prev_end:m.start()] if prev_end is not None else "x"
            ok = prev_ok and gap.strip() == "" and gap.count("\n") <= 1
        out[m.group(1)] = ok
        prev_end, prev_ok = m.end(), ok
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xml", help="Doxygen XML output directory")
    ap.add_argument("headers", nargs="+")
    args = ap.parse_args()

    ok = True
    names = []
    for h in args.headers:
        for name, doc in documented(open(h, encoding="utf-8").read()).items():
            names.append(name)
            if not doc:
                ok = False
                print(f"{h}: {name} has no /** */ doc comment")
    print(f"{len(names)} SIVE_API functions in {len(args.headers)} headers")

    if args.xml:
        index = ET.parse(f"{args.xml}/index.xml").getroot()
        in_ref = {m.findtext("name") for m in index.iter("member")
                  if m.get("kind") == "function"}
        for name in names:
            if name not in in_ref:
                ok = False
                print(f"{name} is missing from the Doxygen reference")
        print(f"{len(in_ref & set(names))} of them in the Doxygen reference")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
