// Chunked vs per-token delta rule, and the states they hand back, on random
// inputs with the distributions llama.cpp's own op tests use (spec §9): every
// CPU tier this machine has (fast bodies) against a float64 oracle and against
// the scalar references.
#include "kernels/delta_rule/delta_rule.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/kernel_test_support.h"
#include "kernels/norms/norms.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

struct DeltaCase {
  int H_k, H_v, d;
  int64_t T;
  std::vector<float> q, k, v, g, beta, state0;
};

DeltaCase make_case(int H_k, int H_v, int d, int64_t T, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u11(-1.0f, 1.0f), uv(-0.3f, 5.0f), ug(-20.0f, -1e-4f), ub(0.0f, 1.0f);
  DeltaCase c{H_k, H_v, d, T, {}, {}, {}, {}, {}, {}};
  c.q.resize(T * H_k * d);
  c.k.resize(T * H_k * d);
  c.v.resize(T * H_v * d);
  c.g.resize(T * H_v);
  c.beta.resize(T * H_v);
  c.state0.resize(static_cast<size_t>(H_v) * d * d);
  for (auto& x : c.q) x = u11(rng);
  for (auto& x : c.k) x = u11(rng);
  for (auto& x : c.v) x = uv(rng);
  for (auto& x : c.g) x = ug(rng) * 0.05f;  // mostly slow decays so the state matters
  for (auto& x : c.beta) x = ub(rng);
  for (auto& x : c.state0) x = u11(rng);
  for (int64_t t = 0; t < T * H_k; ++t) {
    l2_norm(default_cpu_tier(), &c.q[t * d], &c.q[t * d], d, 1e-6f);
    l2_norm(default_cpu_tier(), &c.k[t * d], &c.k[t * d], d, 1e-6f);
  }
  return c;
}

DeltaRuleInput input_of(DeltaCase& c, float* out) {
  DeltaRuleInput in;
  in.H_k = c.H_k;
  in.H_v = c.H_v;
  in.d = c.d;
  in.T = c.T;
  in.q = c.q.data();
  in.k = c.k.data();
  in.ldqk = static_cast<int64_t>(c.H_k) * c.d;
  in.v = c.v.data();
  in.ldv = static_cast<int64_t>(c.H_v) * c.d;
  in.g = c.g.data();
  in.beta = c.beta.data();
  in.out = out;
  in.ldo = static_cast<int64_t>(c.H_v) * c.d;
  return in;
}

// Plain double-precision oracle of spec §4.3 step 6, written independently of both kernels.
void oracle(const DeltaCase& c, std::vector<double>& S, std::vector<double>& out, std::vector<std::vector<double>>* states) {
  const int d = c.d;
  S.assign(c.state0.begin(), c.state0.end());
  out.assign(c.T * c.H_v * d, 0.0);
  for (int64_t t = 0; t < c.T; ++t) {
    for (int h = 0; h < c.H_v; ++h) {
      const int kh = h % c.H_k;
      const float* q = &c.q[(t * c.H_k + kh) * d];
      const float* k = &c.k[(t * c.H_k + kh) * d];
      const float* v = &c.v[(t * c.H_v + h) * d];
      double* Sh = &S[static_cast<size_t>(h) * d * d];
      const double decay = std::exp(static_cast<double>(c.g[t * c.H_v + h]));
      for (int x = 0; x < d * d; ++x) Sh[x] *= decay;
      for (int j = 0; j < d; ++j) {
        double kv = 0;
        for (int i = 0; i < d; ++i) kv += Sh[j * d + i] * k[i];
        const double delta = c.beta[t * c.H_v + h] * (v[j] - kv);
        for (int i = 0; i < d; ++i) Sh[j * d + i] += k[i] * delta;
        double o = 0;
        for (int i = 0; i < d; ++i) o += Sh[j * d + i] * q[i];
        out[(t * c.H_v + h) * d + j] = o / std::sqrt(static_cast<double>(d));
      }
    }
    if (states) states->push_back(S);
  }
}

