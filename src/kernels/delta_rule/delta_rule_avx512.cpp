// AVX-512 gated delta rule, float32, vectorised over the head dimension d (a multiple
// of 16). Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma (see
// CMakeLists.txt) and called only after run-time dispatch (delta_rule.cpp).
//
// Kept free of standard-library templates and inline library code: everything
// here is plain loops, intrinsics and C math calls on scalars, so that no function
// compiled for AVX-512 can be picked by the linker for another translation unit.
//
// Chunked algorithm (spec §6.3), per value head, chunk of n <= 64 tokens, organised
// as small register-blocked GEMMs (gemm() below, 6 rows x 64 columns):
//   KK = K Kᵀ, QK = Q Kᵀ                                  n x n x d
//   A  = β_r KK e^{G_r-G_c} (c < r), T = (I + A)^-1        forward substitution, double
//   U  = T diag(β) V,  W' = -T diag(β e^G) K               n x n x d (T lower triangular)
//   v_new = U + W' S                                       n x d x d
//   o  = [e^G scale Q | scale QK e^{G_r-G_c} (c <= r)] [S ; v_new]
//   S <- e^{G_last} S + (diag(e^{G_last-G}) K)ᵀ v_new       d x d x n
// The working state is kept as S[i][j] (row i = key index) for the whole call: the
// transpose of the stored layout, so that every product above streams rows.
#include "kernels/delta_rule/delta_rule_avx512.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include <type_traits>

#include "kernels/delta_rule/delta_rule_loops.h"
#include "kernels/gemm_f32/gemm_tiles_avx512.h"
#include "kernels/simd/simd_avx512.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own
// intrinsics (_mm512_reduce_add_ps, _mm512_cvtpd_ps, ...).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tandem::kernels::avx512 {
namespace {

constexpr int C = kDeltaRuleChunk;

// dst[c*ldd + r] = src[r*lds + c] for r < 16, c < 16; rows >= `rows` read as zeros.
inline void transpose16(const float* src, int64_t lds, int rows, float* dst, int64_t ldd) {
  __m512 r[16], t[16], u[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_loadu_ps(src + i * lds) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // per 128-bit lane: [a0 b0 a1 b1], [a2 b2 a3 b3]
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {  // u[4g+e], lane L: rows 4g..4g+3 of element 4L+e
    const __m512d t0 = _mm512_castps_pd(t[4 * g]), t1 = _mm512_castps_pd(t[4 * g + 1]);
    const __m512d t2 = _mm512_castps_pd(t[4 * g + 2]), t3 = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
#pragma GCC unroll 4
  for (int e = 0; e < 4; ++e) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x88), v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xDD);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x88);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xDD);
    _mm512_storeu_ps(dst + e * ldd, _mm512_shuffle_f32x4(v0, v2, 0x88));
    _mm512_storeu_ps(dst + (e + 8) * ldd, _mm512_shuffle_f32x4(v0, v2, 0xDD));
    _mm512_storeu_ps(dst + (e + 4) * ldd, _mm512_shuffle_f32x4(v1, v3, 0x88));
    _mm512_storeu_ps(dst + (e + 12) * ldd, _mm512_shuffle_f32x4(v1, v3, 0xDD));
  }
}

// dst[c*ldd + r] = src[r*lds + c] for c < cols (a multiple of 16) and r < round16(rows);
// rows >= `rows` read as zeros.
void transpose(const float* src, int64_t lds, float* dst, int64_t ldd, int rows, int cols) {
  for (int r0 = 0; r0 < rows; r0 += 16)
    for (int c0 = 0; c0 < cols; c0 += 16) transpose16(src + r0 * lds + c0, lds, rows - r0, dst + c0 * ldd + r0, ldd);
}

// ---------------------------------------------------------------------------
// Chunked algorithm.

