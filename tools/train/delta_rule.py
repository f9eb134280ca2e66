"""Chunked gated delta rule (spec qwen35.md section 6.3) in torch, differentiable and batched.

Per value head, with state S (d_k x d_v, key index first, as spec 4.3 step 6):
    S_t = e^{g_t} (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T,    o_t = S_t^T q_t / sqrt(d)
computed C = 64 tokens at a time (the WY/UT form llama.cpp's build_delta_net_chunking uses): inside
a chunk everything is a few batched matrix products; only the carry of S runs over the chunks.

Why it is written this way: indexing or assigning one chunk of a whole tensor inside the loop
(x[:, :, i], out[:, :, i] = ...) makes autograd fill and copy the whole tensor once per chunk in the
backward pass, which is quadratic in the sequence length. Here the chunk tensors are split once with
unbind() (whose backward is one stack) and the outputs are stacked once at the end.
"""

import torch

CHUNK = 64


def chunk_gated_delta_rule(q, k, v, g, beta, state=None, chunk=CHUNK):
    """q, k: [B, H, T, d_k] (already L2-normalized and repeated to the value heads); v: [B, H, T, d_v];
    g: [B, H, T] log-decays (<= 0); beta: [B, H, T]; state: [B, H, d_k, d_v] or None (zeros).
    Returns (o [B, H, T, d_v], final state [B, H, d_k, d_v]). q is scaled by 1/sqrt(d_k) here."""
    B, H, T, dk = q.shape
    dv = v.shape[-1]
    if state is None:
        state = q.new_zeros(B, H, dk, dv)
    pad = (-T) % chunk
    if pad:
        # Zero k, g and beta leave the state unchanged, so the padded tail does not alter it.
        q = torch.nn.functional.pad(q, (0, 0, 0, pad))
        k = torch.nn.functional.pad(k, (0, 0, 0, pad))
        v = torch.nn.functional.pad(v, (0, 0, 0, pad))
        g = torch.nn.functional.pad(g, (0, pad))
        beta = torch.nn.functional.pad(beta, (0, pad))
    N = (T + pad) // chunk
    q = (q * dk ** -0.5).reshape(B, H, N, chunk, dk)
    k = k.reshape(B, H, N, chunk, dk)
    v = v.reshape(B, H, N, chunk, dv)
    G = g.reshape(B, H, N, chunk).cumsum(-1)               # inclusive prefix sums of the log-decays
    beta = beta.reshape(B, H, N, chunk)

    ones = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device)
    incl = torch.tril(ones)                                 # c <= r
    strict = torch.tril(ones, -1)                           # c < r
    diff = G.unsqueeze(-1) - G.unsqueeze(-2)                # G_r - G_c
    # Masked before exp: above the diagonal G_r - G_c > 0 could overflow (and inf * 0 is NaN).
    decay = diff.masked_fill(~incl, float("-inf")).exp()    # e^{G_r - G_c} for c <= r, else 0

    kb = k * beta.unsqueeze(-1)
    A = (kb @ k.transpose(-1, -2)) * decay                  # A[r][c] = b_r (k_r . k_c) e^{G_r - G_c}
    A = A.masked_fill(~strict, 0.0)
    eye = torch.eye(chunk, dtype=q.dtype, device=q.device)
    # T = (I + A)^-1 (unit lower triangular): one batched triangular solve.
    Tm = torch.linalg.solve_triangular(A + eye, eye.expand_as(A), upper=False, unitriangular=True)
    U = Tm @ (v * beta.unsqueeze(-1))                       # u_r = sum_c T[r][c] b_c v_c
    W = Tm @ (kb * G.exp().unsqueeze(-1))                   # w_r = sum_c T[r][c] b_c e^{G_c} k_c
    KQ = (q @ k.transpose(-1, -2)) * decay                  # (q_r . k_c) e^{G_r - G_c}, c <= r

    qG = q * G.exp().unsqueeze(-1)
    g_last = G[..., -1]                                     # [B, H, N]
    kdec = k * (g_last.unsqueeze(-1) - G).exp().unsqueeze(-1)  # e^{G_last - G_c} k_c
    outs = []
    S = state
    for qG_n, KQ_n, U_n, W_n, kdec_n, gl_n in zip(qG.unbind(2), KQ.unbind(2), U.unbind(2), W.unbind(2),
                                                   kdec.unbind(2), g_last.unbind(2)):
        Vn = U_n - W_n @ S                                  # v'_r = u_r - S^T w_r
        outs.append(qG_n @ S + KQ_n @ Vn)                   # o_r = e^{G_r} S^T q_r + sum_c KQ[r][c] v'_c
        S = S * gl_n.exp()[..., None, None] + kdec_n.transpose(-1, -2) @ Vn
    o = torch.stack(outs, dim=2).reshape(B, H, N * chunk, dv)
    return o[:, :, :T], S


def recurrent_gated_delta_rule(q, k, v, g, beta, state=None):
    """The per-token recurrence (spec 4.3 step 6), the definition the chunked form must equal (tests)."""
    B, H, T, dk = q.shape
    dv = v.shape[-1]
    S = q.new_zeros(B, H, dk, dv) if state is None else state
    outs = []
    for t in range(T):
        S = S * g[:, :, t].exp()[..., None, None]
        kt, qt = k[:, :, t], q[:, :, t]
        kv = (S * kt.unsqueeze(-1)).sum(-2)                 # S^T k
        delta = beta[:, :, t].unsqueeze(-1) * (v[:, :, t] - kv)
        S = S + kt.unsqueeze(-1) * delta.unsqueeze(-2)
        outs.append((S * qt.unsqueeze(-1)).sum(-2) * dk ** -0.5)
    return torch.stack(outs, dim=2), S
