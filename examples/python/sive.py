"""ctypes bindings for libsive (standard library + numpy only).

Covers the whole public API: the probe (include/sive/sive.h), data sets
(sive/data.h), the reference MLP, its probe adapter and checkpoints
(sive/mlp.h).

    import numpy as np, sive

    def grad(theta, batch):          # -> gradient, or (gradient, loss)
        return 2 * theta, float(theta @ theta)

    def evaluate(theta, batch):      # -> batch.n_groups mean losses
        return np.full(batch.n_groups, theta @ theta)

    with sive.Probe(2, steps=2000, h=0.1) as p:
        p.set_callbacks(grad, evaluate)
        with p.run(np.array([0.5, 0.5])) as r:
            print(r.lambda_hat, "+/-", r.mcse)

Conventions
 - Failures raise SiveError, carrying the status, sive_strerror() and the
   library's detailed message (the probe's, or the thread's last one).
 - Handles (Probe, Result, Dataset, Mlp, Workspace, Binding) are context
   managers; close() frees them early, otherwise the garbage collector does.
 - Arrays passed to callbacks (theta, batch.index) are read-only views of
   library memory, valid only during the call: copy them to keep them.
 - An exception raised in a callback aborts the run (the trampoline returns
   non-zero, the library stops with SIVE_E_CALLBACK) and run() re-raises
   that same exception.
 - ctypes releases the GIL during library calls, so a run does not block
   other Python threads except while a callback executes.

The library is looked up in $SIVE_LIBRARY (a path), then by
ctypes.util.find_library("sive"), then in the source tree's build/lib.
"""

import ctypes
import ctypes.util
import enum
import math
import os
import pathlib
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_double,
                    c_float, c_int, c_int32, c_int64, c_size_t, c_uint8,
                    c_uint32, c_uint64, c_void_p)
from typing import NamedTuple

import numpy as np

# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------

ABI_MAJOR = 0  # the major version these declarations were written for


def _find_library():
    path = os.environ.get("SIVE_LIBRARY")
    if path:
        return path
    name = ctypes.util.find_library("sive")
    if name:
        return name
    root = pathlib.Path(__file__).resolve().parents[2]
    for build in ("build", "builddir"):
        candidate = root / build / "lib" / "libsive.so"
        if candidate.exists():
            return str(candidate)
    raise OSError("libsive not found: set SIVE_LIBRARY to the path of libsive.so")


_lib = ctypes.CDLL(_find_library())


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


# ---------------------------------------------------------------------------
# Constants (values pinned by the ABI)
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


class Option(enum.IntEnum):
    T = 1
    BASE_LR = 2
    H = 3
    C_H = 4
    STEPS = 5
    BURN_IN = 6
    GROUPS = 7
    EVAL_BATCH = 8
    GRAD_BATCH = 9
    DATA_SIZE = 10
    CHAINS = 11
    THREADS = 12
    SEED = 13
    REPLACEMENT = 14
    EVAL_STRIDE = 15
    ANCHOR = 16


# The C API has one setter per type; the type of each option is fixed.
_DOUBLE_OPTIONS = frozenset({Option.T, Option.BASE_LR, Option.H, Option.C_H,
                             Option.BURN_IN, Option.ANCHOR})


class Stat(enum.IntEnum):
    SIVE = 0
    SIVE_UNCLIPPED = 1
    RAW_VARIANCE = 2
    ONLINE_MEAN = 3
    ANCHORED_MEAN = 4
    TAIL_MEAN_LOSS = 5
    TAIL_MIN_LOSS = 6
    NOISE_CORRECTION = 7
    NOISE_CORRECTION_STD = 8
    NOISE_CORRECTION_STD_GAUSS = 9
    MCSE = 10
    ESS = 11
    RHAT = 12
    H = 13
    TETHER_STEP = 14
    GRAD_NORM2_START = 15
    SLOPE_PROXY = 16
    RMS_DISP_REL_H = 17
    TAIL_LENGTH = 18


