#include "kernels/matmul/matmul.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gguf/quants.h"
#include "kernels/activation_quant/activation_quant.h"
#include "kernels/activation_quant/packed_activations.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/matmul/matmul_amx.h"
#include "kernels/matmul/matmul_avx2.h"
#include "kernels/matmul/matmul_avx512.h"
#include "kernels/matmul/matmul_kquant_amx.h"
#include "kernels/matmul/matmul_kquant_vnni.h"
#include "kernels/matmul/matmul_neon.h"
#include "kernels/matmul/matmul_packed_avx2.h"
#include "kernels/matmul/vec_dot.h"
#include "kernels/matmul/weight_pack.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

constexpr int kCols = kMaxRowCols;  // the column group of every tier's row kernels (row_kernels.h)

template <typename F>
void for_columns(int64_t T, ThreadPool* pool, F&& fn) {
  if (pool && T >= 8) pool->parallel_for(T, [&](int64_t t, int) { fn(t); });
  else for (int64_t t = 0; t < T; ++t) fn(t);
}

// AMX from one full tile of tokens on (A tiles hold 16 tokens; fewer would be mostly
// padding). At T = 16 AMX already takes half the AVX-512 time (1024→3584 Q4_0, one
// thread), so the crossover lies lower; below 16 the column-shared AVX-512 kernels run.
constexpr int64_t kAmxMinCols = amx::kTileCols;

// Packed K-quants go to the tiles from this many tokens: each 16-row group is unpacked with its
// scales folded in once per call, which a few token groups do not pay back (tandem_bench_matmul,
// 1024 -> 3584, one thread, vector units / tiles: Q4_K 0.35 / 0.39 ms at 16 tokens, 0.53 / 0.54 at
// 24, 0.71 / 0.57 at 32; Q6_K 1.17 / 1.15 ms at 24, 1.57 / 1.18 at 32).
constexpr int64_t kAmxKQuantMinCols = 24;

bool amx_has_kernel(GgmlType t) { return t == GgmlType::Q4_0 || t == GgmlType::Q8_0; }

// Types with a row kernel in matmul_avx512.cpp / matmul_avx2.cpp (the same set today).
bool simd_has_kernel(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q8_0: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
    case GgmlType::F32: case GgmlType::F16:
      return true;
    default:
      return false;
  }
}

// Types with an AVX2 row kernel only (the legacy Q5_0, Q4_1, Q5_1): the AVX-512 tiers run it too.
bool avx2_only_kernel(GgmlType t) { return t == GgmlType::Q5_0 || t == GgmlType::Q4_1 || t == GgmlType::Q5_1; }

using Path = MatmulPath;

// Types with an Arm64 row kernel (matmul_neon.h): Q4_0 / Q8_0 on every Arm tier (SMULL, SDOT,
// SMMLA), the K-quants on SMULL or SDOT (i8mm runs dotprod's), F32 / F16 on neon's float
// kernels; the others (Q4_1, Q5_0, Q5_1, BF16, Q8_K) run the scalar reference there.
bool arm_int8_kernel(GgmlType t) { return t == GgmlType::Q4_0 || t == GgmlType::Q8_0; }
bool arm_kquant_kernel(GgmlType t) { return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K; }
bool arm_has_kernel(GgmlType t) {
  return arm_int8_kernel(t) || arm_kquant_kernel(t) || t == GgmlType::F32 || t == GgmlType::F16;
}

// Q4_K, Q5_K and Q6_K: packed for the vector units from Avx512Vnni up (and for the tiles on Amx).
bool kquant_packed_kernel(GgmlType t) { return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K; }

// Rows dequantized at a time on the Dequant path (a few KB per row: stays in L1/L2).
constexpr int64_t kDequantRows = 16;

// The T activation rows converted once for one weight type and path; any number of
// weight matrices of that type and width can then be applied (row range by row range).
struct Prepared {
  Path path = Path::Scalar;
  GgmlType type = GgmlType::F32;  // the weight type it was prepared for
  int64_t n = 0, T = 0;
  const uint8_t* act = nullptr;   // scalar, avx2: ggml-layout rows; amx: A tiles
  size_t act_row = 0;
  const void* views = nullptr;    // avx512: per-column views
  uint8_t* panels = nullptr;      // amx: one weight panel per thread
  size_t panel_bytes = 0;
  const int32_t* offsets = nullptr;  // PackedQ6K: T rows of n / 16 sub-block offsets; PackedQ4K: n / 64 mins operands;
                                     // PackedAvx2: n / 32 blocks × T tokens of terms −8·Σa
  const float* act_scales = nullptr;  // PackedAvx2: n / 32 blocks × T tokens of activation scales
  Path f32_path = Path::Scalar;   // Dequant: the F32 kernel's tier
  float* dequant = nullptr;       // Dequant: kDequantRows x n floats per thread
};

