#!/bin/sh
# A test whose toolchain is missing: say why and report "skipped" (77).
echo "skipped: $*"
exit 77
