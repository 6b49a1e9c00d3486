//! Safe Rust bindings for libsive's probe API (`include/sive/sive.h`, 0.2).
//!
//! ```no_run
//! use sive::{Model, Probe};
//! // L = |theta|^2 / 2, observed without noise: an analytic model.
//! let model = Model::grouped(
//!     2,
//!     |theta: &[f64], _batch: &sive::Batch, grad: &mut [f64]| {
//!         grad.copy_from_slice(theta);
//!         Ok(0.5 * theta.iter().map(|x| x * x).sum::<f64>())
//!     },
//!     |theta: &[f64], _batch: &sive::Batch, losses: &mut [f64]| {
//!         losses.fill(0.5 * theta.iter().map(|x| x * x).sum::<f64>());
//!         Ok(())
//!     },
//! );
//! let mut probe = Probe::new()?;
//! probe.set("h", 0.1)?.set("steps", 2000)?;
//! let r = probe.run(&model, &[0.5f64, 0.5])?;
//! println!("lambda = {} (MCSE {})", r.lambda(), r.mcse());
//! # Ok::<(), sive::Error>(())
//! ```
//!
//! A [`Model`] owns two closures (they may borrow their environment): the
//! gradient and either per-example losses (the library draws the groups,
//! evaluates each distinct example once and forms the group means) or
//! per-group losses (for analytic models).  [`Probe::run`] describes it to
//! the library as a `sive_model` for the duration of one run.  A closure
//! returns `Err(code)` to abort the run (the library reports
//! `SIVE_E_CALLBACK` and keeps the code; call [`set_errmsg`] first to say
//! why).  A closure that panics also aborts it: the panic is caught inside
//! the `extern "C"` trampoline (it never unwinds through C), its message is
//! handed to the library, and `run` resumes the panic once the library has
//! returned.
//!
//! Options are set by name and described by the library itself
//! ([`options`]): this crate does not repeat their list.

pub mod ffi;

use std::any::Any;
use std::ffi::{CStr, CString};
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

/// A string in the library's static storage (names, option docs).
fn static_text(p: *const c_char) -> Option<&'static str> {
    // SAFETY: sive.h documents these strings as static and never modified.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("?"))
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).expect("NULs were replaced")
}

/// Static text of a status code.
pub fn strerror(status: i32) -> String {
    text(unsafe { ffi::sive_strerror(status) })
}

/// Version of the library actually linked, e.g. "0.3.0".
pub fn version() -> String {
    text(unsafe { ffi::sive_version_string() })
}

/// Set the calling thread's last-error message: a closure that returns
/// `Err(code)` may call it first, and the run's message then ends with it.
pub fn set_errmsg(msg: &str) {
    let c = c_string(msg);
    unsafe { ffi::sive_set_errmsg(c.as_ptr()) }
}

/// A failed libsive call or run: the status code and the library's message.
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

// ---------------------------------------------------------------------------
// Options, as the library describes them
// ---------------------------------------------------------------------------

/// An option's value: the type follows the option (see [`OptionInfo`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    Double(f64),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v.into())
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(v.into())
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Int(v.into())
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Double(v)
    }
}

/// The type of an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionType {
    Int,
    Double,
}

/// What the library says about one option (`sive_option_info`).  `lo`,
/// `hi` and `default` have the option's type; a double option without a
/// default has `Value::Double(NaN)`.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionInfo {
    pub id: ffi::sive_option,
    pub name: &'static str,
    pub kind: OptionType,
    pub lo: Value,
    pub hi: Value,
    pub lo_open: bool,
    pub hi_open: bool,
    pub default: Value,
    pub doc: &'static str,
}

impl OptionInfo {
    /// # Safety
    /// `p` must be NULL or a pointer the library's option table gave.
    unsafe fn from_raw(p: *const ffi::sive_option_info) -> Option<Self> {
        let i = p.as_ref()?;
        let int = i.type_ == ffi::SIVE_TYPE_INT;
        let pick = |a: i64, b: f64| if int { Value::Int(a) } else { Value::Double(b) };
        Some(OptionInfo {
            id: i.id,
            name: static_text(i.name).unwrap_or(""),
            kind: if int {
                OptionType::Int
            } else {
                OptionType::Double
            },
            lo: pick(i.int_lo, i.double_lo),
            hi: pick(i.int_hi, i.double_hi),
            lo_open: i.lo_open != 0,
            hi_open: i.hi_open != 0,
            default: pick(i.int_default, i.double_default),
            doc: static_text(i.doc).unwrap_or(""),
        })
    }
}

