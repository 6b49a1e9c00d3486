"""Probe a PyTorch model in-process: sive.torch.probe().

    import torch, sive.torch

    net = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 10))
    ...train net on (x, y)...
    r = sive.torch.probe(net, torch.nn.CrossEntropyLoss(), x, y,
                         t=sive.torch.wbic_t(len(x)), steps=4000, chains=4)
    print(r.lambda_hat, "MCSE", r.mcse)

The data may also be numpy arrays, tuples or dicts of inputs, a Dataset or
a DataLoader (read once into memory: per-example losses need indexable
data), and the loss a batch_loss(module, batch) returning per-example
losses (probe()'s docstring).  The model's loss is a mean of per-example
losses, and the adapter gives the library

 - the gradient callback: a forward and backward pass on the B_grad
   examples the library drew, with torch.autograd.grad (nothing is
   accumulated in .grad, no graph outlives the call);
 - the per-example loss callback: one forward pass under torch.no_grad()
   on the distinct examples of the N*B_eval the library drew (so its
   deduplication applies), in chunks of at most eval_chunk examples, with
   the loss computed with reduction="none"; both callbacks use one
   definition of the loss (_Loss: weighted losses included).

The parameters that require grad (float32 or float64, all alike, on the
CPU) are flattened in module.parameters() order into theta*.  During the
run the module's parameters are views of one flat buffer the chain writes;
afterwards each parameter gets its original tensor back (values, identity,
requires_grad and .grad untouched), the module's training flag is restored
(the probe runs in eval() mode: dropout and batch-norm statistics would
make the loss random), and this happens on errors and cancellation too.

Threads.  Chains run one after the other on one library thread by default
(threads=1), with torch's intra-op threads as the caller set them.  With
threads=k > 1 the library runs k chains at once on its own threads; each
extra worker gets a deep copy of the module (made before the run), so
workers never share parameters.  Python holds the GIL between torch calls,
so for a small model k workers mostly wait for each other: probe() then
caps torch's threads at cores // k and keeps k only when a short pilot
measures it faster than one worker.  A probe is not reentrant for the same
module: do not train or probe the module from another thread while a probe
runs.
"""

import contextlib
import copy
import math
import os
import sys
import threading
import time

import numpy as np

import sive

__all__ = ["probe", "model", "TorchModel", "wbic_t"]


def _torch():
    try:
        import torch
    except ImportError as e:  # the package itself works without torch
        raise ImportError("sive.torch needs PyTorch (Debian: apt-get install "
                          "python3-torch)") from e
    return torch


wbic_t = sive.wbic_t  # t from the data size (also here, where torch users look)


# ---------------------------------------------------------------------------
# Data: tensors, numpy arrays, tuples and dicts of them, or any iterable of
# batches (a DataLoader), all turned into one nested structure of tensors
# whose leaves share their first dimension n (the examples).
# ---------------------------------------------------------------------------


