#include "kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "gguf/quants.h"
#include "kernels/activation_quant.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_avx512.h"
#include "kernels/packed_activations.h"
#include "kernels/vec_dot.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

constexpr int kCols = avx512::kMaxCols;

// Runs fn(r0, r1) over row ranges, on the pool when there is one. Ranges are multiples
// of 4 rows and small enough for ~8 tasks per thread (load balance on a shared machine).
template <typename F>
void for_row_ranges(int64_t rows, int64_t T, ThreadPool* pool, F&& fn) {
  const int threads = pool ? pool->size() : 1;
  int64_t per = (rows + threads * 8 - 1) / (threads * 8);
  if (T > kCols) per = std::min<int64_t>(per, 64);  // GEMM: keep a task's rows in cache
  per = std::max<int64_t>(4, (per + 3) / 4 * 4);
  const int64_t tasks = (rows + per - 1) / per;
  auto task = [&](int64_t i, int) { fn(i * per, std::min(rows, (i + 1) * per)); };
  if (pool && tasks > 1) pool->parallel_for(tasks, task);
  else for (int64_t i = 0; i < tasks; ++i) task(i, 0);
}

template <typename F>
void for_columns(int64_t T, ThreadPool* pool, F&& fn) {
  if (pool && T >= 8) pool->parallel_for(T, [&](int64_t t, int) { fn(t); });
  else for (int64_t t = 0; t < T; ++t) fn(t);
}

void matmul_scalar(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy,
                   KernelContext& ctx) {
  const GgmlType act_type = traits(W.type).vec_dot_type;
  const size_t act_row = (activation_bytes(act_type, W.cols) + 63) / 64 * 64;
  auto* act = static_cast<uint8_t*>(ctx.acts.get(act_row * static_cast<size_t>(T)));
  for_columns(T, ctx.pool, [&](int64_t t) { quantize_activation(act_type, X + t * ldx, act + t * act_row, W.cols); });
  for_row_ranges(W.rows, T, ctx.pool, [&](int64_t r0, int64_t r1) {
    for (int64_t o = r0; o < r1; ++o)
      for (int64_t t = 0; t < T; ++t) Y[t * ldy + o] = vec_dot_ref(W.type, W.cols, W.row(o), act + t * act_row);
  });
}

// Converts the T activation rows for the AVX-512 kernels and runs them over row ranges
// and groups of up to 8 columns.
void matmul_avx512(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy,
                   KernelContext& ctx) {
  const int64_t n = W.cols;
  auto run = [&](auto views, auto kernel) {
    for_row_ranges(W.rows, T, ctx.pool, [&](int64_t r0, int64_t r1) {
      for (int64_t c0 = 0; c0 < T; c0 += kCols) {
        const int nc = static_cast<int>(std::min<int64_t>(kCols, T - c0));
        kernel(W.data, W.row_stride, n, r0, r1, views + c0, nc, Y + c0 * ldy, ldy);
      }
    });
  };
  switch (W.type) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0: {
      const PairLayout layout = W.type == GgmlType::Q4_0 ? PairLayout::kQ8Pairs : PairLayout::kQ8PairsU;
      const size_t row = q8_pairs_bytes(n, layout);
      auto* buf = static_cast<uint8_t*>(ctx.acts.get(row * static_cast<size_t>(T)));
      auto* views = ctx.ptrs.get_as<Q8PairsView>(static_cast<size_t>(T));
      for_columns(T, ctx.pool, [&](int64_t t) { views[t] = pack_q8_pairs(X + t * ldx, n, layout, buf + t * row); });
      if (W.type == GgmlType::Q4_0) run(static_cast<const Q8PairsView*>(views), avx512::rows_q4_0);
      else run(static_cast<const Q8PairsView*>(views), avx512::rows_q8_0);
      return;
    }
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: {
      const size_t row = (row_bytes(GgmlType::Q8_K, n) + 63) / 64 * 64;
      auto* buf = static_cast<uint8_t*>(ctx.acts.get(row * static_cast<size_t>(T)));
      auto* views = ctx.ptrs.get_as<const BlockQ8_K*>(static_cast<size_t>(T));
      for_columns(T, ctx.pool, [&](int64_t t) {
        quantize_activation(GgmlType::Q8_K, X + t * ldx, buf + t * row, n);
        views[t] = reinterpret_cast<const BlockQ8_K*>(buf + t * row);
      });
      if (W.type == GgmlType::Q4_K) run(static_cast<const BlockQ8_K* const*>(views), avx512::rows_q4_K);
      else run(static_cast<const BlockQ8_K* const*>(views), avx512::rows_q6_K);
      return;
    }
    case GgmlType::F32: {
      auto* views = ctx.ptrs.get_as<const float*>(static_cast<size_t>(T));
      for (int64_t t = 0; t < T; ++t) views[t] = X + t * ldx;
      run(static_cast<const float* const*>(views), avx512::rows_f32);
      return;
    }
    case GgmlType::F16: {
      const size_t row = (static_cast<size_t>(n) * 2 + 63) / 64 * 64;
      auto* buf = static_cast<uint8_t*>(ctx.acts.get(row * static_cast<size_t>(T)));
      auto* views = ctx.ptrs.get_as<const uint16_t*>(static_cast<size_t>(T));
      for_columns(T, ctx.pool, [&](int64_t t) {
        quantize_activation(GgmlType::F16, X + t * ldx, buf + t * row, n);
        views[t] = reinterpret_cast<const uint16_t*>(buf + t * row);
      });
      run(static_cast<const uint16_t* const*>(views), avx512::rows_f16);
      return;
    }
    default:
      matmul_scalar(W, X, ldx, T, Y, ldy, ctx);
  }
}