/// Every option the library has, in its order.
pub fn options() -> Vec<OptionInfo> {
    (0..)
        .map_while(|i| unsafe { OptionInfo::from_raw(ffi::sive_option_at(i)) })
        .collect()
}

/// One option by its machine name (e.g. "base_lr").
pub fn option_info(name: &str) -> Result<OptionInfo, Error> {
    let c = c_string(name);
    let mut id = 0;
    let rc = unsafe { ffi::sive_option_by_name(c.as_ptr(), &mut id) };
    if rc != 0 {
        return Err(Error::last(rc));
    }
    unsafe { OptionInfo::from_raw(ffi::sive_option_info_get(id)) }
        .ok_or_else(|| Error::new(ffi::SIVE_E_INVALID_ARG, format!("no info for '{name}'")))
}

// ---------------------------------------------------------------------------
// Names of statistics, traces, chain states and flags
// ---------------------------------------------------------------------------

/// Statistics of a [`ProbeResult`] (see docs/theory.md).  [`ProbeResult::stats`]
/// lists every statistic the linked library has, by name.
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
    SiveEss,
    HalvesZ,
    DlambdaDlogH,
    DlambdaDlogHSe,
    StepCurvature,
    SiveStep0,
    McseStep0,
    SiveFullBatch,
    McseFullBatch,
    GradNoiseClipped,
    /// With the experimental option `anneal` > 1 (summary only).
    StartZ,
    StartZLambda,
    StartZMean,
    /// With the experimental option `auto_step` > 0.
    AutoStepGrads,
    AutoStepRescaled,
}

impl Stat {
    /// The library's machine name ("sive_unclipped", ...): the JSON key.
    pub fn name(self) -> &'static str {
        static_text(unsafe { ffi::sive_stat_name(self as c_int) }).unwrap_or("")
    }
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

impl Trace {
    /// The library's machine name ("lbar", ...).
    pub fn name(self) -> &'static str {
        static_text(unsafe { ffi::sive_trace_name(self as c_int) }).unwrap_or("")
    }
}

/// How a chain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainStatus {
    Ok,
    Diverged,
    Callback,
    Aborted,
    /// Outside the run's chain range (`chain_begin` .. `chain_end`): no traces.
    NotRun,
    Invalid,
}

impl ChainStatus {
    fn raw(self) -> ffi::sive_chain_status {
        match self {
            ChainStatus::Ok => ffi::SIVE_CHAIN_OK,
            ChainStatus::Diverged => ffi::SIVE_CHAIN_DIVERGED,
            ChainStatus::Callback => ffi::SIVE_CHAIN_CALLBACK,
            ChainStatus::Aborted => ffi::SIVE_CHAIN_ABORTED,
            ChainStatus::NotRun => ffi::SIVE_CHAIN_NOT_RUN,
            ChainStatus::Invalid => ffi::SIVE_CHAIN_INVALID,
        }
    }
    /// The library's machine name ("ok", "diverged", ...).
    pub fn name(self) -> &'static str {
        static_text(unsafe { ffi::sive_chain_status_string(self.raw()) }).unwrap_or("")
    }
}

/// Plain-language description of one flag bit.
pub fn flag_string(flag: u32) -> String {
    text(unsafe { ffi::sive_flag_string(flag) })
}

/// Machine name of one flag bit ("low_ess", ...), `None` if unknown.
pub fn flag_name(flag: u32) -> Option<&'static str> {
    static_text(unsafe { ffi::sive_flag_name(flag) })
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/// The examples a callback must use (valid during the call only).
#[derive(Debug)]
pub struct Batch<'a> {
    /// `None` for an analytic model (n_examples 0); otherwise
    /// `n_groups * group_size` indices, group-major.  In a per-example loss
    /// call they are distinct and ascending (`n_groups` is 1).
    pub index: Option<&'a [u64]>,
    pub n_groups: usize,
    pub group_size: usize,
    /// Fresh in every call: seed for the callback's own randomness.
    pub seed: u64,
    pub chain: i32,
    /// The library thread making the call, 0 .. threads-1.
    pub worker: i32,
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
            worker: b.worker,
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

