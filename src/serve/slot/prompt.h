// One request's prompt as the serving core sees it: token ids plus where the chat
// template put the user messages, and the images among them. The positions come from the
// caller (the chat template knows where each `<|im_start|>user` begins); the core never parses
// tokens, so it works for any prompt layout an agent invents.
//
// An image is one chunk of nx * ny embedding rows (spec vision.md §5.1-5.2). In the token list
// each of its rows holds the same placeholder, image_placeholder(id), a negative number no
// vocabulary uses: the token-level prefix match then stops at the first row of a different
// image, and the slot confirms whole-image matches by the full identity (ImageChunk), so an
// image matches only whole and only when it is the same image under the same budget.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tandem::serve {

// What identifies an image chunk in a sequence: where it starts, its grid and the id of its
// content (a hash of the decoded pixels and the token budget; the caller computes it).
struct ImageChunk {
  int64_t begin = 0;
  int nx = 0, ny = 0;
  uint64_t id = 0;
  int64_t rows() const { return static_cast<int64_t>(nx) * ny; }
  int64_t end() const { return begin + rows(); }
  bool same_image(const ImageChunk& o) const { return begin == o.begin && nx == o.nx && ny == o.ny && id == o.id; }
};

// The token every row of an image with this id carries: negative, never a vocabulary id.
inline int32_t image_placeholder(uint64_t id) {
  const uint64_t folded = (id ^ (id >> 31) ^ (id >> 62)) & 0x7fffffffu;
  return static_cast<int32_t>(-1 - static_cast<int64_t>(folded % 0x7fffffffu));
}

// An image of a prompt: the chunk, and where its rows come from. rows() is called when a pass
// first needs them (an image inside the reused prefix is never encoded) and returns nx * ny rows
// of the model's width, valid until the request ends; null under the dry run, which needs none.
struct PromptImage {
  ImageChunk chunk;
  std::function<const float*()> rows;
};

struct Prompt {
  std::span<const int32_t> tokens;
  // Position of the first token of every user message, ascending, each in [0, tokens.size()).
  // The last entry is "the last user message" of serving.md §3.1. May be empty.
  std::span<const int64_t> user_starts;
  // Ascending, disjoint; each image's rows hold its placeholder in `tokens`.
  std::span<const PromptImage> images;

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t last_user_start() const { return user_starts.empty() ? -1 : user_starts.back(); }
  // The image whose rows include index i, or null.
  const PromptImage* image_at(int64_t i) const;
  // The first image starting at or after index i, or null.
  const PromptImage* next_image(int64_t i) const;
  int64_t image_rows() const;
};

// Throws std::invalid_argument naming what was expected when the prompt is empty, the user
// message positions are not ascending positions inside the prompt, the images are not ascending
// disjoint chunks inside it whose rows hold their placeholders, a negative token lies outside
// every image, or the prompt ends inside an image (the first output needs a text row's logits).
void validate_prompt(const Prompt& prompt);

// Longest common prefix of two token sequences.
int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

// The longest common prefix of two sequences whose images are given (a = tokens with images
// ia, b with ib), where an image counts only whole: a prefix that would end inside an image,
// or cover one that is not the same image in both, ends at that image's first row.
int64_t common_prefix_with_images(std::span<const int32_t> a, std::span<const ImageChunk> ia,
                                  std::span<const int32_t> b, std::span<const ImageChunk> ib);

// The chunks of a prompt's images, into `out` (cleared first; its capacity is reused).
void image_chunks(std::span<const PromptImage> images, std::vector<ImageChunk>& out);
inline std::vector<ImageChunk> image_chunks(std::span<const PromptImage> images) {
  std::vector<ImageChunk> out;
  image_chunks(images, out);
  return out;
}

}  // namespace tandem::serve
