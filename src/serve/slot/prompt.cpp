#include "serve/slot/prompt.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tandem::serve {

const PromptImage* Prompt::image_at(int64_t i) const {
  for (const PromptImage& im : images) {
    if (im.chunk.begin > i) break;
    if (i < im.chunk.end()) return &im;
  }
  return nullptr;
}

const PromptImage* Prompt::next_image(int64_t i) const {
  for (const PromptImage& im : images)
    if (im.chunk.begin >= i) return &im;
  return nullptr;
}

int64_t Prompt::image_rows() const {
  int64_t n = 0;
  for (const PromptImage& im : images) n += im.chunk.rows();
  return n;
}

void validate_prompt(const Prompt& prompt) {
  if (prompt.tokens.empty()) throw std::invalid_argument("prompt: expected at least one token");
  int64_t prev = -1;
  for (int64_t u : prompt.user_starts) {
    if (u < 0 || u >= prompt.size())
      throw std::invalid_argument("prompt: user message start " + std::to_string(u) + " outside [0, " +
                                  std::to_string(prompt.size()) + ")");
    if (u <= prev)
      throw std::invalid_argument("prompt: user message starts must be strictly ascending (" + std::to_string(prev) +
                                  " then " + std::to_string(u) + ")");
    prev = u;
  }
  int64_t text_from = 0;  // the text since the previous image (or the start)
  const auto check_text = [&](int64_t end) {
    for (int64_t i = text_from; i < end; ++i)
      if (prompt.tokens[i] < 0)
        throw std::invalid_argument("prompt: token " + std::to_string(prompt.tokens[i]) + " at index " +
                                    std::to_string(i) + " is an image placeholder outside every image");
  };
  for (const PromptImage& im : prompt.images) {
    const ImageChunk& c = im.chunk;
    if (c.nx <= 0 || c.ny <= 0)
      throw std::invalid_argument("prompt: an image of " + std::to_string(c.nx) + " x " + std::to_string(c.ny) +
                                  " rows (expected a non-empty grid)");
    if (c.begin < text_from || c.end() > prompt.size())
      throw std::invalid_argument("prompt: the image at [" + std::to_string(c.begin) + ", " + std::to_string(c.end()) +
                                  ") is not after the previous one and inside the prompt of " +
                                  std::to_string(prompt.size()) + " rows");
    check_text(c.begin);
    const int32_t ph = image_placeholder(c.id);
    for (int64_t i = c.begin; i < c.end(); ++i)
      if (prompt.tokens[i] != ph)
        throw std::invalid_argument("prompt: row " + std::to_string(i) + " of the image at " + std::to_string(c.begin) +
                                    " holds token " + std::to_string(prompt.tokens[i]) +
                                    " instead of the image's placeholder");
    text_from = c.end();
  }
  check_text(prompt.size());
  if (!prompt.images.empty() && prompt.images.back().chunk.end() == prompt.size())
    throw std::invalid_argument("prompt: it ends with an image; text must follow (the first output needs a text row)");
}

int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

int64_t common_prefix_with_images(std::span<const int32_t> a, std::span<const ImageChunk> ia,
                                  std::span<const int32_t> b, std::span<const ImageChunk> ib) {
  int64_t L = common_prefix(a, b);
  // Equal placeholders say little (31 bits); the chunks say whether it is the same image.
  for (const ImageChunk& c : ib) {
    if (c.begin >= L) break;
    const auto it = std::find_if(ia.begin(), ia.end(), [&](const ImageChunk& x) { return x.begin == c.begin; });
    if (it == ia.end() || !it->same_image(c) || L < c.end()) return c.begin;
  }
  for (const ImageChunk& c : ia) {  // an image only a holds, inside the prefix (b's tokens equal its placeholder)
    if (c.begin >= L) break;
    const auto it = std::find_if(ib.begin(), ib.end(), [&](const ImageChunk& x) { return x.begin == c.begin; });
    if (it == ib.end()) return c.begin;
  }
  return L;
}

void image_chunks(std::span<const PromptImage> images, std::vector<ImageChunk>& out) {
  out.clear();
  for (const PromptImage& im : images) out.push_back(im.chunk);
}

}  // namespace tandem::serve
