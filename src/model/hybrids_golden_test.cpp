// LFM2 and Granite-4.0-H logits against llama.cpp's own, on the files in ../shared/golden-hybrids
// (random weights with the real tensor sets; its README says how they were made and gives the
// tolerances used here):
//  * F32 files: max|Δ| <= 1e-3 against llama.cpp's batch logits, and our one-token-per-call
//    path against its split logits; the argmax equal wherever llama.cpp's top-1/top-2 margin
//    exceeds 1e-3.
//  * Quantized files: we convert activations as ggml-cpu does, so the README's bounds for such an
//    engine: max-abs, mean-abs and the share of rows whose argmax agrees, per file.
// The test loads with the default kernel tier; CMake runs every *Golden* test again per lower
// tier (model_logits_tier_*). Files held back for acceptance (granite-b) are skipped when absent.
// Skips visibly when ../shared/golden-hybrids is absent (a user's machine).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/architectures.h"
#include "model/golden_files.h"
#include "model/test_paths.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using golden::read_f32;
using golden::read_tokens;

const fs::path kDir = fs::path(TANDEM_SHARED_DIR) / "golden-hybrids";
using golden::kVocab;

struct Bound {
  const char* file;
  bool f32;
  double max_abs, mean_abs, argmax_share;  // quantized: the README's bounds for ggml-converted activations
};
const Bound kFiles[] = {
    {"lfm2-a-F32", true, 1e-3, 1e-4, 1.0},
    {"granite-a-F32", true, 1e-3, 1e-4, 1.0},
    {"granite-b-F32", true, 1e-3, 1e-4, 1.0},
    {"lfm2-a-Q4_K_M", false, 0.5, 0.05, 0.90},
    {"granite-a-Q4_K_M", false, 0.4, 0.04, 0.90},
    {"granite-b-Q8_0", false, 0.4, 0.03, 0.95},
};
using golden::kSeqs;

class HybridGoldenLogits : public ::testing::TestWithParam<Bound> {};

TEST_P(HybridGoldenLogits, MatchLlamaCpp) {
  const Bound& b = GetParam();
  const fs::path model = kDir / "models" / (std::string(b.file) + ".gguf");
  if (!fs::exists(kDir / "manifest.json")) GTEST_SKIP() << "SKIPPED: " << kDir << " not found";
  if (!fs::exists(model)) GTEST_SKIP() << "SKIPPED: " << model << " not shipped (held back for acceptance)";
  auto m = load_model(model.string(), LoadOptions{});
  for (const char* s : kSeqs) {
    const auto toks = read_tokens(kDir / "tokens" / (std::string(s) + ".json"));
    ASSERT_FALSE(toks.empty()) << s;
    for (bool split : {false, true}) {
      if (split && !b.f32) continue;  // llama.cpp's split logits are stored for the F32 files only
      const fs::path ref_path = kDir / "logits" / (std::string(b.file) + "." + s + (split ? ".split.f32" : ".batch.f32"));
      const auto ref = read_f32(ref_path);
      ASSERT_EQ(ref.size(), toks.size() * kVocab) << ref_path;
      const auto ours = golden::run(*m, toks, split);
      ASSERT_EQ(ours.size(), ref.size());
      // Quantized: the argmax share over every row.
      const golden::Compare c = golden::compare(ours, ref, kVocab, b.f32 ? 1e-3 : 0.0);
      const std::string where = std::string(b.file) + " " + s + (split ? " split" : " batch") + " on " +
                                cpu_tier_name(m->cpu_tier());
      EXPECT_LE(c.max_diff, b.max_abs) << where;
      EXPECT_LE(c.mean(), b.mean_abs) << where;
      if (b.f32) {
        EXPECT_EQ(c.argmax_agree, c.argmax_checked) << where;
      } else if (toks.size() > 1) {  // s1 is one row: the README's shares are over s2-s5
        EXPECT_GE(c.argmax_agree, b.argmax_share * c.argmax_checked) << where;
      }
      std::printf("%-18s %s %-5s max %.3g mean %.3g argmax %d/%d\n", b.file, s, split ? "split" : "batch", c.max_diff,
                  c.mean(), c.argmax_agree, c.argmax_checked);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, HybridGoldenLogits, ::testing::ValuesIn(kFiles),
                         [](const ::testing::TestParamInfo<Bound>& i) {
                           std::string n = i.param.file;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace tandem
