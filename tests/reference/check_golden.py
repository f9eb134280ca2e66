"""Check the float64 reference (qwen35_ref.py) against llama.cpp's golden logits for the F32 models.

    /usr/bin/python3 tests/reference/check_golden.py [--golden DIR] [--tol 1e-3] [--seq s1,s3]

Reads DIR/manifest.json (default /work/shared/golden, or $TANDEM_GOLDEN_DIR), runs the reference on every
F32 model x token sequence, compares with the `batch` logits (and reports the `split` ones when present),
prints a table, and exits 1 if any max|ref - llama.cpp| (batch) exceeds --tol. If the golden directory is
absent it prints "SKIPPED: ..." and exits 0.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen35_ref import Qwen35  # noqa: E402

DEFAULT_GOLDEN = os.environ.get("TANDEM_GOLDEN_DIR", "/work/shared/golden")


def load_logits(path, n_tokens, n_vocab):
    x = np.fromfile(path, dtype="<f4")
    assert x.size == n_tokens * n_vocab, "%s: %d floats, expected %d" % (path, x.size, n_tokens * n_vocab)
    return x.reshape(n_tokens, n_vocab).astype(np.float64)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--golden", default=DEFAULT_GOLDEN)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--seq", default=None, help="comma-separated sequence names (default: all)")
    args = ap.parse_args(argv)

    man_path = os.path.join(args.golden, "manifest.json")
    if not os.path.isfile(man_path):
        print("SKIPPED: golden data not found (%s missing)" % man_path)
        return 0
    with open(man_path) as f:
        man = json.load(f)
    seqs = set(args.seq.split(",")) if args.seq else None

    # group entries: (model, sequence) -> {mode: entry}
    groups = {}
    for e in man["entries"]:
        if not e["model"].endswith("-F32.gguf"):
            continue
        if seqs is not None and e["sequence"] not in seqs:
            continue
        groups.setdefault((e["model"], e["sequence"]), {})[e["mode"]] = e
    if not groups:
        print("SKIPPED: no F32 entries in %s" % man_path)
        return 0

    print("%-26s %-4s %6s %12s %12s %9s %8s" % ("model", "seq", "n_tok", "max|d| batch", "max|d| split",
                                                 "argmax", "time_s"))
    worst, failed = 0.0, False
    models = {}
    for (model_file, seq), modes in sorted(groups.items()):
        if model_file not in models:
            models = {model_file: Qwen35(os.path.join(args.golden, model_file))}  # keep one model open
        model = models[model_file]
        e = modes.get("batch") or next(iter(modes.values()))
        with open(os.path.join(args.golden, e["tokens"])) as f:
            tokens = json.load(f)
        t0 = time.time()
        logits, _ = model.forward(tokens)
        dt = time.time() - t0
        res = {}
        for mode in ("batch", "split"):
            if mode in modes:
                ref = load_logits(os.path.join(args.golden, modes[mode]["logits"]), e["n_tokens"], e["n_vocab"])
                res[mode] = (np.abs(logits - ref).max(), int((logits.argmax(1) == ref.argmax(1)).sum()))
        d_batch, agree = res.get("batch", (float("nan"), 0))
        d_split = res.get("split", (float("nan"), 0))[0]
        bad = not (d_batch <= args.tol)
        failed |= bad
        worst = max(worst, d_batch) if d_batch == d_batch else worst
        print("%-26s %-4s %6d %12.3e %12.3e %4d/%-4d %8.2f%s"
              % (os.path.basename(model_file)[:-5], seq, len(tokens), d_batch, d_split, agree, len(tokens), dt,
                 "  FAIL" if bad else ""))
    print("worst max|ref - llama.cpp batch| = %.3e (tolerance %.1e): %s"
          % (worst, args.tol, "FAIL" if failed else "OK"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
