#include "kernels/ssm_scan/ssm_scan.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/elementwise/activations.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/norms/norms.h"
#include "kernels/ssm_scan/ssm_scan_avx2.h"
#include "kernels/ssm_scan/ssm_scan_avx512.h"
#include "runtime/scratch.h"

namespace tandem::kernels {

void ssm_scan_ref(const SsmScanInput& in, float* state) {
  const int P = in.P, ds = in.ds;
  const int heads_per_group = in.H / in.ng;
  for (int h = in.h_begin; h < in.head_end(); ++h) {
    const int g = h / heads_per_group;
    float* Sh = state + static_cast<int64_t>(h) * P * ds;
    for (int64_t t = 0; t < in.T; ++t) {
      const float dt = softplus(in.dt[t * in.lddt + h] + in.dt_bias[h]);
      const float dA = std::exp(dt * in.A[h]);
      const float* B = in.B + t * in.ldbc + static_cast<int64_t>(g) * ds;
      const float* C = in.C + t * in.ldbc + static_cast<int64_t>(g) * ds;
      const float* x = in.x + t * in.ldx + static_cast<int64_t>(h) * P;
      float* y = in.y + t * in.ldy + static_cast<int64_t>(h) * P;
      for (int p = 0; p < P; ++p) {
        const float x_dt = x[p] * dt;
        float* s = Sh + static_cast<int64_t>(p) * ds;
        float sum = 0.0f;
        for (int n = 0; n < ds; ++n) {
          const float v = s[n] * dA + B[n] * x_dt;
          sum += v * C[n];
          s[n] = v;
        }
        y[p] = sum + x[p] * in.D[h];
      }
    }
  }
}

// Spec B5.4 per head and chunk, in double: with a_τ = Δ_τ·A and cs_t = Σ_{τ≤t} a_τ,
//   y_t[p] = Σ_{τ≤t} e^{cs_t − cs_τ} (C_t·B_τ) Δ_τ x_τ[p] + e^{cs_t} Σ_n S₀[p][n] C_t[n]   (+ D x_t[p])
//   S[p][n] = e^{cs_L} S₀[p][n] + Σ_τ e^{cs_L − cs_τ} Δ_τ x_τ[p] B_τ[n].
void ssm_scan_chunked_ref(const SsmScanInput& in, float* state, int chunk) {
  const int P = in.P, ds = in.ds;
  const int heads_per_group = in.H / in.ng;
  if (chunk < 1) chunk = 1;
  thread_local std::vector<double> buf;
  const size_t L = static_cast<size_t>(chunk);
  buf.resize(std::max(buf.size(), 3 * L + L * L + static_cast<size_t>(P) * ds));
  double* dt = buf.data();   // L
  double* cs = dt + L;       // L
  double* ecs = cs + L;      // L
  double* CB = ecs + L;      // L x L: C_t · B_τ
  double* S0 = CB + L * L;   // P x ds
  for (int h = in.h_begin; h < in.head_end(); ++h) {
    const int g = h / heads_per_group;
    float* Sh = state + static_cast<int64_t>(h) * P * ds;
    auto X = [&](int64_t t, int p) { return static_cast<double>(in.x[t * in.ldx + static_cast<int64_t>(h) * P + p]); };
    auto Bv = [&](int64_t t) { return in.B + t * in.ldbc + static_cast<int64_t>(g) * ds; };
    auto Cv = [&](int64_t t) { return in.C + t * in.ldbc + static_cast<int64_t>(g) * ds; };
    for (int64_t t0 = 0; t0 < in.T; t0 += chunk) {
      const int n = static_cast<int>(std::min<int64_t>(chunk, in.T - t0));
      double acc = 0.0;
      for (int r = 0; r < n; ++r) {
        dt[r] = softplus(in.dt[(t0 + r) * in.lddt + h] + in.dt_bias[h]);
        acc += dt[r] * in.A[h];
        cs[r] = acc;
        ecs[r] = std::exp(acc);
      }
      for (int r = 0; r < n; ++r)
        for (int c = 0; c <= r; ++c) {
          const float* Cr = Cv(t0 + r);
          const float* Bc = Bv(t0 + c);
          double s = 0.0;
          for (int k = 0; k < ds; ++k) s += static_cast<double>(Cr[k]) * Bc[k];
          CB[r * L + c] = s * std::exp(cs[r] - cs[c]) * dt[c];
        }
      for (int64_t i = 0; i < static_cast<int64_t>(P) * ds; ++i) S0[i] = Sh[i];
      for (int r = 0; r < n; ++r) {
        const float* Cr = Cv(t0 + r);
        float* y = in.y + (t0 + r) * in.ldy + static_cast<int64_t>(h) * P;
        for (int p = 0; p < P; ++p) {
          double inter = 0.0;
          for (int k = 0; k < ds; ++k) inter += S0[static_cast<int64_t>(p) * ds + k] * Cr[k];
          double s = ecs[r] * inter;
          for (int c = 0; c <= r; ++c) s += CB[r * L + c] * X(t0 + c, p);
          y[p] = static_cast<float>(s + X(t0 + r, p) * in.D[h]);
        }
      }
      const double elast = ecs[n - 1];
      for (int c = 0; c < n; ++c) dt[c] *= std::exp(cs[n - 1] - cs[c]);  // dt now the state weight of token c
      for (int p = 0; p < P; ++p)
        for (int k = 0; k < ds; ++k) {
          double s = elast * S0[static_cast<int64_t>(p) * ds + k];
          for (int c = 0; c < n; ++c) s += dt[c] * X(t0 + c, p) * Bv(t0 + c)[k];
          Sh[static_cast<int64_t>(p) * ds + k] = static_cast<float>(s);
        }
    }
  }
}

namespace {

// Grow-only per-thread workspace of the fast bodies (no allocation once grown).
float* workspace(size_t floats) {
  thread_local ScratchBuffer ws;
  return static_cast<float*>(ws.get(std::max<size_t>(floats, 16) * sizeof(float)));
}

}  // namespace

void ssm_scan(CpuTier tier, const SsmScanInput& in, float* state) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni) && in.ds > 0 && in.ds % 16 == 0)
    return avx512::ssm_scan(in, state, workspace(2 * static_cast<size_t>(in.T)));
  if (tier_has(tier, CpuTier::Avx2) && in.ds > 0 && in.ds % 8 == 0)
    return avx2::ssm_scan(in, state, workspace(2 * static_cast<size_t>(in.T)));
