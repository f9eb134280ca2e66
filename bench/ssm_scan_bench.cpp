// Mamba2 selective scan on one Granite-4.0-H-Micro layer (H 64, P 64, ds 128, ng 1; state 2 MiB),
// one thread (Google Benchmark): the per-token scan (ssm_scan) against the chunked SSD form
// (ssm_scan_chunked) for T = 1 (a decode step), 8, 16, 32, 64 and 512 tokens per call, on each tier this
// machine has (Scalar: the references). Counter: tok/s. The figures set ssm_scan_prefers_chunked
// (ssm_scan.cpp).
//  * PerToken/<tier>/<T>
//  * Chunked/<tier>/<T>/<chunk>
// Run: tandem_bench_ssm_scan --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/ssm_scan/ssm_scan.h"
#include "runtime/cpu_features.h"

namespace {

using namespace tandem;
using namespace tandem::kernels;

constexpr int kH = 64, kP = 64, kDs = 128, kNg = 1;
constexpr int64_t kMaxT = 512;
constexpr int64_t kRow = static_cast<int64_t>(kH) * kP + 2 * kNg * kDs;  // x | B | C, as the conv writes them

struct Layer {
  std::vector<float> xbc, dt, dt_bias, A, D, y, state;
  SsmScanInput in;
};

// Inputs as the model has them: SiLU'd conv outputs, A = -U(1, 16), dt bias = softplus⁻¹ of a
// log-uniform dt in [1e-3, 0.1] (Mamba2's init), raw dt ~ N(0, 0.5²).
Layer& layer() {
  static Layer L = [] {
    Layer l;
    std::mt19937 rng(42);
    std::normal_distribution<float> nd;
    std::uniform_real_distribution<float> u01(0.0f, 1.0f);
    l.xbc.resize(kMaxT * kRow);
    for (auto& v : l.xbc) {
      const float u = nd(rng);
      v = u / (1.0f + std::exp(-u));
    }
    l.dt.resize(kMaxT * kH);
    for (auto& v : l.dt) v = 0.5f * nd(rng);
    for (int h = 0; h < kH; ++h) {
      const double dt0 = std::exp(std::log(1e-3) + u01(rng) * (std::log(1e-1) - std::log(1e-3)));
      l.dt_bias.push_back(static_cast<float>(dt0 + std::log(-std::expm1(-dt0))));
      l.A.push_back(-(1.0f + 15.0f * u01(rng)));
      l.D.push_back(1.0f);
    }
    l.y.resize(kMaxT * kH * kP);
    l.state.resize(static_cast<size_t>(kH) * kP * kDs);
    for (auto& v : l.state) v = 0.1f * nd(rng);
    l.in.H = kH;
    l.in.P = kP;
    l.in.ds = kDs;
    l.in.ng = kNg;
    l.in.x = l.xbc.data();
    l.in.ldx = kRow;
    l.in.B = l.xbc.data() + kH * kP;
    l.in.C = l.in.B + kNg * kDs;
    l.in.ldbc = kRow;
    l.in.dt = l.dt.data();
    l.in.lddt = kH;
    l.in.dt_bias = l.dt_bias.data();
    l.in.A = l.A.data();
    l.in.D = l.D.data();
    l.in.y = l.y.data();
    l.in.ldy = kH * kP;
    return l;
  }();
  return L;
}

// The state is not reset between iterations: it stays bounded (decays < 1, bounded inputs).
template <typename F>
void run(benchmark::State& st, CpuTier tier, int64_t T, F&& body) {
  if (tier > cpu_features().best_tier()) {
    st.SkipWithError("tier not available on this CPU");
    return;
  }
  Layer& L = layer();
  SsmScanInput in = L.in;
  in.T = T;
  for (auto _ : st) {
    body(in, L.state.data());
    benchmark::DoNotOptimize(L.y.data());
    benchmark::ClobberMemory();
  }
  st.counters["tok/s"] = benchmark::Counter(static_cast<double>(T), benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(std::string(cpu_tier_name(tier)) + (ssm_scan_prefers_chunked(tier, in) ? " prefers chunked" : ""));
}

void BM_PerToken(benchmark::State& st) {
  const CpuTier tier = static_cast<CpuTier>(st.range(0));
  run(st, tier, st.range(1), [&](const SsmScanInput& in, float* S) { ssm_scan(tier, in, S); });
}
void BM_Chunked(benchmark::State& st) {
  const CpuTier tier = static_cast<CpuTier>(st.range(0));
  const int chunk = static_cast<int>(st.range(2));
  run(st, tier, st.range(1), [&](const SsmScanInput& in, float* S) { ssm_scan_chunked(tier, in, S, chunk); });
}

void args_per_token(benchmark::internal::Benchmark* b) {
  b->ArgNames({"tier", "T"});
  for (int tier = 0; tier <= static_cast<int>(CpuTier::Amx); ++tier)
    for (int64_t T : {1, 8, 16, 32, 64, 512}) b->Args({tier, T});
}
void args_chunked(benchmark::internal::Benchmark* b) {
  b->ArgNames({"tier", "T", "chunk"});
  for (int tier = 0; tier <= static_cast<int>(CpuTier::Amx); ++tier)
    for (int64_t T : {1, 8, 16, 32, 64, 512})
      for (int64_t chunk : {32, 64, 128}) b->Args({tier, T, chunk});
}

BENCHMARK(BM_PerToken)->Name("PerToken")->Apply(args_per_token)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Chunked)->Name("Chunked")->Apply(args_chunked)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
