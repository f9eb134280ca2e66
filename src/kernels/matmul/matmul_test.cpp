// Every matmul path (each CPU tier this machine has, each weight type, T from a
// single decode column to GEMM sizes) against the scalar reference, on random
// weights and activations, with sizes that are not multiples of the block, the
// column group or the row task.
#include "kernels/matmul/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/quants.h"
#include "kernels/kernel_test_support.h"
#include "kernels/matmul/weight_pack.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

struct MatmulCase {
  GgmlType type;
  int64_t cols;
};

// rows x cols random weights (normal, times `scale`) quantized to `type`, and the same matrix
// with its packed copy when the type has one (matmul then runs the 16-row groups: for Q4_0 /
// Q8_0 the AMX tiles from 5 tokens, the vector units below that and on the AVX-512 tier; for
// Q4_K / Q5_K / Q6_K the vector units at every T).
struct RandomWeights {
  std::vector<uint8_t> bytes;
  WeightMatrix W, Wp;
  PackedWeights packed;
  bool can_pack = false;

  RandomWeights(GgmlType type, int64_t cols, int64_t rows, std::mt19937& rng, float scale) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> wf(static_cast<size_t>(rows * cols));
    for (auto& x : wf) x = nd(rng) * scale;
    const size_t rb = row_bytes(type, cols);
    bytes.resize(rb * rows);
    for (int64_t r = 0; r < rows; ++r) quantize_row(type, wf.data() + r * cols, bytes.data() + r * rb, cols);
    W = WeightMatrix{type, cols, rows, bytes.data(), rb};
    Wp = W;
    can_pack = packed.pack(Wp);
  }
};

class MatmulTest : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulTest, EveryTierMatchesScalarReference) {
  const MatmulCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.cols * 131 + static_cast<int>(c.type)));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // 37 rows: one AMX row panel with a partial 16-row group; 150: three panels, the last partial;
  // 300: two of the vector units' 256-row tasks, the second one partial.
  for (int64_t rows : {37, 150, 300}) {
    RandomWeights rw(c.type, c.cols, rows, rng, 1.0f / std::sqrt(static_cast<float>(c.cols)));
    const WeightMatrix &W = rw.W, &Wp = rw.Wp;
    const bool can_pack = rw.can_pack;

    ThreadPool pool(2);
    // T >= 16 runs the AMX GEMM (where the machine has it) for Q4_0 / Q8_0: full and
    // partial 16-token tiles.
    for (int64_t T : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 40, 100}) {
      std::vector<float> x(static_cast<size_t>(T * c.cols));
      for (auto& v : x) v = nd(rng);
      x[0] = 0.0f;  // an all-but-one-zero block edge case is covered by random sizes; keep one exact zero
      if (T >= 3) {
        // Column 1, block 0: amax 127 (scale 1), so x * 127/amax lands on halves: round-half-even
        // ties. Column 2, block 0: all zero (d = 0).
        for (int j = 0; j < 31; ++j) x[c.cols + j] = static_cast<float>(j) - 15.5f;
        x[c.cols + 31] = 127.0f;
        for (int j = 0; j < 32; ++j) x[2 * c.cols + j] = 0.0f;
      }
      std::vector<float> ref(static_cast<size_t>(T * rows));
      matmul_ref(W, x.data(), c.cols, T, ref.data(), rows);
      double max_ref = 0;
      for (float v : ref) max_ref = std::max(max_ref, std::fabs(double(v)));
      for (CpuTier tier : machine_tiers()) {
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
          for (const WeightMatrix* w : {&W, &Wp}) {
            if (w == &Wp && !can_pack) continue;
            KernelContext ctx(tier);
            ctx.pool = p;
            std::vector<float> y(static_cast<size_t>(T * rows), NAN);
            matmul(*w, x.data(), c.cols, T, y.data(), rows, ctx);
            double max_diff = 0;
            for (size_t i = 0; i < y.size(); ++i) max_diff = std::max(max_diff, std::fabs(double(y[i]) - ref[i]));
            EXPECT_LE(max_diff, 2e-6 * max_ref + 1e-7)
                << ggml_type_name(c.type) << " cols=" << c.cols << " T=" << T << " tier=" << cpu_tier_name(tier)
                << " rows=" << rows << (p ? " threaded" : "") << (w == &Wp ? " packed" : "");
          }
      }
    }
  }
}