def _tree_map(fn, x):
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple
        return type(x)(*(_tree_map(fn, v) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_tree_map(fn, v) for v in x)
    if isinstance(x, dict):
        return {k: _tree_map(fn, v) for k, v in x.items()}
    return fn(x)


def _leaves(x):
    out = []
    _tree_map(out.append, x)
    return out


def _is_leaf(torch, x):
    return isinstance(x, (torch.Tensor, np.ndarray))


def _is_table(torch, x, depth=1):
    """A tensor or array, or a tuple/list/dict of them (nested up to depth
    levels): indexable as is.  A list of batches (dicts, pairs) is not."""
    if _is_leaf(torch, x):
        return True
    if depth == 0:
        return False
    values = x.values() if isinstance(x, dict) else x if isinstance(x, (tuple, list)) else None
    return bool(values) and all(_is_table(torch, v, depth - 1) for v in values)


def _as_tensor(torch, x, float_dtype):
    """numpy -> torch without a copy where possible; numpy floats take the
    model's dtype and integers int64 (what the losses expect); tensors are
    left as they are."""
    if isinstance(x, torch.Tensor):
        return x
    a = np.asarray(x)
    if a.dtype.kind == "f":
        return torch.from_numpy(np.ascontiguousarray(a)).to(float_dtype)
    if a.dtype.kind in "iub":
        return torch.from_numpy(np.ascontiguousarray(a, np.int64 if a.dtype.kind != "b"
                                                     else np.bool_))
    return torch.as_tensor(a)


def _nbytes(data):
    return sum(t.element_size() * t.nelement() for t in _leaves(data))


def _materialise(torch, batches, say):
    """One pass over an iterable of batches (a DataLoader, a map-style
    Dataset's items, a generator), concatenated along the first dimension.
    The library draws examples by index at every step, so the data must be
    indexable: it is read once and held in memory."""
    if isinstance(batches, torch.utils.data.Dataset) and not isinstance(
            batches, torch.utils.data.IterableDataset) and hasattr(batches, "__len__"):
        batches = torch.utils.data.DataLoader(batches, batch_size=1024)
    what = type(batches).__name__
    parts, nbytes, t0 = [], 0, time.monotonic()
    try:
        for b in batches:
            b = _tree_map(lambda x: x if isinstance(x, torch.Tensor)
                          else torch.as_tensor(np.asarray(x)), b)
            if b is None or not _is_table(torch, b, depth=2):
                raise TypeError(f"a batch of the {what} is a {type(b).__name__}: expected "
                                "tensors or tuples/lists/dicts of tensors")
            parts.append(b)
            nbytes += _nbytes(b)
        if not parts:
            raise ValueError(f"the {what} yielded no batch")
        leaves = [_leaves(p) for p in parts]
        cat = [torch.cat([lv[k] for lv in leaves]) for k in range(len(leaves[0]))]
    except MemoryError:
        raise MemoryError(f"sive.torch: holding the data of the {what} in memory failed "
                          f"after {nbytes / 2**20:.0f} MB: per-example losses need "
                          "indexable data; pass tensors or numpy arrays (memory-mapped "
                          "if needed) instead") from None
    it = iter(cat)
    data = _tree_map(lambda _: next(it), parts[0])
    say(f"sive.torch: read {len(cat[0])} examples from the {what} into memory "
        f"({_nbytes(data) / 2**20:.1f} MB, {time.monotonic() - t0:.1f} s): the probe draws "
        "examples by index, so the data is held, not streamed")
    return data


class _Data:
    """The examples: data (the nested structure of tensors), n, and how a
    batch of them is split into the module's inputs and the loss's targets."""

    def __init__(self, torch, inputs, targets, float_dtype, paired, say):
        if inputs is None:
            raise ValueError("no data: pass inputs (tensors, numpy arrays, a tuple or dict of "
                             "them, a Dataset or a DataLoader)")
        self.split = targets is not None
        data = inputs
        if not _is_table(torch, inputs):
            if targets is not None:
                raise TypeError("with targets, inputs must be tensors or numpy arrays (or a "
                                "tuple/dict of them); pass a DataLoader as inputs alone")
            data = _materialise(torch, data, say)
            if paired:  # (inputs, targets) batches, as a DataLoader of pairs yields
                if not (isinstance(data, (tuple, list)) and len(data) == 2):
                    raise TypeError("the batches are not (inputs, targets) pairs: pass "
                                    "batch_loss=fn(module, batch) to evaluate them")
                self.split = True
        elif targets is not None:
            if not _is_leaf(torch, targets):
                raise TypeError("targets must be a tensor or a numpy array")
            data = (inputs, targets)
        self.data = _tree_map(lambda x: _as_tensor(torch, x, float_dtype), data)
        sizes = {len(t) if t.dim() > 0 else -1 for t in _leaves(self.data)}
        if len(sizes) != 1 or -1 in sizes:
            raise ValueError(f"the data's tensors do not share their first dimension "
                             f"(the examples): sizes {sorted(sizes)}")
        self.n = sizes.pop()
        if self.n == 0:
            raise ValueError("no examples")
        if any(t.device.type != "cpu" for t in _leaves(self.data)):
            raise ValueError("sive.torch probes CPU modules and data (move them with .cpu())")

    def take(self, idx):
        return _tree_map(lambda t: t[idx], self.data)

    @property
    def targets(self):
        return self.data[1] if self.split else None


def _describe(data):
    """The data's tensors, for messages: shape and dtype of each."""
    return "data " + ", ".join(f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}"
                               for t in _leaves(data))


def _dtype_name(module):
    dtypes = {str(p.dtype).replace("torch.", "") for p in module.parameters()}
    return "/".join(sorted(dtypes))


def _call(module, x):
    """module(x), module(*x) for a tuple/list of inputs, module(**x) for a dict."""
    if isinstance(x, dict):
        return module(**x)
    if isinstance(x, (tuple, list)):
        return module(*x)
    return module(x)


