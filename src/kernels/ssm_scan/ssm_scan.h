// Mamba2's selective scan with a scalar A per head (Granite-4.0-H; spec hybrids.md B5.1 steps
// 4-6, ggml_ssm_scan in Part D) and its gated grouped RMSNorm (steps 7-8).
//
// Two algorithms with the same result (not bit for bit):
//  * per token (ssm_scan): the recurrence as llama.cpp's CPU op runs it; the decode path.
//    Each token's arithmetic does not depend on how many tokens the call has: a batch equals
//    token-by-token calls bit for bit, on every tier.
//  * chunked (ssm_scan_chunked, the SSD form of spec B5.4): per chunk of `chunk` tokens the
//    scan is small dense matrix products (C·Bᵀ masked by the decay ratios, the state against C,
//    the state update as (Δx)ᵀ·B); only the chunk-to-chunk state hand-off is sequential.
//
// State layout (llama.cpp's {ds, P, H}): state[(h*P + p)*ds + n] = S_h[p][n].
#pragma once

#include <cstdint>

#include "runtime/cpu_tier.h"

namespace tandem::kernels {

struct SsmScanInput {
  int H = 0, P = 0, ds = 0, ng = 0;  // heads, head dim, state size, groups (H % ng == 0; head h uses group h / (H/ng))
  int64_t T = 0;
  const float* x = nullptr;  int64_t ldx = 0;   // T rows; head h's P values at x[t*ldx + h*P]
  const float* B = nullptr;  const float* C = nullptr; int64_t ldbc = 0;  // T rows; group g's ds values at B[t*ldbc + g*ds]
  const float* dt = nullptr; int64_t lddt = 0;  // T rows of H raw dt (WITHOUT the bias)
  const float* dt_bias = nullptr;  // H
  const float* A = nullptr;        // H, negative (the file stores -exp(A_log))
  const float* D = nullptr;        // H (skip); y += D[h]*x
  float* y = nullptr; int64_t ldy = 0;  // T rows of H*P outputs (scan + D skip), may not alias x
  int h_begin = 0, h_end = -1;     // heads to process (independent): lets a thread pool split heads

  int head_end() const { return h_end < 0 ? H : h_end; }
  int64_t state_floats() const { return static_cast<int64_t>(H) * P * ds; }
};

// Per token: Δ = softplus(dt + dt_bias) (u > 20 ? u : logf(1 + expf(u)), as ggml), dA = expf(Δ·A);
// S = S·dA + B·(x·Δ); y = Σ_n S·C with the updated S; then y += D·x. state updated in place.
// Tiers: AVX-512 (ds a multiple of 16) and AVX2 (ds a multiple of 8) bodies: the state update is
// the reference's mul, mul, add (the same state bits), Σ_n S·C is summed in vector lanes (equal
// within rounding); elsewhere the scalar reference.
void ssm_scan(CpuTier tier, const SsmScanInput& in, float* state);
void ssm_scan_ref(const SsmScanInput& in, float* state);

// Chunked (SSD) form of the same math for prompts: chunks of `chunk` tokens (chunk >= 1), state
// handed chunk to chunk. Equal to the per-token scan within float tolerance, not bit-equal.
// Works in thread_local grow-only buffers: no allocation per call in steady state.
// Tiers: AVX-512 body for ds a multiple of 16 (float GEMMs, the decay exponents as double
// differences); elsewhere ssm_scan_chunked_ref.
void ssm_scan_chunked(CpuTier tier, const SsmScanInput& in, float* state, int chunk = 64);
void ssm_scan_chunked_ref(const SsmScanInput& in, float* state, int chunk = 64);  // scalar, double intermediates
// Whether a batch of in.T tokens is faster by ssm_scan_chunked than by ssm_scan on this tier
// (measured: bench/ssm_scan_bench.cpp; figures in the definition): AVX-512 with ds a multiple
// of 16 and T >= 8.
bool ssm_scan_prefers_chunked(CpuTier tier, const SsmScanInput& in);
// Chunk: 32 and 64 measured within noise of each other (a loaded 2-core machine: 32 ahead by
// ~10% in one run, behind in another), 128 ~25% slower; a batch shorter than the chunk is one chunk.

// Mamba2's gated grouped RMSNorm: for each of T rows, v = y ⊙ silu(z); per group g of G = d/ng
// contiguous values: v[g] = v[g] / sqrt(mean(v[g]^2) + eps) ⊙ w[g*G ..]. out may alias y (not z).
// As ggml: the product in float, the sum of squares in double, the scale in float (norms.h).
// Tiers: the AVX-512 silu_mul and rms_norm (elementwise.h, norms.h).
void gated_group_rms_norm(CpuTier tier, const float* y, int64_t ldy, const float* z, int64_t ldz, int64_t T,
                          int64_t d, int ng, const float* w, float eps, float* out, int64_t ldo);
void gated_group_rms_norm_ref(const float* y, int64_t ldy, const float* z, int64_t ldz, int64_t T, int64_t d, int ng,
                              const float* w, float eps, float* out, int64_t ldo);

}  // namespace tandem::kernels
