#!/usr/bin/env python3
"""ABI discipline of libsive (docs/abi.md): the linker version script, the
public headers and the built library agree, symbol by symbol.

Check mode (the `abi-symbols` test):

    check_abi.py --lib build/lib/libsive.so [--map lib/libsive.map]
                 [--soname libsive.so.2] [--forbid-needed libblis ...]
                 [HEADER_OR_DIR ...]

fails when
  - the library exports a symbol (nm -D --defined-only) the map does not
    list, or the map lists a symbol the library does not export;
  - a SIVE_API function (or variable) of the public headers is not in the
    map, or the map lists a name no header declares SIVE_API;
  - an exported symbol is not tagged with the version node the map puts it
    in, or lies outside the sive_ prefix;
  - the map uses a pattern (sive_*) instead of names;
  - with --soname, the library's DT_SONAME differs;
  - a DT_NEEDED entry of the library starts with a --forbid-needed prefix
    (libsive must not need BLIS, zstd or zlib).

Map mode (after changing a public header):

    check_abi.py --write-map [--node LIBSIVE_x.y] [--fresh]
                 [--map lib/libsive.map] [HEADER_OR_DIR ...]

rewrites the map's (without --map: every map of LIBRARIES) global lists from the headers' SIVE_API declarations.
Names already in a node stay there; new names go into the newest node (or
into --node, created after the others if the map lacks it); names no header
declares any more are dropped, with a warning (removing a symbol is an ABI
break: bump the soversion).  --fresh writes a single node holding every
name (for an ABI break).  The node name defaults to the map's last
LIBSIVE_* node, else LIBSIVE_MAJOR.MINOR of meson.build's project version.

The experimental tier: names declared SIVE_API in experimental.h belong
to the node LIBSIVE_EXPERIMENTAL, kept last, and only they do.  They are
not stable: --write-map drops or adds them without calling it a break, and
moves a name that graduated (its declaration moved to a stable header) into
the newest stable node.  A stable name may not move back (an ABI break).

Two libraries, two maps (LIBRARIES below): lib/libsive.map holds the
SIVE_API names of sive/sive.h and sive/experimental.h, lib/libsive-ref.map
those of the reference stack's headers.  HEADER_OR_DIR defaults to the
headers of the map's library (a directory stands for every *.h in it);
--map defaults to lib/libsive.map, both relative to the source tree.
"""
import argparse
import pathlib
import re
import subprocess
import sys

SRC = pathlib.Path(__file__).resolve().parent.parent
PREFIX = "sive_"
NODE_PREFIX = "LIBSIVE_"
EXPERIMENTAL_NODE = "LIBSIVE_EXPERIMENTAL"
EXPERIMENTAL_HEADER = "experimental.h"
# map (under lib/) -> (the public headers whose SIVE_API names it lists,
# the node a new map starts with, None: from meson.build's version)
LIBRARIES = {
    "libsive.map": (["sive.h", EXPERIMENTAL_HEADER], None),
    "libsive-ref.map": (["mlp.h", "data.h", "dln.h"], "LIBSIVE_REF_0.3"),
}
MAP_HEADER = """\
/* Exported symbols of {lib}: every name, under the version node of the
 * release that added it (docs/abi.md).  Generated from the SIVE_API
 * declarations of the public headers (include/sive/) by
 *     python3 test/check_abi.py --write-map     (or: ninja -C build abi-map)
 * and checked against the headers and the built library by the abi-symbols
 * test.  Names never move between nodes; everything else is local. */
"""

# Identifiers followed by a parenthesised group that is not a declarator.
ATTRIBUTES = {"__attribute__", "__declspec", "_Alignas", "alignas",
              "__asm__", "asm", "__typeof__", "typeof", "_Static_assert"}


# ---------------------------------------------------------------- headers