// The decision itself (MatrixPlan::path): the kernel for T tokens of a `type` matrix on `tier`,
// stored packed or not. A packed matrix takes a packed path wherever its tier has one for its
// type (then for every T: plan_matrix's layout relies on it), else its rows' path.
// The decision is the same in every build (the plans of every tier can be tested anywhere); a
// path of the other instruction set is never run, since a KernelContext's tier is clamped to the
// machine (clamp_to_machine) and tier_has is false across families.
Path choose_path(GgmlType t, CpuTier tier, int64_t T, bool packed, bool few_tokens_on_vector_units) {
  if (tier_has(tier, CpuTier::Neon)) {
    // Arm64: no packed layouts (yet); SMMLA from two tokens (two columns per instruction), SDOT
    // for one, the same bits either way (matmul_neon.h).
    if (arm_int8_kernel(t) && tier_has(tier, CpuTier::I8mm) && T >= 2) return Path::I8mm;
    if ((arm_int8_kernel(t) || arm_kquant_kernel(t)) && tier_has(tier, CpuTier::Dotprod)) return Path::Dotprod;
    return arm_has_kernel(t) ? Path::Neon : Path::Scalar;
  }
  if (tier_has(tier, CpuTier::Amx)) {
    // Packed Q4_0/Q8_0: the tiles pay from one token on; 1..kVnniMaxCols tokens on the vector
    // units (faster there, same bits) unless the context asks for the tiles.
    if (packed && amx_has_kernel(t))
      return few_tokens_on_vector_units && T <= amx::kVnniMaxCols ? Path::PackedVnni : Path::AmxPacked;
    if (T >= kAmxMinCols && amx_has_kernel(t)) return Path::Amx;
    // Prompts of a packed K-quant matrix go to the tiles.
    if (packed && kquant_packed_kernel(t) && T >= kAmxKQuantMinCols) return Path::AmxKQuant;
  }
  if (tier_has(tier, CpuTier::Avx512Vnni)) {
    if (packed && amx_has_kernel(t)) return Path::PackedVnni;
    if (packed && t == GgmlType::Q6_K) return Path::PackedQ6K;
    if (packed && (t == GgmlType::Q4_K || t == GgmlType::Q5_K)) return Path::PackedQ4K;
    if (simd_has_kernel(t)) return Path::Avx512;
  }
  if (tier_has(tier, CpuTier::Avx2)) {
    if (packed && (t == GgmlType::Q4_0 || t == GgmlType::Q6_K)) return Path::PackedAvx2;
    if (simd_has_kernel(t) || avx2_only_kernel(t)) return Path::Avx2;
  }
  return Path::Scalar;
}

