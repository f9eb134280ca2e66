"""Training data: (prompt, answer) token pairs from tandem-train-data, split by trace seed, the
training vocabulary, and batches laid out for the shared-prefix pass (Qwen35.forward_batch).

A record (one JSON line): {"seed": 7, "prompt": [ids], "answer": [ids], "n_vocab": N, ...}: the
prompt as tandem-server tokenizes the request (chat template included), the answer = the expected
action's compact JSON + the end-of-turn token.

A training sequence is prompt + answer[:-1]. Loss rows, for an answer a_0..a_{n-1} after a prompt
of P tokens:
- main head: the trunk's hidden state at position P-1+j predicts a_j (j = 0..n-1);
- MTP head: the MTP row at position P-1+j (token a_{j-1} with the trunk hidden of P-2+j) predicts
  a_j, for j = 1..n-1: the token after the one the trunk predicts from that hidden state, as the
  drafter uses it (the MTP row of the last prompt token is never drafted from, so it is not trained).
"""

import array
import json
import random

import torch

PREFIX_ROUND = 64  # the shared prefix is cut at a multiple of the delta rule's chunk


def load_pairs(paths, compact=False):
    """The records of tandem-train-data / make_data.py files. compact: each prompt as an
    array('i') (4 bytes a token instead of a Python int's ~36: 50,000 prompts of 650 tokens are
    130 MB, not 1.2 GB)."""
    recs = []
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                r = json.loads(line)
                for key in ("prompt", "answer", "seed"):
                    if key not in r:
                        raise ValueError("%s:%d: record without \"%s\" (tandem-train-data --tag seed=N)" % (path, n, key))
                if len(r["answer"]) < 1 or len(r["prompt"]) < 2:
                    raise ValueError("%s:%d: empty prompt or answer" % (path, n))
                if compact:
                    r["prompt"] = array.array("i", r["prompt"])
                recs.append(r)
    if not recs:
        raise ValueError("no records in " + ", ".join(paths))
    return recs


def parse_seeds(text):
    """"1-200,301,305-310" -> set of ints ("" -> empty set)."""
    out = set()
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        if "-" in part:
            a, b = part.split("-", 1)
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return out


def split_by_seed(recs, val_seeds, test_seeds):
    """(train, validation, test): a record goes where its trace seed is listed; every other seed
    trains. The test seeds are never trained on (asserted)."""
    if val_seeds & test_seeds:
        raise ValueError("seeds both in validation and test: %s" % sorted(val_seeds & test_seeds)[:10])
    train = [r for r in recs if r["seed"] not in val_seeds and r["seed"] not in test_seeds]
    val = [r for r in recs if r["seed"] in val_seeds]
    test = [r for r in recs if r["seed"] in test_seeds]
    assert not {r["seed"] for r in train} & test_seeds
    return train, val, test


def training_vocab(train):
    """The sorted full-vocabulary ids the training split uses (prompts and answers). Every other row
    of the exported file is zero (Qwen35, model card)."""
    ids = set()
    for r in train:
        ids.update(r["prompt"])
        ids.update(r["answer"])
    return sorted(ids)


class Batch:
    """One shared-prefix batch: tensors for Qwen35.forward_batch plus the loss targets."""

    def __init__(self, recs):
        prompts = [list(r["prompt"]) for r in recs]      # a list or a compact array('i')
        seqs = [p + list(r["answer"][:-1]) for p, r in zip(prompts, recs)]
        lcp = min(len(p) for p in prompts) - 1               # every main-loss row stays in the suffix
        first = prompts[0]
        for p in prompts[1:]:
            i = 0
            while i < lcp and p[i] == first[i]:
                i += 1
            lcp = i
        P = lcp // PREFIX_ROUND * PREFIX_ROUND
        self.prefix = torch.tensor(first[:P], dtype=torch.long)
        lens = [len(s) - P for s in seqs]
        self.suffix = torch.zeros(len(recs), max(lens), dtype=torch.long)  # right padding: never attended
        main_rows, main_t, mtp_rows, mtp_t = [], [], [], []
        for b, (r, s, p) in enumerate(zip(recs, seqs, prompts)):
            self.suffix[b, :lens[b]] = torch.tensor(s[P:], dtype=torch.long)
            Pi, ans = len(p), r["answer"]
            for j, a in enumerate(ans):
                main_rows.append((b, Pi - 1 + j - P))
                main_t.append(a)
                if j >= 1:
                    mtp_rows.append((b, Pi - 1 + j - P))
                    mtp_t.append(a)
        self.main_rows = torch.tensor(main_rows, dtype=torch.long)
        self.main_targets = torch.tensor(main_t, dtype=torch.long)
        self.mtp_rows = torch.tensor(mtp_rows, dtype=torch.long).reshape(-1, 2)
        self.mtp_targets = torch.tensor(mtp_t, dtype=torch.long)
        self.answer_len = [len(r["answer"]) for r in recs]
        self.n_tokens = P + sum(lens)                         # tokens the pass computes
        self.n_unshared = sum(len(s) for s in seqs)           # tokens without the shared prefix


class Batcher:
    """Seeded epochs of shuffled batches. Records are grouped by length first (a few batches' worth
    at a time), so that a batch's right padding stays short."""

    def __init__(self, recs, batch_size, seed):
        self.recs, self.bs = recs, batch_size
        self.rng = random.Random(seed)
        self.queue = []

    def _epoch(self):
        idx = list(range(len(self.recs)))
        self.rng.shuffle(idx)
        pool = 8 * self.bs
        batches = []
        for i in range(0, len(idx), pool):
            part = sorted(idx[i:i + pool], key=lambda k: len(self.recs[k]["prompt"]))
            batches += [part[j:j + self.bs] for j in range(0, len(part), self.bs)]
        self.rng.shuffle(batches)
        return batches

    def next(self):
        if not self.queue:
            self.queue = self._epoch()
        return Batch([self.recs[k] for k in self.queue.pop()])


def eval_batches(recs, batch_size, with_index=False):
    """The records sorted by length, as batches: evaluation. with_index: (record indices, Batch)."""
    order = sorted(range(len(recs)), key=lambda k: len(recs[k]["prompt"]))
    for i in range(0, len(order), batch_size):
        b = Batch([recs[k] for k in order[i:i + batch_size]])
        yield (order[i:i + batch_size], b) if with_index else b


def action_kind(r):
    """The expected action's kind ("tap", "input", ...) of a record."""
    a = r.get("action", "")
    try:
        return json.loads(a)["action"]
    except (ValueError, KeyError, TypeError):
        return "?"


def held_out(key, percent):
    """Whether a task (task_key) is one of the held-out tasks: a fixed share `percent` of all tasks,
    chosen by a hash of the app and task string (the same tasks in every run, whatever the seeds)."""
    if percent <= 0:
        return False
    import hashlib
    h = hashlib.sha1(("%s\t%s" % key).encode("utf-8")).digest()
    return int.from_bytes(h[:4], "little") % 1000 < 10 * percent


def task_key(r):
    """What makes a task: the app and the task string (template, target and text filled in)."""
    return (r.get("app", ""), r.get("task", ""))