def strip_comments(text):
    """C text without comments (string and character literals kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] not in (c, "\n"):
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_directives(text):
    """Text without preprocessor lines (continuations included)."""
    out, cont = [], False
    for line in text.split("\n"):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


TOKEN = re.compile(r"[A-Za-z_]\w*|\S")


def declared_name(decl):
    """Name declared by the text after SIVE_API, up to its ';'."""
    toks = TOKEN.findall(decl)
    i, last_ident = 0, None
    while i < len(toks):
        t = toks[i]
        if t in ATTRIBUTES and i + 1 < len(toks) and toks[i + 1] == "(":
            depth, i = 0, i + 1          # skip the balanced group
            while i < len(toks):
                depth += {"(": 1, ")": -1}.get(toks[i], 0)
                i += 1
                if depth == 0:
                    break
            continue
        if t == "(":
            nxt = toks[i + 1] if i + 1 < len(toks) else ")"
            if nxt not in ("*", "^"):    # a parameter list, not (*name)
                return last_ident
        elif t in ("[", "=", ":"):       # array or initialised variable
            return last_ident
        elif re.fullmatch(r"[A-Za-z_]\w*", t):
            last_ident = t
        i += 1
    return last_ident


def header_files(paths):
    files = []
    for p in paths:
        p = pathlib.Path(p)
        for f in sorted(p.glob("*.h")) if p.is_dir() else [p]:
            if f.resolve() not in [g.resolve() for g in files]:
                files.append(f)
    return files


def declared_symbols(paths):
    """{name: header} of the SIVE_API declarations; errors as a list."""
    names, errors = {}, []
    for path in header_files(paths):
        text = strip_directives(strip_comments(path.read_text("utf-8")))
        for m in re.finditer(r"\bSIVE_API\b", text):
            end = len(text)
            for stop in (";", "{"):
                j = text.find(stop, m.end())
                if 0 <= j < end:
                    end = j
            name = declared_name(text[m.end():end])
            line = text.count("\n", 0, m.start()) + 1
            if not name:
                errors.append(f"{path.name}:{line}: cannot parse the SIVE_API "
                              f"declaration {text[m.start():end].split()!r}")
            elif name in names:
                errors.append(f"{path.name}:{line}: {name} declared SIVE_API "
                              f"twice (also in {names[name].name})")
            else:
                names[name] = path
    return names, errors


# -------------------------------------------------------------------- map

MAP_NODE = re.compile(r"([\w.]+)\s*\{(.*?)\}\s*([\w.]*)\s*;", re.S)


def read_map(path):
    """[(node, [global names], [local names], parent)] of a version script."""
    text = pathlib.Path(path).read_text("utf-8")
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"#[^\n]*", " ", text)
    nodes = []
    for m in MAP_NODE.finditer(text):
        scope, glob, loc = "global", [], []
        for entry in m.group(2).split(";"):
            entry = entry.strip()
            while True:
                s = re.match(r"(global|local)\s*:\s*", entry)
                if not s:
                    break
                scope, entry = s.group(1), entry[s.end():].strip()
            if entry:
                (glob if scope == "global" else loc).append(entry)
        nodes.append((m.group(1), glob, loc, m.group(3) or None))
    rest = MAP_NODE.sub(" ", text).strip()
    if rest:
        raise SystemExit(f"{path}: cannot parse the version script near "
                         f"{rest[:60]!r}")
    return nodes


def format_map(nodes, lib):
    """Version script text: nodes = [(node, [names])], oldest first; the
    oldest holds `local: *;`, each later one inherits from the previous."""
    out = [MAP_HEADER.format(lib=lib)]
    for i, (node, names) in enumerate(nodes):
        out.append(f"{node} {{\n  global:\n")
        out += [f"    {n};\n" for n in sorted(names)]
        if i == 0:
            out.append("  local:\n    *;\n")
        out.append("};\n" if i == 0 else f"}} {nodes[i - 1][0]};\n")
        if i + 1 < len(nodes):
            out.append("\n")
    return "".join(out)


def default_node():
    text = (SRC / "meson.build").read_text("utf-8")
    m = re.search(r"project\s*\([^)]*?version\s*:\s*'(\d+)\.(\d+)", text, re.S)
    if not m:
        raise SystemExit("no project version in meson.build: pass --node")
    return f"{NODE_PREFIX}{m.group(1)}.{m.group(2)}"


def split_tiers(declared):
    """({stable name: header}, {experimental name: header})."""
    exp = {n: h for n, h in declared.items() if h.name == EXPERIMENTAL_HEADER}
    return {n: h for n, h in declared.items() if n not in exp}, exp


def write_map(args):
    declared, errors = declared_symbols(args.headers)
    if errors:
        raise SystemExit("\n".join(errors))
    stable, experimental = split_tiers(declared)
    try:
        old = read_map(args.map)
    except FileNotFoundError:
        old = []
    # Nodes worth keeping: LIBSIVE_* nodes listing names, not patterns.
    kept = [(n, [s for s in g if not re.search(r"[*?\[]", s)])
            for n, g, _, _ in old if n.startswith(NODE_PREFIX)]
    old_exp = {s for n, g in kept if n == EXPERIMENTAL_NODE for s in g}
    kept = [(n, g) for n, g in kept if n != EXPERIMENTAL_NODE]
    if args.fresh:
        kept = []
    demoted = sorted({s for _, g in kept for s in g} & set(experimental))
    if demoted:
        raise SystemExit("stable names declared in %s (an ABI break): %s"
                         % (EXPERIMENTAL_HEADER, ", ".join(demoted)))
    first = LIBRARIES.get(pathlib.Path(args.map).name, ([], None))[1]
    node = args.node or (kept[-1][0] if kept else first or default_node())
    if node == EXPERIMENTAL_NODE:
        raise SystemExit("--node: %s is filled from %s only"
                         % (EXPERIMENTAL_NODE, EXPERIMENTAL_HEADER))
    if node not in [n for n, _ in kept]:
        kept.append((node, []))
    placed = {s for _, g in kept for s in g}
    dropped = sorted(placed - set(stable))
    new = sorted(set(stable) - placed)
    nodes = [(n, [s for s in g if s in stable] + (new if n == node else []))
             for n, g in kept]
    nodes = [(n, g) for n, g in nodes if g or n == node]
    if experimental:
        nodes.append((EXPERIMENTAL_NODE, sorted(experimental)))
    text = format_map(nodes, pathlib.Path(args.map).stem)
    old_text = pathlib.Path(args.map).read_text("utf-8") \
        if pathlib.Path(args.map).exists() else ""
    if text != old_text:
        pathlib.Path(args.map).write_text(text, "utf-8")
    for s in new:
        print(f"+ {s} -> {node}" + (" (graduated from the experimental tier)"
                                    if s in old_exp else ""))
    for s in sorted(set(experimental) - old_exp):
        print(f"+ {s} -> {EXPERIMENTAL_NODE}")
    for s in sorted(old_exp - set(experimental) - set(stable)):
        print(f"- {s} (experimental: removed, not a break)")
    for s in dropped:
        print(f"- {s} (no longer declared: an ABI break, bump sive_soversion)")
    print(f"{args.map}: {len(declared)} symbols in "
          f"{', '.join(n for n, _ in nodes)}"
          f"{'' if text != old_text else ' (unchanged)'}")
    return 0


# ------------------------------------------------------------------ check

def exported_symbols(lib):
    """{name: version or None} of the library's defined dynamic symbols,
    without the version-node symbols themselves (type A)."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[-2] == "A":
            continue
        name, _, version = parts[-1].partition("@")
        syms[name] = version.lstrip("@") or None
    return syms


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True,
                         capture_output=True, text=True).stdout
    m = re.search(r"\(SONAME\).*\[(.*)\]", out)
    return m.group(1) if m else None


