"""Qwen3.5 (llama.cpp arch qwen35) in torch, for training: the forward pass exactly as
/work/shared/spec/qwen35.md defines it (and Tandem and llama.cpp compute it), with the weights held
under their GGUF names in GGUF math shape (torch [rows, cols] = reverse of ne), so that what is
trained is written into the file as it is.

- trunk: embedding -> per layer RMSNorm -> Gated DeltaNet (chunked, delta_rule.py) or gated full
  attention (q/k RMSNorm, partial NEOX RoPE, GQA, sigmoid output gate) -> SwiGLU FFN -> output_norm
  -> tied head (spec 4.1-4.4);
- the MTP (NextN) block (spec 7.1): row t = token t with the trunk's final normed hidden state of
  position t-1; it drafts the token after next through the same head.

Two things differ from a plain port, both for training speed on two cores:
- a training vocabulary: the embedding holds only the rows of the tokens the data uses
  (`vocab_ids`, full ids); every other row of the exported file is zero, so its logit is exactly
  0 for any input. The loss counts those rows as they will be (logsumexp over the used logits and
  `n_zero` logits of 0), so it is the full-vocabulary loss of the exported model, computed over
  a few thousand rows instead of 151,669;
- a shared prefix: `forward_batch` runs the tokens every prompt of the batch starts with once (one
  sequence) and continues B sequences from its recurrent state, conv tails and KV.

The one parameter not stored as its GGUF value is `blk.N.ssm_a`: it is held as log(-ssm_a) (HF's
A_log), so that no optimizer step can make a decay rate positive; `gguf_tensors()` converts back.
"""

import math
from dataclasses import dataclass, asdict, fields

import torch
import torch.nn.functional as F

from delta_rule import chunk_gated_delta_rule, f32


@dataclass
class Shape:
    """The hyper-parameters of model/qwen35/trained_weights.h's manifest (names as Qwen35Shape)."""
    n_vocab: int
    n_embd: int
    n_layer: int
    n_ff: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_rot: int
    ssm_d_state: int
    ssm_n_group: int
    ssm_dt_rank: int
    ssm_conv_kernel: int = 4
    full_attention_interval: int = 4
    rms_eps: float = 1e-6
    rope_freq_base: float = 1e7
    context_length: int = 4096
    tied: bool = True
    n_mtp: int = 1

    @property
    def key_dim(self):
        return self.ssm_n_group * self.ssm_d_state

    @property
    def value_dim(self):
        return self.ssm_dt_rank * self.ssm_d_state

    @property
    def conv_dim(self):
        return 2 * self.key_dim + self.value_dim

    def is_recurrent(self, il):
        return il < self.n_layer and (il + 1) % self.full_attention_interval != 0

    def to_dict(self):
        return asdict(self)

    @staticmethod
    def from_dict(d):
        names = {f.name for f in fields(Shape)}
        return Shape(**{k: v for k, v in d.items() if k in names})

    @staticmethod
    def from_gguf(g):
        """From a parsed GGUF (tests/reference/gguf_read.GGUFFile)."""
        a = "qwen35."
        kv = g.metadata
        n_layer_all = int(kv[a + "block_count"])
        n_mtp = int(kv.get(a + "nextn_predict_layers", 0))
        return Shape(
            n_vocab=int(g.tensors["token_embd.weight"].ne[1]), n_embd=int(kv[a + "embedding_length"]),
            n_layer=n_layer_all - n_mtp, n_ff=int(kv[a + "feed_forward_length"]),
            n_head=int(kv[a + "attention.head_count"]), n_head_kv=int(kv[a + "attention.head_count_kv"]),
            head_dim=int(kv[a + "attention.key_length"]), n_rot=int(kv[a + "rope.dimension_count"]),
            ssm_d_state=int(kv[a + "ssm.state_size"]), ssm_n_group=int(kv[a + "ssm.group_count"]),
            ssm_dt_rank=int(kv[a + "ssm.time_step_rank"]), ssm_conv_kernel=int(kv[a + "ssm.conv_kernel"]),
            full_attention_interval=int(kv.get(a + "full_attention_interval", 4)),
            rms_eps=float(kv[a + "attention.layer_norm_rms_epsilon"]),
            rope_freq_base=float(kv.get(a + "rope.freq_base", 10000.0)),
            context_length=int(kv[a + "context_length"]), tied="output.weight" not in g.tensors, n_mtp=n_mtp)


