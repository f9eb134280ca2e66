// Image preprocessing for the Qwen3.5 vision tower, as llama.cpp's mtmd does it for projector
// qwen3vl_merger (spec vision.md §2.2-2.5): the token budget gives a pixel budget, "smart
// resize" picks a target size that is a multiple of patch * merge, the image is resized keeping
// its aspect ratio (bilinear, align-corners, truncated to bytes) and centered on a black canvas
// of that size, then every byte is normalised to float: (byte / 255 - mean) / std.
// Everything is float32 where llama.cpp computes in float32: the golden images agree bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "vision/image_decode.h"

namespace tandem::vision {

// llama.cpp's --image-min-tokens / --image-max-tokens: a value > 0 overrides the default
// (8 and 4096 output tokens); one token covers (patch * merge)^2 pixels.
struct ImageBudget {
  int min_tokens = -1, max_tokens = -1;
};

struct PreprocessParams {
  int patch_size = 16;  // P
  int merge = 2;        // M: output tokens are M x M patches
  float mean[3] = {0.5f, 0.5f, 0.5f};
  float std[3] = {0.5f, 0.5f, 0.5f};
  ImageBudget budget;

  int align() const { return patch_size * merge; }  // target sides are multiples of this
  int min_tokens() const { return budget.min_tokens > 0 ? budget.min_tokens : 8; }
  int max_tokens() const { return budget.max_tokens > 0 ? budget.max_tokens : 4096; }
};

// Throws std::invalid_argument naming the field: patch and merge > 0 (P * M <= 1024), finite
// mean, finite non-zero std, budgets at most kMaxBudgetTokens.
inline constexpr int kMaxBudgetTokens = 1 << 16;
void validate(const PreprocessParams& p);

struct TargetSize {
  int width = 0, height = 0;
  bool operator==(const TargetSize&) const = default;
};

// §2.3: sides rounded (half away from zero) to multiples of P*M, at least P*M; scaled down by
// sqrt(area / max_pixels) when above the budget, up by sqrt(min_pixels / area) when below it, with
// no re-check after either step. Float32 throughout. Throws std::invalid_argument for w or h < 1,
// invalid params, or a target above kMaxTargetPixels (a budget no image should ask for).
inline constexpr int64_t kMaxTargetPixels = int64_t{1} << 28;
TargetSize smart_resize_target(int width, int height, const PreprocessParams& p);

// §2.4: a copy when the size already matches; otherwise scale by min(tw / w, th / h), resize to
// (min(ceil(w * s), tw), min(ceil(h * s), th)) with bilinear align-corners sampling truncated to
// bytes, and paste it centered (integer division) on a black tw x th canvas. Throws
// std::invalid_argument for an image whose pixel buffer does not match its size, or a bad target.
RgbImage resize_and_pad(const RgbImage& img, TargetSize target);

// The encoder's input: [height][width][3] floats, normalised.
struct PreprocessedImage {
  int width = 0, height = 0;
  int patch_size = 16, merge = 2;
  std::vector<float> pixels;

  float at(int x, int y, int c) const { return pixels[(static_cast<size_t>(y) * width + x) * 3 + c]; }
  int patches_x() const { return width / patch_size; }   // Wp
  int patches_y() const { return height / patch_size; }  // Hp
  int n_patches() const { return patches_x() * patches_y(); }
  int nx() const { return patches_x() / merge; }  // merged grid: one output token per cell
  int ny() const { return patches_y() / merge; }
  int n_tokens() const { return nx() * ny(); }
};

// §2.5 on an image already at its target size: x = byte / 255.0f; x = (x - mean[c]) / std[c].
PreprocessedImage normalize(const RgbImage& img, const PreprocessParams& p);

// smart_resize_target + resize_and_pad + normalize.
PreprocessedImage preprocess(const RgbImage& img, const PreprocessParams& p);

}  // namespace tandem::vision
