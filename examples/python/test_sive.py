#!/usr/bin/env python3
"""Tests of the ctypes bindings: error paths, callbacks that raise, handle
lifetimes, options and names read from the library.  Run: python3
test_sive.py (needs numpy and libsive)."""
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


def model(grad=grad, group_loss=evaluate, **kw):
    return sive.Model(DIM, grad, group_loss=group_loss, **kw)


def small_probe(**options):
    opts = dict(steps=200, groups=4, chains=2, h=0.1)
    opts.update(options)
    return sive.Probe(**opts)


def notes(exc):
    return " ".join(getattr(exc, "__notes__", []))


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
            with self.assertRaises(Boom) as cm:
                p.run(model(bad_grad), THETA)
            self.assertIs(cm.exception, err)  # the very object, traceback intact
            # The run's message, with the callback's code, comes as a note.
            self.assertIn("gradient callback returned 1 at chain", notes(cm.exception))
            # The probe stays usable.
            with p.run(model(), THETA) as r:
                self.assertEqual(r.chains_ok, 2)

    def test_eval_exception_with_threads(self):
        def bad_eval(theta, batch):
            if batch.chain == 1:
                raise Boom("chain 1")
            return evaluate(theta, batch)

        with small_probe(chains=4, threads=2) as p:
            with self.assertRaisesRegex(Boom, "chain 1"):
                p.run(model(group_loss=bad_eval), THETA)

    def test_message_reaches_the_run(self):
        # The trampoline hands the exception's text to the library
        # (sive_set_errmsg), which appends it to the run's message.
        def bad_loss(theta, batch):
            if batch.step == 7:
                raise Boom("index 9000 out of range")
            return np.zeros(batch.group_size)

        m = sive.Model(DIM, grad, loss=bad_loss, n_examples=50)
        with small_probe(eval_batch=3, grad_batch=2) as p:
            with self.assertRaises(Boom) as cm:
                p.run(m, THETA)
        note = notes(cm.exception)
        self.assertRegex(note, r"evaluation callback returned 1 at chain \d step 7: "
                               r"Boom: index 9000 out of range")

    def test_keyboard_interrupt_stops_the_run(self):
        def interrupted(theta, batch):
            raise KeyboardInterrupt

        with small_probe() as p:
            with self.assertRaises(KeyboardInterrupt):
                p.run(model(group_loss=interrupted), THETA)

    def test_wrong_shapes(self):
        with small_probe() as p:
            with self.assertRaisesRegex(ValueError, "gradient has shape"):
                p.run(model(lambda th, b: np.zeros(DIM + 1)), THETA)
            with self.assertRaisesRegex(ValueError, "group_loss returned .* has shape"):
                p.run(model(group_loss=lambda th, b: 0.0), THETA)
            with self.assertRaisesRegex(ValueError, "theta_star has shape"):
                p.run(model(), np.zeros(DIM + 1))

    def test_progress_cancel_and_raise(self):
        m = model()
        with small_probe() as p:
            p.set_progress(lambda chain, step, total: step >= 50)
            with self.assertRaises(sive.SiveError) as cm:
                p.run(m, THETA)
            e = cm.exception
            self.assertEqual(e.status, sive.Status.CANCELLED)
            self.assertIn("cancelled", str(e))
            with e.result as r:  # the partial result comes with the error
                self.assertTrue(r.flags & sive.Flag.ABORTED)
                self.assertIn("aborted", r.flag_names)
                self.assertEqual(r.chain_status(0)[0], sive.ChainStatus.ABORTED)
            # check=False: the result itself says how the run ended.
            with p.run(m, THETA, check=False) as r:
                self.assertEqual(r.status, sive.Status.CANCELLED)
                self.assertIn("cancelled by the progress callback", r.errmsg)
                self.assertEqual(r.callback_code, 0)

            def bad_progress(chain, step, total):
                raise Boom("progress")

            p.set_progress(bad_progress)
            with self.assertRaises(Boom):
                p.run(m, THETA)
            p.set_progress(None)
            with p.run(m, THETA) as r:
                self.assertEqual((r.status, r.errmsg), (sive.Status.OK, ""))