class Trace(enum.IntEnum):
    LBAR = 0
    S2 = 1
    GRAD_LOSS = 2
    GRAD_NORM = 3
    DISP = 4


class ChainStatus(enum.IntEnum):
    INVALID = -1
    OK = 0
    DIVERGED = 1
    CALLBACK = 2
    ABORTED = 3


class Flag(enum.IntFlag):
    DIVERGED = 1 << 0
    NEGATIVE_SIVE = 1 << 1
    NONSTATIONARY = 1 << 2
    LOW_ESS = 1 << 3
    HIGH_RHAT = 1 << 4
    NOISY_CORRECTION = 1 << 5
    ABORTED = 1 << 6


SUMMARY = -1  # chain argument of Result.stat(): the summary over chains
CHECKPOINT_VERSION = 1
DATASET_SUBSET_TEST = 2000
DATASET_SUBSET_SEED = 42

# ---------------------------------------------------------------------------
# Structures and prototypes
# ---------------------------------------------------------------------------


class _Batch(Structure):
    _fields_ = [("index", POINTER(c_uint64)), ("n_groups", c_size_t),
                ("group_size", c_size_t), ("seed", c_uint64),
                ("chain", c_int32), ("reserved", c_int32), ("step", c_int64)]


class _Rng(Structure):
    _fields_ = [("state", c_uint64), ("inc", c_uint64)]


class _CheckpointMeta(Structure):
    _fields_ = [("epoch", c_int64), ("seed", c_uint64),
                ("train_loss", c_double), ("test_loss", c_double)]


_vp = c_void_p
_pvp = POINTER(c_void_p)
_pf, _pd, _pu64, _pu8 = POINTER(c_float), POINTER(c_double), POINTER(c_uint64), POINTER(c_uint8)

_GRAD_F32 = CFUNCTYPE(c_int, _pf, c_size_t, POINTER(_Batch), _pf, _pd, c_void_p)
_EVAL_F32 = CFUNCTYPE(c_int, _pf, c_size_t, POINTER(_Batch), _pd, c_void_p)
_GRAD_F64 = CFUNCTYPE(c_int, _pd, c_size_t, POINTER(_Batch), _pd, _pd, c_void_p)
_EVAL_F64 = CFUNCTYPE(c_int, _pd, c_size_t, POINTER(_Batch), _pd, c_void_p)
_PROGRESS = CFUNCTYPE(c_int, c_int32, c_int64, c_int64, c_void_p)

