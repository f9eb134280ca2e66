// The engine against the independent float64 numpy reference
// (tests/reference/qwen35_ref.py, written from the spec, not from this code), on a
// generated tiny F32 model: every position of three prompts of >= 150 tokens,
// several chunks, lengths not multiples of 64. Bound: max|Δ| <= 1e-4 · max|ref|.
// Also a tiny Q4_K_M model with exact (float) activations against the same reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "model/golden_files.h"
#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"
#include "model/test_paths.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

bool have_numpy() {
  const std::string cmd = std::string(TANDEM_PYTHON) + " -c 'import numpy' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> toks(static_cast<size_t>(n));
  for (auto& t : toks) t = dist(rng);
  return toks;
}

// Runs tests/reference/qwen35_ref.py on the model for these tokens (its files, named after `name`,
// in a folder of the build tree's test-tmp private to this process: ctest runs this test in several
// processes at once, the plain run and one per forced tier) and returns the floats it wrote through `out_flag` (--out: the
// logits, --mtp-out: the MTP head's); empty, with a test failure, if the run fails.
std::vector<float> reference_output(const std::string& model_path, const std::vector<int32_t>& toks,
                                    const std::string& name, const std::string& out_flag) {
  const fs::path dir = fs::path(TANDEM_BINARY_DIR) / "test-tmp" / ("reference-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path tok_file = dir / (name + "_tokens.json"), out_file = dir / (name + ".f32");
  {
    std::ofstream f(tok_file);
    f << "[";
    for (size_t i = 0; i < toks.size(); ++i) f << (i ? "," : "") << toks[i];
    f << "]";
  }
  const std::string cmd = std::string(TANDEM_PYTHON) + " " + TANDEM_SOURCE_DIR + "/tests/reference/qwen35_ref.py " +
                          model_path + " --tokens-file " + tok_file.string() + " " + out_flag + " " + out_file.string();
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << "reference run failed: " << cmd;
    return {};
  }
  std::vector<float> ref(fs::file_size(out_file) / sizeof(float));
  std::ifstream(out_file, std::ios::binary).read(reinterpret_cast<char*>(ref.data()),
                                                 static_cast<std::streamsize>(ref.size() * sizeof(float)));
  return ref;
}

// max|ours - ref| and max|ref|, over ref's elements.
struct MaxAbs {
  double diff = 0, ref = 0;
};
MaxAbs max_abs(const std::vector<float>& ours, const std::vector<float>& ref) {
  MaxAbs m;
  for (size_t i = 0; i < ref.size(); ++i) {
    m.diff = std::max(m.diff, std::fabs(double(ours[i]) - ref[i]));
    m.ref = std::max(m.ref, std::fabs(double(ref[i])));
  }
  return m;
}

TEST(ReferenceLogits, TinyF32MatchesFloat64Reference) {
  if (!have_numpy()) GTEST_SKIP() << TANDEM_PYTHON << " with numpy not found: reference comparison NOT run";
  const std::string model_path = ensure_tiny_model("F32");
  auto model = Qwen35Model::load(model_path);
  std::mt19937 rng(2026);
  for (int64_t n : {150, 203, 257}) {
    const auto toks = random_tokens(n, model->hparams().n_vocab, rng);
    const auto ref = reference_output(model_path, toks, "ref_logits_" + std::to_string(n), "--out");
    ASSERT_EQ(static_cast<int64_t>(ref.size()), n * model->hparams().n_vocab);

    const auto [max_diff, max_ref] = max_abs(golden::run(*model, toks, /*split=*/false), ref);
    std::printf("  tiny F32, %lld tokens: max|d| %.3e, max|ref| %.3f\n", static_cast<long long>(n), max_diff, max_ref);
    EXPECT_LE(max_diff, 1e-4 * max_ref) << n << " tokens";
  }
}

