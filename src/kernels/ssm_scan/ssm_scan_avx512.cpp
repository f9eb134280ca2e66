// AVX-512 bodies of the Mamba2 scan (per token and chunked). Compiled with the AVX-512 flags
// (CMakeLists.txt) and called only after run-time dispatch (ssm_scan.cpp). Like
// delta_rule_avx512.cpp: plain loops, intrinsics and C math calls on scalars, everything but the
// header's functions with internal linkage, so that no function compiled for AVX-512 can be picked
// by the linker for another translation unit.
#include "kernels/ssm_scan/ssm_scan_avx512.h"

#include <immintrin.h>
#include <math.h>

#include "kernels/gemm_f32/gemm_tiles_avx512.h"
#include "kernels/simd/simd_avx512.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tandem::kernels::avx512 {
namespace {

inline float softplus_f(float u) { return u > 20.0f ? u : logf(1.0f + expf(u)); }  // as ggml

// The value of v, opaque to the optimiser: keeps a product from being fused into a following add
// (the build contracts a*b + c into an FMA), so that the state update rounds as the reference's
// mul, mul, add and the state has the reference's bits.
inline __m512 opaque(__m512 v) {
  asm("" : "+v"(v));
  return v;
}

// ---------------------------------------------------------------------------------------------
// Per-token scan: one head, state rows of ds = 16·NV kept in registers over a block of tokens.
template <int NV>
void scan_head_rows(const SsmScanInput& in, int h, const float* dts, const float* dAs, float* Sh) {
  constexpr int ds = 16 * NV;
  constexpr int64_t kTokBlock = 16;  // B and C rows of a block stay in L1 across the head's rows
  const int P = in.P;
  const int g = h / (in.H / in.ng);
  const float Dh = in.D[h];
  const float* xh = in.x + static_cast<int64_t>(h) * P;
  const float* Bg = in.B + static_cast<int64_t>(g) * ds;
  const float* Cg = in.C + static_cast<int64_t>(g) * ds;
  float* yh = in.y + static_cast<int64_t>(h) * P;
  for (int64_t t0 = 0; t0 < in.T; t0 += kTokBlock) {
    const int64_t t1 = in.T - t0 < kTokBlock ? in.T : t0 + kTokBlock;
    for (int p = 0; p < P; ++p) {
      float* srow = Sh + static_cast<int64_t>(p) * ds;
      __m512 s[NV];
#pragma GCC unroll 16
      for (int k = 0; k < NV; ++k) s[k] = _mm512_loadu_ps(srow + 16 * k);
      for (int64_t t = t0; t < t1; ++t) {
        const float xv = xh[t * in.ldx + p];
        const __m512 vdA = _mm512_set1_ps(dAs[t]);
        const __m512 vxdt = _mm512_set1_ps(xv * dts[t]);
        const float* Bt = Bg + t * in.ldbc;
        const float* Ct = Cg + t * in.ldbc;
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
#pragma GCC unroll 16
        for (int k = 0; k < NV; ++k) {
          s[k] = _mm512_add_ps(opaque(_mm512_mul_ps(s[k], vdA)),
                               opaque(_mm512_mul_ps(_mm512_loadu_ps(Bt + 16 * k), vxdt)));
          if (k % 2 == 0)
            acc0 = _mm512_fmadd_ps(s[k], _mm512_loadu_ps(Ct + 16 * k), acc0);
          else
            acc1 = _mm512_fmadd_ps(s[k], _mm512_loadu_ps(Ct + 16 * k), acc1);
        }
        yh[t * in.ldy + p] = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + xv * Dh;
      }
#pragma GCC unroll 16
      for (int k = 0; k < NV; ++k) _mm512_storeu_ps(srow + 16 * k, s[k]);
    }
  }
}

// Any ds a multiple of 16: the rows streamed through memory (L1: one head's state).
void scan_head_stream(const SsmScanInput& in, int h, const float* dts, const float* dAs, float* Sh) {
  const int P = in.P, ds = in.ds;
  const int g = h / (in.H / in.ng);
  const float Dh = in.D[h];
  for (int64_t t = 0; t < in.T; ++t) {
    const float* Bt = in.B + t * in.ldbc + static_cast<int64_t>(g) * ds;
    const float* Ct = in.C + t * in.ldbc + static_cast<int64_t>(g) * ds;
    const float* x = in.x + t * in.ldx + static_cast<int64_t>(h) * P;
    float* y = in.y + t * in.ldy + static_cast<int64_t>(h) * P;
    const __m512 vdA = _mm512_set1_ps(dAs[t]);
    for (int p = 0; p < P; ++p) {
      float* srow = Sh + static_cast<int64_t>(p) * ds;
      const __m512 vxdt = _mm512_set1_ps(x[p] * dts[t]);
      __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
      for (int k = 0; k < ds / 16; ++k) {
        const __m512 v = _mm512_add_ps(opaque(_mm512_mul_ps(_mm512_loadu_ps(srow + 16 * k), vdA)),
                                       opaque(_mm512_mul_ps(_mm512_loadu_ps(Bt + 16 * k), vxdt)));
        _mm512_storeu_ps(srow + 16 * k, v);
        if (k % 2 == 0)
          acc0 = _mm512_fmadd_ps(v, _mm512_loadu_ps(Ct + 16 * k), acc0);
        else
          acc1 = _mm512_fmadd_ps(v, _mm512_loadu_ps(Ct + 16 * k), acc1);
      }
      y[p] = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + x[p] * Dh;
    }
  }
}

// Δ and dA of head h for every token of the call.
void head_decays(const SsmScanInput& in, int h, int64_t t0, int64_t n, float* dts, float* dAs) {
  for (int64_t t = 0; t < n; ++t) {
    dts[t] = softplus_f(in.dt[(t0 + t) * in.lddt + h] + in.dt_bias[h]);
    if (dAs) dAs[t] = expf(dts[t] * in.A[h]);
  }
}

// C[M x N] = cscale·C (or 0) + A[M x K] · B[K x N], N a multiple of 16 (gemm_tiles_avx512.h).
void gemm(int M, int N, int K, const float* A, int64_t lda, const float* B, int64_t ldb, float* Cm, int64_t ldc,
          bool load_c, float cscale) {
  gemm({.M = M, .N = N, .k0 = K, .A = A, .lda = lda, .B = B, .ldb = ldb, .Cm = Cm, .ldc = ldc, .load_c = load_c,
        .cscale = cscale});
}

struct ChunkWs {
  float *CT, *GT, *MT, *XDT, *XDW, *YT, *dt;
  double* cs;
};

ChunkWs carve(float* ws, int P, int ds, int Lp) {
  ChunkWs w;
  w.CT = ws;                                      // ds x Lp: Cᵀ of the chunk (group)
  w.GT = w.CT + static_cast<int64_t>(ds) * Lp;    // Lp x Lp: Gᵀ[τ][t] = B_τ · C_t (group)
  w.MT = w.GT + static_cast<int64_t>(Lp) * Lp;    // Lp x Lp: Gᵀ masked and decayed (head)
  w.XDT = w.MT + static_cast<int64_t>(Lp) * Lp;   // P x Lp: Δ_τ x_τ[p]
  w.XDW = w.XDT + static_cast<int64_t>(P) * Lp;   // P x Lp: the same decayed to the chunk's end
  w.YT = w.XDW + static_cast<int64_t>(P) * Lp;    // P x Lp: yᵀ
  w.dt = w.YT + static_cast<int64_t>(P) * Lp;     // Lp
  const int64_t cs_at = (w.dt + Lp - ws + 15) / 16 * 16;  // 64-byte aligned (ws is)
  w.cs = reinterpret_cast<double*>(ws + cs_at);   // Lp doubles
  return w;
}

// One head, one chunk of n tokens from t0, given the group's CT and GT.
void chunk_head(const SsmScanInput& in, int h, int64_t t0, int n, int Lp, const ChunkWs& w, float* Sh) {
  const int P = in.P, ds = in.ds;
  const int g = h / (in.H / in.ng);
  const float A = in.A[h];
  double acc = 0.0;
  for (int t = 0; t < n; ++t) {
    w.dt[t] = softplus_f(in.dt[(t0 + t) * in.lddt + h] + in.dt_bias[h]);
    acc += static_cast<double>(w.dt[t] * A);
    w.cs[t] = acc;
  }
  for (int t = n; t < Lp; ++t) {
    w.dt[t] = 0.0f;
    w.cs[t] = acc;
  }
  // MT[τ][t] = GT[τ][t] e^{cs_t − cs_τ} for τ <= t < n, else 0. The difference in double.
  for (int tau = 0; tau < n; ++tau) {
    const __m512d ct = _mm512_set1_pd(w.cs[tau]);
    float* mrow = w.MT + static_cast<int64_t>(tau) * Lp;
    const float* grow = w.GT + static_cast<int64_t>(tau) * Lp;
    for (int j = 0; j < Lp; j += 16) {
      if (j + 16 <= tau) {
        _mm512_storeu_ps(mrow + j, _mm512_setzero_ps());
        continue;
      }
      const __m256 lo = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_loadu_pd(w.cs + j), ct));
      const __m256 hi = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_loadu_pd(w.cs + j + 8), ct));
      const __m512 diff = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
      const __m512i lane = _mm512_add_epi32(_mm512_set1_epi32(j),
                                            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
      const __mmask16 m = _mm512_cmpge_epi32_mask(lane, _mm512_set1_epi32(tau)) &
                          _mm512_cmplt_epi32_mask(lane, _mm512_set1_epi32(n));
      _mm512_storeu_ps(mrow + j, _mm512_maskz_mul_ps(m, _mm512_loadu_ps(grow + j), exp_ps(diff)));
    }
  }
  // XDT[p][τ] = Δ_τ x_τ[p]; XDW = XDT e^{cs_last − cs_τ}.
  const double cs_last = w.cs[n - 1];
  float ew[256];
  for (int base = 0; base < n; base += 256) {
    const int m = imin(256, n - base);
    for (int t = 0; t < m; ++t) ew[t] = static_cast<float>(exp(cs_last - w.cs[base + t]));
    for (int p = 0; p < P; ++p) {
      float* xd = w.XDT + static_cast<int64_t>(p) * Lp + base;
      float* xw = w.XDW + static_cast<int64_t>(p) * Lp + base;
      const float* xs = in.x + (t0 + base) * in.ldx + static_cast<int64_t>(h) * P + p;
      for (int t = 0; t < m; ++t) {
        xd[t] = xs[t * in.ldx] * w.dt[base + t];
        xw[t] = xd[t] * ew[t];
      }
    }
  }
  // yᵀ = (S₀ Cᵀ) diag(e^{cs}) + XDT · MT.
  gemm(P, Lp, ds, Sh, ds, w.CT, Lp, w.YT, Lp, false, 1.0f);
  for (int base = 0; base < Lp; base += 256) {
    const int m = imin(256, Lp - base);
    for (int t = 0; t < m; ++t) ew[t] = base + t < n ? static_cast<float>(exp(w.cs[base + t])) : 0.0f;
    for (int p = 0; p < P; ++p) {
      float* yr = w.YT + static_cast<int64_t>(p) * Lp + base;
      for (int t = 0; t < m; t += 16) _mm512_storeu_ps(yr + t, _mm512_mul_ps(_mm512_loadu_ps(yr + t), _mm512_loadu_ps(ew + t)));
    }
  }
  gemm(P, Lp, n, w.XDT, Lp, w.MT, Lp, w.YT, Lp, true, 1.0f);
  const float Dh = in.D[h];
  for (int t = 0; t < n; ++t) {
    const float* x = in.x + (t0 + t) * in.ldx + static_cast<int64_t>(h) * P;
    float* y = in.y + (t0 + t) * in.ldy + static_cast<int64_t>(h) * P;
    for (int p = 0; p < P; ++p) y[p] = w.YT[static_cast<int64_t>(p) * Lp + t] + x[p] * Dh;
  }
  // S = e^{cs_last} S₀ + XDW · B.
  gemm(P, ds, n, w.XDW, Lp, in.B + t0 * in.ldbc + static_cast<int64_t>(g) * ds, in.ldbc, Sh, ds, true,
       static_cast<float>(exp(cs_last)));
}

}  // namespace

