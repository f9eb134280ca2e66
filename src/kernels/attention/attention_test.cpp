#include "kernels/attention/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

// Every tier against the scalar reference: GQA, a non-empty cache before the batch,
// batch lengths that are not multiples of anything.
TEST(Attention, EveryTierMatchesScalarReference) {
  for (int hd : {16, 64, 80}) {
    const int nh = 4, nkv = 2;
    const int64_t pos0 = 13, T = 29, kvd = nkv * hd;
    std::mt19937 rng(hd);
    std::normal_distribution<float> nd;
    std::vector<float> q(static_cast<size_t>(T * nh * hd)), k(static_cast<size_t>((pos0 + T) * kvd)),
        v(k.size());
    for (auto* vec : {&q, &k, &v})
      for (auto& x : *vec) x = nd(rng);
    AttentionInput in;
    in.n_head = nh;
    in.n_head_kv = nkv;
    in.head_dim = hd;
    in.T = T;
    in.pos0 = pos0;
    in.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    in.q = q.data();
    in.ldq = nh * hd;
    in.k_cache = k.data();
    in.v_cache = v.data();
    in.kv_stride = kvd;
    in.ldo = nh * hd;
    ScratchBuffer scratch;
    std::vector<float> ref(static_cast<size_t>(T * nh * hd));
    in.out = ref.data();
    attention_causal_ref(in, scratch);
    for (CpuTier tier : kBuildTiers) {
      if (clamp_to_machine(tier) != tier) continue;
      std::vector<float> got(ref.size(), NAN);
      in.out = got.data();
      attention_causal(tier, in, scratch);
      double m = 0;
      for (size_t i = 0; i < got.size(); ++i) m = std::max(m, std::fabs(double(got[i]) - ref[i]));
      EXPECT_LE(m, 1e-5) << "head_dim " << hd << " tier " << cpu_tier_name(tier);
    }
  }
}

// Grouped rows (GQA heads × tokens sharing one KV head): every tier against the scalar
// reference, and on every tier each row bit for bit what it gives alone (attention_causal of
// that one token and head): a decode step and a verification pass group the rows differently
// and must see the same numbers. 1..16 rows,
// rows of different lengths, head sizes that are not a multiple of the 64-dim V block.
TEST(Attention, GroupedRowsEqualPerRowAttention) {
  for (int hd : {16, 80, 256}) {
    const int64_t n_ctx = 70, kvd = 2 * hd;
    std::mt19937 rng(hd + 5);
    std::normal_distribution<float> nd;
    std::vector<float> q(static_cast<size_t>(16 * hd)), k(static_cast<size_t>(n_ctx * kvd)), v(k.size());
    for (auto* vec : {&q, &k, &v})
      for (auto& x : *vec) x = nd(rng);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    ScratchBuffer scratch;
    for (int n : {1, 3, 4, 7, 16}) {
      AttentionRows rows;
      std::vector<std::vector<float>> got(16, std::vector<float>(hd, NAN)), ref = got, one = got;
      for (int r = 0; r < n; ++r) {
        rows.q[r] = q.data() + r * hd;
        rows.n_kv[r] = 1 + (r * 37 + n) % n_ctx;  // 1 .. 70 positions, unordered
      }
      rows.n = n;
      for (int r = 0; r < n; ++r) rows.out[r] = ref[r].data();
      attention_rows_ref(rows, hd, scale, k.data() + hd, v.data() + hd, kvd, scratch);  // KV head 1
      for (CpuTier tier : kBuildTiers) {
        if (clamp_to_machine(tier) != tier) continue;
        for (int r = 0; r < n; ++r) rows.out[r] = got[r].data();
        attention_rows(tier, rows, hd, scale, k.data() + hd, v.data() + hd, kvd, scratch);
        for (int r = 0; r < n; ++r) {
          AttentionInput in;
          in.n_head = 1;
          in.n_head_kv = 1;
          in.head_dim = hd;
          in.T = 1;
          in.pos0 = rows.n_kv[r] - 1;
          in.scale = scale;
          in.q = rows.q[r];
          in.ldq = hd;
          in.k_cache = k.data() + hd;
          in.v_cache = v.data() + hd;
          in.kv_stride = kvd;
          in.out = one[r].data();
          in.ldo = hd;
          attention_causal(tier, in, scratch);
          double m = 0;
          for (int i = 0; i < hd; ++i) m = std::max(m, std::fabs(double(got[r][i]) - ref[r][i]));
          EXPECT_LE(m, 1e-5) << "hd " << hd << " rows " << n << " row " << r << " tier " << cpu_tier_name(tier);
          EXPECT_EQ(got[r], one[r]) << "hd " << hd << " rows " << n << " row " << r << " tier " << cpu_tier_name(tier);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tandem::kernels