Prepared prepare(GgmlType type, WeightLayout stored, int64_t n, const float* X, int64_t ldx, int64_t T,
                 KernelContext& ctx) {
  Prepared p;
  const MatrixPlan plan = plan_matrix(type, ctx.tier);
  p.path = plan.path(T, stored, ctx.activations, ctx.packed_few_tokens_on_vector_units);
  p.type = type;
  p.n = n;
  p.T = T;
  if (p.path == Path::Dequant) {
    // The float activations as they are; each task dequantizes its rows (ggml layout, the
    // packed copy is not used) and runs them through the F32 kernel of this tier.
    p.f32_path = plan_matrix(GgmlType::F32, ctx.tier).path(T, WeightLayout::Rows);
    const int threads = ctx.pool ? ctx.pool->size() : 1;
    p.dequant = ctx.dequant.get_as<float>(static_cast<size_t>(threads * kDequantRows * n));
    auto* views = ctx.ptrs.get_as<const float*>(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) views[t] = X + t * ldx;
    p.views = views;
    return p;
  }
#ifdef TANDEM_ARCH_X86
  if (p.path == Path::Amx || p.path == Path::AmxPacked || p.path == Path::PackedVnni) {
    // Quantized into A tiles once (plus per-token code sums for the vector units); on the
    // tiles each task unpacks its panel of weight rows into its thread's slice and applies it
    // to every group of 16 tokens.
    const int threads = ctx.pool ? ctx.pool->size() : 1;
    const bool vector_units = p.path == Path::PackedVnni;
    const size_t act_bytes = (amx::q8_tiles_bytes(n, T) + (vector_units ? amx::vnni_sums_bytes(n, T) : 0) + 63) / 64 * 64;
    p.panel_bytes = vector_units ? 0 : (amx::panel_bytes(n) + 63) / 64 * 64;
    auto* buf = static_cast<uint8_t*>(ctx.acts.get(act_bytes + p.panel_bytes * static_cast<size_t>(threads)));
    for_columns(T, ctx.pool, [&](int64_t t) {
      amx::pack_q8_tile_column(X + t * ldx, n, T, t, buf);
      if (vector_units) amx::vnni_sums_column(type, n, T, t, buf);
    });
    amx::pad_q8_tiles(n, T, buf);
    p.act = buf;
    p.panels = buf + act_bytes;
    return p;
  }
#endif
  // The ggml-layout activation rows (quantize_activation) of the row kernels: scalar, AVX2, the
  // Arm tiers.
  if (p.path == Path::Scalar || p.path == Path::Avx2 || p.path == Path::PackedAvx2 || p.path == Path::Neon ||
      p.path == Path::Dotprod || p.path == Path::I8mm) {
    const GgmlType act_type = traits(type).vec_dot_type;
    p.act_row = (activation_bytes(act_type, n) + 63) / 64 * 64;
    const int64_t nb = n / 32;
    const size_t terms = p.path == Path::PackedAvx2 && type == GgmlType::Q4_0 ? static_cast<size_t>(T * nb) : 0;
    auto* act = static_cast<uint8_t*>(ctx.acts.get(p.act_row * static_cast<size_t>(T) + terms * 8));
    auto* sums = reinterpret_cast<int32_t*>(act + p.act_row * static_cast<size_t>(T));
    auto* scales = reinterpret_cast<float*>(sums + terms);
    for_columns(T, ctx.pool, [&](int64_t t) {
      quantize_activation(ctx.tier, act_type, X + t * ldx, act + t * p.act_row, n);
#ifdef TANDEM_ARCH_X86
      if (terms)
        avx2::q4_0_packed_terms(reinterpret_cast<const BlockQ8_0*>(act + t * p.act_row), nb, T, sums + t, scales + t);
#endif
    });
    p.act = act;
    p.offsets = sums;
    p.act_scales = scales;
    return p;
  }
#ifdef TANDEM_ARCH_X86
  switch (type) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0: {
      const PairLayout layout = type == GgmlType::Q4_0 ? PairLayout::kQ8Pairs : PairLayout::kQ8PairsU;
      const size_t row = q8_pairs_bytes(n, layout);
      auto* buf = static_cast<uint8_t*>(ctx.acts.get(row * static_cast<size_t>(T)));
      auto* views = ctx.ptrs.get_as<Q8PairsView>(static_cast<size_t>(T));
      for_columns(T, ctx.pool, [&](int64_t t) { views[t] = pack_q8_pairs(X + t * ldx, n, layout, buf + t * row); });
      p.views = views;
      break;
    }
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: {
      const size_t row = (row_bytes(GgmlType::Q8_K, n) + 63) / 64 * 64;
      // The packed Q6_K kernel also wants each token's sub-block offsets (n / 16 int32), the
      // packed Q4_K kernel its mins operands (n / 64 int32).
      const bool tiles = p.path == Path::AmxKQuant;
      const bool mins = p.path == Path::PackedQ4K || (tiles && type != GgmlType::Q6_K);  // Q6_K on tiles: none
      const size_t offs = p.path == Path::PackedQ6K ? static_cast<size_t>(n / 16) * sizeof(int32_t)
                          : mins                    ? static_cast<size_t>(n / 64) * sizeof(int32_t)
                                                    : 0;
      const size_t cols_bytes = ((row + offs) * static_cast<size_t>(T) + 63) / 64 * 64;
      const size_t tile_bytes = tiles ? amx::kquant_tiles_bytes(n, T) : 0;
      const int threads = ctx.pool ? ctx.pool->size() : 1;
      p.panel_bytes = tiles ? (amx::kquant_panel_bytes(n) + 63) / 64 * 64 : 0;
      auto* buf = static_cast<uint8_t*>(
          ctx.acts.get(cols_bytes + tile_bytes + p.panel_bytes * static_cast<size_t>(threads)));
      uint8_t* tile_buf = tiles ? buf + cols_bytes : nullptr;
      p.act = tile_buf;
      p.panels = tiles ? buf + cols_bytes + tile_bytes : nullptr;
      auto* views = ctx.ptrs.get_as<const BlockQ8_K*>(static_cast<size_t>(T));
      auto* offsets = reinterpret_cast<int32_t*>(buf + row * static_cast<size_t>(T));
      for_columns(T, ctx.pool, [&](int64_t t) {
        quantize_activation(ctx.tier, GgmlType::Q8_K, X + t * ldx, buf + t * row, n);
        views[t] = reinterpret_cast<const BlockQ8_K*>(buf + t * row);
        if (p.path == Path::PackedQ6K) vnni::q6_K_offsets(views[t], n, offsets + t * (n / 16));
        if (mins) vnni::q4_K_min_operands(views[t], n, offsets + t * (n / 64));
        if (tiles) amx::kquant_tile_column(views[t], n, t, tile_buf);
      });
      if (tiles) amx::kquant_pad_tiles(n, T, tile_buf);
      p.offsets = offsets;
      p.views = views;
      break;
    }
    case GgmlType::F32: {
      auto* views = ctx.ptrs.get_as<const float*>(static_cast<size_t>(T));
      for (int64_t t = 0; t < T; ++t) views[t] = X + t * ldx;
      p.views = views;
      break;
    }
    default: {  // F16
      const size_t row = (static_cast<size_t>(n) * 2 + 63) / 64 * 64;
      auto* buf = static_cast<uint8_t*>(ctx.acts.get(row * static_cast<size_t>(T)));
      auto* views = ctx.ptrs.get_as<const uint16_t*>(static_cast<size_t>(T));
      for_columns(T, ctx.pool, [&](int64_t t) {
        quantize_activation(ctx.tier, GgmlType::F16, X + t * ldx, buf + t * row, n);
        views[t] = reinterpret_cast<const uint16_t*>(buf + t * row);
      });
      p.views = views;
      break;
    }
  }
