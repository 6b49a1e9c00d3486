//! Safe Rust bindings for libsive's probe API (`include/sive/sive.h`).
//!
//! ```no_run
//! use sive::{Opt, Probe};
//! let mut probe = Probe::new(2)?;
//! probe.set(Opt::H(0.1))?.set(Opt::Steps(2000))?;
//! let r = probe.run(
//!     &[0.5f64, 0.5],
//!     |theta, _batch, grad| {
//!         grad.copy_from_slice(theta); // L = |theta|^2 / 2
//!         Ok(0.5 * theta.iter().map(|x| x * x).sum::<f64>())
//!     },
//!     |theta, _batch, losses| {
//!         losses.fill(0.5 * theta.iter().map(|x| x * x).sum::<f64>());
//!         Ok(())
//!     },
//! )?;
//! println!("lambda = {} ± {}", r.lambda(), r.mcse());
//! # Ok::<(), sive::Error>(())
//! ```
//!
//! The model is a pair of closures borrowed for the duration of one
//! [`Probe::run`]: no `'static` bound, no boxing.  A closure returns
//! `Err(code)` to abort the run (the library reports `SIVE_E_CALLBACK` and
//! keeps the code); a closure that panics also aborts it, the panic is
//! caught inside the `extern "C"` trampoline (it never unwinds through C)
//! and resumed by `run` once the library has returned.

pub mod ffi;

use std::any::Any;
use std::ffi::CStr;
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::slice;
use std::sync::Mutex;

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the library returns NUL-terminated strings (static or owned
    // by a live handle) and we copy them at once.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Static text of a status code.
pub fn strerror(status: i32) -> String {
    text(unsafe { ffi::sive_strerror(status) })
}

/// Version of the library actually linked, e.g. "0.1.0".
pub fn version() -> String {
    text(unsafe { ffi::sive_version_string() })
}

/// A failed libsive call: the status code and the library's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

impl Error {
    fn new(status: i32, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
        }
    }
    /// The thread's last error message: read right after the failing call.
    fn last(status: i32) -> Self {
        Error::new(status, text(unsafe { ffi::sive_last_errmsg() }))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", strerror(self.status))?;
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Probe options, each with the type the library expects (so a wrong
/// setter cannot be called).  Bounds are in sive.h.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Opt {
    T(f64),
    BaseLr(f64),
    H(f64),
    CH(f64),
    Steps(i64),
    BurnIn(f64),
    Groups(i64),
    EvalBatch(i64),
    GradBatch(i64),
    DataSize(i64),
    Chains(i64),
    Threads(i64),
    Seed(i64),
    Replacement(bool),
    EvalStride(i64),
    /// NaN clears the anchor.
    Anchor(f64),
}

/// Statistics of a [`ProbeResult`] (see docs/theory.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Stat {
    Sive = 0,
    SiveUnclipped,
    RawVariance,
    OnlineMean,
    AnchoredMean,
    TailMeanLoss,
    TailMinLoss,
    NoiseCorrection,
    NoiseCorrectionStd,
    NoiseCorrectionStdGauss,
    Mcse,
    Ess,
    Rhat,
    H,
    TetherStep,
    GradNorm2Start,
    SlopeProxy,
    RmsDispRelH,
    TailLength,
}

/// Per-step traces of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Trace {
    Lbar = 0,
    S2,
    GradLoss,
    GradNorm,
    Disp,
}

/// How a chain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainStatus {
    Ok,
    Diverged,
    Callback,
    Aborted,
    Invalid,
}

/// The examples a callback must use (valid during the call only).
#[derive(Debug)]
pub struct Batch<'a> {
    /// `None` for an analytic model (data size 0); otherwise
    /// `n_groups * group_size` indices, group-major.
    pub index: Option<&'a [u64]>,
    pub n_groups: usize,
    pub group_size: usize,
    /// Fresh in every call: seed for the callback's own randomness.
    pub seed: u64,
    pub chain: i32,
    pub step: i64,
}

