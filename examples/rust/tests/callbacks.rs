//! The safe wrapper's contract: errors carry the library's message, a
//! closure's error code (and message) aborts the run, a panic never crosses
//! the C boundary (it is caught in the trampoline and resumed by `run`), the
//! probe stays usable afterwards, and the options and names come from the
//! library.
use std::panic::{self, AssertUnwindSafe};

use sive::{ffi, Batch, ChainStatus, Dtype, Model, OptionType, Probe, Stat, Trace, Value};

const THETA: [f64; 3] = [0.3, -0.2, 0.1];

fn probe() -> Probe {
    let mut p = Probe::new().unwrap();
    p.set("steps", 200).unwrap().set("groups", 4).unwrap();
    p.set("chains", 2).unwrap().set("h", 0.1).unwrap();
    p
}

fn half_norm2<T: Copy + Into<f64>>(theta: &[T]) -> f64 {
    0.5 * theta.iter().map(|&x| x.into() * x.into()).sum::<f64>()
}

fn grad(theta: &[f64], _: &Batch, g: &mut [f64]) -> Result<f64, i32> {
    g.copy_from_slice(theta);
    Ok(half_norm2(theta))
}

fn eval(theta: &[f64], _: &Batch, losses: &mut [f64]) -> Result<(), i32> {
    losses.fill(half_norm2(theta));
    Ok(())
}

type Fns = fn(&[f64], &Batch, &mut [f64]) -> Result<f64, i32>;
type Evals = fn(&[f64], &Batch, &mut [f64]) -> Result<(), i32>;

fn model() -> Model<f64, Fns, Evals> {
    Model::grouped(3, grad as Fns, eval as Evals)
}

#[test]
fn runs_and_reads_the_result() {
    let mut p = probe();
    let r = p.run(&model(), &THETA).unwrap();
    assert_eq!(
        (r.chains(), r.chains_ok(), r.steps(), r.eval_stride()),
        (2, 2, 200, 1)
    );
    assert_eq!((r.status(), r.errmsg().as_str()), (ffi::SIVE_OK, ""));
    assert_eq!(r.dtype(), Some(Dtype::F64));
    assert!(r.lambda().is_finite());
    assert_eq!(r.stat(Stat::Sive, None), r.lambda());
    assert_eq!(r.stat(Stat::H, Some(0)), 0.1);
    assert_eq!(r.trace(Trace::Lbar, 1).unwrap().len(), 200);
    assert!(r.trace(Trace::Lbar, 7).is_none());
    assert_eq!(r.chain_status(0), (ChainStatus::Ok, 200));
    assert_eq!(p.get_i64("steps").unwrap(), 200);
    assert_eq!(p.get_f64("h").unwrap(), 0.1);
}

#[test]
fn a_chain_outside_the_range_is_not_run() {
    let mut p = probe();
    p.set("chain_begin", 1).unwrap();
    let r = p.run(&model(), &THETA).unwrap();
    assert_eq!(r.chain_status(0).0, ChainStatus::NotRun); // the library's "not run"
    assert_eq!(ChainStatus::NotRun.name(), "not_run");
    assert_eq!(r.chain_status(1), (ChainStatus::Ok, 200));
    assert_eq!(r.chain_status(2).0, ChainStatus::Invalid);
}

#[test]
fn stats_are_keyed_by_the_library_names() {
    let r = probe().run(&model(), &THETA).unwrap();
    let stats = r.stats(None);
    let get = |k: &str| stats.iter().find(|(n, _)| *n == k).map(|&(_, v)| v);
    assert_eq!(get("sive"), Some(r.lambda()));
    assert_eq!(get("mcse"), Some(r.mcse()));
    assert_eq!(Stat::SiveUnclipped.name(), "sive_unclipped");
    assert_eq!(
        get(Stat::SiveUnclipped.name()),
        Some(r.stat(Stat::SiveUnclipped, None))
    );
    // in enum order: the enum names every statistic of the library, in its order
    assert_eq!(stats[Stat::TailLength as usize].0, "tail_length");
    assert_eq!(stats.len(), Stat::AutoStepRescaled as usize + 1);
    assert_eq!(Stat::StartZ.name(), "start_z");
    assert_eq!(stats[Stat::HalvesZ as usize].0, "halves_z");
    assert_eq!(
        stats[Stat::GradNoiseClipped as usize].0,
        "grad_noise_clipped"
    );
    assert_eq!(stats[Stat::StartZMean as usize].0, "start_z_mean");
    // the start test's parts and auto_step's tallies (ids 30-33): NaN
    // without anneal and auto_step
    let names: Vec<&str> = stats[30..34].iter().map(|&(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "start_z_lambda",
            "start_z_mean",
            "auto_step_grads",
            "auto_step_rescaled"
        ]
    );
    assert!(stats[30..34].iter().all(|&(_, v)| v.is_nan()));
    assert_eq!(
        (Trace::Lbar.name(), ChainStatus::Aborted.name()),
        ("lbar", "aborted")
    );
}