# ---------------------------------------------------------------------------
# Losses: what a batch's loss and its examples' losses are
# ---------------------------------------------------------------------------


def _per_example_loss(loss_fn):
    """A function (output, target) -> per-example losses, from a loss with a
    `reduction` attribute (nn losses) or one taking reduction= (functional)."""
    if hasattr(loss_fn, "reduction"):
        if loss_fn.reduction != "mean":
            raise ValueError(f"loss_fn.reduction is {loss_fn.reduction!r}: the probe needs "
                             "a mean of per-example losses (reduction='mean')")
        per = copy.copy(loss_fn)
        per.reduction = "none"
        return per
    return lambda out, y: loss_fn(out, y, reduction="none")


def _example_weights(torch, loss_fn, targets):
    """For a class-index CrossEntropyLoss / NLLLoss with weight= or an
    ignore_index that occurs: each target's weight (weight[class], 0 when
    ignored), the weights torch's reduction="mean" divides by.  None when
    the mean is the plain mean over examples."""
    if not isinstance(loss_fn, (torch.nn.CrossEntropyLoss, torch.nn.NLLLoss)):
        return None
    if targets is None or not isinstance(targets, torch.Tensor) or targets.is_floating_point():
        return None  # class probabilities: the mean is over examples
    kept = targets != loss_fn.ignore_index
    weight = getattr(loss_fn, "weight", None)
    if weight is None and bool(kept.all()):
        return None
    w = torch.ones(targets.shape, dtype=torch.float64) if weight is None \
        else weight.double()[targets.clamp(min=0) * kept]
    return w * kept


class _Loss:
    """The model's loss, one definition for the gradient and the evaluation:
    L(theta) = mean over the data set of per-example losses l_i, the
    gradient callback differentiating the batch mean of the same l_i the
    loss callback returns.

     - batch_loss(module, batch): the user's per-example losses;
     - an (output, target) loss whose reduction="mean" is the plain mean of
       its reduction="none" values: the gradient uses the loss itself (as
       sive.torch always did), the evaluation reduction="none";
     - CrossEntropyLoss / NLLLoss with weight= or ignore_index: torch's mean
       is sum(w l) / sum(w) over the batch, not a mean over examples; over
       the data set it is L = sum_i w_i l_i / W with W the data set's total
       weight, the mean of l'_i = n w_i l_i / W, which both callbacks use.
    Any other loss whose mean is not the mean of its per-example values is
    refused (checked on the first examples at construction)."""

    def __init__(self, torch, loss_fn, batch_loss, data, module, what="data"):
        self.torch, self.data, self.what = torch, data, what
        self.batch_loss, self.loss_fn, self.scale = batch_loss, loss_fn, None
        if batch_loss is not None:
            return
        if loss_fn is None:
            raise ValueError("pass loss_fn (output, target) or batch_loss(module, batch)")
        if not data.split:
            raise ValueError("loss_fn(output, target) needs targets: pass them, or "
                             "(inputs, targets) batches, or use batch_loss(module, batch)")
        self.per = _per_example_loss(loss_fn)
        w = _example_weights(torch, loss_fn, data.targets)
        if w is not None:
            total = float(w.sum())
            if not total > 0:
                raise ValueError("every example has weight 0 (ignored or zero class weight)")
            self.scale = data.n / total  # l'_i = scale * (weighted l_i)
        self._check_mean(module)

    def _check_mean(self, module):
        """torch's mean on a few examples must equal the per-example losses'
        mean under this definition, or the probe would estimate another
        loss's LLC (weights, ignored examples, a custom normalisation)."""
        torch = self.torch
        idx = torch.arange(min(self.data.n, 256))
        x, y = self.data.take(idx)
        with torch.no_grad():
            try:
                out = _call(module, x)
                mean = float(self.loss_fn(out, y))
                per = self.per(out, y)
            except RuntimeError as e:  # torch's shape and dtype errors
                raise ValueError(f"the module and loss fail on the {self.what}'s first examples "
                                 f"({_describe(self.data.data)}; parameters "
                                 f"{_dtype_name(module)}): {e}") from e
            if not math.isfinite(mean):
                raise ValueError(f"the loss at theta* is {mean} on the first {len(idx)} "
                                 "examples: the probe needs a finite loss (check the data "
                                 "for nan or inf)")
            if self.scale is None:
                if per.dim() == 0 or per.shape[0] != len(idx):
                    raise ValueError(f"the per-example loss has shape {tuple(per.shape)}, "
                                     f"expected ({len(idx)}, ...): the loss must be a mean "
                                     "of per-example losses")
                ours = float(per.reshape(len(idx), -1).mean(1).mean())
            else:
                w = _example_weights(torch, self.loss_fn, y)
                if w is None or not float(w.sum()) > 0:
                    return  # no weighted example among the first ones
                ours = float(per.double().sum() / w.sum())
        tol = 1e-4 if out.dtype == torch.float32 else 1e-9
        if not math.isclose(mean, ours, rel_tol=tol, abs_tol=tol * 1e-3):
            raise ValueError(
                f"loss_fn's reduction='mean' ({mean:.6g} on the first {len(idx)} examples) is "
                f"not the mean of its reduction='none' values ({ours:.6g}): it weights or "
                "drops examples in a way sive.torch cannot reproduce per example.  Pass "
                "batch_loss=fn(module, batch) returning each example's loss, whose mean over "
                "the data set is the loss you mean")

    def examples(self, module, batch):
        """Per-example losses (a 1-D tensor) of a batch (a data.take())."""
        if self.batch_loss is not None:
            losses = self.batch_loss(module, batch)
            if not isinstance(losses, self.torch.Tensor) or losses.dim() != 1:
                raise ValueError("batch_loss(module, batch) must return a 1-D tensor of "
                                 "per-example losses, got "
                                 f"{getattr(losses, 'shape', type(losses).__name__)}")
            return losses
        x, y = batch
        losses = self.per(_call(module, x), y)
        if losses.dim() == 0:
            raise ValueError(f"the per-example loss has shape {tuple(losses.shape)}: "
                             "the loss must be a mean of per-example losses")
        if self.scale is not None:  # weighted: l'_i = scale * sum over trailing dims
            return losses.reshape(losses.shape[0], -1).sum(1) * self.scale
        if losses.dim() > 1:  # e.g. MSE on (B, k) outputs: mean per example
            losses = losses.reshape(losses.shape[0], -1).mean(1)
        return losses

    def batch_mean(self, module, batch):
        """The mean loss of a batch, differentiable."""
        if self.batch_loss is None and self.scale is None:
            x, y = batch
            return self.loss_fn(_call(module, x), y)
        return self.examples(module, batch).mean()


