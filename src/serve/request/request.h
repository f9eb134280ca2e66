// The request object (issue 52, docs/architecture.md §3): what a client asks for, as plain data.
// A front end reads it from its JSON — tandem-server's routes (http/api/request_parse.cpp), the
// dry run from a trace's bodies (agent/request_tokens.cpp) — and one function turns it into the
// engine's input, assemble_prompt (prompt_assembly.h). New request features enter here: a field
// for what the client says, and its effect in the assembly (tool calls and their format, reasoning,
// other chat templates: issue 45).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve/engine/engine.h"
#include "text/chat_template.h"
#include "text/reasoning.h"
#include "vision/image_preprocess.h"

namespace tandem::serve {

// A piece of a raw prompt (/completion's "prompt": a string, token ids, or a mix): text to
// tokenize, or a token id as the client gave it (checked against the vocabulary when assembled).
struct PromptPiece {
  bool is_token = false;
  int64_t token = 0;
  std::string text;
};

// What the prompt is made of.
struct PromptInput {
  enum class Form {
    Chat,  // /v1/chat/completions: messages rendered with the model's chat template
    Raw,   // /completion: text and token ids as given
  };
  Form form = Form::Chat;
  // Chat: the messages (roles, text parts, image parts, tool calls, reasoning), the tools and the
  // thinking switch. Each image part (text::ChatContentPart::Kind::Image) is the next file of
  // `images`, in message and part order; add_generation_prompt is on.
  text::ChatRequest chat;
  // Raw: the pieces in order (BOS first when the vocabulary adds one, as llama.cpp's server). With
  // images, one text piece, in which each media marker stands for the next file of `images`.
  std::vector<PromptPiece> raw;
  // The image files (PNG, JPEG, GIF, BMP, ...) as sent; decoded and laid out when assembled.
  std::vector<std::vector<uint8_t>> images;
  // The request's per-image token budget ("image_min_tokens" / "image_max_tokens"; -1: the
  // server's --image-min-tokens / --image-max-tokens).
  vision::ImageBudget image_budget;

  // The field errors about this prompt name: "messages", "prompt", or (raw with images)
  // "multimodal_data".
  const char* field() const {
    if (form == Form::Chat) return "messages";
    return images.empty() ? "prompt" : "multimodal_data";
  }
};

// Constrained decoding (docs/constrained.md): the GBNF a request's grammar, json_schema or
// response_format comes to, compiled against the model's vocabulary by the engine.
struct GrammarRequest {
  std::string gbnf;                   // empty: unconstrained
  std::string field;                  // the field it came from (errors name it)
  std::vector<std::string> warnings;  // unsupported schema keywords (returned with the response)
};

struct Request {
  PromptInput prompt;
  // Sampling, stop strings, the output limit, the slot, the deadline, log-probabilities, the
  // request's cap on speculative drafts.
  GenerationParams params;
  GrammarRequest grammar;  // Tandem's constrained decoding
  // Chat: how the answer is returned — a leading <think> block split off as reasoning_content
  // (text/reasoning.h), and with tools the calls it writes as tool_calls (text/tool_calls.h;
  // false: tool_choice "none", calls stay text). /completion returns the text as generated.
  text::ReasoningFormat reasoning_format = text::ReasoningFormat::None;
  bool tool_calls = true;
};

}  // namespace tandem::serve