#[test]
fn float32_and_threads() {
    let mut p = probe();
    p.set("threads", 2).unwrap().set("chains", 4).unwrap();
    let theta: Vec<f32> = THETA.iter().map(|&x| x as f32).collect();
    let m = Model::grouped(
        3,
        |th: &[f32], _: &Batch, g: &mut [f32]| {
            g.copy_from_slice(th);
            Ok(half_norm2(th))
        },
        |th: &[f32], _: &Batch, l: &mut [f64]| {
            l.fill(half_norm2(th));
            Ok(())
        },
    );
    let r = p.run(&m, &theta).unwrap();
    assert_eq!(r.chains_ok(), 4);
    assert_eq!(r.dtype(), Some(Dtype::F32));
}

#[test]
fn per_example_losses_are_grouped_by_the_library() {
    // loss of example i: |theta|^2/2 + i.  The library draws the same groups
    // for either form, so its means of the per-example losses must match the
    // group means a per-group closure computes from the same indices.
    let per_example = Model::per_example(3, 20, grad, |th: &[f64], b: &Batch, l: &mut [f64]| {
        let ix = b.index.unwrap();
        assert!(ix.windows(2).all(|w| w[0] < w[1]), "distinct, ascending");
        assert!(ix.iter().all(|&i| i < 20));
        for (out, &i) in l.iter_mut().zip(ix) {
            *out = half_norm2(th) + i as f64;
        }
        Ok(())
    });
    let per_group = Model::grouped(3, grad, |th: &[f64], b: &Batch, l: &mut [f64]| {
        for (g, out) in l.iter_mut().enumerate() {
            let ix = b.group(g).unwrap();
            *out = half_norm2(th) + ix.iter().sum::<u64>() as f64 / ix.len() as f64;
        }
        Ok(())
    })
    .with_examples(20);
    let mut p = probe();
    p.set("eval_batch", 3)
        .unwrap()
        .set("grad_batch", 2)
        .unwrap();
    let a = p.run(&per_example, &THETA).unwrap();
    let b = p.run(&per_group, &THETA).unwrap();
    let (ta, tb) = (
        a.trace(Trace::Lbar, 1).unwrap(),
        b.trace(Trace::Lbar, 1).unwrap(),
    );
    assert!(ta
        .iter()
        .zip(tb)
        .all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs()));
    assert!(ta.iter().any(|&x| x != ta[0]), "the indices did vary");
}

#[test]
fn option_list_comes_from_the_library() {
    let all = sive::options();
    let steps = all
        .iter()
        .find(|o| o.name == "steps")
        .expect("steps listed");
    assert_eq!(
        (steps.kind, steps.default),
        (OptionType::Int, Value::Int(100000))
    );
    assert!(!steps.doc.is_empty());
    assert!(
        all.iter().all(|o| o.name != "data_size"),
        "0.2: the model's n_examples"
    );
    assert_eq!(&sive::option_info("steps").unwrap(), steps);
    let e = sive::option_info("no_such_option").unwrap_err();
    assert!(e.message.contains("no_such_option"), "{e}");
    // A new probe holds every default the table gives.
    let p = Probe::new().unwrap();
    for o in &all {
        match o.default {
            Value::Double(d) if d.is_nan() => {}
            d => assert_eq!(p.get(o.name).unwrap(), d, "{}", o.name),
        }
    }
}

#[test]
fn set_by_name_text_and_reset() {
    let steps = sive::option_info("steps").unwrap();
    let Value::Int(lo) = steps.lo else {
        panic!("steps is an int option")
    };
    let mut p = Probe::new().unwrap();
    p.set("base_lr", 0.02).unwrap().set("steps", lo).unwrap();
    assert_eq!(
        (p.get_f64("base_lr").unwrap(), p.get_i64("steps").unwrap()),
        (0.02, lo)
    );
    p.set("t", 500).unwrap(); // an integer for a double option
    assert_eq!(p.get_f64("t").unwrap(), 500.0);
    let e = p.set("steps", lo - 1).unwrap_err(); // the library's bound
    assert!(e.message.contains("steps"), "{e}");
    assert_eq!(
        p.set("steps", 1.5).unwrap_err().status,
        ffi::SIVE_E_INVALID_ARG
    );
    p.set_text("steps", "20000").unwrap();
    assert_eq!(p.get_i64("steps").unwrap(), 20000);
    assert!(p.set_text("steps", "1e4").is_err(), "strict parsing");
    p.reset().unwrap();
    assert_eq!(p.get("steps").unwrap(), steps.default);
}

#[test]
fn result_keeps_the_options_of_its_run() {
    let mut p = probe();
    let r = p.run(&model(), &THETA).unwrap();
    p.set("steps", 300).unwrap();
    assert_eq!(r.option("steps").unwrap(), Value::Int(200));
    assert_eq!(r.option("h").unwrap(), Value::Double(0.1));
}

