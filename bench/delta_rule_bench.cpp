// Gated delta rule on one Qwen3.5-4B GDN layer (H_k 16, H_v 32, d 128) over a
// 512-token batch, one thread (Google Benchmark):
//  * Chunked/<impl>:   the prefill (matrix) path, chunks of 64;
//  * Recurrent/<impl>: the per-token path over the same batch;
// impl = fast (the body the best CPU tier dispatches to) or ref (the scalar
// reference). Counters: tok/s (tokens of the whole layer per second).
//  * Recurrent_steps/<T>: T = 1 (a decode step, in place) and 4 (a 1+3 verification pass,
//    from another buffer) tokens per call, as the model runs them; time per call.
// The ratio is Recurrent/fast time over Chunked/fast time (target >= 3).
// Run: tandem_bench_delta_rule --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/delta_rule/delta_rule.h"
#include "runtime/cache_aligned.h"
#include "runtime/cpu_features.h"
#include "runtime/scratch.h"

namespace {

using namespace tandem;
using namespace tandem::kernels;

constexpr int kHk = 16, kHv = 32, kD = 128;
constexpr int64_t kT = 512;

struct Layer {
  std::vector<float> qk, v, g, beta, out, state0, state;
  DeltaRuleInput in;
};

// Inputs shaped as in the model: q | k interleaved per token (row stride 2·H_k·d),
// L2-normalised heads, slow decays, β in (0, 1).
Layer& layer() {
  static Layer L = [] {
    Layer l;
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u11(-1.0f, 1.0f), ug(-1.0f, -1e-4f), ub(0.0f, 1.0f);
    const int64_t ldqk = 2 * kHk * kD;
    l.qk.resize(kT * ldqk);
    l.v.resize(kT * kHv * kD);
    l.g.resize(kT * kHv);
    l.beta.resize(kT * kHv);
    l.out.resize(kT * kHv * kD);
    l.state0.resize(static_cast<size_t>(kHv) * kD * kD);
    for (auto& x : l.qk) x = u11(rng);
    for (int64_t r = 0; r < kT * 2 * kHk; ++r) {
      float* p = &l.qk[r * kD];
      double s = 0;
      for (int i = 0; i < kD; ++i) s += double(p[i]) * p[i];
      for (int i = 0; i < kD; ++i) p[i] = static_cast<float>(p[i] / std::sqrt(s));
    }
    for (auto& x : l.v) x = u11(rng);
    for (auto& x : l.g) x = ug(rng);
    for (auto& x : l.beta) x = ub(rng);
    for (auto& x : l.state0) x = 0.1f * u11(rng);
    l.state = l.state0;
    l.in.H_k = kHk;
    l.in.H_v = kHv;
    l.in.d = kD;
    l.in.T = kT;
    l.in.q = l.qk.data();
    l.in.k = l.qk.data() + kHk * kD;
    l.in.ldqk = ldqk;
    l.in.v = l.v.data();
    l.in.ldv = kHv * kD;
    l.in.g = l.g.data();
    l.in.beta = l.beta.data();
    l.in.out = l.out.data();
    l.in.ldo = kHv * kD;
    return l;
  }();
  return L;
}

// The fast bodies run on the best tier the machine has (whatever TANDEM_CPU_PATH says).
CpuTier best() { return cpu_features().best_tier(); }

template <typename F>
void run(benchmark::State& st, F&& body) {
  Layer& L = layer();
  for (auto _ : st) {
    st.PauseTiming();
    L.state = L.state0;  // the same starting state every time (the state decays otherwise)
    st.ResumeTiming();
    body(L);
    benchmark::DoNotOptimize(L.out.data());
    benchmark::ClobberMemory();
  }
  st.counters["tok/s"] = benchmark::Counter(static_cast<double>(kT), benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(cpu_tier_name(cpu_features().best_tier()));
}

void BM_Chunked_fast(benchmark::State& st) {
  ScratchBuffer scratch;
  run(st, [&](Layer& L) { delta_rule_chunked(best(), L.in, L.state.data(), scratch); });
}
void BM_Chunked_ref(benchmark::State& st) {
  ScratchBuffer scratch;
  run(st, [&](Layer& L) { delta_rule_chunked_ref(L.in, L.state.data(), scratch); });
}
void BM_Recurrent_fast(benchmark::State& st) {
  run(st, [&](Layer& L) { delta_rule_recurrent(best(), L.in, L.state.data()); });
}
void BM_Recurrent_ref(benchmark::State& st) {
  run(st, [&](Layer& L) { delta_rule_recurrent_ref(L.in, L.state.data()); });
}

// A decode step or a verification pass, as the model runs them: T = 1 updates the state in
// place; T > 1 (a replay-log pass) reads the starting state from another buffer and writes the
// new one into a cache-line-aligned one (streaming stores), the layer's first T tokens.
void BM_Recurrent_steps(benchmark::State& st) {
  Layer& L = layer();
  DeltaRuleInput in = L.in;
  in.T = st.range(0);
  CacheAlignedVector<float> state(L.state0.begin(), L.state0.end());
  if (in.T > 1) in.state_in = L.state0.data();
  for (auto _ : st) {
    delta_rule_recurrent(best(), in, state.data());
    benchmark::DoNotOptimize(L.out.data());
    benchmark::ClobberMemory();
  }
  st.SetLabel(cpu_tier_name(cpu_features().best_tier()));
}

BENCHMARK(BM_Recurrent_steps)->Name("Recurrent_steps")->Arg(1)->Arg(4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Chunked_fast)->Name("Chunked/fast")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Recurrent_fast)->Name("Recurrent/fast")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Chunked_ref)->Name("Chunked/ref")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Recurrent_ref)->Name("Recurrent/ref")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