class LibraryErrors(unittest.TestCase):
    def test_messages(self):
        with self.assertRaises(sive.SiveError) as cm:
            sive.Probe(steps=1)
        self.assertEqual(cm.exception.status, sive.Status.INVALID_ARG)
        self.assertTrue(cm.exception.message)
        with small_probe() as p:
            # The model is checked by the run: no result, the probe's message.
            with self.assertRaises(sive.SiveError) as cm:
                p.run(sive.Model(0, grad, group_loss=evaluate), [])
            self.assertEqual(cm.exception.status, sive.Status.INVALID_ARG)
            self.assertEqual(cm.exception.message, p.errmsg)
            self.assertIn("dim", cm.exception.message)
            with self.assertRaises(sive.SiveError) as cm:
                p.set(sive.Option.STEPS, 1)
            self.assertEqual(cm.exception.status, sive.Status.INVALID_ARG)
            self.assertEqual(cm.exception.message, p.errmsg)
            self.assertTrue(str(cm.exception).startswith(sive.strerror(sive.Status.INVALID_ARG)))
            with self.assertRaises(KeyError):
                p.set("no_such_option", 1)
            with self.assertRaises(sive.SiveError) as cm:
                p.run(sive.Model(DIM, grad), THETA)  # no loss callback
            self.assertEqual(cm.exception.status, sive.Status.INVALID_ARG)
            self.assertIn("loss", cm.exception.message)
            with self.assertRaises(sive.SiveError) as cm:  # per-example needs data
                p.run(sive.Model(DIM, grad, loss=evaluate), THETA)
            self.assertIn("n_examples", cm.exception.message)
            with self.assertRaises(sive.SiveError) as cm:
                p.run(model(), np.array([np.nan, 0.0, 0.0]))
            self.assertIn("not finite", cm.exception.message)

    def test_missing_file(self):
        with self.assertRaises(sive.SiveError) as cm:
            sive.Dataset.load_idx("/nonexistent/images", "/nonexistent/labels")
        self.assertEqual(cm.exception.status, sive.Status.IO)
        self.assertIn("/nonexistent/images", cm.exception.message)


class Options(unittest.TestCase):
    def test_option_list_comes_from_the_library(self):
        names = [o.name for o in sive.options()]
        self.assertIn("steps", names)
        self.assertNotIn("data_size", names)  # 0.2: the model's n_examples
        steps = sive.option_info("steps")
        self.assertEqual((steps.type, steps.default), (sive.OptionType.INT, 100000))
        self.assertEqual(sive.option_info(sive.Option.STEPS), steps)
        self.assertTrue(steps.doc)
        self.assertIs(sive.option_info("base_lr").type, sive.OptionType.DOUBLE)
        with self.assertRaisesRegex(KeyError, "steps"):  # lists the known names
            sive.option_info("no_such_option")
        # A new probe holds every default the table gives.
        with sive.Probe() as p:
            for o in sive.options():
                if not (isinstance(o.default, float) and math.isnan(o.default)):
                    self.assertEqual(p.get(o.name), o.default, o.name)

    def test_set_by_name_and_bounds(self):
        steps = sive.option_info("steps")
        with sive.Probe() as p:
            p.set("base_lr", 0.02).set(steps=steps.lo, chains=3)
            self.assertEqual((p.get("base_lr"), p.get("steps"), p.get("chains")),
                             (0.02, steps.lo, 3))
            self.assertFalse(steps.accepts(steps.lo - 1))
            with self.assertRaises(sive.SiveError) as cm:
                p.set("steps", steps.lo - 1)  # the library's bound, not ours
            self.assertIn("steps", cm.exception.message)
            with self.assertRaises(TypeError):
                p.set("steps", 1e4)  # an int option refuses a float
            p.set("steps", "20000")  # text: the library's strict parser
            self.assertEqual(p.get("steps"), 20000)
            with self.assertRaises(sive.SiveError):
                p.set("steps", "1e4")
            self.assertEqual(p.values()["steps"], 20000)
            p.reset()
            self.assertEqual(p.get("steps"), steps.default)

    def test_result_keeps_the_options_of_its_run(self):
        with small_probe(steps=200) as p:
            r = p.run(model(), THETA)
            p.set(steps=300)
            with r:
                self.assertEqual(r.option("steps"), 200)
                self.assertEqual(r.option("h"), 0.1)


