// Logits against llama.cpp's own, on the files in ../shared/golden (made by
// llama.cpp's tooling; see its README for how and for the tolerances used here).
//
//  * F32 files: max|Δ| <= 1e-3 against llama.cpp's batch logits, same argmax wherever
//    llama.cpp's top-1/top-2 margin exceeds 1e-3; also our incremental path against
//    llama.cpp's split mode.
//  * F16 and quantized files: we convert activations as ggml does, so the bound is
//    2x the README's "ref B" max of that (file, sequence) row, read from the README's
//    tables; argmax judged where the margin exceeds that bound.
//  * The same files with ActivationMode::Exact (dequantized weights times float
//    activations): 2x the README's "ref A" max of every row, argmax where the margin
//    exceeds that bound — the acceptance's other option, here met on every row.
//
// Skips visibly when ../shared/golden is absent (a user's machine).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "model/qwen35/qwen35_model.h"
#include "model/golden_files.h"
#include "model/test_paths.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using golden::Compare;
using golden::read_f32;
using golden::read_tokens;
using golden::run;

const fs::path kGolden = fs::path(TANDEM_SHARED_DIR) / "golden";
using golden::kVocab;

// "ref A" and "ref B" max columns of the README's quantized tables, by "a-Q4_0.s3".
struct RefRow { double ref_a, ref_b; };
std::map<std::string, RefRow> read_readme_refs() {
  std::ifstream f(kGolden / "README.md");
  std::map<std::string, RefRow> rows;
  std::string line, model;
  while (std::getline(f, line)) {
    if (line.rfind("####", 0) == 0) {
      if (line.find("golden-a") != std::string::npos) model = "a";
      if (line.find("golden-b") != std::string::npos) model = "b";
      continue;
    }
    if (line.empty() || line[0] != '|') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string cell;
    while (std::getline(ss, cell, '|')) {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (cells.size() < 9 || cells[1].size() != 2 || cells[1][0] != 's') continue;
    if (cells[5].find('/') == std::string::npos || cells[7].find('/') == std::string::npos) continue;
    try {
      rows[model + "-" + cells[0] + "." + cells[1]] = {std::stod(cells[5]), std::stod(cells[7])};
    } catch (const std::exception&) {
    }
  }
  return rows;
}

Compare compare(const std::vector<float>& ours, const std::vector<float>& ref, double margin_floor) {
  return golden::compare(ours, ref, kVocab, margin_floor);
}

using golden::kSeqs;

std::unique_ptr<Qwen35Model> load_golden(const std::string& name) {
  return Qwen35Model::load((kGolden / "models" / ("qwen35-golden-" + name + ".gguf")).string());
}

// The batch logits of (file, sequence) with the default activations, computed once per process:
// GoldenLogits and the summary below read the same rows (gtest runs the summary first), and
// computing them twice doubled the golden tests' time, most felt under emulation (the Arm tiers
// under qemu). `model` is loaded on the first row this process has not computed yet.
const std::vector<float>& batch_logits(const std::string& name, const char* seq, std::unique_ptr<Qwen35Model>& model) {
  static std::map<std::string, std::vector<float>> cache;
  const std::string key = name + "." + seq;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (!model) model = load_golden(name);
  return cache[key] = run(*model, read_tokens(kGolden / "tokens" / (std::string(seq) + ".json")), false);
}

// Quantized rows and rounding-boundary flips. An activation that lands within an ulp
// of a quantization boundary (a code's .5, an fp16 tie of a block scale) is rounded one
// way by one float32 summation order and the other way by another; through the
// recurrent state the difference then reaches every later position. llama.cpp's own
// logits sit on one side by chance, and so does the float64 "ref B" run (for the rows
// where ref B is ~1e-6, the two happened to agree). Such cases were traced op by op with
// tests/reference's trace: golden-a Q6_K s2 (earlier kernels: token 10, a Q8_0 block scale
// 2.5e-8 relative from an fp16 tie; now: position 3, blk.2 ssm_out's Q8_K input, element
// 213 at 5.4999989 code units in float64 and 5.5000059 in our float32).
// No float32 engine can reproduce that without replaying ggml's exact operation order,
// so a quantized row that misses 2x ref B is accepted only when
//   * it stays within 2x ref A (exact-activation noise), and
//   * its first rows match within 2x ref B before it diverges (the flip signature),
// and at least 80% of all quantized rows must meet the ref-B bound outright.
class GoldenLogits : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenLogits, MatchLlamaCpp) {
  if (!fs::exists(kGolden / "manifest.json"))
    GTEST_SKIP() << "golden data absent at " << kGolden << ": llama.cpp comparison NOT run";
  const std::string name = GetParam();  // e.g. "a-Q4_0"
  const std::string type = name.substr(2);
  const bool f32 = type == "F32";
  std::unique_ptr<Qwen35Model> model;
  const auto refs = read_readme_refs();
  for (const char* seq : kSeqs) {
    const auto toks = read_tokens(kGolden / "tokens" / (std::string(seq) + ".json"));
    ASSERT_FALSE(toks.empty());
    const auto ref = read_f32(kGolden / "logits" / ("qwen35-golden-" + name + "." + seq + ".batch.f32"));
    ASSERT_EQ(ref.size(), toks.size() * kVocab);
    const auto& ours = batch_logits(name, seq, model);
    ASSERT_EQ(ours.size(), ref.size()) << name << " " << seq;
    if (f32) {
      const Compare c = compare(ours, ref, 1e-3);
      std::printf("  golden-%-9s %s batch: max|d| %.3e (bound 1e-3), argmax %d/%d where margin > 1e-3\n",
                  name.c_str(), seq, c.max_diff, c.argmax_agree, c.argmax_checked);
      EXPECT_LE(c.max_diff, 1e-3) << name << " " << seq;
      EXPECT_EQ(c.argmax_agree, c.argmax_checked) << name << " " << seq;
    } else {
      auto it = refs.find(name + "." + seq);
      ASSERT_NE(it, refs.end()) << "README has no ref A/B row for " << name << " " << seq;
      const double bound_b = 2.0 * it->second.ref_b, bound_a = 2.0 * it->second.ref_a;
      const Compare c = compare(ours, ref, bound_b);
      if (c.max_diff <= bound_b) {
        std::printf("  golden-%-9s %s batch: max|d| %.3e <= 2x ref B %.3e, argmax %d/%d where margin > bound\n",
                    name.c_str(), seq, c.max_diff, bound_b, c.argmax_agree, c.argmax_checked);
        EXPECT_EQ(c.argmax_agree, c.argmax_checked) << name << " " << seq;
      } else {
        // First position that leaves the ref-B bound.
        int64_t first = 0;
        for (; first < static_cast<int64_t>(toks.size()); ++first) {
          double m = 0;
          for (int64_t v = 0; v < kVocab; ++v)
            m = std::max(m, std::fabs(double(ours[first * kVocab + v]) - ref[first * kVocab + v]));
          if (m > bound_b) break;
        }
        const Compare ca = compare(ours, ref, bound_a);
        std::printf("  golden-%-9s %s batch: max|d| %.3e > 2x ref B %.3e: rounding flip at position %lld "
                    "(exact before it); <= 2x ref A %.3e, argmax %d/%d where margin > that\n",
                    name.c_str(), seq, c.max_diff, bound_b, static_cast<long long>(first), bound_a,
                    ca.argmax_agree, ca.argmax_checked);
        EXPECT_LE(c.max_diff, bound_a) << name << " " << seq;
        EXPECT_GE(first, 1) << name << " " << seq << ": differs from the first position, not a propagated flip";
        EXPECT_EQ(ca.argmax_agree, ca.argmax_checked) << name << " " << seq;
      }
    }
    if (f32) {
      if (!model) model = load_golden(name);
      const auto ref_split = read_f32(kGolden / "logits" / ("qwen35-golden-" + name + "." + seq + ".split.f32"));
      const auto ours_split = run(*model, toks, true);
      const Compare cs = compare(ours_split, ref_split, 1e-3);
      EXPECT_LE(cs.max_diff, 1e-3) << name << " " << seq << " split";
      EXPECT_EQ(cs.argmax_agree, cs.argmax_checked) << name << " " << seq << " split";
    }
  }
}

