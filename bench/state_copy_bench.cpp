// A checkpoint of the recurrent state (SequenceState::save_recurrent), as the slots take them, at
// Granite-4.0-H-Micro's state (36 Mamba2 layers: a 2 MiB scan state and a 51 KiB conv window each,
// 73.8 MiB) and Qwen3.5-0.8B's (18 Gated DeltaNet layers: a 1 MiB delta-rule state and a 72 KiB conv window each):
//  * Fresh/<model>: into a new checkpoint each time (what a slot does while its checkpoints grow to
//    --ctx-checkpoints), allocation, first touch and release included;
//  * Reused/<model>: into the same checkpoint's buffer (a recycled one): the copy alone.
// Time per checkpoint; counters: the state's MiB, GB/s copied. TANDEM_HUGE_PAGES=0 puts the buffers on small pages
// (runtime/huge_pages.h), for the side-by-side figure in bench/RESULTS.md.
// Run: tandem_bench_state_copy --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdint>

#include "model/sequence_state.h"

namespace {

using namespace tandem;

SequenceLayout granite_h_micro() {
  SequenceLayout l;
  l.n_recurrent = 36;
  l.conv_floats = 3 * (64 * 64 + 2 * 128);  // (d_conv - 1) x (x | B | C)
  l.ssm_floats = 64 * 64 * 128;             // heads x head dim x d_state
  l.n_attention = 4;
  l.kv_dim = 8 * 128;
  return l;
}

SequenceLayout qwen35_0_8b() {
  SequenceLayout l;
  l.n_recurrent = 18;
  l.conv_floats = 3 * (2048 + 2 * 2048);  // (d_conv - 1) x (q | k | v)
  l.ssm_floats = 16 * 128 * 128;          // heads x d_k x d_v
  l.n_attention = 6;
  l.kv_dim = 2 * 256;
  return l;
}

void report(benchmark::State& st, const SequenceState& s) {
  const double bytes = static_cast<double>(s.recurrent_bytes());
  st.counters["MiB"] = bytes / (1 << 20);
  st.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void Fresh(benchmark::State& st, SequenceLayout layout) {
  SequenceState s(layout, 64);
  for (auto _ : st) {
    RecurrentCheckpoint cp;
    s.save_recurrent(cp);
    benchmark::DoNotOptimize(cp.data.data());
  }
  report(st, s);
}

void Reused(benchmark::State& st, SequenceLayout layout) {
  SequenceState s(layout, 64);
  RecurrentCheckpoint cp;
  s.save_recurrent(cp);
  for (auto _ : st) {
    s.save_recurrent(cp);
    benchmark::DoNotOptimize(cp.data.data());
  }
  report(st, s);
}

BENCHMARK_CAPTURE(Fresh, granite_h_micro, granite_h_micro())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(Reused, granite_h_micro, granite_h_micro())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(Fresh, qwen35_0_8b, qwen35_0_8b())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(Reused, qwen35_0_8b, qwen35_0_8b())->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
