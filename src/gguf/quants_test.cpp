// Tests of the block formats: fp16/bf16 conversions, quantize/dequantize round trips, and
// bit-exactness against llama.cpp/gguf-py through the golden files in shared/golden.
#include "gguf/quants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/gguf_file.h"
#include "model/test_paths.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bitsf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

const GgmlType kAllTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                              GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q4_K,
                              GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_K};

// ---------------------------------------------------------------------------------------------
// Traits

TEST(GgmlType, TraitsTable) {
  struct Row { GgmlType t; uint32_t id; const char* name; int64_t be; size_t bb; GgmlType vdt; };
  const Row rows[] = {
      {GgmlType::F32, 0, "F32", 1, 4, GgmlType::F32},       {GgmlType::F16, 1, "F16", 1, 2, GgmlType::F16},
      {GgmlType::Q4_0, 2, "Q4_0", 32, 18, GgmlType::Q8_0},  {GgmlType::Q4_1, 3, "Q4_1", 32, 20, GgmlType::Q8_1},
      {GgmlType::Q5_0, 6, "Q5_0", 32, 22, GgmlType::Q8_0},  {GgmlType::Q5_1, 7, "Q5_1", 32, 24, GgmlType::Q8_1},
      {GgmlType::Q8_0, 8, "Q8_0", 32, 34, GgmlType::Q8_0},  {GgmlType::Q8_1, 9, "Q8_1", 32, 36, GgmlType::Q8_1},
      {GgmlType::Q4_K, 12, "Q4_K", 256, 144, GgmlType::Q8_K}, {GgmlType::Q5_K, 13, "Q5_K", 256, 176, GgmlType::Q8_K},
      {GgmlType::Q6_K, 14, "Q6_K", 256, 210, GgmlType::Q8_K}, {GgmlType::Q8_K, 15, "Q8_K", 256, 292, GgmlType::Q8_K},
      {GgmlType::BF16, 30, "BF16", 1, 2, GgmlType::BF16},
  };
  for (const Row& r : rows) {
    auto t = ggml_type_traits(r.id);
    ASSERT_TRUE(t.has_value()) << r.name;
    EXPECT_EQ(t->type, r.t);
    EXPECT_STREQ(t->name, r.name);
    EXPECT_EQ(t->block_elems, r.be) << r.name;
    EXPECT_EQ(t->block_bytes, r.bb) << r.name;
    EXPECT_EQ(t->vec_dot_type, r.vdt) << r.name;
    EXPECT_STREQ(ggml_type_name(r.t), r.name);
    EXPECT_EQ(&traits(r.t), &traits(r.t));
    EXPECT_EQ(ggml_type_from_name(r.name), r.t);
  }
  EXPECT_EQ(ggml_type_from_name("q4_k"), GgmlType::Q4_K);
  EXPECT_EQ(ggml_type_from_name("f16"), GgmlType::F16);
  EXPECT_EQ(ggml_type_from_name("bf16"), GgmlType::BF16);
  EXPECT_FALSE(ggml_type_from_name("q2_K").has_value());
  EXPECT_FALSE(ggml_type_from_name("").has_value());
  for (uint32_t id : {4u, 5u, 10u, 11u, 16u, 29u, 31u, 99u, 0xFFFFFFFFu}) EXPECT_FALSE(ggml_type_traits(id)) << id;
  EXPECT_STREQ(ggml_known_type_name(10), "Q2_K");
  EXPECT_EQ(ggml_known_type_name(99), nullptr);
}

TEST(GgmlType, RowBytes) {
  EXPECT_EQ(row_bytes(GgmlType::F32, 7), 28u);
  EXPECT_EQ(row_bytes(GgmlType::F16, 7), 14u);
  EXPECT_EQ(row_bytes(GgmlType::Q4_0, 64), 36u);
  EXPECT_EQ(row_bytes(GgmlType::Q4_K, 512), 288u);
  EXPECT_EQ(row_bytes(GgmlType::Q6_K, 256), 210u);
  EXPECT_EQ(row_bytes(GgmlType::Q8_K, 0), 0u);
  EXPECT_THROW(row_bytes(GgmlType::Q4_0, 33), std::invalid_argument);
  EXPECT_THROW(row_bytes(GgmlType::Q4_K, 384), std::invalid_argument);
  EXPECT_THROW(row_bytes(GgmlType::F32, -1), std::invalid_argument);
  EXPECT_THROW(row_bytes(GgmlType::F32, INT64_MAX), std::invalid_argument);  // overflow
}

