#include "vision/image_preprocess.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vision/golden_vision_test_util.h"

namespace tandem::vision {
namespace {

PreprocessParams budget(int min_tokens, int max_tokens) {
  PreprocessParams p;
  p.budget.min_tokens = min_tokens;
  p.budget.max_tokens = max_tokens;
  return p;
}

RgbImage random_rgb_image(int w, int h, uint32_t seed) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<size_t>(w) * h * 3);
  std::mt19937 rng(seed);
  for (auto& v : img.rgb) v = static_cast<uint8_t>(rng());
  return img;
}

// The resize of spec §2.4, written again from its text, one output pixel at a time (no
// precomputed columns), for comparison with resize_and_pad.
RgbImage reference_resize_and_pad(const RgbImage& src, int tw, int th) {
  if (src.width == tw && src.height == th) return src;
  const float s = std::min(static_cast<float>(tw) / src.width, static_cast<float>(th) / src.height);
  const int w2 = std::min(static_cast<int>(std::ceil(src.width * s)), tw);
  const int h2 = std::min(static_cast<int>(std::ceil(src.height * s)), th);
  RgbImage out;
  out.width = tw;
  out.height = th;
  out.rgb.assign(static_cast<size_t>(tw) * th * 3, 0);
  const int offx = (tw - w2) / 2, offy = (th - h2) / 2;
  const float rx = w2 == 1 ? 0.0f : static_cast<float>(src.width - 1) / static_cast<float>(w2 - 1);
  const float ry = h2 == 1 ? 0.0f : static_cast<float>(src.height - 1) / static_cast<float>(h2 - 1);
  auto px = [&](int x, int y, int c) -> float { return src.rgb[(static_cast<size_t>(y) * src.width + x) * 3 + c]; };
  for (int y = 0; y < h2; ++y)
    for (int x = 0; x < w2; ++x) {
      const float fxp = x * rx, fyp = y * ry;
      const int x0 = std::min(static_cast<int>(fxp), src.width - 1), y0 = std::min(static_cast<int>(fyp), src.height - 1);
      const int x1 = std::min(x0 + 1, src.width - 1), y1 = std::min(y0 + 1, src.height - 1);
      const float fx = fxp - x0, fy = fyp - y0;
      for (int c = 0; c < 3; ++c) {
        const float top = px(x0, y0, c) + (px(x1, y0, c) - px(x0, y0, c)) * fx;
        const float bot = px(x0, y1, c) + (px(x1, y1, c) - px(x0, y1, c)) * fx;
        const float v = top + (bot - top) * fy;
        out.rgb[(static_cast<size_t>(y + offy) * tw + x + offx) * 3 + c] = static_cast<uint8_t>(v);
      }
    }
  return out;
}

std::string invalid_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no exception";
}

// ---- smart resize (§2.3) -----------------------------------------------------------------------

TEST(ImagePreprocess, SmartResizeSpecExamples) {
  const PreprocessParams def;
  EXPECT_EQ(smart_resize_target(128, 96, def), (TargetSize{128, 96}));
  EXPECT_EQ(smart_resize_target(150, 100, def), (TargetSize{160, 96}));
  EXPECT_EQ(smart_resize_target(200, 120, budget(-1, 8)), (TargetSize{96, 64}));
  EXPECT_EQ(smart_resize_target(1080, 2400, def), (TargetSize{1088, 2400}));  // 34 x 75 = 2550 tokens
  // 720 / 32 = 22.5 rounds half away from zero: 23 * 32 = 736 (Python's half-to-even would give 704).
  EXPECT_EQ(smart_resize_target(720, 1560, def), (TargetSize{736, 1568}));
  EXPECT_EQ(smart_resize_target(720, 1560, budget(-1, 256)), (TargetSize{320, 736}));  // 10 x 23 = 230 tokens
  // Budgets <= 0 mean the defaults.
  EXPECT_EQ(smart_resize_target(200, 120, budget(0, 0)), smart_resize_target(200, 120, def));
}

