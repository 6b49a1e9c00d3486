"""Probe a PyTorch model in-process: sive.torch.probe().

    import torch, sive.torch

    net = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 10))
    ...train net on (x, y)...
    r = sive.torch.probe(net, torch.nn.CrossEntropyLoss(), x, y,
                         t=len(x) / math.log(len(x)), steps=4000, chains=4)
    print(r.lambda_hat, "+/-", r.mcse)

The model's loss must be a mean of per-example losses (what
nn.CrossEntropyLoss(), nn.MSELoss() and the functional losses compute with
their default reduction="mean").  The adapter then gives the library

 - the gradient callback: a forward and backward pass on the B_grad
   examples the library drew, with torch.autograd.grad (nothing is
   accumulated in .grad, no graph outlives the call);
 - the per-example loss callback: one forward pass under torch.no_grad()
   on the distinct examples of the N*B_eval the library drew (so its
   deduplication applies), in chunks of at most eval_chunk examples, with
   the loss computed with reduction="none".

The parameters that require grad (float32 or float64, all alike, on the
CPU) are flattened in module.parameters() order into theta*.  During the
run the module's parameters are views of one flat buffer the chain writes;
afterwards each parameter gets its original tensor back (values, identity,
requires_grad and .grad untouched), the module's training flag is restored
(the probe runs in eval() mode: dropout and batch-norm statistics would
make the loss random), and this happens on errors and cancellation too.

Threads.  torch runs each callback with its own intra-op threads
(torch.set_num_threads() is respected: the adapter never changes it).
Chains run one after the other on one library thread by default
(threads=1).  With threads=k > 1 the library runs k chains at once on its
own threads; each extra worker then gets a deep copy of the module (made
before the run), so workers never share parameters; Python holds the GIL
between torch calls, so the gain is limited to what torch does without
it, and threads x torch threads should not exceed the cores.  A probe is
not reentrant for the same module: do not train or probe the module from
another thread while a probe runs.
"""

import copy

import numpy as np

import sive

__all__ = ["probe", "model", "TorchModel"]


def _torch():
    try:
        import torch
    except ImportError as e:  # the package itself works without torch
        raise ImportError("sive.torch needs PyTorch (Debian: apt-get install "
                          "python3-torch)") from e
    return torch


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
    after close()."""

    def __init__(self, module, loss_fn, inputs, targets, *, threads=1, eval_chunk=4096,
                 grad_chunk=None):
        torch = self._torch = _torch()
        if not isinstance(module, torch.nn.Module):
            raise TypeError("module must be a torch.nn.Module")
        if len(inputs) != len(targets):
            raise ValueError(f"inputs has {len(inputs)} examples, targets {len(targets)}")
        if len(inputs) == 0:
            raise ValueError("no examples")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the module has no parameters that require grad")
        dtypes = {p.dtype for p in params}
        if len(dtypes) != 1 or next(iter(dtypes)) not in (torch.float32, torch.float64):
            raise TypeError(f"parameters must all be float32 or all float64, got {dtypes}")
        if any(p.device.type != "cpu" for p in params) or inputs.device.type != "cpu":
            raise ValueError("sive.torch probes CPU modules and data (move them with .cpu())")
        self.dtype = next(iter(dtypes))
        self.np_dtype = np.float32 if self.dtype == torch.float32 else np.float64
        self.dim = sum(p.numel() for p in params)
        self.module, self.inputs, self.targets = module, inputs, targets
        self.loss_fn, self.per_example = loss_fn, _per_example_loss(loss_fn)
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
        self.sive_model = sive.Model(self.dim, self._grad, loss=self._loss,
                                     n_examples=len(inputs), dtype=self.np_dtype)
        self._closed = False
        self._replicas = []
        try:
            for m in [module] + extra:
                ps = [p for p in m.parameters() if p.requires_grad]
                self._replicas.append(_Replica(m, ps, theta.clone()))
                m.eval()
        except BaseException:  # give the module back as it was
            for p, saved in zip(params, self._saved):
                p.data = saved
            module.train(self._training)
            self._closed = True
            self.sive_model.close()
            raise

    # The callbacks.  theta is a read-only numpy view of library memory.
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
                loss = self.loss_fn(r.module(self.inputs[sel]), self.targets[sel])
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
        torch = self._torch
        r = self._set(theta, batch)
        idx = torch.from_numpy(batch.index.astype(np.int64))
        out = np.empty(len(idx), np.float64)
        with torch.no_grad():
            for lo in range(0, len(idx), self.eval_chunk):
                sel = idx[lo:lo + self.eval_chunk]
                losses = self.per_example(r.module(self.inputs[sel]), self.targets[sel])
                if losses.dim() == 0 or losses.shape[0] != len(sel):
                    raise ValueError(f"the per-example loss has shape {tuple(losses.shape)}, "
                                     f"expected ({len(sel)}, ...): the loss must be a mean "
                                     "of per-example losses")
                if losses.dim() > 1:  # e.g. MSE on (B, k) outputs: mean per example
                    losses = losses.reshape(len(sel), -1).mean(1)
                out[lo:lo + len(sel)] = losses.double().numpy()
        return out

    def close(self):
        """Give the module its original parameter tensors and mode back."""
        if self._closed:
            return
        self._closed = True
        for p, saved in zip(self._replicas[0].params, self._saved):
            p.data = saved
        self.module.train(self._training)
        self._replicas = []
        self.sive_model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def model(module, loss_fn, inputs, targets, **kw):
    """A TorchModel (to run several probes on one checkpoint with
    sive.Probe.run(tm.sive_model, tm.theta_star)); close it afterwards."""
    return TorchModel(module, loss_fn, inputs, targets, **kw)


def probe(module, loss_fn, inputs, targets, *, progress=None, check=True, eval_chunk=4096,
          grad_chunk=None, **options):
    """Probe module around its current parameters and return a sive.Result.

    loss_fn(module(inputs[i]), targets[i]) must be the mean of per-example
    losses (an nn loss with reduction="mean", or a function taking
    reduction=).  options are the library's (sive.options(): t, base_lr,
    h or c_h, steps, groups, eval_batch, grad_batch, chains, threads,
    seed, ...), at the library's defaults when not given; choose t for
    your data set (e.g. n/log n), the defaults' 100000 steps are long for
    Python.  progress(chain, step, total) may return True to cancel the run
    (then sive.Cancelled is raised, carrying the partial result, unless
    check=False).  eval_chunk / grad_chunk bound the examples per forward
    pass.  An exception raised inside the model or loss propagates as
    itself, with its traceback.  The module's parameters, mode and .grad
    are as before when probe() returns or raises."""
    threads = options.get("threads", 1)
    with TorchModel(module, loss_fn, inputs, targets, threads=threads,
                    eval_chunk=eval_chunk, grad_chunk=grad_chunk) as tm, \
            sive.Probe(**options) as p:
        if progress is not None:
            p.set_progress(progress)
        return p.run(tm.sive_model, tm.theta_star, check=check)