#else
  throw std::logic_error(std::string("matmul: path ") + matmul_path_name(p.path) + " is not built for this CPU");
#endif
  return p;
}

// The activation columns [c0, c0 + nc) as a row kernel takes them: the views prepare() made (the
// AVX-512 path's packed pairs and rows, the Dequant path's float rows), else pointers to the
// ggml-layout rows in p.act (the AVX2 and Arm paths), written to buf.
template <typename Column>
const Column* row_columns(const Prepared& p, int64_t c0, int nc, Column* buf) {
  if (p.views) return static_cast<const Column*>(p.views) + c0;
  if constexpr (std::is_pointer_v<Column>) {
    for (int c = 0; c < nc; ++c) buf[c] = reinterpret_cast<Column>(p.act + static_cast<size_t>(c0 + c) * p.act_row);
    return buf;
  } else {
    throw std::logic_error("matmul: packed activation columns were not prepared");
  }
}

// One row kernel over weight rows [0, nr) (w: row 0, stride bytes apart) for columns [c0, c0 + nc).
template <typename Column>
void run_row_kernel(RowKernelFn<Column> kernel, const Prepared& p, const uint8_t* w, size_t stride, int64_t nr,
                    int64_t c0, int nc, float* y, int64_t ldy) {
  if (!kernel) throw std::logic_error(std::string("matmul: no row kernel on path ") + matmul_path_name(p.path));
  Column buf[kCols];
  kernel(w, stride, p.n, 0, nr, row_columns(p, c0, nc, buf), nc, y, ldy);
}

