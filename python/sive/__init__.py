"""libsive 0.3 from Python: the `sive` package (ctypes + numpy; docs/python.md).

Covers the whole public API: models, probes and results
(include/sive/sive.h), data sets (sive/data.h), the reference MLP, its probe
model and checkpoints (sive/mlp.h).

    import numpy as np, sive

    def grad(theta, batch):          # -> gradient, or (gradient, loss)
        return 2 * theta, float(theta @ theta)

    def group_loss(theta, batch):    # -> batch.n_groups mean losses
        return np.full(batch.n_groups, theta @ theta)

    model = sive.Model(2, grad, group_loss=group_loss)
    with sive.Probe(steps=2000, h=0.1) as p:
        with p.run(model, np.array([0.5, 0.5])) as r:
            print(r.lambda_hat, "MCSE", r.mcse, r.stats())

Conventions
 - Failures raise SiveError, carrying the status, sive_strerror() and the
   library's detailed message (the probe's, the run's, or the thread's last
   one).
 - Everything the library describes is read from it, not repeated here: the
   options (names, types, bounds, defaults, docs: options(), Option), the
   names of statistics, traces, chain states and health flags (Stat, Trace,
   ChainStatus, Flag, and the keys of Result.stats()).
 - Handles (Probe, Result, Model, Dataset, Mlp, Workspace) are context
   managers; close() frees them early, otherwise the garbage collector does.
 - Arrays passed to callbacks (theta, batch.index) are read-only arrays
   the package owns, copied out of library memory for the call: one a
   callback keeps stays valid after the call and after the run, holding
   that call's values (a view of library memory would point at freed
   memory then).
 - An exception raised in a callback aborts the run: the trampoline hands
   its text to the library (sive_set_errmsg), returns non-zero, the library
   stops every chain with SIVE_E_CALLBACK, and run() re-raises that same
   exception with the run's message as a note.
 - ctypes releases the GIL during library calls, so a run does not block
   other Python threads except while a callback executes.

The library is looked up (library_path says which one was loaded):
 1. $SIVE_LIBRARY, a path: an explicit override always wins;
 2. the library this package was configured with (the generated
    _config.py): installed by pip (pyproject.toml), the package's own
    sive/libsive.so.2; installed by `meson install`, the install's libdir, found
    relative to the package first so that a --destdir or moved prefix
    works, then at its absolute path; in a build tree, the build's
    lib/libsive.so;
 3. ctypes.util.find_library("sive") (the system's ldconfig cache);
 4. build/lib or builddir/lib of the source tree holding this file.
The reference stack (the MLP, data sets, checkpoints) is the second
library, libsive-ref (ref_library_path): $SIVE_REF_LIBRARY when set, else
the one beside libsive (same directory), else the system's.  It is loaded
after libsive and uses that copy, so its errors reach the same last-error
message.

The PyTorch adapter is the submodule sive.torch (torch is imported only
when it is used).
"""

import ctypes
import ctypes.util
import enum
import json
import math
import operator
import os
import pathlib
import sys
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_double,
                    c_float, c_int, c_int32, c_int64, c_size_t, c_uint8,
                    c_uint32, c_uint64, c_void_p, sizeof)
from typing import NamedTuple, Optional

import numpy as np

# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------

# The version these declarations were written for.  Before 1.0 every minor
# release may break the ABI, so major and minor must both match.
ABI_VERSION = (0, 3)


def _configured():
    """Candidates from the generated _config.py (absent in a source tree)."""
    try:
        from . import _config
    except ImportError:
        return []
    out = []
    here = pathlib.Path(__file__).resolve().parent
    purelib = getattr(_config, "PURELIB", "")
    libdir = getattr(_config, "LIBDIR", "")
    name = getattr(_config, "LIBRARY_NAME", "libsive.so")
    if purelib and libdir:
        # The package sits in <purelib>/sive: the libdir relative to it
        # survives a --destdir install and a moved prefix.
        out.append(here.parent / os.path.relpath(libdir, purelib) / name)
    library = getattr(_config, "LIBRARY", "")
    if library:
        out.append(pathlib.Path(library))
    return out


def _find_library():
    path = os.environ.get("SIVE_LIBRARY")
    if path:
        return path
    for candidate in _configured():
        if candidate.exists():
            return str(candidate)
    name = ctypes.util.find_library("sive")
    if name:
        return name
    root = pathlib.Path(__file__).resolve().parents[2]
    for build in ("build", "builddir"):
        candidate = root / build / "lib" / "libsive.so"
        if candidate.exists():
            return str(candidate)
    raise OSError("libsive not found: set SIVE_LIBRARY to the path of libsive.so")


def _find_ref_library(core):
    """libsive-ref beside the libsive at path core (or as the system's)."""
    path = os.environ.get("SIVE_REF_LIBRARY")
    if path:
        return path
    core = pathlib.Path(core)
    names = []
    if core.name.startswith("libsive.so"):   # same suffix: libsive.so.0.3.0
        names.append("libsive-ref" + core.name[len("libsive"):])
    try:
        from . import _config
        names.append(getattr(_config, "REF_LIBRARY_NAME", ""))
    except ImportError:
        pass
    names.append("libsive-ref.so")
    if core.parent != pathlib.Path("."):
        for name in names:
            if name and (core.parent / name).exists():
                return str(core.parent / name)
    name = ctypes.util.find_library("sive-ref")
    if name:
        return name
    raise OSError(f"libsive-ref not found beside {core}: set SIVE_REF_LIBRARY "
                  f"to the path of libsive-ref.so")


library_path = _find_library()
_lib = ctypes.CDLL(library_path)
ref_library_path = _find_ref_library(library_path)
_ref = ctypes.CDLL(ref_library_path)

# Every integer crossing the binding is range-checked here (ctypes itself
# wraps silently: 2**64 + 100 would become 100): the declared integer
# arguments of every library function (_fn) and the integer fields of the
# structures the package fills (_int_value).  docs/reliability.md.
_INT_TYPES = (c_int, c_int32, c_int64, c_uint32, c_uint64, c_size_t)


def _int_value(value, ctype, what, bounds=None):
    """value as a Python int that fits ctype (or the bounds (lo, hi) given):
    OverflowError when it does not, TypeError for a non-integer (a float is
    refused, not truncated)."""
    try:
        i = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(value).__name__} "
                        f"{value!r}") from None
    bits = 8 * sizeof(ctype)
    lo, hi = bounds or ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ctype(-1).value < 0
                        else (0, (1 << bits) - 1))
    if not lo <= i <= hi:
        raise OverflowError(f"{what} = {i} is outside [{lo}, {hi}]"
                            + (" (any 64-bit value)" if bounds else ", the range of its C type"))
    return i


