"""The policy trainer: a small Qwen3.5 (qwen35_torch.Qwen35) trained on (prompt, expected action)
pairs from the agent environment (tandem-train-data output), loss on the answer tokens only: the
main head on the next token, the MTP head on the token after next.

    /usr/bin/python3 tools/train/train.py --data pairs.jsonl --val-seeds 901-920 --test-seeds 1001-1020 \
        --shape e256-l4 --minutes 90 --out runs/policy [--export --build build --tokenizer-json F]

Split by trace seed (data.split_by_seed): the test seeds are never trained on; validation picks
nothing (it is reported), test is evaluated once at the end. Seeded: the initial weights and the
batch order come from --seed (a --minutes run stops where the clock says, so its step count depends
on the machine; --steps does not). AdamW (decay on matrices only), linear warm-up then cosine decay
over the run (steps, or the time budget), gradient clipping at 1.

Written to --out: train.tsv / val.tsv (losses), loss.png (gnuplot), model.pt (checkpoint),
summary.json (shape, data, seeds, time, scores); with --export also the GGUF files (export.py).
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch_env  # noqa: E402  (first: it sets libgomp's wait policy before torch loads)
import torch  # noqa: E402

import checkpoint  # noqa: E402
import data  # noqa: E402
import shapes  # noqa: E402
from plot import loss_png  # noqa: E402
from progress import Progress  # noqa: E402
from qwen35_torch import Qwen35  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", required=True, help="tandem-train-data JSONL file(s), records tagged seed=N")
    ap.add_argument("--val-seeds", required=True, help='e.g. "901-920"')
    ap.add_argument("--test-seeds", required=True, help='e.g. "1001-1020" (never trained on)')
    ap.add_argument("--holdout-tasks", type=float, default=0,
                    help="percent of all tasks (app + task string, data.held_out) whose records are left out of "
                         "training and validation, so that the test seeds' steps of those tasks measure tasks no "
                         "training record contained")
    ap.add_argument("--shape", default="e256-l4", help="one of " + ", ".join(shapes.NAMES))
    ap.add_argument("--steps", type=int, default=0, help="optimizer steps (0: until --minutes)")
    ap.add_argument("--minutes", type=float, default=0, help="time budget of the training loop")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=0.1, help="final learning rate as a fraction of --lr")
    ap.add_argument("--warmup", type=int, default=20, help="warm-up steps")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--mtp-weight", type=float, default=0.5, help="weight of the MTP head's loss")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=0, help="steps between validation passes (0: --evals passes a run)")
    ap.add_argument("--evals", type=int, default=10, help="validation passes over the run (steps, or --minutes)")
    ap.add_argument("--eval-samples", type=int, default=64, help="validation samples per pass (0: all)")
    ap.add_argument("--precision", choices=["bf16", "f32"], default="bf16",
                    help="matrix products in training and evaluation: bf16 (autocast, float32 weights) or f32")
    ap.add_argument("--final-eval", choices=["both", "val", "test"], default="both",
                    help="the splits evaluated whole at the end (learnability runs: val; the test split is for the "
                         "chosen recipe only)")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: the usable cores)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="tandem-policy")
    ap.add_argument("--export", action="store_true", help="write the GGUF files at the end (export.py)")
    ap.add_argument("--build", help="Tandem's build directory (for --export)")
    ap.add_argument("--tokenizer-json", help="the tokenizer.json the data was tokenized with (for --export)")
    ap.add_argument("--export-type", default="F16")
    ap.add_argument("--quantize", default="Q4_0")
    ap.add_argument("--output-type", help="head type in the quantized file (default: llama-quantize's rule)")
    args = ap.parse_args(argv)
    if args.steps <= 0 and args.minutes <= 0:
        ap.error("give --steps or --minutes")
    if args.export and not args.build:
        ap.error("--export needs --build")
    return args


def lr_at(args, step, frac):
    """Linear warm-up, then cosine from lr to lr * min_lr over the run's fraction done."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    return args.lr * (args.min_lr + (1 - args.min_lr) * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def optimizer(model, args):
    decay, no_decay = [], []
    for name, p in model.params.items():
        # Matrices decay; norms, biases, decay rates and the conv kernels (2-D but per channel) do not.
        (decay if p.dim() == 2 and not name.endswith("ssm_conv1d__weight") else no_decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)