// ActivationMode::Exact on a quantized file: the engine's dequantized-weight products against the
// reference run on the same file (which dequantizes the weights and keeps activations in float64).
// Same bound as the F32 model: quantized weights change the numbers, not how closely an
// F32-activation engine follows an exact forward pass of them.
TEST(ReferenceLogits, TinyQ4KMExactActivationsMatchFloat64Reference) {
  if (!have_numpy()) GTEST_SKIP() << TANDEM_PYTHON << " with numpy not found: reference comparison NOT run";
  const std::string model_path = ensure_tiny_model("Q4_K_M");
  auto model = Qwen35Model::load(model_path);
  model->set_activation_mode(kernels::ActivationMode::Exact);
  const int64_t n = 173;
  std::mt19937 rng(4242);
  const auto toks = random_tokens(n, model->hparams().n_vocab, rng);
  const auto ref = reference_output(model_path, toks, "exact_q4km_logits", "--out");
  ASSERT_EQ(static_cast<int64_t>(ref.size()), n * model->hparams().n_vocab);
  const auto [max_diff, max_ref] = max_abs(golden::run(*model, toks, /*split=*/false), ref);
  // The default (converted activations) is measurably further from this reference.
  model->set_activation_mode(kernels::ActivationMode::Converted);
  const double max_conv = max_abs(golden::run(*model, toks, /*split=*/false), ref).diff;
  std::printf("  tiny Q4_K_M, %lld tokens: exact activations max|d| %.3e, converted %.3e, max|ref| %.3f\n",
              static_cast<long long>(n), max_diff, max_conv, max_ref);
  EXPECT_LE(max_diff, 1e-4 * max_ref);
  EXPECT_GT(max_conv, 10 * max_diff);
}

// The MTP head (spec §7) over a 150-token prompt: row t = (token t, trunk hidden of
// position t-1, zeros for t = 0), against the reference's independent MTP forward.
TEST(ReferenceLogits, TinyF32MtpHeadMatchesFloat64Reference) {
  if (!have_numpy()) GTEST_SKIP() << TANDEM_PYTHON << " with numpy not found: reference comparison NOT run";
  const std::string model_path = ensure_tiny_model("F32");
  auto model = Qwen35Model::load(model_path);
  ASSERT_TRUE(model->has_mtp());
  const int64_t n = 150, n_embd = model->hparams().n_embd, n_vocab = model->hparams().n_vocab;
  std::mt19937 rng(77);
  const auto toks = random_tokens(n, n_vocab, rng);
  const auto ref = reference_output(model_path, toks, "mtp_logits", "--mtp-out");
  ASSERT_EQ(static_cast<int64_t>(ref.size()), n * n_vocab);

  auto seq = model->new_sequence(n);
  ForwardOptions opt;
  opt.logits = LogitsMode::None;
  opt.hidden = true;
  ForwardOutput trunk;
  model->forward(*seq, toks, opt, trunk);
  std::vector<float> hidden_in(static_cast<size_t>(n * n_embd), 0.0f);
  std::copy(trunk.hidden.begin(), trunk.hidden.end() - n_embd, hidden_in.begin() + n_embd);
  // Two calls (prompt chunks), as the head is kept in sync batch by batch.
  auto mtp = model->new_mtp_state(n);
  ForwardOutput a, b;
  model->mtp_forward(*mtp, std::span<const int32_t>(toks.data(), 100), hidden_in.data(), LogitsMode::All, a);
  model->mtp_forward(*mtp, std::span<const int32_t>(toks.data() + 100, n - 100), hidden_in.data() + 100 * n_embd,
                     LogitsMode::All, b);
  std::vector<float> ours = a.logits;
  ours.insert(ours.end(), b.logits.begin(), b.logits.end());
  ASSERT_EQ(ours.size(), ref.size());
  const auto [max_diff, max_ref] = max_abs(ours, ref);
  std::printf("  tiny F32 MTP head, %lld rows: max|d| %.3e, max|ref| %.3f\n", static_cast<long long>(n), max_diff,
              max_ref);
  EXPECT_LE(max_diff, 1e-4 * max_ref);
  EXPECT_EQ(mtp->n_past, n);
}

}  // namespace
}  // namespace tandem