impl<'a> Batch<'a> {
    /// # Safety
    /// `b` must be the batch the library passed to the current callback.
    unsafe fn from_raw(b: &'a ffi::sive_batch) -> Self {
        let n = b.n_groups * b.group_size;
        Batch {
            index: (!b.index.is_null()).then(|| slice::from_raw_parts(b.index, n)),
            n_groups: b.n_groups,
            group_size: b.group_size,
            seed: b.seed,
            chain: b.chain,
            step: b.step,
        }
    }

    /// The indices of group `i` (`None` without a data set).
    pub fn group(&self, i: usize) -> Option<&'a [u64]> {
        self.index
            .map(|ix| &ix[i * self.group_size..(i + 1) * self.group_size])
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// Parameter precision: `f32` or `f64` (selects the `_f32`/`_f64` C calls).
pub trait Real: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    unsafe fn register(
        p: *mut ffi::sive_probe,
        grad: unsafe extern "C" fn(
            *const Self,
            usize,
            *const ffi::sive_batch,
            *mut Self,
            *mut f64,
            *mut c_void,
        ) -> c_int,
        eval: unsafe extern "C" fn(
            *const Self,
            usize,
            *const ffi::sive_batch,
            *mut f64,
            *mut c_void,
        ) -> c_int,
        user: *mut c_void,
    ) -> c_int;
    #[doc(hidden)]
    unsafe fn run(
        p: *mut ffi::sive_probe,
        theta: *const Self,
        out: *mut *mut ffi::sive_result,
    ) -> c_int;
}

impl Real for f32 {
    unsafe fn register(
        p: *mut ffi::sive_probe,
        grad: ffi::sive_grad_f32_fn,
        eval: ffi::sive_eval_f32_fn,
        user: *mut c_void,
    ) -> c_int {
        ffi::sive_probe_set_callbacks_f32(p, Some(grad), Some(eval), user)
    }
    unsafe fn run(
        p: *mut ffi::sive_probe,
        theta: *const f32,
        out: *mut *mut ffi::sive_result,
    ) -> c_int {
        ffi::sive_probe_run_f32(p, theta, out)
    }
}

impl Real for f64 {
    unsafe fn register(
        p: *mut ffi::sive_probe,
        grad: ffi::sive_grad_f64_fn,
        eval: ffi::sive_eval_f64_fn,
        user: *mut c_void,
    ) -> c_int {
        ffi::sive_probe_set_callbacks_f64(p, Some(grad), Some(eval), user)
    }
    unsafe fn run(
        p: *mut ffi::sive_probe,
        theta: *const f64,
        out: *mut *mut ffi::sive_result,
    ) -> c_int {
        ffi::sive_probe_run_f64(p, theta, out)
    }
}

/// What the trampolines see through `user`: the borrowed closures and the
/// first panic (chains may run on several threads, hence the mutex).
struct Ctx<'a, T, G, E> {
    grad: &'a G,
    eval: &'a E,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    _t: PhantomData<fn(&T)>,
}

impl<T, G, E> Ctx<'_, T, G, E> {
    /// Turn a closure's outcome into the callback's status, never unwinding.
    fn status(&self, outcome: std::thread::Result<Result<(), i32>>) -> c_int {
        match outcome {
            Ok(Ok(())) => 0,
            Ok(Err(code)) => {
                if code == 0 {
                    1
                } else {
                    code
                }
            }
            Err(payload) => {
                if let Ok(mut slot) = self.panic.lock() {
                    slot.get_or_insert(payload);
                }
                1
            }
        }
    }
}

unsafe extern "C" fn grad_trampoline<T, G, E>(
    theta: *const T,
    dim: usize,
    batch: *const ffi::sive_batch,
    grad: *mut T,
    loss: *mut f64,
    user: *mut c_void,
) -> c_int
where
    T: Real,
    G: Fn(&[T], &Batch, &mut [T]) -> Result<f64, i32> + Sync,
{
    // SAFETY: user is the Ctx that run() keeps alive during the library
    // call; the pointers are valid for dim values during this call.
    let ctx = &*(user as *const Ctx<T, G, E>);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let l = (ctx.grad)(
            slice::from_raw_parts(theta, dim),
            &Batch::from_raw(&*batch),
            slice::from_raw_parts_mut(grad, dim),
        )?;
        *loss = l;
        Ok(())
    }));
    ctx.status(outcome)
}

