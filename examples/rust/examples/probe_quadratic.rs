//! Probe a closure-defined quadratic whose answer is known exactly: the same
//! model and options as examples/python/probe_quadratic.py and the C example
//! (they print the same numbers).  With x = theta - theta*,
//! L = L0 + K(x), K(x) = g.x + x.H.x/2, observed with noise sigma per group;
//! under the tethered ULA chain t^2 Var[K] has a closed form
//! (docs/theory.md, "Exact targets").
//!
//! Run: cargo run --example probe_quadratic [-- seed]    (exit 1 if |z| > 4)
use sive::{Batch, Model, Probe, Rng, Stat};

const D: usize = 8;
const L0: f64 = 1.0; // a loss floor the estimator never needs
const SIGMA: f64 = 1e-3;
const T: f64 = 1e4;
const A: f64 = 0.05;
const RADIUS: f64 = 0.05;

struct Quadratic {
    h: [f64; D],
    g: [f64; D],
    theta_star: [f64; D],
}

impl Quadratic {
    fn new() -> Self {
        let mut q = Quadratic {
            h: [0.0; D],
            g: [0.0; D],
            theta_star: [0.0; D],
        };
        for i in 0..D {
            q.h[i] = 1.0 + 0.5 * i as f64;
            q.g[i] = 0.02 * (1 + i % 3) as f64 * if i % 2 == 1 { -1.0 } else { 1.0 };
            q.theta_star[i] = 0.1 * (i + 1) as f64;
        }
        q
    }

    fn k(&self, theta: &[f64]) -> f64 {
        (0..D)
            .map(|i| {
                let x = theta[i] - self.theta_star[i];
                self.g[i] * x + 0.5 * self.h[i] * x * x
            })
            .sum()
    }

    /// t^2 Var[K] under the stationary law of the tethered ULA chain.
    fn exact_lambda(&self) -> f64 {
        let eta = A / T;
        let var: f64 = (0..D)
            .map(|i| {
                let rho = 1.0 - A * self.h[i] - eta / (RADIUS * RADIUS);
                let mu = -A * self.g[i] / (1.0 - rho);
                let v = 2.0 * eta / (1.0 - rho * rho);
                let slope = self.g[i] + self.h[i] * mu;
                slope * slope * v + 0.5 * self.h[i] * self.h[i] * v * v
            })
            .sum();
        T * T * var
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed: i64 = std::env::args().nth(1).map_or(Ok(1), |s| s.parse())?;
    let q = Quadratic::new();
    // An analytic model (no data set): gradient and per-group losses.
    let model = Model::grouped(
        D,
        // Exact gradient: an analytic model has no mini-batches.
        |theta: &[f64], _batch: &Batch, grad: &mut [f64]| {
            for i in 0..D {
                grad[i] = q.g[i] + q.h[i] * (theta[i] - q.theta_star[i]);
            }
            Ok(L0 + q.k(theta))
        },
        // N noisy observations, the noise drawn from the per-call seed.
        |theta: &[f64], batch: &Batch, losses: &mut [f64]| {
            Rng::new(batch.seed, 0).fill_normals(losses);
            let k = q.k(theta);
            for l in losses.iter_mut() {
                *l = L0 + k + SIGMA * *l;
            }
            Ok(())
        },
    );
    let mut probe = Probe::new()?;
    probe
        .set("t", T)?
        .set("base_lr", A)?
        .set("h", RADIUS)?
        .set("steps", 4000)?
        .set("groups", 16)?
        .set("chains", 4)?
        .set("seed", seed)?;
    let r = probe.run(&model, &q.theta_star)?;

    let lambda = r.stat(Stat::SiveUnclipped, None);
    let exact = q.exact_lambda();
    let z = (lambda - exact) / r.mcse();
    println!(
        "lambda = {lambda:.3} (MCSE {:.3}), exact {exact:.3}, z = {z:.2}, ESS {:.0}",
        r.mcse(),
        r.ess()
    );
    println!(
        "raw variance {:.3} - noise correction {:.3} (SE {:.3})",
        r.stat(Stat::RawVariance, None),
        r.noise_correction(),
        r.noise_correction_std()
    );
    if !r.health().is_empty() {
        println!("health:\n{}", r.health());
    }
    let ok = z.is_finite() && z.abs() <= 4.0;
    println!("status {}", if ok { "OK" } else { "FAILED" });
    std::process::exit(if ok { 0 } else { 1 });
}