// Weight rows [0, nr) of `type` for all T columns of p, in column groups, on one ISA's row kernels.
template <typename Q8_0Column>
void run_row_kernels(const RowKernels<Q8_0Column>& k, GgmlType type, const Prepared& p, const uint8_t* w,
                     size_t stride, int64_t nr, float* y, int64_t ldy) {
  for (int64_t c0 = 0; c0 < p.T; c0 += kCols) {
    const int nc = static_cast<int>(std::min<int64_t>(kCols, p.T - c0));
    float* yc = y + c0 * ldy;
    switch (type) {
      case GgmlType::Q4_0: run_row_kernel(k.q4_0, p, w, stride, nr, c0, nc, yc, ldy); break;
      case GgmlType::Q8_0: run_row_kernel(k.q8_0, p, w, stride, nr, c0, nc, yc, ldy); break;
      case GgmlType::Q5_0: run_row_kernel(k.q5_0, p, w, stride, nr, c0, nc, yc, ldy); break;
      case GgmlType::Q4_1: run_row_kernel(k.q4_1, p, w, stride, nr, c0, nc, yc, ldy); break;
      case GgmlType::Q5_1: run_row_kernel(k.q5_1, p, w, stride, nr, c0, nc, yc, ldy); break;
      case GgmlType::Q4_K: run_row_kernel(k.q4_K, p, w, stride, nr, c0, nc, yc, ldy); break;
      case GgmlType::Q5_K: run_row_kernel(k.q5_K, p, w, stride, nr, c0, nc, yc, ldy); break;
      case GgmlType::Q6_K: run_row_kernel(k.q6_K, p, w, stride, nr, c0, nc, yc, ldy); break;
      case GgmlType::F32: run_row_kernel(k.f32, p, w, stride, nr, c0, nc, yc, ldy); break;
      case GgmlType::F16: run_row_kernel(k.f16, p, w, stride, nr, c0, nc, yc, ldy); break;
      default: throw std::logic_error(std::string("matmul: no row kernel for ") + traits(type).name);
    }
  }
}

#ifdef TANDEM_ARCH_ARM64
// The Arm tiers' row kernels on `path`: each tier's own where it has one, else the tier below's
// (i8mm adds Q4_0 / Q8_0 on SMMLA, dotprod the integer types on SDOT, neon has every type).
const RowKernels<const BlockQ8_0*>& arm_row_kernels(Path path) {
  static const RowKernels<const BlockQ8_0*> dotprod_tier = dotprod::kRowKernels.or_else(neon::kRowKernels);
  static const RowKernels<const BlockQ8_0*> i8mm_tier = i8mm::kRowKernels.or_else(dotprod_tier);
  return path == Path::I8mm ? i8mm_tier : path == Path::Dotprod ? dotprod_tier : neon::kRowKernels;
}
#endif

// F32 rows w[0, nr) (stride bytes apart) times the T float columns of p, on the F32 kernel of the
// tier's path (the scalar reference where it has none).
void run_rows_f32(const Prepared& p, Path tier, const uint8_t* w, size_t stride, int64_t nr, float* y, int64_t ldy) {
#ifdef TANDEM_ARCH_X86
  if (tier == Path::Avx512) return run_row_kernels(avx512::kRowKernels, GgmlType::F32, p, w, stride, nr, y, ldy);
  if (tier == Path::Avx2) return run_row_kernels(avx2::kRowKernels, GgmlType::F32, p, w, stride, nr, y, ldy);
#endif
#ifdef TANDEM_ARCH_ARM64
  if (tier == Path::Neon) return run_row_kernels(neon::kRowKernels, GgmlType::F32, p, w, stride, nr, y, ldy);
#endif
  const auto* const* a = static_cast<const float* const*>(p.views);
  for (int64_t o = 0; o < nr; ++o)
    for (int64_t t = 0; t < p.T; ++t) y[t * ldy + o] = vec_dot_ref(GgmlType::F32, p.n, w + o * stride, a[t]);
}