# sive.h
_version_number = _fn("sive_version_number", c_uint32)
_version_string = _fn("sive_version_string", c_char_p)
_strerror = _fn("sive_strerror", c_char_p, c_int)
_last_errmsg = _fn("sive_last_errmsg", c_char_p)
_probe_new = _fn("sive_probe_new", c_int, _pvp, c_size_t)
_probe_free = _fn("sive_probe_free", None, _vp)
_probe_dim = _fn("sive_probe_dim", c_size_t, _vp)
_probe_set_double = _fn("sive_probe_set_double", c_int, _vp, c_int, c_double)
_probe_set_int = _fn("sive_probe_set_int", c_int, _vp, c_int, c_int64)
_probe_get_double = _fn("sive_probe_get_double", c_int, _vp, c_int, _pd)
_probe_get_int = _fn("sive_probe_get_int", c_int, _vp, c_int, POINTER(c_int64))
_probe_set_callbacks_f32 = _fn("sive_probe_set_callbacks_f32", c_int, _vp, _GRAD_F32, _EVAL_F32, _vp)
_probe_set_callbacks_f64 = _fn("sive_probe_set_callbacks_f64", c_int, _vp, _GRAD_F64, _EVAL_F64, _vp)
_probe_set_progress = _fn("sive_probe_set_progress", c_int, _vp, _PROGRESS, _vp)
_probe_errmsg = _fn("sive_probe_errmsg", c_char_p, _vp)
_probe_callback_code = _fn("sive_probe_callback_code", c_int, _vp)
_probe_run_f32 = _fn("sive_probe_run_f32", c_int, _vp, _pf, _pvp)
_probe_run_f64 = _fn("sive_probe_run_f64", c_int, _vp, _pd, _pvp)
_result_free = _fn("sive_result_free", None, _vp)
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
_result_chain_status = _fn("sive_result_chain_status", c_int, _vp, c_int32, POINTER(c_int64))
_result_trace = _fn("sive_result_trace", _pd, _vp, c_int, c_int32, POINTER(c_size_t))
_result_flags = _fn("sive_result_flags", c_uint32, _vp)
_flag_string = _fn("sive_flag_string", c_char_p, c_uint32)
_result_health = _fn("sive_result_health", c_char_p, _vp)
_rng_seed = _fn("sive_rng_seed", None, POINTER(_Rng), c_uint64, c_uint64)
_rng_next = _fn("sive_rng_next", c_uint32, POINTER(_Rng))
_rng_uniform = _fn("sive_rng_uniform", c_double, POINTER(_Rng))
_rng_normals = _fn("sive_rng_normals", None, POINTER(_Rng), _pd, c_size_t)
_stats_ess = _fn("sive_stats_ess", c_double, _pd, c_size_t)
_stats_mcse = _fn("sive_stats_mcse", c_double, _pd, c_size_t)
# data.h
_dataset_load_idx = _fn("sive_dataset_load_idx", c_int, _pvp, c_char_p, c_char_p)
_dataset_open_dir = _fn("sive_dataset_open_dir", c_int, c_char_p, _pvp, _pvp)
_dataset_split = _fn("sive_dataset_split", c_int, _vp, c_size_t, c_uint64, _pvp, _pvp)
_dataset_free = _fn("sive_dataset_free", None, _vp)
_dataset_count = _fn("sive_dataset_count", c_size_t, _vp)
_dataset_rows = _fn("sive_dataset_rows", c_size_t, _vp)
_dataset_cols = _fn("sive_dataset_cols", c_size_t, _vp)
_dataset_pixels = _fn("sive_dataset_pixels", _pu8, _vp)
_dataset_labels = _fn("sive_dataset_labels", _pu8, _vp)
_dataset_classes = _fn("sive_dataset_classes", c_size_t, _vp)
_dataset_from_memory = _fn("sive_dataset_from_memory", c_int, _pvp, _pu8, _pu8,
                           c_size_t, c_size_t, c_size_t)
_dataset_save_idx = _fn("sive_dataset_save_idx", c_int, _vp, c_char_p, c_char_p, c_int)
# mlp.h
_mlp_new = _fn("sive_mlp_new", c_int, _pvp, c_size_t, c_size_t, c_size_t, c_size_t)
_mlp_free = _fn("sive_mlp_free", None, _vp)
_mlp_dim = _fn("sive_mlp_dim", c_size_t, _vp)
_psz = POINTER(c_size_t)
_mlp_sizes = _fn("sive_mlp_sizes", c_int, _vp, _psz, _psz, _psz, _psz)
_mlp_init_params = _fn("sive_mlp_init_params", c_int, _vp, _pf, c_uint64)
_mlp_work_new = _fn("sive_mlp_work_new", c_int, _pvp, _vp, c_size_t, c_int)
_mlp_work_free = _fn("sive_mlp_work_free", None, _vp)
_mlp_example_losses = _fn("sive_mlp_example_losses", c_int, _vp, _vp, _pf, _vp, _pu64,
                          c_size_t, _pf)
_mlp_loss_grad = _fn("sive_mlp_loss_grad", c_int, _vp, _vp, _pf, _vp, _pu64, c_size_t,
                     _pf, _pd)
_mlp_group_losses = _fn("sive_mlp_group_losses", c_int, _vp, _vp, _pf, _vp, _pu64,
                        c_size_t, c_size_t, _pd)