TEST(ImagePreprocess, SmartResizeTokenCounts) {
  auto tokens = [](TargetSize t) { return (t.width / 32) * (t.height / 32); };
  EXPECT_EQ(tokens(smart_resize_target(720, 1560, PreprocessParams{})), 1127);  // the paper's count
  EXPECT_EQ(tokens(smart_resize_target(1080, 2400, PreprocessParams{})), 2550);
  // Step 2 is not re-checked against the minimum: 6 tokens under a minimum of 8.
  EXPECT_EQ(tokens(smart_resize_target(200, 120, budget(-1, 8))), 6);
}

TEST(ImagePreprocess, SmartResizeUpscalesTinyImagesToTheMinimum) {
  // 1x1: 32x32 = 1024 < 8 * 1024; beta = sqrt(8192) = 90.51, ceil(90.51 / 32) = 3 -> 96x96.
  EXPECT_EQ(smart_resize_target(1, 1, PreprocessParams{}), (TargetSize{96, 96}));
  // min 64 tokens: beta = 256, 256 / 32 = 8 -> 256x256 = 64 tokens.
  EXPECT_EQ(smart_resize_target(1, 1, budget(64, -1)), (TargetSize{256, 256}));
  // 20x10: 32x32 again; beta = sqrt(8192 / 200) = 6.4: 20 * 6.4 = 128, 10 * 6.4 = 64 -> 128x64 = 8 tokens.
  EXPECT_EQ(smart_resize_target(20, 10, PreprocessParams{}), (TargetSize{128, 64}));
  // Large enough images are not touched by the minimum.
  EXPECT_EQ(smart_resize_target(128, 64, PreprocessParams{}), (TargetSize{128, 64}));
}

TEST(ImagePreprocess, SmartResizeOtherPatchAndMerge) {
  PreprocessParams p;
  p.patch_size = 14;  // align 28 (Qwen2-VL's)
  // 150 / 28 = 5.36 -> 5 * 28 = 140; 100 / 28 = 3.57 -> 4 * 28 = 112; 140 * 112 >= 8 * 784.
  EXPECT_EQ(smart_resize_target(150, 100, p), (TargetSize{140, 112}));
  p.merge = 1;  // align 14
  EXPECT_EQ(smart_resize_target(150, 100, p), (TargetSize{154, 98}));
}

