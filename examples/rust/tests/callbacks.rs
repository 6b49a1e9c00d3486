//! The safe wrapper's contract: errors carry the library's message, a
//! closure's error code aborts the run, a panic never crosses the C boundary
//! (it is caught in the trampoline and resumed by `run`), and the probe
//! stays usable afterwards.
use std::panic::{self, AssertUnwindSafe};

use sive::{ffi, ChainStatus, Opt, Probe, Stat, Trace};

const THETA: [f64; 3] = [0.3, -0.2, 0.1];

fn probe() -> Probe {
    let mut p = Probe::new(3).unwrap();
    p.set(Opt::Steps(200)).unwrap().set(Opt::Groups(4)).unwrap();
    p.set(Opt::Chains(2)).unwrap().set(Opt::H(0.1)).unwrap();
    p
}

fn half_norm2<T: Copy + Into<f64>>(theta: &[T]) -> f64 {
    0.5 * theta.iter().map(|&x| x.into() * x.into()).sum::<f64>()
}

fn grad(theta: &[f64], _: &sive::Batch, g: &mut [f64]) -> Result<f64, i32> {
    g.copy_from_slice(theta);
    Ok(half_norm2(theta))
}

fn eval(theta: &[f64], _: &sive::Batch, losses: &mut [f64]) -> Result<(), i32> {
    losses.fill(half_norm2(theta));
    Ok(())
}

#[test]
fn runs_and_reads_the_result() {
    let mut p = probe();
    let r = p.run(&THETA, grad, eval).unwrap();
    assert_eq!(
        (r.chains(), r.chains_ok(), r.steps(), r.eval_stride()),
        (2, 2, 200, 1)
    );
    assert!(r.lambda().is_finite());
    assert_eq!(r.stat(Stat::Sive, None), r.lambda());
    assert_eq!(r.stat(Stat::H, Some(0)), 0.1);
    assert_eq!(r.trace(Trace::Lbar, 1).unwrap().len(), 200);
    assert!(r.trace(Trace::Lbar, 7).is_none());
    assert_eq!(r.chain_status(0), (ChainStatus::Ok, 200));
    assert_eq!(p.get_i64(ffi::SIVE_OPT_STEPS).unwrap(), 200);
    assert_eq!(p.get_f64(ffi::SIVE_OPT_H).unwrap(), 0.1);
}

#[test]
fn float32_and_threads() {
    let mut p = probe();
    p.set(Opt::Threads(2)).unwrap().set(Opt::Chains(4)).unwrap();
    let theta: Vec<f32> = THETA.iter().map(|&x| x as f32).collect();
    let r = p
        .run(
            &theta,
            |th: &[f32], _: &sive::Batch, g: &mut [f32]| {
                g.copy_from_slice(th);
                Ok(half_norm2(th))
            },
            |th: &[f32], _: &sive::Batch, l: &mut [f64]| {
                l.fill(half_norm2(th));
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(r.chains_ok(), 4);
}

#[test]
fn library_errors_carry_messages() {
    let e = Probe::new(0).err().unwrap();
    assert_eq!(e.status, ffi::SIVE_E_INVALID_ARG);
    assert!(!e.message.is_empty());
    let mut p = probe();
    let e = p.set(Opt::Steps(1)).err().unwrap();
    assert_eq!(e.status, ffi::SIVE_E_INVALID_ARG);
    assert!(e.to_string().starts_with("invalid argument: "), "{e}");
    let e = p.run(&[f64::NAN, 0.0, 0.0], grad, eval).err().unwrap();
    assert!(e.message.contains("not finite"), "{e}");
    let e = p.run(&[0.0; 2], grad, eval).err().unwrap();
    assert_eq!(e.status, ffi::SIVE_E_INVALID_ARG);
}

#[test]
fn error_code_aborts_the_run() {
    let mut p = probe();
    let e = p
        .run(
            &THETA,
            grad,
            |_: &[f64], b: &sive::Batch, _: &mut [f64]| {
                if b.step == 10 {
                    Err(42)
                } else {
                    Ok(())
                }
            },
        )
        .err()
        .unwrap();
    assert_eq!(e.status, ffi::SIVE_E_CALLBACK);
    assert_eq!(p.callback_code(), 42);
    assert!(e.message.contains("evaluation callback returned 42"), "{e}");
}

#[test]
fn panic_is_caught_and_resumed() {
    let mut p = probe();
    p.set(Opt::Threads(2)).unwrap();
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        p.run(
            &THETA,
            |_: &[f64], b: &sive::Batch, _: &mut [f64]| {
                if b.step == 3 {
                    panic!("boom in chain {}", b.chain);
                }
                Ok(0.0)
            },
            eval,
        )
    }));
    // The panic reached us intact, after the library returned normally.
    let payload = outcome.err().expect("the panic must be resumed by run()");
    let msg = payload.downcast_ref::<String>().expect("panic message");
    assert!(msg.starts_with("boom in chain"), "{msg}");
    assert_eq!(p.callback_code(), 1);
    // The probe is still usable.
    assert_eq!(p.run(&THETA, grad, eval).unwrap().chains_ok(), 2);
}

#[test]
#[should_panic(expected = "boom")]
fn panic_propagates_like_a_panic() {
    let mut p = probe();
    let _ = p.run(&THETA, grad, |_: &[f64], _: &sive::Batch, _: &mut [f64]| {
        panic!("boom")
    });
}

#[test]
fn rng_and_stats() {
    let mut a = sive::Rng::new(3, 1);
    let mut b = a;
    assert_eq!(a.next_u32(), b.next_u32());
    let mut x = vec![0.0; 4000];
    a.fill_normals(&mut x);
    assert!(sive::stats_ess(&x) > 2000.0);
    assert!((sive::stats_mcse(&x) - 1.0 / 4000f64.sqrt()).abs() < 0.01);
    assert!(sive::stats_ess(&x[..2]).is_nan());
    assert!(sive::version().starts_with("0."));
    assert!(!sive::flag_string(ffi::SIVE_FLAG_LOW_ESS).is_empty());
}