_mlp_evaluate = _fn("sive_mlp_evaluate", c_int, _vp, _vp, _pf, _vp, _pd, _pd)
_mlp_train_epoch = _fn("sive_mlp_train_epoch", c_int, _vp, _vp, _pf, _vp, c_float,
                       c_size_t, c_uint64, c_uint64, _pd)
_mlp_probe_bind = _fn("sive_mlp_probe_bind", c_int, _pvp, _vp, _vp, _vp, c_int32, c_int)
_mlp_binding_free = _fn("sive_mlp_binding_free", None, _vp)
_checkpoint_save = _fn("sive_checkpoint_save", c_int, c_char_p, _vp, _pf,
                       POINTER(_CheckpointMeta))
_checkpoint_load = _fn("sive_checkpoint_load", c_int, c_char_p, _pvp, POINTER(_pf),
                       POINTER(_CheckpointMeta))
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


def version():
    return _text(_version_string())


def version_number():
    return int(_version_number())


def flag_string(flag):
    """Plain-language description of one health flag bit."""
    return _text(_flag_string(int(flag)))


if version_number() // 10000 != ABI_MAJOR:
    raise ImportError(f"libsive {version()} is not ABI {ABI_MAJOR}.x, "
                      "which these bindings declare")


class SiveError(Exception):
    """A libsive call failed.  status is a Status, message the library's
    detail; result holds the partial Result of a run that stopped (diverged,
    cancelled), else None."""

    def __init__(self, status, message="", result=None):
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status, self.message, self.result = status, message, result
        text = strerror(status)
        super().__init__(f"{text}: {message}" if message else text)


def _check(rc, message=None):
    """Raise SiveError for a non-zero status; message defaults to the
    thread's last error (read at once: the next call overwrites it)."""
    if rc != 0:
        raise SiveError(rc, last_errmsg() if message is None else message)


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


class _Handle:
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


class Batch:
    """What a callback must use.  index is None for analytic models (data
    size 0); otherwise a read-only uint64 view, shaped (n_groups, group_size)
    for an evaluation and (group_size,) for a gradient, valid only during the
    call.  seed is fresh in every call (for the callback's own noise)."""

    __slots__ = ("index", "n_groups", "group_size", "seed", "chain", "step")

    def __init__(self, b, grouped):
        self.n_groups, self.group_size = b.n_groups, b.group_size
        self.seed, self.chain, self.step = b.seed, b.chain, b.step
        if b.index:
            idx = _view(b.index, b.n_groups * b.group_size, False)
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
        with self._lock:
            if self.exc is None:
                self.exc = exc

    def take(self):
        with self._lock:
            exc, self.exc = self.exc, None
        return exc


_DTYPES = {
    np.dtype(np.float32): (c_float, _GRAD_F32, _EVAL_F32, _probe_set_callbacks_f32, _probe_run_f32),
    np.dtype(np.float64): (c_double, _GRAD_F64, _EVAL_F64, _probe_set_callbacks_f64, _probe_run_f64),
}


def _option(opt):
    if isinstance(opt, str):
        return Option[opt.upper()]
    return Option(opt)