// Rows [r0, r1) of W for all T columns: y[t*ldy + (r - r0)].
void run_rows(const Prepared& p, const WeightMatrix& W, int64_t r0, int64_t r1, float* y, int64_t ldy, int thread) {
  const uint8_t* w = W.data + static_cast<size_t>(r0) * W.row_stride;  // row r0 becomes row 0
  const int64_t nr = r1 - r0, n = p.n, T = p.T;
  // Packed: r0 is a multiple of the task size (64 or 256 rows; whole groups for the K-quants), so row r0
  // starts a 16-row group.
  [[maybe_unused]] const uint8_t* packed =  // (no packed path on Arm64)
      W.packed ? W.packed + static_cast<size_t>(r0 / 16) * packed_group_bytes(W.type, n) : nullptr;
  if (p.path == Path::Dequant) {
    float* rows = p.dequant + static_cast<size_t>(thread) * kDequantRows * static_cast<size_t>(n);
    for (int64_t o0 = 0; o0 < nr; o0 += kDequantRows) {
      const int64_t m = std::min(kDequantRows, nr - o0);
      for (int64_t i = 0; i < m; ++i) dequantize_row(W.type, w + static_cast<size_t>(o0 + i) * W.row_stride, rows + i * n, n);
      run_rows_f32(p, p.f32_path, reinterpret_cast<const uint8_t*>(rows), static_cast<size_t>(n) * sizeof(float), m,
                   y + o0, ldy);
    }
    return;
  }
  if (p.path == Path::Scalar) {
    for (int64_t o = 0; o < nr; ++o)
      for (int64_t t = 0; t < T; ++t)
        y[t * ldy + o] = vec_dot_ref(W.type, n, w + static_cast<size_t>(o) * W.row_stride, p.act + t * p.act_row);
    return;
  }
#ifdef TANDEM_ARCH_ARM64
  if (p.path == Path::Neon || p.path == Path::Dotprod || p.path == Path::I8mm)
    return run_row_kernels(arm_row_kernels(p.path), W.type, p, w, W.row_stride, nr, y, ldy);
  throw std::logic_error(std::string("matmul: path ") + matmul_path_name(p.path) + " is not built for this CPU");
#else
  if (p.path == Path::PackedVnni) {
    amx::gemm_packed_vnni(W.type, packed, n, 0, nr, p.act, T, y, ldy);
    return;
  }
  if (p.path == Path::PackedAvx2) {
    if (W.type == GgmlType::Q6_K)
      avx2::gemm_packed_q6_K(packed, packed_group_bytes(W.type, n), n, nr, p.act, p.act_row, T, y, ldy);
    else
      avx2::gemm_packed_q4_0(packed, packed_group_bytes(W.type, n), n, nr, p.act, p.act_row, p.offsets,
                             p.act_scales, T, y, ldy);
    return;
  }
  if (p.path == Path::PackedQ6K) {
    vnni::gemm_packed_q6_K(packed, n, 0, nr, static_cast<const BlockQ8_K* const*>(p.views), p.offsets, T, y, ldy);
    return;
  }
  if (p.path == Path::AmxKQuant) {
    amx::gemm_packed_kquant_tiles(W.type, packed, n, 0, nr, p.act, static_cast<const BlockQ8_K* const*>(p.views),
                                  p.offsets, T, y, ldy, p.panels + p.panel_bytes * static_cast<size_t>(thread));
    return;
  }
  if (p.path == Path::PackedQ4K) {
    auto* gemm = W.type == GgmlType::Q5_K ? vnni::gemm_packed_q5_K : vnni::gemm_packed_q4_K;
    gemm(packed, n, 0, nr, static_cast<const BlockQ8_K* const*>(p.views), p.offsets, T, y, ldy);
    return;
  }
  if (p.path == Path::AmxPacked) {
    uint8_t* panel = p.panels + p.panel_bytes * static_cast<size_t>(thread);
    amx::gemm_packed(W.type, packed, n, W.rows - r0, 0, nr, p.act, T, y, ldy, panel, /*vector_units=*/false);
    return;
  }
  if (p.path == Path::Amx) {
    uint8_t* panel = p.panels + p.panel_bytes * static_cast<size_t>(thread);
    auto* gemm = W.type == GgmlType::Q4_0 ? amx::gemm_q4_0 : amx::gemm_q8_0;
    gemm(w, W.row_stride, n, W.rows - r0, 0, nr, p.act, T, y, ldy, panel);
    return;
  }
  if (p.path == Path::Avx2) return run_row_kernels(avx2::kRowKernels, W.type, p, w, W.row_stride, nr, y, ldy);
  run_row_kernels(avx512::kRowKernels, W.type, p, w, W.row_stride, nr, y, ldy);
#endif
}