// The oracle's outputs, final state and the state after every token.
struct OracleRun {
  std::vector<double> S, out;
  std::vector<std::vector<double>> states;
};
OracleRun run_oracle(const DeltaCase& c) {
  OracleRun r;
  oracle(c, r.S, r.out, &r.states);
  return r;
}

struct Shape {
  int H_k, H_v, d;
};

// d = 24 is not a multiple of 16: every tier runs the reference there.
const Shape kShapes[] = {{2, 4, 32}, {1, 3, 16}, {2, 2, 64}, {2, 4, 128}, {1, 2, 48}, {2, 2, 24}};

class DeltaRuleTest : public ::testing::TestWithParam<std::tuple<Shape, int64_t>> {};

TEST_P(DeltaRuleTest, ChunkedAndRecurrentMatchOracle) {
  const Shape sh = std::get<0>(GetParam());
  const int64_t T = std::get<1>(GetParam());
  DeltaCase c = make_case(sh.H_k, sh.H_v, sh.d, T, 1234u + static_cast<uint32_t>(T) + 7u * static_cast<uint32_t>(sh.d));
  std::vector<double> S_ref, o_ref;
  oracle(c, S_ref, o_ref, nullptr);

  // The scalar references, for the fast bodies to be compared with directly.
  std::vector<float> out_rr(c.T * c.H_v * c.d), out_cr(out_rr.size());
  std::vector<float> S_rr = c.state0, S_cr = c.state0;
  ScratchBuffer scratch;
  delta_rule_recurrent_ref(input_of(c, out_rr.data()), S_rr.data());
  delta_rule_chunked_ref(input_of(c, out_cr.data()), S_cr.data(), scratch);

  for (CpuTier tier : machine_tiers()) {
    SCOPED_TRACE(testing::Message() << "tier " << cpu_tier_name(tier) << ", d=" << sh.d << ", H_k=" << sh.H_k
                                    << ", H_v=" << sh.H_v << ", T=" << T);
    std::vector<float> out_r(c.T * c.H_v * c.d), out_c(out_r.size());
    std::vector<float> S_r = c.state0, S_c = c.state0;
    delta_rule_recurrent(tier, input_of(c, out_r.data()), S_r.data());
    delta_rule_chunked(tier, input_of(c, out_c.data()), S_c.data(), scratch);

    EXPECT_LE(rel_diff(out_r, o_ref), 1e-5) << "recurrent output";
    EXPECT_LE(rel_diff(S_r, S_ref), 1e-5) << "recurrent state";
    EXPECT_LE(rel_diff(out_c, o_ref), 1e-5) << "chunked output";
    EXPECT_LE(rel_diff(S_c, S_ref), 1e-5) << "chunked state";
    EXPECT_LE(rel_diff(out_c, out_r), 1e-5) << "chunked vs recurrent";
    EXPECT_LE(rel_diff(out_r, out_rr), 1e-5) << "recurrent vs its reference";
    EXPECT_LE(rel_diff(S_r, S_rr), 1e-5) << "recurrent state vs its reference";
    EXPECT_LE(rel_diff(out_c, out_cr), 1e-5) << "chunked vs its reference";
    EXPECT_LE(rel_diff(S_c, S_cr), 1e-5) << "chunked state vs its reference";
  }
}

INSTANTIATE_TEST_SUITE_P(Lengths, DeltaRuleTest,
                         ::testing::Combine(::testing::ValuesIn(kShapes), ::testing::Values(1, 3, 63, 64, 65, 200)),
                         [](const ::testing::TestParamInfo<DeltaRuleTest::ParamType>& info) {
                           const Shape sh = std::get<0>(info.param);
                           char name[64];
                           std::snprintf(name, sizeof name, "d%d_Hk%d_Hv%d_T%lld", sh.d, sh.H_k, sh.H_v,
                                         static_cast<long long>(std::get<1>(info.param)));
                           return std::string(name);
                         });