unsafe extern "C" fn eval_trampoline<T, G, E>(
    theta: *const T,
    dim: usize,
    batch: *const ffi::sive_batch,
    group_loss: *mut f64,
    user: *mut c_void,
) -> c_int
where
    T: Real,
    E: Fn(&[T], &Batch, &mut [f64]) -> Result<(), i32> + Sync,
{
    let ctx = &*(user as *const Ctx<T, G, E>);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let b = &*batch;
        (ctx.eval)(
            slice::from_raw_parts(theta, dim),
            &Batch::from_raw(b),
            slice::from_raw_parts_mut(group_loss, b.n_groups),
        )
    }));
    ctx.status(outcome)
}

/// A probe handle: options plus runs.  Movable between threads, used by
/// one at a time (the C handle's rule), hence `Send` and not `Sync`.
pub struct Probe {
    raw: NonNull<ffi::sive_probe>,
}

unsafe impl Send for Probe {}

impl Probe {
    /// A probe for a model with `dim` parameters.
    pub fn new(dim: usize) -> Result<Self, Error> {
        let mut raw = ptr::null_mut();
        let rc = unsafe { ffi::sive_probe_new(&mut raw, dim) };
        if rc != 0 {
            return Err(Error::last(rc));
        }
        Ok(Probe {
            raw: NonNull::new(raw).expect("sive_probe_new returned OK and NULL"),
        })
    }

    pub fn dim(&self) -> usize {
        unsafe { ffi::sive_probe_dim(self.raw.as_ptr()) }
    }

    /// Detail of the last failure on this probe ("" if none).
    pub fn errmsg(&self) -> String {
        text(unsafe { ffi::sive_probe_errmsg(self.raw.as_ptr()) })
    }

    /// The code returned by the callback that aborted the last run (0 if none).
    pub fn callback_code(&self) -> i32 {
        unsafe { ffi::sive_probe_callback_code(self.raw.as_ptr()) }
    }

    fn check(&self, rc: c_int) -> Result<(), Error> {
        if rc == 0 {
            Ok(())
        } else {
            Err(Error::new(rc, self.errmsg()))
        }
    }