// ActivationMode::Exact: the float activations times the dequantized weights, on every tier,
// packed or not, threaded or not — against a float64 product of the dequantized rows, and not
// the converted-activation product (the mode really changes the path for non-F32 weights).
TEST_P(MatmulTest, ExactActivationsMultiplyTheDequantizedWeights) {
  const MatmulCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.cols * 7 + 3));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t rows : {37, 300}) {
    RandomWeights rw(c.type, c.cols, rows, rng, 1.0f / std::sqrt(static_cast<float>(c.cols)));
    std::vector<float> wf(static_cast<size_t>(rows * c.cols));
    for (int64_t r = 0; r < rows; ++r) dequantize_row(c.type, rw.W.row(r), wf.data() + r * c.cols, c.cols);
    ThreadPool pool(2);
    for (int64_t T : {1, 3, 9, 17}) {
      std::vector<float> x(static_cast<size_t>(T * c.cols));
      for (auto& v : x) v = nd(rng);
      std::vector<double> ref(static_cast<size_t>(T * rows));
      double scale = 0;  // sum |w| |x| bounds the float32 rounding of each dot product
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < rows; ++r) {
          double s = 0, a = 0;
          for (int64_t i = 0; i < c.cols; ++i) {
            s += double(wf[r * c.cols + i]) * x[t * c.cols + i];
            a += std::fabs(double(wf[r * c.cols + i]) * x[t * c.cols + i]);
          }
          ref[t * rows + r] = s;
          scale = std::max(scale, a);
        }
      for (CpuTier tier : machine_tiers()) {
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
          for (const WeightMatrix* w : {&rw.W, &rw.Wp}) {
            if (w == &rw.Wp && !rw.can_pack) continue;
            KernelContext ctx(tier);
            ctx.pool = p;
            ctx.activations = ActivationMode::Exact;
            std::vector<float> y(static_cast<size_t>(T * rows), NAN), conv(y.size(), NAN);
            matmul(*w, x.data(), c.cols, T, y.data(), rows, ctx);
            double max_diff = 0, max_conv = 0;
            for (size_t i = 0; i < y.size(); ++i) max_diff = std::max(max_diff, std::fabs(y[i] - ref[i]));
            EXPECT_LE(max_diff, 1e-6 * scale)
                << ggml_type_name(c.type) << " cols=" << c.cols << " T=" << T << " tier=" << cpu_tier_name(tier)
                << " rows=" << rows << (p ? " threaded" : "") << (w == &rw.Wp ? " packed" : "");
            if (c.type == GgmlType::F32) continue;
            ctx.activations = ActivationMode::Converted;
            matmul(*w, x.data(), c.cols, T, conv.data(), rows, ctx);
            for (size_t i = 0; i < y.size(); ++i) max_conv = std::max(max_conv, std::fabs(conv[i] - ref[i]));
            EXPECT_GT(max_conv, max_diff) << ggml_type_name(c.type) << ": converting the activations should cost accuracy";
          }
      }
    }
  }
}