// ---------------------------------------------------------------------------------------------
// fp16 / bf16

TEST(Fp16, EdgeCases) {
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);                     // max finite
  EXPECT_EQ(fp32_to_fp16(65519.99f), 0x7BFF);                    // below the halfway point
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);                     // halfway rounds (to even) up to inf
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(INFINITY), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);        // smallest subnormal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);        // tie → even (0)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);        // 1.5 ulp tie → even (2)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);        // smallest normal
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie → even
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie → even (up)
  EXPECT_EQ(fp32_to_fp16(NAN), 0x7E00);
  EXPECT_EQ(fp32_to_fp16(-NAN) & 0x7FFF, 0x7E00);
  EXPECT_EQ(fp32_to_fp16(bitsf(0x7F800001u)), 0x7E00);  // signaling NaN stays NaN, not inf

  EXPECT_EQ(fbits(fp16_to_fp32(0x0000)), 0x00000000u);
  EXPECT_EQ(fbits(fp16_to_fp32(0x8000)), 0x80000000u);
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x7C00), INFINITY);
  EXPECT_EQ(fp16_to_fp32(0xFC00), -INFINITY);
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7C01)));
}

TEST(Fp16, AllHalvesRoundTrip) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
      continue;
    }
    ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
  }
}

#if defined(__aarch64__)
using CompilerHalf = __fp16;  // GCC 12 has no _Float16 in C++ on Arm64; __fp16 is the same IEEE half
#define TANDEM_COMPILER_HALF 1
#elif defined(__FLT16_MAX__) && !defined(__clang__)
using CompilerHalf = _Float16;
#define TANDEM_COMPILER_HALF 1
#endif
#ifdef TANDEM_COMPILER_HALF
// The compiler's half conversion is IEEE round-to-nearest-even: an independent reference.
TEST(Fp16, MatchesCompilerFloat16) {
  std::mt19937 rng(7);
  for (int i = 0; i < 500000; ++i) {
    const float f = bitsf(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    const CompilerHalf h = static_cast<CompilerHalf>(f);
    uint16_t hb;
    std::memcpy(&hb, &h, 2);
    ASSERT_EQ(fp32_to_fp16(f), hb) << std::hex << fbits(f);
    ASSERT_EQ(fbits(fp16_to_fp32(hb)), fbits(static_cast<float>(h)));
  }
}
#endif

TEST(Bf16, EdgeCases) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_bf16(bitsf(0x3F808000u)), 0x3F80);  // tie → even (down)
  EXPECT_EQ(fp32_to_bf16(bitsf(0x3F818000u)), 0x3F82);  // tie → even (up)
  EXPECT_EQ(fp32_to_bf16(bitsf(0x3F808001u)), 0x3F81);  // above tie
  EXPECT_EQ(fp32_to_bf16(INFINITY), 0x7F80);
  EXPECT_EQ(fp32_to_bf16(-INFINITY), 0xFF80);
  EXPECT_EQ(fp32_to_bf16(bitsf(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds to inf, as in ggml
  EXPECT_EQ(fp32_to_bf16(bitsf(0x7F800001u)), 0x7FC0);  // signaling NaN → quiet NaN (not inf)
  EXPECT_EQ(fp32_to_bf16(bitsf(0xFFC12345u)), 0xFFC1);  // NaN payload top bits kept
  EXPECT_EQ(fp32_to_bf16(bitsf(0x00010000u)), 0x0001);  // subnormal
  EXPECT_EQ(fbits(bf16_to_fp32(0x3F80)), 0x3F800000u);
  EXPECT_EQ(fbits(bf16_to_fp32(0xFFC1)), 0xFFC10000u);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(fp32_to_bf16(f), h | 0x40);
    } else {
      ASSERT_EQ(fp32_to_bf16(f), h);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips

std::vector<float> random_row(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = nd(rng);
  return x;
}

std::vector<float> round_trip(GgmlType t, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_bytes(t, n), 0xCD);
  quantize_row(t, x.data(), q.data(), n);
  std::vector<float> y(x.size(), NAN);
  dequantize_row(t, q.data(), y.data(), n);
  return y;
}

double max_rel_rmse(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 5e-4;
    case GgmlType::BF16: return 4e-3;
    case GgmlType::Q8_0:
    case GgmlType::Q8_1:
    case GgmlType::Q8_K: return 0.01;
    case GgmlType::Q6_K: return 0.03;
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q5_K: return 0.06;
    default: return 0.12;  // 4-bit
  }
}

TEST(Quants, RoundTripEveryType) {
  for (GgmlType t : kAllTypes) {
    for (float scale : {1.0f, 1e-3f, 50.0f}) {
      const auto x = random_row(256 * 8, 1234 + static_cast<uint32_t>(t), scale);
      const auto y = round_trip(t, x);
      double se = 0, sx = 0, maxerr = 0, amax = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << ggml_type_name(t) << " i=" << i;
        se += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
        sx += double(x[i]) * x[i];
        maxerr = std::max(maxerr, std::fabs(double(x[i]) - y[i]));
        amax = std::max(amax, std::fabs(double(x[i])));
      }
      const double rel = std::sqrt(se / sx);
      EXPECT_LE(rel, max_rel_rmse(t)) << ggml_type_name(t) << " scale " << scale;
      EXPECT_LE(maxerr, amax * (max_rel_rmse(t) * 3 + 1e-12)) << ggml_type_name(t) << " scale " << scale;
    }
  }
}

