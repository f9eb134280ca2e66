// A trace request as the server sees it: the chat-completions body rendered with the model's chat
// template and tokenized (special tokens on), plus where each user message starts. This is what
// tandem-server does with a /v1/chat/completions body, so the simulator predicts from the very
// token streams the server prefills.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/prompt_builder.h"
#include "agent/trace.h"
#include "serve/backend/recorded_request.h"
#include "serve/slot/prompt.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "vision/image_preprocess.h"
#include "vision/multimodal_prompt.h"

namespace tandem::agent {

struct RequestTokens {
  std::vector<int32_t> ids;          // an image's rows hold its placeholder (serve/slot/prompt.h)
  std::vector<int64_t> user_starts;  // first token of every user message (serve::Prompt)
  std::vector<serve::ImageChunk> images;  // the prompt's images, ascending
};

// What tandem-server's layout of a request's images depends on (issue 26): the mmproj's patch
// size and merge (16 and 2 for every Qwen3.5 tower), the server's --image-min-tokens /
// --image-max-tokens (a request's "image_min_tokens" / "image_max_tokens" override them, as on
// the server) and its media marker (any string the text does not hold gives the same tokens).
struct ImageLayout {
  int patch_size = 16, merge = 2;
  vision::ImageBudget budget;
  std::string marker = vision::kDefaultMediaMarker;

  // The preprocessing the server would use for a request with this budget (Engine::image_params).
  vision::PreprocessParams params(const vision::ImageBudget& request = {}) const;
};
// The patch size and merge of an mmproj file (its hyper-parameters only: no weights are read).
ImageLayout image_layout_from_mmproj(const std::string& path);

// The body as tandem-server turns it into tokens, through the server's own code: the chat body
// read into the request object (serve::read_chat_prompt: messages with their image parts, tools,
// enable_thinking in llama.cpp's spellings, the image budget) and the one prompt assembly
// (serve::assemble_prompt: the template with the generation prompt, text and image chunks, tokens,
// user starts), with this layout's images (their chunks only: no pixels are kept). Throws
// serve::RequestError (an std::invalid_argument) for a body the server would refuse — one the
// template cannot render, an image it cannot decode or lay out.
RequestTokens tokenize_request(const text::Tokenizer& tok, const text::ChatTemplate& tmpl,
                               const nlohmann::ordered_json& body, const ImageLayout& images = {});

// The body of a trace record as tandem-replay sends it: a record with a screenshot (`image`, a
// path relative to `trace_dir` unless absolute) has the file appended to its last user message as
// an image_url part (a base64 data: URL after the message's text: the screenshot follows the
// text prompt, as in the paper's agent). Other records: the body unchanged. Throws TraceError
// naming the line when the file cannot be read or the record has no user message.
nlohmann::ordered_json request_body(const TraceRecord& rec, const std::string& trace_dir);
// The same with the file's bytes given.
nlohmann::ordered_json with_screenshot(const nlohmann::ordered_json& body, const std::vector<uint8_t>& image_file);
// True when the body carries image parts.
bool has_images(const nlohmann::ordered_json& body);

// The request's output limit: "max_tokens", else "n_predict", else "max_completion_tokens";
// -1 when none is given.
int64_t max_output_tokens(const nlohmann::ordered_json& body);

// The generated tokens a server would sample for the expected action: the action's compact JSON,
// then the end-of-turn token, capped at the request's output limit. Empty when the record has no
// expected action.
std::vector<int32_t> expected_output(const text::Tokenizer& tok, const TraceRecord& rec);

// The request as the dry run replays it. `sampled` = every token the server sampled (the last one
// is not fed back through decode, as in the engine).
serve::RecordedRequest recorded_request(const RequestTokens& t, const std::vector<int32_t>& sampled);
// The same from one line of a server's --log-requests file: "output", the image chunks the
// server laid out ("images": [{"begin", "nx", "ny", "id"}]; they replace t's), plus what a speculating
// server logs — "fed_past_output" (tokens fed past the output, serve::GenerationResult) and the
// per-step draft counts timings.step_drafted / timings.step_accepted. Throws
// std::invalid_argument naming the field when one is malformed.
serve::RecordedRequest recorded_request_from_log(const RequestTokens& t, const nlohmann::ordered_json& log_record);

// Tokens of each named part of a built prompt (prompt_builder.h sections) as the server tokenizes
// the whole rendered request; "template" = the chat template's own tokens around the message.
struct SectionTokenCounts {
  std::map<std::string, int64_t> by_section;
  int64_t total = 0;
};
SectionTokenCounts count_section_tokens(const text::Tokenizer& tok, const text::ChatTemplate& tmpl,
                                        const nlohmann::ordered_json& body, const std::string& user_text,
                                        const std::vector<PromptSection>& sections);

}  // namespace tandem::agent
