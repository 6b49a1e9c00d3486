"""PEP 517 backend of python/pyproject.toml: meson-python run at the
repository root (meson-python builds the project in its working
directory, and the package's meson project is the root's)."""
import contextlib
import os
import pathlib

import mesonpy

_ROOT = pathlib.Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def _at_root():
    here = os.getcwd()
    os.chdir(_ROOT)
    try:
        yield
    finally:
        os.chdir(here)


def _hook(name):
    def hook(*args, **kwargs):
        with _at_root():
            return getattr(mesonpy, name)(*args, **kwargs)
    hook.__name__ = name
    return hook


# pip passes absolute output directories, so only the working directory
# needs to move.
build_wheel = _hook("build_wheel")
build_sdist = _hook("build_sdist")
get_requires_for_build_wheel = _hook("get_requires_for_build_wheel")
get_requires_for_build_sdist = _hook("get_requires_for_build_sdist")