TEST(Quants, ZeroAndConstantBlocks) {
  for (GgmlType t : kAllTypes) {
    const int64_t n = 512;
    std::vector<float> zero(n, 0.0f);
    auto y = round_trip(t, zero);
    for (float v : y) ASSERT_EQ(v, 0.0f) << ggml_type_name(t);
    // A block that is exactly representable everywhere: +-1 and 0 survive every type.
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((i % 3) - 1);
    y = round_trip(t, x);
    // (Symmetric 4/5-bit types cannot hit +max exactly when the signed max is negative: 7/8, 15/16.)
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], x[i], max_rel_rmse(t) * 2 + 1e-6) << ggml_type_name(t) << " i=" << i;
  }
}

TEST(Quants, Q8_0ReferenceRule) {
  // amax = 127 gives d = 1 and id = 1 exactly; roundf rounds the 2.5 tie away from zero.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.49f;
  BlockQ8_0 b;
  quantize_row(GgmlType::Q8_0, x.data(), &b, 32);
  EXPECT_EQ(b.d, fp32_to_fp16(1.0f));
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 3);
  EXPECT_EQ(b.qs[2], -3);
  EXPECT_EQ(b.qs[3], 0);
  // ggml-cpu's SIMD activation path rounds half to even instead.
  BlockQ8_0 a;
  quantize_row_activation(GgmlType::Q8_0, x.data(), &a, 32);
  EXPECT_EQ(a.d, b.d);
  EXPECT_EQ(a.qs[1], 2);
  EXPECT_EQ(a.qs[2], -2);
  // Q8_1 carries s = d * sum(q).
  BlockQ8_1 c;
  quantize_row(GgmlType::Q8_1, x.data(), &c, 32);
  EXPECT_EQ(c.s, fp32_to_fp16(127.0f + 3 - 3));
}

TEST(Quants, Q8_KReferenceRule) {
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f;  // signed max → iscale = 1, d = 1
  x[1] = 2.5f;     // ties to even
  x[2] = 3.5f;
  x[3] = 100.0f;
  for (int i = 16; i < 32; ++i) x[i] = 1.0f;
  BlockQ8_K b;
  quantize_row(GgmlType::Q8_K, x.data(), &b, 256);
  EXPECT_EQ(b.d, 1.0f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 2);
  EXPECT_EQ(b.qs[2], 4);
  EXPECT_EQ(b.qs[3], 100);
  EXPECT_EQ(b.bsums[0], -127 + 2 + 4 + 100);
  EXPECT_EQ(b.bsums[1], 16);
  EXPECT_EQ(b.bsums[2], 0);
  // Positive max → negative iscale, d negative; values still reconstruct.
  x.assign(256, 0.0f);
  x[5] = 2.0f;
  x[6] = -1.0f;
  quantize_row(GgmlType::Q8_K, x.data(), &b, 256);
  EXPECT_FLOAT_EQ(b.d, 2.0f / -127.0f);
  EXPECT_EQ(b.qs[5], -127);
  EXPECT_EQ(b.qs[6], 64);  // 63.5 → 64 (even)
  BlockQ8_K a;
  quantize_row_activation(GgmlType::Q8_K, x.data(), &a, 256);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
}

