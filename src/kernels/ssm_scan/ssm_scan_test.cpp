// Mamba2's selective scan (spec hybrids.md B5.1 steps 4-6, B5.4) and gated grouped RMSNorm (steps
// 7-8): every CPU tier this machine has against the scalar references, the per-token scan against
// a float64 oracle written from the spec, the chunked (SSD) form against the per-token scan, and
// the state handed between calls. Inputs as the model sees them: A = -U(1, 16) (Mamba2's A_log
// init), dt bias = softplus⁻¹(dt) with dt log-uniform in [1e-3, 0.1] (spec E4), x / B / C the
// SiLU'd conv outputs.
#include "kernels/ssm_scan/ssm_scan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel_test_support.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

struct ScanShape {
  int H, P, ds, ng;
};

std::string name(const ScanShape& s, int64_t T) {
  return "H " + std::to_string(s.H) + " P " + std::to_string(s.P) + " ds " + std::to_string(s.ds) + " ng " +
         std::to_string(s.ng) + " T " + std::to_string(T);
}

// One token row holds x | B | C (the conv output, as the model lays it out) plus padding.
struct ScanCase {
  ScanShape s;
  int64_t T, ld, lddt;
  std::vector<float> xbc, dt, dt_bias, A, D, state0;

  SsmScanInput input(float* y) const {
    SsmScanInput in;
    in.H = s.H;
    in.P = s.P;
    in.ds = s.ds;
    in.ng = s.ng;
    in.T = T;
    in.x = xbc.data();
    in.ldx = ld;
    in.B = xbc.data() + static_cast<int64_t>(s.H) * s.P;
    in.C = in.B + static_cast<int64_t>(s.ng) * s.ds;
    in.ldbc = ld;
    in.dt = dt.data();
    in.lddt = lddt;
    in.dt_bias = dt_bias.data();
    in.A = A.data();
    in.D = D.data();
    in.y = y;
    in.ldy = static_cast<int64_t>(s.H) * s.P;
    return in;
  }
  size_t y_floats() const { return static_cast<size_t>(T) * s.H * s.P; }
};

ScanCase make_case(ScanShape s, int64_t T, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  ScanCase c{s, T, static_cast<int64_t>(s.H) * s.P + 2 * static_cast<int64_t>(s.ng) * s.ds + 3, s.H + 1, {}, {}, {}, {}, {}, {}};
  c.xbc.resize(static_cast<size_t>(T * c.ld));
  for (auto& v : c.xbc) {
    const float u = nd(rng);
    v = u / (1.0f + std::exp(-u));  // SiLU'd conv output
  }
  c.dt.resize(static_cast<size_t>(T * c.lddt));
  for (auto& v : c.dt) v = 0.5f * nd(rng);
  for (int h = 0; h < s.H; ++h) {
    const double dt0 = std::exp(std::log(1e-3) + u01(rng) * (std::log(1e-1) - std::log(1e-3)));
    c.dt_bias.push_back(static_cast<float>(dt0 + std::log(-std::expm1(-dt0))));  // softplus⁻¹(dt0)
    c.A.push_back(-(1.0f + 15.0f * u01(rng)));
    c.D.push_back(0.5f + u01(rng));
  }
  c.state0.resize(static_cast<size_t>(s.H) * s.P * s.ds);
  for (auto& v : c.state0) v = 0.5f * nd(rng);
  return c;
}

// Spec B5.1 steps 4-6 in double, written from the spec, independently of the kernels.
void oracle(const ScanCase& c, std::vector<double>& S, std::vector<double>& y) {
  const ScanShape& s = c.s;
  S.assign(c.state0.begin(), c.state0.end());
  y.assign(c.y_floats(), 0.0);
  const int hpg = s.H / s.ng;
  for (int64_t t = 0; t < c.T; ++t)
    for (int h = 0; h < s.H; ++h) {
      const int g = h / hpg;
      const double u = static_cast<double>(c.dt[t * c.lddt + h]) + c.dt_bias[h];
      const double delta = u > 20.0 ? u : std::log1p(std::exp(u));
      const double dA = std::exp(delta * c.A[h]);
      const float* row = &c.xbc[t * c.ld];
      const float* B = row + static_cast<int64_t>(s.H) * s.P + static_cast<int64_t>(g) * s.ds;
      const float* C = row + static_cast<int64_t>(s.H) * s.P + static_cast<int64_t>(s.ng) * s.ds +
                       static_cast<int64_t>(g) * s.ds;
      for (int p = 0; p < s.P; ++p) {
        const double x = row[h * s.P + p];
        double acc = 0;
        for (int n = 0; n < s.ds; ++n) {
          double& st = S[(static_cast<size_t>(h) * s.P + p) * s.ds + n];
          st = st * dA + B[n] * (x * delta);
          acc += st * C[n];
        }
        y[(t * s.H + h) * s.P + p] = acc + c.D[h] * x;
      }
    }
}