# ---------------------------------------------------------------------------
# Progress: a bar with an ETA on a terminal
# ---------------------------------------------------------------------------


class _Bar:
    """Progress of a run as a bar with an ETA: tqdm when it is installed, a
    plain line otherwise (rewritten in place on a terminal, a line every
    10 % elsewhere).  update() is the library's progress callback (chains
    on several threads)."""

    def __init__(self, total_steps, chains, out=None, use_tqdm=None):
        self.out = sys.stderr if out is None else out
        self.total, self.chains = total_steps * chains, chains
        self.steps = total_steps
        self._done, self._lock = {}, threading.Lock()
        self._t0 = time.monotonic()
        self._last, self._shown = 0.0, -1
        self._tty = hasattr(self.out, "isatty") and self.out.isatty()
        self._tqdm = None
        if use_tqdm is None or use_tqdm:
            try:
                from tqdm import tqdm
            except ImportError:
                if use_tqdm:
                    raise
            else:
                self._tqdm = tqdm(total=self.total, unit="step", desc="sive", file=self.out,
                                  dynamic_ncols=True, smoothing=0.1)

    def update(self, chain, step, total):
        if chain < 0:  # the pass at theta* of control variates counts examples, not steps
            return
        with self._lock:
            before = sum(self._done.values())
            self._done[chain] = step
            done = sum(self._done.values())
            if self._tqdm is not None:
                self._tqdm.update(done - before)
                return
            now = time.monotonic()
            tenth = 10 * done // max(self.total, 1)
            if self._tty and now - self._last < 0.2 and done < self.total:
                return
            if not self._tty and tenth == self._shown:
                return
            self._last, self._shown = now, tenth
            self.out.write(("\r" if self._tty else "") + self.line(done, now - self._t0)
                           + ("" if self._tty else "\n"))
            self.out.flush()

    def line(self, done, elapsed):
        """The plain progress line: percentage, steps, chains done, ETA."""
        frac = done / max(self.total, 1)
        eta = elapsed * (1 - frac) / frac if frac > 0 else math.nan
        finished = sum(1 for s in self._done.values() if s >= self.steps)
        return (f"sive: {100 * frac:5.1f}% {done}/{self.total} steps, {finished}/{self.chains} "
                f"chains done, {_clock(elapsed)} elapsed, ETA {_clock(eta)}")

    def close(self):
        if self._tqdm is not None:
            self._tqdm.close()
        elif self._tty and self._last:
            self.out.write("\n")
            self.out.flush()