#endif
  ssm_scan_ref(in, state);
}

void ssm_scan_chunked(CpuTier tier, const SsmScanInput& in, float* state, int chunk) {
  // A batch shorter than the chunk is one chunk of T: the same arithmetic, matrices padded to T
  // (rounded up to 16) instead of to the chunk.
  if (in.T < chunk) chunk = static_cast<int>(in.T);
  if (chunk < 1) chunk = 1;
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni) && in.ds > 0 && in.ds % 16 == 0)
    return avx512::ssm_scan_chunked(in, state, chunk,
                                    workspace(avx512::ssm_scan_chunked_workspace_floats(in, chunk)));
#endif
  ssm_scan_chunked_ref(in, state, chunk);
}

// Why from 8 tokens on AVX-512 only: bench/ssm_scan_bench.cpp at the Granite-4.0-H-Micro layer
// shape puts the chunked form ahead of the per-token scan from 8 tokens per call, about twice as
// fast at 512 (figures: bench/RESULTS.md, "Other hybrids"). AVX2 has no chunked body (the chunked
// form there is the float64 reference, slower than its per-token scan at every length); nor does
// a ds that is not a multiple of 16.
bool ssm_scan_prefers_chunked(CpuTier tier, const SsmScanInput& in) {
  return tier_has(tier, CpuTier::Avx512Vnni) && in.ds > 0 && in.ds % 16 == 0 && in.T >= 8;
}

void gated_group_rms_norm(CpuTier tier, const float* y, int64_t ldy, const float* z, int64_t ldz, int64_t T,
                          int64_t d, int ng, const float* w, float eps, float* out, int64_t ldo) {
  const int64_t G = d / ng;
  for (int64_t t = 0; t < T; ++t) {
    float* o = out + t * ldo;
    silu_mul(tier, z + t * ldz, y + t * ldy, o, d);
    for (int g = 0; g < ng; ++g) rms_norm(tier, o + g * G, w + g * G, o + g * G, G, eps);
  }
}

void gated_group_rms_norm_ref(const float* y, int64_t ldy, const float* z, int64_t ldz, int64_t T, int64_t d, int ng,
                              const float* w, float eps, float* out, int64_t ldo) {
  const int64_t G = d / ng;
  for (int64_t t = 0; t < T; ++t) {
    float* o = out + t * ldo;
    for (int64_t i = 0; i < d; ++i) o[i] = silu(z[t * ldz + i]) * y[t * ldy + i];
    for (int g = 0; g < ng; ++g) rms_norm(CpuTier::Scalar, o + g * G, w + g * G, o + g * G, G, eps);
  }
}

}  // namespace tandem::kernels
