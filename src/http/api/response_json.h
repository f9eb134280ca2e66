// Response bodies: OpenAI chat completions (whole and streamed chunks) and llama.cpp's /completion,
// both carrying llama.cpp's `timings` names plus every serving.md §5 number (RequestStats).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/api/json_text.h"
#include "serve/engine/generation.h"
#include "text/chat_answer.h"

namespace tandem::http {

struct ResponseMeta {
  std::string id;       // "chatcmpl-<n>"
  int64_t created = 0;  // unix seconds
  std::string model;
  std::vector<std::string> warnings;  // e.g. schema keywords the grammar does not enforce
};

// OpenAI finish_reason: "stop" (end of generation, stop string), "length" (n_predict, context
// full), "timeout", "cancelled", "error"; "tool_calls" for an answer that called tools and
// ended as "stop" would.
std::string_view openai_finish_reason(serve::FinishReason r, bool called_tools = false);
// llama.cpp stop_type: "eos", "word", "limit" (n_predict, context), "timeout", "none".
std::string_view llama_stop_type(serve::FinishReason r);

// llama.cpp's timings (cache_n, prompt_n, prompt_ms, prompt_per_token_ms, prompt_per_second,
// predicted_n, predicted_ms, predicted_per_token_ms, predicted_per_second) followed by the
// RequestStats fields (n_prompt, lcp, restore_pos, new_tokens, kv_bound, passes, ...) and queue_ms.
Json timings_json(const serve::GenerationResult& r);
// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}
Json usage_json(const serve::GenerationResult& r, int64_t n_prompt);

// message {role, content, reasoning_content (when the answer has reasoning), tool_calls (when it
// called tools; content is then null if empty)}: the answer as text::parse_chat_answer returns it.
Json chat_completion_json(const ResponseMeta& m, const serve::GenerationResult& r, int64_t n_prompt,
                          const text::ChatAnswer& answer);
// Streamed tool calls as OpenAI streams them: per call a chunk with its index, id, type and name
// (arguments ""), then one with its arguments.
std::vector<Json> chat_tool_call_chunks(const ResponseMeta& m, const std::vector<text::ToolCall>& calls);
// A streamed chunk: delta {role?, content?, reasoning_content?}; finish_reason null unless given.
Json chat_chunk_json(const ResponseMeta& m, std::optional<std::string_view> role, std::optional<std::string_view> content,
                     std::optional<std::string_view> finish_reason,
                     std::optional<std::string_view> reasoning = std::nullopt);
// The last chunk: empty delta, the finish reason, timings.
Json chat_final_chunk_json(const ResponseMeta& m, const serve::GenerationResult& r, bool called_tools = false);
// stream_options.include_usage: choices [] and usage.
Json chat_usage_chunk_json(const ResponseMeta& m, const serve::GenerationResult& r, int64_t n_prompt);

// llama.cpp /completion: the whole response (content = the text; in a stream's last event "").
Json completion_json(const ResponseMeta& m, const serve::GenerationResult& r, int64_t n_prompt, std::string_view content);
Json completion_chunk_json(std::string_view content, const std::vector<int32_t>& tokens, int slot);

}  // namespace tandem::http
