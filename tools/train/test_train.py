"""ctest train_end_to_end: a few training steps on a tiny model, end to end, in seconds.

1. data: traces of seeds 1-4 (tandem-gen-trace, small), tokenized by tandem-train-data with the
   built-in vocabulary of a generated tiny model (the real Qwen3 tokenizer needs npm: the trainer's
   code path is the same);
2. train.py, shape "ci", 12 steps of 3 samples: seeds 1-2 train, 3 validation, 4 test; the loss must fall (the
   mean of the last 4 steps' loss below 70% of the first 4's, main and MTP heads);
3. export: the weights directory -> tandem-import-weights (F32, so the values are the trained ones
   exactly) -> tandem-quantize Q4_0;
4. Tandem loads both files; on a test record's prompt + answer, tandem-logits on the F32 file
   equals the trained torch model's logits over the full vocabulary (zero rows included), trunk and
   MTP head, within F32 tolerance (max|diff| <= 1e-4 * max|logit|); the Q4_0 file's logits are
   finite and printed beside them.

usage: /usr/bin/python3 tools/train/test_train.py BUILD_DIR    (exit 77: torch missing)
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_env import import_torch_or_skip  # noqa: E402

torch = import_torch_or_skip()
import numpy as np  # noqa: E402

import export  # noqa: E402
import train  # noqa: E402
from make_data import make  # noqa: E402
from test_reference import compare, tandem_logits  # noqa: E402

STEPS = 12


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    failures = []
    with tempfile.TemporaryDirectory(prefix="train-e2e-") as tmp:
        tok_model = os.path.join(tmp, "vocab.gguf")
        subprocess.run([os.path.join(build, "tandem-gen-model"), "--preset", "tiny", "-o", tok_model], check=True,
                       stdout=subprocess.DEVNULL)
        pairs = make(build, range(1, 5), os.path.join(tmp, "pairs.jsonl"), model=tok_model,
                     trace_args=["--singles", "3", "--episodes", "2", "--steps", "3", "--controls-scale", "0.5"])
        out = os.path.join(tmp, "run")
        s = train.main(["--data", pairs, "--val-seeds", "3", "--test-seeds", "4", "--shape", "ci", "--steps",
                        str(STEPS), "--batch", "3", "--lr", "3e-3", "--warmup", "2", "--eval-every", "8", "--eval-samples", "3",
                        "--out", out, "--seed", "3"])
        rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(out, "train.tsv"))][1:]
        main_l = [float(r[4]) for r in rows]
        mtp_l = [float(r[5]) for r in rows]
        for name, l in (("main", main_l), ("MTP", mtp_l)):
            a, b = np.mean(l[:4]), np.mean(l[-4:])
            ok = b < 0.7 * a
            print("  %-4s loss: first 4 steps %.3f, last 4 steps %.3f  %s" % (name, a, b, "ok" if ok else "FAIL"))
            if not ok:
                failures.append(name + " loss did not fall")
        assert s["test"]["samples"] > 0 and 4 not in s["data"]["train_seeds"]

        import checkpoint
        model, _ = checkpoint.load(os.path.join(out, "model.pt"))
        files = export.export(model, os.path.join(tmp, "export"), build, None, "F32", "Q4_0", name="ci-policy")
        rec = next(json.loads(line) for line in open(pairs) if json.loads(line)["seed"] == 4)
        toks = rec["prompt"] + rec["answer"]
        with torch.no_grad():
            lg, mtp = model.forward_sequence(toks)
        ref, ref_mtp = tandem_logits(build, files["F32"], toks, tmp, "f32")
        print("trained model, exported F32, %d tokens (test seed 4):" % len(toks))
        compare("trunk logits, torch vs Tandem", lg, ref, failures)
        compare("MTP head logits, torch vs Tandem", mtp, ref_mtp, failures)
        q, q_mtp = tandem_logits(build, files["Q4_0"], toks, tmp, "q4")
        if not (np.isfinite(q).all() and np.isfinite(q_mtp).all()):
            failures.append("Q4_0 logits not finite")
        compare("Q4_0 file (quantized) vs torch", q, lg.numpy(), failures, info=True)
    if failures:
        print("FAILED: " + ", ".join(failures))
        return 1
    print("loss falls; the export loads in Tandem and its logits equal the torch model's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
