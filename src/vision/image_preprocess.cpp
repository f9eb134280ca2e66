#include "vision/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace tandem::vision {

namespace {

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("image preprocessing: " + what); }

void check_image(const RgbImage& img) {
  if (img.width < 1 || img.height < 1)
    bad("the image is " + std::to_string(img.width) + "x" + std::to_string(img.height) + " pixels; at least 1x1 is needed");
  const size_t want = static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 3;
  if (img.rgb.size() != want)
    bad("the " + std::to_string(img.width) + "x" + std::to_string(img.height) + " image holds " +
        std::to_string(img.rgb.size()) + " bytes, expected " + std::to_string(want) + " (RGB8)");
}

void check_target(TargetSize t) {
  if (t.width < 1 || t.height < 1)
    bad("the target size is " + std::to_string(t.width) + "x" + std::to_string(t.height) + "; at least 1x1 is needed");
  if (static_cast<int64_t>(t.width) * t.height > kMaxTargetPixels)
    bad("the target size " + std::to_string(t.width) + "x" + std::to_string(t.height) + " is above " +
        std::to_string(kMaxTargetPixels) + " pixels");
}

// llama.cpp's lerp, in float32 (spec §2.4).
inline float lerp(float a, float b, float t) { return a + (b - a) * t; }

}  // namespace

void validate(const PreprocessParams& p) {
  if (p.patch_size < 1) bad("patch_size is " + std::to_string(p.patch_size) + "; it must be > 0");
  if (p.merge < 1) bad("merge is " + std::to_string(p.merge) + "; it must be > 0");
  if (static_cast<int64_t>(p.patch_size) * p.merge > 1024)
    bad("patch_size * merge is " + std::to_string(static_cast<int64_t>(p.patch_size) * p.merge) + "; at most 1024 is supported");
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(p.mean[c])) bad("mean[" + std::to_string(c) + "] is not finite");
    if (!std::isfinite(p.std[c]) || p.std[c] == 0.0f)
      bad("std[" + std::to_string(c) + "] is " + std::to_string(p.std[c]) + "; it must be finite and non-zero");
  }
  if (p.budget.min_tokens > kMaxBudgetTokens)
    bad("budget.min_tokens is " + std::to_string(p.budget.min_tokens) + "; at most " + std::to_string(kMaxBudgetTokens));
  if (p.budget.max_tokens > kMaxBudgetTokens)
    bad("budget.max_tokens is " + std::to_string(p.budget.max_tokens) + "; at most " + std::to_string(kMaxBudgetTokens));
}

TargetSize smart_resize_target(int width, int height, const PreprocessParams& p) {
  validate(p);
  if (width < 1 || height < 1)
    bad("the image is " + std::to_string(width) + "x" + std::to_string(height) + " pixels; at least 1x1 is needed");
  const int align = p.align();
  const int64_t area = int64_t{align} * align;
  const int64_t min_pixels = p.min_tokens() * area, max_pixels = p.max_tokens() * area;
  const float fw = static_cast<float>(width), fh = static_cast<float>(height), fa = static_cast<float>(align);

  // Sides as floats until the end: a min-budget upscale of an extreme aspect ratio can leave int.
  float hb = std::max(fa, std::round(fh / fa) * fa);
  float wb = std::max(fa, std::round(fw / fa) * fa);
  const double rounded_area = static_cast<double>(hb) * wb;
  if (rounded_area > static_cast<double>(max_pixels)) {
    const float beta = std::sqrt((fh * fw) / static_cast<float>(max_pixels));
    hb = std::max(fa, std::floor(fh / beta / fa) * fa);
    wb = std::max(fa, std::floor(fw / beta / fa) * fa);
  } else if (rounded_area < static_cast<double>(min_pixels)) {
    const float beta = std::sqrt(static_cast<float>(min_pixels) / (fh * fw));
    hb = std::ceil(fh * beta / fa) * fa;
    wb = std::ceil(fw * beta / fa) * fa;
  }
  if (static_cast<double>(hb) * wb > static_cast<double>(kMaxTargetPixels) || hb > 1e9f || wb > 1e9f) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "the budget gives a %.0fx%.0f target for a %dx%d image, above %lld pixels", wb, hb,
                  width, height, static_cast<long long>(kMaxTargetPixels));
    bad(buf);
  }
  return {static_cast<int>(wb), static_cast<int>(hb)};
}

