#!/usr/bin/env python3
"""`pip install --no-build-isolation` of the repository root and of
./python into a fresh virtual environment, offline (--no-index), then the
installed package used from outside the source tree with no SIVE_LIBRARY
and no PYTHONPATH: it must load its own bundled copy of libsive and run a
probe.  docs/python.md §1.

Exits 77 (skipped) with the reason when the build backend (Debian:
python3-mesonpy) or the venv module (python3-venv) is missing.

Usage: test_pip_install.py SOURCE_ROOT
"""
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(sys.argv[1]).resolve()
CHECK = r"""
import os, pathlib, sys
import numpy as np
import sive
lib = pathlib.Path(sive.library_path).resolve()
pkg = pathlib.Path(sive.__file__).resolve().parent
assert lib.parent == pkg, f"library {lib} is not the package's own copy in {pkg}"
ref = pathlib.Path(sive.ref_library_path).resolve()
assert ref.parent == pkg, f"library {ref} is not the package's own copy in {pkg}"
assert sive.Mlp(4, 3, 2, 2).dim == 3 * 5 + 2 * 4 + 2 * 3, "the bundled libsive-ref"
assert pathlib.Path(sys.prefix).resolve() in pkg.parents, (pkg, sys.prefix)
model = sive.Model(2, lambda th, b: (th.copy(), 0.5 * float(th @ th)),
                   group_loss=lambda th, b: np.full(b.n_groups, 0.5 * float(th @ th)))
with sive.Probe(steps=400, chains=2, h=0.1, t=10.0) as p, p.run(model, np.zeros(2)) as r:
    assert r.chains_ok == 2 and np.isfinite(r.lambda_hat), r
import sive.torch  # importable without torch: torch loads on first use
print("ok", sive.version(), lib)
"""


def skip(why):
    print("skipped:", why)
    sys.exit(77)


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SIVE_LIBRARY", "SIVE_REF_LIBRARY",
                        "PIP_REQUIRE_VIRTUALENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), **kw)
    if p.returncode != 0:
        sys.exit(f"FAILED ({p.returncode}): {' '.join(map(str, cmd))}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def main():
    probe = subprocess.run([sys.executable, "-c", "import mesonpy, venv, ensurepip"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        skip(f"{sys.executable} cannot build the package: {probe.stderr.strip().splitlines()[-1]} "
             "(Debian: python3-mesonpy, python3-venv)")
    with tempfile.TemporaryDirectory(prefix="sive-pip-") as tmp:
        # One meson build directory for both installs: the second only
        # reconfigures (meson-python's builddir setting).
        build = pathlib.Path(tmp) / "build"
        for k, source in enumerate((ROOT, ROOT / "python")):
            venv = pathlib.Path(tmp) / f"venv{k}"
            run([sys.executable, "-m", "venv", "--system-site-packages", venv])
            py = venv / "bin" / "python"
            run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                 "--no-cache-dir", f"--config-settings=builddir={build}", source])
            out = run([py, "-c", CHECK], cwd=tmp)  # outside the source tree
            print(f"pip install {source}: {out.strip()}")


main()
