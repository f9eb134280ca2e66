// Decode-path ceilings and kernels (Google Benchmark):
//  * ReadBandwidth: this machine's memory read rate with the same thread count, the
//    floor every decode step is measured against;
//  * Gemv_<type>[_packed[_tiles]]/<T>: T = 1 (decode) and 2, 4, 8 columns (the
//    column-shared speculative-verification product) against a weight matrix larger than
//    the L3 (so weights stream from memory, as in decode), reported as GB/s of weights;
//    time(4)/time(1) is the ratio. _packed: the load-time 16-row copy as the model
//    multiplies it (Q4_K / Q6_K: the 16-row interleaves of
//    matmul_kquant_vnni.h, against the ggml-row kernels in Gemv_Q4_K / Gemv_Q6_K); _tiles: the
//    same on the AMX tiles for every T; _ffn: a 2-3 MiB matrix in cache (_scalar: on the
//    scalar reference tier);
//  * Attention_rows/<rows>: one KV head's attention for a decode step (4 rows) and for a 1+3
//    verification (16 rows).
// Run: tandem_bench_gemv --benchmark_counters_tabular=true  (bench/run does this).
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "gguf/quants.h"
#include "kernels/attention/attention.h"
#include "kernels/matmul/matmul.h"
#include "kernels/matmul/weight_pack.h"
#include "runtime/cpu_features.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"