def _clock(seconds):
    if not math.isfinite(seconds):
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


class _Replica:
    """One module whose parameters are views of one flat buffer."""

    def __init__(self, module, params, flat):
        self.module, self.params, self.flat = module, params, flat
        self.flat_np = flat.numpy()  # shares memory: writing it moves the module
        off = 0
        for p in params:
            n = p.numel()
            p.data = flat[off:off + n].view_as(p)
            off += n


class TorchModel:
    """The description of a torch module for the library, usable for
    several runs: model(...) returns one, probe(...) builds and closes one.
    Use it as a context manager; close() (or the with block's end) gives the
    module its parameters back.  Between construction and close() the
    module's parameters are views of the adapter's buffer: train it only
    after close().  Arguments as for probe(); views={name: data} gives
    .views, {name: sive.Model} for Probe.add_eval_view()."""

    def __init__(self, module, loss_fn=None, inputs=None, targets=None, *, batch_loss=None,
                 threads=1, eval_chunk=4096, grad_chunk=None, quiet=False, views=None):
        torch = self._torch = _torch()
        if not isinstance(module, torch.nn.Module):
            raise TypeError("module must be a torch.nn.Module")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the module has no parameters that require grad")
        dtypes = {p.dtype for p in params}
        if len(dtypes) != 1 or next(iter(dtypes)) not in (torch.float32, torch.float64):
            raise TypeError(f"parameters must all be float32 or all float64, got {dtypes}")
        if any(p.device.type != "cpu" for p in params):
            raise ValueError("sive.torch probes CPU modules and data (move them with .cpu())")
        self.dtype = next(iter(dtypes))
        for name, p in module.named_parameters():
            if p.requires_grad and not bool(torch.isfinite(p.detach()).all()):
                raise ValueError(f"parameter {name!r} has non-finite entries (nan or inf): "
                                 "theta* must be finite (did the training diverge?)")
        say = (lambda text: None) if quiet else (lambda text: print(text, file=sys.stderr))
        self.data = _Data(torch, inputs, targets, self.dtype,
                          paired=batch_loss is None, say=say)
        self.np_dtype = np.float32 if self.dtype == torch.float32 else np.float64
        self.dim = sum(p.numel() for p in params)
        self.names = [(n, p.numel()) for n, p in module.named_parameters() if p.requires_grad]
        self.module = module
        self.eval_chunk = int(eval_chunk)
        self.grad_chunk = None if grad_chunk is None else int(grad_chunk)
        self._saved = [p.data for p in params]
        self._training = module.training
        with torch.no_grad():
            theta = torch.cat([p.detach().reshape(-1) for p in params])
        self.theta_star = theta.numpy().copy()
        # Worker 0 drives the module itself; extra workers drive deep copies
        # (made before the module's parameters become views of a buffer).
        extra = [copy.deepcopy(module) for _ in range(max(0, int(threads) - 1))]
        self.sive_model = None
        self._closed = False
        self._replicas = []
        try:
            for m in [module] + extra:
                ps = [p for p in m.parameters() if p.requires_grad]
                self._replicas.append(_Replica(m, ps, theta.clone()))
                m.eval()
            # (eval mode first: the loss check must not see dropout)
            self.loss = _Loss(torch, loss_fn, batch_loss, self.data, module)
            self.sive_model = sive.Model(self.dim, self._grad, loss=self._loss,
                                         n_examples=self.data.n, dtype=self.np_dtype)
            self.views = {name: self._view(str(name), v, loss_fn, batch_loss, say)
                          for name, v in (views or {}).items()}
        except BaseException:  # give the module back as it was
            self._restore(params)
            raise

    def _view(self, name, data, loss_fn, batch_loss, say):
        """An evaluation view: the same module and loss on another data set
        (data in any form probe() takes; with loss_fn, (inputs, targets) or
        batches of them), a sive.Model whose loss callback evaluates the
        worker's replica at the chain's theta (its grad is never used)."""
        torch = self._torch
        if isinstance(data, sive.Model):
            raise TypeError(f"views[{name!r}]: sive.torch takes the view's data (e.g. "
                            "(inputs, targets) or a DataLoader), not a sive.Model")
        try:
            if batch_loss is None and isinstance(data, (tuple, list)) and len(data) == 2 \
                    and _is_table(torch, data[0]) and _is_leaf(torch, data[1]):
                vd = _Data(torch, data[0], data[1], self.dtype, paired=True, say=say)
            else:
                vd = _Data(torch, data, None, self.dtype, paired=batch_loss is None, say=say)
            try:
                vloss = _Loss(torch, loss_fn, batch_loss, vd, self.module, what="view")
                with torch.no_grad():  # the module must evaluate the view's examples
                    losses = vloss.examples(self.module, vd.take(torch.arange(min(vd.n, 8))))
            except RuntimeError as e:  # torch's shape errors
                raise ValueError(f"the module and loss fail on the view's first examples "
                                 f"(shapes {[tuple(t.shape) for t in _leaves(vd.data)]}): "
                                 f"{e}") from e
            if losses.shape != (min(vd.n, 8),):
                raise ValueError(f"the per-example losses have shape {tuple(losses.shape)}, "
                                 f"expected ({min(vd.n, 8)},)")
        except (ValueError, TypeError, RuntimeError, IndexError, KeyError) as e:
            kind = TypeError if isinstance(e, TypeError) else ValueError
            raise kind(f"views[{name!r}]: {e}") from e

        def loss(theta, batch):
            return self._evaluate(theta, batch, vd, vloss)

        return sive.Model(self.dim, None, loss=loss, n_examples=vd.n, dtype=self.np_dtype)

    def param_ranges(self, params):
        """params as (begin, end) ranges of theta: parameter names (as
        module.named_parameters() gives them; a name that is a prefix
        followed by '.' selects the submodule's parameters, so "1" is layer
        1's weight and bias), or a predicate(name, tensor) -> bool, or
        None (all: [])."""
        if params is None:
            return []
        tensors = dict(self.module.named_parameters())
        if callable(params):
            chosen = [n for n, _ in self.names if params(n, tensors[n])]
        else:
            if isinstance(params, str):
                params = [params]
            chosen = []
            for want in params:
                hit = [n for n, _ in self.names if n == want or n.startswith(want + ".")]
                if not hit:
                    raise ValueError(f"no trainable parameter named {want!r} "
                                     f"(names: {', '.join(n for n, _ in self.names)})")
                chosen += hit
        if not chosen:
            raise ValueError("params selects no parameter")
        ranges, off = [], 0
        for n, k in self.names:
            if n in chosen:
                ranges.append((off, off + k))
            off += k
        return sive.params_ranges(ranges)

    # The callbacks.  theta is a read-only numpy array (sive owns it).
    def _set(self, theta, batch):
        r = self._replicas[batch.worker]
        r.flat_np[:] = theta
        return r

    def _grad(self, theta, batch):
        torch = self._torch
        r = self._set(theta, batch)
        idx = torch.from_numpy(batch.index.astype(np.int64))
        n = len(idx)
        chunk = self.grad_chunk or n
        grads, total = None, 0.0
        with torch.enable_grad():
            for lo in range(0, n, chunk):
                sel = idx[lo:lo + chunk]
                loss = self.loss.batch_mean(r.module, self.data.take(sel))
                weight = len(sel) / n
                g = torch.autograd.grad(loss, r.params)
                total += float(loss.detach()) * weight
                if grads is None:
                    grads = [x * weight for x in g]
                else:
                    for a, b in zip(grads, g):
                        a.add_(b, alpha=weight)
        flat = torch.cat([g.reshape(-1) for g in grads])
        return flat.numpy(), total

    def _loss(self, theta, batch):
        return self._evaluate(theta, batch, self.data, self.loss)

    def _evaluate(self, theta, batch, data, loss):
        """Per-example losses of data's examples batch.index at theta, on
        the batch's worker's replica (a view evaluates the chain's theta,
        on the chain's worker, after its own evaluation)."""
        torch = self._torch
        r = self._set(theta, batch)
        idx = torch.from_numpy(batch.index.astype(np.int64))
        out = np.empty(len(idx), np.float64)
        with torch.no_grad():
            for lo in range(0, len(idx), self.eval_chunk):
                sel = idx[lo:lo + self.eval_chunk]
                losses = loss.examples(r.module, data.take(sel))
                if losses.shape[0] != len(sel):
                    raise ValueError(f"the per-example losses have shape "
                                     f"{tuple(losses.shape)}, expected ({len(sel)},)")
                out[lo:lo + len(sel)] = losses.double().numpy()
        return out

    def _restore(self, params):
        self._closed = True
        for p, saved in zip(params, self._saved):
            p.data = saved
        self.module.train(self._training)
        self._replicas = []
        for v in getattr(self, "views", {}).values():
            v.close()
        if self.sive_model is not None:
            self.sive_model.close()

    def close(self):
        """Give the module its original parameter tensors and mode back."""
        if not self._closed:
            self._restore(self._replicas[0].params)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def model(module, loss_fn=None, inputs=None, targets=None, **kw):
    """A TorchModel (to run several probes on one checkpoint with
    sive.Probe.run(tm.sive_model, tm.theta_star)); close it afterwards."""
    return TorchModel(module, loss_fn, inputs, targets, **kw)