/// Parameter precision: `f32` or `f64` (the model's dtype).
pub trait Real: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    const DTYPE: ffi::sive_dtype;
}

impl Real for f32 {
    const DTYPE: ffi::sive_dtype = ffi::SIVE_F32;
}

impl Real for f64 {
    const DTYPE: ffi::sive_dtype = ffi::SIVE_F64;
}

/// The precision of the model a result probed (`Result::dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F32,
    F64,
}

/// A model: `dim` parameters of type `T`, the gradient closure `G` and the
/// loss closure `L`, which is per-example or per-group (see the
/// constructors).  Both must be `Sync`: with `threads > 1` chains call them
/// concurrently.
pub struct Model<T, G, L> {
    dim: usize,
    n_examples: u64,
    grad: G,
    losses: L,
    per_example: bool,
    _t: PhantomData<fn(&T)>,
}

impl<T, G, L> Model<T, G, L>
where
    T: Real,
    G: Fn(&[T], &Batch, &mut [T]) -> Result<f64, i32> + Sync,
    L: Fn(&[T], &Batch, &mut [f64]) -> Result<(), i32> + Sync,
{
    /// `grad(theta, batch, grad_out)` writes the gradient of the batch's
    /// mean loss and returns that loss (`f64::NAN` if unknown);
    /// `group_loss(theta, batch, losses)` writes the `batch.n_groups` group
    /// mean losses.  No data set (n_examples 0, `batch.index` is `None`)
    /// unless [`Model::with_examples`] gives one.
    pub fn grouped(dim: usize, grad: G, group_loss: L) -> Self {
        Model {
            dim,
            n_examples: 0,
            grad,
            losses: group_loss,
            per_example: false,
            _t: PhantomData,
        }
    }

    /// A model on a data set of `n_examples`: `loss(theta, batch, losses)`
    /// writes the loss of each of the `batch.group_size` examples in
    /// `batch.index`; the library forms the group means.
    pub fn per_example(dim: usize, n_examples: u64, grad: G, loss: L) -> Self {
        Model {
            n_examples,
            per_example: true,
            ..Model::grouped(dim, grad, loss)
        }
    }

    /// The data-set size the library draws example indices from.
    pub fn with_examples(mut self, n_examples: u64) -> Self {
        self.n_examples = n_examples;
        self
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn n_examples(&self) -> u64 {
        self.n_examples
    }

    /// The `sive_model` of one run: `ctx` is what the trampolines see.
    fn describe(&self, ctx: &Ctx<T, G, L>) -> Result<ffi::sive_model, Error> {
        // SAFETY: every field of sive_model is valid when zeroed (NULL
        // pointers, None callbacks); sive_model_init zeroes it again.
        let mut m: ffi::sive_model = unsafe { std::mem::zeroed() };
        let rc = unsafe { ffi::sive_model_init(&mut m, std::mem::size_of::<ffi::sive_model>()) };
        if rc != 0 {
            return Err(Error::last(rc));
        }
        m.dtype = T::DTYPE;
        m.dim = self.dim;
        m.n_examples = self.n_examples;
        m.grad = Some(grad_trampoline::<T, G, L>);
        if self.per_example {
            m.loss = Some(loss_trampoline::<T, G, L>);
        } else {
            m.group_loss = Some(loss_trampoline::<T, G, L>);
        }
        m.user = ctx as *const Ctx<T, G, L> as *mut c_void;
        Ok(m)
    }
}

/// What the trampolines see through `user`: the model and the first panic
/// (chains may run on several threads, hence the mutex).
struct Ctx<'a, T, G, L> {
    model: &'a Model<T, G, L>,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

impl<T, G, L> Ctx<'_, T, G, L> {
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
                // The run's message then says what happened.
                set_errmsg(&format!("panic: {}", panic_text(payload.as_ref())));
                if let Ok(mut slot) = self.panic.lock() {
                    slot.get_or_insert(payload);
                }
                1
            }
        }
    }
}