namespace {

using namespace tandem;
using namespace tandem::kernels;

constexpr int kThreads = 2;
constexpr size_t kBigBytes = size_t{2048} << 20;  // ~7x the 300 MiB L3: no share of it can stay cached

ThreadPool& pool() {
  static ThreadPool p(kThreads);
  return p;
}

// Random but valid blocks: random code bytes, block scales set to a small normal fp16.
struct BigMatrix {
  std::vector<uint8_t> data;
  WeightMatrix w;
  PackedWeights packed;  // the 16-row packed copy (the *_packed benchmarks)
};

BigMatrix make_matrix(GgmlType type, int64_t cols, size_t bytes) {
  BigMatrix m;
  const size_t rb = row_bytes(type, cols);
  const int64_t rows = static_cast<int64_t>(bytes / rb) / 4 * 4;
  m.data.resize(rb * static_cast<size_t>(rows));
  std::mt19937_64 rng(7);
  for (size_t i = 0; i + 8 <= m.data.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(&m.data[i], &v, 8);
  }
  const uint16_t d = fp32_to_fp16(0.01f);
  const size_t bb = traits(type).block_bytes;
  for (size_t off = 0; off < m.data.size(); off += bb) {
    uint8_t* b = &m.data[off];
    switch (type) {
      case GgmlType::Q4_0: case GgmlType::Q8_0: std::memcpy(b, &d, 2); break;
      case GgmlType::Q4_K: std::memcpy(b, &d, 2); std::memcpy(b + 2, &d, 2); break;
      case GgmlType::Q6_K: std::memcpy(b + 208, &d, 2); break;
      default: break;
    }
  }
  m.w = WeightMatrix{type, cols, rows, m.data.data(), rb};
  return m;
}

// The memory's line-fetch rate: one 8-byte load per 64-byte line (the core fetches the whole
// line; summing every float instead makes the probe compute-bound on a 2.1 GHz core and
// understates the memory), eight independent sums, software prefetch 2 KiB ahead.
void ReadBandwidth(benchmark::State& state) {
  static std::vector<uint64_t> buf(kBigBytes / sizeof(uint64_t), 1);
  std::vector<uint64_t> partial(kThreads);
  for (auto _ : state) {
    const int64_t chunks = kThreads * 16;
    const size_t per = buf.size() / chunks;
    pool().parallel_for(chunks, [&](int64_t c, int t) {
      const uint64_t* p = buf.data() + c * per;
      uint64_t s[8] = {};
      for (size_t i = 0; i + 64 <= per; i += 64) {  // 8 lines per round
        __builtin_prefetch(p + i + 256);
        __builtin_prefetch(p + i + 264);
        __builtin_prefetch(p + i + 272);
        __builtin_prefetch(p + i + 280);
        __builtin_prefetch(p + i + 288);
        __builtin_prefetch(p + i + 296);
        __builtin_prefetch(p + i + 304);
        __builtin_prefetch(p + i + 312);
        for (int l = 0; l < 8; ++l) s[l] += p[i + 8 * l];
      }
      partial[t] += s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
    });
    benchmark::DoNotOptimize(partial.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(kBigBytes) * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(ReadBandwidth)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);

// packed: multiply the packed copy as a model loaded on this machine does (Amx tier: 1..4
// tokens on the vector units, more on the tiles; avx512 tier: every T on the vector units).
// on_tiles: every T on the tiles (Amx tier; the path the vector units replaced, side by side).
// bytes: the matrix size (default: far beyond the caches). tier: the kernel context's (default:
// the one a model loads with, TANDEM_CPU_PATH honoured).
void run_columns(benchmark::State& state, GgmlType type, int64_t cols, bool packed = false, bool on_tiles = false,
                 size_t bytes = kBigBytes, CpuTier tier = default_cpu_tier()) {
  static std::map<std::tuple<int, int64_t, size_t>, std::unique_ptr<BigMatrix>> cache;
  auto& m = cache[{static_cast<int>(type), cols, bytes}];
  if (!m) m = std::make_unique<BigMatrix>(make_matrix(type, cols, bytes));
  WeightMatrix w = m->w;
  if (packed) {
    if (!m->w.packed) m->packed.pack(m->w);
    w = m->w;
  } else {
    w.packed = nullptr;
  }
  const int64_t T = state.range(0);
  std::vector<float> x(static_cast<size_t>(T * cols)), y(static_cast<size_t>(T * m->w.rows));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (auto& v : x) v = nd(rng);
  KernelContext ctx(tier);
  ctx.pool = &pool();
  ctx.packed_few_tokens_on_vector_units = !on_tiles;
  for (auto _ : state) {
    matmul(w, x.data(), cols, T, y.data(), w.rows, ctx);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(m->data.size()) * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
  state.SetLabel(std::string(ggml_type_name(type)) + " " + cpu_tier_name(ctx.tier) +
                 (packed ? on_tiles ? " packed, tiles" : " packed" : ""));
}

void Gemv_Q4_0(benchmark::State& s) { run_columns(s, GgmlType::Q4_0, 2560); }
void Gemv_Q8_0(benchmark::State& s) { run_columns(s, GgmlType::Q8_0, 2560); }
void Gemv_Q4_0_packed(benchmark::State& s) { run_columns(s, GgmlType::Q4_0, 2560, true); }
void Gemv_Q8_0_packed(benchmark::State& s) { run_columns(s, GgmlType::Q8_0, 2560, true); }
void Gemv_Q4_0_packed_tiles(benchmark::State& s) { run_columns(s, GgmlType::Q4_0, 2560, true, true); }
void Gemv_Q8_0_packed_tiles(benchmark::State& s) { run_columns(s, GgmlType::Q8_0, 2560, true, true); }
// A 0.8B model's FFN matrix (3584 rows of 1024, 2 MiB), resident in cache across calls as
// a decode step's weights partly are on this machine: the compute side of the two paths.
constexpr size_t kFfnBytes = 3584 * 576;
void Gemv_Q4_0_packed_ffn(benchmark::State& s) { run_columns(s, GgmlType::Q4_0, 1024, true, false, kFfnBytes); }
void Gemv_Q4_0_packed_ffn_tiles(benchmark::State& s) { run_columns(s, GgmlType::Q4_0, 1024, true, true, kFfnBytes); }
void Gemv_Q4_K(benchmark::State& s) { run_columns(s, GgmlType::Q4_K, 2560); }
void Gemv_Q4_K_packed(benchmark::State& s) { run_columns(s, GgmlType::Q4_K, 2560, true); }
// Q5_K (the bulk of a Q5_K_M file): the same 0.8B FFN shape in cache, the row kernel, the packed
// groups (matmul_kquant_vnni.h) and the scalar reference it ran on before, side by side.
constexpr size_t kFfnQ5KBytes = 3584 * 704;
void Gemv_Q5_K_ffn(benchmark::State& s) { run_columns(s, GgmlType::Q5_K, 1024, false, false, kFfnQ5KBytes); }
void Gemv_Q5_K_ffn_packed(benchmark::State& s) { run_columns(s, GgmlType::Q5_K, 1024, true, false, kFfnQ5KBytes); }
void run_on_scalar_tier(benchmark::State& s, GgmlType type, size_t bytes);
void Gemv_Q5_K_ffn_scalar(benchmark::State& s) { run_on_scalar_tier(s, GgmlType::Q5_K, kFfnQ5KBytes); }
// The legacy Q5_0 / Q4_1 (AVX2 row kernels on every SIMD tier) beside the scalar reference, same shape.
void run_on_scalar_tier(benchmark::State& s, GgmlType type, size_t bytes) {
  run_columns(s, type, 1024, false, false, bytes, CpuTier::Scalar);
}
void Gemv_Q5_0_ffn(benchmark::State& s) { run_columns(s, GgmlType::Q5_0, 1024, false, false, 3584 * 704); }
void Gemv_Q5_0_ffn_scalar(benchmark::State& s) { run_on_scalar_tier(s, GgmlType::Q5_0, 3584 * 704); }
void Gemv_Q4_1_ffn(benchmark::State& s) { run_columns(s, GgmlType::Q4_1, 1024, false, false, 3584 * 640); }
void Gemv_Q4_1_ffn_scalar(benchmark::State& s) { run_on_scalar_tier(s, GgmlType::Q4_1, 3584 * 640); }
void Gemv_Q6_K(benchmark::State& s) { run_columns(s, GgmlType::Q6_K, 2560); }
void Gemv_Q6_K_packed(benchmark::State& s) { run_columns(s, GgmlType::Q6_K, 2560, true); }
// The head's arithmetic alone: a 3 MB slice of a 1024-wide Q6_K head (the 0.8B head's rows), in cache.
void Gemv_Q6_K_ffn_packed(benchmark::State& s) { run_columns(s, GgmlType::Q6_K, 1024, true, false, 3584 * 840); }
BENCHMARK(Gemv_Q4_0)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q8_0)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q4_0_packed)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q8_0_packed)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q4_0_packed_tiles)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q8_0_packed_tiles)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q4_0_packed_ffn)->Arg(1)->Arg(2)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(Gemv_Q4_0_packed_ffn_tiles)->Arg(1)->Arg(2)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(Gemv_Q4_K)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q4_K_packed)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q5_K_ffn)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(Gemv_Q5_K_ffn_packed)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(Gemv_Q5_K_ffn_scalar)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(Gemv_Q5_0_ffn)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(Gemv_Q5_0_ffn_scalar)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(Gemv_Q4_1_ffn)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(Gemv_Q4_1_ffn_scalar)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(Gemv_Q6_K)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q6_K_packed)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(Gemv_Q6_K_ffn_packed)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);