def _torch_threads(torch, threads):
    """torch's intra-op threads for a run with `threads` probe workers: with
    one worker, torch's own setting; with k > 1, at most cores // k each,
    so that k workers x torch threads do not oversubscribe the cores (which
    made threads=2 slower than 1).  None: leave it."""
    if threads <= 1:
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    want = max(1, (cores or 1) // threads)
    return want if torch.get_num_threads() > want else None


_PILOT_STEPS = 24


def _pilot_seconds(tm, options, threads, chains):
    """Wall seconds per chain step of a short run with `threads` workers."""
    pilot = {**options, "steps": _PILOT_STEPS, "chains": chains, "chain_begin": 0,
             "chain_end": 0, "threads": threads, "burn_in": 0.0, "eval_stride": 1,
             "control_variate": 0}
    with sive.Probe(**pilot) as q:
        t0 = time.perf_counter()
        q.run(tm.sive_model, tm.theta_star, check=False).close()
        return (time.perf_counter() - t0) / (_PILOT_STEPS * chains)


def _pick_threads(tm, p, options, say):
    """threads=k > 1 is kept only when a pilot measures it faster than one
    worker: the callbacks are Python, which holds the GIL between torch
    calls, so for a small model k workers mostly wait for each other (and
    were slower than one).  Results do not depend on threads, so choosing
    is free.  The pilot costs 4 x 24 steps of k chains; runs shorter than
    20 pilots are not measured."""
    k = p.get("threads")
    chains = (p.get("chain_end") or p.get("chains")) - p.get("chain_begin")
    if k <= 1 or min(k, chains) <= 1:
        return
    k = min(k, chains)  # more workers than chains never run
    if p.get("steps") * chains < 20 * 4 * _PILOT_STEPS * k:
        return
    times = {1: math.inf, k: math.inf}
    for th in (1, k, 1, k):  # alternating: the first run also warms torch up
        times[th] = min(times[th], _pilot_seconds(tm, options, th, k))
    ms = {th: 1e3 * t for th, t in times.items()}
    if times[1] <= times[k]:
        p.set(threads=1)
        say(f"sive.torch: threads={k} measured {ms[k]:.3g} ms per chain step against "
            f"{ms[1]:.3g} with threads=1 (a {_PILOT_STEPS}-step pilot): the Python callbacks "
            "hold the GIL, so workers wait for each other; running with threads=1")
    else:
        say(f"sive.torch: threads={k}: {ms[k]:.3g} ms per chain step against {ms[1]:.3g} "
            f"with threads=1 (a {_PILOT_STEPS}-step pilot)")


@contextlib.contextmanager
def _capped_threads(torch, threads):
    """torch's intra-op threads capped for a run with `threads` workers
    (_torch_threads), restored afterwards, on an exception too."""
    cap, before = _torch_threads(torch, threads), torch.get_num_threads()
    if cap is not None:
        torch.set_num_threads(cap)
    try:
        yield
    finally:
        if cap is not None:
            torch.set_num_threads(before)


def _report_progress(p, quiet, progress):
    """Route p's progress to a bar on a terminal (unless quiet) and to the
    user's progress(chain, step, total) (True cancels); the bar or None."""
    bar = None
    if not quiet and sys.stderr.isatty():
        lo, hi = p.get("chain_begin"), p.get("chain_end") or p.get("chains")
        bar = _Bar(p.get("steps"), max(1, hi - lo))

    def report(chain, step, total):
        if bar is not None:
            bar.update(chain, step, total)
        return bool(progress(chain, step, total)) if progress is not None else False

    if bar is not None or progress is not None:
        p.set_progress(report)
    return bar


def probe(module, loss_fn=None, inputs=None, targets=None, *, batch_loss=None, progress=None,
          quiet=False, check=True, eval_chunk=4096, grad_chunk=None, params=None, views=None,
          **options):
    """Probe module around its current parameters and return a sive.Result.

    The data, as torch users hold it:
      inputs   a tensor or numpy array (n, ...); a tuple/list of them for a
               module taking several inputs (module(*inputs[i])); a dict for
               keyword inputs (module(**inputs[i])); or, with targets None,
               a DataLoader, a map-style Dataset or any iterable of batches,
               read once into memory (the library draws examples by index at
               every step; a message on stderr says how much, unless quiet).
               numpy floats are converted to the parameters' dtype.
      targets  a tensor or numpy array (n, ...), or None when the batches
               are (inputs, targets) pairs or batch_loss reads the batch.
    The loss, one of:
      loss_fn(output, target)  a mean of per-example losses: an nn loss with
               reduction="mean" or a function taking reduction=.
               CrossEntropyLoss / NLLLoss with weight= or ignore_index are
               taken as the weighted mean over the whole data set; a loss
               whose mean is not its per-example values' mean is refused.
      batch_loss(module, batch) -> a 1-D tensor of per-example losses, batch
               being the selected examples in the structure of the data
               ((inputs, targets), a dict, ...): the model's loss is their
               mean, for the gradient and the evaluation alike.

    options are the library's (sive.options(): t, base_lr, h or c_h, steps,
    groups, eval_batch, grad_batch, chains, threads, seed, ...), at the
    library's defaults when not given; choose t for your data set
    (wbic_t(n) = n/log n, or see docs/guide.md §4), the defaults' 100000
    steps are long for Python.  A progress bar with an ETA is shown on stderr
    when it is a terminal (tqdm if installed, a plain line otherwise);
    quiet=True turns it and the data message off.  progress(chain, step,
    total) is called too and may return True to cancel the run (then
    sive.Cancelled is raised, carrying the partial result, unless
    check=False).  With threads=k > 1, torch's intra-op threads are capped
    at cores // k for the run (and restored), and a short pilot keeps k
    only if it is faster than one worker (saying so on stderr unless quiet;
    results do not depend on threads).  eval_chunk / grad_chunk bound
    the examples per forward pass.  An exception raised inside the model or
    loss propagates as itself, with its traceback.  The module's parameters,
    mode and .grad are as before when probe() returns or raises.

    params makes the probe weight-restricted (docs/guide.md, "Refined
    LLCs"): only these parameters move, the rest stays at its current
    value.  A list of names from module.named_parameters() ("1.weight"; a
    submodule's name such as "1" takes all of its parameters) or a
    predicate(name, tensor) -> bool; the result's params_dim says how many
    moved.

    views={name: data} adds evaluation views (docs/guide.md, "Refined LLCs:
    other data"): at every evaluated step the same module (the same
    replicas, threads included) with the same loss is evaluated at the
    chain's theta on data, another data set in any form inputs takes
    (with loss_fn: an (inputs, targets) pair, or a DataLoader, Dataset or
    iterable of (x, y) batches; with batch_loss: batches it reads).  The
    chain, its draws and the run's own estimate are as without views; the
    Result's .views is {name: Result}, one estimate per view with its own
    MCSE (with control_variate=1 each view has control variates on its own
    data, as the run on the training data).  A view whose data the module or loss cannot evaluate (e.g. wrong
    shapes) raises ValueError or TypeError naming the view, before the
    run."""
    torch = _torch()
    say = (lambda text: None) if quiet else (lambda text: print(text, file=sys.stderr))
    with TorchModel(module, loss_fn, inputs, targets, batch_loss=batch_loss,
                    threads=options.get("threads", 1), eval_chunk=eval_chunk,
                    grad_chunk=grad_chunk, quiet=quiet, views=views) as tm, \
            sive.Probe(**options) as p, _capped_threads(torch, p.get("threads")):
        for name, view in tm.views.items():
            p.add_eval_view(name, view)
        if params is not None:
            p.set_params(tm.param_ranges(params))
        _pick_threads(tm, p, options, say)
        bar = _report_progress(p, quiet, progress)
        try:
            return p.run(tm.sive_model, tm.theta_star, check=check)
        finally:
            if bar is not None:
                bar.close()
