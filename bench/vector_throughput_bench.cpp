// How many 512-bit vector operations per nanosecond a core of this machine retires, per kind
// (Google Benchmark). The verification pass of speculative decoding (1 + 3 tokens) is
// arithmetic-bound where a decode step streams memory, so its cost over a decode step is its
// extra operation count divided by this rate (bench/history/2026-11-30-xeon-amx.md, issue 7).
//
//   VectorOps/<op>:        12 independent chains of one operation (no chain waits on its own
//                          latency: the rate is the issue rate of the units that run it);
//   VectorOps/<op>+<op2>:  the two interleaved, 12 chains each: if they run on different
//                          units, a pair costs about as much as the slower one alone;
//   ScalarAdds:            4 independent 64-bit adds per step, for scale.
// One thread; counter ops/ns.
//
// Needs AVX-512 (F, VNNI); without it every case is skipped with a message.
// Run: tandem_bench_vector_throughput --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu_features.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own reduction
// intrinsic (_mm512_reduce_add_epi32), as in the kernels' AVX-512 files.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

using namespace tandem;

constexpr int kChains = 12;  // run_chains spells out 12
constexpr int64_t kSteps = 1 << 20;  // steps per iteration: kChains ops (or pairs) each

enum Op { Add, Dpbusd, Fma, Mullo };

template <Op op>
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline __m512i apply(__m512i x, __m512i b,
                                                                                          __m512i c) {
  if constexpr (op == Add) return _mm512_add_epi32(x, b);
  if constexpr (op == Dpbusd) return _mm512_dpbusd_epi32(x, b, c);
  if constexpr (op == Mullo) return _mm512_mullo_epi32(x, b);
  return _mm512_castps_si512(
      _mm512_fmadd_ps(_mm512_castsi512_ps(x), _mm512_castsi512_ps(b), _mm512_castsi512_ps(c)));
}

// Returns a value derived from every chain so that none is dead. The chains are named
// variables, not an array, so that they live in registers (an array bound to an asm operand
// goes to the stack, and the loop would measure loads and stores).
template <Op a, Op b, bool pair>
__attribute__((target("avx512f,avx512bw,avx512vnni"), noinline)) int64_t run_chains(int64_t steps) {
  const __m512i p = _mm512_set1_epi32(0x01010101), q = _mm512_set1_epi32(0x3F800000);
#define TANDEM_CHAIN_DECL(i) __m512i x##i = _mm512_set1_epi32(i), y##i = _mm512_set1_epi32(i + 1);
#define TANDEM_CHAIN_STEP(i)                          \
  x##i = apply<a>(x##i, p, q);                        \
  if constexpr (pair) y##i = apply<b>(y##i, p, q);    \
  __asm__ volatile("" : "+v"(x##i), "+v"(y##i));
#define TANDEM_CHAINS(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)
  TANDEM_CHAINS(TANDEM_CHAIN_DECL)
  for (int64_t s = 0; s < steps; ++s) {
    // The asm statement keeps each operation as written (no folding across steps) and emits
    // no instruction.
    TANDEM_CHAINS(TANDEM_CHAIN_STEP)
  }
  __m512i r = _mm512_setzero_si512();
#define TANDEM_CHAIN_FOLD(i) r = _mm512_xor_si512(r, _mm512_xor_si512(x##i, y##i));
  TANDEM_CHAINS(TANDEM_CHAIN_FOLD)
#undef TANDEM_CHAIN_DECL
#undef TANDEM_CHAIN_STEP
#undef TANDEM_CHAIN_FOLD
#undef TANDEM_CHAINS
  return _mm512_reduce_add_epi32(r);
}

template <Op a, Op b, bool pair>
void VectorOps(benchmark::State& st) {
  const CpuFeatures& f = cpu_features();
  if (!f.avx512f || !f.avx512bw || !f.avx512vnni) {
    st.SkipWithError("needs AVX-512 F and VNNI");
    return;
  }
  int64_t sink = 0;
  for (auto _ : st) sink += run_chains<a, b, pair>(kSteps);
  benchmark::DoNotOptimize(sink);
  const double ops = static_cast<double>(kSteps) * kChains * (pair ? 2 : 1);
  st.counters["ops/ns"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void ScalarAdds(benchmark::State& st) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (auto _ : st) {
    for (int64_t s = 0; s < kSteps; ++s)
      __asm__ volatile("add $1, %0\n\tadd $1, %1\n\tadd $1, %2\n\tadd $1, %3" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
  }
  benchmark::DoNotOptimize(a + b + c + d);
  st.counters["ops/ns"] =
      benchmark::Counter(static_cast<double>(kSteps) * 4 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

#define TANDEM_VECTOR_CASE(name, a, b, pair) \
  BENCHMARK(VectorOps<a, b, pair>)->Name("VectorOps/" name)->Unit(benchmark::kMillisecond)->UseRealTime()

TANDEM_VECTOR_CASE("vpaddd", Add, Add, false);
TANDEM_VECTOR_CASE("vpdpbusd", Dpbusd, Dpbusd, false);
TANDEM_VECTOR_CASE("vfmadd", Fma, Fma, false);
TANDEM_VECTOR_CASE("vpmulld", Mullo, Mullo, false);
TANDEM_VECTOR_CASE("vpdpbusd+vpaddd", Dpbusd, Add, true);
TANDEM_VECTOR_CASE("vpdpbusd+vfmadd", Dpbusd, Fma, true);
BENCHMARK(ScalarAdds)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
