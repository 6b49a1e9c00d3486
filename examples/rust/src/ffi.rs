//! Hand-written declarations of `include/sive/sive.h` (libsive 0.2), in the
//! header's order so that a review against it is a side-by-side read.
//!
//! C enums are `int`-sized on every platform libsive supports, so the enum
//! types are `c_int` aliases with the values as constants (a Rust `enum`
//! would be undefined behaviour for any value the declarations do not list,
//! and the library appends values).  Structs are `#[repr(C)]` mirrors,
//! member for member.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

// Status codes (pinned forever).
pub const SIVE_OK: c_int = 0;
pub const SIVE_E_INVALID_ARG: c_int = -1;
pub const SIVE_E_NOMEM: c_int = -2;
pub const SIVE_E_STATE: c_int = -3;
pub const SIVE_E_CALLBACK: c_int = -4;
pub const SIVE_E_DIVERGED: c_int = -5;
pub const SIVE_E_CANCELLED: c_int = -6;
pub const SIVE_E_IO: c_int = -7;
pub const SIVE_E_FORMAT: c_int = -8;
pub const SIVE_E_THREAD: c_int = -9;
pub const SIVE_E_UNSUPPORTED: c_int = -10;

// The model.
pub type sive_dtype = c_int;
pub const SIVE_DTYPE_UNKNOWN: sive_dtype = 0;
pub const SIVE_F32: sive_dtype = 1;
pub const SIVE_F64: sive_dtype = 2;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sive_batch {
    pub index: *const u64,
    pub n_groups: usize,
    pub group_size: usize,
    pub seed: u64,
    pub chain: i32,
    pub worker: i32,
    pub step: i64,
}

/// theta and grad point to `dim` values of the model's dtype.
pub type sive_grad_fn = unsafe extern "C" fn(
    theta: *const c_void,
    dim: usize,
    batch: *const sive_batch,
    grad: *mut c_void,
    loss: *mut f64,
    user: *mut c_void,
) -> c_int;
pub type sive_loss_fn = unsafe extern "C" fn(
    theta: *const c_void,
    dim: usize,
    batch: *const sive_batch,
    losses: *mut f64,
    user: *mut c_void,
) -> c_int;
pub type sive_group_fn = unsafe extern "C" fn(
    theta: *const c_void,
    dim: usize,
    batch: *const sive_batch,
    group_loss: *mut f64,
    user: *mut c_void,
) -> c_int;

/// A model by value; fill it after `sive_model_init`.  `None` is NULL.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sive_model {
    pub struct_size: u32,
    pub dtype: sive_dtype,
    pub dim: usize,
    pub n_examples: u64,
    pub grad: Option<sive_grad_fn>,
    pub loss: Option<sive_loss_fn>,
    pub group_loss: Option<sive_group_fn>,
    pub user: *mut c_void,
    pub destroy: Option<unsafe extern "C" fn(user: *mut c_void)>,
}