TEST(DeltaRule, ChunkedCutStatesEqualPerTokenStates) {
  for (const Shape& sh : kShapes) {
    DeltaCase c = make_case(sh.H_k, sh.H_v, sh.d, 150, 99u + static_cast<uint32_t>(sh.d));
    const OracleRun ref = run_oracle(c);
    const std::vector<int64_t> cuts = {0, 1, 37, 64, 64, 100, 129, 150};
    const int64_t sf = static_cast<int64_t>(c.H_v) * c.d * c.d;
    for (CpuTier tier : machine_tiers()) {
      SCOPED_TRACE(testing::Message() << "tier " << cpu_tier_name(tier) << ", d=" << sh.d);
      std::vector<float> cut_states(cuts.size() * sf), out(c.T * c.H_v * c.d), S = c.state0;
      ScratchBuffer scratch;
      delta_rule_chunked(tier, input_of(c, out.data()), S.data(), scratch, cuts.data(), static_cast<int>(cuts.size()),
                         cut_states.data());
      for (size_t i = 0; i < cuts.size(); ++i) {
        std::vector<float> got(cut_states.begin() + i * sf, cut_states.begin() + (i + 1) * sf);
        if (cuts[i] == 0)
          EXPECT_EQ(got, c.state0) << "cut at 0";
        else
          EXPECT_LE(rel_diff(got, ref.states[cuts[i] - 1]), 1e-5) << "cut at " << cuts[i];
      }
      EXPECT_LE(rel_diff(out, ref.out), 1e-5) << "outputs with cuts";
      EXPECT_LE(rel_diff(S, ref.S), 1e-5) << "final state with cuts";
    }
  }
}

TEST(DeltaRule, RecurrentSnapshotsAreThePerTokenStates) {
  for (const Shape& sh : kShapes) {
    DeltaCase c = make_case(sh.H_k, sh.H_v, sh.d, 9, 7u + static_cast<uint32_t>(sh.d));
    const OracleRun ref = run_oracle(c);
    const int64_t sf = static_cast<int64_t>(c.H_v) * c.d * c.d;
    const int64_t from = 5;
    for (CpuTier tier : machine_tiers()) {
      SCOPED_TRACE(testing::Message() << "tier " << cpu_tier_name(tier) << ", d=" << sh.d);
      std::vector<float> snaps((c.T - from) * sf), out(c.T * c.H_v * c.d), S = c.state0;
      delta_rule_recurrent(tier, input_of(c, out.data()), S.data(), snaps.data(), from);
      for (int64_t t = from; t < c.T; ++t) {
        std::vector<float> got(snaps.begin() + (t - from) * sf, snaps.begin() + (t - from + 1) * sf);
        EXPECT_LE(rel_diff(got, ref.states[t]), 1e-5) << "state after token " << t;
      }
      EXPECT_LE(rel_diff(out, ref.out), 1e-5) << "outputs with snapshots";

      // The same states through per-token destinations (snapshot_to), some tokens skipped:
      // bit for bit the contiguous snapshots, and untouched where no destination is given.
      std::vector<std::vector<float>> slots(c.T, std::vector<float>(sf, -7.0f));
      std::vector<float*> to(c.T, nullptr);
      for (int64_t t = 0; t < c.T; ++t)
        if (t >= from && t != c.T - 1) to[t] = slots[t].data();
      DeltaRuleInput in2 = input_of(c, out.data());
      in2.snapshot_to = to.data();
      std::vector<float> S2 = c.state0;
      delta_rule_recurrent(tier, in2, S2.data());
      EXPECT_EQ(S2, S) << "final state with snapshot_to";
      for (int64_t t = 0; t < c.T; ++t) {
        if (to[t]) {
          EXPECT_TRUE(std::equal(slots[t].begin(), slots[t].end(), snaps.begin() + (t - from) * sf))
              << "snapshot_to state after token " << t;
        } else {
          EXPECT_TRUE(std::all_of(slots[t].begin(), slots[t].end(), [](float x) { return x == -7.0f; }))
              << "token " << t << " has no destination but was written";
        }
      }
    }
  }
}

