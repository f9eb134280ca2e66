"""Float64 reference forward pass of llama.cpp's `qwen35` architecture (Qwen3.5 dense hybrid).

Written from /work/shared/spec/qwen35.md (sections 0-4, 10) only; independent of the Tandem C++ engine.
Everything is computed in float64 with plain numpy; the Gated-DeltaNet recurrence is the sequential
per-token rule (spec 4.3 step 6). The MTP block (if present) is not run.

--emulate-ggml ("ref B" of /work/shared/golden/README.md): before every matmul with a non-F32 weight the
activation row is converted the way ggml-cpu converts it to the weight's vec_dot type, then dequantized back and
multiplied in float64: F16 weight -> activations rounded to F16; Q8_0/Q4_0/Q5_0 (and Q4_1/Q5_1, whose Q8_1 has the
same codes; its fp16 block sum is not emulated) -> Q8_0 (blocks of 32, d = fp16(amax/127), q = rint(x*127/amax),
half-to-even); Q4_K/Q5_K/Q6_K -> Q8_K (blocks of 256, iscale = -127/max with max the signed element of largest
magnitude, q = min(127, rint(iscale*x)), d = float32(1/iscale)). Without it activations stay exact ("ref A").

CLI:
    /usr/bin/python3 qwen35_ref.py MODEL.gguf --tokens 1,2,3 --out logits.f32 [--hidden-out h.f32] [--emulate-ggml]
    /usr/bin/python3 qwen35_ref.py MODEL.gguf --tokens-file toks.json --out logits.f32
Output: raw little-endian float32, row-major [n_tokens][n_vocab] (logits for every position);
--hidden-out: the final-normed hidden states [n_tokens][n_embd] (input of the LM head / MTP).
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_read import GGUFFile  # noqa: E402

ARCH = "qwen35"


# ---------------------------------------------------------------------------------------------
# hyper-parameters
# ---------------------------------------------------------------------------------------------

class Config:
    def __init__(self, g):
        arch = g.kv("general.architecture")
        if arch != ARCH:
            raise ValueError("general.architecture is %r, expected %r" % (arch, ARCH))

        def kv(name, default=None, required=False):
            key = ARCH + "." + name
            if key not in g.metadata:
                if required:
                    raise KeyError("missing GGUF key " + key)
                return default
            return g.metadata[key]

        self.n_layer_all = int(kv("block_count", required=True))
        self.n_nextn = int(kv("nextn_predict_layers", 0))
        self.n_layer = self.n_layer_all - self.n_nextn           # trunk layers
        self.n_embd = int(kv("embedding_length", required=True))
        self.n_ff = kv("feed_forward_length", required=True)      # scalar or per-layer array
        self.n_head = kv("attention.head_count", required=True)   # scalar or per-layer array
        self.n_head_kv = kv("attention.head_count_kv", self.n_head)
        n_head0 = self._at(self.n_head, 0) or max(self._at(self.n_head, i) for i in range(self.n_layer))
        self.head_k = int(kv("attention.key_length", self.n_embd // n_head0))
        self.head_v = int(kv("attention.value_length", self.head_k))
        self.eps = float(kv("attention.layer_norm_rms_epsilon", required=True))
        self.freq_base = float(kv("rope.freq_base", 10000.0))
        self.n_rot = int(kv("rope.dimension_count", self.head_k))
        # Gated DeltaNet
        self.conv_k = int(kv("ssm.conv_kernel", required=True))
        self.d = int(kv("ssm.state_size", required=True))
        self.H_k = int(kv("ssm.group_count", required=True))
        self.H_v = int(kv("ssm.time_step_rank", required=True))
        self.value_dim = int(kv("ssm.inner_size", required=True))
        assert self.value_dim == self.H_v * self.d, "ssm.inner_size != time_step_rank * state_size"
        self.key_dim = self.H_k * self.d
        self.conv_dim = 2 * self.key_dim + self.value_dim
        # layer pattern
        self.interval = int(kv("full_attention_interval", 4))
        rl = kv("attention.recurrent_layers", None)
        if rl is not None:
            self.is_recr = [bool(rl[i]) for i in range(self.n_layer)]
        else:
            self.is_recr = [(i + 1) % self.interval != 0 for i in range(self.n_layer)]
        self.n_vocab = int(g.tensors["token_embd.weight"].ne[1])
        self.tied = "output.weight" not in g.tensors

    @staticmethod
    def _at(v, i):
        return int(v[i]) if isinstance(v, list) else int(v)

    def ff(self, i):
        return self._at(self.n_ff, i)

    def heads(self, i):
        return self._at(self.n_head, i), self._at(self.n_head_kv, i)

    def summary(self):
        kinds = "".join("R" if r else "A" for r in self.is_recr)
        return ("n_layer=%d (+%d MTP, not run) n_embd=%d n_vocab=%d head_k=%d n_rot=%d base=%g eps=%g "
                "GDN: H_k=%d H_v=%d d=%d conv=%d  layers=%s tied=%s"
                % (self.n_layer, self.n_nextn, self.n_embd, self.n_vocab, self.head_k, self.n_rot,
                   self.freq_base, self.eps, self.H_k, self.H_v, self.d, self.conv_k, kinds, self.tied))


# ---------------------------------------------------------------------------------------------
# building blocks (all operate on float64; x has tokens as rows: [T, dim])
# ---------------------------------------------------------------------------------------------

def rmsnorm(x, w, eps):
    """x / sqrt(mean(x^2) + eps) * w over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def l2norm(x, eps):
    """x / max(||x||_2, eps) over the last axis (ggml_l2_norm)."""
    return x / np.maximum(np.sqrt(np.sum(x * x, axis=-1, keepdims=True)), eps)