// Rows per task: the AMX panel size; otherwise multiples of 4, ~8 tasks per thread for
// load balance on a shared machine, at most 64 for GEMM so a task's rows stay in cache, and
// at most kMaxTaskRows so that a large matrix (the output head: 150k rows) is not cut into
// tasks of half a millisecond each, one of which a thread may end up waiting for.
constexpr int64_t kMaxTaskRows = 1024;
// Packed products on the vector units stream each task's rows once, so a task is a stream that
// starts cold (its first ~10 KB wait for memory before the prefetches run ahead) and the pool
// hands a thread every other task: 64-row tasks (the tiles' panel) restarted the stream every
// ~36 KB at 0.8B. 256 rows, side by side in one process: 0.8B decode 13.18 -> 12.42 ms and
// 1+3 verification 16.32 -> 15.34 ms; 4B 87.2 -> 84.7 and 99.9 -> 96.2 ms; 512 rows was
// slower again (fewer tasks to balance).
constexpr int64_t kVectorUnitTaskRows = 256;
int64_t rows_per_task(const Prepared& p, int64_t rows, ThreadPool* pool) {
  if (p.path == Path::PackedVnni) return kVectorUnitTaskRows;
  if (p.path == Path::Amx || p.path == Path::AmxPacked || p.path == Path::AmxKQuant) return amx::kPanelRows;
  // Packed on AVX2: a few tokens stream their rows (as the vector units above); a prompt's tasks
  // are long anyway, and smaller ones balance the two threads.
  if (p.path == Path::PackedAvx2) return p.T <= 4 ? kVectorUnitTaskRows : 64;
  const int threads = pool ? pool->size() : 1;
  int64_t per = std::min(kMaxTaskRows, (rows + threads * 8 - 1) / (threads * 8));
  if (p.T > kCols) per = std::min<int64_t>(per, 64);
  if (p.path == Path::PackedQ6K || p.path == Path::PackedQ4K) return (per + 15) / 16 * 16;  // whole 16-row groups
  return std::max<int64_t>(4, (per + 3) / 4 * 4);
}

template <typename F>
void for_tasks(int64_t rows, int64_t per, ThreadPool* pool, F&& fn) {
  const int64_t tasks = (rows + per - 1) / per;
  auto task = [&](int64_t i, int thread) { fn(i * per, std::min(rows, (i + 1) * per), thread); };
  if (pool && tasks > 1) pool->parallel_for(tasks, task);
  else for (int64_t i = 0; i < tasks; ++i) task(i, 0);
}

}  // namespace

const char* matmul_path_name(MatmulPath p) {
  switch (p) {
    case Path::Scalar: return "scalar";
    case Path::Avx2: return "avx2";
    case Path::Avx512: return "avx512";
    case Path::PackedVnni: return "packed-vnni";
    case Path::PackedQ4K: return "packed-q4k";
    case Path::PackedQ6K: return "packed-q6k";
    case Path::PackedAvx2: return "packed-avx2";
    case Path::Amx: return "amx";
    case Path::AmxPacked: return "amx-packed";
    case Path::AmxKQuant: return "amx-kquant";
    case Path::Dequant: return "dequant";
    case Path::Neon: return "neon";
    case Path::Dotprod: return "dotprod";
    case Path::I8mm: return "i8mm";
  }
  return "?";
}

bool reads_packed(MatmulPath p) {
  switch (p) {
    case Path::PackedVnni: case Path::PackedQ4K: case Path::PackedQ6K: case Path::PackedAvx2:
    case Path::AmxPacked: case Path::AmxKQuant:
      return true;
    default:
      return false;
  }
}

MatmulPath MatrixPlan::path(int64_t T, WeightLayout stored, ActivationMode activations,
                            bool few_tokens_on_vector_units) const {
  if (activations == ActivationMode::Exact && type != GgmlType::F32) return Path::Dequant;
  return choose_path(type, tier, T, stored == WeightLayout::Packed, few_tokens_on_vector_units);
}

MatrixPlan plan_matrix(GgmlType type, CpuTier tier) {
  MatrixPlan plan;
  plan.type = type;
  plan.tier = tier;
  // Packed where a packed matrix would be multiplied packed: choose_path gives a packed matrix a
  // packed path for every T or for none, so one token decides (matmul_test's
  // PlanMatrix.LayoutAgreesWithEveryPath checks every T, both settings of the vector-unit switch).
  plan.layout = packable(type) && reads_packed(plan.path(1, WeightLayout::Packed)) ? WeightLayout::Packed
                                                                                     : WeightLayout::Rows;
  return plan;
}

KernelContext::KernelContext(CpuTier t) : tier(clamp_to_machine(t)) {}

MatmulPath matmul_path(const WeightMatrix& W, int64_t T, const KernelContext& ctx) {
  return plan_matrix(W.type, ctx.tier).path(T, W.layout(), ctx.activations, ctx.packed_few_tokens_on_vector_units);
}

void matmul(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy, KernelContext& ctx) {
  const Prepared p = prepare(W.type, W.layout(), W.cols, X, ldx, T, ctx);
  for_tasks(W.rows, rows_per_task(p, W.rows, ctx.pool), ctx.pool,
            [&](int64_t r0, int64_t r1, int thread) { run_rows(p, W, r0, r1, Y + r0, ldy, thread); });
}