TEST(Quants, ActivationMatchesRefExceptTies) {
  // Without exact ties, x*(127/amax) and x*(1/(amax/127)) round the same almost always; make sure
  // any difference is at most one quantum.
  const auto x = random_row(32 * 64, 99);
  std::vector<BlockQ8_0> r(64), a(64);
  quantize_row(GgmlType::Q8_0, x.data(), r.data(), 32 * 64);
  quantize_row_activation(GgmlType::Q8_0, x.data(), a.data(), 32 * 64);
  for (int b = 0; b < 64; ++b) {
    EXPECT_EQ(r[b].d, a[b].d);
    for (int j = 0; j < 32; ++j) EXPECT_LE(std::abs(r[b].qs[j] - a[b].qs[j]), 1);
  }
  std::vector<uint16_t> h(32 * 64);
  quantize_row_activation(GgmlType::F16, x.data(), h.data(), 32 * 64);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(h[i], fp32_to_fp16(x[i]));
  EXPECT_THROW(quantize_row_activation(GgmlType::Q4_0, x.data(), r.data(), 32), std::invalid_argument);
}

TEST(Quants, RejectsPartialBlocks) {
  std::vector<float> x(300);
  std::vector<uint8_t> q(4096);
  EXPECT_THROW(quantize_row(GgmlType::Q4_K, x.data(), q.data(), 300), std::invalid_argument);
  EXPECT_THROW(dequantize_row(GgmlType::Q8_0, q.data(), x.data(), 33), std::invalid_argument);
}

TEST(Quants, NonFiniteInputIsDefined) {
  // Garbage in, garbage out — but no UB (checked under UBSan): NaN/inf must not reach an int cast.
  std::vector<float> x(256, 1.0f);
  x[3] = NAN;
  x[7] = INFINITY;
  x[100] = -INFINITY;
  for (GgmlType t : kAllTypes) {
    std::vector<uint8_t> q(row_bytes(t, 256));
    quantize_row(t, x.data(), q.data(), 256);
    std::vector<float> y(256);
    dequantize_row(t, q.data(), y.data(), 256);
  }
}

// ---------------------------------------------------------------------------------------------
// Golden data (llama.cpp / gguf-py)

fs::path golden_dir() { return fs::path(TANDEM_SHARED_DIR) / "golden"; }

#define SKIP_IF_NO_GOLDEN()                                                                            \
  if (!fs::exists(golden_dir() / "dequant" / "manifest.json")) {                                       \
    GTEST_SKIP() << "golden data absent: " << (golden_dir() / "dequant" / "manifest.json").string()    \
                 << " not found (set -DTANDEM_SHARED_DIR)";                                            \
  }

std::vector<uint8_t> read_all(const fs::path& p) {
  std::vector<uint8_t> b(static_cast<size_t>(fs::file_size(p)));
  std::ifstream f(p, std::ios::binary);
  f.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return b;
}

std::vector<float> dequantize_tensor(const GgufTensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  const size_t rb = row_bytes(t.type, t.ne[0]);
  for (int64_t r = 0; r < t.n_rows(); ++r) {
    dequantize_row(t.type, t.data + r * rb, out.data() + r * t.ne[0], t.ne[0]);
  }
  return out;
}

