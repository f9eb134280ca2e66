// Weight matrix × activations, the one product every projection of the model uses.
//
// A weight is stored as ggml does: `rows` rows of `cols` elements, each row
// block-quantized. Activations are T token rows of `cols` floats; the result is T
// rows of `rows` floats: Y[t][o] = W[o] · X[t]. Each activation row is first
// converted to the weight's vec_dot_type, exactly as ggml-cpu does, so every tier
// computes the same integer block sums (only float accumulation order differs).
//
// Where each product runs is decided in one place, plan_matrix (below), per matrix, from its
// weight type and the model's CPU tier — a tier held by the KernelContext, fixed when the model
// is loaded. At load the plan gives the matrix's layout (whether the loader also stores its
// 16-row packed groups, weight_pack.h); per call, with the token count T, the path (MatmulPath).
// Load and call ask the same function, so a matrix is packed exactly where a path reads the
// packed groups. The paths:
//  * T = 1 .. 8: every weight row is unpacked once and applied to all T columns
//    (decode GEMV and the column-shared product for speculative verification);
//  * T > 8: the same row kernels over groups of 8 columns, rows split in tasks small
//    enough that a task's weight rows stay in cache across column groups;
//  * on AMX (Q4_0, Q8_0): int8 tiles, one tile product per 32-element block, for T >= 16,
//    and when the weights were packed at load (weight_pack.h) for every T above
//    amx::kVnniMaxCols; 1..4 tokens (decode, a 1+3 verification) then run on the vector
//    units over the same packed groups (VPDPBUSD, same bits), where a tile product of one
//    token row would cost what one of 16 does;
//  * packed Q4_K / Q5_K / Q6_K on AMX: 24 and more tokens on the tiles (scales folded into the
//    weight tiles, matmul_kquant_amx.h), fewer on the vector units, same bits;
//  * on AVX-512 VNNI without AMX, packed Q4_0/Q8_0 run on the vector units for every T
//    (16 rows per register, tokens in chunks of 4: the interleaved layout the row kernels lack);
//  * on AVX2 without AVX-512, packed Q4_0 and Q6_K run on VPMADDUBSW for every T, 8 rows per
//    register (matmul_packed_avx2.h); the other types on the AVX2 row kernels;
//  * on Arm64 (neon < dotprod < i8mm), Q4_0 / Q8_0 on the tier's integer row kernels (i8mm's
//    SMMLA from two tokens), F32 / F16 on NEON (matmul_neon.h); no packed layouts;
//  * types or tiers without a SIMD kernel: the scalar reference, still threaded.
//  * ActivationMode::Exact (opt-in, for accuracy comparisons): weight rows are dequantized
//    to float and multiplied with the unconverted float activations on the tier's F32
//    kernel — the numbers an F32-activation engine gives, at several times the cost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "gguf/ggml_type.h"
#include "runtime/activation_mode.h"
#include "runtime/cpu_tier.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"

namespace tandem::kernels {

// How a weight matrix is held for the products.
//  Rows: its ggml rows only (the mapped file).
//  Packed: also its 16-row interleaved groups (weight_pack.h: Q4_0 / Q8_0 in AMX tile order,
//    Q4_K / Q5_K / Q6_K in their own interleaves), which the AMX tiles and the AVX-512 VNNI and
//    AVX2 vector units multiply; written at load where plan_matrix says so.
enum class WeightLayout { Rows, Packed };

struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  int64_t cols = 0;  // ne[0], the contiguous (input) dimension
  int64_t rows = 0;  // ne[1], the output dimension
  const uint8_t* data = nullptr;
  size_t row_stride = 0;  // bytes per row
  // The same rows as 16-row packed groups (weight_pack.h), or null. Set at model load where
  // plan_matrix(type, tier).layout is Packed (every packable type from AVX-512 VNNI up; Q4_0 and
  // Q6_K on AVX2); matmul then multiplies the 16-row groups (tiles or vector units).
  const uint8_t* packed = nullptr;

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_stride; }
  WeightLayout layout() const { return packed ? WeightLayout::Packed : WeightLayout::Rows; }
};

// How activations meet a non-F32 weight (runtime/activation_mode.h), named here too:
// kernels::ActivationMode.
using ::tandem::ActivationMode;

