// Prefill GEMM throughput per CPU tier, and the in-cache int8 ceilings to compare it with.
//
//   ninja -C build tandem_bench_matmul && ./build/tandem_bench_matmul [--benchmark_filter=...]
//
// BM_Gemm/<shape>/<type>/<tier>/<threads>/<T>: T = 512 tokens (and 16..128 for one shape) through one projection at
// Qwen3.5-0.8B shapes (0: 1024→6144 GDN qkv, 1: 1024→3584 FFN up, 2: 3584→1024 FFN down),
// Q4_0 or Q8_0 weights (type 0, 1; unpacked), or Q4_K / Q6_K (type 2, 3; packed at load as a model does),
// on the tier of the kernel context (2 = avx512, 3 = amx). The time
// includes quantizing the activations, as in the model. Counter MAC/s = 512·rows·cols / s.
// BM_PeakAmxInt8/<k bytes>: back-to-back TDPBSSD on resident tiles (K = 64: the full
// tile, K = 32: one ggml block per product, what the GEMM uses); BM_PeakVnniInt8:
// back-to-back VPDPBUSD zmm. One thread each.
// Rates are per CPU-second (process CPU time, all threads): on a shared, loaded machine
// that is the per-core throughput; the Time column is wall time.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "gguf/quants.h"
#include "kernels/matmul/matmul.h"
#include "kernels/matmul/matmul_amx.h"
#include "kernels/matmul/weight_pack.h"
#include "runtime/cpu_features.h"

namespace {

using tandem::CpuTier;
using tandem::GgmlType;

constexpr int64_t kTokens = 512;

struct Shape {
  const char* name;
  int64_t cols, rows;
};
constexpr Shape kShapes[] = {{"gdn_qkv_1024x6144", 1024, 6144},
                             {"ffn_up_1024x3584", 1024, 3584},
                             {"ffn_down_3584x1024", 3584, 1024}};

struct Problem {
  std::vector<uint8_t> w;
  tandem::kernels::PackedWeights packed;  // Q4_K: its 16-row groups, as a loaded model has them
  std::vector<float> x, y;
  tandem::kernels::WeightMatrix W;
};

// Random weights and activations, built once per (shape, type).
const Problem& problem(int shape, GgmlType type) {
  static std::unique_ptr<Problem> cache[3][4];
  auto& slot = cache[shape][type == GgmlType::Q8_0 ? 1 : type == GgmlType::Q4_K ? 2 : type == GgmlType::Q6_K ? 3 : 0];
  if (!slot) {
    const Shape s = kShapes[shape];
    auto p = std::make_unique<Problem>();
    std::mt19937 rng(42 + shape);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const size_t rb = tandem::row_bytes(type, s.cols);
    p->w.resize(rb * s.rows);
    std::vector<float> row(s.cols);
    for (int64_t r = 0; r < s.rows; ++r) {
      for (auto& v : row) v = nd(rng) / 32.0f;
      tandem::quantize_row(type, row.data(), p->w.data() + r * rb, s.cols);
    }
    p->x.resize(kTokens * s.cols);
    for (auto& v : p->x) v = nd(rng);
    p->y.resize(kTokens * s.rows);
    p->W = {type, s.cols, s.rows, p->w.data(), rb};
    if (type == GgmlType::Q4_K || type == GgmlType::Q6_K) p->packed.pack(p->W);
    slot = std::move(p);
  }
  return *slot;
}

void BM_Gemm(benchmark::State& state) {
  const int64_t tokens = state.range(4);
  const int shape = static_cast<int>(state.range(0));
  constexpr GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K};
  const GgmlType type = kTypes[state.range(1)];
  const auto tier = static_cast<CpuTier>(state.range(2));
  const int threads = static_cast<int>(state.range(3));
  if (tier > tandem::cpu_features().best_tier()) {
    state.SkipWithError("tier not available on this machine");
    return;
  }
  const Problem& p0 = problem(shape, type);
  auto& p = const_cast<Problem&>(p0);
  tandem::ThreadPool pool(threads);
  tandem::kernels::KernelContext ctx(tier);
  ctx.pool = threads > 1 ? &pool : nullptr;
  for (auto _ : state) {
    tandem::kernels::matmul(p.W, p.x.data(), p.W.cols, tokens, p.y.data(), p.W.rows, ctx);
    benchmark::DoNotOptimize(p.y.data());
    benchmark::ClobberMemory();
  }
  const double macs = double(tokens) * double(p.W.rows) * double(p.W.cols);
  state.counters["MAC/s"] = benchmark::Counter(macs * double(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(kShapes[shape].name) + " " + tandem::ggml_type_name(type) + " " +
                 tandem::cpu_tier_name(tier) + " threads=" + std::to_string(threads) + " T=" + std::to_string(tokens));
}
constexpr int kAvx512 = static_cast<int>(CpuTier::Avx512Vnni), kAmx = static_cast<int>(CpuTier::Amx);
BENCHMARK(BM_Gemm)
    ->ArgsProduct({{0, 1, 2}, {0, 1}, {kAvx512, kAmx}, {1, 2}, {kTokens}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
// Packed Q4_K / Q6_K (type 2, 3): the vector units (avx512) against the tiles (amx), one thread.
BENCHMARK(BM_Gemm)
    ->ArgsProduct({{1, 2}, {2, 3}, {kAvx512, kAmx}, {1}, {kTokens}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
// Short prefill chunks (where AMX starts to pay: the dispatch threshold in matmul.cpp).
BENCHMARK(BM_Gemm)
    ->ArgsProduct({{1}, {0, 2, 3}, {kAvx512, kAmx}, {1}, {8, 16, 24, 32, 64, 128}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

void BM_PeakAmxInt8(benchmark::State& state) {
  if (tandem::cpu_features().best_tier() < CpuTier::Amx) {
    state.SkipWithError("no AMX-INT8 on this machine");
    return;
  }
  const int k = static_cast<int>(state.range(0));
  int64_t macs = 0;
  for (auto _ : state) macs += tandem::kernels::amx::peak_amx_int8(1 << 18, k);
  state.counters["MAC/s"] = benchmark::Counter(double(macs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeakAmxInt8)->Arg(64)->Arg(32)->Unit(benchmark::kMillisecond);

void BM_PeakVnniInt8(benchmark::State& state) {
  if (tandem::cpu_features().best_tier() < CpuTier::Avx512Vnni) {
    state.SkipWithError("no AVX-512 VNNI on this machine");
    return;
  }
  int64_t macs = 0;
  for (auto _ : state) macs += tandem::kernels::amx::peak_vnni_int8(1 << 20);
  state.counters["MAC/s"] = benchmark::Counter(double(macs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeakVnniInt8)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