#[test]
fn radius_taken_from_an_earlier_result() {
    let searched = |p: &mut Probe| {
        p.set("steps", 200).unwrap().set("groups", 4).unwrap();
        p.set("chains", 2).unwrap().set("c_h", 0.0).unwrap();
    };
    let mut p = Probe::new().unwrap();
    searched(&mut p);
    let r = p.run(&model(), &THETA).unwrap();
    let mut q = Probe::new().unwrap();
    searched(&mut q);
    q.set_radius_from(Some(&r)).unwrap();
    let s = q.run(&model(), &THETA).unwrap();
    assert_eq!(s.stat(Stat::H, Some(0)), r.stat(Stat::H, Some(0)));
    assert_eq!(s.lambda().to_bits(), r.lambda().to_bits());
    q.set("steps", 300).unwrap(); // other options than r's: refused
    let e = q.run(&model(), &THETA).err().unwrap();
    assert!(e.message.contains("steps"), "{e}");
    q.set_radius_from(None).unwrap();
    q.run(&model(), &THETA).unwrap();
    // A radius that was set, not chosen from the loss, is refused.
    let set = probe().run(&model(), &THETA).unwrap();
    let e = q.set_radius_from(Some(&set)).err().unwrap();
    assert_eq!(e.status, ffi::SIVE_E_INVALID_ARG);
    assert!(e.message.contains("not chosen"), "{e}");
}

#[test]
fn library_errors_carry_messages() {
    let e = Probe::new()
        .unwrap()
        .run(&Model::grouped(0, grad, eval), &[])
        .err()
        .unwrap();
    assert_eq!(e.status, ffi::SIVE_E_INVALID_ARG);
    assert!(e.message.contains("dim"), "{e}");
    let mut p = probe();
    let e = p.set("steps", 1).err().unwrap();
    assert_eq!(e.status, ffi::SIVE_E_INVALID_ARG);
    assert!(e.to_string().starts_with("invalid argument: "), "{e}");
    let e = p.run(&model(), &[f64::NAN, 0.0, 0.0]).err().unwrap();
    assert!(e.message.contains("not finite"), "{e}");
    let e = p.run(&model(), &[0.0; 2]).err().unwrap();
    assert_eq!(e.status, ffi::SIVE_E_INVALID_ARG);
    // Per-example losses need a data set: refused before any chain runs.
    let e = p
        .run(&Model::per_example(3, 0, grad, eval), &THETA)
        .err()
        .unwrap();
    assert!(e.message.contains("n_examples"), "{e}");
}

#[test]
fn error_code_aborts_the_run() {
    let mut p = probe();
    let m = Model::grouped(
        3,
        grad,
        |_: &[f64], b: &Batch, _: &mut [f64]| {
            if b.step == 10 {
                Err(42)
            } else {
                Ok(())
            }
        },
    );
    let e = p.run(&m, &THETA).err().unwrap();
    assert_eq!(e.status, ffi::SIVE_E_CALLBACK);
    assert!(e.message.contains("evaluation callback returned 42"), "{e}");
    // run_partial keeps the result, which says the same.
    let r = p.run_partial(&m, &THETA).unwrap();
    assert_eq!((r.status(), r.callback_code()), (ffi::SIVE_E_CALLBACK, 42));
    assert_eq!(r.errmsg(), e.message);
    assert_eq!(r.chain_status(0), (ChainStatus::Callback, 10));
}

#[test]
fn callback_message_reaches_the_user() {
    let mut p = probe();
    let m = Model::grouped(3, grad, |_: &[f64], b: &Batch, l: &mut [f64]| {
        if b.step == 10 {
            sive::set_errmsg("index 9000 out of range");
            return Err(7);
        }
        l.fill(0.0);
        Ok(())
    });
    let e = p.run(&m, &THETA).err().unwrap();
    assert_eq!(e.status, ffi::SIVE_E_CALLBACK);
    assert!(
        e.message.ends_with(
            "evaluation callback returned 7 at chain 0 step 10: index 9000 out of range"
        ),
        "{e}"
    );
}

#[test]
fn panic_is_caught_and_resumed() {
    let mut p = probe();
    p.set("threads", 2).unwrap();
    let panicky = Model::grouped(
        3,
        |_: &[f64], b: &Batch, _: &mut [f64]| {
            if b.step == 3 {
                panic!("boom in chain {}", b.chain);
            }
            Ok(0.0)
        },
        eval,
    );
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| p.run(&panicky, &THETA)));
    // The panic reached us intact, after the library returned normally.
    let payload = outcome.expect_err("the panic must be resumed by run()");
    let msg = payload.downcast_ref::<String>().expect("panic message");
    assert!(msg.starts_with("boom in chain"), "{msg}");
    // The probe is still usable.
    assert_eq!(p.run(&model(), &THETA).unwrap().chains_ok(), 2);
}

#[test]
#[should_panic(expected = "boom")]
fn panic_propagates_like_a_panic() {
    let mut p = probe();
    let m = Model::grouped(3, grad, |_: &[f64], _: &Batch, _: &mut [f64]| {
        panic!("boom")
    });
    let _ = p.run(&m, &THETA);
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
    assert_eq!(sive::flag_name(ffi::SIVE_FLAG_LOW_ESS), Some("low_ess"));
    assert_eq!(sive::flag_name(1 << 31), None);
}