// Speculative verification relies on this: a column of a multi-column product is bit for
// bit the product of that column alone, on every tier and for packed weights, so that
// verifying 1 + k tokens in one pass gives exactly the logits of k + 1 decode steps.
TEST_P(MatmulTest, EachColumnEqualsItsSingleColumnProductBitForBit) {
  const MatmulCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.cols * 7 + 3));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rows = 70;
  RandomWeights rw(c.type, c.cols, rows, rng, 1.0f);
  const WeightMatrix &W = rw.W, &Wp = rw.Wp;
  const bool can_pack = rw.can_pack;
  ThreadPool pool(2);
  for (CpuTier tier : machine_tiers()) {
    for (const WeightMatrix* w : {&W, &Wp}) {
      if (w == &Wp && !can_pack) continue;
      // Packed Q4_0/Q8_0 run 1..4 tokens on the vector units and 5 and more on the tiles, packed
      // K-quants from 24 tokens on the tiles (40: a pair of token groups and a partial one): the
      // paths must agree too. (Unpacked weights switch to a tile GEMM from 16 tokens, beyond any
      // verification width.)
      for (int64_t T : {2, 4, 6, 8, 16, 40}) {
        if (T > 8 && w != &Wp) continue;
        std::vector<float> x(static_cast<size_t>(T * c.cols));
        for (auto& v : x) v = nd(rng);
        KernelContext ctx(tier);
        ctx.pool = &pool;
        std::vector<float> y(static_cast<size_t>(T * rows)), y1(static_cast<size_t>(rows));
        matmul(*w, x.data(), c.cols, T, y.data(), rows, ctx);
        for (int64_t t = 0; t < T; ++t) {
          matmul(*w, x.data() + t * c.cols, c.cols, 1, y1.data(), rows, ctx);
          for (int64_t r = 0; r < rows; ++r)
            ASSERT_EQ(y[static_cast<size_t>(t * rows + r)], y1[static_cast<size_t>(r)])
                << ggml_type_name(c.type) << " tier=" << cpu_tier_name(tier) << " T=" << T << " column " << t
                << " row " << r << (w == &Wp ? " packed" : "");
        }
      }
    }
  }
}

// Packed Q4_0/Q8_0 on the Amx tier: 1..4 tokens run on the vector units by default; they must
// give the tile products' bits (the same integer block sums, the same float operations), or a
// verification pass of 5+ tokens would not reproduce decode steps.
TEST_P(MatmulTest, PackedVectorUnitsEqualTilesBitForBit) {
  const MatmulCase c = GetParam();
  if (!tier_has(cpu_features().best_tier(), CpuTier::Amx)) GTEST_SKIP() << "no AMX on this machine";
  std::mt19937 rng(static_cast<uint32_t>(c.cols * 5 + 1));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  if (c.type != GgmlType::Q4_0 && c.type != GgmlType::Q8_0)
    GTEST_SKIP() << ggml_type_name(c.type) << ": no switch to tiles below 24 tokens (packed K-quants: their tile "
                 << "columns are checked against one-token products at T = 40 in EachColumnEqualsItsSingleColumn...)";
  RandomWeights rw(c.type, c.cols, 70, rng, 1.0f);
  ThreadPool pool(2);
  for (int64_t T : {1, 2, 3, 4}) {
    std::vector<float> x(static_cast<size_t>(T * c.cols));
    for (auto& v : x) v = nd(rng);
    std::vector<float> vec(static_cast<size_t>(T * 70)), tiles(vec.size());
    KernelContext ctx(CpuTier::Amx);
    ctx.pool = &pool;
    matmul(rw.Wp, x.data(), c.cols, T, vec.data(), 70, ctx);
    ctx.packed_few_tokens_on_vector_units = false;
    matmul(rw.Wp, x.data(), c.cols, T, tiles.data(), 70, ctx);
    ASSERT_EQ(vec, tiles) << ggml_type_name(c.type) << " T=" << T;
  }
}