unsafe extern "C" fn grad_trampoline<T, G, L>(
    theta: *const c_void,
    dim: usize,
    batch: *const ffi::sive_batch,
    grad: *mut c_void,
    loss: *mut f64,
    user: *mut c_void,
) -> c_int
where
    T: Real,
    G: Fn(&[T], &Batch, &mut [T]) -> Result<f64, i32> + Sync,
{
    // SAFETY: user is the Ctx that run() keeps alive during the library
    // call; theta and grad hold dim values of the model's dtype, T.
    let ctx = &*(user as *const Ctx<T, G, L>);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let l = (ctx.model.grad)(
            slice::from_raw_parts(theta as *const T, dim),
            &Batch::from_raw(&*batch),
            slice::from_raw_parts_mut(grad as *mut T, dim),
        )?;
        *loss = l;
        Ok(())
    }));
    ctx.status(outcome)
}

/// Serves both the per-example and the per-group form: only the number of
/// values written differs.
unsafe extern "C" fn loss_trampoline<T, G, L>(
    theta: *const c_void,
    dim: usize,
    batch: *const ffi::sive_batch,
    out: *mut f64,
    user: *mut c_void,
) -> c_int
where
    T: Real,
    L: Fn(&[T], &Batch, &mut [f64]) -> Result<(), i32> + Sync,
{
    let ctx = &*(user as *const Ctx<T, G, L>);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let b = &*batch;
        let n = if ctx.model.per_example {
            b.group_size
        } else {
            b.n_groups
        };
        (ctx.model.losses)(
            slice::from_raw_parts(theta as *const T, dim),
            &Batch::from_raw(b),
            slice::from_raw_parts_mut(out, n),
        )
    }));
    ctx.status(outcome)
}

// ---------------------------------------------------------------------------
// The probe
// ---------------------------------------------------------------------------

/// A probe handle: options plus runs.  Movable between threads, used by
/// one at a time (the C handle's rule), hence `Send` and not `Sync`.
pub struct Probe {
    raw: NonNull<ffi::sive_probe>,
}

unsafe impl Send for Probe {}

impl Probe {
    /// A probe with every option at its default.
    pub fn new() -> Result<Self, Error> {
        let mut raw = ptr::null_mut();
        let rc = unsafe { ffi::sive_probe_new(&mut raw) };
        if rc != 0 {
            return Err(Error::last(rc));
        }
        Ok(Probe {
            raw: NonNull::new(raw).expect("sive_probe_new returned OK and NULL"),
        })
    }

    /// Detail of the last failure on this probe ("" if none).
    pub fn errmsg(&self) -> String {
        text(unsafe { ffi::sive_probe_errmsg(self.raw.as_ptr()) })
    }

    fn check(&self, rc: c_int) -> Result<(), Error> {
        if rc == 0 {
            Ok(())
        } else {
            Err(Error::new(rc, self.errmsg()))
        }
    }

    /// Set an option by name; chainable: `p.set("t", 1e4)?.set("steps", 1000)?`.
    /// An integer is accepted for a double option, not the reverse.
    pub fn set(&mut self, name: &str, value: impl Into<Value>) -> Result<&mut Self, Error> {
        let info = option_info(name)?;
        let p = self.raw.as_ptr();
        let rc = match (info.kind, value.into()) {
            (OptionType::Int, Value::Int(v)) => unsafe { ffi::sive_probe_set_int(p, info.id, v) },
            (OptionType::Double, Value::Int(v)) => unsafe {
                ffi::sive_probe_set_double(p, info.id, v as f64)
            },
            (OptionType::Double, Value::Double(v)) => unsafe {
                ffi::sive_probe_set_double(p, info.id, v)
            },
            (OptionType::Int, Value::Double(v)) => {
                let msg = format!("option '{name}' takes an integer, not {v}");
                return Err(Error::new(ffi::SIVE_E_INVALID_ARG, msg));
            }
        };
        self.check(rc)?;
        Ok(self)
    }

    /// Set an option from text with the library's strict parser (an int
    /// option refuses "1e4").
    pub fn set_text(&mut self, name: &str, value: &str) -> Result<&mut Self, Error> {
        let (n, v) = (c_string(name), c_string(value));
        self.check(unsafe { ffi::sive_probe_set_text(self.raw.as_ptr(), n.as_ptr(), v.as_ptr()) })?;
        Ok(self)
    }

