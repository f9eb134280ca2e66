#include "vision/multimodal_prompt.h"

#include <algorithm>
#include <stdexcept>

namespace tandem::vision {

std::vector<PromptChunk> tokenize_multimodal(const text::Tokenizer& tok, std::string_view prompt, size_t n_images,
                                             const MultimodalPromptOptions& opt) {
  if (opt.marker.empty()) throw std::invalid_argument("multimodal prompt: the media marker is empty");
  std::vector<std::string_view> pieces;
  for (size_t at = 0;;) {
    const size_t m = prompt.find(opt.marker, at);
    pieces.push_back(prompt.substr(at, m == std::string_view::npos ? std::string_view::npos : m - at));
    if (m == std::string_view::npos) break;
    at = m + opt.marker.size();
  }
  const size_t markers = pieces.size() - 1;
  if (markers != n_images)
    throw std::invalid_argument("multimodal prompt: " + std::to_string(markers) + " media marker(s) '" + opt.marker +
                                "' in the text but " + std::to_string(n_images) + " image(s) given");
  const text::EncodeOptions eo{opt.parse_special};
  const text::EncodeOptions special{true};
  std::vector<PromptChunk> chunks;
  for (size_t i = 0; i < pieces.size(); ++i) {
    PromptChunk text;
    if (i > 0) tok.encode("<|vision_end|>", text.tokens, special);
    tok.encode(pieces[i], text.tokens, eo);
    if (i + 1 < pieces.size()) tok.encode("<|vision_start|>", text.tokens, special);
    if (!text.tokens.empty()) chunks.push_back(std::move(text));
    if (i + 1 < pieces.size()) {
      PromptChunk img;
      img.kind = PromptChunk::Kind::Image;
      img.image = static_cast<int>(i);
      chunks.push_back(std::move(img));
    }
  }
  return chunks;
}

int64_t multimodal_prompt_rows(const std::vector<PromptChunk>& chunks, const std::vector<ImageEmbedding>& images) {
  int64_t n = 0;
  for (const PromptChunk& c : chunks) {
    if (c.kind == PromptChunk::Kind::Text) n += static_cast<int64_t>(c.tokens.size());
    else n += static_cast<int64_t>(images.at(static_cast<size_t>(c.image)).nx) * images.at(static_cast<size_t>(c.image)).ny;
  }
  return n;
}

void prefill_multimodal(HybridModel& model, SequenceState& seq, const std::vector<PromptChunk>& chunks,
                        const std::vector<ImageEmbedding>& images, const ForwardOptions& opt, ForwardOutput& out,
                        int64_t n_batch) {
  if (n_batch < 1) throw std::invalid_argument("prefill_multimodal: n_batch must be positive");
  const int64_t n_embd = model.shape().n_embd;
  for (size_t ci = 0; ci < chunks.size(); ++ci) {
    const PromptChunk& c = chunks[ci];
    const bool last = ci + 1 == chunks.size();
    ForwardOptions o = opt;
    if (c.kind == PromptChunk::Kind::Text) {
      if (!last) o.logits = LogitsMode::None;
      model.forward(seq, std::span<const int32_t>(c.tokens), o, out);
      continue;
    }
    if (c.image < 0 || static_cast<size_t>(c.image) >= images.size())
      throw std::invalid_argument("prefill_multimodal: image chunk " + std::to_string(ci) + " names image " +
                                  std::to_string(c.image) + " of " + std::to_string(images.size()));
    const ImageEmbedding& im = images[static_cast<size_t>(c.image)];
    const int64_t n_rows = static_cast<int64_t>(im.nx) * im.ny;
    if (im.nx <= 0 || im.ny <= 0 || static_cast<int64_t>(im.rows.size()) != n_rows * n_embd)
      throw std::invalid_argument("prefill_multimodal: image " + std::to_string(c.image) + " has " +
                                  std::to_string(im.rows.size()) + " floats: expected nx * ny * n_embd = " +
                                  std::to_string(n_rows * n_embd));
    for (int64_t r0 = 0; r0 < n_rows; r0 += n_batch) {
      EmbeddingRows er;
      er.rows = im.rows.data() + r0 * n_embd;
      er.n_rows = std::min(n_batch, n_rows - r0);
      er.nx = im.nx;
      er.ny = im.ny;
      er.first_row = r0;
      ForwardOptions po = o;
      if (!(last && r0 + er.n_rows == n_rows)) po.logits = LogitsMode::None;
      model.forward_image(seq, er, po, out);
    }
  }
}

}  // namespace tandem::vision