RgbImage resize_and_pad(const RgbImage& img, TargetSize target) {
  check_image(img);
  check_target(target);
  if (target.width == img.width && target.height == img.height) return img;

  const int sw = img.width, sh = img.height, tw = target.width, th = target.height;
  const float s = std::min(static_cast<float>(tw) / static_cast<float>(sw), static_cast<float>(th) / static_cast<float>(sh));
  const int nw = std::min(static_cast<int>(std::ceil(static_cast<float>(sw) * s)), tw);
  const int nh = std::min(static_cast<int>(std::ceil(static_cast<float>(sh) * s)), th);

  RgbImage out;
  out.width = tw;
  out.height = th;
  out.rgb.assign(static_cast<size_t>(tw) * th * 3, 0);  // black padding
  const int ox = (tw - nw) / 2, oy = (th - nh) / 2;

  // Bilinear, align corners: output x samples source x * (sw - 1) / (nw - 1). The per-column
  // terms are the same for every row: computed once.
  const float rx = nw > 1 ? static_cast<float>(sw - 1) / static_cast<float>(nw - 1) : 0.0f;
  const float ry = nh > 1 ? static_cast<float>(sh - 1) / static_cast<float>(nh - 1) : 0.0f;
  std::vector<int> x0s(nw), x1s(nw);
  std::vector<float> fxs(nw);
  for (int x = 0; x < nw; ++x) {
    const float px = static_cast<float>(x) * rx;
    const int x0 = std::min(static_cast<int>(px), sw - 1);
    x0s[x] = x0;
    x1s[x] = std::min(x0 + 1, sw - 1);
    fxs[x] = px - static_cast<float>(x0);
  }
  const uint8_t* src = img.rgb.data();
  for (int y = 0; y < nh; ++y) {
    const float py = static_cast<float>(y) * ry;
    const int y0 = std::min(static_cast<int>(py), sh - 1);
    const int y1 = std::min(y0 + 1, sh - 1);
    const float fy = py - static_cast<float>(y0);
    const uint8_t* r0 = src + static_cast<size_t>(y0) * sw * 3;
    const uint8_t* r1 = src + static_cast<size_t>(y1) * sw * 3;
    uint8_t* dst = out.rgb.data() + (static_cast<size_t>(y + oy) * tw + ox) * 3;
    for (int x = 0; x < nw; ++x) {
      const int a = x0s[x] * 3, b = x1s[x] * 3;
      const float fx = fxs[x];
      for (int c = 0; c < 3; ++c) {
        const float top = lerp(r0[a + c], r0[b + c], fx);
        const float bot = lerp(r1[a + c], r1[b + c], fx);
        dst[x * 3 + c] = static_cast<uint8_t>(lerp(top, bot, fy));  // truncation, as llama.cpp
      }
    }
  }
  return out;
}

PreprocessedImage normalize(const RgbImage& img, const PreprocessParams& p) {
  validate(p);
  check_image(img);
  const int align = p.align();
  if (img.width % align != 0 || img.height % align != 0)
    bad("a " + std::to_string(img.width) + "x" + std::to_string(img.height) + " image is not a multiple of patch * merge = " +
        std::to_string(align) + " (resize it first)");
  // 256 values per channel: the same float for the same byte, looked up.
  float lut[3][256];
  for (int c = 0; c < 3; ++c)
    for (int v = 0; v < 256; ++v) lut[c][v] = (static_cast<float>(v) / 255.0f - p.mean[c]) / p.std[c];
  PreprocessedImage out;
  out.width = img.width;
  out.height = img.height;
  out.patch_size = p.patch_size;
  out.merge = p.merge;
  out.pixels.resize(img.rgb.size());
  for (size_t i = 0; i < img.rgb.size(); i += 3) {
    out.pixels[i] = lut[0][img.rgb[i]];
    out.pixels[i + 1] = lut[1][img.rgb[i + 1]];
    out.pixels[i + 2] = lut[2][img.rgb[i + 2]];
  }
  return out;
}

PreprocessedImage preprocess(const RgbImage& img, const PreprocessParams& p) {
  check_image(img);
  const TargetSize t = smart_resize_target(img.width, img.height, p);
  return normalize(resize_and_pad(img, t), p);
}

}  // namespace tandem::vision