struct Work {
  float* S;   // d x d   working state S[i][j], followed contiguously by
  float* Vn;  // C x d   v_new (holds U first)
  float* Kt;  // d x C   the chunk's keys transposed; later scaled by e^{G_last - G_c}
  float* KK;  // C x C
  float* QK;  // C x C
  float* Tu;  // C x C   T diag(β)
  float* Tw;  // C x C   -T diag(β e^G)
  float* Wn;  // C x d   -W
  float* AQ;  // C x (d + C)  [e^{G_r} scale q_r | scale (q_r·k_c) e^{G_r - G_c}, c <= r, else 0]
  double* A;  // C x C   β_r (k_r·k_c) e^{G_r - G_c}, c < r, else 0
  double* T;  // C x C   (I + A)^-1, zero above the diagonal
};

size_t work_floats(int d) {
  const size_t D = static_cast<size_t>(d);
  return D * D + C * D + D * C + 4 * C * C + C * D + C * (D + C) + 2 * (2 * C * C);
}

Work carve(float* base, int d) {
  Work w;
  w.S = base;
  w.Vn = w.S + static_cast<int64_t>(d) * d;
  w.Kt = w.Vn + C * d;
  w.KK = w.Kt + d * C;
  w.QK = w.KK + C * C;
  w.Tu = w.QK + C * C;
  w.Tw = w.Tu + C * C;
  w.Wn = w.Tw + C * C;
  w.AQ = w.Wn + C * d;
  w.A = reinterpret_cast<double*>(w.AQ + C * (d + C));
  w.T = w.A + C * C;
  return w;
}

// Lanes l of a 16-lane block starting at column c0 with c0 + l < lim.
inline __mmask16 lanes_below(int lim, int c0) {
  const int n = lim - c0;
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1u);
}

