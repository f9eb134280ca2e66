"""Training data from the agent environment: one trace per seed (tandem-gen-trace --seed S, any
further options passed through), each turned into (prompt, answer) token pairs by tandem-train-data
with the given tokenizer and tagged with its seed and its task string (the trace record's "task": the figures on tasks no training seed
contained compare them), all in one JSONL file.

usage: /usr/bin/python3 tools/train/make_data.py --build BUILD --seeds 1-300 -o pairs.jsonl
           (--tokenizer-json tokenizer.json | -m MODEL.gguf) [-- TRACE OPTIONS...]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import parse_seeds  # noqa: E402


def make(build, seeds, out, tokenizer_json=None, model=None, trace_args=()):
    if (tokenizer_json is None) == (model is None):
        raise ValueError("give a tokenizer.json or a model")
    tok = ["--tokenizer-json", tokenizer_json] if tokenizer_json else ["-m", model]
    with tempfile.TemporaryDirectory(prefix="train-data-") as tmp, open(out, "w") as fo:
        seed_of = {}
        for s in sorted(seeds):
            trace = os.path.join(tmp, "trace-%d.jsonl" % s)
            subprocess.run([os.path.join(build, "tandem-gen-trace"), "--seed", str(s), "-o", trace] + list(trace_args),
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seed_of[trace] = s
        # One tandem-train-data run for all traces (loading the 151,669-token vocabulary takes about
        # a second); each record gets its trace's seed here, from its "trace" field.
        pairs = subprocess.run([os.path.join(build, "tandem-train-data")] + tok + list(seed_of),
                               check=True, stdout=subprocess.PIPE, text=True).stdout
        tasks = {}  # (trace, line) -> the record's task string (the unseen-task figures need it)
        for trace in seed_of:
            with open(trace) as f:
                for n, line in enumerate(f, 1):
                    if line.strip() and not line.startswith("#"):
                        tasks[(trace, n)] = json.loads(line).get("task", "")
        for line in pairs.splitlines():
            r = json.loads(line)
            r["task"] = tasks.get((r["trace"], r["line"]), "")
            r["seed"] = seed_of[r["trace"]]
            r["trace"] = "seed-%d" % r["seed"]  # the temporary file is gone; the seed regenerates it
            fo.write(json.dumps(r, separators=(",", ":")) + "\n")
    return out


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--seeds", required=True)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--tokenizer-json")
    ap.add_argument("-m", "--model")
    args = ap.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    make(args.build, seeds, args.out, args.tokenizer_json, args.model, extra)
    n = sum(1 for _ in open(args.out))
    print("%d pairs from %d seeds -> %s" % (n, len(seeds), args.out), file=sys.stderr)


if __name__ == "__main__":
    main()
