#!/usr/bin/env python3
"""Train the bundled MNIST MLP for one epoch, checkpoint it, and probe the
checkpoint with a tiny budget (seconds; real probes use the defaults).

Usage: probe_mlp.py [DATA_DIR]   (default: $SIVE_DATA_DIR, else ../../data)
"""
import os
import pathlib
import sys
import tempfile

import numpy as np

import sive


def main():
    if len(sys.argv) > 1:
        data_dir = sys.argv[1]
    else:
        data_dir = (os.environ.get("SIVE_DATA_DIR")
                    or pathlib.Path(__file__).resolve().parents[2] / "data")
    train, test = sive.Dataset.open_dir(data_dir)
    mlp = sive.Mlp()  # 784-128-128-10
    theta = mlp.init_params(seed=0)
    with train, test, mlp, mlp.workspace() as work:
        loss = mlp.train_epoch(work, theta, train, lr=0.1, batch=32, seed=0, epoch=0)
        test_loss, acc = mlp.evaluate(work, theta, test)
        print(f"{len(train)} training images, {mlp.dim} parameters: epoch 1 train loss "
              f"{loss:.4f}, test loss {test_loss:.4f}, accuracy {acc:.3f}")

        # A checkpoint round trip, as a trainer probing saved files would do.
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "epoch1.ckpt"
            sive.save_checkpoint(path, mlp, theta, sive.CheckpointMeta(1, 0, loss, test_loss))
            loaded, theta1, meta = sive.load_checkpoint(path)
        assert np.array_equal(theta1, theta) and meta.epoch == 1, "checkpoint round trip"

        # t = n/log(n) (the WBIC temperature); 400 steps and 16 groups of 32
        # instead of the defaults' 100000 and 512 x 64 keep this to seconds.
        t = len(train) / np.log(len(train))
        # The MLP on the training set as a probe model: gradient and
        # per-example losses in C (the library groups and deduplicates).
        with loaded, sive.mlp_model(loaded, train) as model, \
                sive.Probe(t=t, steps=400, groups=16, eval_batch=32, grad_batch=64,
                           chains=2) as probe:
            with probe.run(model, theta1) as r:
                print(f"lambda = {r.lambda_hat:.1f} (MCSE {r.mcse:.1f}), ESS {r.ess:.0f}, "
                      f"noise correction {r.noise_correction:.1f} "
                      f"(SE {r.noise_correction_std:.1f}), chains ok {r.chains_ok}/{r.chains}")
                if r.health:
                    print("health (expected with this tiny budget):\n" + r.health.rstrip())
                ok = np.isfinite(r.lambda_hat) and r.chains_ok == r.chains
    print("status", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