void matmul_multi(std::span<const MatmulTarget> targets, const float* X, int64_t ldx, int64_t T, KernelContext& ctx) {
  constexpr size_t kMaxTargets = 8;
  if (targets.empty()) return;
  const WeightMatrix& W0 = *targets[0].W;
  bool same = targets.size() <= kMaxTargets;
  for (const MatmulTarget& t : targets)
    same = same && t.W->type == W0.type && t.W->cols == W0.cols && t.W->layout() == W0.layout();
  if (!same) {
    for (const MatmulTarget& t : targets) matmul(*t.W, X, ldx, T, t.Y, t.ldy, ctx);
    return;
  }
  const Prepared p = prepare(W0.type, W0.layout(), W0.cols, X, ldx, T, ctx);
  int64_t per[kMaxTargets], first[kMaxTargets + 1];
  first[0] = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    per[i] = rows_per_task(p, targets[i].W->rows, ctx.pool);
    first[i + 1] = first[i] + (targets[i].W->rows + per[i] - 1) / per[i];
  }
  auto task = [&](int64_t k, int thread) {
    size_t i = 0;
    while (k >= first[i + 1]) ++i;
    const MatmulTarget& t = targets[i];
    const int64_t r0 = (k - first[i]) * per[i], r1 = std::min(t.W->rows, r0 + per[i]);
    run_rows(p, *t.W, r0, r1, t.Y + r0, t.ldy, thread);
  };
  const int64_t tasks = first[targets.size()];
  if (ctx.pool && tasks > 1) ctx.pool->parallel_for(tasks, task);
  else for (int64_t k = 0; k < tasks; ++k) task(k, 0);
}

void matmul_swiglu(const WeightMatrix& Wg, const WeightMatrix& Wu, const float* X, int64_t ldx, int64_t T, float* Y,
                   int64_t ldy, KernelContext& ctx) {
  if (Wg.cols != Wu.cols || Wg.rows != Wu.rows)
    throw std::invalid_argument("matmul_swiglu: gate and up matrices differ in shape");
  const int threads = ctx.pool ? ctx.pool->size() : 1;
  if (Wg.type != Wu.type) {
    // Different storage types need differently converted activations: two plain products.
    float* g = ctx.tiles.get_as<float>(static_cast<size_t>(2 * T * Wg.rows));
    float* u = g + T * Wg.rows;
    matmul(Wg, X, ldx, T, g, Wg.rows, ctx);
    matmul(Wu, X, ldx, T, u, Wu.rows, ctx);
    for (int64_t t = 0; t < T; ++t) silu_mul(ctx.tier, g + t * Wg.rows, u + t * Wg.rows, Y + t * ldy, Wg.rows);
    return;
  }
  const WeightLayout both = Wg.packed && Wu.packed ? WeightLayout::Packed : WeightLayout::Rows;
  const Prepared p = prepare(Wg.type, both, Wg.cols, X, ldx, T, ctx);
  const int64_t per = rows_per_task(p, Wg.rows, ctx.pool);
  // Per-thread tiles of T x per floats for the two products of one row range: they stay
  // in cache and are combined straight into Y.
  const size_t tile = static_cast<size_t>(T * per);
  float* tiles = ctx.tiles.get_as<float>(2 * tile * static_cast<size_t>(threads));
  for_tasks(Wg.rows, per, ctx.pool, [&](int64_t r0, int64_t r1, int thread) {
    float* g = tiles + 2 * tile * static_cast<size_t>(thread);
    float* u = g + tile;
    run_rows(p, Wg, r0, r1, g, per, thread);
    run_rows(p, Wu, r0, r1, u, per, thread);
    const int64_t nr = r1 - r0;
    for (int64_t t = 0; t < T; ++t) silu_mul(ctx.tier, g + t * per, u + t * per, Y + t * ldy + r0, nr);
  });
}

void matmul_ref(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy) {
  const GgmlType act_type = traits(W.type).vec_dot_type;
  std::vector<uint8_t> act(activation_bytes(act_type, W.cols));
  for (int64_t t = 0; t < T; ++t) {
    quantize_activation(CpuTier::Scalar, act_type, X + t * ldx, act.data(), W.cols);
    for (int64_t o = 0; o < W.rows; ++o) Y[t * ldy + o] = vec_dot_ref(W.type, W.cols, W.row(o), act.data());
  }
}

}  // namespace tandem::kernels