// The README's second tolerance: an engine that keeps activations in float (ActivationMode::Exact)
// should differ from llama.cpp about as much as the float64 forward on dequantized weights does
// ("ref A"). Every quantized (file, sequence) row must meet 2x ref A, with no exceptions.
class GoldenLogitsExact : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenLogitsExact, WithinTwiceRefA) {
  if (!fs::exists(kGolden / "manifest.json"))
    GTEST_SKIP() << "golden data absent at " << kGolden << ": llama.cpp comparison NOT run";
  const std::string name = GetParam();
  auto model = Qwen35Model::load((kGolden / "models" / ("qwen35-golden-" + name + ".gguf")).string());
  model->set_activation_mode(kernels::ActivationMode::Exact);
  ASSERT_EQ(model->activation_mode(), kernels::ActivationMode::Exact);
  const auto refs = read_readme_refs();
  for (const char* seq : kSeqs) {
    const auto toks = read_tokens(kGolden / "tokens" / (std::string(seq) + ".json"));
    const auto ref = read_f32(kGolden / "logits" / ("qwen35-golden-" + name + "." + seq + ".batch.f32"));
    ASSERT_EQ(ref.size(), toks.size() * kVocab);
    auto it = refs.find(name + "." + seq);
    ASSERT_NE(it, refs.end()) << "README has no ref A/B row for " << name << " " << seq;
    const double bound_a = 2.0 * it->second.ref_a;
    const Compare c = compare(run(*model, toks, false), ref, bound_a);
    std::printf("  golden-%-9s %s exact activations: max|d| %.3e <= 2x ref A %.3e, argmax %d/%d where margin > bound\n",
                name.c_str(), seq, c.max_diff, bound_a, c.argmax_agree, c.argmax_checked);
    EXPECT_LE(c.max_diff, bound_a) << name << " " << seq;
    EXPECT_EQ(c.argmax_agree, c.argmax_checked) << name << " " << seq;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, GoldenLogitsExact,
                         ::testing::Values("a-F16", "a-Q8_0", "a-Q4_0", "a-Q4_K_M", "a-Q6_K", "b-Q8_0", "b-Q4_K_M"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

// Over every quantized row (its logits shared with GoldenLogits through batch_logits).
TEST(GoldenLogitsSummary, MostQuantizedRowsMeetTheRefBBound) {
  if (!fs::exists(kGolden / "manifest.json"))
    GTEST_SKIP() << "golden data absent at " << kGolden << ": llama.cpp comparison NOT run";
  const auto refs = read_readme_refs();
  int rows = 0, strict = 0;
  for (const char* name : {"a-F16", "a-Q8_0", "a-Q4_0", "a-Q4_K_M", "a-Q6_K", "b-Q8_0", "b-Q4_K_M"}) {
    std::unique_ptr<Qwen35Model> model;
    for (const char* seq : kSeqs) {
      const auto ref = read_f32(kGolden / "logits" / ("qwen35-golden-" + std::string(name) + "." + seq + ".batch.f32"));
      const double bound_b = 2.0 * refs.at(std::string(name) + "." + seq).ref_b;
      const auto& ours = batch_logits(name, seq, model);
      ASSERT_EQ(ours.size(), ref.size()) << name << " " << seq;
      ++rows;
      strict += compare(ours, ref, bound_b).max_diff <= bound_b ? 1 : 0;
    }
  }
  std::printf("  %d of %d quantized (file, sequence) rows within 2x ref B\n", strict, rows);
  EXPECT_GE(strict * 10, rows * 8) << strict << " of " << rows << " rows within 2x ref B";
}

INSTANTIATE_TEST_SUITE_P(Files, GoldenLogits,
                         ::testing::Values("a-F32", "b-F32", "a-F16", "a-Q8_0", "a-Q4_0", "a-Q4_K_M", "a-Q6_K",
                                           "b-Q8_0", "b-Q4_K_M"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace tandem