// Options.
pub type sive_option = c_int;
pub const SIVE_OPT_T: sive_option = 1;
pub const SIVE_OPT_BASE_LR: sive_option = 2;
pub const SIVE_OPT_H: sive_option = 3;
pub const SIVE_OPT_C_H: sive_option = 4;
pub const SIVE_OPT_STEPS: sive_option = 5;
pub const SIVE_OPT_BURN_IN: sive_option = 6;
pub const SIVE_OPT_GROUPS: sive_option = 7;
pub const SIVE_OPT_EVAL_BATCH: sive_option = 8;
pub const SIVE_OPT_GRAD_BATCH: sive_option = 9;
// 10 was SIVE_OPT_DATA_SIZE in 0.1 (now the model's n_examples).
pub const SIVE_OPT_CHAINS: sive_option = 11;
pub const SIVE_OPT_THREADS: sive_option = 12;
pub const SIVE_OPT_SEED: sive_option = 13;
pub const SIVE_OPT_REPLACEMENT: sive_option = 14;
pub const SIVE_OPT_EVAL_STRIDE: sive_option = 15;
pub const SIVE_OPT_ANCHOR: sive_option = 16;
pub const SIVE_OPT_CHAIN_BEGIN: sive_option = 17;
pub const SIVE_OPT_CHAIN_END: sive_option = 18;
pub const SIVE_OPT_CONTROL_VARIATE: sive_option = 19;
pub const SIVE_OPT_STEP_EXTRAPOLATE: sive_option = 20;
pub const SIVE_OPT_GRAD_CONTROL_VARIATE: sive_option = 21;
pub const SIVE_OPT_PRECONDITION: sive_option = 22;
pub const SIVE_OPT_METROPOLIS: sive_option = 23;
pub const SIVE_OPT_GRAD_NOISE_COMPENSATION: sive_option = 24;
pub const SIVE_OPT_GRAD_NOISE_FULL: sive_option = 25;
pub const SIVE_OPT_GRAD_EXTRAPOLATE: sive_option = 26;
/// Experimental tier (docs/abi.md): may change or go in any release.
pub const SIVE_OPT_LEAPFROG: sive_option = 1070;
/// Experimental tier (sive/experimental.h): may change or go in any release.
pub const SIVE_OPT_ANNEAL: sive_option = 1075;
/// Experimental tier (sive/experimental.h): may change or go in any release.
pub const SIVE_OPT_AUTO_STEP: sive_option = 1076;
pub const SIVE_OPT_DELAYED_REJECTION: sive_option = 1080;
pub const SIVE_OPT_REPLICAS: sive_option = 1085;
pub const SIVE_OPT_REPLICA_RATIO: sive_option = 1086;
pub const SIVE_OPT_ORBIT_EVERY: sive_option = 1090;
pub const SIVE_OPT_ORBIT_SCALE: sive_option = 1091;
pub const SIVE_OPT_PRECONDITION_RANK: sive_option = 1095;
pub const SIVE_OPT_PRECONDITION_STIFF: sive_option = 1096;
pub const SIVE_OPT_PRECONDITION_UPDATE: sive_option = 1097;
pub const SIVE_OPT_KRON_EVERY: sive_option = 1100;
pub const SIVE_OPT_KRON_STEP: sive_option = 1101;

pub type sive_option_type = c_int;
pub const SIVE_TYPE_INT: sive_option_type = 1;
pub const SIVE_TYPE_DOUBLE: sive_option_type = 2;

/// Static storage in the library; read it through the pointer it gives.
#[repr(C)]
#[derive(Debug)]
pub struct sive_option_info {
    pub id: sive_option,
    pub name: *const c_char,
    pub type_: sive_option_type,
    pub lo_open: c_int,
    pub hi_open: c_int,
    pub int_lo: i64,
    pub int_hi: i64,
    pub int_default: i64,
    pub double_lo: f64,
    pub double_hi: f64,
    pub double_default: f64,
    pub doc: *const c_char,
}

/// Opaque handles.
#[repr(C)]
pub struct sive_probe {
    _private: [u8; 0],
}
#[repr(C)]
pub struct sive_result {
    _private: [u8; 0],
}

pub type sive_progress_fn =
    unsafe extern "C" fn(chain: i32, step: i64, total: i64, user: *mut c_void) -> c_int;

pub const SIVE_SUMMARY: i32 = -1;

pub type sive_stat = c_int;
pub const SIVE_STAT_SIVE: sive_stat = 0;
pub const SIVE_STAT_SIVE_UNCLIPPED: sive_stat = 1;
pub const SIVE_STAT_RAW_VARIANCE: sive_stat = 2;
pub const SIVE_STAT_ONLINE_MEAN: sive_stat = 3;
pub const SIVE_STAT_ANCHORED_MEAN: sive_stat = 4;
pub const SIVE_STAT_TAIL_MEAN_LOSS: sive_stat = 5;
pub const SIVE_STAT_TAIL_MIN_LOSS: sive_stat = 6;
pub const SIVE_STAT_NOISE_CORRECTION: sive_stat = 7;
pub const SIVE_STAT_NOISE_CORRECTION_STD: sive_stat = 8;
pub const SIVE_STAT_NOISE_CORRECTION_STD_GAUSS: sive_stat = 9;
pub const SIVE_STAT_MCSE: sive_stat = 10;
pub const SIVE_STAT_ESS: sive_stat = 11;
pub const SIVE_STAT_RHAT: sive_stat = 12;
pub const SIVE_STAT_H: sive_stat = 13;
pub const SIVE_STAT_TETHER_STEP: sive_stat = 14;
pub const SIVE_STAT_GRAD_NORM2_START: sive_stat = 15;
pub const SIVE_STAT_SLOPE_PROXY: sive_stat = 16;
pub const SIVE_STAT_RMS_DISP_REL_H: sive_stat = 17;
pub const SIVE_STAT_TAIL_LENGTH: sive_stat = 18;
pub const SIVE_STAT_SIVE_ESS: sive_stat = 19;