def report(title, items):
    if items:
        print(f"{title}:")
        for line in items:
            print(f"  {line}")
    return bool(items)


def check(args):
    declared, errors = declared_symbols(args.headers)
    nodes = read_map(args.map)
    mapped, failed = {}, report("headers", errors)
    patterns, twice = [], []
    for node, glob, _, _ in nodes:
        for s in glob:
            if re.search(r"[*?\[]", s):
                patterns.append(f"{node}: {s}")
            elif s in mapped:
                twice.append(f"{s} in {mapped[s]} and {node}")
            else:
                mapped[s] = node
    exported = exported_symbols(args.lib)

    failed |= report("the map uses patterns; list every name instead "
                     "(check_abi.py --write-map)", patterns)
    failed |= report("listed in more than one node of the map", twice)
    failed |= report(f"exported outside the {PREFIX} prefix",
                     sorted(s for s in exported if not s.startswith(PREFIX)))
    failed |= report(f"exported by {pathlib.Path(args.lib).name} but not in "
                     f"the map", sorted(set(exported) - set(mapped)))
    failed |= report("in the map but not exported by the library",
                     sorted(set(mapped) - set(exported)))
    failed |= report("declared SIVE_API but not in the map",
                     sorted(f"{s}  ({declared[s].name})"
                            for s in set(declared) - set(mapped)))
    failed |= report("in the map but not declared SIVE_API in any header",
                     sorted(set(mapped) - set(declared)))
    failed |= report("exported under another version node than the map's",
                     sorted(f"{s}@{exported[s] or '(unversioned)'}, map: "
                            f"{mapped[s]}" for s in set(exported) & set(mapped)
                            if exported[s] != mapped[s]))
    stable, experimental = split_tiers(declared)
    failed |= report(f"declared in {EXPERIMENTAL_HEADER} but not in the "
                     f"{EXPERIMENTAL_NODE} node",
                     sorted(f"{s}: {mapped[s]}" for s in experimental
                            if s in mapped and mapped[s] != EXPERIMENTAL_NODE))
    failed |= report(f"in the {EXPERIMENTAL_NODE} node but declared in a "
                     f"stable header", sorted(s for s in stable
                                              if mapped.get(s) == EXPERIMENTAL_NODE))
    if nodes and any(n == EXPERIMENTAL_NODE for n, _, _, _ in nodes[:-1]):
        failed |= report("node order", [f"{EXPERIMENTAL_NODE} must be the last node"])
    if args.soname:
        got = soname(args.lib)
        failed |= report("SONAME", [f"expected {args.soname}, library has "
                                    f"{got}"] if got != args.soname else [])
    failed |= report("needed libraries this library must not need",
                     sorted(n for n in needed(args.lib)
                            if any(n.startswith(p) for p in args.forbid_needed)))
    print(f"{len(exported)} exported, {len(mapped)} in the map "
          f"({', '.join(n for n, _, _, _ in nodes)}), {len(declared)} declared "
          f"SIVE_API in {len(header_files(args.headers))} headers")
    if failed:
        print("After a header change, regenerate the map with "
              "`python3 test/check_abi.py --write-map` and rebuild "
              "(docs/abi.md).")
    return 1 if failed else 0


