// Prompt assembly (issue 52, docs/architecture.md §3): the one way a request object (request.h)
// becomes the engine's input — the chat template, text and image chunks, tokens, user-message
// starts. tandem-server's chat route and /completion (http/routes/routes_generate.cpp) and the dry
// run (agent::tokenize_request) all call assemble_prompt, so the replay model prefills the very
// tokens the server does.
//
//   Chat  The messages' image parts become the media marker (a message with images becomes one
//         text: its text parts joined by "\n", no newline around a marker, as llama.cpp's server
//         does) and the template renders the messages with the generation prompt. Without images
//         the text is tokenized with its user spans (text::tokenize_chat); with images it is
//         split at the markers as mtmd does (vision::tokenize_multimodal).
//   Raw   The pieces in order (BOS before a first text when the vocabulary adds one); with images,
//         the one text split at the markers.
//   Images Each file is decoded (vision/image_decode.h) and takes nx * ny placeholder rows, its
//         grid and identity from the request's budget over the server's (request_image.h); its
//         pixels are resized now, so a queued request holds its budget's pixels, not the file's.
//   User starts The template's user spans of a chat rendered without images; otherwise where the
//         template's user delimiter begins in the tokens (find_user_starts).
// Every refusal is a RequestError naming the prompt's field (PromptInput::field()), or
// "image_max_tokens" for a budget the preprocessing cannot lay out.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "serve/engine/engine.h"
#include "serve/request/request.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "vision/image_preprocess.h"
#include "vision/multimodal_prompt.h"

namespace tandem::serve {

// What assembling needs besides the request: the model's tokenizer and template, how images are
// laid out, and the context a prompt must fit.
struct PromptContext {
  const text::Tokenizer* tok = nullptr;
  // Renders chat prompts; its user delimiter finds the user starts of the others (null: ChatML's).
  const text::ChatTemplate* tmpl = nullptr;
  // The preprocessing of an image under a request's budget (Engine::image_params; the dry run's
  // layout). Empty: no vision model, and a request with images is refused naming --mmproj.
  std::function<vision::PreprocessParams(const vision::ImageBudget&)> image_params;
  int64_t max_images = std::numeric_limits<int64_t>::max();  // --max-images
  std::string media_marker = vision::kDefaultMediaMarker;     // what stands for an image in prompt text
  bool keep_pixels = true;  // false: the images' chunks only (the dry run needs no pixels)
  // A text of B bytes is at least B / (3 * max_token_bytes) tokens (NFC composes at most 3 bytes
  // into 1), so one that cannot fit n_ctx is refused from its size, before it is tokenized.
  // 0: no such check.
  int64_t n_ctx = 0;
  size_t max_token_bytes = 0;
};

// The engine's input for a request: its prompt tokens, user starts and images, and its
// generation parameters (params; a grammar is compiled by the engine, Engine::compile_grammar).
EngineRequest assemble_prompt(const Request& req, const PromptContext& ctx);

// The text a chat request renders to, the media marker where each image is: what assemble_prompt
// tokenizes (llama.cpp's POST /apply-template answers it). Throws RequestError as assembling does.
std::string render_chat_text(const Request& req, const PromptContext& ctx);

// Token ids of raw pieces: text tokenized with control tokens recognized, ids checked against the
// vocabulary (a RequestError naming `field`). add_special: BOS before a first text piece when the
// vocabulary adds one (llama.cpp's tokenize_mixed).
std::vector<int32_t> prompt_tokens(std::span<const PromptPiece> pieces, const text::Tokenizer& tok,
                                   const std::string& field, bool add_special);

// Where the template's user delimiter begins in a token sequence (raw prompts and prompts with
// images, which were not rendered with their spans): the stock policy cuts there. tmpl null:
// ChatML's <|im_start|>user. See text::find_user_starts.
std::vector<int64_t> find_user_starts(const text::Tokenizer& tok, std::span<const int32_t> tokens,
                                      const text::ChatTemplate* tmpl = nullptr);

}  // namespace tandem::serve