void chunk_head(const DeltaRuleInput& in, int h, int64_t t0, int n, Work& w) {
  const int d = in.d;
  const int kh = h % in.H_k;
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  const float* K0 = in.k + t0 * in.ldqk + kh * d;
  const float* Q0 = in.q + t0 * in.ldqk + kh * d;
  const float* V0 = in.v + t0 * in.ldv + h * d;
  float* O0 = in.out + t0 * in.ldo + h * d;

  // 1. Prefix sums of the log-decays (double: their differences matter), β, e^G.
  alignas(64) double G[C];
  alignas(64) double bd[C];   // β_c
  alignas(64) double bgd[C];  // -β_c e^{G_c}
  alignas(64) float eg[C];
  double acc = 0.0;
  for (int r = 0; r < C; ++r) {
    if (r < n) {
      acc += in.g[(t0 + r) * in.H_v + h];
      G[r] = acc;
      bd[r] = in.beta[(t0 + r) * in.H_v + h];
      const double e = exp(acc);
      eg[r] = static_cast<float>(e);
      bgd[r] = -bd[r] * e;
    } else {
      G[r] = acc;
      bd[r] = bgd[r] = 0.0;
      eg[r] = 0.0f;
    }
  }

  // 2. Keys transposed (zero columns up to a multiple of 16), Gram matrices.
  const int n16 = round16(n);
  transpose(K0, in.ldqk, w.Kt, C, n, d);  // zero columns [n, n16)
  Gemm gk{.M = n, .N = n16, .k0 = d, .col_tri = true, .A = K0, .lda = in.ldqk, .B = w.Kt, .ldb = C, .Cm = w.KK,
          .ldc = C};
  gemm(gk);
  gk.A = Q0;
  gk.Cm = w.QK;
  gemm(gk);

  // 3. Decay-weighted A (double), masked and scaled QK and e^G-scaled q (AQ).
  const int64_t ldaq = d + C;
  for (int r = 0; r < n; ++r) {
    float* aq = w.AQ + r * ldaq;
    const float* q = Q0 + r * in.ldqk;
    const __m512 qsc = _mm512_set1_ps(eg[r] * scale);
    for (int i = 0; i < d; i += 16) _mm512_storeu_ps(aq + i, _mm512_mul_ps(_mm512_loadu_ps(q + i), qsc));
    float* qkm = aq + d;
    double* Ar = w.A + r * C;
    const __m512d gr = _mm512_set1_pd(G[r]);
    const __m512 br = _mm512_set1_ps(static_cast<float>(bd[r]));
    for (int c0 = 0; c0 < C; c0 += 16) {
      if (c0 > r) {
        _mm512_storeu_ps(qkm + c0, _mm512_setzero_ps());
        _mm512_storeu_pd(Ar + c0, _mm512_setzero_pd());
        _mm512_storeu_pd(Ar + c0 + 8, _mm512_setzero_pd());
        continue;
      }
      const __m256 dlo = _mm512_cvtpd_ps(_mm512_sub_pd(gr, _mm512_loadu_pd(G + c0)));
      const __m256 dhi = _mm512_cvtpd_ps(_mm512_sub_pd(gr, _mm512_loadu_pd(G + c0 + 8)));
      const __m512 e = exp_ps(_mm512_insertf32x8(_mm512_castps256_ps512(dlo), dhi, 1));
      const __mmask16 le = lanes_below(r + 1, c0), lt = lanes_below(r, c0);
      const __m512 qk = _mm512_mul_ps(_mm512_loadu_ps(w.QK + r * C + c0), _mm512_set1_ps(scale));
      _mm512_storeu_ps(qkm + c0, _mm512_maskz_mul_ps(le, qk, e));
      const __m512 a = _mm512_maskz_mul_ps(lt, _mm512_mul_ps(_mm512_loadu_ps(w.KK + r * C + c0), br), e);
      _mm512_storeu_pd(Ar + c0, _mm512_cvtps_pd(_mm512_castps512_ps256(a)));
      _mm512_storeu_pd(Ar + c0 + 8, _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1)));
    }
  }

  // 4. T = (I + A)^-1 by forward substitution, row r = e_r - Σ_{m<r} A[r][m] T[m]:
  //    column block by column block (T[m][c] = 0 for c > m).
  for (int r = 0; r < n; ++r) {
    double* Tr = w.T + r * C;
    const double* Ar = w.A + r * C;
    for (int c0 = 0; c0 < C; c0 += 8) {
      if (c0 >= r) {
        _mm512_storeu_pd(Tr + c0, _mm512_setzero_pd());
        continue;
      }
      __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
      int m = c0;
      for (; m + 1 < r; m += 2) {
        s0 = _mm512_fmadd_pd(_mm512_set1_pd(Ar[m]), _mm512_loadu_pd(w.T + m * C + c0), s0);
        s1 = _mm512_fmadd_pd(_mm512_set1_pd(Ar[m + 1]), _mm512_loadu_pd(w.T + (m + 1) * C + c0), s1);
      }
      if (m < r) s0 = _mm512_fmadd_pd(_mm512_set1_pd(Ar[m]), _mm512_loadu_pd(w.T + m * C + c0), s0);
      // Lanes c >= r stay zero: every T[m][c] read has m < r.
      _mm512_storeu_pd(Tr + c0, _mm512_sub_pd(_mm512_setzero_pd(), _mm512_add_pd(s0, s1)));
    }
    Tr[r] = 1.0;
  }
  // Tu = T diag(β), Tw = -T diag(β e^G), float; zero above the diagonal.
  for (int r = 0; r < n; ++r)
    for (int c0 = 0; c0 < C; c0 += 8) {
      const __m512d t = _mm512_loadu_pd(w.T + r * C + c0);
      _mm256_storeu_ps(w.Tu + r * C + c0, _mm512_cvtpd_ps(_mm512_mul_pd(t, _mm512_loadu_pd(bd + c0))));
      _mm256_storeu_ps(w.Tw + r * C + c0, _mm512_cvtpd_ps(_mm512_mul_pd(t, _mm512_loadu_pd(bgd + c0))));
    }

  // 5. U = Tu V (into Vn), W' = Tw K.
  Gemm gt{.M = n, .N = d, .k0 = 0, .k_tri = true, .A = w.Tu, .lda = C, .B = V0, .ldb = in.ldv, .Cm = w.Vn, .ldc = d};
  gemm(gt);
  gt.A = w.Tw;
  gt.B = K0;
  gt.ldb = in.ldqk;
  gt.Cm = w.Wn;
  gemm(gt);

  // 6. v_new = U + W' S.
  gemm({.M = n, .N = d, .k0 = d, .A = w.Wn, .lda = d, .B = w.S, .ldb = d, .Cm = w.Vn, .ldc = d, .load_c = true});

  // 7. o = [e^G scale Q | QKm] [S ; v_new]  (v_new lies right after S).
  gemm({.M = n, .N = d, .k0 = d, .k_tri = true, .A = w.AQ, .lda = ldaq, .B = w.S, .ldb = d, .Cm = O0, .ldc = in.ldo});

  // 8. S <- e^{G_last} S + Σ_c e^{G_last - G_c} k_c v_new_cᵀ.
  const double glast = G[n - 1];
  alignas(64) float wd[C];
  for (int c = 0; c < C; ++c) wd[c] = c < n ? static_cast<float>(exp(glast - G[c])) : 0.0f;
  for (int i = 0; i < d; ++i)
    for (int c0 = 0; c0 < n16; c0 += 16) {
      float* p = w.Kt + i * C + c0;
      _mm512_storeu_ps(p, _mm512_mul_ps(_mm512_loadu_ps(p), _mm512_load_ps(wd + c0)));
    }
  gemm({.M = d, .N = d, .k0 = n, .A = w.Kt, .lda = C, .B = w.Vn, .ldb = d, .Cm = w.S, .ldc = d, .load_c = true,
        .cscale = static_cast<float>(exp(glast))});
}