pub type sive_chain_status = c_int;
pub const SIVE_CHAIN_OK: sive_chain_status = 0;
pub const SIVE_CHAIN_DIVERGED: sive_chain_status = 1;
pub const SIVE_CHAIN_CALLBACK: sive_chain_status = 2;
pub const SIVE_CHAIN_ABORTED: sive_chain_status = 3;
pub const SIVE_CHAIN_NOT_RUN: sive_chain_status = 4;
pub const SIVE_CHAIN_INVALID: sive_chain_status = -1;

pub type sive_trace = c_int;
pub const SIVE_TRACE_LBAR: sive_trace = 0;
pub const SIVE_TRACE_S2: sive_trace = 1;
pub const SIVE_TRACE_GRAD_LOSS: sive_trace = 2;
pub const SIVE_TRACE_GRAD_NORM: sive_trace = 3;
pub const SIVE_TRACE_DISP: sive_trace = 4;

pub const SIVE_FLAG_DIVERGED: u32 = 1 << 0;
pub const SIVE_FLAG_NEGATIVE_SIVE: u32 = 1 << 1;
pub const SIVE_FLAG_NONSTATIONARY: u32 = 1 << 2;
pub const SIVE_FLAG_LOW_ESS: u32 = 1 << 3;
pub const SIVE_FLAG_HIGH_RHAT: u32 = 1 << 4;
pub const SIVE_FLAG_NOISY_CORRECTION: u32 = 1 << 5;
pub const SIVE_FLAG_ABORTED: u32 = 1 << 6;
pub const SIVE_FLAG_DOMINANT_CORRECTION: u32 = 1 << 7;
pub const SIVE_FLAG_CHART: u32 = 1 << 8;
pub const SIVE_FLAG_IMPRECISE: u32 = 1 << 9;
pub const SIVE_FLAG_RADIUS_BOUND: u32 = 1 << 10;
pub const SIVE_FLAG_STEP_BIAS: u32 = 1 << 11;
pub const SIVE_FLAG_UNSTABLE: u32 = 1 << 12;
pub const SIVE_FLAG_START_DEPENDENT: u32 = 1 << 13;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct sive_rng {
    pub state: u64,
    pub inc: u64,
}