// Attention of the query rows that share one KV head (one task of a full-attention layer, on
// one thread), 0.8B shape: head_dim 256, 4 heads per KV head, 512 cached positions. 4 rows are
// a decode step's task, 16 a 1+3 verification's (4 tokens × 4 heads): time(16)/time(4) is
// what verification adds per attention layer.
void Attention_rows(benchmark::State& state) {
  constexpr int hd = 256, group = 4;
  constexpr int64_t kvd = 2 * hd, n_ctx = 512 + 4;
  const int n = static_cast<int>(state.range(0));
  std::vector<float> q(static_cast<size_t>(tandem::kernels::AttentionRows::kMax * hd)), out(q.size());
  std::vector<float> k(static_cast<size_t>(n_ctx * kvd)), v(k.size());
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (auto* vec : {&q, &k, &v})
    for (auto& x : *vec) x = nd(rng);
  tandem::kernels::AttentionRows rows;
  for (int r = 0; r < n; ++r) {
    rows.q[r] = q.data() + r * hd;
    rows.out[r] = out.data() + r * hd;
    rows.n_kv[r] = 512 + 1 + r / group;  // token t of the batch sees the 512 cached + t + 1
  }
  rows.n = n;
  ScratchBuffer scratch;
  const CpuTier tier = default_cpu_tier();
  for (auto _ : state) {
    attention_rows(tier, rows, hd, 0.0625f, k.data(), v.data(), kvd, scratch);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(cpu_tier_name(tier));
}
BENCHMARK(Attention_rows)->Arg(4)->Arg(16)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);

}  // namespace

BENCHMARK_MAIN();