    /// Set an option; chainable: `p.set(Opt::T(1e4))?.set(Opt::Steps(1000))?`.
    pub fn set(&mut self, opt: Opt) -> Result<&mut Self, Error> {
        use ffi::*;
        let p = self.raw.as_ptr();
        let rc = unsafe {
            match opt {
                Opt::T(v) => sive_probe_set_double(p, SIVE_OPT_T, v),
                Opt::BaseLr(v) => sive_probe_set_double(p, SIVE_OPT_BASE_LR, v),
                Opt::H(v) => sive_probe_set_double(p, SIVE_OPT_H, v),
                Opt::CH(v) => sive_probe_set_double(p, SIVE_OPT_C_H, v),
                Opt::Steps(v) => sive_probe_set_int(p, SIVE_OPT_STEPS, v),
                Opt::BurnIn(v) => sive_probe_set_double(p, SIVE_OPT_BURN_IN, v),
                Opt::Groups(v) => sive_probe_set_int(p, SIVE_OPT_GROUPS, v),
                Opt::EvalBatch(v) => sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, v),
                Opt::GradBatch(v) => sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, v),
                Opt::DataSize(v) => sive_probe_set_int(p, SIVE_OPT_DATA_SIZE, v),
                Opt::Chains(v) => sive_probe_set_int(p, SIVE_OPT_CHAINS, v),
                Opt::Threads(v) => sive_probe_set_int(p, SIVE_OPT_THREADS, v),
                Opt::Seed(v) => sive_probe_set_int(p, SIVE_OPT_SEED, v),
                Opt::Replacement(v) => sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, v as i64),
                Opt::EvalStride(v) => sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, v),
                Opt::Anchor(v) => sive_probe_set_double(p, SIVE_OPT_ANCHOR, v),
            }
        };
        self.check(rc)?;
        Ok(self)
    }

    /// Read a double-typed option (`ffi::SIVE_OPT_*`).
    pub fn get_f64(&self, opt: ffi::sive_option) -> Result<f64, Error> {
        let mut v = 0.0;
        self.check(unsafe { ffi::sive_probe_get_double(self.raw.as_ptr(), opt, &mut v) })?;
        Ok(v)
    }

    /// Read an int-typed option (`ffi::SIVE_OPT_*`).
    pub fn get_i64(&self, opt: ffi::sive_option) -> Result<i64, Error> {
        let mut v = 0;
        self.check(unsafe { ffi::sive_probe_get_int(self.raw.as_ptr(), opt, &mut v) })?;
        Ok(v)
    }

    /// Run the chains from `theta_star` with the model given as two closures:
    ///
    /// - `grad(theta, batch, grad_out)` writes the gradient of the batch's
    ///   mean loss and returns that loss (`f64::NAN` if unknown);
    /// - `eval(theta, batch, losses)` writes the `batch.n_groups` group losses.
    ///
    /// Either returns `Err(code)` (non-zero) to abort the run.  They must be
    /// `Sync`: with `Opt::Threads(n > 1)` chains call them concurrently.
    ///
    /// Fails with the library's status and message; a partial result (some
    /// chains diverged or were aborted) is dropped.  If a closure panicked,
    /// the panic is resumed here after the library returned.
    pub fn run<T, G, E>(&mut self, theta_star: &[T], grad: G, eval: E) -> Result<ProbeResult, Error>
    where
        T: Real,
        G: Fn(&[T], &Batch, &mut [T]) -> Result<f64, i32> + Sync,
        E: Fn(&[T], &Batch, &mut [f64]) -> Result<(), i32> + Sync,
    {
        if theta_star.len() != self.dim() {
            return Err(Error::new(
                ffi::SIVE_E_INVALID_ARG,
                format!(
                    "theta_star has {} values, the probe {}",
                    theta_star.len(),
                    self.dim()
                ),
            ));
        }
        let ctx = Ctx::<T, G, E> {
            grad: &grad,
            eval: &eval,
            panic: Mutex::new(None),
            _t: PhantomData,
        };
        let user = &ctx as *const Ctx<T, G, E> as *mut c_void;
        let p = self.raw.as_ptr();
        // Registered for this run only: afterwards the C probe holds a stale
        // `user`, which no safe method can reach (every run re-registers).
        self.check(unsafe {
            T::register(
                p,
                grad_trampoline::<T, G, E>,
                eval_trampoline::<T, G, E>,
                user,
            )
        })?;
        let mut out = ptr::null_mut();
        let rc = unsafe { T::run(p, theta_star.as_ptr(), &mut out) };
        let result = NonNull::new(out).map(|raw| ProbeResult { raw });
        let panicked = ctx
            .panic
            .into_inner()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some(payload) = panicked {
            drop(result);
            panic::resume_unwind(payload);
        }
        self.check(rc)?;
        result.ok_or_else(|| Error::new(ffi::SIVE_E_STATE, "run returned OK without a result"))
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        unsafe { ffi::sive_probe_free(self.raw.as_ptr()) }
    }
}

/// Estimators, diagnostics and traces of one run.  Immutable, so it may be
/// read from many threads (`Sync`).
pub struct ProbeResult {
    raw: NonNull<ffi::sive_result>,
}

unsafe impl Send for ProbeResult {}
unsafe impl Sync for ProbeResult {}

impl ProbeResult {
    fn r(&self) -> *const ffi::sive_result {
        self.raw.as_ptr()
    }

