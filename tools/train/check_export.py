"""The exported files against the trained model: on test records (prompt + answer), Tandem's logits
(tandem-logits on each GGUF) at the answer positions against the torch model's, teacher-forced:
max|diff|, how often the argmax agrees, and the exact-match rate each gives (every answer token the
argmax: what greedy decoding then writes), for the trunk and the MTP head.

usage: /usr/bin/python3 tools/train/check_export.py CKPT.pt PAIRS.jsonl --seeds 161-170 --build BUILD \
           FILE.gguf [FILE.gguf...] [--records 8]
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_env  # noqa: E402  (first: libgomp's wait policy)
import torch  # noqa: E402
import numpy as np  # noqa: E402

import checkpoint  # noqa: E402
import data  # noqa: E402
from test_reference import tandem_logits  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("pairs")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--seeds", required=True, help="the records' seeds (e.g. the test seeds)")
    ap.add_argument("--build", required=True)
    ap.add_argument("--records", type=int, default=8)
    args = ap.parse_args()
    torch_env.setup(quiet=True)
    model, _ = checkpoint.load(args.checkpoint)
    model.eval()
    seeds = data.parse_seeds(args.seeds)
    recs = [r for r in data.load_pairs([args.pairs]) if r["seed"] in seeds][:args.records]
    stats = {f: {"diff": 0.0, "agree": 0, "n": 0, "exact": 0, "mtp_diff": 0.0, "mtp_agree": 0, "mtp_n": 0}
             for f in args.files}
    torch_exact = 0
    with tempfile.TemporaryDirectory(prefix="check-export-") as tmp:
        for i, r in enumerate(recs):
            toks = r["prompt"] + r["answer"]
            P, n = len(r["prompt"]), len(r["answer"])
            rows = np.arange(P - 1, P - 1 + n)           # main head rows predicting the answer
            mrows = np.arange(P, P - 1 + n)               # MTP rows predicting a_1..a_{n-1}
            with torch.no_grad():
                lg, mtp = model.forward_sequence(toks)
            lg, mtp = lg.numpy()[rows], mtp.numpy()[mrows]
            want = np.array(r["answer"])
            torch_exact += bool((lg.argmax(-1) == want).all())
            for f in args.files:
                ref, ref_mtp = tandem_logits(args.build, f, toks, tmp, "r%d" % i)
                ref, ref_mtp = ref[rows], ref_mtp[mrows]
                s = stats[f]
                s["diff"] = max(s["diff"], float(np.abs(ref - lg).max()))
                s["agree"] += int((ref.argmax(-1) == lg.argmax(-1)).sum())
                s["n"] += n
                s["exact"] += bool((ref.argmax(-1) == want).all())
                if len(mrows):
                    s["mtp_diff"] = max(s["mtp_diff"], float(np.abs(ref_mtp - mtp).max()))
                    s["mtp_agree"] += int((ref_mtp.argmax(-1) == mtp.argmax(-1)).sum())
                    s["mtp_n"] += len(mrows)
    print("%d records (seeds %s); torch exact match %d/%d" % (len(recs), args.seeds, torch_exact, len(recs)))
    for f, s in stats.items():
        print("  %s: answer rows max|diff| %.3e, argmax = torch's %d/%d, exact match %d/%d; "
              "MTP rows max|diff| %.3e, argmax = torch's %d/%d"
              % (os.path.basename(f), s["diff"], s["agree"], s["n"], s["exact"], len(recs), s["mtp_diff"],
                 s["mtp_agree"], s["mtp_n"]))


if __name__ == "__main__":
    main()