bool all_finite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

// ds 128 / 64: the AVX-512 body's register-resident rows; 32: its streamed rows; 24: AVX2 only
// (the AVX-512 tiers take the reference); P 24 and 20 not multiples of 16; ng 2 with 2 and 3
// heads per group.
const ScanShape kScanShapes[] = {{4, 16, 128, 1}, {4, 24, 64, 2}, {6, 20, 32, 2}, {4, 16, 24, 1}, {2, 8, 12, 2}};
const int64_t kTs[] = {1, 7, 63, 64, 65, 150, 300};

// Tolerances, relative to the largest |value| (max |a - b| / max |b|), over y and the state. The
// tests print the worst they see; on an AVX-512 Zen 5: per token 3.7e-6, chunked 5.3e-6.
constexpr double kTolPerToken = 2e-5;  // per-token float scan vs the float64 oracle
constexpr double kTolChunked = 3e-5;   // chunked float scan vs the oracle and vs the per-token scan

// Every tier's per-token scan: the state has the reference's bits (the update is the same mul,
// mul, add), y equals the reference within rounding (Σ S·C is summed in vector lanes).
TEST(SsmScan, EveryTierMatchesScalarReference) {
  uint32_t seed = 1;
  for (const ScanShape& s : kScanShapes)
    for (int64_t T : kTs) {
      const ScanCase c = make_case(s, T, seed++);
      std::vector<float> yref(c.y_floats()), Sref = c.state0;
      ssm_scan_ref(c.input(yref.data()), Sref.data());
      for (CpuTier tier : machine_tiers()) {
        std::vector<float> y(c.y_floats()), S = c.state0;
        ssm_scan(tier, c.input(y.data()), S.data());
        ASSERT_EQ(0, std::memcmp(S.data(), Sref.data(), S.size() * sizeof(float))) << name(s, T) << " "
                                                                                  << cpu_tier_name(tier);
        EXPECT_LE(rel_diff(y, yref), 2e-6) << name(s, T) << " " << cpu_tier_name(tier);
      }
    }
}

// The per-token scan of every tier, and the chunked reference, against the float64 oracle.
TEST(SsmScan, PerTokenMatchesFloat64Oracle) {
  uint32_t seed = 100;
  double worst = 0;
  for (const ScanShape& s : kScanShapes)
    for (int64_t T : {int64_t{1}, int64_t{65}, int64_t{300}}) {
      const ScanCase c = make_case(s, T, seed++);
      std::vector<double> So, yo;
      oracle(c, So, yo);
      for (CpuTier tier : machine_tiers()) {
        std::vector<float> y(c.y_floats()), S = c.state0;
        ssm_scan(tier, c.input(y.data()), S.data());
        worst = std::max({worst, rel_diff(y, yo), rel_diff(S, So)});
        EXPECT_LE(rel_diff(y, yo), kTolPerToken) << name(s, T) << " " << cpu_tier_name(tier);
        EXPECT_LE(rel_diff(S, So), kTolPerToken) << name(s, T) << " " << cpu_tier_name(tier);
      }
      std::vector<float> y(c.y_floats()), S = c.state0;
      ssm_scan_chunked_ref(c.input(y.data()), S.data(), 64);
      // Δ rounded to float (as the kernels take it) moves the result by a few 1e-6.
      EXPECT_LE(rel_diff(y, yo), 1e-5) << "chunked ref " << name(s, T);
      EXPECT_LE(rel_diff(S, So), 1e-5) << "chunked ref " << name(s, T);
    }
  std::printf("per token vs float64 oracle: worst relative difference %.3g\n", worst);
}

