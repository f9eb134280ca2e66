#include "kernels/delta_rule/delta_rule.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/delta_rule/delta_rule_avx2.h"
#include "kernels/delta_rule/delta_rule_avx512.h"
#include "kernels/delta_rule/delta_rule_loops.h"
#include "kernels/delta_rule/delta_rule_neon.h"

namespace tandem::kernels {

void delta_rule_recurrent_ref(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from) {
  const int d = in.d;
  recurrence_heads(in, state, snapshots, snapshot_from,
                   [d](const float* src, float* row, const float* k, const float* q, float v, float decay, float beta) {
                     float kv = 0.0f;
                     for (int i = 0; i < d; ++i) {
                       row[i] = src[i] * decay;
                       kv += row[i] * k[i];
                     }
                     const float delta = beta * (v - kv);
                     float qs = 0.0f;
                     for (int i = 0; i < d; ++i) {
                       row[i] += k[i] * delta;
                       qs += row[i] * q[i];
                     }
                     return qs;
                   });
}

namespace {

// One chunk of n <= 64 tokens [t0, t0+n) for value head h: updates S (d×d, row j
// over keys) and writes the outputs. w is per-chunk scratch.
struct ChunkScratch {
  double* G;    // n
  double* Tm;   // n*n  (I + A)^-1, lower triangular
  double* KK;   // n*n  k_r . k_c
  double* QK;   // n*n  q_r . k_c  (q scaled)
  float* U;     // n*d
  float* W;     // n*d
  float* Vn;    // n*d  v_new
  float* qs;    // n*d  scaled q
};

void chunk_head(const DeltaRuleInput& in, int h, int64_t t0, int n, float* S, ChunkScratch& w) {
  const int d = in.d;
  const int kh = h % in.H_k;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  auto K = [&](int r) { return in.k + (t0 + r) * in.ldqk + kh * d; };
  auto V = [&](int r) { return in.v + (t0 + r) * in.ldv + h * d; };
  auto beta = [&](int r) { return static_cast<double>(in.beta[(t0 + r) * in.H_v + h]); };

  // 1. Prefix sums of log-decays, scaled queries, Gram matrices.
  double acc = 0.0;
  for (int r = 0; r < n; ++r) {
    acc += in.g[(t0 + r) * in.H_v + h];
    w.G[r] = acc;
    const float* q = in.q + (t0 + r) * in.ldqk + kh * d;
    for (int i = 0; i < d; ++i) w.qs[r * d + i] = q[i] * scale;
  }
  for (int r = 0; r < n; ++r)
    for (int c = 0; c <= r; ++c) {
      double kk = 0.0, qk = 0.0;
      const float* kr = K(r);
      const float* kc = K(c);
      for (int i = 0; i < d; ++i) {
        kk += static_cast<double>(kr[i]) * kc[i];
        qk += static_cast<double>(w.qs[r * d + i]) * kc[i];
      }
      w.KK[r * n + c] = kk;
      w.QK[r * n + c] = qk * std::exp(w.G[r] - w.G[c]);
    }

  // 2. T = (I + A)^-1 with A[r][c] = beta_r (k_r.k_c) e^{G_r - G_c} (c < r), by forward substitution.
  //    KK is turned into A in place.
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < r; ++c) w.KK[r * n + c] *= beta(r) * std::exp(w.G[r] - w.G[c]);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < r; ++c) {
      double s = 0.0;
      for (int m = c; m < r; ++m) s += w.KK[r * n + m] * w.Tm[m * n + c];
      w.Tm[r * n + c] = -s;
    }
    w.Tm[r * n + r] = 1.0;
    for (int c = r + 1; c < n; ++c) w.Tm[r * n + c] = 0.0;
  }

  // 3. U = T diag(beta) V, W = T diag(beta e^G) K.
  double bg[kDeltaRuleChunk];
  for (int c = 0; c < n; ++c) bg[c] = std::exp(w.G[c]);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < d; ++i) {
      double u = 0.0, ww = 0.0;
      for (int c = 0; c <= r; ++c) {
        const double t = w.Tm[r * n + c] * beta(c);
        u += t * V(c)[i];
        ww += t * bg[c] * K(c)[i];
      }
      w.U[r * d + i] = static_cast<float>(u);
      w.W[r * d + i] = static_cast<float>(ww);
    }

  // 4. Against the incoming state: v_new = U - S^T W; o = e^G S^T q + KQ v_new.
  for (int r = 0; r < n; ++r) {
    const double eg = std::exp(w.G[r]);
    for (int j = 0; j < d; ++j) {
      const float* row = S + static_cast<int64_t>(j) * d;
      double sw = 0.0, sq = 0.0;
      for (int i = 0; i < d; ++i) {
        sw += static_cast<double>(row[i]) * w.W[r * d + i];
        sq += static_cast<double>(row[i]) * w.qs[r * d + i];
      }
      w.Vn[r * d + j] = static_cast<float>(w.U[r * d + j] - sw);
      w.U[r * d + j] = static_cast<float>(eg * sq);  // reuse U for the inter-chunk part of o
    }
  }
  for (int r = 0; r < n; ++r) {
    float* o = in.out + (t0 + r) * in.ldo + h * d;
    for (int j = 0; j < d; ++j) {
      double s = w.U[r * d + j];
      for (int c = 0; c <= r; ++c) s += w.QK[r * n + c] * w.Vn[c * d + j];
      o[j] = static_cast<float>(s);
    }
  }

  // 5. S <- e^{G_last} S + sum_c e^{G_last - G_c} k_c v_new_c^T.
  const double glast = w.G[n - 1];
  const float elast = static_cast<float>(std::exp(glast));
  for (int c = 0; c < n; ++c) w.G[c] = std::exp(glast - w.G[c]);  // reuse G as the per-token weight
  for (int j = 0; j < d; ++j) {
    float* row = S + static_cast<int64_t>(j) * d;
    for (int i = 0; i < d; ++i) {
      double s = static_cast<double>(row[i]) * elast;
      for (int c = 0; c < n; ++c) s += w.G[c] * K(c)[i] * w.Vn[c * d + j];
      row[i] = static_cast<float>(s);
    }
  }
}

}  // namespace

