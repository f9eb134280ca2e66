"""Candidate model shapes. Every one keeps Qwen3.5's structure: the real 3:1 delta-rule:attention
pattern (full attention every 4th layer), attention heads of 256 with 64 rotary dims (25%), delta-rule
heads of 128, a conv kernel of 4, an MTP block, a tied head over the whole Qwen3 vocabulary; only
the width, the depth, the FFN and the head counts are small.

Why n_embd 256 is special: llama-quantize stores a tied head as Q6_K only when n_embd is a multiple
of 256 (QK_K); otherwise as Q8_0. At 151,669 rows, Q6_K costs 210/256 bytes a weight (31.8 MB at
256) and Q8_0 34/32 (51.6 MB at 320: over the 48 MB cap on its own). A 320-wide model fits only
with an explicit head type (llama-quantize --output-tensor-type, tandem-quantize --output-type),
e.g. Q5_0 (33.4 MB)."""

from qwen35_torch import Shape

QWEN3_VOCAB = 151669


def shape(name, n_vocab=QWEN3_VOCAB):
    if name == "ci":  # the CI test's model: seconds on two cores
        return Shape(n_vocab=n_vocab, n_embd=64, n_layer=4, n_ff=128, n_head=2, n_head_kv=1, head_dim=32, n_rot=8,
                     ssm_d_state=16, ssm_n_group=2, ssm_dt_rank=2)
    table = {
        # name: (n_embd, n_layer, n_ff, n_head, n_head_kv, H_k, H_v)
        "e256-l4": (256, 4, 768, 2, 1, 2, 2),
        "e256-l8": (256, 8, 768, 2, 1, 2, 2),
        "e320-l4": (320, 4, 960, 2, 1, 2, 2),
        "e320-l8": (320, 8, 960, 2, 1, 2, 2),
    }
    if name not in table:
        raise ValueError("unknown shape %r (ci, %s)" % (name, ", ".join(table)))
    E, L, ff, nh, nkv, hk, hv = table[name]
    return Shape(n_vocab=n_vocab, n_embd=E, n_layer=L, n_ff=ff, n_head=nh, n_head_kv=nkv, head_dim=256, n_rot=64,
                 ssm_d_state=128, ssm_n_group=hk, ssm_dt_rank=hv)


NAMES = ["ci", "e256-l4", "e256-l8", "e320-l4", "e320-l8"]
