#include "serve/request/request_image.h"

#include <stdexcept>
#include <string>

namespace tandem::serve {

namespace {
// FNV-1a 64, continued from h.
uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
}  // namespace

ImageChunk image_chunk(const vision::RgbImage& img, const vision::PreprocessParams& p) {
  const vision::TargetSize t = vision::smart_resize_target(img.width, img.height, p);
  ImageChunk c;
  const int cell = p.patch_size * p.merge;
  c.nx = t.width / cell;
  c.ny = t.height / cell;
  uint64_t h = fnv1a(0xcbf29ce484222325ull, img.rgb.data(), img.rgb.size());
  const int32_t shape[6] = {img.width, img.height, p.min_tokens(), p.max_tokens(), c.nx, c.ny};
  c.id = fnv1a(h, shape, sizeof(shape));
  return c;
}

RequestImage request_image(const vision::RgbImage& decoded, const vision::PreprocessParams& p,
                           const vision::ImageBudget& budget) {
  RequestImage im;
  im.chunk = image_chunk(decoded, p);
  const int cell = p.patch_size * p.merge;
  im.pixels = std::make_shared<const vision::RgbImage>(
      vision::resize_and_pad(decoded, vision::TargetSize{im.chunk.nx * cell, im.chunk.ny * cell}));
  im.budget = budget;
  return im;
}

void flatten_prompt(const std::vector<vision::PromptChunk>& chunks, std::vector<RequestImage>& images,
                    std::vector<int32_t>& tokens) {
  tokens.clear();
  for (const vision::PromptChunk& c : chunks) {
    if (c.kind == vision::PromptChunk::Kind::Text) {
      tokens.insert(tokens.end(), c.tokens.begin(), c.tokens.end());
      continue;
    }
    if (c.image < 0 || static_cast<size_t>(c.image) >= images.size())
      throw std::invalid_argument("prompt: image chunk " + std::to_string(c.image) + " of " +
                                  std::to_string(images.size()) + " images");
    ImageChunk& ic = images[static_cast<size_t>(c.image)].chunk;
    ic.begin = static_cast<int64_t>(tokens.size());
    tokens.insert(tokens.end(), static_cast<size_t>(ic.rows()), image_placeholder(ic.id));
  }
}

}  // namespace tandem::serve