void ssm_scan(const SsmScanInput& in, float* state, float* ws) {
  FlushDenormals ftz;
  float* dts = ws;
  float* dAs = ws + in.T;
  const int64_t hf = static_cast<int64_t>(in.P) * in.ds;
  for (int h = in.h_begin; h < in.head_end(); ++h) {
    head_decays(in, h, 0, in.T, dts, dAs);
    float* Sh = state + h * hf;
    switch (in.ds) {
      case 64: scan_head_rows<4>(in, h, dts, dAs, Sh); break;
      case 128: scan_head_rows<8>(in, h, dts, dAs, Sh); break;
      default: scan_head_stream(in, h, dts, dAs, Sh); break;
    }
  }
}

size_t ssm_scan_chunked_workspace_floats(const SsmScanInput& in, int chunk) {
  const size_t Lp = static_cast<size_t>(round16(chunk));
  return static_cast<size_t>(in.ds) * Lp + 2 * Lp * Lp + 3 * static_cast<size_t>(in.P) * Lp + Lp + 16 + 2 * Lp;
}

void ssm_scan_chunked(const SsmScanInput& in, float* state, int chunk, float* ws) {
  FlushDenormals ftz;
  const int P = in.P, ds = in.ds;
  const int Lp = round16(chunk);
  const ChunkWs w = carve(ws, P, ds, Lp);
  const int hpg = in.H / in.ng;
  const int64_t hf = static_cast<int64_t>(P) * ds;
  const int hb = in.h_begin, he = in.head_end();
  if (hb >= he) return;
  for (int64_t t0 = 0; t0 < in.T; t0 += chunk) {
    const int n = static_cast<int>(in.T - t0 < chunk ? in.T - t0 : chunk);
    for (int g = hb / hpg; g <= (he - 1) / hpg; ++g) {
      // Cᵀ (zero past n) and Gᵀ = B Cᵀ of the group, shared by its heads.
      const float* Cc = in.C + t0 * in.ldbc + static_cast<int64_t>(g) * ds;
      for (int k = 0; k < ds; ++k) {
        float* row = w.CT + static_cast<int64_t>(k) * Lp;
        for (int t = 0; t < n; ++t) row[t] = Cc[t * in.ldbc + k];
        for (int t = n; t < Lp; ++t) row[t] = 0.0f;
      }
      gemm(n, Lp, ds, in.B + t0 * in.ldbc + static_cast<int64_t>(g) * ds, in.ldbc, w.CT, Lp, w.GT, Lp, false, 1.0f);
      const int h0 = g * hpg > hb ? g * hpg : hb;
      const int h1 = (g + 1) * hpg < he ? (g + 1) * hpg : he;
      for (int h = h0; h < h1; ++h) chunk_head(in, h, t0, n, Lp, w, state + h * hf);
    }
  }
}

}  // namespace tandem::kernels::avx512
