"""Feasibility figures for choosing the policy's shape: for each candidate, the parameters, the
size of its Q4_0 file (exported through the real path: weights directory -> tandem-import-weights
F16 with the real tokenizer -> tandem-quantize Q4_0), and the measured seconds per training sample
(forward + backward + AdamW, shared-prefix batches of real records; the median over round-robin
rounds, wall clock and CPU time), hence the samples a 90-minute training loop allows. The machine's
load average is printed with the timings: its two cores are shared with other jobs.

usage: /usr/bin/python3 tools/train/bench_shapes.py --data pairs.jsonl --build BUILD \
           --tokenizer-json tokenizer.json [--shapes e256-l4,e256-l8,e320-l4] [--batch 8] [--steps 5]
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_env  # noqa: E402  (first: libgomp's wait policy)
import torch  # noqa: E402

import data  # noqa: E402
import export  # noqa: E402
import shapes  # noqa: E402
from qwen35_torch import Qwen35  # noqa: E402
from train import batch_loss, optimizer, parse_args  # noqa: E402


def load():
    return float(open("/proc/loadavg").read().split()[0])


class Candidate:
    """One shape under test: its model, optimizer and batch stream (the same batches for every shape)."""

    def __init__(self, name, recs, n_vocab, batch, seed=1):
        self.name = name
        self.model = Qwen35(shapes.shape(name, n_vocab), data.training_vocab(recs))
        self.model.init_random(torch.Generator().manual_seed(seed))
        args = parse_args(["--data", "x", "--val-seeds", "0", "--test-seeds", "0", "--steps", "1", "--out", "x"])
        self.opt = optimizer(self.model, args)
        self.batcher = data.Batcher(recs, batch, seed)
        self.wall, self.cpu, self.load = [], [], []

    def step(self, timed=True):
        b = self.batcher.next()
        l0, t, c = load(), time.time(), time.process_time()
        main, mtp, _, _ = batch_loss(self.model, b)
        self.opt.zero_grad(set_to_none=True)
        (main + 0.5 * mtp).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        if timed:
            n = len(b.answer_len)
            self.wall.append((time.time() - t) / n)
            self.cpu.append((time.process_time() - c) / n)
            self.load.append(l0)


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--tokenizer-json", required=True)
    ap.add_argument("--shapes", default="e256-l4,e256-l8,e320-l4")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6, help="timed rounds")
    ap.add_argument("--records", type=int, default=2000, help="records to draw batches from")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    torch_env.setup(args.threads)
    torch.set_flush_denormal(True)
    recs = data.load_pairs([args.data])[:args.records]
    n_vocab = recs[0]["n_vocab"]
    plen = sum(len(r["prompt"]) for r in recs) / len(recs)
    print("records: %d, prompt %.0f tokens mean, answer %.1f tokens mean; batch %d, %d timed steps per shape"
          % (len(recs), plen, sum(len(r["answer"]) for r in recs) / len(recs), args.batch, args.steps))
    cands = [Candidate(name, recs, n_vocab, args.batch) for name in args.shapes.split(",")]
    for c in cands:
        c.step(timed=False)  # warms up allocators and caches
    # Round-robin: each round times one step of every shape, so that a change of the machine's load
    # (its two cores are shared) falls on all shapes alike; the medians are reported.
    for r in range(args.steps):
        for c in cands:
            c.step()
        print("round %d/%d: %s" % (r + 1, args.steps, "  ".join("%s %.3f s/sample" % (c.name, c.wall[-1])
                                                                 for c in cands)), flush=True)
    rows = []
    for c in cands:
        model, s = c.model, c.model.shape
        body = sum(p.numel() for k, p in model.params.items() if k != "token_embd__weight")
        file_params = body + n_vocab * s.n_embd
        with tempfile.TemporaryDirectory(prefix="bench-shape-") as tmp:
            f = export.export(model, tmp, args.build, args.tokenizer_json, "F16", "Q4_0")
            q4 = os.path.getsize(f["Q4_0"])
            q4_alt = None
            if s.n_embd % 256:  # llama-quantize's rule gives a Q8_0 head here: the Q5_0 alternative too
                q4_alt = os.path.getsize(export.quantize(args.build, f["F16"], os.path.join(tmp, "q5head.gguf"),
                                                         "Q4_0", "Q5_0"))
        rows.append((c.name, s, body, file_params, q4, q4_alt, median(c.wall), median(c.cpu), min(c.load),
                     max(c.load)))
    print("\n| shape | n_embd | layers (GDN+attn) + MTP | n_ff | body params | file params | Q4_0 file | "
          "s/sample (wall, median) | CPU s/sample | samples in 90 min | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, s, body, fp, q4, q4_alt, wall, cpu, l0, l1 in rows:
        n_attn = sum(1 for i in range(s.n_layer) if not s.is_recurrent(i))
        size = "%.1f MB" % (q4 / 1e6) + (" (head Q8_0); %.1f MB with a Q5_0 head" % (q4_alt / 1e6) if q4_alt else "")
        print("| %s | %d | %d (%d+%d) + 1 | %d | %.2fM | %.1fM | %s | %.2f | %.2f | %d | %.1f-%.1f |"
              % (name, s.n_embd, s.n_layer, s.n_layer - n_attn, n_attn, s.n_ff, body / 1e6, fp / 1e6, size, wall,
                 cpu, int(5400 / wall), l0, l1))


if __name__ == "__main__":
    main()
