#!/bin/sh
# Run a trainer (the arguments are its command line) and assert on its
# output: at least two probe lines, each with a finite lambda and status OK.
out=$("$@")
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: trainer exited with $rc"; exit 1; }
printf '%s\n' "$out" | awk '
/^step / {
    n++
    # fields: step S loss L lambda X ± M ESS E status OK
    if ($6 !~ /^-?[0-9]+(\.[0-9]+)?$/) { print "FAIL: lambda not finite: " $0; bad = 1 }
    if ($11 != "status" || $12 != "OK") { print "FAIL: status not OK: " $0; bad = 1 }
}
END {
    if (n < 2) { print "FAIL: expected at least 2 probe lines, got " n; bad = 1 }
    exit bad
}'