extern "C" {
    pub fn sive_version_number() -> u32;
    pub fn sive_version_string() -> *const c_char;
    pub fn sive_strerror(status: c_int) -> *const c_char;
    pub fn sive_last_errmsg() -> *const c_char;
    pub fn sive_set_errmsg(msg: *const c_char);

    pub fn sive_model_init(m: *mut sive_model, struct_size: usize) -> c_int;
    pub fn sive_model_destroy(m: *mut sive_model);

    pub fn sive_option_info_get(opt: sive_option) -> *const sive_option_info;
    pub fn sive_option_at(i: usize) -> *const sive_option_info;
    pub fn sive_option_by_name(name: *const c_char, out: *mut sive_option) -> c_int;

    pub fn sive_probe_new(out: *mut *mut sive_probe) -> c_int;
    pub fn sive_probe_free(p: *mut sive_probe);
    pub fn sive_probe_reset(p: *mut sive_probe) -> c_int;
    pub fn sive_probe_set_int(p: *mut sive_probe, opt: sive_option, value: i64) -> c_int;
    pub fn sive_probe_set_double(p: *mut sive_probe, opt: sive_option, value: f64) -> c_int;
    pub fn sive_probe_get_int(p: *const sive_probe, opt: sive_option, value: *mut i64) -> c_int;
    pub fn sive_probe_get_double(p: *const sive_probe, opt: sive_option, value: *mut f64) -> c_int;
    pub fn sive_probe_set_text(
        p: *mut sive_probe,
        name: *const c_char,
        value: *const c_char,
    ) -> c_int;
    pub fn sive_probe_set_progress(
        p: *mut sive_probe,
        f: Option<sive_progress_fn>,
        user: *mut c_void,
    ) -> c_int;
    pub fn sive_probe_errmsg(p: *const sive_probe) -> *const c_char;
    pub fn sive_probe_set_radius_from(p: *mut sive_probe, r: *const sive_result) -> c_int;

    pub fn sive_probe_run(
        p: *mut sive_probe,
        m: *const sive_model,
        theta_star: *const c_void,
        out: *mut *mut sive_result,
    ) -> c_int;

    pub fn sive_result_free(r: *mut sive_result);
    pub fn sive_result_status(r: *const sive_result) -> c_int;
    pub fn sive_result_errmsg(r: *const sive_result) -> *const c_char;
    pub fn sive_result_callback_code(r: *const sive_result) -> c_int;
    pub fn sive_stat_name(stat: sive_stat) -> *const c_char;
    pub fn sive_result_stat(r: *const sive_result, stat: sive_stat, chain: i32) -> f64;
    pub fn sive_result_stat_std(r: *const sive_result, stat: sive_stat) -> f64;
    pub fn sive_result_lambda(r: *const sive_result) -> f64;
    pub fn sive_result_lambda_std(r: *const sive_result) -> f64;
    pub fn sive_result_mcse(r: *const sive_result) -> f64;
    pub fn sive_result_ess(r: *const sive_result) -> f64;
    pub fn sive_result_rhat(r: *const sive_result) -> f64;
    pub fn sive_result_noise_correction(r: *const sive_result) -> f64;
    pub fn sive_result_noise_correction_std(r: *const sive_result) -> f64;
    pub fn sive_result_chains(r: *const sive_result) -> i32;
    pub fn sive_result_chains_ok(r: *const sive_result) -> i32;
    pub fn sive_result_steps(r: *const sive_result) -> i64;
    pub fn sive_result_eval_stride(r: *const sive_result) -> i64;
    pub fn sive_result_dtype(r: *const sive_result) -> sive_dtype;
    pub fn sive_result_option_int(
        r: *const sive_result,
        opt: sive_option,
        value: *mut i64,
    ) -> c_int;
    pub fn sive_result_option_double(
        r: *const sive_result,
        opt: sive_option,
        value: *mut f64,
    ) -> c_int;
    pub fn sive_result_chain_status(
        r: *const sive_result,
        chain: i32,
        step: *mut i64,
    ) -> sive_chain_status;
    pub fn sive_chain_status_string(status: sive_chain_status) -> *const c_char;
    pub fn sive_trace_name(which: sive_trace) -> *const c_char;
    pub fn sive_result_trace(
        r: *const sive_result,
        which: sive_trace,
        chain: i32,
        len: *mut usize,
    ) -> *const f64;
    pub fn sive_result_flags(r: *const sive_result) -> u32;
    pub fn sive_flag_string(flag: u32) -> *const c_char;
    pub fn sive_flag_name(flag: u32) -> *const c_char;
    pub fn sive_result_health(r: *const sive_result) -> *const c_char;

    pub fn sive_rng_seed(g: *mut sive_rng, seed: u64, stream: u64);
    pub fn sive_rng_next(g: *mut sive_rng) -> u32;
    pub fn sive_rng_uniform(g: *mut sive_rng) -> f64;
    pub fn sive_rng_normals(g: *mut sive_rng, out: *mut f64, n: usize);

    pub fn sive_stats_ess(x: *const f64, n: usize) -> f64;
    pub fn sive_stats_mcse(x: *const f64, n: usize) -> f64;
}