// The chunked form on every tier (chunks of 64, 32, 16 and 50: the last pads its matrices) against
// the oracle and against the per-token scan, T not a multiple of the chunk.
TEST(SsmScan, ChunkedMatchesPerTokenScan) {
  uint32_t seed = 200;
  double worst = 0;
  for (const ScanShape& s : kScanShapes)
    for (int64_t T : kTs) {
      const ScanCase c = make_case(s, T, seed++);
      std::vector<double> So, yo;
      oracle(c, So, yo);
      std::vector<float> ypt(c.y_floats()), Spt = c.state0;
      ssm_scan_ref(c.input(ypt.data()), Spt.data());
      for (int chunk : {64, 32, 16, 50})
        for (CpuTier tier : machine_tiers()) {
          std::vector<float> y(c.y_floats()), S = c.state0;
          ssm_scan_chunked(tier, c.input(y.data()), S.data(), chunk);
          const double ey = rel_diff(y, yo), eS = rel_diff(S, So);
          worst = std::max({worst, ey, eS});
          EXPECT_LE(ey, kTolChunked) << name(s, T) << " chunk " << chunk << " " << cpu_tier_name(tier);
          EXPECT_LE(eS, kTolChunked) << name(s, T) << " chunk " << chunk << " " << cpu_tier_name(tier);
          EXPECT_LE(rel_diff(y, ypt), kTolChunked) << name(s, T) << " chunk " << chunk << " " << cpu_tier_name(tier);
        }
    }
  std::printf("chunked vs float64 oracle: worst relative difference %.3g\n", worst);
}

// A batch in two calls (the state handed over) equals one call: per token bit for bit (each
// token's arithmetic does not depend on the batch), chunked within the chunked tolerance (the
// chunk boundaries move).
TEST(SsmScan, StateCarriedAcrossCalls) {
  const ScanShape s{4, 24, 128, 2};
  const int64_t T = 150;
  const ScanCase c = make_case(s, T, 300);
  const int64_t HP = static_cast<int64_t>(s.H) * s.P;
  for (CpuTier tier : machine_tiers()) {
    std::vector<float> yw(c.y_floats()), Sw = c.state0;
    ssm_scan(tier, c.input(yw.data()), Sw.data());
    std::vector<float> ycw(c.y_floats()), Scw = c.state0;
    ssm_scan_chunked(tier, c.input(ycw.data()), Scw.data());
    for (int64_t split : {1, 63, 64, 100, 149}) {
      std::vector<float> y(c.y_floats()), S = c.state0;
      SsmScanInput a = c.input(y.data());
      a.T = split;
      ssm_scan(tier, a, S.data());
      SsmScanInput b = c.input(y.data() + split * HP);
      b.T = T - split;
      b.x += split * b.ldx;
      b.B += split * b.ldbc;
      b.C += split * b.ldbc;
      b.dt += split * b.lddt;
      ssm_scan(tier, b, S.data());
      ASSERT_EQ(0, std::memcmp(y.data(), yw.data(), y.size() * sizeof(float))) << split << " " << cpu_tier_name(tier);
      ASSERT_EQ(0, std::memcmp(S.data(), Sw.data(), S.size() * sizeof(float))) << split << " " << cpu_tier_name(tier);

      std::vector<float> yc(c.y_floats()), Sc = c.state0;
      a.y = yc.data();
      b.y = yc.data() + split * HP;
      ssm_scan_chunked(tier, a, Sc.data());
      ssm_scan_chunked(tier, b, Sc.data());
      EXPECT_LE(rel_diff(yc, ycw), kTolChunked) << split << " " << cpu_tier_name(tier);
      EXPECT_LE(rel_diff(Sc, Scw), kTolChunked) << split << " " << cpu_tier_name(tier);
    }
  }
}

// Heads split between calls (a thread pool's ranges, not on group boundaries) give the same bits.
TEST(SsmScan, HeadRangesSplitTheWork) {
  const ScanShape s{6, 20, 64, 2};
  const ScanCase c = make_case(s, 70, 400);
  for (CpuTier tier : machine_tiers())
    for (bool chunked : {false, true}) {
      std::vector<float> yw(c.y_floats()), Sw = c.state0;
      if (chunked)
        ssm_scan_chunked(tier, c.input(yw.data()), Sw.data());
      else
        ssm_scan(tier, c.input(yw.data()), Sw.data());
      std::vector<float> y(c.y_floats()), S = c.state0;
      for (auto [hb, he] : {std::pair{0, 2}, std::pair{2, 4}, std::pair{4, 6}}) {
        SsmScanInput in = c.input(y.data());
        in.h_begin = hb;
        in.h_end = he;
        if (chunked)
          ssm_scan_chunked(tier, in, S.data());
        else
          ssm_scan(tier, in, S.data());
      }
      ASSERT_EQ(0, std::memcmp(y.data(), yw.data(), y.size() * sizeof(float))) << chunked << cpu_tier_name(tier);
      ASSERT_EQ(0, std::memcmp(S.data(), Sw.data(), S.size() * sizeof(float))) << chunked << cpu_tier_name(tier);
    }
}