def autocast(on):
    """bfloat16 matrix products (torch's CPU autocast: oneDNN's AVX512-BF16 kernels), float32
    weights, residual stream, norms' statistics, delta-rule state and loss. Measured here on a
    training step of e256-l4 (one thread, busy machine): ~4x faster than float32, whose batched
    products (bmm) run at ~6 GFLOP/s in this torch build against ~170 in bfloat16; the gradient
    differs from float32's by ~3.5% (relative norm) at initialization."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=on)


def batch_loss(model, b, bf16=False):
    """(main loss, MTP loss, main rows' correctness, MTP rows' correctness) of a Batch."""
    with autocast(bf16):
        h, hm = model.forward_batch(b.prefix, b.suffix, b.main_rows, b.mtp_rows)
    main, main_ok = model.loss_terms(h.float(), b.main_targets)
    if hm is None:
        return main.mean(), None, main_ok, None
    mtp, mtp_ok = model.loss_terms(hm.float(), b.mtp_targets)
    return main.mean(), mtp.mean(), main_ok, mtp_ok


def evaluate(model, recs, batch_size, seen_tasks=None, bf16=False):
    """Teacher-forced scores over recs: main / MTP loss per answer token, token accuracy, exact match
    (every answer token is the argmax: greedy decoding would write exactly the expected answer), MTP
    accuracy (the MTP head's argmax is the token after next, given the right tokens before it), and
    exact match per action kind; with seen_tasks (the training split's data.task_key set), exact
    match on the records whose task no training seed contained ("unseen")."""
    if not recs:
        return None
    tot = {"main": 0.0, "mtp": 0.0, "n_main": 0, "n_mtp": 0, "ok": 0, "mtp_ok": 0, "exact": 0, "n": 0}
    exact = [False] * len(recs)
    with torch.no_grad():
        for idx, b in data.eval_batches(recs, batch_size, with_index=True):
            with autocast(bf16):
                h, hm = model.forward_batch(b.prefix, b.suffix, b.main_rows, b.mtp_rows)
            h, hm = h.float(), (hm.float() if hm is not None else None)
            loss, ok = model.loss_terms(h, b.main_targets)
            tot["main"] += loss.sum().item()
            tot["n_main"] += loss.numel()
            tot["ok"] += ok.sum().item()
            i = 0
            for k, n in zip(idx, b.answer_len):
                exact[k] = bool(ok[i:i + n].all())
                i += n
            tot["n"] += len(b.answer_len)
            if hm is not None and hm.shape[0]:
                ml, mok = model.loss_terms(hm, b.mtp_targets)
                tot["mtp"] += ml.sum().item()
                tot["n_mtp"] += ml.numel()
                tot["mtp_ok"] += mok.sum().item()
    tot["exact"] = sum(exact)
    kinds = {}
    for r, e in zip(recs, exact):
        k = kinds.setdefault(data.action_kind(r), [0, 0])
        k[0] += e
        k[1] += 1
    out = {"loss": tot["main"] / tot["n_main"], "mtp_loss": tot["mtp"] / max(1, tot["n_mtp"]),
           "token_acc": tot["ok"] / tot["n_main"], "exact": tot["exact"] / tot["n"],
           "mtp_acc": tot["mtp_ok"] / max(1, tot["n_mtp"]), "samples": tot["n"],
           "exact_by_kind": {k: {"exact": v[0] / v[1], "n": v[1]} for k, v in sorted(kinds.items())},
           "per_record": exact}
    if seen_tasks is not None:
        unseen = [e for r, e in zip(recs, exact) if data.task_key(r) not in seen_tasks]
        out["unseen_task_records"] = len(unseen)
        out["unseen_task_exact"] = sum(unseen) / len(unseen) if unseen else None
    return out


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    threads = torch_env.setup(args.threads)
    bf16 = args.precision == "bf16"
    torch.set_flush_denormal(True)  # decays of e^-G underflow; denormals slow the CPU down
    torch.manual_seed(args.seed)

    recs = data.load_pairs(args.data, compact=True)
    n_vocab = recs[0]["n_vocab"]
    train, val, test = data.split_by_seed(recs, data.parse_seeds(args.val_seeds), data.parse_seeds(args.test_seeds))
    n_held = 0
    if args.holdout_tasks:
        keep = [r for r in train if not data.held_out(data.task_key(r), args.holdout_tasks)]
        n_held = len(train) - len(keep)
        train = keep
        val = [r for r in val if not data.held_out(data.task_key(r), args.holdout_tasks)]
    if not train:
        raise SystemExit("no training records left after the validation / test seeds")
    vocab = data.training_vocab(train)
    seen = {data.task_key(r) for r in train}
    with open(os.path.join(args.out, "seen_tasks.tsv"), "w") as f:   # tandem-policy-eval --seen-tasks
        for app, task in sorted(seen):
            f.write("%s\t%s\n" % (app, task))
    shape = shapes.shape(args.shape, n_vocab)
    model = Qwen35(shape, vocab)
    model.init_random(torch.Generator().manual_seed(args.seed))
    n_params = sum(p.numel() for p in model.params.values())
    n_file = n_params - len(vocab) * shape.n_embd + n_vocab * shape.n_embd
    print("data: %d records (%d train from %d seeds, %d validation, %d test); training vocabulary %d of %d tokens"
          % (len(recs), len(train), len({r["seed"] for r in train}), len(val), len(test), len(vocab), n_vocab),
          file=sys.stderr)
    if args.holdout_tasks:
        print("held-out tasks (%.0f%% of tasks): %d training records left out; %d test records have a held-out task"
              % (args.holdout_tasks, n_held, sum(data.held_out(data.task_key(r), args.holdout_tasks) for r in test)),
              file=sys.stderr)
    print("model %s: %d trained parameters (%d in the file), %d threads" % (args.shape, n_params, n_file, threads),
          file=sys.stderr)

    opt = optimizer(model, args)
    batcher = data.Batcher(train, args.batch, args.seed)
    eval_set = val[:args.eval_samples] if args.eval_samples else val
    train_tsv, val_tsv = os.path.join(args.out, "train.tsv"), os.path.join(args.out, "val.tsv")
    ft, fv = open(train_tsv, "w"), open(val_tsv, "w")
    ft.write("step\tsamples\tseconds\tlr\tmain\tmtp\tmain_mean\tmtp_mean\ttokens_per_s\n")
    fv.write("step\tsamples\tloss\tmtp_loss\ttoken_acc\texact\tmtp_acc\tseconds\n")
    prog = Progress(args.steps or None, 60.0 * args.minutes if args.minutes else None)
    t0 = time.time()
    train_seconds = 0.0   # the loop without the evaluations
    step, samples, mean_main, mean_mtp, first = 0, 0, None, None, None
    next_eval = 1   # --evals passes: when the part of the run done (steps or time) passes k / evals

    def run_eval():
        te = time.time()
        model.eval()
        r = evaluate(model, eval_set, args.batch, bf16=bf16)
        model.train()
        if r:
            fv.write("%d\t%d\t%.5f\t%.5f\t%.4f\t%.4f\t%.4f\t%.1f\n" % (step, samples, r["loss"], r["mtp_loss"],
                                                                     r["token_acc"], r["exact"], r["mtp_acc"],
                                                                     time.time() - t0))
            fv.flush()
        return r, time.time() - te

    def done_fraction():
        # The run ends at --steps or when the training loop (evaluations not counted) used --minutes.
        return max(step / args.steps if args.steps else 0.0,
                   train_seconds / (60.0 * args.minutes) if args.minutes else 0.0)

    while True:
        frac = done_fraction()
        if (args.steps and step >= args.steps) or (args.minutes and train_seconds >= 60.0 * args.minutes):
            break
        ts = time.time()
        b = batcher.next()
        lr = lr_at(args, step, frac)
        for g in opt.param_groups:
            g["lr"] = lr
        main, mtp, _, _ = batch_loss(model, b, bf16)
        loss = main + (args.mtp_weight * mtp if mtp is not None else 0.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dt = time.time() - ts
        train_seconds += dt
        step += 1
        samples += len(b.answer_len)
        m, t = main.item(), (mtp.item() if mtp is not None else float("nan"))
        if first is None:
            first = (m, t)
        mean_main = m if mean_main is None else 0.9 * mean_main + 0.1 * m
        mean_mtp = t if mean_mtp is None else 0.9 * mean_mtp + 0.1 * t
        ft.write("%d\t%d\t%.2f\t%.3e\t%.5f\t%.5f\t%.5f\t%.5f\t%.0f\n" % (step, samples, train_seconds, lr, m, t,
                                                                      mean_main, mean_mtp, b.n_tokens / dt))
        ft.flush()
        prog.update(step, "loss %.3f mtp %.3f  %.2f s/sample" % (mean_main, mean_mtp, train_seconds / samples),
                    fraction=done_fraction())
        if args.eval_every:
            due = step % args.eval_every == 0
        else:
            # (the last pass is the whole validation split after the loop)
            due = next_eval < args.evals and done_fraction() >= next_eval / args.evals
            while done_fraction() >= next_eval / args.evals:
                next_eval += 1
        if val and due:
            r, _ = run_eval()
            checkpoint.save(os.path.join(args.out, "model.pt"), model,   # kept at every pass: a run cut short has it
                            {"name": args.name, "args": vars(args),
                             "summary": {"shape_name": args.shape, "steps": step, "samples": samples, "seed": args.seed}})
            prog.update(step, "validation: loss %.3f exact %.1f%% mtp acc %.1f%% (%s)"
                        % (r["loss"], 100 * r["exact"], 100 * r["mtp_acc"],
                           " ".join("%s %.0f" % (k, 100 * v["exact"]) for k, v in r["exact_by_kind"].items())),
                        force=True, fraction=done_fraction())
    prog.done()
    ft.close()

    model.eval()
    # The checkpoint first: the evaluations below take minutes on a busy machine.
    checkpoint.save(os.path.join(args.out, "model.pt"), model,
                    {"name": args.name, "args": vars(args), "summary": {"shape_name": args.shape, "steps": step,
                                                                        "samples": samples, "seed": args.seed}})
    final_val_all = evaluate(model, val, args.batch, seen, bf16) if val and args.final_eval != "test" else None
    if final_val_all:   # the validation curve's last point: the whole validation split
        r = final_val_all
        fv.write("%d\t%d\t%.5f\t%.5f\t%.4f\t%.4f\t%.4f\t%.1f\n" % (step, samples, r["loss"], r["mtp_loss"], r["token_acc"],
                                                                 r["exact"], r["mtp_acc"], time.time() - t0))
    fv.close()
    final_test = evaluate(model, test, args.batch, seen, bf16) if test and args.final_eval != "val" else None
    for r in (final_val_all, final_test):
        if r:
            r.pop("per_record")
    summary = {
        "shape_name": args.shape, "shape": shape.to_dict(), "trained_params": n_params, "file_params": n_file,
        "training_vocab": len(vocab), "n_vocab": n_vocab, "seed": args.seed,
        "data": {"files": args.data, "train_records": len(train), "val_records": len(val), "test_records": len(test),
                 "train_seeds": sorted({r["seed"] for r in train}), "val_seeds": args.val_seeds,
                 "test_seeds": args.test_seeds, "holdout_tasks_percent": args.holdout_tasks,
                 "train_records_held_out": n_held},
        "steps": step, "samples": samples, "batch": args.batch, "lr": args.lr, "mtp_weight": args.mtp_weight,
        "precision": args.precision,
        "train_seconds": round(train_seconds, 1), "wall_seconds": round(time.time() - t0, 1),
        "seconds_per_sample": round(train_seconds / max(1, samples), 4), "threads": threads,
        "first_loss": {"main": first[0], "mtp": first[1]} if first else None,
        "final_running_loss": {"main": mean_main, "mtp": mean_mtp},
        "validation": final_val_all, "test": final_test,
    }
    png = loss_png(train_tsv, val_tsv, os.path.join(args.out, "loss.png"),
                   "%s, %s, %d samples, %.0f s" % (args.name, args.shape, samples, train_seconds))
    summary["loss_png"] = png
    if args.export:
        import export
        summary["files"] = export.export(model, os.path.join(args.out, "export"), args.build, args.tokenizer_json,
                                         args.export_type, args.quantize, args.output_type, name=args.name,
                                         description="trained by tools/train (%s, seed %d, %d samples)"
                                         % (args.shape, args.seed, samples))
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("done: %d steps, %d samples, %.0f s training (%.3f s/sample); loss %.3f -> %.3f (main), %.3f -> %.3f (MTP)"
          % (step, samples, train_seconds, summary["seconds_per_sample"], first[0], mean_main, first[1], mean_mtp),
          file=sys.stderr)
    for name, r in (("validation", final_val_all), ("test", final_test)):
        if r:
            print("%s (%d samples): loss %.3f, token acc %.1f%%, exact match %.1f%%, MTP loss %.3f, MTP acc %.1f%%"
                  % (name, r["samples"], r["loss"], 100 * r["token_acc"], 100 * r["exact"], r["mtp_loss"],
                     100 * r["mtp_acc"]), file=sys.stderr)
            print("  exact match by kind: " + ", ".join("%s %.1f%% (%d)" % (k, 100 * v["exact"], v["n"])
                                                        for k, v in r["exact_by_kind"].items()), file=sys.stderr)
            if r.get("unseen_task_records"):
                print("  tasks no training seed contained: %d records, exact match %.1f%%"
                      % (r["unseen_task_records"], 100 * r["unseen_task_exact"]), file=sys.stderr)
    return summary


if __name__ == "__main__":
    main()