// A verification pass runs its tokens in one call; a decode step runs one token per call. The
// speculator's exactness rests on the two giving the same bits: outputs and final state of a
// batch (longer than the kernel's 64-token block too) equal token-by-token calls exactly.
TEST(DeltaRule, RecurrentBatchEqualsTokenByTokenBitForBit) {
  for (const Shape& sh : kShapes)
    for (int64_t T : {2, 4, 5, 67}) {
      DeltaCase c = make_case(sh.H_k, sh.H_v, sh.d, T, 77u + static_cast<uint32_t>(sh.d * T));
      const int64_t ld = static_cast<int64_t>(c.H_v) * c.d;
      for (CpuTier tier : machine_tiers()) {
        SCOPED_TRACE(testing::Message() << "tier " << cpu_tier_name(tier) << ", d=" << sh.d << ", T=" << T);
        std::vector<float> out_batch(T * ld), S_batch = c.state0;
        delta_rule_recurrent(tier, input_of(c, out_batch.data()), S_batch.data());
        std::vector<float> out_steps(T * ld, -5.0f), S_steps = c.state0;
        for (int64_t t = 0; t < T; ++t) {
          DeltaRuleInput in = input_of(c, out_steps.data() + t * ld);
          in.T = 1;
          in.q += t * in.ldqk;
          in.k += t * in.ldqk;
          in.v += t * in.ldv;
          in.g += t * c.H_v;
          in.beta += t * c.H_v;
          delta_rule_recurrent(tier, in, S_steps.data());
        }
        EXPECT_EQ(S_batch, S_steps);
        EXPECT_EQ(out_batch, out_steps);
      }
    }
}

// Reading the starting state from elsewhere (state_in) gives the in-place result bit for bit,
// whatever the destination held, with snapshots, and for batches longer than the kernel's
// block of tokens (70 > 64); the source is left as it was.
TEST(DeltaRule, RecurrentFromAnotherBufferEqualsInPlace) {
  for (const Shape& sh : kShapes)
    for (int64_t T : {1, 4, 70}) {
      DeltaCase c = make_case(sh.H_k, sh.H_v, sh.d, T, 41u + static_cast<uint32_t>(sh.d + T));
      const int64_t sf = static_cast<int64_t>(c.H_v) * c.d * c.d, ld = static_cast<int64_t>(c.H_v) * c.d;
      for (CpuTier tier : machine_tiers()) {
        SCOPED_TRACE(testing::Message() << "tier " << cpu_tier_name(tier) << ", d=" << sh.d << ", T=" << T);
        std::vector<float> out_a(T * ld), out_b(T * ld, -3.0f), S_a = c.state0, snaps_a(T * sf), snaps_b(T * sf);
        delta_rule_recurrent(tier, input_of(c, out_a.data()), S_a.data(), snaps_a.data(), 0);
        const std::vector<float> src = c.state0;
        std::vector<float> S_b(sf, 99.0f);
        DeltaRuleInput in = input_of(c, out_b.data());
        in.state_in = src.data();
        delta_rule_recurrent(tier, in, S_b.data(), snaps_b.data(), 0);
        EXPECT_EQ(S_b, S_a);
        EXPECT_EQ(out_b, out_a);
        EXPECT_EQ(snaps_b, snaps_a);
        EXPECT_EQ(src, c.state0);
      }
    }
}

