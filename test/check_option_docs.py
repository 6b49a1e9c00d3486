#!/usr/bin/env python3
"""The option lists written by hand against the library's option table.

The library's table (sive_option_at(), printed by test/dump_options.c) is
the one source of every option's name, type, bounds and default.  Where
the docs and bindings list options by hand, this test checks them:

  docs/guide.md     the option table (name, type, default, bounds) and
                    the experimental table (tier SIVE_TIER_EXPERIMENTAL,
                    ids >= 1000; graduated options keep their id)
  docs/python.md    the keyword arguments listed by name
  examples/rust/src/ffi.rs   the SIVE_OPT_* constants and their ids
  docs/*.md, README.md       every SIVE_OPT_* named exists

Usage: check_option_docs.py DUMP_OPTIONS_EXE SOURCE_ROOT
Prints each mismatch and exits 1 when there is any.
"""
import math
import os
import re
import subprocess
import sys

EXPERIMENTAL_FIRST = 1000   # docs/abi.md, "Experimental tier"
RETIRED = {"DATA_SIZE"}     # SIVE_OPT_DATA_SIZE, 10 in 0.1, never reused
NOT_OPTIONS = {"EXPERIMENTAL_FIRST"}  # sive/experimental.h: the tier's first id
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
SUPER = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")

errors = []


def fail(msg):
    errors.append(msg)


def library_table(exe):
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    table = {}
    for line in out.splitlines():
        oid, name, typ, lo, hi, lo_open, hi_open, dflt, tier = line.split()
        num = int if typ == "int" else float
        table[name] = {"id": int(oid), "type": typ, "lo": num(lo), "hi": num(hi),
                       "lo_open": lo_open == "1", "hi_open": hi_open == "1",
                       "default": num(dflt), "experimental": tier == "1"}
        if tier == "1" and int(oid) < EXPERIMENTAL_FIRST:
            fail("option %s is experimental with id %s: the tier's ids start at %d" %
                 (name, oid, EXPERIMENTAL_FIRST))
    return table


def number(text, typ):
    """A number as the docs write it: '10 000', '10¹²', '2⁴⁰', '0.05';
    '—' and 'none' mean no default (NaN)."""
    s = re.sub(r"\s", "", text)
    if s in ("—", "none", "-"):
        return math.nan
    m = re.fullmatch(r"(\d+)([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)", s)
    if m:
        v = int(m.group(1)) ** int(m.group(2).translate(SUPER))
        return v if typ == "int" else float(v)
    return int(s) if typ == "int" else float(s)


def bounds(text, typ):
    """Every interval of a bounds cell: (lo, hi, lo_open, hi_open)."""
    s = re.sub(r"\s", "", text)
    if s == "anyint64":
        return [(INT64_MIN, INT64_MAX, False, False)]
    if s == "finite,NaNclears":
        return [(-math.inf, math.inf, True, True)]
    if s == "{0,1}":
        return [(0, 1, False, False)]
    out = []
    for m in re.finditer(r"([\[(])([^,\])]+),([^\])]+)([\])])", s):
        out.append((number(m.group(2), typ), number(m.group(3), typ),
                    m.group(1) == "(", m.group(4) == ")"))
    if not out:
        raise ValueError("bounds '%s' not understood" % text)
    return out


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def guide_rows(path, header):
    """The rows of the table under the line `header` in path: name ->
    (type, default, bounds) as written."""
    lines = open(path, encoding="utf-8").read().splitlines()
    try:
        start = lines.index(header)
    except ValueError:
        return None
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = re.findall(r"`([a-z_0-9]+)`", cells[0])
        typ = cells[1]
        defaults = cells[2].split(",") if len(names) > 1 else [cells[2]]
        try:
            bnds = bounds(cells[3], typ)
            dvals = [number(d, typ) for d in defaults]
        except ValueError as e:
            fail("%s: row %s: %s" % (path, names, e))
            continue
        if len(dvals) != len(names) or len(bnds) not in (1, len(names)):
            fail("%s: row %s: %d names, %d defaults, %d bounds" %
                 (path, names, len(names), len(dvals), len(bnds)))
            continue
        for i, name in enumerate(names):
            if name in rows:
                fail("%s: option %s listed twice" % (path, name))
            rows[name] = (typ, dvals[i], bnds[i if len(bnds) > 1 else 0])
    return rows


