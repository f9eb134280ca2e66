#include "http/api/response_json.h"

#include <nlohmann/json.hpp>

#include <random>

namespace tandem::http {

using serve::FinishReason;

std::string_view openai_finish_reason(FinishReason r, bool called_tools) {
  switch (r) {
    case FinishReason::EndOfGeneration:
    case FinishReason::GrammarComplete:
    case FinishReason::StopString: return called_tools ? "tool_calls" : "stop";
    case FinishReason::Length:
    case FinishReason::ContextFull: return "length";
    case FinishReason::Timeout: return "timeout";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error:
    case FinishReason::Watchdog: return "error";
  }
  return "error";
}

std::string_view llama_stop_type(FinishReason r) {
  switch (r) {
    case FinishReason::EndOfGeneration:
    case FinishReason::GrammarComplete: return "eos";  // the only token llama.cpp's grammar would allow next
    case FinishReason::StopString: return "word";
    case FinishReason::Length:
    case FinishReason::ContextFull: return "limit";
    case FinishReason::Timeout: return "timeout";
    default: return "none";
  }
}

Json timings_json(const serve::GenerationResult& r) {
  const auto& s = r.stats;
  const double prompt_n = static_cast<double>(s.new_tokens);
  const double predicted_n = static_cast<double>(r.output.size());
  Json t = Json::object();
  t["cache_n"] = s.restore_pos;
  t["prompt_n"] = s.new_tokens;
  t["prompt_ms"] = s.prefill_ms;
  t["prompt_per_token_ms"] = prompt_n > 0 ? s.prefill_ms / prompt_n : 0.0;
  t["prompt_per_second"] = s.prefill_ms > 0 ? 1000.0 * prompt_n / s.prefill_ms : 0.0;
  t["predicted_n"] = r.output.size();
  t["predicted_ms"] = r.predicted_ms;
  t["predicted_per_token_ms"] = predicted_n > 0 ? r.predicted_ms / predicted_n : 0.0;
  t["predicted_per_second"] = r.predicted_ms > 0 ? 1000.0 * predicted_n / r.predicted_ms : 0.0;
  t["cold_start_ms"] = r.cold_start_ms;  // the reload after an idle unload this request waited for
  const nlohmann::json stats = s;  // every serving.md §5 number, under RequestStats' names
  for (const auto& [k, v] : stats.items()) t[k] = Json::parse(v.dump());
  t["image_rows_reused"] = s.image_rows - s.image_rows_prefilled;
  t["queue_ms"] = r.queue_ms;
  t["id_slot"] = r.slot;
  return t;
}

Json usage_json(const serve::GenerationResult& r, int64_t n_prompt) {
  const int64_t completion = static_cast<int64_t>(r.output.size());
  return Json{{"prompt_tokens", n_prompt},
              {"completion_tokens", completion},
              {"total_tokens", n_prompt + completion},
              {"prompt_tokens_details", Json{{"cached_tokens", r.stats.restore_pos}}}};
}

namespace {
Json chat_head(const ResponseMeta& m, const char* object) {
  return Json{{"id", m.id}, {"object", object}, {"created", m.created}, {"model", m.model}, {"system_fingerprint", "tandem"}};
}

// OpenAI's shape: "call_" and 24 letters and digits, random (ids must not repeat within a
// conversation, which may span server restarts).
std::string tool_call_id() {
  static constexpr std::string_view kAlnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  thread_local std::mt19937_64 rng{(static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlnum[rng() % kAlnum.size()];
  return id;
}

Json tool_call_head(size_t index, const text::ToolCall& c) {
  return Json{{"index", index}, {"id", tool_call_id()}, {"type", "function"}, {"function", Json{{"name", c.name}}}};
}
}  // namespace

Json chat_completion_json(const ResponseMeta& m, const serve::GenerationResult& r, int64_t n_prompt,
                          const text::ChatAnswer& answer) {
  Json j = chat_head(m, "chat.completion");
  Json choice = Json::object();
  choice["index"] = 0;
  const bool called = !answer.tool_calls.empty();
  Json& msg = choice["message"] = Json{{"role", "assistant"}, {"content", answer.content}};
  if (called && answer.content.empty()) msg["content"] = nullptr;  // OpenAI's: no text besides the calls
  // As llama.cpp: the field is there only when there is reasoning.
  if (!answer.reasoning.empty()) msg["reasoning_content"] = answer.reasoning;
  for (size_t k = 0; k < answer.tool_calls.size(); ++k) {
    Json call = tool_call_head(k, answer.tool_calls[k]);
    call.erase("index");
    call["function"]["arguments"] = answer.tool_calls[k].arguments;
    msg["tool_calls"].push_back(std::move(call));
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = openai_finish_reason(r.reason, called);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(r, n_prompt);
  j["timings"] = timings_json(r);
  if (!m.warnings.empty()) j["warnings"] = m.warnings;
  return j;
}

Json chat_chunk_json(const ResponseMeta& m, std::optional<std::string_view> role, std::optional<std::string_view> content,
                     std::optional<std::string_view> finish_reason, std::optional<std::string_view> reasoning) {
  Json j = chat_head(m, "chat.completion.chunk");
  Json delta = Json::object();
  if (role) delta["role"] = *role;
  if (content) delta["content"] = *content;
  if (reasoning) delta["reasoning_content"] = *reasoning;
  Json choice = Json::object();
  choice["index"] = 0;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason ? Json(*finish_reason) : Json();
  j["choices"] = Json::array({std::move(choice)});
  return j;
}

std::vector<Json> chat_tool_call_chunks(const ResponseMeta& m, const std::vector<text::ToolCall>& calls) {
  std::vector<Json> out;
  const auto chunk = [&](Json call) {
    Json j = chat_chunk_json(m, std::nullopt, std::nullopt, std::nullopt);
    j["choices"][0]["delta"]["tool_calls"] = Json::array({std::move(call)});
    out.push_back(std::move(j));
  };
  for (size_t k = 0; k < calls.size(); ++k) {
    Json head = tool_call_head(k, calls[k]);
    head["function"]["arguments"] = "";
    chunk(std::move(head));
    chunk(Json{{"index", k}, {"function", Json{{"arguments", calls[k].arguments}}}});
  }
  return out;
}

Json chat_final_chunk_json(const ResponseMeta& m, const serve::GenerationResult& r, bool called_tools) {
  Json j = chat_chunk_json(m, std::nullopt, std::nullopt, openai_finish_reason(r.reason, called_tools));
  j["timings"] = timings_json(r);
  if (!m.warnings.empty()) j["warnings"] = m.warnings;
  return j;
}

Json chat_usage_chunk_json(const ResponseMeta& m, const serve::GenerationResult& r, int64_t n_prompt) {
  Json j = chat_head(m, "chat.completion.chunk");
  j["choices"] = Json::array();
  j["usage"] = usage_json(r, n_prompt);
  return j;
}

Json completion_json(const ResponseMeta& m, const serve::GenerationResult& r, int64_t n_prompt, std::string_view content) {
  Json j = Json::object();
  j["index"] = 0;
  j["content"] = content;
  j["tokens"] = r.output;
  j["id_slot"] = r.slot;
  j["stop"] = true;
  j["model"] = m.model;
  j["tokens_predicted"] = r.output.size();
  j["tokens_evaluated"] = n_prompt;
  j["tokens_cached"] = r.stats.restore_pos;
  j["truncated"] = false;
  j["has_new_line"] = content.find('\n') != std::string_view::npos;
  j["stop_type"] = llama_stop_type(r.reason);
  j["stopping_word"] = r.stop_word;
  j["stopped_eos"] = r.reason == FinishReason::EndOfGeneration || r.reason == FinishReason::GrammarComplete;
  j["stopped_word"] = r.reason == FinishReason::StopString;
  j["stopped_limit"] = r.reason == FinishReason::Length || r.reason == FinishReason::ContextFull;
  j["finish_reason"] = openai_finish_reason(r.reason);
  j["timings"] = timings_json(r);
  if (!m.warnings.empty()) j["warnings"] = m.warnings;
  return j;
}

Json completion_chunk_json(std::string_view content, const std::vector<int32_t>& tokens, int slot) {
  return Json{{"index", 0}, {"content", content}, {"tokens", tokens}, {"stop", false}, {"id_slot", slot}};
}

}  // namespace tandem::http
