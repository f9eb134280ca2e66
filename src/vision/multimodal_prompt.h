// A prompt with images, as llama.cpp's mtmd lays it out (spec vision.md §5.1-5.5): the text is
// split at each media marker; the text pieces are tokenized with control tokens recognized; each
// image becomes `<|vision_start|>` (ending the text before it), one image chunk of nx * ny
// embedding rows, and `<|vision_end|>` (starting the text after it). Prefill then runs the text
// chunks as tokens and the image chunks as embedding rows at their M-RoPE positions
// (HybridModel::forward_image), in pieces of at most n_batch rows as llama.cpp decodes them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/hybrid_model.h"
#include "text/tokenizer.h"

namespace tandem::vision {

// llama.cpp's default marker (mtmd_default_marker); the server uses its own random one.
inline constexpr char kDefaultMediaMarker[] = "<__media__>";

struct PromptChunk {
  enum class Kind { Text, Image };
  Kind kind = Kind::Text;
  std::vector<int32_t> tokens;  // Text
  int image = -1;               // Image: index into the prompt's images, in marker order
};

struct MultimodalPromptOptions {
  std::string marker = kDefaultMediaMarker;
  bool parse_special = true;
};

// Throws std::invalid_argument when the number of markers differs from n_images (saying both).
// A vocabulary without <|vision_start|> / <|vision_end|> as tokens spells them as text, as mtmd
// does (the golden text model does).
std::vector<PromptChunk> tokenize_multimodal(const text::Tokenizer& tok, std::string_view prompt, size_t n_images,
                                             const MultimodalPromptOptions& opt = {});

// One encoded image: nx * ny rows of the text model's width, raster order (VisionModel::encode).
struct ImageEmbedding {
  std::vector<float> rows;
  int nx = 0, ny = 0;
};

// Sequence positions a prompt's chunks take (cache rows: text tokens + image rows).
int64_t multimodal_prompt_rows(const std::vector<PromptChunk>& chunks, const std::vector<ImageEmbedding>& images);

// Runs every chunk through the model on `seq` in order; `opt` applies to the last chunk (earlier
// ones compute no logits), so out holds the prompt's last logits as forward() would. Throws what
// forward / forward_image throw (context overflow, bad rows), leaving seq at the chunk that failed.
void prefill_multimodal(HybridModel& model, SequenceState& seq, const std::vector<PromptChunk>& chunks,
                        const std::vector<ImageEmbedding>& images, const ForwardOptions& opt, ForwardOutput& out,
                        int64_t n_batch = 512);

}  // namespace tandem::vision