def tensor_shapes(s):
    """GGUF name -> math shape [rows, cols] (reverse of ne) of every tensor of a qwen35 file of this
    shape: the same list as the C++ generator's plan (plan_qwen35), which re-checks it on import."""
    if not s.tied:
        raise ValueError("only tied heads are trained here (the issue's shape)")
    E = s.n_embd
    t = {"output_norm.weight": [E], "token_embd.weight": [s.n_vocab, E]}
    for il in range(s.n_layer + s.n_mtp):
        p = "blk.%d." % il
        t[p + "attn_norm.weight"] = [E]
        t[p + "post_attention_norm.weight"] = [E]
        t[p + "ffn_gate.weight"] = [s.n_ff, E]
        t[p + "ffn_up.weight"] = [s.n_ff, E]
        t[p + "ffn_down.weight"] = [E, s.n_ff]
        if s.is_recurrent(il):
            t[p + "attn_qkv.weight"] = [s.conv_dim, E]
            t[p + "attn_gate.weight"] = [s.value_dim, E]
            t[p + "ssm_conv1d.weight"] = [s.conv_dim, s.ssm_conv_kernel]
            t[p + "ssm_dt.bias"] = [s.ssm_dt_rank]
            t[p + "ssm_a"] = [s.ssm_dt_rank]
            t[p + "ssm_beta.weight"] = [s.ssm_dt_rank, E]
            t[p + "ssm_alpha.weight"] = [s.ssm_dt_rank, E]
            t[p + "ssm_norm.weight"] = [s.ssm_d_state]
            t[p + "ssm_out.weight"] = [E, s.value_dim]
        else:
            t[p + "attn_q.weight"] = [2 * s.n_head * s.head_dim, E]
            t[p + "attn_k.weight"] = [s.n_head_kv * s.head_dim, E]
            t[p + "attn_v.weight"] = [s.n_head_kv * s.head_dim, E]
            t[p + "attn_output.weight"] = [E, s.n_head * s.head_dim]
            t[p + "attn_q_norm.weight"] = [s.head_dim]
            t[p + "attn_k_norm.weight"] = [s.head_dim]
        if il >= s.n_layer:
            t[p + "nextn.eh_proj.weight"] = [E, 2 * E]
            t[p + "nextn.enorm.weight"] = [E]
            t[p + "nextn.hnorm.weight"] = [E]
            t[p + "nextn.shared_head_norm.weight"] = [E]
    return t


def _key(name):
    return name.replace(".", "__")  # ParameterDict keys cannot hold dots


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def l2_norm(x, eps):
    # ggml_l2_norm: x / max(||x||, eps)
    return x / x.norm(dim=-1, keepdim=True).clamp_min(eps)