TEST(ImagePreprocess, InvalidParametersAreNamed) {
  PreprocessParams p;
  p.patch_size = 0;
  EXPECT_NE(invalid_message([&] { smart_resize_target(10, 10, p); }).find("patch_size is 0; it must be > 0"), std::string::npos);
  p = {};
  p.merge = -2;
  EXPECT_NE(invalid_message([&] { smart_resize_target(10, 10, p); }).find("merge is -2"), std::string::npos);
  p = {};
  p.std[1] = 0;
  EXPECT_NE(invalid_message([&] { validate(p); }).find("std[1] is 0.000000; it must be finite and non-zero"), std::string::npos);
  p = {};
  p.mean[2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(invalid_message([&] { validate(p); }).find("mean[2] is not finite"), std::string::npos);
  p = {};
  p.budget.max_tokens = kMaxBudgetTokens + 1;
  EXPECT_NE(invalid_message([&] { validate(p); }).find("budget.max_tokens is 65537"), std::string::npos);
  EXPECT_NE(invalid_message([&] { smart_resize_target(0, 10, PreprocessParams{}); }).find("the image is 0x10 pixels"),
            std::string::npos);
  RgbImage broken;
  broken.width = 4;
  broken.height = 4;
  broken.rgb.resize(10);
  EXPECT_NE(invalid_message([&] { preprocess(broken, PreprocessParams{}); }).find("holds 10 bytes, expected 48"), std::string::npos);
  EXPECT_NE(invalid_message([&] { normalize(random_rgb_image(33, 32, 1), PreprocessParams{}); }).find("not a multiple of patch * merge = 32"),
            std::string::npos);
}

// ---- resize and pad (§2.4) ---------------------------------------------------------------------

TEST(ImagePreprocess, SameSizeIsACopy) {
  const RgbImage img = random_rgb_image(64, 32, 3);
  const RgbImage out = resize_and_pad(img, {64, 32});
  EXPECT_EQ(out.rgb, img.rgb);
}

TEST(ImagePreprocess, WideImageGetsBlackBarsLeftAndRight) {
  // 150x100 -> 160x96: s = min(160/150, 96/100) = 0.96; content 144x96 at x = 8.
  const RgbImage img = random_rgb_image(150, 100, 4);
  const RgbImage out = resize_and_pad(img, smart_resize_target(150, 100, PreprocessParams{}));
  ASSERT_EQ(out.width, 160);
  ASSERT_EQ(out.height, 96);
  for (int y = 0; y < 96; ++y)
    for (int x = 0; x < 160; ++x) {
      if (x >= 8 && x < 152) continue;
      for (int c = 0; c < 3; ++c) ASSERT_EQ(out.rgb[(y * 160 + x) * 3 + c], 0) << x << "," << y;
    }
  // The content's corners are the source's corners (align corners).
  EXPECT_EQ(out.rgb[(0 * 160 + 8) * 3], img.rgb[0]);
  EXPECT_EQ(out.rgb[(95 * 160 + 151) * 3], img.rgb[(99 * 150 + 149) * 3]);
  EXPECT_EQ(out.rgb, reference_resize_and_pad(img, 160, 96).rgb);
}

TEST(ImagePreprocess, TallImageGetsBlackBarsTopAndBottom) {
  // 100x150 -> 96x160: content 96x144 at y = 8.
  const RgbImage img = random_rgb_image(100, 150, 5);
  const RgbImage out = resize_and_pad(img, smart_resize_target(100, 150, PreprocessParams{}));
  ASSERT_EQ(out.width, 96);
  ASSERT_EQ(out.height, 160);
  for (int y : {0, 7, 152, 159})
    for (int x = 0; x < 96; ++x) ASSERT_EQ(out.rgb[(y * 96 + x) * 3 + 1], 0);
  EXPECT_EQ(out.rgb, reference_resize_and_pad(img, 96, 160).rgb);
}

TEST(ImagePreprocess, ResizeMatchesTheSpecRuleOnManySizes) {
  const std::vector<std::pair<int, int>> sizes = {{1, 1},   {1, 7},    {7, 1},     {2, 2},    {33, 31},  {200, 120},
                                                  {31, 64}, {640, 5},  {97, 1000}, {333, 77}, {64, 65}, {1000, 999}};
  uint32_t seed = 10;
  for (const auto& [w, h] : sizes)
    for (const PreprocessParams& p : {PreprocessParams{}, budget(-1, 8), budget(64, -1)}) {
      SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
      const RgbImage img = random_rgb_image(w, h, seed++);
      const TargetSize t = smart_resize_target(w, h, p);
      ASSERT_EQ(resize_and_pad(img, t).rgb, reference_resize_and_pad(img, t.width, t.height).rgb);
    }
  // Targets that are not multiples of 32 and single rows or columns (rx or ry = 0).
  const RgbImage img = random_rgb_image(50, 40, 99);
  for (const TargetSize t : {TargetSize{1, 1}, TargetSize{1, 40}, TargetSize{77, 1}, TargetSize{51, 40}, TargetSize{300, 7}})
    ASSERT_EQ(resize_and_pad(img, t).rgb, reference_resize_and_pad(img, t.width, t.height).rgb) << t.width << "x" << t.height;
}

TEST(ImagePreprocess, BilinearTruncatesRatherThanRounds) {
  // 2x1 (0, 255) scaled by 2.5 to 5x3 (ceil(1 * 2.5) = 3 rows): in x, samples at 0, 0.25, 0.5,
  // 0.75, 1 of the way: 0, 63.75, 127.5, 191.25, 255 -> 0, 63, 127, 191, 255 (truncated).
  RgbImage img;
  img.width = 2;
  img.height = 1;
  img.rgb = {0, 0, 0, 255, 255, 255};
  const RgbImage out = resize_and_pad(img, {5, 3});
  std::vector<int> got;
  for (int x = 0; x < 5; ++x) got.push_back(out.rgb[x * 3]);
  EXPECT_EQ(got, (std::vector<int>{0, 63, 127, 191, 255}));
}

// ---- normalisation (§2.5) and the grid ---------------------------------------------------------

TEST(ImagePreprocess, NormalisationAndGrid) {
  RgbImage img = random_rgb_image(160, 96, 6);
  img.rgb[0] = 0;
  img.rgb[1] = 255;
  img.rgb[2] = 128;
  PreprocessParams p;
  const PreprocessedImage pre = normalize(img, p);
  EXPECT_EQ(pre.at(0, 0, 0), -1.0f);
  EXPECT_EQ(pre.at(0, 0, 1), 1.0f);
  EXPECT_EQ(pre.at(0, 0, 2), (128 / 255.0f - 0.5f) / 0.5f);
  EXPECT_EQ(pre.patches_x(), 10);
  EXPECT_EQ(pre.patches_y(), 6);
  EXPECT_EQ(pre.n_patches(), 60);
  EXPECT_EQ(pre.nx(), 5);
  EXPECT_EQ(pre.ny(), 3);
  EXPECT_EQ(pre.n_tokens(), 15);
  // Per-channel mean and std (CLIP's, say).
  p.mean[0] = 0.48145466f;
  p.std[0] = 0.26862954f;
  const PreprocessedImage clip = normalize(img, p);
  const size_t i = (static_cast<size_t>(50) * 160 + 70) * 3;
  EXPECT_EQ(clip.pixels[i], (img.rgb[i] / 255.0f - 0.48145466f) / 0.26862954f);
  EXPECT_EQ(clip.pixels[i + 1], pre.pixels[i + 1]);
}

// ---- golden: llama.cpp's preprocessed images ---------------------------------------------------

std::filesystem::path preprocess_golden_dir() { return golden::dir(); }

// Every image and token budget the manifest has a preprocessed file for (each file once).
TEST(ImagePreprocess, GoldenPreprocessedImagesAreBitExact) {
  SKIP_WITHOUT_GOLDEN_VISION();
  const auto& manifest = golden::manifest();
  std::vector<std::string> runs, seen;
  for (const std::string& run : golden::runs()) {
    const auto& r = manifest["runs"][run];
    const std::string key = r["preproc_file"].get<std::string>() + " " + r["image"].get<std::string>() + " " +
                            r["image_min_tokens"].dump() + " " + r["image_max_tokens"].dump();
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    runs.push_back(run);
  }
  ASSERT_FALSE(runs.empty()) << "the manifest lists no run";
  for (const std::string& run : runs) {
    SCOPED_TRACE(run);
    const auto& r = manifest["runs"][run];
    std::ifstream f(preprocess_golden_dir() / r["image"].get<std::string>(), std::ios::binary);
    const std::vector<uint8_t> file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const RgbImage img = decode_image(file);
    const PreprocessedImage pre = preprocess(img, budget(r["image_min_tokens"].get<int>(), r["image_max_tokens"].get<int>()));
    EXPECT_EQ(pre.width, r["preprocessed_size"][0].get<int>());
    EXPECT_EQ(pre.height, r["preprocessed_size"][1].get<int>());
    const auto shape = r["preproc_shape"];
    ASSERT_EQ(shape[0].get<int>(), pre.height);
    ASSERT_EQ(shape[1].get<int>(), pre.width);
    std::ifstream g(preprocess_golden_dir() / "out" / r["preproc_file"].get<std::string>(), std::ios::binary);
    std::vector<float> want(pre.pixels.size());
    g.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size() * sizeof(float)));
    ASSERT_EQ(g.gcount(), static_cast<std::streamsize>(want.size() * sizeof(float)));
    ASSERT_EQ(g.peek(), std::char_traits<char>::eof()) << "the golden file is larger than the image";
    float max_diff = 0;
    size_t first = want.size();
    for (size_t i = 0; i < want.size(); ++i) {
      const float d = std::abs(pre.pixels[i] - want[i]);
      if (d > 0 && first == want.size()) first = i;
      max_diff = std::max(max_diff, d);
    }
    EXPECT_EQ(max_diff, 0.0f) << "first difference at float " << first;
  }
}

}  // namespace
}  // namespace tandem::vision