    /// Every option back to its default.
    pub fn reset(&mut self) -> Result<&mut Self, Error> {
        self.check(unsafe { ffi::sive_probe_reset(self.raw.as_ptr()) })?;
        Ok(self)
    }

    /// Run every later chain at the radius `r`'s search chose from the
    /// loss, with no search (a split run: each part takes the first part's
    /// radius and gives the same numbers, bit for bit, as a run that
    /// searched); `None` forgets it, as does [`Probe::reset`].  `r` may be
    /// dropped afterwards.  Fails when `r`'s radius was set (`h`, or a
    /// nonzero `c_h`) or its run did not complete; a later run is refused
    /// unless its options (threads and the chain range excepted), model
    /// and `theta_star` are `r`'s.
    pub fn set_radius_from(&mut self, r: Option<&ProbeResult>) -> Result<&mut Self, Error> {
        let raw = r.map_or(ptr::null(), |r| r.r());
        self.check(unsafe { ffi::sive_probe_set_radius_from(self.raw.as_ptr(), raw) })?;
        Ok(self)
    }

    /// An option's current value, typed as the option.
    pub fn get(&self, name: &str) -> Result<Value, Error> {
        let info = option_info(name)?;
        let p = self.raw.as_ptr();
        match info.kind {
            OptionType::Int => {
                let mut v = 0;
                self.check(unsafe { ffi::sive_probe_get_int(p, info.id, &mut v) })?;
                Ok(Value::Int(v))
            }
            OptionType::Double => {
                let mut v = 0.0;
                self.check(unsafe { ffi::sive_probe_get_double(p, info.id, &mut v) })?;
                Ok(Value::Double(v))
            }
        }
    }

    /// An int option's current value.
    pub fn get_i64(&self, name: &str) -> Result<i64, Error> {
        match self.get(name)? {
            Value::Int(v) => Ok(v),
            Value::Double(_) => Err(Error::new(
                ffi::SIVE_E_INVALID_ARG,
                format!("option '{name}' is double-typed"),
            )),
        }
    }

    /// A double option's current value (NaN for `h` in adaptive mode and an
    /// unset `anchor`).
    pub fn get_f64(&self, name: &str) -> Result<f64, Error> {
        match self.get(name)? {
            Value::Double(v) => Ok(v),
            Value::Int(_) => Err(Error::new(
                ffi::SIVE_E_INVALID_ARG,
                format!("option '{name}' is int-typed"),
            )),
        }
    }

    /// Run the chains of `model` from `theta_star` (only read).
    ///
    /// Fails when the library refuses the run (its status and the probe's
    /// message) and when the run ended early (diverged, callback error,
    /// cancelled: the run's status and message; the partial result is
    /// dropped, see [`Probe::run_partial`] to keep it).  If a closure
    /// panicked, the panic is resumed here after the library returned.
    pub fn run<T, G, L>(
        &mut self,
        model: &Model<T, G, L>,
        theta_star: &[T],
    ) -> Result<ProbeResult, Error>
    where
        T: Real,
        G: Fn(&[T], &Batch, &mut [T]) -> Result<f64, i32> + Sync,
        L: Fn(&[T], &Batch, &mut [f64]) -> Result<(), i32> + Sync,
    {
        let r = self.run_partial(model, theta_star)?;
        match r.status() {
            ffi::SIVE_OK => Ok(r),
            status => Err(Error::new(status, r.errmsg())),
        }
    }

