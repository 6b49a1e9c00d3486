#!/usr/bin/env python3
"""The shared library exports exactly the SIVE_API functions of the public
headers: nothing outside sive_*, nothing declared but missing."""
import re
import subprocess
import sys

lib, headers = sys.argv[1], sys.argv[2:]
out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                     capture_output=True, text=True).stdout
exported = set()
for line in out.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] != "A":
        exported.add(parts[2].split("@")[0])

declared = set()
for h in headers:
    text = open(h, encoding="utf-8").read()
    # SIVE_API <type> [*]name(  -- possibly spanning whitespace/newlines
    for m in re.finditer(r"SIVE_API\s+[^;(]*?\b(sive_\w+)\s*\(", text):
        declared.add(m.group(1))

leaks = sorted(s for s in exported if not s.startswith("sive_"))
missing = sorted(declared - exported)
extra = sorted(exported - declared)
ok = True
for name, items in (("exported outside sive_*", leaks),
                    ("declared SIVE_API but not exported", missing),
                    ("exported but not declared SIVE_API", extra)):
    if items:
        ok = False
        print(f"{name}: {' '.join(items)}")
print(f"{len(exported)} exported, {len(declared)} declared")
sys.exit(0 if ok else 1)