class Probe(_Handle):
    """A probe for a model with dim parameters.  Keyword arguments set
    options by name: Probe(10, t=1e4, steps=20000, chains=4)."""

    _destroy = _probe_free

    def __init__(self, dim, **options):
        out = c_void_p()
        _check(_probe_new(byref(out), dim))
        super().__init__(out.value)
        self._failure = _Failure()
        self._keep = ()          # ctypes callbacks: must outlive every run
        self._progress_keep = None
        self._binding = None     # an MLP binding the C probe points into
        self._dtype = None
        for name, value in options.items():
            self.set(name, value)

    @property
    def dim(self):
        return int(_probe_dim(self._p))

    @property
    def errmsg(self):
        """Detail of the last failure on this probe ("" if none)."""
        return _text(_probe_errmsg(self._p))

    @property
    def callback_code(self):
        """Non-zero value returned by the callback that aborted the last run."""
        return int(_probe_callback_code(self._p))

    def _check(self, rc):
        if rc != 0:
            raise SiveError(rc, self.errmsg)

    def set(self, option, value):
        """Set an option (an Option or its name); the setter matches its type."""
        opt = _option(option)
        if opt in _DOUBLE_OPTIONS:
            self._check(_probe_set_double(self._p, opt, float(value)))
        else:
            self._check(_probe_set_int(self._p, opt, int(value)))
        return self

    def get(self, option):
        opt = _option(option)
        if opt in _DOUBLE_OPTIONS:
            v = c_double()
            self._check(_probe_get_double(self._p, opt, byref(v)))
        else:
            v = c_int64()
            self._check(_probe_get_int(self._p, opt, byref(v)))
        return v.value

    def set_callbacks(self, grad, evaluate, dtype=np.float64):
        """Register the model.

        grad(theta, batch) returns the gradient of the batch's mean loss
        (dim values) or a tuple (gradient, mean loss).
        evaluate(theta, batch) returns the batch.n_groups group mean losses.
        dtype (float32 or float64) is the precision of theta and gradients.
        """
        dt = np.dtype(dtype)
        if dt not in _DTYPES:
            raise TypeError("dtype must be float32 or float64")
        _, grad_type, eval_type, register, _ = _DTYPES[dt]
        failure = self._failure  # the trampolines must not hold the probe itself

        def grad_trampoline(theta_p, d, batch_p, grad_p, loss_p, user):
            try:
                res = grad(_view(theta_p, d, False), Batch(batch_p.contents, False))
                g, loss = res if isinstance(res, tuple) else (res, None)
                out = _view(grad_p, d, True)
                if np.shape(g) != out.shape:
                    raise ValueError(f"gradient has shape {np.shape(g)}, expected {out.shape}")
                out[:] = g
                if loss is not None:
                    loss_p[0] = loss
                return 0
            except BaseException as e:  # KeyboardInterrupt too: stop the run cleanly
                failure.set(e)
                return 1

        def eval_trampoline(theta_p, d, batch_p, loss_p, user):
            try:
                b = batch_p.contents
                res = evaluate(_view(theta_p, d, False), Batch(b, True))
                out = _view(loss_p, b.n_groups, True)
                if np.shape(res) != out.shape:
                    raise ValueError(f"evaluate returned shape {np.shape(res)}, "
                                     f"expected ({b.n_groups},)")
                out[:] = res
                return 0
            except BaseException as e:
                failure.set(e)
                return 1

        keep = (grad_type(grad_trampoline), eval_type(eval_trampoline))
        self._check(register(self._p, keep[0], keep[1], None))
        self._keep, self._binding, self._dtype = keep, None, dt
        return self

    def set_progress(self, fn):
        """fn(chain, step, total) is called about every 1/1000 of a run;
        return True to cancel it.  None clears it."""
        if fn is None:
            self._check(_probe_set_progress(self._p, _PROGRESS(), None))
            self._progress_keep = None
            return self
        failure = self._failure

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

    def bind_mlp(self, mlp, train, max_chains=0, blis_threads=1):
        """Let this probe sample the reference MLP on the data set train
        (registers float32 callbacks and the data size).  The returned
        Binding is kept alive by the probe."""
        out = c_void_p()
        self._check(_mlp_probe_bind(byref(out), self._p, mlp._p, train._p,
                                    max_chains, blis_threads))
        binding = Binding(out.value, mlp, train)
        self._keep, self._binding, self._dtype = (), binding, np.dtype(np.float32)
        return binding

    def run(self, theta_star):
        """Run the chains from theta_star (converted to the callbacks' dtype;
        only read).  Returns a Result; raises SiveError on failure (with the
        partial result for a divergence or a cancel) or re-raises the
        exception a callback raised."""
        if self._binding is not None and self._binding.closed:
            raise SiveError(Status.STATE, "the MLP binding of this probe was closed: "
                                          "register callbacks again")
        # Without callbacks, run as float64 and let the library explain.
        dt = self._dtype or np.dtype(np.float64)
        ctype, _, _, _, run = _DTYPES[dt]
        theta = _array(theta_star, dt, (self.dim,), "theta_star")
        out = c_void_p()
        self._failure.take()
        rc = run(self._p, _ptr(theta, ctype), byref(out))
        result = Result(out.value) if out.value else None
        exc = self._failure.take()
        if exc is not None:
            if result is not None:
                result.close()
            if hasattr(exc, "add_note"):  # Python >= 3.11
                exc.add_note(f"(raised in a libsive callback: {self.errmsg})")
            raise exc
        if rc != 0:
            raise SiveError(rc, self.errmsg, result)
        return result


