#include "kernels/attention.h"

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
    for (CpuTier tier : {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512Vnni, CpuTier::Amx}) {
      if (tier > cpu_features().best_tier()) continue;
      set_cpu_tier(tier);
      std::vector<float> got(ref.size(), NAN);
      in.out = got.data();
      attention_causal(in, scratch);
      double m = 0;
      for (size_t i = 0; i < got.size(); ++i) m = std::max(m, std::fabs(double(got[i]) - ref[i]));
      EXPECT_LE(m, 1e-5) << "head_dim " << hd << " tier " << cpu_tier_name(tier);
    }
    set_cpu_tier(cpu_features().best_tier());
  }
}

}  // namespace
}  // namespace tandem::kernels