// ---------------------------------------------------------------------------
// Per-token recurrence. Row j of a head's state (over the key index) only ever meets k, q,
// v[j], the decay and beta: rows are independent. So each row is loaded once, carried
// through a block of tokens in a small L1 buffer (outputs and snapshot rows written on the
// way) and stored once: the state crosses the cache hierarchy once per block instead of once
// per token. Per element the operations do not depend on the block length, T or a row's
// place in its block, so the results are the same bits whatever the batch (a decode step and
// a verification pass agree exactly).

constexpr int kRowTokens = 64;  // tokens per block: their decays and betas sit on the stack
constexpr int kBlockRows = 8;   // state rows carried through a block of tokens together

// The two sweeps of recurrent_head over 8 state rows. They are templates on where they store,
// so that their loops carry no runtime test per store (tandem_bench_delta_rule Recurrent_steps,
// 4B layer, binaries alternating: a decode step 75-113 -> 64-75 us, a 1+3 pass 268-378 ->
// 257-312 us; the same bits).

// Sweep 1 for the 8 rows at xs (d = 16·NV floats apart): acc[r] = x_r · k, each the same
// multiply and FMA chain. With kPrefetch the next 8 rows are asked for too.
template <int NV, bool kPrefetch>
__attribute__((always_inline)) inline void dot_rows(const float* xs, const __m512* k, __m512* acc) {
  constexpr int d = 16 * NV;
#pragma GCC unroll 8
  for (int r = 0; r < kBlockRows; ++r) {
    if constexpr (kPrefetch) {
#pragma GCC unroll 8
      for (int u = 0; u < NV; ++u)
        _mm_prefetch(reinterpret_cast<const char*>(xs + (kBlockRows + r) * d + 16 * u), _MM_HINT_T0);
    }
    __m512 a = _mm512_mul_ps(_mm512_loadu_ps(xs + r * d), k[0]);
#pragma GCC unroll 8
    for (int u = 1; u < NV; ++u) a = _mm512_fmadd_ps(_mm512_loadu_ps(xs + r * d + 16 * u), k[u], a);
    acc[r] = a;
  }
}

// Where sweep 2 also writes the rows: nowhere, or a rollback snapshot, streamed when it is
// cache-line aligned (it is read again only if a draft is rejected).
enum class Snap { None, Store, Stream };