def default_headers(map_path):
    """The headers of the library whose map is map_path."""
    headers, _ = LIBRARIES.get(pathlib.Path(map_path).name, ([], None))
    if not headers:
        raise SystemExit(f"{map_path}: not a map of LIBRARIES: name the "
                         f"headers")
    return [str(SRC / "include" / "sive" / h) for h in headers]


def needed(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True,
                         capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\).*\[(.*)\]", out)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("headers", nargs="*", metavar="HEADER_OR_DIR")
    ap.add_argument("--map")
    ap.add_argument("--lib", help="the built shared library (check mode)")
    ap.add_argument("--soname", help="expected DT_SONAME (check mode)")
    ap.add_argument("--forbid-needed", action="append", default=[],
                    metavar="PREFIX",
                    help="fail if a DT_NEEDED entry starts with PREFIX")
    ap.add_argument("--write-map", action="store_true",
                    help="regenerate the map from the headers")
    ap.add_argument("--node", help="version node for new names (--write-map)")
    ap.add_argument("--fresh", action="store_true",
                    help="one node with every name (--write-map)")
    args = ap.parse_args()
    if args.write_map and not args.map:
        if args.headers or args.node:
            ap.error("name the --map the headers or --node are for")
        rc = 0
        for name in LIBRARIES:
            one = argparse.Namespace(**vars(args))
            one.map = str(SRC / "lib" / name)
            one.headers = default_headers(one.map)
            rc |= write_map(one)
        return rc
    args.map = args.map or str(SRC / "lib" / "libsive.map")
    args.headers = args.headers or default_headers(args.map)
    if args.write_map:
        return write_map(args)
    if not args.lib:
        ap.error("--lib is required unless --write-map is given")
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
