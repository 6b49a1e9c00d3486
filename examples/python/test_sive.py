#!/usr/bin/env python3
"""Tests of the ctypes bindings: error paths, callbacks that raise, handle
lifetimes.  Run: python3 test_sive.py (needs numpy and libsive)."""
import copy
import math
import pathlib
import tempfile
import unittest

import numpy as np

import sive

DIM = 3
THETA = np.array([0.3, -0.2, 0.1])


def grad(theta, batch):
    return theta.copy(), 0.5 * float(theta @ theta)


def evaluate(theta, batch):
    return np.full(batch.n_groups, 0.5 * float(theta @ theta))


def small_probe(**options):
    opts = dict(steps=200, groups=4, chains=2, h=0.1)
    opts.update(options)
    return sive.Probe(DIM, **opts)


class Boom(Exception):
    pass


class CallbackErrors(unittest.TestCase):
    def test_grad_exception_is_reraised(self):
        err = Boom("from grad")

        def bad_grad(theta, batch):
            if batch.step == 5:
                raise err
            return grad(theta, batch)

        with small_probe() as p:
            p.set_callbacks(bad_grad, evaluate)
            with self.assertRaises(Boom) as cm:
                p.run(THETA)
            self.assertIs(cm.exception, err)  # the very object, traceback intact
            self.assertEqual(p.callback_code, 1)
            self.assertIn("gradient callback", p.errmsg)
            # The probe stays usable.
            p.set_callbacks(grad, evaluate)
            with p.run(THETA) as r:
                self.assertEqual(r.chains_ok, 2)

    def test_eval_exception_with_threads(self):
        def bad_eval(theta, batch):
            if batch.chain == 1:
                raise Boom("chain 1")
            return evaluate(theta, batch)

        with small_probe(chains=4, threads=2) as p:
            p.set_callbacks(grad, bad_eval)
            with self.assertRaisesRegex(Boom, "chain 1"):
                p.run(THETA)

    def test_keyboard_interrupt_stops_the_run(self):
        def interrupted(theta, batch):
            raise KeyboardInterrupt

        with small_probe() as p:
            p.set_callbacks(grad, interrupted)
            with self.assertRaises(KeyboardInterrupt):
                p.run(THETA)

    def test_wrong_shapes(self):
        with small_probe() as p:
            p.set_callbacks(lambda th, b: np.zeros(DIM + 1), evaluate)
            with self.assertRaisesRegex(ValueError, "gradient has shape"):
                p.run(THETA)
            p.set_callbacks(grad, lambda th, b: 0.0)
            with self.assertRaisesRegex(ValueError, "evaluate returned shape"):
                p.run(THETA)
            with self.assertRaisesRegex(ValueError, "theta_star has shape"):
                p.run(np.zeros(DIM + 1))

    def test_progress_cancel_and_raise(self):
        with small_probe() as p:
            p.set_callbacks(grad, evaluate)
            p.set_progress(lambda chain, step, total: step >= 50)
            with self.assertRaises(sive.SiveError) as cm:
                p.run(THETA)
            e = cm.exception
            self.assertEqual(e.status, sive.Status.CANCELLED)
            self.assertIn("cancelled", str(e))
            with e.result as r:  # the partial result comes with the error
                self.assertTrue(r.flags & sive.Flag.ABORTED)
                self.assertEqual(r.chain_status(0)[0], sive.ChainStatus.ABORTED)

            def bad_progress(chain, step, total):
                raise Boom("progress")

            p.set_progress(bad_progress)
            with self.assertRaises(Boom):
                p.run(THETA)
            p.set_progress(None)
            p.run(THETA).close()


class LibraryErrors(unittest.TestCase):
    def test_messages(self):
        with self.assertRaises(sive.SiveError) as cm:
            sive.Probe(0)
        self.assertEqual(cm.exception.status, sive.Status.INVALID_ARG)
        self.assertTrue(cm.exception.message)  # sive_last_errmsg()
        with small_probe() as p:
            with self.assertRaises(sive.SiveError) as cm:
                p.set(sive.Option.STEPS, 1)
            self.assertEqual(cm.exception.status, sive.Status.INVALID_ARG)
            self.assertEqual(cm.exception.message, p.errmsg)
            self.assertTrue(str(cm.exception).startswith(sive.strerror(sive.Status.INVALID_ARG)))
            with self.assertRaises(KeyError):
                p.set("no_such_option", 1)
            with self.assertRaises(sive.SiveError) as cm:
                p.run(THETA)  # no callbacks yet
            self.assertEqual(cm.exception.status, sive.Status.STATE)
            p.set_callbacks(grad, evaluate)
            with self.assertRaises(sive.SiveError) as cm:
                p.run(np.array([np.nan, 0.0, 0.0]))
            self.assertIn("not finite", cm.exception.message)

    def test_missing_file(self):
        with self.assertRaises(sive.SiveError) as cm:
            sive.Dataset.load_idx("/nonexistent/images", "/nonexistent/labels")
        self.assertEqual(cm.exception.status, sive.Status.IO)
        self.assertIn("/nonexistent/images", cm.exception.message)


