// The vision encoder against llama.cpp's golden data (../shared/golden-vision, spec vision.md §9):
// the preprocessed image llama.cpp fed its encoder goes in, and every dumped graph node is
// compared by name, so a wrong block is found where it goes wrong; then the embeddings of the
// F32, F16 and Q8_0 mmproj files.
#include "vision/vision_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "runtime/cpu_features.h"
#include "vision/golden_vision_test_util.h"
#include "model/test_paths.h"

namespace tandem::vision {
namespace {

namespace fs = std::filesystem;
using golden::Json;
const fs::path kDir = golden::dir();
using golden::max_abs_diff;
using golden::read_f32;

const Json& manifest() { return golden::manifest(); }

#define SKIP_WITHOUT_GOLDEN() SKIP_WITHOUT_GOLDEN_VISION()

struct Encoded {
  std::vector<float> embd;
  std::map<std::string, std::vector<float>> nodes;  // rows packed (ld = cols)
  EncodeStats stats;
};

Encoded encode_run(const std::string& run, const std::string& mmproj, CpuTier tier = default_cpu_tier()) {
  const auto& r = manifest()["runs"][run];
  const std::vector<float> pix = read_f32(kDir / "out" / r["preproc_file"].get<std::string>());
  const int w = r["preprocessed_size"][0], h = r["preprocessed_size"][1];
  EXPECT_EQ(pix.size(), static_cast<size_t>(w) * h * 3);
  VisionLoadOptions lo;
  lo.tier = tier;
  auto m = VisionModel::load((kDir / mmproj).string(), lo);
  Encoded e;
  EncodeOptions opt;
  opt.on_node = [&](const EncoderNode& n) {
    auto& v = e.nodes[std::string(n.name)];
    v.resize(static_cast<size_t>(n.rows * n.cols));
    for (int64_t r = 0; r < n.rows; ++r)
      std::copy(n.data + r * n.ld, n.data + r * n.ld + n.cols, v.begin() + r * n.cols);
  };
  e.stats = m->encode(pix.data(), w, h, e.embd, opt);
  return e;
}

// A run encoded with its own mmproj, its grid checked against the manifest's image chunk.
Encoded encode_run_checking_grid(const std::string& run) {
  const auto& r = manifest()["runs"][run];
  Encoded e = encode_run(run, r["mmproj"].get<std::string>());
  const auto& img = golden::image_chunk(r);
  EXPECT_EQ(e.stats.nx, img["nx"].get<int>());
  EXPECT_EQ(e.stats.ny, img["ny"].get<int>());
  return e;
}

// llama.cpp's embeddings of an image chunk.
fs::path embd_file(const Json& img) { return kDir / "out" / img["embd_file"].get<std::string>(); }

TEST(VisionGolden, HyperParametersOfTheTinyTower) {
  SKIP_WITHOUT_GOLDEN();
  auto m = VisionModel::load((kDir / "mmproj-tiny-F32.gguf").string());
  const VisionHParams& hp = m->hparams();
  EXPECT_EQ(hp.n_embd, 64);
  EXPECT_EQ(hp.n_head, 4);
  EXPECT_EQ(hp.head_dim, 16);
  EXPECT_EQ(hp.n_ff, 128);
  EXPECT_EQ(hp.n_layer, 2);
  EXPECT_EQ(hp.patch_size, 16);
  EXPECT_EQ(hp.pos_side, 6);
  EXPECT_EQ(hp.out_dim, 256);
  EXPECT_FLOAT_EQ(hp.mean[0], 0.5f);
  EXPECT_NO_THROW(m->check_text_model(256, "golden-a"));
  try {
    m->check_text_model(1024, "other.gguf");
    FAIL() << "a width mismatch must be refused";
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("other.gguf"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mmproj-tiny-F32.gguf"), std::string::npos) << e.what();
  }
}

// Every node llama.cpp dumped, by name, for every run whose manifest entry lists dumped nodes
// (F32 mmproj, flash attention off: the runs the tolerances below are for). Before the first GELU
// the encoder emulates llama.cpp's CPU precision (F16 patch convolution) and agrees to float
// noise; after it, the F16 GELU table can flip an F16 ulp where llama.cpp's fused ops round
// differently (spec §9.4: its own float64 emulation sees 1.8e-5 in the blocks and 9.8e-4 in the
// merger's GELU). A node the manifest lists but this table has no bound for fails the test.
TEST(VisionGolden, EncoderNodesMatchLlamaCppByName) {
  SKIP_WITHOUT_GOLDEN();
  const std::map<std::string, float> tol = {
      {"patch_bias", 1e-5f}, {"inp_pos_emb", 1e-5f}, {"ln1-0", 1e-5f},       {"Qcur_rope-0", 1e-5f},
      {"Kcur_rope-0", 1e-5f}, {"kqv_out-0", 1e-5f},  {"attn_out-0", 1e-5f},  {"ffn_inp-0", 1e-5f},
      {"ffn_out-0", 2e-4f},   {"layer_out-0", 2e-4f}, {"layer_out-1", 3e-4f}, {"norm_b-2", 3e-4f},
      {"ffn_gelu", 2e-3f}};
  const std::vector<std::string> runs = golden::runs([](const std::string&, const Json& r) {
    return r.contains("intermediate") && !r["intermediate"].empty() && golden::is_f32_plain(r);
  });
  ASSERT_FALSE(runs.empty()) << "the manifest lists no F32 run with dumped encoder nodes";
  for (const std::string& run : runs) {
    SCOPED_TRACE(run);
    const auto& r = manifest()["runs"][run];
    const Encoded e = encode_run(run, r["mmproj"].get<std::string>());
    for (const auto& node : r["intermediate"]) {
      const std::string name = node["node"].get<std::string>();
      const auto t = tol.find(name);
      if (t == tol.end()) {
        ADD_FAILURE() << run << ": no tolerance for the dumped node " << name;
        continue;
      }
      ASSERT_TRUE(e.nodes.count(name)) << run << ": the encoder reported no node " << name;
      int64_t n = 1;
      for (const auto& d : node["ne"]) n *= d.get<int64_t>();
      const std::vector<float> ref = read_f32(kDir / "out" / node["file"].get<std::string>());
      EXPECT_EQ(static_cast<int64_t>(ref.size()), n) << run << " node " << name << ": file size vs manifest ne";
      const float d = max_abs_diff(e.nodes.at(name), ref);
      EXPECT_LE(d, t->second) << run << " node " << name;
      std::printf("  %s %-12s max|d| %.3g\n", run.c_str(), name.c_str(), d);
    }
  }
}

// Every F32-mmproj run without flash attention (llama.cpp's non-flash encoder, as this one).
TEST(VisionGolden, EmbeddingsF32WithinTwoThousandths) {
  SKIP_WITHOUT_GOLDEN();
  const std::vector<std::string> runs =
      golden::runs([](const std::string&, const Json& r) { return golden::is_f32_plain(r); });
  ASSERT_FALSE(runs.empty()) << "the manifest lists no F32 run with flash attention off";
  for (const std::string& run : runs) {
    SCOPED_TRACE(run);
    const auto& img = golden::image_chunk(manifest()["runs"][run]);
    const Encoded e = encode_run_checking_grid(run);
    const std::vector<float> ref = read_f32(embd_file(img));
    EXPECT_EQ(ref.size(), img["embd_shape"][0].get<size_t>() * img["embd_shape"][1].get<size_t>());
    const float d = max_abs_diff(e.embd, ref);
    std::printf("  %s embeddings max|d| %.3g\n", run.c_str(), d);
    EXPECT_LE(d, 2e-3f) << run;
  }
}

// Every other mmproj type (F16, Q8_0), flash attention off: within llama.cpp's own F32-vs-that-type
// spread on that run's own image (the manifest's check for the image; golden::embd_spread).
TEST(VisionGolden, EmbeddingsF16AndQ8WithinLlamaCppsOwnSpread) {
  SKIP_WITHOUT_GOLDEN();
  const std::vector<std::string> runs = golden::runs([](const std::string&, const Json& r) {
    return golden::mmproj_type(r) != "F32" && !golden::flash_attn_on(r);
  });
  ASSERT_FALSE(runs.empty()) << "the manifest lists no F16 / Q8_0 run";
  for (const std::string& run : runs) {
    SCOPED_TRACE(run);
    const Encoded e = encode_run_checking_grid(run);
    const std::vector<float> ref = read_f32(embd_file(golden::image_chunk(manifest()["runs"][run])));
    const golden::Spread spread = golden::embd_spread(run);
    const float d = max_abs_diff(e.embd, ref);
    std::printf("  %s embeddings max|d| %.3g (llama.cpp's spread %.3g, %s)\n", run.c_str(), d, spread.value,
                spread.source.c_str());
    EXPECT_LE(d, spread.value) << run << " (" << spread.source << ")";
  }
}

// The manifest's spreads are what its files say: each check "max|embd(F32) - embd(T)| <image>"
// equals the difference of the two runs' embedding files (so a spread measured from the files,
// for an image the checks do not name, is the same quantity).
TEST(VisionGolden, ManifestSpreadsAreTheGoldenFilesDifferences) {
  SKIP_WITHOUT_GOLDEN();
  int checked = 0;
  for (const std::string& run : golden::runs([](const std::string&, const Json& r) {
         return golden::mmproj_type(r) != "F32" && !golden::flash_attn_on(r);
       })) {
    SCOPED_TRACE(run);
    const auto& r = manifest()["runs"][run];
    const std::string key = "max|embd(F32) - embd(" + golden::mmproj_type(r) + ")| " + golden::image_tag(run);
    const std::string f32 = golden::f32_counterpart(r);
    if (!manifest()["checks"].contains(key) || f32.empty()) continue;
    const float files = max_abs_diff(
        read_f32(embd_file(golden::image_chunk(manifest()["runs"][f32]))), read_f32(embd_file(golden::image_chunk(r))));
    EXPECT_FLOAT_EQ(files, manifest()["checks"][key].get<float>()) << key;
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no manifest check matched a pair of runs";
}

// The same numbers on every kernel tier this machine has, on the first F32 run's image: with F32
// weights the tiers differ in float summation order only; with Q8_0 weights such a difference can
// move an activation across a quantization step, so there the bound is llama.cpp's own
// F32-vs-Q8_0 spread on that image.
TEST(VisionGolden, EveryTierAgrees) {
  SKIP_WITHOUT_GOLDEN();
  const std::vector<std::string> f32_runs =
      golden::runs([](const std::string&, const Json& r) { return golden::is_f32_plain(r); });
  ASSERT_FALSE(f32_runs.empty());
  const std::string run = f32_runs.front();
  const std::vector<std::string> q8_runs = golden::runs([&](const std::string&, const Json& r) {
    return golden::mmproj_type(r) == "Q8_0" && !golden::flash_attn_on(r) &&
           golden::same_image_input(r, manifest()["runs"][run]);
  });
  ASSERT_FALSE(q8_runs.empty()) << "no Q8_0 run of " << run << "'s image";
  const golden::Spread q8_spread = golden::embd_spread(q8_runs.front());
  for (const auto& [file, tol] : {std::pair<std::string, float>{manifest()["runs"][run]["mmproj"].get<std::string>(), 2e-4f},
                                  std::pair<std::string, float>{manifest()["runs"][q8_runs.front()]["mmproj"].get<std::string>(),
                                                                q8_spread.value}}) {
    const Encoded best = encode_run(run, file);
    for (CpuTier t : kBuildTiers) {
      if (clamp_to_machine(t) != t) continue;
      const Encoded e = encode_run(run, file, t);
      const float d = max_abs_diff(e.embd, best.embd);
      std::printf("  %s %s tier %s vs best: max|d| %.3g\n", run.c_str(), file.c_str(), cpu_tier_name(t), d);
      EXPECT_LE(d, tol) << run << " " << file << " " << cpu_tier_name(t);
    }
  }
}

TEST(VisionModelErrors, BadImageSizeIsRefused) {
  SKIP_WITHOUT_GOLDEN();
  auto m = VisionModel::load((kDir / "mmproj-tiny-F32.gguf").string());
  std::vector<float> pix(48 * 32 * 3), out;
  EXPECT_THROW(m->encode(pix.data(), 48, 32, out), std::invalid_argument);
  EXPECT_THROW(m->encode(pix.data(), 0, 32, out), std::invalid_argument);
}

TEST(VisionModelErrors, TextModelIsNotAnMmproj) {
  const fs::path text = fs::path(TANDEM_SHARED_DIR) / "golden" / "models" / "qwen35-golden-a-F32.gguf";
  if (!fs::exists(text)) GTEST_SKIP() << "SKIPPED: no " << text;
  try {
    VisionModel::load(text.string());
    FAIL() << "a text model must not load as an mmproj";
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("clip.has_vision_encoder"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::vision