def _fn(name, restype, *argtypes, lib=None):
    """The library function name (of libsive, or lib), whose integer
    arguments are checked."""
    f = getattr(lib or _lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    checked = [k for k, t in enumerate(argtypes) if t in _INT_TYPES]
    if not checked:
        return f

    def call(*args):
        for k in checked:
            if not isinstance(args[k], ctypes._SimpleCData):
                _int_value(args[k], argtypes[k], f"{name}() argument {k + 1}")
        return f(*args)
    call.__name__ = name
    return call


# ---------------------------------------------------------------------------
# Constants the library has no names for (values pinned by the ABI)
# ---------------------------------------------------------------------------


class Status(enum.IntEnum):
    OK = 0
    INVALID_ARG = -1
    NOMEM = -2
    STATE = -3
    CALLBACK = -4
    DIVERGED = -5
    CANCELLED = -6
    IO = -7
    FORMAT = -8
    THREAD = -9
    UNSUPPORTED = -10


class OptionType(enum.IntEnum):
    INT = 1
    DOUBLE = 2


_F32, _F64 = 1, 2  # sive_dtype
SUMMARY = -1  # chain argument of Result.stat(): the summary over chains
CHECKPOINT_VERSION = 1
DATASET_SUBSET_TEST = 2000
DATASET_SUBSET_SEED = 42

# ---------------------------------------------------------------------------
# Structures and prototypes (mirrors of sive.h, member for member)
# ---------------------------------------------------------------------------


class _Batch(Structure):
    _fields_ = [("index", POINTER(c_uint64)), ("n_groups", c_size_t),
                ("group_size", c_size_t), ("seed", c_uint64),
                ("chain", c_int32), ("worker", c_int32), ("step", c_int64)]


# Callbacks get theta and grad as void pointers of the model's dtype.
_GRAD = CFUNCTYPE(c_int, c_void_p, c_size_t, POINTER(_Batch), c_void_p,
                  POINTER(c_double), c_void_p)
_LOSS = CFUNCTYPE(c_int, c_void_p, c_size_t, POINTER(_Batch), POINTER(c_double), c_void_p)
_DESTROY = CFUNCTYPE(None, c_void_p)
_PROGRESS = CFUNCTYPE(c_int, c_int32, c_int64, c_int64, c_void_p)


class _Model(Structure):
    """sive_model (0.3).  A NULL function pointer is the field left unset;
    the package sets identity, and leaves move, blocks and curvature NULL
    (it offers no such callbacks; a library constructor may set them)."""
    _fields_ = [("struct_size", c_uint32), ("dtype", c_int), ("dim", c_size_t),
                ("n_examples", c_uint64), ("grad", _GRAD), ("loss", _LOSS),
                ("group_loss", _LOSS), ("user", c_void_p), ("destroy", _DESTROY),
                ("identity", c_uint64), ("move", c_void_p), ("n_blocks", c_size_t),
                ("blocks", c_void_p), ("curvature", c_void_p)]


class _OptionInfo(Structure):
    _fields_ = [("id", c_int), ("name", c_char_p), ("type", c_int),
                ("lo_open", c_int), ("hi_open", c_int),
                ("int_lo", c_int64), ("int_hi", c_int64), ("int_default", c_int64),
                ("double_lo", c_double), ("double_hi", c_double),
                ("double_default", c_double), ("doc", c_char_p), ("tier", c_int)]


class _StatInfo(Structure):
    _fields_ = [("id", c_int), ("name", c_char_p), ("pool", c_int),
                ("scalar", c_int), ("doc", c_char_p)]


class _Rng(Structure):
    _fields_ = [("state", c_uint64), ("inc", c_uint64)]


class _CheckpointMeta(Structure):
    _fields_ = [("epoch", c_int64), ("seed", c_uint64),
                ("train_loss", c_double), ("test_loss", c_double)]


class _CalibRow(Structure):
    _fields_ = [("value", c_double), ("lambda_hat", c_double), ("se", c_double),
                ("ess", c_double), ("rhat", c_double), ("nc", c_double), ("nc_std", c_double),
                ("ok", c_int), ("chain", POINTER(c_double)), ("chains", c_size_t)]


class _CalibVerdict(Structure):
    _fields_ = [("found", c_int), ("noisy", c_int), ("pick", c_size_t), ("lo", c_size_t),
                ("hi", c_size_t), ("reason", ctypes.c_char * 512), ("hint", ctypes.c_char * 256)]


_vp = c_void_p
_pvp = POINTER(c_void_p)
_pf, _pd, _pu64, _pu8 = POINTER(c_float), POINTER(c_double), POINTER(c_uint64), POINTER(c_uint8)
_pi64 = POINTER(c_int64)

# sive.h
_version_number = _fn("sive_version_number", c_uint32)
_version_string = _fn("sive_version_string", c_char_p)
_strerror = _fn("sive_strerror", c_char_p, c_int)
_last_errmsg = _fn("sive_last_errmsg", c_char_p)
_set_errmsg = _fn("sive_set_errmsg", None, c_char_p)
_model_init = _fn("sive_model_init", c_int, POINTER(_Model), c_size_t)
_model_destroy = _fn("sive_model_destroy", None, POINTER(_Model))
_option_info_get = _fn("sive_option_info_get", POINTER(_OptionInfo), c_int)
_option_at = _fn("sive_option_at", POINTER(_OptionInfo), c_size_t)
_probe_new = _fn("sive_probe_new", c_int, _pvp)
_probe_free = _fn("sive_probe_free", None, _vp)
_probe_reset = _fn("sive_probe_reset", c_int, _vp)
_probe_set_radius_from = _fn("sive_probe_set_radius_from", c_int, _vp, _vp)
_probe_set_int = _fn("sive_probe_set_int", c_int, _vp, c_int, c_int64)
_probe_set_double = _fn("sive_probe_set_double", c_int, _vp, c_int, c_double)
_probe_get_int = _fn("sive_probe_get_int", c_int, _vp, c_int, _pi64)
_probe_get_double = _fn("sive_probe_get_double", c_int, _vp, c_int, _pd)
_probe_set_text = _fn("sive_probe_set_text", c_int, _vp, c_char_p, c_char_p)
_probe_set_progress = _fn("sive_probe_set_progress", c_int, _vp, _PROGRESS, _vp)
_probe_errmsg = _fn("sive_probe_errmsg", c_char_p, _vp)
_probe_run = _fn("sive_probe_run", c_int, _vp, POINTER(_Model), _vp, _pvp)
_probe_set_params = _fn("sive_probe_set_params", c_int, _vp, POINTER(c_uint64), c_size_t)
_result_params = _fn("sive_result_params", POINTER(c_uint64), _vp, POINTER(c_size_t))
_result_params_dim = _fn("sive_result_params_dim", c_uint64, _vp)
_probe_add_eval_view = _fn("sive_probe_add_eval_view", c_int, _vp, c_char_p, POINTER(_Model),
                           POINTER(c_uint64), c_size_t)
_probe_clear_eval_views = _fn("sive_probe_clear_eval_views", c_int, _vp)
_result_views = _fn("sive_result_views", c_size_t, _vp)
_result_view = _fn("sive_result_view", _vp, _vp, c_size_t)
_result_view_name = _fn("sive_result_view_name", c_char_p, _vp, c_size_t)
_result_free = _fn("sive_result_free", None, _vp)
_result_to_bytes = _fn("sive_result_to_bytes", c_int, _vp, c_char_p, _pvp, POINTER(c_size_t))
_result_from_bytes = _fn("sive_result_from_bytes", c_int, c_char_p, c_size_t, _pvp, _pvp)
_result_merge = _fn("sive_result_merge", c_int, _pvp, _pvp, c_size_t)
_result_status = _fn("sive_result_status", c_int, _vp)
_result_errmsg = _fn("sive_result_errmsg", c_char_p, _vp)
_result_callback_code = _fn("sive_result_callback_code", c_int, _vp)
_stat_name = _fn("sive_stat_name", c_char_p, c_int)
_stat_at = _fn("sive_stat_at", POINTER(_StatInfo), c_size_t)
_result_stat = _fn("sive_result_stat", c_double, _vp, c_int, c_int32)
_result_stat_std = _fn("sive_result_stat_std", c_double, _vp, c_int)
_result_lambda = _fn("sive_result_lambda", c_double, _vp)
_result_lambda_std = _fn("sive_result_lambda_std", c_double, _vp)
_result_mcse = _fn("sive_result_mcse", c_double, _vp)
_result_ess = _fn("sive_result_ess", c_double, _vp)
_result_rhat = _fn("sive_result_rhat", c_double, _vp)
_result_noise_correction = _fn("sive_result_noise_correction", c_double, _vp)
_result_noise_correction_std = _fn("sive_result_noise_correction_std", c_double, _vp)
_result_chains = _fn("sive_result_chains", c_int32, _vp)
_result_chains_ok = _fn("sive_result_chains_ok", c_int32, _vp)
_result_steps = _fn("sive_result_steps", c_int64, _vp)
_result_eval_stride = _fn("sive_result_eval_stride", c_int64, _vp)
_result_dtype = _fn("sive_result_dtype", c_int, _vp)
_result_option_int = _fn("sive_result_option_int", c_int, _vp, c_int, _pi64)
_result_option_double = _fn("sive_result_option_double", c_int, _vp, c_int, _pd)
_result_chain_status = _fn("sive_result_chain_status", c_int, _vp, c_int32, _pi64)
_chain_status_string = _fn("sive_chain_status_string", c_char_p, c_int)
_trace_name = _fn("sive_trace_name", c_char_p, c_int)
_result_trace = _fn("sive_result_trace", _pd, _vp, c_int, c_int32, POINTER(c_size_t))
_result_flags = _fn("sive_result_flags", c_uint32, _vp)
_flag_string = _fn("sive_flag_string", c_char_p, c_uint32)
_flag_name = _fn("sive_flag_name", c_char_p, c_uint32)
_result_health = _fn("sive_result_health", c_char_p, _vp)
_retro_anchor = _fn("sive_retrospective_anchor", c_int, _vp, _pd, c_size_t)
_retro = _fn("sive_retrospective", c_int, _vp, _pd, c_size_t, _pd)
_retro_values = _fn("sive_retrospective_values", c_int, c_double, _pd, _pd, c_size_t, _pd)
_calib_rule_of = _fn("sive_calib_rule_of", c_int, c_int, POINTER(c_int))
_calib_row_from_result = _fn("sive_calib_row_from_result", c_int, _vp, c_double, _pd,
                             c_size_t, POINTER(_CalibRow))
_calibrate = _fn("sive_calibrate", c_int, c_int, POINTER(_CalibRow), c_size_t, c_double,
                 POINTER(_CalibVerdict))
_rng_seed = _fn("sive_rng_seed", None, POINTER(_Rng), c_uint64, c_uint64)
_rng_next = _fn("sive_rng_next", c_uint32, POINTER(_Rng))
_rng_uniform = _fn("sive_rng_uniform", c_double, POINTER(_Rng))
_rng_normals = _fn("sive_rng_normals", None, POINTER(_Rng), _pd, c_size_t)
_stats_ess = _fn("sive_stats_ess", c_double, _pd, c_size_t)
_stats_mcse = _fn("sive_stats_mcse", c_double, _pd, c_size_t)
# data.h, mlp.h: libsive-ref
_dataset_load_idx = _fn("sive_dataset_load_idx", c_int, _pvp, c_char_p, c_char_p, lib=_ref)
_dataset_open_dir = _fn("sive_dataset_open_dir", c_int, c_char_p, _pvp, _pvp, lib=_ref)
_dataset_split = _fn("sive_dataset_split", c_int, _vp, c_size_t, c_uint64, _pvp, _pvp, lib=_ref)
_dataset_free = _fn("sive_dataset_free", None, _vp, lib=_ref)
_dataset_count = _fn("sive_dataset_count", c_size_t, _vp, lib=_ref)
_dataset_rows = _fn("sive_dataset_rows", c_size_t, _vp, lib=_ref)
_dataset_cols = _fn("sive_dataset_cols", c_size_t, _vp, lib=_ref)
_dataset_pixels = _fn("sive_dataset_pixels", _pu8, _vp, lib=_ref)
_dataset_labels = _fn("sive_dataset_labels", _pu8, _vp, lib=_ref)
_dataset_classes = _fn("sive_dataset_classes", c_size_t, _vp, lib=_ref)
_dataset_from_memory = _fn("sive_dataset_from_memory", c_int, _pvp, _pu8, _pu8,
                           c_size_t, c_size_t, c_size_t, lib=_ref)
_dataset_save_idx = _fn("sive_dataset_save_idx", c_int, _vp, c_char_p, c_char_p, c_int, lib=_ref)
# mlp.h
_mlp_new = _fn("sive_mlp_new", c_int, _pvp, c_size_t, c_size_t, c_size_t, c_size_t, lib=_ref)
_mlp_free = _fn("sive_mlp_free", None, _vp, lib=_ref)
_mlp_dim = _fn("sive_mlp_dim", c_size_t, _vp, lib=_ref)
_psz = POINTER(c_size_t)
_mlp_sizes = _fn("sive_mlp_sizes", c_int, _vp, _psz, _psz, _psz, _psz, lib=_ref)
_mlp_init_params = _fn("sive_mlp_init_params", c_int, _vp, _pf, c_uint64, lib=_ref)
_mlp_work_new = _fn("sive_mlp_work_new", c_int, _pvp, _vp, c_size_t, c_int, lib=_ref)
_mlp_work_free = _fn("sive_mlp_work_free", None, _vp, lib=_ref)
_mlp_example_losses = _fn("sive_mlp_example_losses", c_int, _vp, _vp, _pf, _vp, _pu64,
                          c_size_t, _pd, lib=_ref)
_mlp_loss_grad = _fn("sive_mlp_loss_grad", c_int, _vp, _vp, _pf, _vp, _pu64, c_size_t,
                     _pf, _pd, lib=_ref)
_mlp_group_losses = _fn("sive_mlp_group_losses", c_int, _vp, _vp, _pf, _vp, _pu64,
                        c_size_t, c_size_t, _pd, lib=_ref)
_mlp_evaluate = _fn("sive_mlp_evaluate", c_int, _vp, _vp, _pf, _vp, _pd, _pd, lib=_ref)
_mlp_train_epoch = _fn("sive_mlp_train_epoch", c_int, _vp, _vp, _pf, _vp, c_float,
                       c_size_t, c_uint64, c_uint64, _pd, lib=_ref)
_mlp_model = _fn("sive_mlp_model", c_int, POINTER(_Model), _vp, _vp, c_int, lib=_ref)
_checkpoint_save = _fn("sive_checkpoint_save", c_int, c_char_p, _vp, _pf,
                       POINTER(_CheckpointMeta), lib=_ref)
_checkpoint_load = _fn("sive_checkpoint_load", c_int, c_char_p, _pvp, POINTER(_pf),
                       POINTER(_CheckpointMeta), lib=_ref)
_checkpoint_to_bytes = _fn("sive_checkpoint_to_bytes", c_int, _vp, _pf,
                           POINTER(_CheckpointMeta), _pvp, POINTER(c_size_t), lib=_ref)
_checkpoint_from_bytes = _fn("sive_checkpoint_from_bytes", c_int, c_char_p, c_size_t, _pvp,
                             POINTER(_pf), POINTER(_CheckpointMeta), lib=_ref)
_free = _fn("sive_free", None, _vp)

# ---------------------------------------------------------------------------
# Errors and module-level functions
# ---------------------------------------------------------------------------


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


def strerror(status):
    """Static text for a status code."""
    return _text(_strerror(int(status)))


def last_errmsg():
    """Detail of the last failure in this thread (thread-local in C)."""
    return _text(_last_errmsg())


def set_errmsg(message):
    """Set this thread's last-error message (sive_set_errmsg).  The
    trampolines call it for an exception; exposed for completeness."""
    _set_errmsg(None if message is None else str(message).encode("utf-8", "replace"))


def version():
    return _text(_version_string())


def version_number():
    return int(_version_number())


def _check_version():
    n = version_number()
    major, minor = n // 10000, n // 100 % 100
    if major != ABI_VERSION[0] or (major == 0 and minor != ABI_VERSION[1]):
        raise ImportError(f"libsive {version()} is not ABI {ABI_VERSION[0]}.{ABI_VERSION[1]}, "
                          "which these bindings declare")


_check_version()


def flag_string(flag):
    """Plain-language description of one health flag bit."""
    return _text(_flag_string(int(flag)))


def flag_name(flag):
    """Stable machine name of one health flag bit ("" if unknown)."""
    return _text(_flag_name(int(flag)))


class SiveError(Exception):
    """A libsive call failed.  status is a Status, message the library's
    detail; result holds the partial Result of a run that ended early
    (diverged, callback error, cancelled), else None.

    SiveError(status, ...) makes the subclass that matches the status
    (InvalidArgument, NoMemory, StateError, CallbackError, Diverged,
    Cancelled, SiveIOError, FormatError, Unsupported), so callers may catch
    either the family or one kind."""

    def __new__(cls, status=0, message="", result=None):
        if cls is SiveError:
            cls = _ERROR_TYPES.get(int(status), SiveError)
        return super().__new__(cls, status, message, result)

    def __init__(self, status, message="", result=None):
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status, self.message, self.result = status, message, result
        text = strerror(status)
        super().__init__(f"{text}: {message}" if message else text)


class InvalidArgument(SiveError, ValueError):
    """SIVE_E_INVALID_ARG: a bad value, description or option."""


class NoMemory(SiveError, MemoryError):
    """SIVE_E_NOMEM."""


class StateError(SiveError):
    """SIVE_E_STATE: call not valid now."""


class CallbackError(SiveError):
    """SIVE_E_CALLBACK: a callback returned non-zero (a Python callback's
    own exception is re-raised instead)."""


class Diverged(SiveError):
    """SIVE_E_DIVERGED: every chain produced a non-finite value."""


class Cancelled(SiveError):
    """SIVE_E_CANCELLED: the progress function asked to stop."""


class SiveIOError(SiveError, OSError):
    """SIVE_E_IO: a file could not be opened, read or written."""


class FormatError(SiveError):
    """SIVE_E_FORMAT: a file is malformed, truncated or corrupted."""


class Unsupported(SiveError):
    """SIVE_E_UNSUPPORTED: feature not compiled in."""


_ERROR_TYPES = {-1: InvalidArgument, -2: NoMemory, -3: StateError, -4: CallbackError,
                -5: Diverged, -6: Cancelled, -7: SiveIOError, -8: FormatError,
                -10: Unsupported}


def _check(rc, message=None):
    """Raise SiveError for a non-zero status; message defaults to the
    thread's last error (read at once: the next call overwrites it)."""
    if rc != 0:
        raise SiveError(rc, last_errmsg() if message is None else message)


# ---------------------------------------------------------------------------
# Names and options, read from the library
# ---------------------------------------------------------------------------


def _names(name_fn, values):
    """(NAME, value) for each value the library names, up to the first it
    does not (the library's lists end there)."""
    out = []
    for v in values:
        name = name_fn(v)
        if not name:
            break
        out.append((name.decode().upper(), v))
    return out


def _counting(start=0):
    v = start
    while True:
        yield v
        v += 1


Stat = enum.IntEnum("Stat", _names(_stat_name, _counting()), module=__name__)
# How a statistic's summary combines the chains (sive_stat_pool).
StatPool = enum.IntEnum("StatPool", [("MEAN", 0), ("QUADRATURE", 1),
                                     ("ALL_CHAINS", 2), ("SUMMARY_ONLY", 3)],
                        module=__name__)


class StatInfo(NamedTuple):
    """What the library says about one statistic (sive_stat_info): scalar
    is True when tools write its summary as one number rather than
    {mean, std} over chains."""
    id: Stat
    name: str
    pool: StatPool
    scalar: bool
    doc: str


def _read_table(at, convert):
    """convert(at(i)) for i = 0, 1, ... until at() returns NULL."""
    out = []
    while True:
        c = at(len(out))
        if not c:
            return tuple(out)
        out.append(convert(c))


def _stat_info(c):
    i = c.contents
    return StatInfo(Stat(i.id), _text(i.name), StatPool(i.pool), bool(i.scalar),
                    _text(i.doc))


STATS = _read_table(_stat_at, _stat_info)  # every statistic, in order
Trace = enum.IntEnum("Trace", _names(_trace_name, _counting()), module=__name__)
# -1 is the "invalid" state; the real states count up from 0.
ChainStatus = enum.IntEnum("ChainStatus", _names(_chain_status_string, [-1])
                           + _names(_chain_status_string, _counting()), module=__name__)
Flag = enum.IntFlag("Flag", _names(_flag_name, (1 << k for k in range(32))), module=__name__)


class OptionInfo(NamedTuple):
    """What the library says about one option (sive_option_info).  lo, hi
    and default have the option's type; default is NaN when there is none."""
    id: int
    name: str
    type: OptionType
    lo: object
    hi: object
    lo_open: bool
    hi_open: bool
    default: object
    doc: str
    experimental: bool = False  # the experimental tier (docs/abi.md): may change

    def accepts(self, value):
        """Whether value lies within the bounds (the library checks again);
        the seed, whose bounds are the int64 setter's, takes -2**63 .. 2**64 - 1
        (Probe.set)."""
        if self.name == "seed":
            return -(1 << 63) <= value < 1 << 64
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below


def _option_info(c):
    i = c.contents
    typed = ((i.int_lo, i.int_hi, i.int_default) if i.type == OptionType.INT
             else (i.double_lo, i.double_hi, i.double_default))
    return OptionInfo(i.id, _text(i.name), OptionType(i.type), typed[0], typed[1],
                      bool(i.lo_open), bool(i.hi_open), typed[2], _text(i.doc),
                      i.tier == 1)


OPTIONS = _read_table(_option_at, _option_info)  # every option, in the library's order
_OPTIONS_BY_NAME = {o.name: o for o in OPTIONS}
Option = enum.IntEnum("Option", [(o.name.upper(), o.id) for o in OPTIONS], module=__name__)


def options():
    """Every option the library has, as OptionInfo tuples."""
    return OPTIONS


def option_info(option):
    """OptionInfo of an option given by name ("base_lr"), Option or number;
    KeyError for an unknown one."""
    if isinstance(option, str):
        try:
            return _OPTIONS_BY_NAME[option]
        except KeyError:
            raise KeyError(f"unknown option {option!r}; options: "
                           + ", ".join(_OPTIONS_BY_NAME)) from None
    c = _option_info_get(int(option))
    if not c:
        raise KeyError(f"unknown option {option!r}")
    return _option_info(c)


def _name(e, enum_type):
    """An enum member from itself, its value or its machine name."""
    if isinstance(e, str):
        return enum_type[e.upper()]
    return enum_type(e)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _path(p):
    return os.fsencode(os.fspath(p))


def _array(x, dtype, shape=None, name="array"):
    """A C-contiguous array of dtype (copy only if needed), shape-checked."""
    a = np.ascontiguousarray(x, dtype=dtype)
    if shape is not None and a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
    return a


def _ptr(a, ctype):
    return a.ctypes.data_as(POINTER(ctype))


def _view(ptr, n, writeable):
    """numpy view of n elements of C memory (no copy)."""
    a = np.ctypeslib.as_array(ptr, shape=(n,)) if n else np.empty(0, ptr._type_)
    a.flags.writeable = writeable
    return a


def wbic_t(n):
    """t = n / log n for a data set of n examples: the paper's t = n*beta at
    beta = 1/log n, the WBIC inverse temperature (devinterp's default
    formula).  n is the number of examples the loss is a mean over (the
    training set), not a batch size: libsive's t multiplies the mean loss
    over the data set.  Estimates are comparable only at the same t
    (docs/guide.md §4, "Choosing t"; sive.torch.wbic_t is the same)."""
    n = operator.index(n)
    if n < 2:
        raise ValueError(f"wbic_t needs n >= 2 examples, got {n}")
    return n / math.log(n)


def _decade(x):
    """The decimal exponent e of |x| (finite, not 0): 10^e <= |x| < 10^(e+1)."""
    x = abs(x)
    e = math.floor(math.log10(x))
    if 10.0 ** e > x:
        e -= 1
    elif 10.0 ** (e + 1) <= x:
        e += 1
    return e


def _round_away(x):
    """C's round(): halves away from zero (Python's round() goes to even)."""
    r = math.floor(abs(x))
    return math.copysign(r + 1.0 if abs(x) - r >= 0.5 else r, x)


def _at_place(x, p):
    """x rounded to the place 10^p, never "-0"."""
    s = f"{x:.{-p}f}" if p < 0 else f"{_round_away(x / 10.0 ** p) * 10.0 ** p:.0f}"
    return s[1:] if s.startswith("-") and not s.strip("-0.") else s


def _round_pm(v, u):
    """tools/fmt.c's cli_round_pm(v, u, 0): v at the place of u's second
    significant digit; without a usable u (NaN, infinite, 0) to 4
    significant digits; a shared exponent below 1e-9 and past 1e15."""
    if not math.isfinite(v):
        return "nan" if math.isnan(v) else "inf" if v > 0 else "-inf"
    u = abs(u)
    if math.isfinite(u) and u > 0:
        p = _decade(u) - 1
        if _round_away(u / 10.0 ** p) >= 100:    # 0.0996 -> 0.10
            p += 1
    else:
        p = _decade(v) - 3 if v != 0 else 0
        if v != 0 and _round_away(abs(v) / 10.0 ** p) >= 10000:
            p += 1
    e = _decade(v) if (p < -9 or abs(v) >= 1e15) and v != 0 else 0
    return _at_place(v / 10.0 ** e, p - e) + (f"e{e}" if p < -9 or abs(v) >= 1e15 else "")


def round_to_error(value, error):
    """(value, error) as text the way the sive program prints them
    (tools/fmt.c): error to 2 significant digits and value to the same
    decimal place, halves away from zero, (0.5518, 0.0483) -> ("0.552",
    "0.048"), (4519.15, 10.2) -> ("4519", "10"); without a usable error
    (NaN, infinite, 0) value to 4 significant digits, (2.5, nan) ->
    ("2.500", "nan"); a number past 1e15, or a place below 1e-9, with its
    exponent, (1e20, 1e18) -> ("1.000e20", "1.0e18")."""
    value, error = float(value), float(error)
    return _round_pm(value, error), _round_pm(error, error)


def stats_ess(x):
    """Geyer effective sample size of a series (NaN if n < 4 or not finite)."""
    a = _array(x, np.float64)
    return _stats_ess(_ptr(a, c_double), a.size)


def stats_mcse(x):
    """Batch-means Monte Carlo standard error of the mean of a series."""
    a = _array(x, np.float64)
    return _stats_mcse(_ptr(a, c_double), a.size)


class Rng:
    """The library's PCG32 generator (a value: copy.copy() duplicates it)."""

    def __init__(self, seed=0, stream=0):
        self._g = _Rng()
        _rng_seed(byref(self._g), seed, stream)

    def __copy__(self):
        other = Rng.__new__(Rng)
        other._g = _Rng(self._g.state, self._g.inc)
        return other

    def next(self):
        return int(_rng_next(byref(self._g)))

    def uniform(self):
        return float(_rng_uniform(byref(self._g)))

    def normals(self, n=None, out=None):
        """n standard normals (or fill out, a float64 array)."""
        if out is None:
            out = np.empty(n, np.float64)
        elif out.dtype != np.float64 or not out.flags.c_contiguous:
            raise TypeError("out must be a C-contiguous float64 array")
        _rng_normals(byref(self._g), _ptr(out, c_double), out.size)
        return out


# ---------------------------------------------------------------------------
# Handles
# ---------------------------------------------------------------------------


class _Closing:
    """Context manager and finaliser of anything with a close()."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


class _Handle(_Closing):
    _destroy = None  # the C destructor, set by each subclass
    _ptr = None      # so that a failed constructor leaves a closed handle

    def __init__(self, ptr):
        self._ptr = ptr

    @property
    def _p(self):
        if not self._ptr:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._ptr

    @property
    def closed(self):
        return not self._ptr

    def close(self):
        ptr, self._ptr = self._ptr, None
        if ptr:
            type(self)._destroy(ptr)



class Batch:
    """What a callback must use.  index is None for analytic models
    (n_examples 0); otherwise a read-only uint64 array (a copy the callback
    may keep): shaped (n_groups, group_size) for a group_loss call, and
    (group_size,) for a gradient or a per-example loss call (there the
    indices are distinct and ascending).  seed is fresh in every call (for
    the callback's own noise); worker numbers the library thread making the
    call (0 .. threads-1)."""

    __slots__ = ("index", "n_groups", "group_size", "seed", "chain", "worker", "step")

    def __init__(self, b, grouped):
        self.n_groups, self.group_size = b.n_groups, b.group_size
        self.seed, self.chain, self.worker, self.step = b.seed, b.chain, b.worker, b.step
        if b.index:  # a copy: a kept index must not point at library memory
            idx = _view(b.index, b.n_groups * b.group_size, False).copy()
            idx.flags.writeable = False
            self.index = idx.reshape(b.n_groups, b.group_size) if grouped else idx
        else:
            self.index = None

    def __repr__(self):
        return (f"Batch(chain={self.chain}, step={self.step}, n_groups={self.n_groups}, "
                f"group_size={self.group_size})")


class _Failure:
    """First exception raised by a callback during a run.  Callbacks may run
    on several library threads at once, hence the lock."""

    def __init__(self):
        self.exc = None
        self._lock = threading.Lock()

    def set(self, exc):
        """Keep exc (the first one wins) and hand its text to the library,
        which appends it to the run's message."""
        with self._lock:
            if self.exc is None:
                self.exc = exc
        set_errmsg(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)

    def take(self):
        with self._lock:
            exc, self.exc = self.exc, None
        return exc


_CTYPES = {np.dtype(np.float32): (c_float, _F32), np.dtype(np.float64): (c_double, _F64)}


def _put(out, values, what):
    """Copy a callback's values into library memory, shape-checked."""
    if np.shape(values) != out.shape:
        raise ValueError(f"{what} has shape {np.shape(values)}, expected {out.shape}")
    out[:] = values


class _Thetas:
    """The theta arrays a model's callbacks receive: copies of the library's
    theta into memory Python owns, so that a callback keeping one (or a view
    of it) keeps valid memory holding that call's values, where a view of
    library memory would read freed memory after the run.  A worker reuses
    its buffer while nothing else refers to it after a call; a kept one is
    left to its keeper and the worker takes a new one."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self._free = {}  # worker -> buffer
        self._lock = threading.Lock()  # callbacks of several workers run at once

    def take(self, theta_p, d, worker):
        with self._lock:
            buf = self._free.pop(worker, None)
        if buf is None or buf.size != d:
            buf = np.empty(d, self.dtype)
        buf.flags.writeable = True
        ctypes.memmove(buf.ctypes.data, theta_p, d * self.dtype.itemsize)
        buf.flags.writeable = False
        return buf

    def give_back(self, buf, worker):
        # References: the caller's, this parameter and getrefcount's own
        # argument.  Any other (a list, a view's .base, a tensor) is a keeper.
        if sys.getrefcount(buf) <= 3:
            with self._lock:
                self._free[worker] = buf


# Trampolines: C-callable wrappers of the user's functions.  They hold the
# function, the model's _Failure and _Thetas, never the Model itself (no
# cycle).
def _grad_trampoline(fn, ctype, failure, thetas):
    def trampoline(theta_p, d, batch_p, grad_p, loss_p, user):
        try:
            b = batch_p.contents
            theta = thetas.take(theta_p, d, b.worker)
            res = fn(theta, Batch(b, False))
            g, loss = res if isinstance(res, tuple) else (res, None)
            _put(_view(ctypes.cast(grad_p, POINTER(ctype)), d, True), g, "gradient")
            if loss is not None:
                loss_p[0] = loss
            del res, g  # may be theta itself
            thetas.give_back(theta, b.worker)
            return 0
        except BaseException as e:  # KeyboardInterrupt too: stop the run cleanly
            failure.set(e)
            return 1
    return _GRAD(trampoline)


def _loss_trampoline(fn, ctype, failure, thetas, grouped):
    what = "group_loss" if grouped else "loss"

    def trampoline(theta_p, d, batch_p, out_p, user):
        try:
            b = batch_p.contents
            theta = thetas.take(theta_p, d, b.worker)
            res = fn(theta, Batch(b, grouped))
            _put(_view(out_p, b.n_groups if grouped else b.group_size, True), res,
                 f"{what} returned an array that")
            del res
            thetas.give_back(theta, b.worker)
            return 0
        except BaseException as e:
            failure.set(e)
            return 1
    return _LOSS(trampoline)


def _new_model():
    m = _Model()
    _check(_model_init(byref(m), sizeof(m)))
    return m


class Model(_Closing):
    """A model for Probe.run(): dim parameters of dtype (float32 or float64)
    and its callbacks, held in a sive_model.

    grad(theta, batch) returns the gradient of the mean loss over
    batch.index (dim values), or a tuple (gradient, that mean loss).  Then
    one of:
      loss(theta, batch): the loss of each example of batch.index
        (batch.group_size values); the library draws the evaluation groups,
        evaluates each distinct example once and forms the group means.
        Needs n_examples > 0.
      group_loss(theta, batch): the mean loss of each of the batch.n_groups
        groups (the form for analytic models, n_examples 0, whose noise is
        not a mean over examples).
    identity (0 = none, up to 2**64 - 1): a hash of everything that defines
    the loss besides theta (architecture, data); results keep it and merging
    refuses parts whose identities differ (sive_model.identity).
    The library checks the description when a run starts.  A model may
    serve any number of runs, one at a time."""

    def __init__(self, dim, grad, *, loss=None, group_loss=None, n_examples=0,
                 dtype=np.float64, identity=0):
        dt = np.dtype(dtype)
        if dt not in _CTYPES:
            raise TypeError("dtype must be float32 or float64")
        ctype, code = _CTYPES[dt]
        # ctypes would wrap a negative or too large value in the struct
        dim = _int_value(dim, c_size_t, "dim")
        n_examples = _int_value(n_examples, c_uint64, "n_examples")
        identity = _int_value(identity, c_uint64, "identity")
        self._failure = failure = _Failure()
        m = _new_model()
        m.dtype, m.dim, m.n_examples, m.identity = code, dim, n_examples, identity
        # Unset callbacks stay NULL: the library says what is missing.  The
        # ctypes thunks must live as long as the model: kept in refs.
        refs = []
        thetas = _Thetas(dt)
        if grad is not None:
            m.grad = thunk = _grad_trampoline(grad, ctype, failure, thetas)
            refs.append(thunk)
        if loss is not None:
            m.loss = thunk = _loss_trampoline(loss, ctype, failure, thetas, False)
            refs.append(thunk)
        if group_loss is not None:
            m.group_loss = thunk = _loss_trampoline(group_loss, ctype, failure, thetas, True)
            refs.append(thunk)
        self._init(m, dt, tuple(refs))

    def _init(self, m, dtype, refs):
        self._m, self.dtype, self._refs, self._closed = m, dtype, refs, False

    @classmethod
    def _adopt(cls, m, dtype, refs):
        """A model a library constructor filled (its callbacks are C)."""
        self = cls.__new__(cls)
        self._failure = _Failure()
        self._init(m, dtype, refs)
        return self

    dim = property(lambda self: int(self._m.dim))
    n_examples = property(lambda self: int(self._m.n_examples))
    identity = property(lambda self: int(self._m.identity),
                        doc="the model's identity (0: none; mlp_model() sets it from the data)")
    closed = property(lambda self: self._closed)

    def _struct(self):
        if self._closed:
            raise ValueError("Model is closed")
        for r in self._refs:  # a handle the model borrows (mlp_model's data set)
            if isinstance(r, _Handle) and r.closed:
                raise ValueError(f"the Model's {type(r).__name__} is closed")
        return self._m

    def close(self):
        """sive_model_destroy(): releases a library-made model's state."""
        if not self._closed:
            self._closed = True
            _model_destroy(byref(self._m))
            self._refs = ()



def mlp_model(mlp, train, blis_threads=1):
    """The reference MLP on the training set train, as a float32 Model
    (sive_mlp_model): gradient and per-example losses in C.  The model
    copies the architecture and keeps train alive; close() frees its
    workspaces."""
    m = _new_model()
    _check(_mlp_model(byref(m), mlp._p, train._p, blis_threads))
    return Model._adopt(m, np.dtype(np.float32), (train,))


_SEED = Option.SEED
_U64 = 1 << 64


def _typed_int(info, value):
    """An int option's value: a Python or numpy integer (as for range(),
    a float is refused rather than truncated).  The seed, a uint64, takes
    every 64-bit value as the text setter does, -2**63 .. 2**64 - 1: above
    2**63 - 1 the same bits as the negative int64 the library takes."""
    if info.id != _SEED:
        return _int_value(value, c_int64, f"option {info.name!r}")
    i = _int_value(value, c_int64, "option 'seed'", (-(1 << 63), _U64 - 1))
    return i - _U64 if i >= 1 << 63 else i


def _option_value(info, v):
    """An option's value read from the library (a ctypes int64 or double);
    the seed unsigned, as the sive tool prints it."""
    return v.value % _U64 if info.id == _SEED else v.value


class Probe(_Handle):
    """Options plus a progress callback; run() probes a Model.  Keyword
    arguments set options by name: Probe(t=1e4, steps=20000, chains=4);
    params= restricts the chains to some parameters (set_params()), views=
    {name: Model or (Model, subset)} adds evaluation views
    (add_eval_view())."""

    _destroy = _probe_free

    def __init__(self, params=None, views=None, **options):
        out = c_void_p()
        _check(_probe_new(byref(out)))
        super().__init__(out.value)
        self._failure = _Failure()
        self._progress_keep = None  # the ctypes callback: must outlive every run
        self._views = []  # the views' Models: their callbacks must outlive every run
        self.set(**options)
        if params is not None:
            self.set_params(params)
        for name, view in (views or {}).items():
            model, subset = view if isinstance(view, tuple) else (view, None)
            self.add_eval_view(name, model, subset)

    @property
    def errmsg(self):
        """Detail of the last failure on this probe ("" if none)."""
        return _text(_probe_errmsg(self._p))

    def _check(self, rc):
        if rc != 0:
            raise SiveError(rc, self.errmsg)

    def set(self, option=None, value=None, /, **options):
        """Set options by name: set("base_lr", 0.05) or set(base_lr=0.05,
        steps=1000); an Option works as the name.  The value's type follows
        the option's (an int option refuses a float; the seed takes
        -2**63 .. 2**64 - 1, a negative one the bits of 2**64 + seed); a str
        goes through the library's strict text parser.  Returns the probe."""
        pairs = list(options.items())
        if option is not None:
            pairs.insert(0, (option, value))
        for opt, v in pairs:
            info = option_info(opt)
            if isinstance(v, str):
                rc = _probe_set_text(self._p, info.name.encode(), v.encode())
            elif info.type == OptionType.INT:
                rc = _probe_set_int(self._p, info.id, _typed_int(info, v))
            else:
                rc = _probe_set_double(self._p, info.id, float(v))
            self._check(rc)
        return self

    def get(self, option):
        """An option's current value (int or float; NaN for h in adaptive
        mode and for an unset anchor; the seed unsigned, 0 .. 2**64 - 1)."""
        info = option_info(option)
        if info.type == OptionType.INT:
            v = c_int64()
            self._check(_probe_get_int(self._p, info.id, byref(v)))
        else:
            v = c_double()
            self._check(_probe_get_double(self._p, info.id, byref(v)))
        return _option_value(info, v)

    def values(self):
        """{name: current value} of every option."""
        return {o.name: self.get(o.name) for o in OPTIONS}

    def reset(self):
        """Every option back to its default (the progress callback stays;
        the parameter subset goes back to all of theta; the evaluation views
        are removed)."""
        self._check(_probe_reset(self._p))
        self._views = []
        return self

    def set_radius_from(self, result):
        """Take the radius h that result's run chose from the loss (c_h =
        'auto', or the defaults on an exact loss) instead of searching
        again: for the other parts of a split run (chain_begin/chain_end),
        which then merge into the whole run bit for bit (docs/scale.md,
        "Parts and the radius from the loss").  None forgets it, as
        reset() does.  A run of other options, model or theta* is refused.
        Returns the probe."""
        if result is not None and not isinstance(result, Result):
            # another handle's pointer would be read as a sive_result
            raise TypeError(f"set_radius_from takes a Result or None, not "
                            f"{type(result).__name__}")
        self._check(_probe_set_radius_from(self._p, None if result is None else result._p))
        return self

    def add_eval_view(self, name, model, subset=None):
        """Add an evaluation view (docs/guide.md, "Refined LLCs: other
        data"): at every evaluated step the chains also evaluate model's
        loss (or group_loss) at the same theta, on their own draws; its grad
        is not used.  model is a Model of the run's dim and dtype (another
        data set's, or the run's own with subset, ascending example indices
        such as one class).  Each run's Result then has .views, one Result
        per view.  Returns the probe."""
        if subset is None:
            ptr, n = None, 0
        else:
            sub = np.ascontiguousarray(subset, dtype=np.uint64)
            ptr, n = sub.ctypes.data_as(POINTER(c_uint64)), sub.size
        self._check(_probe_add_eval_view(self._p, str(name).encode(), byref(model._struct()),
                                         ptr, n))
        self._views.append((str(name), model))
        return self

    def clear_eval_views(self):
        """Remove every evaluation view.  Returns the probe."""
        self._check(_probe_clear_eval_views(self._p))
        self._views = []
        return self

    def set_params(self, params):
        """Make the probe weight-restricted (docs/guide.md, "Refined LLCs"):
        only these parameters move, the rest stays at theta*.  params is a
        boolean mask of the model's dim entries, or (begin, end) index
        ranges (half-open; sorted and merged here), or None for all of
        theta.  Returns the probe."""
        ranges = params_ranges(params)
        flat = (c_uint64 * (2 * len(ranges)))(*[v for r in ranges for v in r])
        self._check(_probe_set_params(self._p, flat, len(ranges)))
        return self

    def set_progress(self, fn):
        """fn(chain, step, total) is called about every 1/1000 of a run;
        return True to cancel it.  None clears it."""
        if fn is None:
            self._check(_probe_set_progress(self._p, _PROGRESS(), None))
            self._progress_keep = None
            return self
        failure = self._failure  # the trampoline must not hold the probe itself

        def trampoline(chain, step, total, user):
            try:
                return 1 if fn(chain, step, total) else 0
            except BaseException as e:
                failure.set(e)
                return 1

        keep = _PROGRESS(trampoline)
        self._check(_probe_set_progress(self._p, keep, None))
        self._progress_keep = keep
        return self

    def run(self, model, theta_star, *, check=True):
        """Probe model around theta_star (converted to the model's dtype;
        only read).  Returns a Result.  Raises SiveError when the library
        refuses the run; re-raises the exception a callback raised; and,
        with check (the default), raises SiveError with the partial result
        when the run ended early (status not OK).  With check=False such a
        result is returned: read its status and errmsg."""
        m = model._struct()
        for name, v in self._views:
            # the probe holds a copy of the view's description: a closed
            # library-made model's state (or the data set it borrows) is
            # freed, and its callbacks would read freed memory
            try:
                v._struct()
            except ValueError as e:
                raise ValueError(f"evaluation view {name!r}: {e} (remove the view with "
                                 f"clear_eval_views())") from None
        theta = _array(theta_star, model.dtype, (model.dim,), "theta_star")
        self._failure.take()
        model._failure.take()
        for _, v in self._views:
            v._failure.take()
        out = c_void_p()
        rc = _probe_run(self._p, byref(m), theta.ctypes.data_as(c_void_p), byref(out))
        if rc != 0:  # no result, no chain ran
            raise SiveError(rc, self.errmsg)
        result = Result(out.value)
        exc = model._failure.take() or self._failure.take()
        for _, v in self._views:
            exc = exc or v._failure.take()
        if exc is not None:
            message = result.errmsg
            result.close()
            if hasattr(exc, "add_note"):  # Python >= 3.11
                exc.add_note(f"(raised in a libsive callback: {message})")
            raise exc
        if check and result.status != Status.OK:
            raise SiveError(result.status, result.errmsg, result)
        return result


def params_ranges(params):
    """params (a boolean mask, (begin, end) pairs, or None) as sorted,
    merged half-open ranges [(begin, end), ...]; [] for None."""
    if params is None:
        return []
    a = np.asarray(params)
    if a.dtype == np.bool_:
        if a.ndim != 1:
            raise ValueError("a parameter mask is one-dimensional")
        edges = np.flatnonzero(np.diff(np.concatenate(([0], a.astype(np.int8), [0]))))
        return [(int(b), int(e)) for b, e in zip(edges[0::2], edges[1::2])]
    pairs = sorted((int(b), int(e)) for b, e in params)
    out = []
    for b, e in pairs:
        if out and b <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((b, e))
    return out


class Result(_Handle):
    """Estimators, diagnostics and traces of one run (immutable)."""

    _destroy = _result_free

    @property
    def views(self):
        """{name: Result} of the run's evaluation views (Probe.add_eval_view):
        each read like a result (lambda_hat, mcse, stat, trace, health); they
        belong to this result and close with it."""
        if getattr(self, "_view_list", None) is None:
            self._view_list = [(_text(_result_view_name(self._p, k)),
                                _ViewResult(_result_view(self._p, k), self))
                               for k in range(_result_views(self._p))]
        return dict(self._view_list)

    def close(self):
        for _, v in getattr(self, "_view_list", None) or []:
            v._ptr = None  # freed with this result
        super().close()

    @property
    def params(self):
        """The (begin, end) ranges of the parameters the chains moved, or
        None when they moved all of theta."""
        n = c_size_t()
        p = _result_params(self._p, byref(n))
        if not p or n.value == 0:
            return None
        return [(int(p[2 * i]), int(p[2 * i + 1])) for i in range(n.value)]

    params_dim = property(lambda self: int(_result_params_dim(self._p)),
                          doc="How many parameters the chains moved (the model's dim "
                              "when unrestricted).")

    @property
    def dtype(self):
        """The precision of the model the run probed, np.dtype("float32") or
        np.dtype("float64") (sive_result_dtype): also for a result read back
        with from_bytes() (every result format stores it) or merged."""
        return {_F32: np.dtype(np.float32), _F64: np.dtype(np.float64)}.get(
            _result_dtype(self._p))

    def to_bytes(self, note=""):
        """The bytes of this result's result file (sive_result_to_bytes),
        with note: for a queue, a socket or a database.  from_bytes() and
        the C library's sive_result_load() read them back."""
        buf, n = c_void_p(), c_size_t()
        _check(_result_to_bytes(self._p, note.encode(), byref(buf), byref(n)))
        try:
            return ctypes.string_at(buf, n.value)
        finally:
            _free(buf)  # the library's allocator, not Python's

    @classmethod
    def from_bytes(cls, data):
        """(Result, note) from to_bytes()'s bytes or a result file's
        (sive_result_from_bytes): the statistics are recomputed from the
        traces; damaged bytes raise SiveError (Status.FORMAT)."""
        data = bytes(data)
        out, note = c_void_p(), c_void_p()
        _check(_result_from_bytes(data, len(data), byref(out), byref(note)))
        try:
            text = ctypes.string_at(note).decode()
        finally:
            _free(note)
        return cls(out.value), text

    @classmethod
    def merge(cls, parts):
        """One Result of the whole run from results of disjoint chain ranges
        (chain_begin/chain_end) of the same options, model and theta*
        (sive_result_merge): bit for bit the run of every chain at once.  A
        mismatch (another model identity, options, a missing or doubled
        chain) raises SiveError (Status.INVALID_ARG); parts stay open."""
        parts = list(parts)
        ptrs = (c_void_p * max(1, len(parts)))(*[r._p for r in parts])
        out = c_void_p()
        _check(_result_merge(byref(out), ptrs, len(parts)))
        return cls(out.value)

    status = property(lambda self: Status(_result_status(self._p)))
    errmsg = property(lambda self: _text(_result_errmsg(self._p)))
    callback_code = property(lambda self: int(_result_callback_code(self._p)))

    def stat(self, stat, chain=SUMMARY):
        """A statistic (Stat or its name) of one chain, or with SUMMARY the
        mean over chains."""
        return _result_stat(self._p, _name(stat, Stat), chain)

    def stat_std(self, stat):
        """Standard deviation of a statistic over the finished chains."""
        return _result_stat_std(self._p, _name(stat, Stat))

    def stats(self, chain=SUMMARY):
        """{name: value} of every statistic, keyed by the library's names
        (the JSON keys of the sive tool)."""
        return {_text(_stat_name(s)): self.stat(s, chain) for s in Stat}

    def option(self, option):
        """The value an option had in this run (frozen at its start)."""
        info = option_info(option)
        if info.type == OptionType.INT:
            v, get = c_int64(), _result_option_int
        else:
            v, get = c_double(), _result_option_double
        _check(get(self._p, info.id, byref(v)))
        return _option_value(info, v)

    def retrospective_anchor(self):
        """Each chain's retrospective anchor, its minimum tail loss (NaN for
        a chain that did not finish): call it on the FINAL checkpoint's
        result (sive_retrospective_anchor)."""
        out = np.empty(self.chains)
        _check(_retro_anchor(self._p, _ptr(out, c_double), out.size))
        return out

    def retrospective(self, anchor):
        """The retrospective lambda-hat of each chain against anchor (from
        the final checkpoint's retrospective_anchor()): t (tail mean loss -
        anchor), NaN for a chain that did not finish (sive_retrospective)."""
        a = _array(anchor, np.float64, (self.chains,), "anchor")
        out = np.empty(self.chains)
        _check(_retro(self._p, _ptr(a, c_double), a.size, _ptr(out, c_double)))
        return out

    lambda_hat = property(lambda self: _result_lambda(self._p))
    lambda_std = property(lambda self: _result_lambda_std(self._p))
    mcse = property(lambda self: _result_mcse(self._p))
    ess = property(lambda self: _result_ess(self._p))
    rhat = property(lambda self: _result_rhat(self._p))
    noise_correction = property(lambda self: _result_noise_correction(self._p))
    noise_correction_std = property(lambda self: _result_noise_correction_std(self._p))
    chains = property(lambda self: int(_result_chains(self._p)))
    chains_ok = property(lambda self: int(_result_chains_ok(self._p)))
    steps = property(lambda self: int(_result_steps(self._p)))
    eval_stride = property(lambda self: int(_result_eval_stride(self._p)))
    flags = property(lambda self: Flag(_result_flags(self._p)))
    health = property(lambda self: _text(_result_health(self._p)))

    @property
    def flag_names(self):
        """Machine names of the raised health flags."""
        raised = self.flags
        return [flag_name(f) for f in Flag if raised & f]

    def chain_status(self, chain):
        """(ChainStatus, step at which the chain stopped)."""
        step = c_int64()
        status = _result_chain_status(self._p, chain, byref(step))
        return ChainStatus(status), step.value

    def trace(self, which, chain):
        """A copy of one chain's per-step trace (Trace or its name; float64,
        one value per step run)."""
        n = c_size_t()
        p = _result_trace(self._p, _name(which, Trace), chain, byref(n))
        if not p:
            raise SiveError(Status.INVALID_ARG, f"no trace {which!r} for chain {chain}")
        return _view(p, n.value, False).copy()

    def traces(self, chain):
        """Every trace of one chain, {name: float64 numpy array}."""
        return {_text(_trace_name(t)): self.trace(t, chain) for t in Trace}

    def options(self):
        """{name: value} of every option as this run used it."""
        return {o.name: self.option(o.name) for o in OPTIONS}

    def to_dict(self, traces=False):
        """The result as plain data, with the keys of `sive probe --format
        json` for a run (the CLI adds its checkpoint fields, blis_threads
        and seconds): settings, status, error, every statistic ({mean, std}
        over chains, or one pooled number), chains, chains_ok, flags,
        flag_names, health (a list of lines), per_chain and dtype (the
        model's precision, "float32" or "float64").  NaN becomes
        None, as the CLI writes null.  traces=True adds "traces":
        per chain {name: list}.  With evaluation views, "views": a list of
        {name, the statistics, ..., per_chain} as the CLI writes them."""
        def num(v):
            v = float(v)
            return v if math.isfinite(v) else None

        status = self.status
        d = {"settings": {k: num(v) if isinstance(v, float) else v
                          for k, v in self.options().items()},
             "status": int(status),
             "error": None if status == Status.OK
             else f"{self.errmsg} ({strerror(status)})"}
        for s in Stat:
            name = _text(_stat_name(s))
            if STATS[s].scalar:
                d[name] = num(self.stat(s))
            else:
                d[name] = {"mean": num(self.stat(s)), "std": num(self.stat_std(s))}
        d["chains"], d["chains_ok"] = self.chains, self.chains_ok
        d["flags"], d["flag_names"] = int(self.flags), self.flag_names
        d["health"] = [line for line in self.health.split("\n") if line]
        per_chain = []
        for k in range(self.chains):
            st, step = self.chain_status(k)
            c = {"status": st.name.lower(), "stop_step": step}
            for s in Stat:
                if STATS[s].pool != StatPool.SUMMARY_ONLY:
                    c[_text(_stat_name(s))] = num(self.stat(s, k))
            per_chain.append(c)
        d["per_chain"] = per_chain
        d["dtype"] = str(self.dtype)  # "float32" or "float64", as the CLI
        if traces:
            d["traces"] = [{n: [num(x) for x in a] for n, a in self.traces(k).items()}
                           for k in range(self.chains)]
        if self.params is not None:  # a weight-restricted probe, as the CLI writes it
            d["params_dim"] = self.params_dim
        if _result_views(self._p):  # as the CLI's "views": name, then the statistics
            d["views"] = [{"name": n, **{k: x for k, x in v.to_dict(traces).items()
                                         if k not in ("settings", "status", "error",
                                                      "dtype")}}
                          for n, v in self.views.items()]
        return d

    def to_json(self, traces=False, **kwargs):
        """to_dict() as JSON text (json.dumps keyword arguments pass on)."""
        return json.dumps(self.to_dict(traces), **kwargs)

    def __str__(self):
        """One line for people: lambda-hat to the digits its MCSE supports,
        the MCSE, ESS, split-R-hat, the chains that finished and the raised
        flags (their advice: Result.health); the status and message first
        when the run did not end OK."""
        if self.closed:
            return "Result(closed)"
        lam, mcse = round_to_error(self.lambda_hat, self.mcse)
        text = (f"lambda-hat {lam} (MCSE {mcse}), ESS {self.ess:.0f}, "
                f"R-hat {self.rhat:.3f}, chains {self.chains_ok}/{self.chains}")
        if self.flag_names:
            text += "; flags: " + ", ".join(self.flag_names) + " (see .health)"
        if self.status != Status.OK:
            text = f"{self.status.name}: {self.errmsg}; " + text
        return text

    def __repr__(self):
        if self.closed:
            return "Result(closed)"
        return (f"Result(status={self.status.name}, lambda={self.lambda_hat:.4g} "
                f"(mcse {self.mcse:.2g}), ess={self.ess:.0f}, "
                f"chains_ok={self.chains_ok}/{self.chains}, flags={self.flags!r})")


class _ViewResult(Result):
    """An evaluation view's result (Result.views): owned by the run's Result,
    which it keeps alive; closing it only closes this handle."""

    _destroy = staticmethod(lambda ptr: None)

    def __init__(self, ptr, parent):
        super().__init__(ptr)
        self._parent = parent


# ---------------------------------------------------------------------------
# Data sets
# ---------------------------------------------------------------------------


def retrospective(results):
    """The retrospective estimator over a trajectory: results are the
    probes of successive checkpoints with the same options (seed included),
    the last one the final checkpoint.  Returns (lambdas, anchor): an array
    of shape (len(results), chains), row k the chains' estimates at
    checkpoint k, and the final checkpoint's anchors.  docs/python.md."""
    results = list(results)
    if not results:
        raise ValueError("retrospective() needs at least the final checkpoint's result")
    anchor = results[-1].retrospective_anchor()
    return np.array([r.retrospective(anchor) for r in results]).reshape(
        len(results), anchor.size), anchor


def retrospective_values(t, tail_mean, anchor):
    """The same estimator on numbers (sive_retrospective_values): t
    (tail_mean - anchor) per chain, for a caller that keeps only each
    checkpoint's per-chain Stat.TAIL_MEAN_LOSS."""
    m = _array(tail_mean, np.float64, name="tail_mean").ravel()
    a = _array(anchor, np.float64, m.shape, "anchor")
    out = np.empty(m.size)
    _check(_retro_values(float(t), _ptr(m, c_double), _ptr(a, c_double), m.size,
                         _ptr(out, c_double)))
    return out


# ---------------------------------------------------------------------------
# Calibration rules (docs/calibration.md)
# ---------------------------------------------------------------------------


class CalibRule(enum.IntEnum):
    """The plateau rules of sive_calibrate()."""
    H = 0       # h or c_h: the onset of the plateau
    STEP = 1    # base_lr: the stable range
    GROUPS = 2  # groups (N): the noise correction settles


CALIB_H_TOL = 0.10    # SIVE_CALIB_H_TOL
CALIB_NC_FRAC = 0.10  # SIVE_CALIB_NC_FRAC


class CalibRow(NamedTuple):
    """One swept value's numbers (NaN where unknown); chain: per-chain
    lambda-hat (an array, NaN for failed chains) or None (unpaired)."""
    value: float
    lambda_hat: float
    se: float
    ess: float = math.nan
    rhat: float = math.nan
    nc: float = math.nan
    nc_std: float = math.nan
    ok: bool = True
    chain: Optional[np.ndarray] = None

    @classmethod
    def from_result(cls, result, value):
        """The row of the swept value from its result
        (sive_calib_row_from_result): the SE is the std over chains /
        sqrt(chains_ok) with >= 2 finished chains, else the MCSE."""
        chain = np.empty(result.chains)
        c = _CalibRow()
        _check(_calib_row_from_result(result._p, float(value), _ptr(chain, c_double), chain.size,
                                      byref(c)))
        return cls(c.value, c.lambda_hat, c.se, c.ess, c.rhat, c.nc, c.nc_std, bool(c.ok), chain)


class CalibVerdict(NamedTuple):
    found: bool
    noisy: bool
    pick: int     # the recommended row (when found)
    lo: int       # the plateau / stable range, rows lo..hi
    hi: int
    reason: str
    hint: str


def calib_rule(option):
    """The rule that calibrates option (an Option or its name)."""
    rule = c_int()
    _check(_calib_rule_of(_name(option, Option), byref(rule)))
    return CalibRule(rule.value)


def calibrate(rule, rows, tol=None):
    """Apply a plateau rule (CalibRule, or the swept Option or its name) to
    rows (CalibRow, sorted by value ascending) (sive_calibrate).  tol: the h
    rule's tolerance or the groups rule's fraction (None: the defaults)."""
    if not isinstance(rule, CalibRule):
        rule = calib_rule(rule)
    rows = list(rows)
    arr = (_CalibRow * max(len(rows), 1))()
    keep = []
    for i, r in enumerate(rows):
        c = arr[i]
        c.value, c.lambda_hat, c.se, c.ess, c.rhat = r.value, r.lambda_hat, r.se, r.ess, r.rhat
        c.nc, c.nc_std, c.ok = r.nc, r.nc_std, int(bool(r.ok))
        if r.chain is not None:
            ch = _array(r.chain, np.float64, name="chain").ravel()
            keep.append(ch)  # must live until the call returns
            c.chain, c.chains = _ptr(ch, c_double), ch.size
    v = _CalibVerdict()
    _check(_calibrate(int(rule), arr, len(rows), math.nan if tol is None else float(tol),
                      byref(v)))
    return CalibVerdict(bool(v.found), bool(v.noisy), int(v.pick), int(v.lo), int(v.hi),
                        v.reason.decode(), v.hint.decode())


def _new_pair():
    return c_void_p(), c_void_p()


class Dataset(_Handle):
    """An immutable set of count images of rows x cols bytes with labels."""

    _destroy = _dataset_free

    @classmethod
    def load_idx(cls, images_path, labels_path):
        out = c_void_p()
        _check(_dataset_load_idx(byref(out), _path(images_path), _path(labels_path)))
        return cls(out.value)

    @classmethod
    def open_dir(cls, directory):
        """(train, test) from the official MNIST files or the bundled subset."""
        a, b = _new_pair()
        _check(_dataset_open_dir(_path(directory), byref(a), byref(b)))
        return cls(a.value), cls(b.value)

    @classmethod
    def from_memory(cls, pixels, labels):
        """pixels: uint8 array (count, rows, cols); labels: uint8 (count,)."""
        px = _array(pixels, np.uint8)
        if px.ndim != 3:
            raise ValueError("pixels must have shape (count, rows, cols)")
        lb = _array(labels, np.uint8, (px.shape[0],), "labels")
        out = c_void_p()
        _check(_dataset_from_memory(byref(out), _ptr(px, c_uint8), _ptr(lb, c_uint8),
                                    *px.shape))
        return cls(out.value)

    def split(self, n_test, seed=DATASET_SUBSET_SEED):
        """Deterministic class-balanced (train, test) copies."""
        a, b = _new_pair()
        _check(_dataset_split(self._p, n_test, seed, byref(a), byref(b)))
        return Dataset(a.value), Dataset(b.value)

    def save_idx(self, images_path, labels_path, zstd_level=0):
        _check(_dataset_save_idx(self._p, _path(images_path), _path(labels_path), zstd_level))

    count = property(lambda self: int(_dataset_count(self._p)))
    rows = property(lambda self: int(_dataset_rows(self._p)))
    cols = property(lambda self: int(_dataset_cols(self._p)))
    classes = property(lambda self: int(_dataset_classes(self._p)))

    def __len__(self):
        return self.count

    def pixels(self):
        """A copy of the images, uint8 (count, rows, cols)."""
        n = self.count * self.rows * self.cols
        return _view(_dataset_pixels(self._p), n, False).reshape(
            self.count, self.rows, self.cols).copy()

    def labels(self):
        """A copy of the labels, uint8 (count,)."""
        return _view(_dataset_labels(self._p), self.count, False).copy()


# ---------------------------------------------------------------------------
# Reference MLP and checkpoints (its probe model: mlp_model() above)
# ---------------------------------------------------------------------------


class Mlp(_Handle):
    """The architecture inputs -> h1 -> h2 -> classes (no parameters)."""

    _destroy = _mlp_free

    def __init__(self, inputs=784, h1=128, h2=128, classes=10, *, _adopt=None):
        if _adopt is None:
            out = c_void_p()
            _check(_mlp_new(byref(out), inputs, h1, h2, classes))
            _adopt = out.value
        super().__init__(_adopt)

    @property
    def dim(self):
        return int(_mlp_dim(self._p))

    @property
    def sizes(self):
        """(inputs, h1, h2, classes)."""
        s = [c_size_t() for _ in range(4)]
        _check(_mlp_sizes(self._p, *(byref(x) for x in s)))
        return tuple(x.value for x in s)

    def _theta(self, theta):
        return _array(theta, np.float32, (self.dim,), "theta")

    def init_params(self, seed=0):
        """PyTorch's default initialisation, as a new float32 vector."""
        theta = np.empty(self.dim, np.float32)
        _check(_mlp_init_params(self._p, _ptr(theta, c_float), seed))
        return theta

    def workspace(self, block_rows=0, blis_threads=1):
        return Workspace(self, block_rows, blis_threads)

    def example_losses(self, work, theta, ds, idx):
        th, ix = self._theta(theta), _array(idx, np.uint64)
        out = np.empty(ix.size, np.float64)
        _check(_mlp_example_losses(self._p, work._p, _ptr(th, c_float), ds._p,
                                   _ptr(ix, c_uint64), ix.size, _ptr(out, c_double)))
        return out

    def loss_grad(self, work, theta, ds, idx):
        """(gradient of the batch mean loss, that mean loss)."""
        th, ix = self._theta(theta), _array(idx, np.uint64)
        grad, loss = np.empty(self.dim, np.float32), c_double()
        _check(_mlp_loss_grad(self._p, work._p, _ptr(th, c_float), ds._p,
                              _ptr(ix, c_uint64), ix.size, _ptr(grad, c_float), byref(loss)))
        return grad, loss.value

    def group_losses(self, work, theta, ds, idx):
        """idx: (n_groups, group_size) indices -> n_groups mean losses."""
        th, ix = self._theta(theta), _array(idx, np.uint64)
        if ix.ndim != 2:
            raise ValueError("idx must have shape (n_groups, group_size)")
        out = np.empty(ix.shape[0], np.float64)
        _check(_mlp_group_losses(self._p, work._p, _ptr(th, c_float), ds._p,
                                 _ptr(ix, c_uint64), ix.shape[0], ix.shape[1],
                                 _ptr(out, c_double)))
        return out

    def evaluate(self, work, theta, ds):
        """(mean loss, accuracy) over the whole data set."""
        th = self._theta(theta)
        loss, acc = c_double(), c_double()
        _check(_mlp_evaluate(self._p, work._p, _ptr(th, c_float), ds._p,
                             byref(loss), byref(acc)))
        return loss.value, acc.value

    def train_epoch(self, work, theta, ds, lr, batch, seed=0, epoch=0):
        """One epoch of SGD, updating theta in place (it must be a writable
        C-contiguous float32 vector: a converted copy would lose the update).
        Returns the running mean training loss."""
        if (not isinstance(theta, np.ndarray) or theta.dtype != np.float32
                or not theta.flags.c_contiguous or not theta.flags.writeable
                or theta.shape != (self.dim,)):
            raise TypeError(f"theta must be a writable C-contiguous float32 array "
                            f"of shape ({self.dim},)")
        loss = c_double()
        _check(_mlp_train_epoch(self._p, work._p, _ptr(theta, c_float), ds._p, lr,
                                batch, seed, epoch, byref(loss)))
        return loss.value


class Workspace(_Handle):
    """Scratch buffers for one thread's MLP computations."""

    _destroy = _mlp_work_free

    def __init__(self, mlp, block_rows=0, blis_threads=1):
        out = c_void_p()
        _check(_mlp_work_new(byref(out), mlp._p, block_rows, blis_threads))
        super().__init__(out.value)
        self._mlp = mlp  # must outlive the workspace


class CheckpointMeta(NamedTuple):
    epoch: int = 0
    seed: int = 0
    train_loss: float = math.nan
    test_loss: float = math.nan


def _meta(meta):
    m = CheckpointMeta() if meta is None else meta
    return _CheckpointMeta(_int_value(m.epoch, c_int64, "meta.epoch"),
                           _int_value(m.seed, c_uint64, "meta.seed"), m.train_loss, m.test_loss)


def save_checkpoint(path, mlp, theta, meta=None):
    """Write an atomic, checksummed checkpoint of theta (float32)."""
    th = mlp._theta(theta)
    c = _meta(meta)
    _check(_checkpoint_save(_path(path), mlp._p, _ptr(th, c_float), byref(c)))


def checkpoint_to_bytes(mlp, theta, meta=None):
    """The bytes save_checkpoint() would write (sive_checkpoint_to_bytes):
    for a queue, a socket or an object store."""
    th = mlp._theta(theta)
    c = _meta(meta)
    buf, n = c_void_p(), c_size_t()
    _check(_checkpoint_to_bytes(mlp._p, _ptr(th, c_float), byref(c), byref(buf), byref(n)))
    try:
        return ctypes.string_at(buf, n.value)
    finally:
        _free(buf)  # the library's allocator, not Python's


def checkpoint_from_bytes(data):
    """(Mlp, theta, CheckpointMeta) from checkpoint_to_bytes()'s bytes or a
    checkpoint file's (sive_checkpoint_from_bytes): damaged bytes raise
    SiveError (Status.FORMAT)."""
    data = bytes(data)
    m, theta_p, c = c_void_p(), _pf(), _CheckpointMeta()
    _check(_checkpoint_from_bytes(data, len(data), byref(m), byref(theta_p), byref(c)))
    return _adopt_checkpoint(m, theta_p, c)


def load_checkpoint(path):
    """(Mlp, theta as a float32 array, CheckpointMeta)."""
    m, theta_p, c = c_void_p(), _pf(), _CheckpointMeta()
    _check(_checkpoint_load(_path(path), byref(m), byref(theta_p), byref(c)))
    return _adopt_checkpoint(m, theta_p, c)


def _adopt_checkpoint(m, theta_p, c):
    mlp = Mlp(_adopt=m.value)
    try:
        theta = _view(theta_p, mlp.dim, False).copy()
    finally:
        _free(theta_p)  # the library's allocator, not Python's
    return mlp, theta, CheckpointMeta(c.epoch, c.seed, c.train_loss, c.test_loss)