// AMX from one full tile of tokens on (A tiles hold 16 tokens; fewer would be mostly
// padding). At T = 16 AMX already takes half the AVX-512 time (1024→3584 Q4_0, one
// thread), so the crossover lies lower; below 16 the column-shared AVX-512 kernels run.
constexpr int64_t kAmxMinCols = amx::kTileCols;

bool amx_has_kernel(GgmlType t) { return t == GgmlType::Q4_0 || t == GgmlType::Q8_0; }

// Q4_0 / Q8_0 GEMM on AMX tiles: activations quantized once into A tiles, then tasks of
// amx::kPanelRows weight rows, each unpacking its panel once (into its thread's slice of
// the scratch) and applying it to every group of 16 tokens.
void matmul_amx(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy,
                KernelContext& ctx) {
  const int64_t n = W.cols;
  const int threads = ctx.pool ? ctx.pool->size() : 1;
  const size_t act_bytes = (amx::q8_tiles_bytes(n, T) + 63) / 64 * 64;
  const size_t panel_bytes = (amx::panel_bytes(n) + 63) / 64 * 64;
  auto* buf = static_cast<uint8_t*>(ctx.acts.get(act_bytes + panel_bytes * static_cast<size_t>(threads)));
  for_columns(T, ctx.pool, [&](int64_t t) { amx::pack_q8_tile_column(X + t * ldx, n, T, t, buf); });
  amx::pad_q8_tiles(n, T, buf);
  auto* gemm = W.type == GgmlType::Q4_0 ? amx::gemm_q4_0 : amx::gemm_q8_0;
  const int64_t tasks = (W.rows + amx::kPanelRows - 1) / amx::kPanelRows;
  auto task = [&](int64_t i, int thread) {
    const int64_t r0 = i * amx::kPanelRows, r1 = std::min(W.rows, r0 + amx::kPanelRows);
    gemm(W.data, W.row_stride, n, W.rows, r0, r1, buf, T, Y, ldy,
         buf + act_bytes + panel_bytes * static_cast<size_t>(thread));
  };
  if (ctx.pool && tasks > 1) ctx.pool->parallel_for(tasks, task);
  else for (int64_t i = 0; i < tasks; ++i) task(i, 0);
}

}  // namespace

bool matmul_has_fast_kernel(GgmlType t) {
  if (active_cpu_tier() < CpuTier::Avx512Vnni) return false;
  switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q8_0: case GgmlType::Q4_K: case GgmlType::Q6_K:
    case GgmlType::F32: case GgmlType::F16:
      return true;
    default:
      return false;
  }
}

void matmul(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy, KernelContext& ctx) {
  if (T >= kAmxMinCols && active_cpu_tier() >= CpuTier::Amx && amx_has_kernel(W.type))
    matmul_amx(W, X, ldx, T, Y, ldy, ctx);
  else if (matmul_has_fast_kernel(W.type)) matmul_avx512(W, X, ldx, T, Y, ldy, ctx);
  else matmul_scalar(W, X, ldx, T, Y, ldy, ctx);
}

void matmul_ref(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy) {
  const GgmlType act_type = traits(W.type).vec_dot_type;
  std::vector<uint8_t> act(activation_bytes(act_type, W.cols));
  for (int64_t t = 0; t < T; ++t) {
    quantize_activation(act_type, X + t * ldx, act.data(), W.cols);
    for (int64_t o = 0; o < W.rows; ++o) Y[t * ldy + o] = vec_dot_ref(W.type, W.cols, W.row(o), act.data());
  }
}

}  // namespace tandem::kernels