// Packed Q4_0 on the Avx2 tier (matmul_packed_avx2.h: 8 rows per register, no horizontal sums)
// gives the ggml-row AVX2 kernel's bits: the same integer block sums and the same FMA per block.
// (Packed Q6_K on AVX2 gives the AVX-512 packed kernel's bits instead, whose float order differs
// from the row kernels'; EveryTierMatchesScalarReference and EachColumnEqualsItsSingleColumn...
// cover it, and on an AVX-512 machine PackedAvx2Q6KEqualsAvx512PackedBitForBit below.)
// Heights with a partial half-group (13, 37) and a partial task (300); token counts across the
// kernel's chunks of 4; threaded and not.
TEST_P(MatmulTest, PackedAvx2EqualsRowKernelBitForBit) {
  const MatmulCase c = GetParam();
  if (!tier_has(cpu_features().best_tier(), CpuTier::Avx2)) GTEST_SKIP() << "no AVX2 on this machine";
  if (c.type != GgmlType::Q4_0) GTEST_SKIP() << ggml_type_name(c.type) << ": no packed AVX2 kernel";
  std::mt19937 rng(static_cast<uint32_t>(c.cols * 13 + 7));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ThreadPool pool(2);
  ASSERT_EQ(plan_matrix(GgmlType::Q4_0, CpuTier::Avx2).layout, WeightLayout::Packed);
  for (int64_t rows : {13, 37, 300}) {
    RandomWeights rw(c.type, c.cols, rows, rng, 1.0f);
    ASSERT_TRUE(rw.can_pack);
    for (int64_t T : {1, 2, 3, 4, 5, 9, 17}) {
      std::vector<float> x(static_cast<size_t>(T * c.cols));
      for (auto& v : x) v = nd(rng);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        KernelContext ctx(CpuTier::Avx2);
        ctx.pool = p;
        std::vector<float> rows_out(static_cast<size_t>(T * rows), NAN), packed_out(rows_out.size(), NAN);
        matmul(rw.W, x.data(), c.cols, T, rows_out.data(), rows, ctx);
        matmul(rw.Wp, x.data(), c.cols, T, packed_out.data(), rows, ctx);
        ASSERT_EQ(rows_out, packed_out) << "rows=" << rows << " T=" << T << (p ? " threaded" : "");
      }
    }
  }
}

// Packed Q6_K on the Avx2 tier equals the AVX-512 packed kernel bit for bit (the same integer
// super-block sums, the same FMA per super-block): a model's logits do not depend on which of
// the two tiers ran its Q6_K matrices.
TEST_P(MatmulTest, PackedAvx2Q6KEqualsAvx512PackedBitForBit) {
  const MatmulCase c = GetParam();
  if (c.type != GgmlType::Q6_K) GTEST_SKIP() << ggml_type_name(c.type) << ": not Q6_K";
  if (!tier_has(cpu_features().best_tier(), CpuTier::Avx512Vnni)) GTEST_SKIP() << "no AVX-512 VNNI on this machine";
  std::mt19937 rng(static_cast<uint32_t>(c.cols * 17 + 3));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ThreadPool pool(2);
  for (int64_t rows : {13, 37, 300}) {
    RandomWeights rw(c.type, c.cols, rows, rng, 1.0f);
    ASSERT_TRUE(rw.can_pack);
    for (int64_t T : {1, 3, 4, 6}) {
      std::vector<float> x(static_cast<size_t>(T * c.cols));
      for (auto& v : x) v = nd(rng);
      KernelContext avx512(CpuTier::Avx512Vnni), avx2(CpuTier::Avx2);
      avx512.pool = avx2.pool = &pool;
      std::vector<float> a(static_cast<size_t>(T * rows), NAN), b(a.size(), NAN);
      matmul(rw.Wp, x.data(), c.cols, T, a.data(), rows, avx512);
      matmul(rw.Wp, x.data(), c.cols, T, b.data(), rows, avx2);
      ASSERT_EQ(a, b) << "rows=" << rows << " T=" << T;
    }
  }
}

