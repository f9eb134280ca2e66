// Chunked vs per-token delta rule, and the states they hand back, on random
// inputs with the distributions llama.cpp's own op tests use (spec §9).
#include "kernels/delta_rule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/norms.h"

namespace tandem::kernels {
namespace {

struct Case {
  int H_k, H_v, d;
  int64_t T;
  std::vector<float> q, k, v, g, beta, state0;
};

Case make_case(int H_k, int H_v, int d, int64_t T, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u11(-1.0f, 1.0f), uv(-0.3f, 5.0f), ug(-20.0f, -1e-4f), ub(0.0f, 1.0f);
  Case c{H_k, H_v, d, T, {}, {}, {}, {}, {}, {}};
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
    l2_norm(&c.q[t * d], &c.q[t * d], d, 1e-6f);
    l2_norm(&c.k[t * d], &c.k[t * d], d, 1e-6f);
  }
  return c;
}

DeltaRuleInput input_of(Case& c, float* out) {
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
void oracle(const Case& c, std::vector<double>& S, std::vector<double>& out, std::vector<std::vector<double>>* states) {
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

template <typename A, typename B>
double rel_diff(const A& a, const B& b) {
  double mx = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    mx = std::max(mx, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    ref = std::max(ref, std::fabs(static_cast<double>(b[i])));
  }
  return mx / std::max(ref, 1e-30);
}

class DeltaRuleTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(DeltaRuleTest, ChunkedAndRecurrentMatchOracle) {
  const int64_t T = GetParam();
  Case c = make_case(/*H_k=*/2, /*H_v=*/4, /*d=*/32, T, 1234u + static_cast<uint32_t>(T));
  std::vector<double> S_ref, o_ref;
  oracle(c, S_ref, o_ref, nullptr);

  std::vector<float> out_r(c.T * c.H_v * c.d), out_c(out_r.size());
  std::vector<float> S_r = c.state0, S_c = c.state0;
  delta_rule_recurrent(input_of(c, out_r.data()), S_r.data());
  ScratchBuffer scratch;
  delta_rule_chunked(input_of(c, out_c.data()), S_c.data(), scratch);

  EXPECT_LE(rel_diff(out_r, o_ref), 1e-5) << "recurrent output, T=" << T;
  EXPECT_LE(rel_diff(S_r, S_ref), 1e-5) << "recurrent state, T=" << T;
  EXPECT_LE(rel_diff(out_c, o_ref), 1e-5) << "chunked output, T=" << T;
  EXPECT_LE(rel_diff(S_c, S_ref), 1e-5) << "chunked state, T=" << T;
  EXPECT_LE(rel_diff(out_c, out_r), 1e-5) << "chunked vs recurrent, T=" << T;
}

INSTANTIATE_TEST_SUITE_P(Lengths, DeltaRuleTest, ::testing::Values(1, 3, 63, 64, 65, 200));

TEST(DeltaRule, ChunkedCutStatesEqualPerTokenStates) {
  Case c = make_case(2, 4, 32, 150, 99);
  std::vector<double> S_ref, o_ref;
  std::vector<std::vector<double>> states;
  oracle(c, S_ref, o_ref, &states);
  const std::vector<int64_t> cuts = {1, 37, 64, 100, 129, 150};
  const int64_t sf = static_cast<int64_t>(c.H_v) * c.d * c.d;
  std::vector<float> cut_states(cuts.size() * sf), out(c.T * c.H_v * c.d), S = c.state0;
  ScratchBuffer scratch;
  delta_rule_chunked(input_of(c, out.data()), S.data(), scratch, cuts.data(), static_cast<int>(cuts.size()),
                     cut_states.data());
  for (size_t i = 0; i < cuts.size(); ++i) {
    std::vector<float> got(cut_states.begin() + i * sf, cut_states.begin() + (i + 1) * sf);
    EXPECT_LE(rel_diff(got, states[cuts[i] - 1]), 1e-5) << "cut at " << cuts[i];
  }
  EXPECT_LE(rel_diff(out, o_ref), 1e-5) << "outputs with cuts";
}

TEST(DeltaRule, RecurrentSnapshotsAreThePerTokenStates) {
  Case c = make_case(1, 3, 16, 9, 7);
  std::vector<double> S_ref, o_ref;
  std::vector<std::vector<double>> states;
  oracle(c, S_ref, o_ref, &states);
  const int64_t sf = static_cast<int64_t>(c.H_v) * c.d * c.d;
  const int64_t from = 5;
  std::vector<float> snaps((c.T - from) * sf), out(c.T * c.H_v * c.d), S = c.state0;
  delta_rule_recurrent(input_of(c, out.data()), S.data(), snaps.data(), from);
  for (int64_t t = from; t < c.T; ++t) {
    std::vector<float> got(snaps.begin() + (t - from) * sf, snaps.begin() + (t - from + 1) * sf);
    EXPECT_LE(rel_diff(got, states[t]), 1e-5) << "state after token " << t;
  }
}

}  // namespace
}  // namespace tandem::kernels
