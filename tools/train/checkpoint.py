"""A training checkpoint: the shape, the training vocabulary (full ids of the embedding rows), the
weights, and what made them (arguments, step, seconds). torch.save of plain tensors and dicts."""

import torch

from qwen35_torch import Qwen35, Shape


def save(path, model, meta):
    torch.save({"shape": model.shape.to_dict(), "vocab_ids": model.vocab_ids.clone(),
                "state": {k: v.detach().clone() for k, v in model.params.items()}, "meta": meta}, path)


def load(path):
    ck = torch.load(path, map_location="cpu")
    m = Qwen35(Shape.from_dict(ck["shape"]), ck["vocab_ids"])
    with torch.no_grad():
        for k, v in ck["state"].items():
            m.params[k].copy_(v)
    return m, ck.get("meta", {})