// Sweep 2: x_r ← decay · x_r + δ_r k from xs to xd (streaming stores with kStream), also to
// snap (kSnap), and acc[r] = x_r · q.
template <int NV, bool kStream, Snap kSnap>
__attribute__((always_inline)) inline void update_rows(const float* xs, float* xd, float* snap, const __m512* k,
                                                       const __m512* q, __m512 dc, const float* delta,
                                                       __m512* acc) {
  constexpr int d = 16 * NV;
#pragma GCC unroll 8
  for (int r = 0; r < kBlockRows; ++r) {
    const __m512 dl = _mm512_set1_ps(delta[r]);
    __m512 b = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int u = 0; u < NV; ++u) {
      const __m512 x = _mm512_fmadd_ps(k[u], dl, _mm512_mul_ps(_mm512_loadu_ps(xs + r * d + 16 * u), dc));
      if constexpr (kStream) _mm512_stream_ps(xd + r * d + 16 * u, x);
      else _mm512_storeu_ps(xd + r * d + 16 * u, x);
      if constexpr (kSnap == Snap::Stream) _mm512_stream_ps(snap + r * d + 16 * u, x);
      else if constexpr (kSnap == Snap::Store) _mm512_storeu_ps(snap + r * d + 16 * u, x);
      b = u == 0 ? _mm512_mul_ps(x, q[0]) : _mm512_fmadd_ps(x, q[u], b);
    }
    acc[r] = b;
  }
}

// With several tokens per block, the next block's 8 rows are asked for in shares, token i of n
// taking lines [i·L/n, (i+1)·L/n): 64 prefetches at once (the decode step's way, inside
// dot_rows) would wait for the L1 miss buffers while the block's first token computes.
// tandem_bench_delta_rule Recurrent_steps/4 (4B layer, one thread), binaries alternating,
// medians of 3: 233 / 232 / 228 -> 204 / 200 / 211 us; the decode step (/1, its own
// instantiation, unchanged code) 49.1 / 51.1 / 47.6 vs 50.4 / 51.5 / 51.2 us. In the 0.8B 1+3
// pass (perf, 1200 passes, the change behind an environment switch, runs back to back) the
// delta rule's samples fell 8213 -> 7381: below the whole pass's noise.
template <int NV>
__attribute__((always_inline)) inline void prefetch_share(const float* next_rows, int i, int n) {
  constexpr int L = kBlockRows * NV;  // 64-byte lines of a block
  for (int l = i * L / n; l < (i + 1) * L / n; ++l)
    _mm_prefetch(reinterpret_cast<const char*>(next_rows + 16 * l), _MM_HINT_T0);
}