def check_table(path, rows, want, what):
    for name, info in sorted(want.items(), key=lambda kv: kv[1]["id"]):
        if name not in rows:
            fail("%s: %s option %s (id %d) is missing from the table" %
                 (path, what, name, info["id"]))
            continue
        typ, dflt, (lo, hi, lo_open, hi_open) = rows.pop(name)
        if typ != info["type"]:
            fail("%s: %s is %s in the table, %s in the library" % (path, name, typ, info["type"]))
            continue
        if not same(dflt, info["default"]):
            fail("%s: %s default %r, the library's %r" % (path, name, dflt, info["default"]))
        got = (lo, hi, lo_open, hi_open)
        lib = (info["lo"], info["hi"], info["lo_open"], info["hi_open"])
        if got != lib:
            fail("%s: %s bounds %r, the library's %r (lo, hi, lo_open, hi_open)" %
                 (path, name, got, lib))
    for name in rows:
        fail("%s: option %s is not a %s option of the library" % (path, name, what))


def check_python(path, stable):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"Options are keyword arguments by the library's names \((.*?)\)", text, re.S)
    if not m:
        fail("%s: the list of keyword arguments is gone" % path)
        return
    names = set(re.findall(r"`([a-z_0-9]+)`", m.group(1)))
    for n in sorted(set(stable) - names):
        fail("%s: option %s missing from the keyword list" % (path, n))
    for n in sorted(names - set(stable)):
        fail("%s: keyword %s is not a stable option of the library" % (path, n))


def check_rust(path, table, stable):
    text = open(path, encoding="utf-8").read()
    consts = re.findall(r"pub const SIVE_OPT_([A-Z_0-9]+): sive_option = (\d+);", text)
    listed = set()
    for name, oid in consts:
        n = name.lower()
        listed.add(n)
        if n not in table:
            fail("%s: SIVE_OPT_%s is not an option of the library" % (path, name))
        elif table[n]["id"] != int(oid):
            fail("%s: SIVE_OPT_%s = %s, the library's id is %d" %
                 (path, name, oid, table[n]["id"]))
    for n in sorted(set(stable) - listed):
        fail("%s: SIVE_OPT_%s missing" % (path, n.upper()))


def check_names(paths, table):
    for path in paths:
        text = open(path, encoding="utf-8").read()
        for name in sorted(set(re.findall(r"\bSIVE_OPT_([A-Z][A-Z_0-9]*)", text))):
            if name.lower() not in table and name not in RETIRED | NOT_OPTIONS:
                fail("%s: SIVE_OPT_%s is not an option of the library" % (path, name))


def main():
    exe, root = sys.argv[1], sys.argv[2]
    table = library_table(exe)
    stable = {n: i for n, i in table.items() if not i["experimental"]}
    experimental = {n: i for n, i in table.items() if i["experimental"]}
    guide = os.path.join(root, "docs", "guide.md")
    rows = guide_rows(guide, "| option | type | default | bounds | meaning |")
    if rows is None:
        fail("%s: the option table is gone" % guide)
    else:
        check_table(guide, rows, stable, "stable")
    xrows = guide_rows(guide, "| experimental option | type | default | bounds | meaning |")
    if xrows is None and experimental:
        fail("%s: no experimental table for %s" % (guide, sorted(experimental)))
    elif xrows is not None:
        check_table(guide, xrows, experimental, "experimental")
    check_python(os.path.join(root, "docs", "python.md"), stable)
    check_rust(os.path.join(root, "examples", "rust", "src", "ffi.rs"), table, stable)
    docs = os.path.join(root, "docs")
    check_names([os.path.join(docs, f) for f in sorted(os.listdir(docs)) if f.endswith(".md")]
                + [os.path.join(root, "README.md")], table)
    for e in errors:
        print(e)
    print("%d options checked, %d mismatches" % (len(table), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