    /// A statistic of one chain, or (`None`) the summary over chains.
    pub fn stat(&self, stat: Stat, chain: Option<i32>) -> f64 {
        unsafe {
            ffi::sive_result_stat(self.r(), stat as c_int, chain.unwrap_or(ffi::SIVE_SUMMARY))
        }
    }
    /// Standard deviation of a statistic over the finished chains.
    pub fn stat_std(&self, stat: Stat) -> f64 {
        unsafe { ffi::sive_result_stat_std(self.r(), stat as c_int) }
    }
    pub fn lambda(&self) -> f64 {
        unsafe { ffi::sive_result_lambda(self.r()) }
    }
    pub fn lambda_std(&self) -> f64 {
        unsafe { ffi::sive_result_lambda_std(self.r()) }
    }
    pub fn mcse(&self) -> f64 {
        unsafe { ffi::sive_result_mcse(self.r()) }
    }
    pub fn ess(&self) -> f64 {
        unsafe { ffi::sive_result_ess(self.r()) }
    }
    pub fn rhat(&self) -> f64 {
        unsafe { ffi::sive_result_rhat(self.r()) }
    }
    pub fn noise_correction(&self) -> f64 {
        unsafe { ffi::sive_result_noise_correction(self.r()) }
    }
    pub fn noise_correction_std(&self) -> f64 {
        unsafe { ffi::sive_result_noise_correction_std(self.r()) }
    }
    pub fn chains(&self) -> i32 {
        unsafe { ffi::sive_result_chains(self.r()) }
    }
    pub fn chains_ok(&self) -> i32 {
        unsafe { ffi::sive_result_chains_ok(self.r()) }
    }
    pub fn steps(&self) -> i64 {
        unsafe { ffi::sive_result_steps(self.r()) }
    }
    pub fn eval_stride(&self) -> i64 {
        unsafe { ffi::sive_result_eval_stride(self.r()) }
    }

    /// How chain `chain` ended and at which step.
    pub fn chain_status(&self, chain: i32) -> (ChainStatus, i64) {
        let mut step = 0;
        let s = unsafe { ffi::sive_result_chain_status(self.r(), chain, &mut step) };
        let status = match s {
            ffi::SIVE_CHAIN_OK => ChainStatus::Ok,
            ffi::SIVE_CHAIN_DIVERGED => ChainStatus::Diverged,
            ffi::SIVE_CHAIN_CALLBACK => ChainStatus::Callback,
            ffi::SIVE_CHAIN_ABORTED => ChainStatus::Aborted,
            _ => ChainStatus::Invalid,
        };
        (status, step)
    }

    /// A chain's per-step trace, borrowed from the result.
    pub fn trace(&self, which: Trace, chain: i32) -> Option<&[f64]> {
        let mut len = 0;
        let p = unsafe { ffi::sive_result_trace(self.r(), which as c_int, chain, &mut len) };
        // SAFETY: owned by the result, valid while self is borrowed.
        (!p.is_null()).then(|| unsafe { slice::from_raw_parts(p, len) })
    }

    /// Health flags (`ffi::SIVE_FLAG_*` bits; 0 = nothing to report).
    pub fn flags(&self) -> u32 {
        unsafe { ffi::sive_result_flags(self.r()) }
    }

    /// Every raised flag explained, one line each ("" when healthy).
    pub fn health(&self) -> String {
        text(unsafe { ffi::sive_result_health(self.r()) })
    }
}

impl Drop for ProbeResult {
    fn drop(&mut self) {
        unsafe { ffi::sive_result_free(self.raw.as_ptr()) }
    }
}

/// Plain-language description of one flag bit.
pub fn flag_string(flag: u32) -> String {
    text(unsafe { ffi::sive_flag_string(flag) })
}

/// The library's PCG32 generator, for a callback's own noise.
#[derive(Debug, Clone, Copy)]
pub struct Rng(ffi::sive_rng);

impl Rng {
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut g = ffi::sive_rng::default();
        unsafe { ffi::sive_rng_seed(&mut g, seed, stream) };
        Rng(g)
    }
    pub fn next_u32(&mut self) -> u32 {
        unsafe { ffi::sive_rng_next(&mut self.0) }
    }
    pub fn uniform(&mut self) -> f64 {
        unsafe { ffi::sive_rng_uniform(&mut self.0) }
    }
    pub fn fill_normals(&mut self, out: &mut [f64]) {
        unsafe { ffi::sive_rng_normals(&mut self.0, out.as_mut_ptr(), out.len()) }
    }
}

/// Geyer effective sample size of a series.
pub fn stats_ess(x: &[f64]) -> f64 {
    unsafe { ffi::sive_stats_ess(x.as_ptr(), x.len()) }
}

/// Batch-means Monte Carlo standard error of the mean of a series.
pub fn stats_mcse(x: &[f64]) -> f64 {
    unsafe { ffi::sive_stats_mcse(x.as_ptr(), x.len()) }
}