// kOneToken: a call of one token (in.T == 1), the decode step, compiled on its own so that the
// several-token prefetching leaves its code as it was.
template <int NV, bool kOneToken>
void recurrent_head(const DeltaRuleInput& in, int h, float* S, const float* S_in, float* snapshots,
                    int64_t snapshot_from) {
  constexpr int d = 16 * NV;
  // Rows go in blocks of kBlockRows, token by token within a block, in two sweeps per token:
  //   1. kv_r = decay · (x_r · k) for the block's 8 rows, their 8 reductions in one
  //      transposed tree (reduce8_add_transposed), and δ_r = β (v_r − kv_r) as one vector;
  //   2. x_r ← decay · x_r + δ_r k, stored, and o_r = scale · (x_r · q), reduced the same way.
  // A row's token chain is long (dot, reduction, update, dot) and the 8 rows are independent
  // chains the core overlaps; doing the reductions 8 at a time takes ~24 shuffles and adds
  // where one at a time took ~64 (by count, ~16 of the ~48 vector ops per row and token). Between
  // tokens the rows wait in a 4 KB buffer in L1; k and q of the token stay in registers.
  // While the first token reads a block, the next block's rows are prefetched.
  static_assert(d % kBlockRows == 0, "the row block must divide d");
  const int kh = h % in.H_k;
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  const int64_t sf = static_cast<int64_t>(in.H_v) * d * d;
  const int64_t hoff = static_cast<int64_t>(h) * d * d;
  // The final rows go out with streaming stores when the state was read from elsewhere: the
  // destination's old lines need not be fetched.
  const bool stream = S_in != nullptr && (reinterpret_cast<uintptr_t>(S) & 63) == 0;
  float decay[kRowTokens], beta[kRowTokens];
  float* snap[kRowTokens];
  alignas(64) float rows[kBlockRows * d];
  alignas(32) float delta[kBlockRows];
  for (int64_t t0 = 0; t0 < in.T; t0 += kRowTokens) {
    const int n = static_cast<int>(in.T - t0 < kRowTokens ? in.T - t0 : kRowTokens);
    for (int i = 0; i < n; ++i) {
      const int64_t t = t0 + i;
      decay[i] = expf(in.g[t * in.H_v + h]);
      beta[i] = in.beta[t * in.H_v + h];
      float* base = in.snapshot_to ? in.snapshot_to[t]
                                   : snapshots && t >= snapshot_from ? snapshots + (t - snapshot_from) * sf : nullptr;
      snap[i] = base ? base + hoff : nullptr;
    }
    const float* src = t0 == 0 && S_in ? S_in : S;
    const bool last = t0 + n == in.T;
    for (int j = 0; j < d; j += kBlockRows) {
      for (int i = 0; i < n; ++i) {
        const int64_t t = t0 + i;
        const float* qt = in.q + t * in.ldqk + kh * d;
        const float* kt = in.k + t * in.ldqk + kh * d;
        __m512 k[NV], q[NV];
#pragma GCC unroll 8
        for (int u = 0; u < NV; ++u) {
          k[u] = _mm512_loadu_ps(kt + 16 * u);
          q[u] = _mm512_loadu_ps(qt + 16 * u);
        }
        const __m512 dc = _mm512_set1_ps(decay[i]);
        // Token i reads the rows from the state (the block's first token) or the buffer, and
        // writes them to the buffer or, for the block's last token, the state.
        const bool first_token = i == 0, last_token = i == n - 1;
        const bool to_stream = last_token && stream && last;
        const float* xs = first_token ? src + j * d : rows;
        float* xd = last_token ? S + j * d : rows;
        __m512 acc[kBlockRows];
        if constexpr (kOneToken) {  // a decode step: the next block's rows asked for between this one's loads
          if (j + kBlockRows < d) dot_rows<NV, true>(xs, k, acc);
          else dot_rows<NV, false>(xs, k, acc);
        } else {  // several tokens: the next block's lines asked for a share per token
          if (j + kBlockRows < d) prefetch_share<NV>(src + (j + kBlockRows) * d, i, n);
          dot_rows<NV, false>(xs, k, acc);
        }
        const __m256 kv = _mm256_mul_ps(_mm256_set1_ps(decay[i]), reduce8_add_transposed(acc));
        const __m256 v = _mm256_loadu_ps(in.v + t * in.ldv + h * d + j);
        _mm256_store_ps(delta, _mm256_mul_ps(_mm256_set1_ps(beta[i]), _mm256_sub_ps(v, kv)));
        float* sn = snap[i] ? snap[i] + j * d : nullptr;
        const Snap snap_kind = !sn ? Snap::None : (reinterpret_cast<uintptr_t>(sn) & 63) == 0 ? Snap::Stream : Snap::Store;
        auto update = [&](auto stream) {  // std::true_type / std::false_type: kStream
          constexpr bool kS = decltype(stream)::value;
          if (snap_kind == Snap::Stream) update_rows<NV, kS, Snap::Stream>(xs, xd, sn, k, q, dc, delta, acc);
          else if (snap_kind == Snap::Store) update_rows<NV, kS, Snap::Store>(xs, xd, sn, k, q, dc, delta, acc);
          else update_rows<NV, kS, Snap::None>(xs, xd, sn, k, q, dc, delta, acc);
        };
        if (to_stream) update(std::true_type{});
        else update(std::false_type{});
        _mm256_storeu_ps(in.out + t * in.ldo + h * d + j,
                         _mm256_mul_ps(_mm256_set1_ps(scale), reduce8_add_transposed(acc)));
      }
    }
  }
}

// recurrent_head for one call: the one-token instantiation for a decode step.
template <int NV>
void recurrent_head_for_call(const DeltaRuleInput& in, int h, float* S, const float* S_in, float* snapshots,
                             int64_t snapshot_from) {
  if (in.T == 1) recurrent_head<NV, true>(in, h, S, S_in, snapshots, snapshot_from);
  else recurrent_head<NV, false>(in, h, S, S_in, snapshots, snapshot_from);
}

