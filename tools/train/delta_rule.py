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


def f32(t):
    """A product's output back in float32 when autocast made it bfloat16 (training, train.py
    --precision bf16), else as it is (float32 / float64 in the tests). Every elementwise operation
    then sees one dtype: in this torch build an elementwise op mixing float32 and bfloat16 runs
    ~100x slower than either alone (no vectorized path for the promotion), and bfloat16
    elementwise math would also lose precision."""
    return t.float() if t.dtype == torch.bfloat16 else t


def mm(a, b):
    """a @ b, float32 out under autocast (f32)."""
    return f32(a @ b)


def unit_lower_inverse(L):
    """Inverse of unit lower triangular matrices L [..., n, n] (n a power of two), by blocks: for
    L = [[L11, 0], [L21, L22]], L^-1 = [[X11, 0], [-X22 L21 X11, X22]], built bottom-up from 1x1
    blocks (whose inverse is 1) in log2(n) levels of batched products. The same algebra as a
    triangular solve against I (torch.linalg.solve_triangular), but a few large matrix products
    instead of one small LAPACK call per matrix, which took ~0.75 ms per 64x64 matrix here (13% of
    a training step). Runs in float32 even under autocast: the carry of the state depends on it."""
    n = L.shape[-1]
    assert n & (n - 1) == 0, "n must be a power of two"
    lead = L.shape[:-2]
    with torch.autocast("cpu", enabled=False):
        if L.dtype not in (torch.float32, torch.float64):
            L = L.float()
        X = torch.ones(*lead, n, 1, 1, dtype=L.dtype, device=L.device)   # n diagonal blocks of 1x1
        s = 1
        while s < n:
            m = n // (2 * s)                                              # blocks of 2s x 2s after this level
            # the diagonal 2s x 2s blocks of L, and their lower-left s x s parts
            Lblk = L.reshape(*lead, m, 2 * s, m, 2 * s).diagonal(dim1=-4, dim2=-2)   # [..., 2s, 2s, m]
            Lblk = Lblk.permute(*range(len(lead)), -1, -3, -2)                       # [..., m, 2s, 2s]
            L21 = Lblk[..., s:, :s]
            Xp = X.reshape(*lead, m, 2, s, s)
            X11, X22 = Xp[..., 0, :, :], Xp[..., 1, :, :]
            X21 = -(X22 @ L21 @ X11)
            top = torch.cat([X11, torch.zeros_like(X11)], dim=-1)
            bot = torch.cat([X21, X22], dim=-1)
            X = torch.cat([top, bot], dim=-2)                              # [..., m, 2s, 2s]
            s *= 2
        return X.reshape(*lead, n, n)


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
    A = mm(kb, k.transpose(-1, -2)) * decay                  # A[r][c] = b_r (k_r . k_c) e^{G_r - G_c}
    A = A.masked_fill(~strict, 0.0)
    eye = torch.eye(chunk, dtype=q.dtype, device=q.device)
    # T = (I + A)^-1 (unit lower triangular), by blocks (unit_lower_inverse).
    Tm = unit_lower_inverse(A + eye)
    U = mm(Tm, v * beta.unsqueeze(-1))                      # u_r = sum_c T[r][c] b_c v_c
    W = mm(Tm, kb * G.exp().unsqueeze(-1))                  # w_r = sum_c T[r][c] b_c e^{G_c} k_c
    KQ = mm(q, k.transpose(-1, -2)) * decay                 # (q_r . k_c) e^{G_r - G_c}, c <= r

    qG = q * G.exp().unsqueeze(-1)
    g_last = G[..., -1]                                     # [B, H, N]
    kdec = k * (g_last.unsqueeze(-1) - G).exp().unsqueeze(-1)  # e^{G_last - G_c} k_c
    outs = []
    S = state
    for qG_n, KQ_n, U_n, W_n, kdec_n, gl_n in zip(qG.unbind(2), KQ.unbind(2), U.unbind(2), W.unbind(2),
                                                   kdec.unbind(2), g_last.unbind(2)):
        Vn = U_n - mm(W_n, S)                                # v'_r = u_r - S^T w_r
        outs.append(mm(qG_n, S) + mm(KQ_n, Vn))                 # o_r = e^{G_r} S^T q_r + sum_c KQ[r][c] v'_c
        S = S * gl_n.exp()[..., None, None] + mm(kdec_n.transpose(-1, -2), Vn)
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