void delta_rule_chunked_ref(const DeltaRuleInput& in, float* state, ScratchBuffer& scratch, const int64_t* cuts,
                            int n_cuts, float* cut_states) {
  constexpr int C = kDeltaRuleChunk;
  const int d = in.d;
  const size_t dbl = 1 * C + 3 * C * C;
  const size_t flt = 4 * static_cast<size_t>(C) * d;
  auto* base = static_cast<uint8_t*>(scratch.get(dbl * sizeof(double) + flt * sizeof(float)));
  ChunkScratch w;
  w.G = reinterpret_cast<double*>(base);
  w.Tm = w.G + C;
  w.KK = w.Tm + C * C;
  w.QK = w.KK + C * C;
  w.U = reinterpret_cast<float*>(w.QK + C * C);
  w.W = w.U + C * d;
  w.Vn = w.W + C * d;
  w.qs = w.Vn + C * d;

  const int64_t sf = in.state_floats();
  const int64_t hf = static_cast<int64_t>(d) * d;
  for (int h = in.h_begin; h < in.head_end(); ++h) {
    float* S = state + h * hf;
    chunks_between_cuts(
        in.T, cuts, n_cuts, [&](int64_t t0, int n) { chunk_head(in, h, t0, n, S, w); },
        [&](int c) { std::memcpy(cut_states + c * sf + h * hf, S, hf * sizeof(float)); });
  }
}

// Run-time dispatch: the AVX-512 bodies need d to be a multiple of 16 (one zmm of keys), the AVX2
// and NEON ones a multiple of 8.
void delta_rule_recurrent(CpuTier tier, const DeltaRuleInput& in, float* state, float* snapshots,
                          int64_t snapshot_from) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni) && in.d > 0 && in.d % 16 == 0)
    return avx512::delta_rule_recurrent(in, state, snapshots, snapshot_from);
  if (tier_has(tier, CpuTier::Avx2) && in.d > 0 && in.d % 8 == 0)
    return avx2::delta_rule_recurrent(in, state, snapshots, snapshot_from);
#endif
#ifdef TANDEM_ARCH_ARM64
  if (tier_has(tier, CpuTier::Neon) && in.d > 0 && in.d % 8 == 0)
    return neon::delta_rule_recurrent(in, state, snapshots, snapshot_from);
#endif
  delta_rule_recurrent_ref(in, state, snapshots, snapshot_from);
}

bool delta_rule_prefers_chunked(CpuTier tier, int d) {
#ifdef TANDEM_ARCH_X86
  return tier_has(tier, CpuTier::Avx512Vnni) && d > 0 && d % 16 == 0;
#else
  return false;  // only the AVX-512 chunked body beats the per-token recurrence
#endif
}

void delta_rule_chunked(CpuTier tier, const DeltaRuleInput& in, float* state, ScratchBuffer& scratch,
                        const int64_t* cuts, int n_cuts, float* cut_states) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni) && in.d > 0 && in.d % 16 == 0) {
    float* ws = static_cast<float*>(scratch.get(avx512::delta_rule_chunked_workspace_floats(in.d) * sizeof(float)));
    return avx512::delta_rule_chunked(in, state, ws, cuts, n_cuts, cut_states);
  }
#endif
  delta_rule_chunked_ref(in, state, scratch, cuts, n_cuts, cut_states);
}

}  // namespace tandem::kernels
