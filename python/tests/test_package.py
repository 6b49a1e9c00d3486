#!/usr/bin/env python3
"""Tests of the installed-style package (no torch needed): where the
library comes from, typed exceptions, options read from the library, and
Result.to_dict()/to_json() against `sive probe --format json`.

Usage: test_package.py [SIVE_CLI]   (PYTHONPATH: the directory holding sive/)
"""
import contextlib
import io
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest

os.environ.pop("SIVE_LIBRARY", None)  # the package must find it by itself
os.environ.pop("SIVE_REF_LIBRARY", None)

import numpy as np  # noqa: E402

import sive  # noqa: E402

CLI = sys.argv.pop(1) if len(sys.argv) > 1 else None
DATA = os.environ.get("SIVE_DATA_DIR") or str(pathlib.Path(__file__).resolve().parents[2] / "data")


def quadratic(identity=0):
    return sive.Model(2, lambda th, b: (th.copy(), 0.5 * float(th @ th)),
                      group_loss=lambda th, b: np.full(b.n_groups, 0.5 * float(th @ th)),
                      identity=identity)


class Package(unittest.TestCase):
    def test_library_from_config(self):
        # The build-tree copy names the build's library; the installed copy
        # the install's libdir (test/install_test.sh).
        from sive import _config
        self.assertTrue(pathlib.Path(sive.library_path).exists(), sive.library_path)
        self.assertTrue(os.path.samefile(sive.library_path, _config.LIBRARY))
        # libsive-ref beside it, and its errors in libsive's last error
        self.assertEqual(pathlib.Path(sive.ref_library_path).resolve().parent,
                         pathlib.Path(sive.library_path).resolve().parent)
        with self.assertRaises(sive.SiveError) as e:
            sive.Mlp(4, 3, 2, 1)
        self.assertIn("sive_mlp_new", str(e.exception))
        self.assertEqual(sive.version_number() // 100, 3)  # 0.3.x

    def test_options_from_library(self):
        names = [o.name for o in sive.options()]
        for n in ("t", "base_lr", "h", "c_h", "steps", "groups", "chains", "seed"):
            self.assertIn(n, names)
        info = sive.option_info("steps")
        self.assertEqual(info.type, sive.OptionType.INT)
        self.assertFalse(info.accepts(info.lo - 1))
        # the tier read from the C table: experimental options have ids from
        # 1000 (graduated ones keep theirs, so not every id >= 1000 is one)
        for o in sive.options():
            self.assertIsInstance(o.experimental, bool)
            self.assertTrue(o.id >= 1000 or not o.experimental, o.name)
        self.assertFalse(info.experimental)

    def test_bytes_round_trip(self):
        """to_bytes/from_bytes: the same statistics, the note, and damage refused."""
        with sive.Probe(steps=200, h=0.1, chains=2) as p, \
                p.run(quadratic(), np.array([0.5, 0.5])) as r:
            data = r.to_bytes("note")
            back, note = sive.Result.from_bytes(data)
            with back:
                self.assertEqual(note, "note")
                self.assertEqual((r.dtype, back.dtype), (np.float64, np.float64))
                self.assertEqual(back.to_dict(), r.to_dict())
                self.assertEqual(back.to_bytes("note"), data)
            bad = bytearray(data)
            bad[len(bad) // 2] ^= 1
            with self.assertRaises(sive.SiveError) as e:
                sive.Result.from_bytes(bad)
            self.assertEqual(e.exception.status, sive.Status.FORMAT)

    def test_checkpoint_bytes(self):
        """checkpoint_to_bytes = the file's bytes; from_bytes reads them back; damage refused."""
        mlp = sive.Mlp(3, 4, 3, 2)
        theta = np.arange(mlp.dim, dtype=np.float32) / 7
        meta = sive.CheckpointMeta(3, 9, 0.5, math.nan)
        data = sive.checkpoint_to_bytes(mlp, theta, meta)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.ckpt")
            sive.save_checkpoint(path, mlp, theta, meta)
            self.assertEqual(pathlib.Path(path).read_bytes(), data)
        m2, th2, meta2 = sive.checkpoint_from_bytes(data)
        with m2:
            self.assertEqual(m2.sizes, (3, 4, 3, 2))
        self.assertTrue(np.array_equal(th2, theta))
        self.assertEqual((meta2.epoch, meta2.seed, meta2.train_loss), (3, 9, 0.5))
        for bad in (data[:-1], data[:10] + bytes([data[10] ^ 1]) + data[11:], b""):
            with self.assertRaises(sive.SiveError) as e:
                sive.checkpoint_from_bytes(bad)
            self.assertEqual(e.exception.status, sive.Status.FORMAT)
        mlp.close()

    def test_retrospective(self):
        """Two checkpoints probed alike: at the final one the online estimator
        bit for bit, at the earlier one t (tail mean - final tail minimum)."""
        opts = dict(steps=300, h=1.0, t=100.0, chains=3, seed=5)
        with sive.Probe(**opts) as p:
            early = p.run(quadratic(), np.array([3.0, -2.0]))
            final = p.run(quadratic(), np.array([0.1, -0.2]))
        with early, final:
            lam, anchor = sive.retrospective([early, final])
            self.assertEqual(lam.shape, (2, 3))
            for c in range(3):
                self.assertEqual(anchor[c], final.stat("tail_min_loss", c))
                self.assertEqual(lam[1, c], final.stat("online_mean", c))
                self.assertEqual(lam[0, c], 100.0 * (early.stat("tail_mean_loss", c) - anchor[c]))
            tm = [early.stat("tail_mean_loss", c) for c in range(3)]
            self.assertTrue(np.array_equal(sive.retrospective_values(100.0, tm, anchor), lam[0]))
            with self.assertRaises(sive.InvalidArgument):
                sive.retrospective_values(0.0, tm, anchor)
            with self.assertRaises(ValueError):
                early.retrospective(anchor[:2])

    def test_calibrate(self):
        """The library's plateau rules: the step rule on the paper's table,
        rows from results, and unsorted rows refused."""
        lr = [0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1]
        lam = [4.06, 0.235, 0.375, 0.405, 0.431, 0.481, 3.07, 9.45]
        se = [1.3, 0.084, 0.14, 0.09, 0.043, 0.048, 2.2, 7.7]
        rh = [1.9, 1.3, 1.08, 1.02, 1.0, 1.0, 1.01, 1.0]
        es = [10, 40, 90, 300, 2000, 3000, 4000, 5000]
        rows = [sive.CalibRow(*x, nc=1.0, nc_std=0.01) for x in zip(lr, lam, se, es, rh)]
        v = sive.calibrate("base_lr", rows)
        self.assertTrue(v.found)
        self.assertEqual((lr[v.lo], lr[v.pick], lr[v.hi]), (0.01, 0.05, 0.1))
        self.assertIn("stable range", v.reason)
        self.assertEqual(sive.calib_rule("c_h"), sive.CalibRule.H)
        with self.assertRaises(sive.InvalidArgument):
            sive.calibrate(sive.CalibRule.STEP, rows[::-1])
        with self.assertRaises(sive.InvalidArgument):
            sive.calib_rule("t")
        with sive.Probe(steps=300, h=1.0, chains=3) as p, \
                p.run(quadratic(), np.array([0.1, -0.2])) as r:
            row = sive.CalibRow.from_result(r, 1.0)
            self.assertEqual(row.lambda_hat, r.lambda_hat)
            self.assertEqual(row.se, r.lambda_std / math.sqrt(3))
        self.assertEqual(len(row.chain), 3)
        v = sive.calibrate("h", [row, row._replace(value=2.0)])
        self.assertTrue(v.found)  # identical chains: a paired difference of 0
        self.assertIn("paired over 3 chains", v.reason)

    def test_stats_from_library(self):
        """One row per Stat, in order, read from sive_stat_at()."""
        self.assertEqual([s.id for s in sive.STATS], list(sive.Stat))
        self.assertEqual([s.name.upper() for s in sive.STATS], [s.name for s in sive.Stat])
        self.assertEqual(sive.STATS[sive.Stat.RHAT].pool, sive.StatPool.SUMMARY_ONLY)
        self.assertEqual(sive.STATS[sive.Stat.MCSE].pool, sive.StatPool.QUADRATURE)
        self.assertTrue(sive.STATS[sive.Stat.MCSE].scalar)
        self.assertFalse(sive.STATS[sive.Stat.SIVE].scalar)
        self.assertTrue(all(s.doc for s in sive.STATS))
        # the start test's parts and auto_step's tallies (ids 30-33)
        self.assertEqual([int(sive.Stat.START_Z_LAMBDA), int(sive.Stat.START_Z_MEAN),
                          int(sive.Stat.AUTO_STEP_GRADS), int(sive.Stat.AUTO_STEP_RESCALED)],
                         [30, 31, 32, 33])
        self.assertEqual(sive.STATS[sive.Stat.START_Z_MEAN].pool, sive.StatPool.SUMMARY_ONLY)
        self.assertEqual(sive.STATS[sive.Stat.AUTO_STEP_GRADS].pool, sive.StatPool.MEAN)

    def test_typed_exceptions(self):
        with self.assertRaises(sive.InvalidArgument) as cm:
            sive.Probe(steps=1)  # below the library's bound
        self.assertIsInstance(cm.exception, sive.SiveError)
        self.assertIsInstance(cm.exception, ValueError)
        self.assertEqual(cm.exception.status, sive.Status.INVALID_ARG)
        self.assertIn("steps", cm.exception.message)  # the library's own text
        with self.assertRaises(sive.SiveIOError):
            sive.load_checkpoint("/nonexistent/x.ckpt")

    def test_cancel_raises_cancelled_with_result(self):
        with sive.Probe(steps=400, groups=4, h=0.1, chains=2) as p:
            p.set_progress(lambda chain, step, total: step >= 50)
            with self.assertRaises(sive.Cancelled) as cm:
                p.run(quadratic(), [0.1, 0.2])
            r = cm.exception.result
            self.assertEqual(r.status, sive.Status.CANCELLED)
            d = r.to_dict()
            self.assertEqual(d["status"], int(sive.Status.CANCELLED))
            self.assertIn("cancelled", d["error"].lower())

    def test_closed_view_model_refused(self):
        """A view whose Model was closed (a library-made model's state freed
        by sive_model_destroy), or a model whose borrowed Dataset was, is
        refused by run() instead of being called (it crashed or read
        garbage); reset() and clear_eval_views() forget the views."""
        mlp = sive.Mlp(784, 8, 8, 10)
        train, test = sive.Dataset.open_dir(DATA)
        theta = mlp.init_params(1)
        opts = dict(steps=40, groups=4, eval_batch=8, grad_batch=8, chains=1, h=0.1)
        with mlp, train, test, sive.mlp_model(mlp, train) as m, sive.Probe(**opts) as p:
            with sive.mlp_model(mlp, test) as vm:
                p.add_eval_view("test", vm)
            with self.assertRaisesRegex(ValueError, "view 'test'.*closed"):
                p.run(m, theta)
            p.reset().set(**opts)
            with p.run(m, theta) as r:  # no view any more
                self.assertEqual(len(r.views), 0)
            # the data set an mlp_model borrows, closed under it
            with sive.mlp_model(mlp, test) as vm:
                p.add_eval_view("test", vm)
                test.close()
                with self.assertRaisesRegex(ValueError, "view 'test'.*Dataset is closed"):
                    p.run(m, theta)
                train.close()
                with self.assertRaisesRegex(ValueError, "Dataset is closed"):
                    p.run(m, theta)

    def test_grad_control_variate_keyword(self):
        """grad_control_variate=1 by keyword: the gradient pass at theta*
        (chain -1, every example, progress as chain -1), then two gradient
        calls per step on the same batch; the result keeps the option."""
        rng = np.random.default_rng(5)
        x, y = rng.normal(size=(60, 3)), rng.normal(size=60)
        calls = []

        def grad(th, b):
            calls.append((b.chain, b.step, tuple(b.index)))
            r = x[b.index] @ th - y[b.index]
            return x[b.index].T @ r / len(b.index), 0.5 * float(r @ r) / len(b.index)

        m = sive.Model(3, grad, loss=lambda th, b: 0.5 * (x[b.index] @ th - y[b.index]) ** 2,
                       n_examples=60)
        seen = []
        with sive.Probe(steps=40, groups=4, eval_batch=4, grad_batch=5, h=0.1, chains=1,
                        t=100.0, grad_control_variate=1) as p:
            p.set_progress(lambda chain, step, total: seen.append(chain) and False)
            r = p.run(m, [0.1, -0.2, 0.3])
        self.assertEqual(r.status, sive.Status.OK)
        self.assertEqual(r.option("grad_control_variate"), 1)
        self.assertEqual(calls[0], (-1, -1, tuple(range(60))))
        self.assertIn(-1, seen)
        steps = calls[1:]
        self.assertEqual(len(steps), 2 * 40)
        for k in range(0, len(steps), 2):  # theta_m, then theta* on the same batch
            self.assertEqual(steps[k], steps[k + 1])

    def test_traces_and_json(self):
        with sive.Probe(steps=200, groups=4, h=0.1, chains=2) as p, \
                p.run(quadratic(), [0.1, 0.2]) as r:
            tr = r.traces(0)
            self.assertEqual(set(tr), {t.name.lower() for t in sive.Trace})
            self.assertEqual(tr["lbar"].dtype, np.float64)
            self.assertEqual(tr["lbar"].shape, (200,))
            d = json.loads(r.to_json())
            self.assertEqual(d["sive"]["mean"], r.lambda_hat)
            self.assertEqual(d["mcse"], r.mcse)
            self.assertEqual(len(d["per_chain"]), 2)
            self.assertEqual(d["dtype"], "float64")
            self.assertIsNone(d["settings"]["anchor"])  # NaN -> null, as the CLI
            self.assertEqual(len(r.to_dict(traces=True)["traces"][1]["lbar"]), 200)

    @unittest.skipIf(CLI is None, "no sive program given")
    def test_same_keys_and_numbers_as_cli(self):
        opts = dict(steps=60, groups=4, eval_batch=8, grad_batch=8, chains=2, seed=3)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([CLI, "train", "--epochs", "0", "--hidden", "8,8", "--out", tmp,
                            "--data", DATA, "--quiet"], check=True, capture_output=True)
            ckpt = pathlib.Path(tmp) / "epoch_0.ckpt"
            args = [CLI, "probe", str(ckpt), "--data", DATA, "--format", "json", "--quiet"]
            for k, v in opts.items():
                args += ["--" + k.replace("_", "-"), str(v)]
            cli = json.loads(subprocess.run(args, check=True, capture_output=True,
                                            text=True).stdout)
            mlp, theta, _ = sive.load_checkpoint(ckpt)
        train, test = sive.Dataset.open_dir(DATA)
        with mlp, train, test, sive.mlp_model(mlp, train) as m, sive.Probe(**opts) as p, \
                p.run(m, theta, check=False) as r:
            d = r.to_dict()
        cli_only = {"checkpoint", "epoch", "train_seed", "layers", "dim", "train_loss",
                    "test_loss", "seconds", "settings_requested"}
        self.assertEqual(list(d), [k for k in cli if k not in cli_only])
        # Every option the CLI prints (it adds blis_threads; it may leave out
        # options that only concern its own plumbing).
        self.assertLessEqual(set(cli["settings"]) - {"blis_threads"}, set(d["settings"]))
        # ... with the values the run resolved and ran (metropolis 0 or 1,
        # never the requested -1 "auto"), as the result holds them; threads
        # is the CLI's own default (min(chains, cpus))
        for k in set(cli["settings"]) - {"blis_threads", "threads"}:
            self.assertEqual(cli["settings"][k], d["settings"][k], k)
        self.assertIn(cli["settings"]["metropolis"], (0, 1))
        self.assertEqual(cli["settings_requested"]["metropolis"], -1)
        self.assertEqual(list(d["per_chain"][0]), list(cli["per_chain"][0]))
        # Same run, same numbers (the CLI prints 10 significant digits).
        for key in ("sive", "raw_variance"):
            self.assertTrue(math.isclose(d[key]["mean"], cli[key]["mean"], rel_tol=1e-8),
                            (key, d[key], cli[key]))
        self.assertEqual(d["flag_names"], cli["flag_names"])
        self.assertEqual(d["health"], cli["health"])
        self.assertEqual((d["dtype"], cli["dtype"]), ("float32", "float32"))  # an MLP


class Helpers(unittest.TestCase):
    def test_wbic_t(self):
        self.assertAlmostEqual(sive.wbic_t(60000), 60000 / math.log(60000))
        self.assertAlmostEqual(sive.wbic_t(np.int64(8000)), 890.155, delta=0.001)
        with self.assertRaises(ValueError):
            sive.wbic_t(1)

    def test_round_to_error(self):
        # tools/fmt.h's examples (the sive program's rounding)
        self.assertEqual(sive.round_to_error(4519.1528, 10.2084), ("4519", "10"))
        self.assertEqual(sive.round_to_error(11560589.9, 668149.97), ("11560000", "670000"))
        self.assertEqual(sive.round_to_error(0.5518, 0.0483), ("0.552", "0.048"))
        self.assertEqual(sive.round_to_error(0.0996, 0.0996), ("0.10", "0.10"))
        self.assertEqual(sive.round_to_error(-0.0001, 0.5), ("0.00", "0.50"))  # never "-0"
        self.assertEqual(sive.round_to_error(1.23456, float("nan")), ("1.235", "nan"))
        # as tools/fmt.c's cli_round_pm(v, u, 0) and cli_round_pm(u, u, 0) print
        # them: halves away from zero (C's round(), not Python's to even),
        # 4 significant digits in fixed point without an error, a shared
        # exponent past 1e15 or below 1e-9
        self.assertEqual(sive.round_to_error(44.5, 10), ("45", "10"))
        self.assertEqual(sive.round_to_error(4525, 125), ("4530", "130"))
        self.assertEqual(sive.round_to_error(12.5, 12.5), ("13", "13"))
        self.assertEqual(sive.round_to_error(2.5, float("nan")), ("2.500", "nan"))
        self.assertEqual(sive.round_to_error(123456, float("nan")), ("123500", "nan"))
        self.assertEqual(sive.round_to_error(1.5e-5, 0), ("0.00001500", "0"))
        self.assertEqual(sive.round_to_error(1e20, 1e18), ("1.000e20", "1.0e18"))
        self.assertEqual(sive.round_to_error(1.23456e-11, 2e-12), ("1.23e-11", "2.0e-12"))
        self.assertEqual(sive.round_to_error(float("inf"), 1), ("inf", "1.0"))

    def test_python_md_first_example(self):
        # docs/python.md section 2's first example, verbatim: it runs, and on
        # its 2-d quadratic (lambda = d/2 = 1) the exact-loss defaults give
        # a healthy estimate within 4 MCSE of 1, printed as its comment says
        text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
        code = re.search(r"## 2\. Options, results, errors\n\n```python\n(.*?)```", text,
                         re.S).group(1)
        out = io.StringIO()
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(out):
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                exec(compile(code, "docs/python.md", "exec"), {})
            finally:
                os.chdir(cwd)
        line = out.getvalue().splitlines()[1]
        m = re.fullmatch(r"lambda-hat ([0-9.]+) \(MCSE ([0-9.]+)\), ESS [0-9]+, "
                         r"R-hat [0-9.]+, chains 4/4", line)
        self.assertIsNotNone(m, line)
        self.assertLess(abs(float(m.group(1)) - 1.0), 4 * float(m.group(2)), line)

    def test_str_of_a_result_carries_its_uncertainty(self):
        with sive.Probe(steps=400, h=0.1, chains=2) as p, \
                p.run(quadratic(), np.array([0.5, 0.5])) as r:
            lam, mcse = sive.round_to_error(r.lambda_hat, r.mcse)
            text = str(r)
            self.assertTrue(text.startswith(f"lambda-hat {lam} (MCSE {mcse}), ESS "), text)
            self.assertIn("R-hat", text)
            for name in r.flag_names:
                self.assertIn(name, text)


class ModelIdentity(unittest.TestCase):
    """sive_model.identity through the binding (the 0.3 layout): set by the
    caller or by mlp_model(), kept by results, checked by Result.merge()."""

    def test_caller_identity(self):
        self.assertEqual(quadratic().identity, 0)
        self.assertEqual(quadratic(2**64 - 1).identity, 2**64 - 1)
        for bad in (2**64, -1):
            with self.assertRaises(OverflowError):
                quadratic(bad)
        with self.assertRaises(TypeError):
            quadratic(5.0)

    def test_merge_checks_identity(self):
        opts = dict(steps=100, groups=4, h=0.5, t=100.0, chains=2, seed=3)

        def part(identity, begin, end):
            with quadratic(identity) as m, \
                    sive.Probe(chain_begin=begin, chain_end=end, **opts) as p:
                return p.run(m, [0.1, 0.2])
        with part(5, 0, 2) as whole, part(5, 0, 1) as a, part(5, 1, 2) as b, \
                part(6, 1, 2) as other, part(0, 1, 2) as none:
            with sive.Result.merge([b, a]) as m:  # any order
                self.assertEqual(m.lambda_hat, whole.lambda_hat)  # bit for bit
                self.assertEqual([m.stat("sive", k) for k in range(2)],
                                 [whole.stat("sive", k) for k in range(2)])
                # and it survives the result file
                back, _ = sive.Result.from_bytes(m.to_bytes())
                with back, sive.Result.merge([back]) as again:
                    self.assertEqual(again.lambda_hat, whole.lambda_hat)
            for wrong, ident in ((other, "0000000000000006"), (none, "0000000000000000")):
                with self.assertRaises(sive.InvalidArgument) as e:
                    sive.Result.merge([a, wrong])
                self.assertIn(f"identity {ident}, part 0: 0000000000000005", str(e.exception))
            with self.assertRaises(sive.InvalidArgument):
                sive.Result.merge([])
            with self.assertRaises(sive.InvalidArgument):  # chain 0 twice
                sive.Result.merge([a, a, b])

    def test_mlp_model_identity(self):
        """The library's constructor sets it from the data set's content
        (with the 0.2 layout it could not: the field was not there)."""
        mlp = sive.Mlp(784, 8, 8, 10)
        train, test = sive.Dataset.open_dir(DATA)
        with mlp, train, test, sive.mlp_model(mlp, train) as m, \
                sive.mlp_model(mlp, train) as m2, sive.mlp_model(mlp, test) as mt:
            self.assertNotEqual(m.identity, 0)
            self.assertEqual(m.identity, m2.identity)
            self.assertNotEqual(m.identity, mt.identity)


class BindingIntegers(unittest.TestCase):
    """Every integer crossing the binding is range-checked (issue 23 O2):
    ctypes would wrap 2**64 + 100 to 100 and 2**64 + 4 to 4."""

    def test_options(self):
        with self.assertRaises(OverflowError):
            sive.Probe(steps=2**64 + 100)
        with self.assertRaises(TypeError):
            sive.Probe(steps=100.0)
        with self.assertRaises(OverflowError):
            sive.Probe(steps=2**63)
        with self.assertRaises(sive.SiveError):  # the end of int64 reaches the library
            sive.Probe(steps=2**63 - 1)

    def test_seed(self):
        """The seed is a uint64: every 64-bit value, -2**63 .. 2**64 - 1 (a
        negative one the bits of 2**64 + seed), read back unsigned."""
        for bad in (2**64, -2**63 - 1, 2**64 + 100):
            with self.assertRaises(OverflowError) as e:
                sive.Probe(seed=bad)
            self.assertIn("outside [-9223372036854775808, 18446744073709551615]",
                          str(e.exception))
        with self.assertRaises(TypeError):
            sive.Probe(seed=1.0)
        info = sive.option_info("seed")  # its bounds are the int64 setter's
        self.assertEqual([info.accepts(v) for v in (-2**63 - 1, -2**63, 2**64 - 1, 2**64)],
                         [False, True, True, False])
        cases = ((0, 0), (7, 7), (2**63 - 1, 2**63 - 1), (2**63, 2**63), (-2**63, 2**63),
                 (-1, 2**64 - 1), (2**64 - 1, 2**64 - 1), (np.uint64(2**64 - 1), 2**64 - 1),
                 ("18446744073709551615", 2**64 - 1))
        with sive.Probe() as p:
            for given, back in cases:
                p.set(seed=given)
                self.assertEqual(p.get("seed"), back, given)
                self.assertEqual(p.values()["seed"], back, given)
            p.set(seed=7)
            with self.assertRaises(OverflowError):
                p.set(seed=2**64)
            self.assertEqual(p.get("seed"), 7)  # unchanged
        # 2**64 - 1 runs exactly as -1 (the same bits), and the result says so
        opts = dict(steps=200, groups=4, h=0.5, t=100.0, chains=2)
        with sive.Probe(seed=2**64 - 1, **opts) as p, p.run(quadratic(), [0.1, 0.2]) as a, \
                sive.Probe(seed=-1, **opts) as q, q.run(quadratic(), [0.1, 0.2]) as b, \
                sive.Probe(seed=5, **opts) as o, o.run(quadratic(), [0.1, 0.2]) as c:
            self.assertEqual(a.option("seed"), 2**64 - 1)
            self.assertEqual(b.option("seed"), 2**64 - 1)
            self.assertEqual([a.stat("sive", k) for k in range(2)],
                             [b.stat("sive", k) for k in range(2)])
            self.assertNotEqual([a.stat("sive", k) for k in range(2)],
                                [c.stat("sive", k) for k in range(2)])

    def test_model_fields(self):
        for bad in (2**64 + 4, -1):
            with self.assertRaises(OverflowError):
                sive.Model(bad, lambda th, b: th.copy(), group_loss=lambda th, b: th[:1])
        with self.assertRaises(OverflowError):
            sive.Model(2, lambda th, b: th.copy(), loss=lambda th, b: th[:1],
                       n_examples=2**64 + 8)

    def test_function_arguments(self):
        with sive.Probe(steps=50, groups=4, h=0.1, chains=1) as p, \
                p.run(quadratic(), [0.1, 0.2]) as r:
            with self.assertRaises(OverflowError):
                r.stat("sive", 2**32)  # int32 chain: would wrap to chain 0
            with self.assertRaises(OverflowError):
                r.chain_status(2**32)
            self.assertTrue(math.isfinite(r.stat("sive", 0)))
        with self.assertRaises(OverflowError):
            sive.Rng(seed=2**64)
        with self.assertRaises(OverflowError):
            sive.Mlp(2**64 + 784)
        with self.assertRaises(OverflowError):
            sive.strerror(2**31)


class CallbackArrays(unittest.TestCase):
    """theta and batch.index kept after the run hold their call's values
    (issue 23 P1: they were views of library memory, freed after the run:
    reading one at dim 2e6 crashed the interpreter)."""

    def test_kept_theta_and_index_outlive_the_run(self):
        dim, kept, seen = 2_000_000, [], []

        def grad(theta, batch):
            if len(kept) < 3:
                kept.append((theta, theta[::1000], batch.index))
                seen.append((theta.copy(), batch.index.copy()))
            return theta - 0.5, 0.0

        def loss(theta, batch):
            return np.full(batch.group_size, float(theta[0]))

        th0 = np.full(dim, 0.5, np.float32)
        model = sive.Model(dim, grad, loss=loss, n_examples=100, dtype=np.float32)
        with sive.Probe(steps=6, groups=2, eval_batch=2, grad_batch=3, chains=2, h=0.1,
                        t=10.0) as p, p.run(model, th0):
            pass
        model.close()
        big = [np.ones(dim, np.float32) for _ in range(4)]  # reuse the freed memory
        self.assertEqual(len(kept), 3)
        for (theta, stride, index), (theta0, index0) in zip(kept, seen):
            self.assertTrue(np.array_equal(theta, theta0))
            self.assertTrue(np.array_equal(stride, theta0[::1000]))
            self.assertTrue(np.array_equal(index, index0))
            self.assertFalse(theta.flags.writeable)
        self.assertFalse(np.array_equal(kept[0][0], kept[1][0]))  # distinct snapshots
        del big

    def test_buffer_reused_when_not_kept(self):
        ids = set()

        def grad(theta, batch):
            ids.add(id(theta))
            return theta.copy(), 0.0

        model = sive.Model(3, grad, group_loss=lambda th, b: np.zeros(b.n_groups))
        with sive.Probe(steps=20, groups=2, chains=1, h=0.1) as p, p.run(model, [1, 2, 3]):
            pass
        self.assertEqual(len(ids), 1)  # one copy per call, no allocation


if __name__ == "__main__":
    unittest.main(verbosity=1)