class Api(unittest.TestCase):
    def test_options_and_result(self):
        with small_probe(t=5e3, seed=7) as p:
            self.assertEqual(p.dim, DIM)
            self.assertEqual(p.get("t"), 5e3)
            self.assertEqual(p.get(sive.Option.SEED), 7)
            p.set_callbacks(grad, evaluate, dtype=np.float32)
            with p.run(THETA) as r:
                self.assertEqual((r.chains, r.chains_ok, r.steps, r.eval_stride), (2, 2, 200, 1))
                self.assertEqual(r.trace(sive.Trace.LBAR, 1).shape, (200,))
                self.assertEqual(r.chain_status(0), (sive.ChainStatus.OK, 200))
                self.assertTrue(math.isfinite(r.lambda_hat))
                self.assertAlmostEqual(r.stat(sive.Stat.SIVE, sive.SUMMARY), r.lambda_hat)
                self.assertEqual(r.stat(sive.Stat.H, 0), 0.1)
                self.assertIn("lambda=", repr(r))
            self.assertTrue(r.closed)
            with self.assertRaisesRegex(ValueError, "closed"):
                r.lambda_hat
        self.assertTrue(p.closed)

    def test_batches_hold_the_drawn_indices(self):
        seen = []

        def eval_data(theta, batch):
            seen.append(batch.index.copy())
            return np.zeros(batch.n_groups)

        with small_probe(data_size=10, eval_batch=3, grad_batch=2, chains=1) as p:
            p.set_callbacks(lambda th, b: np.zeros(DIM), eval_data)
            p.run(THETA).close()
        self.assertEqual(seen[0].shape, (4, 3))
        self.assertTrue(all(ix.max() < 10 for ix in seen))

    def test_rng_and_stats(self):
        a, b = sive.Rng(3, 1), sive.Rng(3, 1)
        c = copy.copy(a)
        self.assertEqual([a.next() for _ in range(3)], [b.next() for _ in range(3)])
        self.assertNotEqual(a.next(), sive.Rng(3, 2).next())
        self.assertTrue(0.0 <= c.uniform() < 1.0)
        x = sive.Rng(1).normals(4000)
        self.assertGreater(sive.stats_ess(x), 2000)
        self.assertAlmostEqual(sive.stats_mcse(x), 1 / math.sqrt(4000), delta=0.01)
        self.assertTrue(math.isnan(sive.stats_ess([1.0, 2.0])))
        self.assertTrue(sive.version().startswith("0."))
        self.assertEqual(sive.flag_string(0), "")
        self.assertTrue(sive.flag_string(sive.Flag.LOW_ESS))

    def test_dataset_mlp_checkpoint(self):
        rng = np.random.default_rng(0)
        pixels = rng.integers(0, 256, (40, 4, 4), dtype=np.uint8)
        labels = np.arange(40, dtype=np.uint8) % 3
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            with sive.Dataset.from_memory(pixels, labels) as ds:
                self.assertEqual((len(ds), ds.rows, ds.cols, ds.classes), (40, 4, 4, 3))
                ds.save_idx(tmp / "img", tmp / "lab", zstd_level=3)
            with sive.Dataset.load_idx(tmp / "img", tmp / "lab") as ds:
                np.testing.assert_array_equal(ds.pixels(), pixels)
                np.testing.assert_array_equal(ds.labels(), labels)
                train, test = ds.split(10, seed=1)
            self.assertEqual((len(train), len(test)), (30, 10))

            mlp = sive.Mlp(16, 5, 4, 3)
            self.assertEqual(mlp.sizes, (16, 5, 4, 3))
            theta = mlp.init_params(1)
            with mlp.workspace(block_rows=8) as w:
                losses = mlp.example_losses(w, theta, train, [0, 1, 2])
                g, loss = mlp.loss_grad(w, theta, train, [0, 1, 2])
                self.assertAlmostEqual(loss, float(losses.mean()), places=5)
                groups = mlp.group_losses(w, theta, train, [[0, 1, 2]])
                self.assertAlmostEqual(groups[0], loss, places=5)
                with self.assertRaises(TypeError):
                    mlp.train_epoch(w, theta.astype(np.float64), train, 0.1, 8)
                mlp.train_epoch(w, theta, train, 0.1, 8)
                self.assertLess(mlp.evaluate(w, theta, train)[0], loss)
                with self.assertRaises(sive.SiveError) as cm:
                    mlp.example_losses(w, theta, train, [1000])  # index out of range
                self.assertEqual(cm.exception.status, sive.Status.INVALID_ARG)

            sive.save_checkpoint(tmp / "c.ckpt", mlp, theta, sive.CheckpointMeta(epoch=3))
            m2, th2, meta = sive.load_checkpoint(tmp / "c.ckpt")
            self.assertEqual((m2.sizes, meta.epoch), (mlp.sizes, 3))
            np.testing.assert_array_equal(th2, theta)
            (tmp / "c.ckpt").write_bytes(b"garbage")
            with self.assertRaises(sive.SiveError) as cm:
                sive.load_checkpoint(tmp / "c.ckpt")
            self.assertEqual(cm.exception.status, sive.Status.FORMAT)

            with sive.Probe(mlp.dim, steps=40, groups=4, eval_batch=4, grad_batch=4,
                            chains=2) as p:
                with p.bind_mlp(mlp, train):
                    with p.run(theta) as r:
                        self.assertEqual(r.chains_ok, 2)
                # A closed binding must not be run through: caught before C.
                with self.assertRaises(sive.SiveError) as cm:
                    p.run(theta)
                self.assertEqual(cm.exception.status, sive.Status.STATE)


if __name__ == "__main__":
    unittest.main(verbosity=2)