// Any d that is a multiple of 16 (rows too long to keep in registers): two passes per row,
// token by token (delta_rule_loops.h's recurrence).
void recurrent_head_any(const DeltaRuleInput& in, int h, float* S, const float* S_in, float* snapshots,
                        int64_t snapshot_from) {
  const int d = in.d;
  recurrence_head(
      in, h, S, S_in, snapshots, snapshot_from,
      [d](const float* src, float* row, const float* k, const float* q, float v, float decay_s, float beta) {
        const __m512 decay = _mm512_set1_ps(decay_s);
        __m512 a = _mm512_setzero_ps();
        for (int i = 0; i < d; i += 16) {
          const __m512 x = _mm512_mul_ps(_mm512_loadu_ps(src + i), decay);
          _mm512_storeu_ps(row + i, x);
          a = _mm512_fmadd_ps(x, _mm512_loadu_ps(k + i), a);
        }
        const __m512 delta = _mm512_set1_ps(beta * (v - _mm512_reduce_add_ps(a)));
        __m512 b = _mm512_setzero_ps();
        for (int i = 0; i < d; i += 16) {
          const __m512 x = _mm512_fmadd_ps(_mm512_loadu_ps(k + i), delta, _mm512_loadu_ps(row + i));
          _mm512_storeu_ps(row + i, x);
          b = _mm512_fmadd_ps(x, _mm512_loadu_ps(q + i), b);
        }
        return _mm512_reduce_add_ps(b);
      });
}

}  // namespace

void delta_rule_recurrent(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from) {
  FlushDenormals ftz;
  const int d = in.d;
  const int h_end = in.h_end < 0 ? in.H_v : in.h_end;
  for (int h = in.h_begin; h < h_end; ++h) {
    const int64_t off = static_cast<int64_t>(h) * d * d;
    float* S = state + off;
    const float* S_in = in.state_in ? in.state_in + off : nullptr;
    switch (d) {
      case 16: recurrent_head_for_call<1>(in, h, S, S_in, snapshots, snapshot_from); break;
      case 32: recurrent_head_for_call<2>(in, h, S, S_in, snapshots, snapshot_from); break;
      case 48: recurrent_head_for_call<3>(in, h, S, S_in, snapshots, snapshot_from); break;
      case 64: recurrent_head_for_call<4>(in, h, S, S_in, snapshots, snapshot_from); break;
      case 80: recurrent_head_for_call<5>(in, h, S, S_in, snapshots, snapshot_from); break;
      case 96: recurrent_head_for_call<6>(in, h, S, S_in, snapshots, snapshot_from); break;
      case 112: recurrent_head_for_call<7>(in, h, S, S_in, snapshots, snapshot_from); break;
      case 128: recurrent_head_for_call<8>(in, h, S, S_in, snapshots, snapshot_from); break;
      default: recurrent_head_any(in, h, S, S_in, snapshots, snapshot_from); break;
    }
  }
  // The streaming stores of the heads' final rows and snapshots (recurrent_head) are ordered
  // before whatever reads them next; one fence per call lets each head's drain overlap the
  // next head's arithmetic instead of waiting for it.
  if (in.state_in || in.snapshot_to || snapshots) _mm_sfence();
}

size_t delta_rule_chunked_workspace_floats(int d) { return work_floats(d); }

void delta_rule_chunked(const DeltaRuleInput& in, float* state, float* workspace, const int64_t* cuts, int n_cuts,
                        float* cut_states) {
  FlushDenormals ftz;
  const int d = in.d;
  Work w = carve(workspace, d);
  const int64_t sf = static_cast<int64_t>(in.H_v) * d * d;
  const int64_t hf = static_cast<int64_t>(d) * d;
  const int h_end = in.h_end < 0 ? in.H_v : in.h_end;
  for (int h = in.h_begin; h < h_end; ++h) {
    float* Sh = state + h * hf;  // stored as S[i][j] at [j*d + i]
    transpose(Sh, d, w.S, d, d, d);
    chunks_between_cuts(
        in.T, cuts, n_cuts, [&](int64_t t0, int n) { chunk_head(in, h, t0, n, w); },
        [&](int c) { transpose(w.S, d, cut_states + c * sf + h * hf, d, d, d); });
    transpose(w.S, d, Sh, d, d, d);
  }
}

}  // namespace tandem::kernels::avx512