def silu(x):
    return x / (1.0 + np.exp(-x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    # ggml: x if x > 20 else log(1 + e^x)
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


# vec_dot type ggml-cpu converts the activation row to, per weight type (ggml-cpu type_traits_cpu)
VEC_DOT_TYPE = {"F32": None, "F16": "F16", "BF16": "BF16", "Q8_0": "Q8_0", "Q4_0": "Q8_0", "Q5_0": "Q8_0",
                "Q4_1": "Q8_0", "Q5_1": "Q8_0",  # really Q8_1: same codes and d
                "Q4_K": "Q8_K", "Q5_K": "Q8_K", "Q6_K": "Q8_K"}


def act_codes(x, vt):
    """ggml's activation conversion of rows x [T, n] (float64) to vec_dot type vt.
    Returns (q, d, v): integer codes [T, n] (None for F16/BF16), per-block scales, and the dequantized values."""
    T, n = x.shape
    if vt == "F16":
        return None, None, x.astype(np.float16).astype(np.float64)
    if vt == "BF16":
        u = (x.astype(np.float32).view(np.uint32).astype(np.uint64) + 0x7FFF
             + ((x.astype(np.float32).view(np.uint32) >> 16) & 1)) >> 16 << 16
        return None, None, u.astype(np.uint32).view(np.float32).astype(np.float64)
    if vt == "Q8_0":
        b = x.reshape(T, n // 32, 32)
        amax = np.abs(b).max(axis=-1, keepdims=True)
        d = (amax / 127.0).astype(np.float16).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(amax > 0, np.rint(b * np.where(amax > 0, 127.0 / amax, 0.0)), 0.0)
        return q.reshape(T, n), d[..., 0], (d * q).reshape(T, n)
    if vt == "Q8_K":
        b = x.reshape(T, n // 256, 256)
        idx = np.abs(b).argmax(axis=-1)[..., None]                         # first element of largest |x|
        mx = np.take_along_axis(b, idx, axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            iscale = np.where(mx != 0, -127.0 / mx, 0.0)
            q = np.minimum(127.0, np.rint(iscale * b))
            d = np.where(mx != 0, (1.0 / iscale).astype(np.float32).astype(np.float64), 0.0)
        return q.reshape(T, n), d[..., 0], (d * q).reshape(T, n)
    raise ValueError(vt)


def matmul(x, W):
    """y = W x for every token row: x [T, n_in], W math shape [n_out, n_in] -> [T, n_out]."""
    return x @ W.T


# ---------------------------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------------------------

class Qwen35:
    def __init__(self, path, emulate_ggml=False):
        self.g = GGUFFile(path)
        self.cfg = Config(self.g)
        self.emulate = emulate_ggml
        self.trace = None  # set to a list to record (weight name, matmul input rows) of every matmul

    def w(self, name):
        return self.g.get(name)

    def mm(self, x, name):
        """y = W x with W the named weight; with --emulate-ggml the rows of x are first converted like ggml."""
        if self.trace is not None:
            self.trace.append((name, x.copy()))
        if self.emulate:
            vt = VEC_DOT_TYPE[self.g.tensors[name].type_name]
            if vt is not None:
                x = act_codes(x, vt)[2]
        return matmul(x, self.w(name))

    # ---- FFN (spec 4.2) ---------------------------------------------------------------------
    def ffn(self, i, x):
        p = "blk.%d." % i
        gate = self.mm(x, p + "ffn_gate.weight")
        up = self.mm(x, p + "ffn_up.weight")
        return self.mm(silu(gate) * up, p + "ffn_down.weight")

    # ---- Gated DeltaNet (spec 4.3) ----------------------------------------------------------
    def gdn(self, i, a):
        c = self.cfg
        p = "blk.%d." % i
        T = a.shape[0]
        d, H_k, H_v, K = c.d, c.H_k, c.H_v, c.conv_k

        # 1. projections
        mixed = self.mm(a, p + "attn_qkv.weight")                    # [T, conv_dim]
        z = self.mm(a, p + "attn_gate.weight").reshape(T, H_v, d)    # [T, H_v, d]
        beta = sigmoid(self.mm(a, p + "ssm_beta.weight"))            # [T, H_v]
        alpha = self.mm(a, p + "ssm_alpha.weight")                   # [T, H_v]
        g = softplus(alpha + self.w(p + "ssm_dt.bias")) * self.w(p + "ssm_a")  # [T, H_v], <= 0

        # 2. causal depthwise conv (conv state = zeros at sequence start) + SiLU
        conv_w = self.w(p + "ssm_conv1d.weight")                            # [conv_dim, K]
        assert conv_w.shape == (c.conv_dim, K)
        xpad = np.concatenate([np.zeros((K - 1, c.conv_dim)), mixed], axis=0)  # [K-1+T, conv_dim]
        conv = np.zeros_like(mixed)
        for j in range(K):  # tap j multiplies x_{t-(K-1)+j}; tap K-1 = current token
            conv += conv_w[:, j] * xpad[j:j + T]
        conv = silu(conv)

        # 3. split, 4. L2-normalize q and k per head
        q = l2norm(conv[:, :c.key_dim].reshape(T, H_k, d), c.eps)
        k = l2norm(conv[:, c.key_dim:2 * c.key_dim].reshape(T, H_k, d), c.eps)
        v = conv[:, 2 * c.key_dim:].reshape(T, H_v, d)

        # 5. value head h uses key head h mod H_k (tiled)
        kh = np.arange(H_v) % H_k
        q, k = q[:, kh], k[:, kh]                                           # [T, H_v, d]

        # 6. gated delta rule, state S[h][i][j] (i = key index, j = value index)
        scale = 1.0 / np.sqrt(d)
        S = np.zeros((H_v, d, d))
        o = np.empty((T, H_v, d))
        decay = np.exp(g)
        for t in range(T):
            S *= decay[t][:, None, None]
            kt, qt = k[t], q[t]                                             # [H_v, d]
            kv = np.einsum("hij,hi->hj", S, kt)                             # S^T k
            delta = beta[t][:, None] * (v[t] - kv)                          # [H_v, d]
            S += kt[:, :, None] * delta[:, None, :]                         # S + k delta^T
            o[t] = scale * np.einsum("hij,hi->hj", S, qt)                   # scale * S^T q

        # 7. gated RMSNorm per head: rms(o) * ssm_norm * silu(z)
        y = rmsnorm(o, self.w(p + "ssm_norm.weight"), c.eps) * silu(z)

        # 8. output projection
        return self.mm(y.reshape(T, c.value_dim), p + "ssm_out.weight")

    # ---- full attention (spec 4.4) ----------------------------------------------------------
    def rope(self, x, pos):
        """NEOX rotate-half on the first n_rot dims of each head. x: [T, H, hd], pos: [T]."""
        c = self.cfg
        n_rot, half = c.n_rot, c.n_rot // 2
        inv_freq = c.freq_base ** (-2.0 * np.arange(half) / n_rot)        # [half]
        theta = pos[:, None].astype(np.float64) * inv_freq[None, :]         # [T, half]
        cos, sin = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
        x = x.copy()
        x0, x1 = x[..., :half].copy(), x[..., half:n_rot].copy()
        x[..., :half] = x0 * cos - x1 * sin
        x[..., half:n_rot] = x0 * sin + x1 * cos
        return x

    def attn(self, i, a, pos):
        c = self.cfg
        p = "blk.%d." % i
        T = a.shape[0]
        n_head, n_head_kv = self.cfg.heads(i)
        hd = c.head_k
        assert c.head_v == hd

        # 1. q and gate interleaved per head: [q_h (hd) | gate_h (hd)]
        qg = self.mm(a, p + "attn_q.weight").reshape(T, n_head, 2 * hd)
        q, gate = qg[..., :hd], qg[..., hd:]
        # 2./3. per-head RMSNorm of q and k; v plain
        q = rmsnorm(q, self.w(p + "attn_q_norm.weight"), c.eps)
        k = rmsnorm(self.mm(a, p + "attn_k.weight").reshape(T, n_head_kv, hd),
                    self.w(p + "attn_k_norm.weight"), c.eps)
        v = self.mm(a, p + "attn_v.weight").reshape(T, n_head_kv, hd)
        # 4. RoPE (text tokens: all M-RoPE components = pos -> plain NEOX partial RoPE)
        q, k = self.rope(q, pos), self.rope(k, pos)
        # 5. causal softmax attention with grouped GQA: query head h uses kv head h // group
        group = n_head // n_head_kv
        kvh = np.arange(n_head) // group
        kq, vq = k[:, kvh], v[:, kvh]                                        # [T, n_head, hd]
        scores = np.einsum("thd,shd->hts", q, kq) / np.sqrt(hd)            # [n_head, T, T]
        mask = np.triu(np.ones((T, T), dtype=bool), 1)
        scores[:, mask] = -np.inf
        scores -= scores.max(axis=-1, keepdims=True)
        pr = np.exp(scores)
        pr /= pr.sum(axis=-1, keepdims=True)
        o = np.einsum("hts,shd->thd", pr, vq)                                # [T, n_head, hd]
        # 6. sigmoid output gate, 7. output projection
        o = o * sigmoid(gate)
        return self.mm(o.reshape(T, n_head * hd), p + "attn_output.weight")

    # ---- whole model (spec 4.1) -------------------------------------------------------------
    def forward(self, tokens, verbose=False):
        c = self.cfg
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.size and (tokens.min() < 0 or tokens.max() >= c.n_vocab):
            raise ValueError("token id out of range [0, %d)" % c.n_vocab)
        pos = np.arange(len(tokens))
        h = self.w("token_embd.weight")[tokens]                              # [T, n_embd]
        for i in range(c.n_layer):
            t0 = time.time()
            p = "blk.%d." % i
            a = rmsnorm(h, self.w(p + "attn_norm.weight"), c.eps)
            m = self.gdn(i, a) if c.is_recr[i] else self.attn(i, a, pos)
            r = h + m
            f = self.ffn(i, rmsnorm(r, self.w(p + "post_attention_norm.weight"), c.eps))
            h = r + f
            if verbose:
                print("  layer %d (%s) %.2fs" % (i, "GDN" if c.is_recr[i] else "attn", time.time() - t0),
                      file=sys.stderr)
        h_final = rmsnorm(h, self.w("output_norm.weight"), c.eps)
        logits = self.mm(h_final, "token_embd.weight" if c.tied else "output.weight")  # [T, n_vocab]
        return logits, h_final

    # ---- MTP / NextN head (spec 7.1) --------------------------------------------------------
    def mtp(self, tokens, hidden_in):
        """Row t: token tokens[t] at position t with hidden_in[t] (the trunk's final normed hidden
        state of position t-1). Returns the head's logits and its normed output rows."""
        c = self.cfg
        m = c.n_layer  # the MTP block follows the trunk
        p = "blk.%d." % m
        tokens = np.asarray(tokens, dtype=np.int64)
        pos = np.arange(len(tokens))
        emb_name = p + "nextn.embed_tokens.weight"
        emb = self.w(emb_name if emb_name in self.g.tensors else "token_embd.weight")[tokens]
        e = rmsnorm(emb, self.w(p + "nextn.enorm.weight"), c.eps)
        h = rmsnorm(hidden_in, self.w(p + "nextn.hnorm.weight"), c.eps)
        u = self.mm(np.concatenate([e, h], axis=-1), p + "nextn.eh_proj.weight")   # [embedding ; hidden]
        u = u + self.attn(m, rmsnorm(u, self.w(p + "attn_norm.weight"), c.eps), pos)
        u = u + self.ffn(m, rmsnorm(u, self.w(p + "post_attention_norm.weight"), c.eps))
        norm = p + "nextn.shared_head_norm.weight"
        hn = rmsnorm(u, self.w(norm if norm in self.g.tensors else "output_norm.weight"), c.eps)
        head = p + "nextn.shared_head_head.weight"
        if head not in self.g.tensors:
            head = "token_embd.weight" if c.tied else "output.weight"
        return self.mm(hn, head), hn


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokens", help="comma-separated token ids")
    src.add_argument("--tokens-file", help="JSON array of token ids")
    ap.add_argument("--out", help="logits output (float32 [n_tokens][n_vocab])")
    ap.add_argument("--hidden-out", help="final-normed hidden states (float32 [n_tokens][n_embd])")
    ap.add_argument("--mtp-out", help="MTP head logits (float32 [n_tokens][n_vocab]); row t combines token t "
                    "with the trunk's hidden state of position t-1 (zeros for t = 0)")
    ap.add_argument("--emulate-ggml", action="store_true",
                    help="convert matmul activations like ggml-cpu (F16 / Q8_0 / Q8_K), i.e. README ref B")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    if args.tokens is not None:
        tokens = [int(t) for t in args.tokens.split(",") if t.strip()]
    else:
        with open(args.tokens_file) as f:
            tokens = [int(t) for t in json.load(f)]

    t0 = time.time()
    model = Qwen35(args.model, emulate_ggml=args.emulate_ggml)
    if args.verbose:
        print(model.cfg.summary(), file=sys.stderr)
    logits, hidden = model.forward(tokens, verbose=args.verbose)
    if args.out:
        logits.astype("<f4").tofile(args.out)
    if args.hidden_out:
        hidden.astype("<f4").tofile(args.hidden_out)
    if args.mtp_out:
        hidden_in = np.concatenate([np.zeros((1, hidden.shape[1])), hidden[:-1]], axis=0)
        mtp_logits, _ = model.mtp(tokens, hidden_in)
        mtp_logits.astype("<f4").tofile(args.mtp_out)
    print("%d tokens, n_vocab %d, %.2fs; last-row argmax %d"
          % (len(tokens), logits.shape[1], time.time() - t0, int(np.argmax(logits[-1]))), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