// Several matrices of one input in one pass: each output equals its own product bit for bit,
// for matrices of different heights (16 rows: less than one AMX panel; 70; 130), packed or not,
// at one and several columns; and a set mixing in another type falls back to one product each.
TEST_P(MatmulTest, MultiEqualsSeparateProductsBitForBit) {
  const MatmulCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.cols * 11 + 5));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t heights[] = {70, 16, 130};
  std::vector<std::unique_ptr<RandomWeights>> ws;
  for (int64_t rows : heights) ws.push_back(std::make_unique<RandomWeights>(c.type, c.cols, rows, rng, 1.0f));
  RandomWeights other(c.type == GgmlType::F32 ? GgmlType::F16 : GgmlType::F32, c.cols, 24, rng, 1.0f);
  ThreadPool pool(2);
  for (CpuTier tier : machine_tiers()) {
    for (bool packed : {false, true}) {
      if (packed && !ws[0]->can_pack) continue;
      for (bool mixed : {false, true})
        for (int64_t T : {1, 4, 20}) {
          std::vector<const WeightMatrix*> mats;
          for (auto& w : ws) mats.push_back(packed ? &w->Wp : &w->W);
          if (mixed) mats.push_back(&other.W);
          std::vector<float> x(static_cast<size_t>(T * c.cols));
          for (auto& v : x) v = nd(rng);
          KernelContext ctx(tier);
          ctx.pool = &pool;
          std::vector<std::vector<float>> got, want;
          std::vector<MatmulTarget> targets;
          for (const WeightMatrix* w : mats) {
            got.emplace_back(static_cast<size_t>(T * w->rows), -1.0f);
            want.emplace_back(static_cast<size_t>(T * w->rows));
          }
          for (size_t i = 0; i < mats.size(); ++i) targets.push_back({mats[i], got[i].data(), mats[i]->rows});
          matmul_multi(targets, x.data(), c.cols, T, ctx);
          for (size_t i = 0; i < mats.size(); ++i) {
            matmul(*mats[i], x.data(), c.cols, T, want[i].data(), mats[i]->rows, ctx);
            ASSERT_EQ(got[i], want[i]) << ggml_type_name(c.type) << " tier=" << cpu_tier_name(tier) << " T=" << T
                                       << " matrix " << i << (packed ? " packed" : "") << (mixed ? " mixed" : "");
          }
        }
    }
  }
}

constexpr GgmlType kAllTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                                   GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q4_K,
                                   GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_K};
constexpr CpuTier kAllTiers[] = {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512Vnni, CpuTier::Amx,
                                 CpuTier::Neon,   CpuTier::Dotprod, CpuTier::I8mm};

// The Arm tiers compute the same bits (matmul_neon.h: one float step per block shared by SMULL,
// SDOT and SMMLA), so a model answers alike on every Arm phone: each tier the machine has against
// the neon tier, at one token (SDOT / SMULL) and several (SMMLA from two), odd row counts (SMMLA's
// row pairs) and odd token counts (its column pairs).
TEST_P(MatmulTest, ArmTiersGiveTheSameBits) {
  const MatmulCase c = GetParam();
  if (!tier_has(cpu_features().best_tier(), CpuTier::Dotprod))
    GTEST_SKIP() << "fewer than two Arm tiers on this machine (" << cpu_tier_name(cpu_features().best_tier()) << ")";
  std::mt19937 rng(static_cast<uint32_t>(c.cols * 19 + 1));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t rows : {13, 70}) {
    RandomWeights rw(c.type, c.cols, rows, rng, 1.0f);
    for (int64_t T : {1, 2, 3, 5, 8, 17}) {
      std::vector<float> x(static_cast<size_t>(T * c.cols));
      for (auto& v : x) v = nd(rng);
      KernelContext neon_ctx(CpuTier::Neon);
      std::vector<float> want(static_cast<size_t>(T * rows), NAN);
      matmul(rw.W, x.data(), c.cols, T, want.data(), rows, neon_ctx);
      for (CpuTier tier : {CpuTier::Dotprod, CpuTier::I8mm}) {
        if (clamp_to_machine(tier) != tier) continue;
        KernelContext ctx(tier);
        std::vector<float> got(want.size(), NAN);
        matmul(rw.W, x.data(), c.cols, T, got.data(), rows, ctx);
        ASSERT_EQ(got, want) << ggml_type_name(c.type) << " " << cpu_tier_name(tier) << " ("
                             << matmul_path_name(matmul_path(rw.W, T, ctx)) << ") rows=" << rows << " T=" << T;
      }
    }
  }
}