TEST(QuantsGolden, DequantMatchesGgufPyBitExactly) {
  SKIP_IF_NO_GOLDEN();
  std::ifstream mf(golden_dir() / "dequant" / "manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(mf);
  ASSERT_TRUE(manifest.is_array());
  ASSERT_GE(manifest.size(), 1u);
  std::map<std::string, std::unique_ptr<GgufFile>> files;
  std::map<std::string, int> types_seen;
  for (const auto& e : manifest) {
    const std::string model = e.at("model");
    const std::string tensor = e.at("tensor");
    const std::string type = e.at("type");
    SCOPED_TRACE(model + " " + tensor + " " + type);
    auto& f = files[model];
    if (!f) f = GgufFile::open((golden_dir() / model).string());
    const GgufTensorInfo* t = f->find_tensor(tensor);
    ASSERT_NE(t, nullptr);
    EXPECT_STREQ(ggml_type_name(t->type), type.c_str());
    const auto& ne = e.at("ne");
    for (size_t d = 0; d < ne.size(); ++d) EXPECT_EQ(t->ne[d], ne[d].get<int64_t>());
    ASSERT_EQ(t->n_elements(), e.at("n").get<int64_t>());
    const std::vector<float> got = dequantize_tensor(*t);
    const std::vector<uint8_t> want = read_all(golden_dir() / e.at("file").get<std::string>());
    ASSERT_EQ(want.size(), got.size() * sizeof(float));
    if (std::memcmp(want.data(), got.data(), want.size()) != 0) {
      size_t bad = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        float w;
        std::memcpy(&w, want.data() + 4 * i, 4);
        if (fbits(w) != fbits(got[i])) {
          if (bad++ < 5) ADD_FAILURE() << "element " << i << ": got " << got[i] << " want " << w;
        }
      }
      ADD_FAILURE() << bad << " of " << got.size() << " elements differ";
    }
    types_seen[type]++;
  }
  for (const char* ty : {"F16", "Q8_0", "Q4_0", "Q5_0", "Q4_K", "Q6_K"}) EXPECT_GT(types_seen[ty], 0) << ty;
}

// llama-quantize (no imatrix) quantizes with ggml's quantize_row_*_ref, so quantizing the F32 model's
// tensors must reproduce the quantized files byte for byte.
TEST(QuantsGolden, QuantizeMatchesLlamaQuantizeBitExactly) {
  SKIP_IF_NO_GOLDEN();
  const fs::path models = golden_dir() / "models";
  std::map<std::string, int> types_checked;
  for (const char* m : {"a", "b"}) {
    const fs::path f32_path = models / (std::string("qwen35-golden-") + m + "-F32.gguf");
    if (!fs::exists(f32_path)) continue;
    auto ref = GgufFile::open(f32_path.string());
    for (const auto& entry : fs::directory_iterator(models)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(std::string("qwen35-golden-") + m + "-", 0) != 0 || entry.path() == f32_path) continue;
      auto q = GgufFile::open(entry.path().string());
      std::map<GgmlType, int> per_type;
      for (const GgufTensorInfo& t : q->tensors()) {
        if (t.type == GgmlType::F32) continue;
        // A few tensors of each type per file keep this fast; TANDEM_GOLDEN_FULL=1 checks all of them.
        if (per_type[t.type]++ >= 3 && !std::getenv("TANDEM_GOLDEN_FULL")) continue;
        SCOPED_TRACE(name + " " + t.name + " " + ggml_type_name(t.type));
        const GgufTensorInfo* src = ref->find_tensor(t.name);
        ASSERT_NE(src, nullptr);
        ASSERT_EQ(src->type, GgmlType::F32);
        ASSERT_EQ(src->n_elements(), t.n_elements());
        const float* x = reinterpret_cast<const float*>(src->data);
        std::vector<uint8_t> out(t.nbytes);
        const size_t rb = row_bytes(t.type, t.ne[0]);
        for (int64_t r = 0; r < t.n_rows(); ++r) {
          quantize_row(t.type, x + r * t.ne[0], out.data() + r * rb, t.ne[0]);
        }
        size_t first_bad = out.size();
        for (size_t i = 0; i < out.size(); ++i) {
          if (out[i] != t.data[i]) {
            first_bad = i;
            break;
          }
        }
        EXPECT_EQ(first_bad, out.size()) << "first differing byte (row " << first_bad / rb << ", byte "
                                         << first_bad % rb << " of " << rb << ")";
        types_checked[ggml_type_name(t.type)]++;
      }
    }
  }
  if (types_checked.empty()) GTEST_SKIP() << "golden data absent: no golden F32/quantized model pairs in " << models;
  for (const char* ty : {"F16", "Q8_0", "Q4_0", "Q5_0", "Q4_K", "Q6_K"}) EXPECT_GT(types_checked[ty], 0) << ty;
}

}  // namespace
}  // namespace tandem
