"""ctest train_torch_reference: the trainer's torch forward equals Tandem's on a generated file.

A tiny F32 qwen35 file with an MTP block (tandem-gen-model --preset tiny: 3 GDN layers + 1
attention layer, GQA 4/2, H_v = 2 H_k) is loaded into tools/train's Qwen35 and run on 203 seeded
random tokens; tandem-logits runs the same file on the same tokens. Checked, each within F32
tolerance (max|diff| <= 1e-4 * max|logit|, the bound Tandem's own reference tests use):
  1. the trunk's logits at every position;
  2. the MTP head's logits (row t = token t with the trunk hidden of t-1: tandem-logits --mtp-out);
  3. the shared-prefix training pass (forward_batch: prefix once, two continuations from its state)
     against tandem-logits on each whole sequence, trunk and MTP rows;
  4. the chunked delta rule against the per-token recurrence, in float64 (1e-10).
Also printed: the float64 torch pass against Tandem (how much of the difference is F32 rounding).

usage: /usr/bin/python3 tools/train/test_reference.py BUILD_DIR    (exit 77: torch missing)
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_env import import_torch_or_skip, setup  # noqa: E402

torch = import_torch_or_skip()
import numpy as np  # noqa: E402

from delta_rule import chunk_gated_delta_rule, recurrent_gated_delta_rule  # noqa: E402
from gguf_source import load_model  # noqa: E402

TOL = 1e-4


def tandem_logits(build, model, tokens, tmp, name):
    tok_file = os.path.join(tmp, name + ".json")
    with open(tok_file, "w") as f:
        f.write(",".join(str(int(t)) for t in tokens))
    out, mtp = os.path.join(tmp, name + ".f32"), os.path.join(tmp, name + "_mtp.f32")
    subprocess.run([os.path.join(build, "tandem-logits"), "-m", model, "--tokens-file", tok_file, "--out", out,
                    "--mtp-out", mtp], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    n = len(tokens)
    return np.fromfile(out, "<f4").reshape(n, -1), np.fromfile(mtp, "<f4").reshape(n, -1)


def compare(what, ours, ref, failures, info=False):
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert ours.shape == ref.shape, (what, ours.shape, ref.shape)
    d = np.abs(ours - ref).max()
    m = np.abs(ref).max()
    agree = (ours.argmax(-1) == ref.argmax(-1)).mean()
    ok = d <= TOL * m
    print("  %-44s max|diff| %.3e  max|logit| %.3f  (%.1e relative)  argmax agree %.1f%%  %s"
          % (what, d, m, d / m, 100 * agree, "(info)" if info else "ok" if ok else "FAIL"))
    if not ok and not info:
        failures.append(what)
    return d


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    setup(quiet=True)
    failures = []
    with tempfile.TemporaryDirectory(prefix="train-ref-") as tmp:
        model_path = os.path.join(tmp, "tiny-f32.gguf")
        subprocess.run([os.path.join(build, "tandem-gen-model"), "--preset", "tiny", "--type", "F32", "--seed", "7",
                        "-o", model_path], check=True, stdout=subprocess.DEVNULL)
        m = load_model(model_path)
        m64 = load_model(model_path, torch.float64)
        s = m.shape
        print("tiny F32: n_embd %d, %d+%d layers, n_vocab %d" % (s.n_embd, s.n_layer, s.n_mtp, s.n_vocab))
        rng = np.random.default_rng(2026)
        toks = rng.integers(0, s.n_vocab, 203)
        ref, ref_mtp = tandem_logits(build, model_path, toks, tmp, "a")
        with torch.no_grad():
            lg, mtp = m.forward_sequence(toks)
            lg64, mtp64 = m64.forward_sequence(toks)
        print("203 tokens (chunks of 64: 3 full + a partial one):")
        compare("trunk logits, torch F32 vs Tandem", lg, ref, failures)
        compare("MTP head logits, torch F32 vs Tandem", mtp, ref_mtp, failures)
        compare("trunk logits, torch F64 vs Tandem", lg64, ref, failures, info=True)
        compare("MTP head logits, torch F64 vs Tandem", mtp64, ref_mtp, failures, info=True)

        # The shared-prefix training pass: prefix of 130, continuations of 73 and 41 tokens.
        P = 130
        cont = [toks[P:], rng.integers(0, s.n_vocab, 41)]
        lens = [len(c) for c in cont]
        suffix = torch.zeros(2, max(lens), dtype=torch.long)
        for b, c in enumerate(cont):
            suffix[b, :len(c)] = torch.as_tensor(c)
        rows = torch.tensor([[b, t] for b in range(2) for t in range(lens[b])])
        with torch.no_grad():
            main_h, mtp_h = m.forward_batch(torch.as_tensor(toks[:P]), suffix, rows, rows)
            main_lg, mtp_lg = m.full_logits(main_h), m.full_logits(mtp_h)
        ref_b, ref_b_mtp = tandem_logits(build, model_path, np.concatenate([toks[:P], cont[1]]), tmp, "b")
        want = np.concatenate([ref[P:], ref_b[P:]])
        want_mtp = np.concatenate([ref_mtp[P:], ref_b_mtp[P:]])
        print("shared prefix of %d tokens, continuations of %d and %d:" % (P, lens[0], lens[1]))
        compare("trunk logits (forward_batch) vs Tandem", main_lg, want, failures)
        compare("MTP logits (forward_batch) vs Tandem", mtp_lg, want_mtp, failures)

    # The chunked delta rule against the recurrence it stands for (float64, non-zero initial state,
    # a length that is not a multiple of the chunk).
    g = torch.Generator().manual_seed(5)
    B, H, T, d = 2, 3, 150, 16
    q = torch.nn.functional.normalize(torch.randn(B, H, T, d, generator=g, dtype=torch.float64), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(B, H, T, d, generator=g, dtype=torch.float64), dim=-1)
    v = torch.randn(B, H, T, d, generator=g, dtype=torch.float64)
    gg = -3 * torch.rand(B, H, T, generator=g, dtype=torch.float64)
    beta = torch.rand(B, H, T, generator=g, dtype=torch.float64)
    S0 = torch.randn(B, H, d, d, generator=g, dtype=torch.float64)
    o1, S1 = chunk_gated_delta_rule(q, k, v, gg, beta, S0)
    o2, S2 = recurrent_gated_delta_rule(q, k, v, gg, beta, S0)
    dd = max((o1 - o2).abs().max().item(), (S1 - S2).abs().max().item())
    print("  %-44s max|diff| %.3e  %s" % ("chunked vs per-token delta rule (float64)", dd,
                                          "ok" if dd < 1e-10 else "FAIL"))
    if dd >= 1e-10:
        failures.append("delta rule")
    if failures:
        print("FAILED: " + ", ".join(failures))
        return 1
    print("all equal within tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