// dt + bias above 20 takes softplus's identity branch (ggml's guard: logf(1 + expf(100)) would be
// inf); the decay e^{-Δ·|A|} then underflows to 0 and the state restarts. Finite and equal to
// the oracle on every tier, per token and chunked.
TEST(SsmScan, SoftplusPassthroughAboveTwenty) {
  const ScanShape s{4, 16, 64, 1};
  ScanCase c = make_case(s, 80, 500);
  for (int64_t t = 0; t < c.T; t += 5) c.dt[t * c.lddt + (t / 5) % s.H] = t % 2 ? 100.0f : 21.0f;
  std::vector<double> So, yo;
  oracle(c, So, yo);
  for (CpuTier tier : machine_tiers()) {
    std::vector<float> y(c.y_floats()), S = c.state0;
    ssm_scan(tier, c.input(y.data()), S.data());
    ASSERT_TRUE(all_finite(y) && all_finite(S)) << cpu_tier_name(tier);
    EXPECT_LE(rel_diff(y, yo), kTolPerToken) << cpu_tier_name(tier);
    EXPECT_LE(rel_diff(S, So), kTolPerToken) << cpu_tier_name(tier);
    std::vector<float> yc(c.y_floats()), Sc = c.state0;
    ssm_scan_chunked(tier, c.input(yc.data()), Sc.data());
    ASSERT_TRUE(all_finite(yc) && all_finite(Sc)) << cpu_tier_name(tier);
    EXPECT_LE(rel_diff(yc, yo), kTolChunked) << cpu_tier_name(tier);
    EXPECT_LE(rel_diff(Sc, So), kTolChunked) << cpu_tier_name(tier);
  }
}

// v = y ⊙ silu(z), then RMSNorm per group of d/ng with the weight: every tier against the
// reference and a double formula, out aliasing y, ng 1 and 2.
TEST(SsmScan, GatedGroupRmsNormMatchesFormula) {
  std::mt19937 rng(600);
  std::normal_distribution<float> nd;
  for (int ng : {1, 2, 4})
    for (int64_t d : {64, 200, 4096}) {
      const int64_t T = 3, ld = d + 5, G = d / ng;
      const float eps = 1e-5f;
      std::vector<float> y(static_cast<size_t>(T * ld)), z(y.size()), w(static_cast<size_t>(d));
      for (auto* v : {&y, &z, &w})
        for (auto& e : *v) e = nd(rng);
      std::vector<float> ref(y.size(), 0.0f);
      gated_group_rms_norm_ref(y.data(), ld, z.data(), ld, T, d, ng, w.data(), eps, ref.data(), ld);
      for (int64_t t = 0; t < T; ++t)
        for (int g = 0; g < ng; ++g) {
          std::vector<double> v(static_cast<size_t>(G));
          double ss = 0;
          for (int64_t j = 0; j < G; ++j) {
            const double zz = z[t * ld + g * G + j];
            v[j] = y[t * ld + g * G + j] * zz / (1.0 + std::exp(-zz));
            ss += v[j] * v[j];
          }
          const double scale = 1.0 / std::sqrt(ss / G + eps);
          for (int64_t j = 0; j < G; ++j) {
            const double e = v[j] * scale * w[g * G + j];
            ASSERT_NEAR(ref[t * ld + g * G + j], e, 1e-5 * (1 + std::fabs(e))) << ng << " " << d;
          }
        }
      for (CpuTier tier : machine_tiers()) {
        std::vector<float> out = y;  // in place: out aliases y
        gated_group_rms_norm(tier, out.data(), ld, z.data(), ld, T, d, ng, w.data(), eps, out.data(), ld);
        for (int64_t t = 0; t < T; ++t)
          for (int64_t i = 0; i < d; ++i)
            ASSERT_NEAR(out[t * ld + i], ref[t * ld + i], 2e-6 * (1 + std::fabs(ref[t * ld + i])))
                << ng << " " << d << " " << cpu_tier_name(tier);
      }
    }
}

}  // namespace
}  // namespace tandem::kernels
