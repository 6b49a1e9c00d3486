#!/usr/bin/env bash
# Install the Debian 12 packages libsive needs, when they are missing.
# Uses sudo when not root.  Optional extras: gnuplot (plots), python3-numpy
# (Python client), doxygen (API reference), g++ (C++ example), Open MPI
# (`mpirun -np R sive probe`, docs/scale.md; its test skips without it),
# zstd (the merge tests' second data set), locales (test_probe's de_DE
# locale, made with localedef),
# python3-mesonpy + python3-venv (`pip install --no-build-isolation .` into
# a venv, docs/python.md; its test skips without them).
# SIVE_WITH_TORCH=1 adds python3-torch (sive.torch and its tests; about
# 0.9 GB installed, so not by default: without it those tests skip).
set -euo pipefail
need=(meson ninja-build pkg-config gcc g++ libblis-dev libzstd-dev check zlib1g-dev
      gnuplot-nox python3-numpy python3-mesonpy python3-venv libopenmpi-dev openmpi-bin
      zstd locales)
[ "${SIVE_WITH_TORCH:-0}" = 1 ] && need+=(python3-torch)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