class Qwen35(torch.nn.Module):
    def __init__(self, shape, vocab_ids=None):
        """vocab_ids: the full-vocabulary ids of the embedding rows (None: all shape.n_vocab rows)."""
        super().__init__()
        self.shape = shape
        if vocab_ids is None:
            vocab_ids = torch.arange(shape.n_vocab)
        vocab_ids = torch.as_tensor(vocab_ids, dtype=torch.long)
        if vocab_ids.numel() and (vocab_ids.min() < 0 or vocab_ids.max() >= shape.n_vocab
                                  or torch.unique(vocab_ids).numel() != vocab_ids.numel()):
            raise ValueError("vocab_ids must be distinct ids in [0, n_vocab)")
        self.register_buffer("vocab_ids", vocab_ids, persistent=True)
        lookup = torch.full((shape.n_vocab,), vocab_ids.numel(), dtype=torch.long)  # unused -> the zero row
        lookup[vocab_ids] = torch.arange(vocab_ids.numel())
        self.register_buffer("lookup", lookup, persistent=False)
        self.n_zero = shape.n_vocab - vocab_ids.numel()   # rows exported as zeros (logit 0)
        self.params = torch.nn.ParameterDict()
        for name, shp in tensor_shapes(shape).items():
            if name == "token_embd.weight":
                shp = [vocab_ids.numel(), shp[1]]
            self.params[_key(name)] = torch.nn.Parameter(torch.zeros(shp))

    # ---- weights ---------------------------------------------------------------------------
    def w(self, name):
        return self.params[_key(name)]

    def names(self):
        return list(tensor_shapes(self.shape).keys())

    def init_random(self, generator):
        """A training start: matrices N(0, 1/fan_in) (residual-branch outputs / sqrt(2 n_layer)), the
        embedding N(0, 1/n_embd), norms 1, dt_bias / A_log / conv kernels as HF's Qwen3-Next init."""
        s = self.shape
        out_scale = 1.0 / math.sqrt(2.0 * (s.n_layer + s.n_mtp))
        with torch.no_grad():
            for name in self.names():
                p = self.w(name)
                if name == "token_embd.weight":
                    p.normal_(0.0, s.n_embd ** -0.5, generator=generator)
                elif name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith("ssm_dt.bias"):
                    dt = torch.exp(torch.rand(p.shape, generator=generator) * (math.log(0.1) - math.log(1e-3))
                                   + math.log(1e-3))
                    p.copy_(dt + torch.log(-torch.expm1(-dt)))          # inverse softplus
                elif name.endswith("ssm_a"):
                    p.copy_(torch.log(torch.rand(p.shape, generator=generator) * 15.0 + 1.0))  # A_log, A in [1, 16)
                elif name.endswith("ssm_conv1d.weight"):
                    bound = 1.0 / math.sqrt(s.ssm_conv_kernel)
                    p.uniform_(-bound, bound, generator=generator)
                else:
                    fan_in = p.shape[1]
                    scale = out_scale if name.endswith(("ssm_out.weight", "attn_output.weight", "ffn_down.weight")) \
                        else 1.0
                    p.normal_(0.0, scale / math.sqrt(fan_in), generator=generator)

    def load_gguf_tensors(self, get):
        """get(name) -> array in math shape (GGUF values, e.g. gguf_read.GGUFFile.get)."""
        with torch.no_grad():
            for name in self.names():
                x = torch.as_tensor(get(name), dtype=torch.float64)
                if name == "token_embd.weight":
                    x = x[self.vocab_ids]
                if name.endswith("ssm_a"):
                    x = torch.log(-x)
                self.w(name).copy_(x.to(self.w(name).dtype))

    def gguf_tensors(self):
        """name -> float32 tensor in GGUF math shape and values, the embedding scattered into the full
        vocabulary (rows outside vocab_ids zero: their logit is 0 for every input)."""
        out = {}
        with torch.no_grad():
            for name in self.names():
                x = self.w(name).detach().float()
                if name == "token_embd.weight":
                    full = torch.zeros(self.shape.n_vocab, self.shape.n_embd)
                    full[self.vocab_ids] = x
                    x = full
                elif name.endswith("ssm_a"):
                    x = -torch.exp(x)
                out[name] = x.contiguous()
        return out

    # ---- building blocks -------------------------------------------------------------------
    def embed(self, tokens):
        """Full-vocabulary ids -> rows; ids outside the training vocabulary get the zero row, as in
        the exported file."""
        table = torch.cat([self.w("token_embd.weight"), self.w("token_embd.weight").new_zeros(1, self.shape.n_embd)])
        return F.embedding(self.lookup[tokens], table)

    def lin(self, x, name):
        """x @ W^T with the named weight, float32 out under autocast (delta_rule.f32)."""
        return f32(F.linear(x, self.w(name)))

    def ffn(self, il, x):
        p = "blk.%d." % il
        return self.lin(F.silu(self.lin(x, p + "ffn_gate.weight")) * self.lin(x, p + "ffn_up.weight"),
                        p + "ffn_down.weight")

    def rope_cs(self, pos0, T, dtype):
        s = self.shape
        half = s.n_rot // 2
        inv = s.rope_freq_base ** (-2.0 * torch.arange(half, dtype=torch.float64) / s.n_rot)
        theta = torch.arange(pos0, pos0 + T, dtype=torch.float64)[:, None] * inv[None, :]
        return theta.cos().to(dtype), theta.sin().to(dtype)           # [T, half]

    def rope(self, x, cs):
        """NEOX rotate-half on the first n_rot dims of each head; x [B, T, heads, hd]. Text tokens have
        all M-RoPE components equal to the position, so IMROPE reduces to this (spec 4.4 step 4)."""
        cos, sin = cs
        half = self.shape.n_rot // 2
        cos, sin = cos[None, :, None, :], sin[None, :, None, :]
        x0, x1, rest = x[..., :half], x[..., half:2 * half], x[..., 2 * half:]
        return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos, rest], dim=-1)

    def attention(self, il, a, cs, past):
        """Gated attention (spec 4.4) of a [B, T, E] at positions past_len..; past = (K, V) [B, n_kv,
        T_past, hd] or None. Returns (output, (K, V) including these rows)."""
        s = self.shape
        p = "blk.%d." % il
        B, T, _ = a.shape
        hd, nh, nkv = s.head_dim, s.n_head, s.n_head_kv
        qg = self.lin(a, p + "attn_q.weight").view(B, T, nh, 2 * hd)
        q, gate = qg[..., :hd], qg[..., hd:]
        q = self.rope(rms_norm(q, self.w(p + "attn_q_norm.weight"), s.rms_eps), cs)
        k = self.lin(a, p + "attn_k.weight").view(B, T, nkv, hd)
        k = self.rope(rms_norm(k, self.w(p + "attn_k_norm.weight"), s.rms_eps), cs)
        v = self.lin(a, p + "attn_v.weight").view(B, T, nkv, hd)
        k, v = k.transpose(1, 2), v.transpose(1, 2)                   # [B, nkv, T, hd]
        if past is not None:
            k = torch.cat([past[0].expand(B, -1, -1, -1), k], dim=2)
            v = torch.cat([past[1].expand(B, -1, -1, -1), v], dim=2)
        T_all = k.shape[2]
        group = nh // nkv                                             # query head h uses kv head h // group
        # The group's queries share one kv head: [B * nkv, group * T, hd] rows against [B * nkv, T_all, hd].
        qh = (q * hd ** -0.5).transpose(1, 2).reshape(B * nkv, group * T, hd)
        past_len = T_all - T
        # Causal mask as an additive bias, fused into the product (the scores are the largest tensor).
        bias = torch.zeros(T, T_all, dtype=a.dtype, device=a.device).masked_fill(
            torch.ones(T, T_all, dtype=torch.bool, device=a.device).triu(past_len + 1), float("-inf")).repeat(group, 1)
        scores = f32(torch.baddbmm(bias, qh, k.reshape(B * nkv, T_all, hd).transpose(1, 2)))
        o = f32(scores.softmax(-1) @ v.reshape(B * nkv, T_all, hd)).view(B, nh, T, hd).transpose(1, 2)
        o = o * torch.sigmoid(gate)
        return self.lin(o.reshape(B, T, nh * hd), p + "attn_output.weight"), (k, v)

    def gdn(self, il, a, state):
        """Gated DeltaNet (spec 4.3) of a [B, T, E]; state = (conv tail [B, K-1, conv_dim], S [B, H_v,
        d, d]) or None (zeros). Returns (output, new state)."""
        s = self.shape
        p = "blk.%d." % il
        B, T, _ = a.shape
        d, Hk, Hv, K = s.ssm_d_state, s.ssm_n_group, s.ssm_dt_rank, s.ssm_conv_kernel
        mixed = self.lin(a, p + "attn_qkv.weight")            # [B, T, conv_dim]
        z = self.lin(a, p + "attn_gate.weight").view(B, T, Hv, d)
        beta = torch.sigmoid(self.lin(a, p + "ssm_beta.weight"))
        alpha = self.lin(a, p + "ssm_alpha.weight")
        # g = ssm_a * softplus(alpha + dt_bias), ssm_a = -exp(A_log); ggml's softplus is linear above 20
        g = -torch.exp(self.w(p + "ssm_a")) * F.softplus(alpha + self.w(p + "ssm_dt.bias"), beta=1.0, threshold=20.0)
        if state is None:
            tail, S = mixed.new_zeros(B, K - 1, s.conv_dim), None
        else:
            tail, S = state[0].expand(B, -1, -1), state[1].expand(B, -1, -1, -1)
        xpad = torch.cat([tail, mixed], dim=1)                        # [B, K-1+T, conv_dim]
        cw = self.w(p + "ssm_conv1d.weight")                          # [conv_dim, K]; tap K-1 = current token
        conv = sum(cw[:, j] * xpad[:, j:j + T] for j in range(K))
        conv = F.silu(conv)
        q = l2_norm(conv[..., :s.key_dim].reshape(B, T, Hk, d), s.rms_eps)
        k = l2_norm(conv[..., s.key_dim:2 * s.key_dim].reshape(B, T, Hk, d), s.rms_eps)
        v = conv[..., 2 * s.key_dim:].reshape(B, T, Hv, d)
        r = Hv // Hk                                                  # value head h uses key head h mod H_k
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        if r > 1:
            q, k = q.repeat(1, r, 1, 1), k.repeat(1, r, 1, 1)
        o, S = chunk_gated_delta_rule(q, k, v.transpose(1, 2), g.transpose(1, 2), beta.transpose(1, 2), S)
        o = o.transpose(1, 2)                                         # [B, T, Hv, d]
        y = rms_norm(o, self.w(p + "ssm_norm.weight"), s.rms_eps) * F.silu(z)
        return self.lin(y.reshape(B, T, s.value_dim), p + "ssm_out.weight"), (xpad[:, -(K - 1):], S)

    # ---- passes ----------------------------------------------------------------------------
    def trunk(self, tokens, pos0=0, states=None):
        """tokens [B, T] at positions pos0..; states: per trunk layer, as gdn()/attention() return
        them (None: a new sequence). Returns (final normed hidden [B, T, E], new states)."""
        s = self.shape
        h = self.embed(tokens)
        cs = self.rope_cs(pos0, tokens.shape[1], h.dtype)
        new = []
        for il in range(s.n_layer):
            p = "blk.%d." % il
            st = None if states is None else states[il]
            a = rms_norm(h, self.w(p + "attn_norm.weight"), s.rms_eps)
            m, st = self.gdn(il, a, st) if s.is_recurrent(il) else self.attention(il, a, cs, st)
            new.append(st)
            h = h + m
            h = h + self.ffn(il, rms_norm(h, self.w(p + "post_attention_norm.weight"), s.rms_eps))
        return rms_norm(h, self.w("output_norm.weight"), s.rms_eps), new

    def mtp(self, tokens, hidden_in, pos0=0, past=None):
        """The MTP block (spec 7.1): row t = tokens[:, t] at position pos0 + t with hidden_in[:, t] (the
        trunk's final normed hidden state of the previous position). Returns (normed output rows
        [B, T, E], its attention's (K, V))."""
        s = self.shape
        m = s.n_layer
        p = "blk.%d." % m
        e = rms_norm(self.embed(tokens), self.w(p + "nextn.enorm.weight"), s.rms_eps)
        hh = rms_norm(hidden_in, self.w(p + "nextn.hnorm.weight"), s.rms_eps)
        u = self.lin(torch.cat([e, hh], dim=-1), p + "nextn.eh_proj.weight")   # [embedding ; hidden]
        cs = self.rope_cs(pos0, tokens.shape[1], u.dtype)
        a, kv = self.attention(m, rms_norm(u, self.w(p + "attn_norm.weight"), s.rms_eps), cs, past)
        u = u + a
        u = u + self.ffn(m, rms_norm(u, self.w(p + "post_attention_norm.weight"), s.rms_eps))
        return rms_norm(u, self.w(p + "nextn.shared_head_norm.weight"), s.rms_eps), kv

    def head(self, h):
        """Logits over the training vocabulary (the columns of vocab_ids)."""
        return F.linear(h, self.w("token_embd.weight"))

    def full_logits(self, h):
        """Logits over the whole vocabulary, as the exported file computes them (zero rows give 0)."""
        lg = self.head(h)
        full = lg.new_zeros(*lg.shape[:-1], self.shape.n_vocab)
        full[..., self.vocab_ids] = lg
        return full

    def forward_sequence(self, tokens):
        """One sequence [T] (full ids): (trunk logits [T, n_vocab], MTP logits [T, n_vocab]) over the full
        vocabulary; MTP row t = token t with the trunk hidden of t-1 (zeros for t = 0), predicting t+1."""
        tokens = torch.as_tensor(tokens, dtype=torch.long)[None]
        h, _ = self.trunk(tokens)
        logits = self.full_logits(h)[0]
        if self.shape.n_mtp == 0:
            return logits, None
        h_in = torch.cat([h.new_zeros(1, 1, self.shape.n_embd), h[:, :-1]], dim=1)
        hn, _ = self.mtp(tokens, h_in)
        return logits, self.full_logits(hn)[0]

    def forward_batch(self, prefix, suffix, main_rows, mtp_rows):
        """The training pass over B sequences that all start with `prefix` [P] and continue with
        suffix [B, Ts] (right-padded: causal attention and the recurrences never carry padding back to
        a real row, and no loss row lies in it). The prefix runs once.
        main_rows / mtp_rows: (batch index, suffix position) LongTensor pairs [N, 2] whose trunk /
        MTP hidden rows are wanted. Returns (trunk rows [N_main, E], MTP rows [N_mtp, E])."""
        s = self.shape
        P = prefix.numel()
        h_pre, st = self.trunk(prefix[None], 0, None) if P else (None, None)
        h_suf, _ = self.trunk(suffix, P, st)
        main = h_suf[main_rows[:, 0], main_rows[:, 1]]
        if s.n_mtp == 0 or mtp_rows is None or mtp_rows.numel() == 0:
            return main, None
        B = suffix.shape[0]
        zero = h_suf.new_zeros(1, 1, s.n_embd)
        if P:
            hn_pre, kv = self.mtp(prefix[None], torch.cat([zero, h_pre[:, :-1]], dim=1), 0, None)
            first = h_pre[:, -1:].expand(B, -1, -1)                  # the hidden state before the suffix
        else:
            kv, first = None, zero.expand(B, -1, -1)
        hn, _ = self.mtp(suffix, torch.cat([first, h_suf[:, :-1]], dim=1), P, kv)
        return main, hn[mtp_rows[:, 0], mtp_rows[:, 1]]

    def loss_terms(self, h, targets):
        """Cross-entropy of rows h [N, E] against full-vocabulary targets [N], counting the n_zero rows
        the file will hold (logit 0 each), and whether each row's argmax over the full vocabulary is
        its target. Returns (loss per row [N], correct [N] bool)."""
        lg = self.head(h)
        col = self.lookup[targets]                                    # == len(vocab_ids) for a zero row
        lse = torch.logsumexp(lg, dim=-1)
        tgt = torch.cat([lg, lg.new_zeros(lg.shape[0], 1)], dim=-1).gather(1, col[:, None])[:, 0]
        best, arg = lg.max(dim=-1)
        correct = arg == col
        if self.n_zero:
            lse = torch.logaddexp(lse, lse.new_tensor(math.log(self.n_zero)))
            # The zero rows' logit 0 wins unless a trained row beats it; a target outside the
            # training vocabulary is never counted right (which zero row wins a tie is the engine's).
            correct = correct & (best > 0)
        return lse - tgt, correct
