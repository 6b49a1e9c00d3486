"""Shim: the examples run from the source tree import the `sive` package
in python/sive (the one `meson install` installs), under the name `sive`.

An installed package (PYTHONPATH or site-packages) is not needed for the
examples; this file loads the source tree's copy so that they always test
the package next to them.  The library is found as the package documents:
$SIVE_LIBRARY first (the examples' tests set it), then the configured or
system copy, then build/lib of the source tree.
"""
import importlib.util
import pathlib
import sys

_init = pathlib.Path(__file__).resolve().parents[2] / "python" / "sive" / "__init__.py"
_spec = importlib.util.spec_from_file_location("sive", _init,
                                               submodule_search_locations=[str(_init.parent)])
_module = importlib.util.module_from_spec(_spec)
sys.modules["sive"] = _module
_spec.loader.exec_module(_module)
