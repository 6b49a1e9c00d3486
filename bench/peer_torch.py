#!/usr/bin/python3
"""The MLP probe step of libsive written idiomatically in PyTorch: the peer
that bench_vs_torch.py times against libsive.

Same data (the bundled 8000-image training split, read through libsive so
that the split is identical), same checkpoint (libsive's initialisation with
seed 0 and `epochs` epochs of its SGD, copied into an nn.Sequential whose
parameters have the same flat layout), same step:

  evaluation  N*B_eval indices with replacement (torch.randint), the batch
              gathered from the float data set, forward under no_grad,
              cross-entropy reduction='none' reshaped (N, B_eval), group
              means, their mean and sample variance (L-bar, s2)
  gradient    B_grad indices, forward + backward of the mean loss
  update      theta -= a g + (eta/h^2)(theta - theta*) - sqrt(2 eta) xi,
              xi = torch.randn_like, in place under no_grad

The system BLIS gets BLIS_NUM_THREADS = --threads unless it is set.
Prints one line per round and a last line `pytorch <best ms per step>`;
with --split the best evaluation / gradient / update times too.  Exits with
status 3 and a message when torch cannot be imported (the peer is optional).
"""
import argparse
import ctypes
import math
import os
import sys
import time


def load_libsive(path):
    lib = ctypes.CDLL(path)
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.sive_dataset_open_dir.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp), ctypes.POINTER(vp)]
    lib.sive_dataset_count.argtypes = [vp]
    lib.sive_dataset_count.restype = sz
    lib.sive_dataset_pixels.argtypes = [vp]
    lib.sive_dataset_pixels.restype = ctypes.POINTER(ctypes.c_uint8)
    lib.sive_dataset_labels.argtypes = [vp]
    lib.sive_dataset_labels.restype = ctypes.POINTER(ctypes.c_uint8)
    lib.sive_mlp_new.argtypes = [ctypes.POINTER(vp), sz, sz, sz, sz]
    lib.sive_mlp_dim.argtypes = [vp]
    lib.sive_mlp_dim.restype = sz
    lib.sive_mlp_init_params.argtypes = [vp, ctypes.POINTER(ctypes.c_float), ctypes.c_uint64]
    lib.sive_mlp_work_new.argtypes = [ctypes.POINTER(vp), vp, sz, ctypes.c_int]
    lib.sive_mlp_train_epoch.argtypes = [vp, vp, ctypes.POINTER(ctypes.c_float), vp,
                                         ctypes.c_float, sz, ctypes.c_uint64, ctypes.c_uint64,
                                         ctypes.POINTER(ctypes.c_double)]
    lib.sive_last_errmsg.restype = ctypes.c_char_p
    return lib


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    # libsive-ref; dlsym through its handle also finds libsive (sive_last_errmsg)
    ap.add_argument("--lib", default=os.path.join(root, "build", "lib", "libsive-ref.so"))
    ap.add_argument("--data", default=os.path.join(root, "data"))
    ap.add_argument("--steps", type=int, default=12, help="steps per round (first 2 untimed)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--groups", type=int, default=512)
    ap.add_argument("--eval-batch", type=int, default=64)
    ap.add_argument("--grad-batch", type=int, default=1024)
    ap.add_argument("--split", action="store_true", help="also time the three parts")
    args = ap.parse_args()
    # Debian's torch calls sgemm_ of the system BLAS (BLIS through the
    # libblas.so.3 alternative), which takes its thread count from its own
    # environment, not from torch.set_num_threads(): give it the same count
    # (1.5x faster than BLIS's default of one thread here).
    os.environ.setdefault("BLIS_NUM_THREADS", str(args.threads))
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # the peer is optional
        print(f"peer_torch: PyTorch is not importable ({e}); skipping "
              "(Debian: apt-get install python3-torch)")
        sys.exit(3)
    torch.set_num_threads(args.threads)

    lib = load_libsive(args.lib)
    train, test = ctypes.c_void_p(), ctypes.c_void_p()
    if lib.sive_dataset_open_dir(args.data.encode(), ctypes.byref(train), ctypes.byref(test)):
        sys.exit("peer_torch: " + lib.sive_last_errmsg().decode())
    n = lib.sive_dataset_count(train)
    pix = ctypes.string_at(lib.sive_dataset_pixels(train), n * 784)
    lab = ctypes.string_at(lib.sive_dataset_labels(train), n)
    m, w = ctypes.c_void_p(), ctypes.c_void_p()
    lib.sive_mlp_new(ctypes.byref(m), 784, 128, 128, 10)
    d = lib.sive_mlp_dim(m)
    theta = (ctypes.c_float * d)()
    lib.sive_mlp_init_params(m, theta, 0)
    lib.sive_mlp_work_new(ctypes.byref(w), m, 0, 1)
    for e in range(1, args.epochs + 1):
        lib.sive_mlp_train_epoch(m, w, theta, train, 0.01, 64, 0, e, None)

    # data set as float tensors, stored once (the idiomatic TensorDataset)
    X = torch.frombuffer(bytearray(pix), dtype=torch.uint8).view(n, 784).float().div_(255.0)
    Y = torch.frombuffer(bytearray(lab), dtype=torch.uint8).long()
    model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    flat = torch.frombuffer(bytearray(theta), dtype=torch.float32)
    torch.nn.utils.vector_to_parameters(flat.clone(), model.parameters())
    params = list(model.parameters())
    star = [p.detach().clone() for p in params]

    t, base_lr = 1e4, 0.05
    eta = base_lr / t
    h = math.sqrt(float(flat.double().pow(2).sum()) / d)  # adaptive radius, c_h = 1
    k_tether, k_noise = eta / (h * h), math.sqrt(2 * eta)
    N, Be, Bg = args.groups, args.eval_batch, args.grad_batch
    torch.manual_seed(1)

    def step():
        t0 = time.perf_counter()
        with torch.no_grad():
            idx = torch.randint(0, n, (N * Be,))
            losses = F.cross_entropy(model(X[idx]), Y[idx], reduction="none")
            group = losses.view(N, Be).mean(1)
            lbar, s2 = float(group.mean()), float(group.var())
        t1 = time.perf_counter()
        gidx = torch.randint(0, n, (Bg,))
        for p in params:
            p.grad = None
        loss = F.cross_entropy(model(X[gidx]), Y[gidx])
        loss.backward()
        t2 = time.perf_counter()
        with torch.no_grad():
            for p, p0 in zip(params, star):
                # theta - a g - k_t (theta - theta*) + k_n xi
                p.add_(p.grad, alpha=-base_lr).add_(p - p0, alpha=-k_tether)
                p.add_(torch.randn_like(p), alpha=k_noise)
        t3 = time.perf_counter()
        return t1 - t0, t2 - t1, t3 - t2, lbar, s2

    best = [math.inf] * 4
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads "
          f"(BLIS_NUM_THREADS={os.environ['BLIS_NUM_THREADS']}), "
          f"N {N}, B_eval {Be}, B_grad {Bg}, d {d}, {n} images, checkpoint after "
          f"{args.epochs} epoch(s)")
    for r in range(args.rounds):
        parts = [0.0, 0.0, 0.0]
        t0 = None
        for s in range(args.steps):
            if s == 2:
                t0 = time.perf_counter()
                parts = [0.0, 0.0, 0.0]
            e, g, u, lbar, s2 = step()
            parts = [parts[0] + e, parts[1] + g, parts[2] + u]
        total = (time.perf_counter() - t0) / (args.steps - 2)
        per = [p / (args.steps - 2) for p in parts] + [total]
        best = [min(a, b) for a, b in zip(best, per)]
        print(f"  round {r}: {total * 1e3:.2f} ms/step (eval {per[0] * 1e3:.2f}, grad "
              f"{per[1] * 1e3:.2f}, update {per[2] * 1e3:.2f}); last L-bar {lbar:.5f}, "
              f"s2 {s2:.3g}")
    if args.split:
        print(f"pytorch-split eval {best[0] * 1e3:.3f} grad {best[1] * 1e3:.3f} "
              f"update {best[2] * 1e3:.3f}")
    print(f"pytorch {best[3] * 1e3:.3f}")


if __name__ == "__main__":
    main()