class Api(unittest.TestCase):
    def test_options_and_result(self):
        with small_probe(t=5e3, seed=7) as p:
            self.assertEqual(p.get("t"), 5e3)
            self.assertEqual(p.get(sive.Option.SEED), 7)
            m = model(dtype=np.float32)
            self.assertEqual((m.dim, m.n_examples, m.dtype), (DIM, 0, np.float32))
            with p.run(m, THETA) as r:
                self.assertEqual((r.chains, r.chains_ok, r.steps, r.eval_stride), (2, 2, 200, 1))
                self.assertEqual(r.dtype, np.float32)  # the model's, sive_result_dtype
                self.assertEqual(r.to_dict()["dtype"], "float32")
                self.assertEqual(r.trace(sive.Trace.LBAR, 1).shape, (200,))
                self.assertEqual(r.chain_status(0), (sive.ChainStatus.OK, 200))
                self.assertTrue(math.isfinite(r.lambda_hat))
                self.assertAlmostEqual(r.stat(sive.Stat.SIVE, sive.SUMMARY), r.lambda_hat)
                self.assertEqual(r.stat(sive.Stat.H, 0), 0.1)
                self.assertIn("lambda=", repr(r))
                # Keyed by the library's names (the sive tool's JSON keys).
                stats = r.stats()
                self.assertEqual(stats["sive"], r.lambda_hat)
                self.assertEqual(stats["mcse"], r.mcse)
                self.assertEqual(list(stats), [s.name.lower() for s in sive.Stat])
                self.assertEqual(r.stats(0)["h"], 0.1)
                self.assertEqual(r.trace("lbar", 0).tolist(), r.trace(sive.Trace.LBAR, 0).tolist())
            self.assertTrue(r.closed)
            with self.assertRaisesRegex(ValueError, "closed"):
                r.lambda_hat
        self.assertTrue(p.closed)

    def test_radius_from_an_earlier_result(self):
        # a part that takes the radius a run chose from the loss runs no
        # search and computes that run's chains bit for bit, its radius
        # line too, also from the result's bytes; a run of other options
        # is refused, and None forgets it
        opts = dict(steps=400, groups=4, chains=2, c_h="auto", metropolis=0, seed=3)
        with sive.Probe(**opts) as p, p.run(model(), THETA) as whole:
            self.assertIn("radius: chosen from the loss", whole.health)
            saved = sive.Result.from_bytes(whole.to_bytes())[0]
            self.assertEqual(saved.health, whole.health)  # format 5 keeps the notes
            p.set(chain_begin=1, chain_end=2).set_radius_from(saved)
            with p.run(model(), THETA) as part:
                self.assertEqual(part.stat("h", 1), whole.stat("h", 1))
                self.assertEqual(part.trace("lbar", 1).tolist(), whole.trace("lbar", 1).tolist())
                self.assertEqual(part.health.splitlines()[-1], whole.health.splitlines()[-1])
            p.set(seed=4)
            with self.assertRaisesRegex(sive.SiveError, "another 'seed'"):
                p.run(model(), THETA)
            p.set_radius_from(None)
            p.run(model(), THETA).close()
            saved.close()

    def test_radius_from_takes_only_a_result(self):
        # anything but a Result (another handle's pointer would be read by
        # the library as a sive_result) is a TypeError, and the probe keeps
        # the radius it had
        opts = dict(steps=400, groups=4, chains=2, c_h="auto", metropolis=0, seed=3)
        with sive.Probe(**opts) as p, p.run(model(), THETA) as whole, sive.Probe() as other:
            p.set(chain_begin=1, chain_end=2).set_radius_from(whole)
            for bad in (other, "whole", 3):
                with self.assertRaises(TypeError):
                    p.set_radius_from(bad)
            with p.run(model(), THETA) as part:  # still whole's radius: no search
                self.assertEqual(part.stat("h", 1), whole.stat("h", 1))
                self.assertEqual(part.trace("lbar", 1).tolist(), whole.trace("lbar", 1).tolist())

    def test_params_restrict_the_chain(self):
        # ranges, a mask and the probe keyword agree; covering ranges are
        # the unrestricted run; frozen coordinates never move
        seen = []

        def watch(theta, batch):
            seen.append(theta[1])
            return grad(theta, batch)

        with small_probe() as p:
            full = p.run(model(), THETA)
            p.set_params([(2, 3), (0, 2)])  # sorted and merged: all of theta
            cover = p.run(model(), THETA)
            self.assertEqual(full.trace("lbar", 0).tolist(), cover.trace("lbar", 0).tolist())
            p.set_params(np.array([True, False, True]))
            r = p.run(model(grad=watch), THETA)
            self.assertEqual((r.params, r.params_dim), ([(0, 1), (2, 3)], 2))
            self.assertTrue(all(v == THETA[1] for v in seen))
            self.assertIsNone(full.params)
            self.assertEqual(full.params_dim, DIM)
            with self.assertRaisesRegex(sive.SiveError, "past the model's dim"):
                p.set_params([(1, 4)]).run(model(), THETA)
        with small_probe(params=[(0, 1), (2, 3)]) as q, q.run(model(), THETA) as r2:
            self.assertEqual(r2.params, [(0, 1), (2, 3)])
            self.assertEqual(r2.trace("lbar", 0).tolist(), r.trace("lbar", 0).tolist())

    def test_eval_views(self):
        # a view on the same path: the run's result unchanged, the view's
        # own losses; a view's exception propagates; views close with the run
        def shifted(theta, batch):
            return np.full(batch.n_groups, 0.5 * float((theta - 1.0) @ (theta - 1.0)))

        def boom(theta, batch):
            raise Boom("in a view")

        with small_probe() as p:
            plain = p.run(model(), THETA)
            p.add_eval_view("shifted", model(group_loss=shifted))
            r = p.run(model(), THETA)
            self.assertEqual(plain.trace("lbar", 0).tolist(), r.trace("lbar", 0).tolist())
            v = r.views["shifted"]
            self.assertEqual(list(r.views), ["shifted"])
            self.assertEqual(v.trace("disp", 1).tolist(), r.trace("disp", 1).tolist())
            self.assertNotEqual(v.trace("lbar", 1).tolist(), r.trace("lbar", 1).tolist())
            self.assertTrue(math.isfinite(v.lambda_hat))
            d = r.to_dict()
            self.assertEqual([x["name"] for x in d["views"]], ["shifted"])
            self.assertEqual(d["views"][0]["sive"]["mean"], v.lambda_hat)
            self.assertNotIn("views", plain.to_dict())
            r.close()
            self.assertTrue(v.closed)
            p.clear_eval_views().add_eval_view("boom", model(group_loss=boom))
            with self.assertRaises(Boom):
                p.run(model(), THETA)
        # a subset of a per-example model's examples
        seen = set()

        def per_example(theta, batch):
            seen.update(batch.index.tolist())
            return np.full(batch.group_size, 0.5 * float(theta @ theta))

        m = sive.Model(DIM, grad, loss=per_example, n_examples=20)
        with small_probe(views={"evens": (m, range(0, 20, 2))}) as p:
            seen.clear()
            with p.run(sive.Model(DIM, grad, group_loss=evaluate), THETA) as r:
                self.assertTrue(seen and all(i % 2 == 0 for i in seen))
                self.assertTrue(math.isfinite(r.views["evens"].lambda_hat))

    def test_batches_hold_the_drawn_indices(self):
        seen = []

        def eval_data(theta, batch):
            seen.append(batch.index.copy())
            return np.zeros(batch.n_groups)

        m = model(lambda th, b: np.zeros(DIM), eval_data, n_examples=10)
        with small_probe(eval_batch=3, grad_batch=2, chains=1) as p:
            p.run(m, THETA).close()
        self.assertEqual(seen[0].shape, (4, 3))
        self.assertTrue(all(ix.max() < 10 for ix in seen))

    def test_per_example_losses_are_grouped_by_the_library(self):
        # loss of example i: |theta|^2/2 + i.  The library draws the same
        # groups for either form, so its group means of the per-example
        # losses must match the means a group_loss callback computes.
        def per_example(theta, batch):
            ix = batch.index
            self.assertEqual(ix.shape, (batch.group_size,))
            self.assertTrue(np.all(np.diff(ix.astype(np.int64)) > 0))  # distinct, ascending
            self.assertLess(int(ix.max()), 20)
            return 0.5 * float(theta @ theta) + ix

        def per_group(theta, batch):
            return 0.5 * float(theta @ theta) + batch.index.mean(axis=1)

        traces = []
        for kw in (dict(loss=per_example), dict(group_loss=per_group)):
            with small_probe(eval_batch=3, grad_batch=2) as p, \
                    p.run(sive.Model(DIM, grad, n_examples=20, **kw), THETA) as r:
                traces.append(r.trace("lbar", 1))
        np.testing.assert_allclose(traces[0], traces[1], rtol=1e-12)
        self.assertGreater(np.ptp(traces[0]), 0.0)  # the indices did vary

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

            # The MLP as a probe model (sive_mlp_model): C callbacks.
            m = sive.mlp_model(mlp, train)
            self.assertEqual((m.dim, m.n_examples, m.dtype), (mlp.dim, 30, np.float32))
            with sive.Probe(steps=40, groups=4, eval_batch=4, grad_batch=4, chains=2) as p:
                with m:
                    with p.run(m, theta) as r:
                        self.assertEqual(r.chains_ok, 2)
                # A closed model must not be run through: caught before C.
                with self.assertRaisesRegex(ValueError, "closed"):
                    p.run(m, theta)

if __name__ == "__main__":
    unittest.main(verbosity=2)