// The Arm K-quant kernels keep the scalar reference's float step (matmul_neon_body.h), so on every
// Arm tier a K-quant product is the scalar tier's bit for bit, one token or several, at row
// counts that do not fill a column group.
TEST_P(MatmulTest, ArmKQuantsGiveTheScalarBits) {
  const MatmulCase c = GetParam();
  if (c.type != GgmlType::Q4_K && c.type != GgmlType::Q5_K && c.type != GgmlType::Q6_K)
    GTEST_SKIP() << "not a K-quant with an Arm kernel";
  if (!tier_has(cpu_features().best_tier(), CpuTier::Neon))
    GTEST_SKIP() << "not an Arm machine (" << cpu_tier_name(cpu_features().best_tier()) << ")";
  std::mt19937 rng(static_cast<uint32_t>(c.cols * 23 + 5));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rows = 11;
  RandomWeights rw(c.type, c.cols, rows, rng, 1.0f);
  for (int64_t T : {1, 3, 9}) {
    std::vector<float> x(static_cast<size_t>(T * c.cols));
    for (auto& v : x) v = nd(rng);
    KernelContext scalar_ctx(CpuTier::Scalar);
    std::vector<float> want(static_cast<size_t>(T * rows), NAN);
    matmul(rw.W, x.data(), c.cols, T, want.data(), rows, scalar_ctx);
    for (CpuTier tier : {CpuTier::Neon, CpuTier::Dotprod, CpuTier::I8mm}) {
      if (clamp_to_machine(tier) != tier) continue;
      KernelContext ctx(tier);
      const std::string path = matmul_path_name(matmul_path(rw.W, T, ctx));
      EXPECT_NE(path, "scalar") << ggml_type_name(c.type) << " on " << cpu_tier_name(tier);
      std::vector<float> got(want.size(), NAN);
      matmul(rw.W, x.data(), c.cols, T, got.data(), rows, ctx);
      ASSERT_EQ(got, want) << ggml_type_name(c.type) << " " << cpu_tier_name(tier) << " (" << path << ") T=" << T;
    }
  }
}

// The dispatcher on this machine: the tier a KernelContext holds is the one asked for where the
// machine has it and lower where not (never a tier of the other instruction set), and the path it
// takes for Q8_0 is that tier's. Asking every tier of every family runs its product, so on a core
// (or a qemu CPU model) without dotprod or i8mm a wrong dispatch would die of SIGILL here.
TEST(MatmulDispatch, EachTierRunsOnlyWhatTheMachineHas) {
  const CpuTier best = cpu_features().best_tier();
  std::mt19937 rng(7);
  RandomWeights rw(GgmlType::Q8_0, 64, 5, rng, 1.0f);
  std::vector<float> x(3 * 64, 0.5f), ref(3 * 5), y(3 * 5);
  matmul_ref(rw.W, x.data(), 64, 3, ref.data(), 5);
  for (CpuTier asked : kAllTiers) {
    KernelContext ctx(asked);
    EXPECT_TRUE(tier_has(best, ctx.tier)) << cpu_tier_name(asked) << " became " << cpu_tier_name(ctx.tier)
                                          << ", above or beside the machine's " << cpu_tier_name(best);
    if (tier_isa(asked) != tier_isa(best)) {
      EXPECT_EQ(ctx.tier, CpuTier::Scalar) << cpu_tier_name(asked);
    }
    const std::string path = matmul_path_name(matmul_path(rw.W, 3, ctx));
    const char* want = ctx.tier == CpuTier::I8mm      ? "i8mm"
                       : ctx.tier == CpuTier::Dotprod ? "dotprod"
                       : ctx.tier == CpuTier::Neon    ? "neon"
                       : ctx.tier == CpuTier::Scalar  ? "scalar"
                                                      : nullptr;  // the x86 tiers' paths: matmul_test above
    if (want) {
      EXPECT_EQ(path, want) << cpu_tier_name(asked);
    }
    matmul(rw.W, x.data(), 64, 3, y.data(), 5, ctx);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-4f) << cpu_tier_name(asked);
  }
}