    /// Like [`Probe::run`], but a run that ended early still returns its
    /// result: read [`ProbeResult::status`] and [`ProbeResult::errmsg`].
    pub fn run_partial<T, G, L>(
        &mut self,
        model: &Model<T, G, L>,
        theta_star: &[T],
    ) -> Result<ProbeResult, Error>
    where
        T: Real,
        G: Fn(&[T], &Batch, &mut [T]) -> Result<f64, i32> + Sync,
        L: Fn(&[T], &Batch, &mut [f64]) -> Result<(), i32> + Sync,
    {
        if theta_star.len() != model.dim {
            let msg = format!(
                "theta_star has {} values, the model {}",
                theta_star.len(),
                model.dim
            );
            return Err(Error::new(ffi::SIVE_E_INVALID_ARG, msg));
        }
        let ctx = Ctx {
            model,
            panic: Mutex::new(None),
        };
        // The description lives on this stack frame: the library keeps no
        // pointer to it (nor to ctx) once sive_probe_run returns.
        let m = model.describe(&ctx)?;
        let mut out = ptr::null_mut();
        let theta = theta_star.as_ptr() as *const c_void;
        let rc = unsafe { ffi::sive_probe_run(self.raw.as_ptr(), &m, theta, &mut out) };
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

impl fmt::Debug for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Probe").field("raw", &self.raw).finish()
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        unsafe { ffi::sive_probe_free(self.raw.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

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

    /// How the run ended: `ffi::SIVE_OK`, `SIVE_E_DIVERGED`,
    /// `SIVE_E_CALLBACK` or `SIVE_E_CANCELLED`.
    pub fn status(&self) -> i32 {
        unsafe { ffi::sive_result_status(self.r()) }
    }
    /// Why the run ended as it did ("" for OK).
    pub fn errmsg(&self) -> String {
        text(unsafe { ffi::sive_result_errmsg(self.r()) })
    }
    /// The non-zero code of the callback that stopped the run (0 if none).
    pub fn callback_code(&self) -> i32 {
        unsafe { ffi::sive_result_callback_code(self.r()) }
    }

    /// A statistic of one chain, or (`None`) the summary over chains.
    pub fn stat(&self, stat: Stat, chain: Option<i32>) -> f64 {
        self.stat_raw(stat as c_int, chain)
    }
    fn stat_raw(&self, stat: c_int, chain: Option<i32>) -> f64 {
        unsafe { ffi::sive_result_stat(self.r(), stat, chain.unwrap_or(ffi::SIVE_SUMMARY)) }
    }
    /// Every statistic the library has, keyed by its machine name (the
    /// JSON keys of the `sive` tool), for one chain or the summary.
    pub fn stats(&self, chain: Option<i32>) -> Vec<(&'static str, f64)> {
        (0..)
            .map_while(|s| static_text(unsafe { ffi::sive_stat_name(s) }).map(|n| (s, n)))
            .map(|(s, n)| (n, self.stat_raw(s, chain)))
            .collect()
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
    /// The precision of the model the run probed (`sive_result_dtype`);
    /// `None` only if the library reports none.
    pub fn dtype(&self) -> Option<Dtype> {
        match unsafe { ffi::sive_result_dtype(self.r()) } {
            ffi::SIVE_F32 => Some(Dtype::F32),
            ffi::SIVE_F64 => Some(Dtype::F64),
            _ => None,
        }
    }

    /// The value an option had in this run (frozen at its start).
    pub fn option(&self, name: &str) -> Result<Value, Error> {
        let info = option_info(name)?;
        let (rc, v) = match info.kind {
            OptionType::Int => {
                let mut v = 0;
                let rc = unsafe { ffi::sive_result_option_int(self.r(), info.id, &mut v) };
                (rc, Value::Int(v))
            }
            OptionType::Double => {
                let mut v = 0.0;
                let rc = unsafe { ffi::sive_result_option_double(self.r(), info.id, &mut v) };
                (rc, Value::Double(v))
            }
        };
        if rc != 0 {
            return Err(Error::last(rc));
        }
        Ok(v)
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
            ffi::SIVE_CHAIN_NOT_RUN => ChainStatus::NotRun,
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

    /// Machine names of the raised flags.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let f = self.flags();
        (0..32)
            .map(|k| 1u32 << k)
            .filter(|bit| f & bit != 0)
            .filter_map(flag_name)
            .collect()
    }

    /// Every raised flag explained, one line each ("" when healthy).
    pub fn health(&self) -> String {
        text(unsafe { ffi::sive_result_health(self.r()) })
    }
}

impl fmt::Debug for ProbeResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProbeResult")
            .field("status", &self.status())
            .field("lambda", &self.lambda())
            .field("mcse", &self.mcse())
            .field("chains_ok", &self.chains_ok())
            .finish()
    }
}

impl Drop for ProbeResult {
    fn drop(&mut self) {
        unsafe { ffi::sive_result_free(self.raw.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------
// Random numbers and statistics helpers
// ---------------------------------------------------------------------------

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
