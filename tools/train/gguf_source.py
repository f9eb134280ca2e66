"""Reading GGUF files from the trainer: the project's independent reader (tests/reference/gguf_read.py,
a numpy parser written from the format, not from Tandem's C++) and a model built from a file."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "tests", "reference"))

from gguf_read import GGUFFile  # noqa: E402

from qwen35_torch import Qwen35, Shape  # noqa: E402


def load_model(path, dtype=None):
    """A Qwen35 holding the file's weights (dequantized), every vocabulary row."""
    import torch
    g = GGUFFile(path)
    m = Qwen35(Shape.from_gguf(g))
    if dtype is not None:
        m = m.to(dtype)
    m.load_gguf_tensors(g.get)
    return m if dtype is None else m.to(dtype)


def vocab_size(path):
    g = GGUFFile(path)
    return len(g.metadata["tokenizer.ggml.tokens"])