// A head range touches only its heads (state, outputs, cut states and snapshots),
// and gives those heads the same result as a full run.
TEST(DeltaRule, HeadRangeTouchesOnlyItsHeads) {
  for (int d : {32, 128}) {
    DeltaCase c = make_case(2, 4, d, 70, 31u + static_cast<uint32_t>(d));
    const int64_t sf = static_cast<int64_t>(c.H_v) * d * d, hf = static_cast<int64_t>(d) * d;
    const int64_t ld = static_cast<int64_t>(c.H_v) * d;
    const std::vector<int64_t> cuts = {20, 64};
    for (CpuTier tier : machine_tiers()) {
      SCOPED_TRACE(testing::Message() << "tier " << cpu_tier_name(tier) << ", d=" << d);
      for (bool chunked : {false, true}) {
        const float sentinel = -12345.0f;
        std::vector<float> out_full(c.T * ld), S_full = c.state0;
        std::vector<float> out(c.T * ld, sentinel), S = c.state0;
        std::vector<float> extra_full(cuts.size() * sf), extra(cuts.size() * sf, sentinel);
        ScratchBuffer scratch;
        DeltaRuleInput full = input_of(c, out_full.data()), part = input_of(c, out.data());
        part.h_begin = 1;
        part.h_end = 3;
        if (chunked) {
          delta_rule_chunked(tier, full, S_full.data(), scratch, cuts.data(), 2, extra_full.data());
          delta_rule_chunked(tier, part, S.data(), scratch, cuts.data(), 2, extra.data());
        } else {  // snapshots of the last two tokens
          delta_rule_recurrent(tier, full, S_full.data(), extra_full.data(), c.T - 2);
          delta_rule_recurrent(tier, part, S.data(), extra.data(), c.T - 2);
        }
        for (int h = 0; h < c.H_v; ++h) {
          const bool in_range = h >= 1 && h < 3;
          for (int64_t x = 0; x < hf; ++x) {
            ASSERT_EQ(S[h * hf + x], in_range ? S_full[h * hf + x] : c.state0[h * hf + x]) << "state, head " << h;
            for (size_t e = 0; e < cuts.size(); ++e)
              ASSERT_EQ(extra[e * sf + h * hf + x], in_range ? extra_full[e * sf + h * hf + x] : sentinel)
                  << (chunked ? "cut state " : "snapshot ") << e << ", head " << h;
          }
          for (int64_t t = 0; t < c.T; ++t)
            for (int j = 0; j < d; ++j)
              ASSERT_EQ(out[t * ld + h * d + j], in_range ? out_full[t * ld + h * d + j] : sentinel)
                  << "output, head " << h;
        }
      }
    }
  }
}

// Both kernels on every tier from c.state0: outputs and final states within 1e-5 relative of the
// oracle's.
void expect_both_match_oracle(DeltaCase& c) {
  std::vector<double> S_ref, o_ref;
  oracle(c, S_ref, o_ref, nullptr);
  for (CpuTier tier : machine_tiers()) {
    SCOPED_TRACE(testing::Message() << "tier " << cpu_tier_name(tier) << ", d=" << c.d);
    std::vector<float> out_r(c.T * c.H_v * c.d), out_c(out_r.size()), S_r = c.state0, S_c = c.state0;
    ScratchBuffer scratch;
    delta_rule_recurrent(tier, input_of(c, out_r.data()), S_r.data());
    delta_rule_chunked(tier, input_of(c, out_c.data()), S_c.data(), scratch);
    EXPECT_LE(rel_diff(out_r, o_ref), 1e-5);
    EXPECT_LE(rel_diff(S_r, S_ref), 1e-5);
    EXPECT_LE(rel_diff(out_c, o_ref), 1e-5);
    EXPECT_LE(rel_diff(S_c, S_ref), 1e-5);
  }
}

// Nearly parallel keys, strong writes and almost no decay: the worst conditioning
// of I + A in the chunked algorithm (T's entries alternate and grow).
TEST(DeltaRule, CorrelatedKeysMatchOracle) {
  for (int d : {32, 128}) {
    DeltaCase c = make_case(1, 2, d, 200, 11u + static_cast<uint32_t>(d));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u11(-1.0f, 1.0f), ub(0.9f, 1.0f), ug(-1e-3f, 0.0f);
    std::vector<float> base(d);
    for (auto& x : base) x = u11(rng);
    for (int64_t t = 0; t < c.T; ++t) {
      for (int i = 0; i < d; ++i) c.k[t * d + i] = base[i] + 0.1f * u11(rng);
      l2_norm(default_cpu_tier(), &c.k[t * d], &c.k[t * d], d, 1e-6f);
    }
    for (auto& x : c.beta) x = ub(rng);
    for (auto& x : c.g) x = ug(rng);
    expect_both_match_oracle(c);
  }
}

// Fast decays: e^G underflows inside a chunk (and to denormals in float).
TEST(DeltaRule, StrongDecaysMatchOracle) {
  for (int d : {32, 128}) {
    DeltaCase c = make_case(2, 4, d, 130, 5u + static_cast<uint32_t>(d));
    std::mt19937 rng(77);
    std::uniform_real_distribution<float> ug(-20.0f, 0.0f);
    for (auto& x : c.g) x = ug(rng);
    expect_both_match_oracle(c);
  }
}

}  // namespace
}  // namespace tandem::kernels