// Which matrices a model packs at load, per tier: every packable type from AVX-512 VNNI up (the
// tiles and the vector units), Q4_0 and Q6_K on AVX2 (matmul_packed_avx2.h), none on the scalar
// tier or the Arm tiers. (A plan, not a product: every tier is checked on any machine.)
TEST(PlanMatrix, PacksTheTypesEachTierMultipliesPacked) {
  for (GgmlType type : kAllTypes)
    for (CpuTier tier : kAllTiers) {
      const bool want = tier_has(tier, CpuTier::Avx512Vnni) ? packable(type)
                        : tier == CpuTier::Avx2                ? type == GgmlType::Q4_0 || type == GgmlType::Q6_K
                                                               : false;  // scalar and the Arm tiers: rows only
      EXPECT_EQ(plan_matrix(type, tier).layout == WeightLayout::Packed, want)
          << ggml_type_name(type) << " on " << cpu_tier_name(tier);
    }
}

// The layout is decided from a one-token product; every product must agree with it, or a loaded
// matrix would lack the copy its path reads (or carry one nobody reads): where the plan packs,
// every T and both settings of the vector-unit switch read the packed groups; where it keeps the
// rows, a packed copy changes no path; a matrix left in rows never takes a packed path; Exact
// activations dequantize every non-F32 matrix.
TEST(PlanMatrix, LayoutAgreesWithEveryPath) {
  for (GgmlType type : kAllTypes)
    for (CpuTier tier : kAllTiers) {
      const MatrixPlan plan = plan_matrix(type, tier);
      for (int64_t T = 1; T <= 64; ++T)
        for (bool vector_units : {true, false}) {
          const MatmulPath packed = plan.path(T, WeightLayout::Packed, ActivationMode::Converted, vector_units);
          const MatmulPath rows = plan.path(T, WeightLayout::Rows, ActivationMode::Converted, vector_units);
          const std::string where = std::string(ggml_type_name(type)) + " on " + cpu_tier_name(tier) +
                                    " T=" + std::to_string(T) + " paths " + matmul_path_name(packed) + " / " +
                                    matmul_path_name(rows);
          if (plan.layout == WeightLayout::Packed) {
            EXPECT_TRUE(reads_packed(packed)) << where;
          } else {
            EXPECT_EQ(packed, rows) << where;
          }
          EXPECT_FALSE(reads_packed(rows)) << where;
          if (type != GgmlType::F32) {
            for (WeightLayout stored : {WeightLayout::Rows, WeightLayout::Packed})
              EXPECT_EQ(plan.path(T, stored, ActivationMode::Exact, vector_units), MatmulPath::Dequant) << where;
          }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Types, MatmulTest,
    ::testing::Values(MatmulCase{GgmlType::F32, 37}, MatmulCase{GgmlType::F32, 256}, MatmulCase{GgmlType::F16, 100},
                      MatmulCase{GgmlType::BF16, 64}, MatmulCase{GgmlType::Q4_0, 32}, MatmulCase{GgmlType::Q4_0, 96}, MatmulCase{GgmlType::Q4_0, 1024},
                      MatmulCase{GgmlType::Q4_1, 160}, MatmulCase{GgmlType::Q5_0, 96}, MatmulCase{GgmlType::Q5_1, 64},
                      MatmulCase{GgmlType::Q8_0, 96}, MatmulCase{GgmlType::Q8_0, 1024}, MatmulCase{GgmlType::Q8_0, 1312}, MatmulCase{GgmlType::Q4_K, 256},
                      MatmulCase{GgmlType::Q4_K, 768}, MatmulCase{GgmlType::Q5_K, 512}, MatmulCase{GgmlType::Q5_K, 1280}, MatmulCase{GgmlType::Q6_K, 256},
                      MatmulCase{GgmlType::Q6_K, 1280}, MatmulCase{GgmlType::Q8_K, 256}),
    [](const auto& info) {
      return std::string(ggml_type_name(info.param.type)) + "_" + std::to_string(info.param.cols);
    });

}  // namespace
}  // namespace tandem::kernels