// The kernels a product runs on (see the list at the top).
//  Scalar: the scalar reference (vec_dot_ref) on the ggml rows.
//  Avx2 / Avx512: the AVX2 / AVX-512 row kernels on the ggml rows (matmul_avx2.h, matmul_avx512.h).
//  PackedVnni: packed Q4_0/Q8_0 as VPDPBUSD operands for every T (amx::gemm_packed_vnni): the
//    Avx512Vnni tier, and the Amx tier's 1..amx::kVnniMaxCols tokens.
//  PackedQ4K / PackedQ6K: packed Q4_K or Q5_K / Q6_K on AVX-512 VNNI, any tier from Avx512Vnni
//    up (vnni::gemm_packed_q4_K and _q5_K, vnni::gemm_packed_q6_K).
//  PackedAvx2: packed Q4_0 / Q6_K on the Avx2 tier (no AVX-512): the 16-row groups, 8 rows per
//    register, against the ggml-layout Q8_0 rows plus per-block terms (avx2::gemm_packed_q4_0) or
//    the Q8_K rows (avx2::gemm_packed_q6_K).
//  Amx: Q4_0 / Q8_0 ggml rows gathered per call into tiles, from amx::kTileCols tokens (prefill).
//  AmxPacked: packed Q4_0 / Q8_0 on the tiles (amx::gemm_packed).
//  AmxKQuant: packed Q4_K / Q5_K / Q6_K on the Amx tier from 24 tokens (prompts): the same Q8_K
//    activations (and, for Q4_K / Q5_K, mins operands) as the vector-unit paths, plus their A
//    tiles (amx::gemm_packed_kquant_tiles; the same bits as PackedQ4K / PackedQ6K).
//  Dequant: ActivationMode::Exact on a non-F32 weight: rows dequantized in small batches into a
//    per-thread buffer, then the tier's F32 kernel over the float activations.
//  Neon / Dotprod / I8mm: the Arm64 row kernels (matmul_neon.h) on the ggml rows: Q4_0 / Q8_0 with
//    SMULL+SADALP, SDOT (one token) or SMMLA (two and more: two rows × two tokens an
//    instruction), F32 / F16 on NEON FMAs; the same bits on all three.
enum class MatmulPath {
  Scalar, Avx2, Avx512, PackedVnni, PackedQ4K, PackedQ6K, PackedAvx2, Amx, AmxPacked, AmxKQuant, Dequant,
  Neon, Dotprod, I8mm
};
const char* matmul_path_name(MatmulPath p);
// Whether the path reads the matrix's packed groups (WeightMatrix::packed) rather than its rows.
bool reads_packed(MatmulPath p);

// What the kernels do with a matrix of one weight type on one tier: the single decision point
// of the matmul dispatch. `layout` is what the loader stores (Packed: the type has a packed path
// on this tier); path() is the kernel of a product of T tokens on the matrix as it is stored.
// layout is derived from path(), so load and call cannot disagree: where layout is Packed every
// path(T, Packed, ...) of the converted activations reads the packed groups (ActivationMode::Exact
// dequantizes the ggml rows instead), and where it is Rows the packed copy (which a test may still
// make) would be ignored.
struct MatrixPlan {
  GgmlType type = GgmlType::F32;
  CpuTier tier = CpuTier::Scalar;
  WeightLayout layout = WeightLayout::Rows;
  // stored: the matrix's WeightLayout (a matrix built by hand may be left in rows where the plan
  // packs). few_tokens_on_vector_units: KernelContext::packed_few_tokens_on_vector_units.
  MatmulPath path(int64_t T, WeightLayout stored, ActivationMode activations = ActivationMode::Converted,
                  bool few_tokens_on_vector_units = true) const;
};
MatrixPlan plan_matrix(GgmlType type, CpuTier tier);

// Threads and buffers the kernels use (one per model; not shared between concurrent calls),
// and the CPU tier they run on, fixed at construction (clamped to what the machine has).
struct KernelContext {
  explicit KernelContext(CpuTier t);  // t lowered to the machine's best (clamp_to_machine)
  const CpuTier tier;
  ThreadPool* pool = nullptr;  // null: run on the calling thread
  ScratchBuffer acts;          // converted activations
  ScratchBuffer ptrs;          // per-column views into acts
  ScratchBuffer tiles;         // per-thread output tiles of fused products
  // Packed Q4_0/Q8_0 on the Amx tier: up to amx::kVnniMaxCols tokens on the vector units
  // (faster there, same bits); false runs them on the tiles (benchmarks compare the two).
  bool packed_few_tokens_on_vector_units = true;
  ActivationMode activations = ActivationMode::Converted;
  ScratchBuffer dequant;  // Exact: per-thread dequantized weight rows
};

// Y[t*ldy + o] = sum_i W[o][i] * X[t*ldx + i] for t < T, o < W.rows.
void matmul(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy, KernelContext& ctx);

// Several products of one input (a layer's q/k/v, or its four GDN projections): when every
// matrix (at most 8) has the same type, width and packing, the activations are converted once and the
// row ranges of all matrices are the tasks of one pool pass (one wait instead of one per
// matrix); otherwise one matmul() each. Each Y equals its own matmul() bit for bit.
struct MatmulTarget {
  const WeightMatrix* W;
  float* Y;
  int64_t ldy;
};
void matmul_multi(std::span<const MatmulTarget> targets, const float* X, int64_t ldx, int64_t T, KernelContext& ctx);

// Fused SwiGLU projection: Y[t][r] = silu(Wg[r]·X[t]) * (Wu[r]·X[t]). The activations are
// converted once for both matrices, and each task's gate and up products live only in a
// per-thread tile (T x a few dozen rows, in cache) before being combined into Y: the two
// T x n_ff intermediates are never written out.
void matmul_swiglu(const WeightMatrix& Wg, const WeightMatrix& Wu, const float* X, int64_t ldx, int64_t T, float* Y,
                   int64_t ldy, KernelContext& ctx);

// The plain scalar reference of matmul (one vec_dot_ref per output), for tests.
void matmul_ref(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy);

// The path matmul(W, ..., T, ..., ctx) takes: plan_matrix(W.type, ctx.tier).path(T, W.layout(), ...)
// with ctx's options (for tests and benchmark labels).
MatmulPath matmul_path(const WeightMatrix& W, int64_t T, const KernelContext& ctx);

}  // namespace tandem::kernels