class Result(_Handle):
    """Estimators, diagnostics and traces of one run (immutable)."""

    _destroy = _result_free

    def stat(self, stat, chain=SUMMARY):
        """A statistic of one chain, or with SUMMARY the mean over chains."""
        return _result_stat(self._p, Stat(stat), chain)

    def stat_std(self, stat):
        """Standard deviation of a statistic over the finished chains."""
        return _result_stat_std(self._p, Stat(stat))

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

    def chain_status(self, chain):
        """(ChainStatus, step at which the chain stopped)."""
        step = c_int64()
        status = _result_chain_status(self._p, chain, byref(step))
        return ChainStatus(status), step.value

    def trace(self, which, chain):
        """A copy of one chain's per-step trace (float64, one per step run)."""
        n = c_size_t()
        p = _result_trace(self._p, Trace(which), chain, byref(n))
        if not p:
            raise SiveError(Status.INVALID_ARG, f"no trace {which!r} for chain {chain}")
        return _view(p, n.value, False).copy()

    def __repr__(self):
        if self.closed:
            return "Result(closed)"
        return (f"Result(lambda={self.lambda_hat:.4g} ± {self.mcse:.2g}, ess={self.ess:.0f}, "
                f"chains_ok={self.chains_ok}/{self.chains}, flags={self.flags!r})")


# ---------------------------------------------------------------------------
# Data sets
# ---------------------------------------------------------------------------


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
# Reference MLP, probe adapter, checkpoints
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
        out = np.empty(ix.size, np.float32)
        _check(_mlp_example_losses(self._p, work._p, _ptr(th, c_float), ds._p,
                                   _ptr(ix, c_uint64), ix.size, _ptr(out, c_float)))
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


class Binding(_Handle):
    """Connects an Mlp and a training Dataset to a Probe (Probe.bind_mlp)."""

    _destroy = _mlp_binding_free

    def __init__(self, ptr, mlp, train):
        super().__init__(ptr)
        self._refs = (mlp, train)  # the C binding borrows both


class CheckpointMeta(NamedTuple):
    epoch: int = 0
    seed: int = 0
    train_loss: float = math.nan
    test_loss: float = math.nan


def save_checkpoint(path, mlp, theta, meta=None):
    """Write an atomic, checksummed checkpoint of theta (float32)."""
    m = CheckpointMeta() if meta is None else meta
    th = mlp._theta(theta)
    c = _CheckpointMeta(m.epoch, m.seed, m.train_loss, m.test_loss)
    _check(_checkpoint_save(_path(path), mlp._p, _ptr(th, c_float), byref(c)))


def load_checkpoint(path):
    """(Mlp, theta as a float32 array, CheckpointMeta)."""
    m, theta_p, c = c_void_p(), _pf(), _CheckpointMeta()
    _check(_checkpoint_load(_path(path), byref(m), byref(theta_p), byref(c)))
    mlp = Mlp(_adopt=m.value)
    try:
        theta = _view(theta_p, mlp.dim, False).copy()
    finally:
        _free(theta_p)  # the library's allocator, not Python's
    return mlp, theta, CheckpointMeta(c.epoch, c.seed, c.train_loss, c.test_loss)
