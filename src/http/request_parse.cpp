#include "http/request_parse.h"

#include <limits>
#include <random>

#include "http/api_error.h"
#include "http/json_fields.h"

namespace tandem::http {

namespace {

constexpr size_t kMaxStops = 16;

void check_model(const Json& body, const ParseContext& ctx, ParsedRequest& out) {
  const auto model = opt_string(body, "model");
  out.model = ctx.model_names.empty() ? "tandem" : ctx.model_names.front();
  if (!model || model->empty()) return;
  for (const auto& n : ctx.model_names)
    if (*model == n) {
      out.model = *model;
      return;
    }
  std::string names;
  for (const auto& n : ctx.model_names) names += (names.empty() ? "'" : ", '") + n + "'";
  throw bad_request("model '" + *model + "' is not served here (this server serves " + names + ")", "model");
}

// Sampling and stopping fields shared by both endpoints.
void parse_common(const Json& b, const ParseContext& ctx, serve::GenerationParams& gp) {
  text::SamplerParams& sp = gp.sampling;
  if (auto v = opt_number(b, "temperature", 0.0, 100.0)) sp.temperature = static_cast<float>(*v);
  if (auto v = opt_int(b, "top_k", -1, std::numeric_limits<int32_t>::max())) sp.top_k = static_cast<int32_t>(*v);
  if (auto v = opt_number(b, "top_p", 0.0, 1.0)) sp.top_p = static_cast<float>(*v);
  if (auto v = opt_number(b, "min_p", 0.0, 1.0)) sp.min_p = static_cast<float>(*v);
  if (auto v = opt_number(b, "repeat_penalty", 0.0, 100.0)) sp.repeat_penalty = static_cast<float>(*v);
  if (auto v = opt_number(b, "presence_penalty", -100.0, 100.0)) sp.presence_penalty = static_cast<float>(*v);
  if (auto v = opt_number(b, "frequency_penalty", -100.0, 100.0)) sp.frequency_penalty = static_cast<float>(*v);
  for (const char* key : {"repeat_last_n", "penalty_last_n"})
    if (auto v = opt_int(b, key, -1, std::numeric_limits<int32_t>::max()))
      sp.penalty_last_n = static_cast<int32_t>(*v < 0 ? ctx.n_ctx : *v);
  // llama.cpp: seed -1 (the default) draws a random seed.
  const auto seed = opt_int(b, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  if (seed && *seed >= 0) sp.seed = static_cast<uint64_t>(*seed);
  else sp.seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  if (auto v = opt_bool(b, "ignore_eos")) gp.ignore_eos = *v;
  gp.stop = opt_string_list(b, "stop", kMaxStops);
  if (auto v = opt_int(b, "id_slot", -1, std::numeric_limits<int32_t>::max())) {
    if (*v >= ctx.n_parallel)
      throw bad_request("id_slot " + std::to_string(*v) + " does not exist (this server has slots 0.." +
                            std::to_string(ctx.n_parallel - 1) + "; -1 picks one)",
                        "id_slot");
    gp.id_slot = static_cast<int>(*v);
  }
  if (auto v = opt_int(b, "timeout_ms", 0, std::numeric_limits<int32_t>::max())) gp.timeout_ms = *v;
  opt_bool(b, "cache_prompt");  // accepted for llama.cpp clients; reuse is always the policy's
  if (auto v = opt_int(b, "n", 1, std::numeric_limits<int32_t>::max()); v && *v != 1)
    throw bad_request("'n' must be 1: one choice per request", "n");
  if (auto v = opt_bool(b, "logprobs"); v && *v) throw bad_request("'logprobs' is not supported", "logprobs");
  if (auto v = opt_int(b, "n_probs", 0, std::numeric_limits<int32_t>::max()); v && *v > 0)
    throw bad_request("'n_probs' is not supported", "n_probs");
}

bool parse_stream(const Json& b, ParsedRequest& out) {
  out.stream = opt_bool(b, "stream").value_or(false);
  const auto it = b.find("stream_options");
  if (it != b.end() && !it->is_null()) {
    if (!it->is_object()) throw bad_request("'stream_options' must be an object", "stream_options");
    out.include_usage = opt_bool(*it, "include_usage").value_or(false);
  }
  return out.stream;
}

}  // namespace

std::vector<int32_t> tokens_of(const Json& v, const text::Tokenizer& tok, const char* what) {
  std::vector<int32_t> ids;
  const int32_t n_vocab = tok.n_vocab();
  const auto add_id = [&](const Json& e, size_t i) {
    if (!e.is_number_integer())
      throw bad_request(std::string("'") + what + "' must be a string or an array of token ids and strings; element " +
                            std::to_string(i) + " is " + (e.is_array() ? "an array (several prompts in one request are not supported)" : std::string(e.type_name())),
                        what);
    const int64_t id = e.is_number_unsigned() && e.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : e.get<int64_t>();
    if (id < 0 || id >= n_vocab)
      throw bad_request(std::string("'") + what + "': token id " + std::to_string(id) + " at index " + std::to_string(i) +
                            " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")",
                        what);
    ids.push_back(static_cast<int32_t>(id));
  };
  if (v.is_string()) {
    tok.encode(v.get_ref<const std::string&>(), ids);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].is_string()) tok.encode(v[i].get_ref<const std::string&>(), ids);
      else add_id(v[i], i);
    }
  } else {
    throw bad_request(std::string("'") + what + "' must be a string or an array of token ids, got " + v.type_name(), what);
  }
  return ids;
}

std::vector<int64_t> find_user_starts(const text::Tokenizer& tok, std::span<const int32_t> tokens) {
  std::vector<int64_t> starts;
  const auto im_start = tok.vocab().find("<|im_start|>");
  if (!im_start) return starts;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i] != *im_start) continue;
    std::string head;  // the role: the bytes after <|im_start|>, a few tokens are enough for "user"
    for (size_t k = i + 1; k < tokens.size() && head.size() < 5; ++k) tok.append_token(head, tokens[k]);
    if (head.rfind("user", 0) == 0 && (head.size() == 4 || head[4] == '\n' || head[4] == ' '))
      starts.push_back(static_cast<int64_t>(i));
  }
  return starts;
}

ParsedRequest parse_completion_request(const Json& b, const ParseContext& ctx) {
  ParsedRequest out;
  check_model(b, ctx, out);
  const auto it = b.find("prompt");
  if (it == b.end() || it->is_null()) throw bad_request("missing 'prompt' (a string or an array of token ids)", "prompt");
  out.engine.prompt = tokens_of(*it, *ctx.tok, "prompt");
  if (out.engine.prompt.empty()) throw bad_request("'prompt' is empty", "prompt");
  out.engine.user_starts = find_user_starts(*ctx.tok, out.engine.prompt);
  parse_common(b, ctx, out.engine.params);
  if (auto v = opt_int(b, "n_predict", -1, ctx.n_ctx)) out.engine.params.n_predict = *v;
  else if (auto m = opt_int(b, "max_tokens", -1, ctx.n_ctx)) out.engine.params.n_predict = *m;
  out.grammar = parse_grammar_request(b, /*chat=*/false, ctx.json_whitespace);
  parse_stream(b, out);
  return out;
}

ParsedRequest parse_chat_request(const Json& b, const ParseContext& ctx) {
  ParsedRequest out;
  check_model(b, ctx, out);
  const auto msgs = b.find("messages");
  if (msgs == b.end() || msgs->is_null()) throw bad_request("missing 'messages' (an array of chat messages)", "messages");
  if (!msgs->is_array()) throw bad_request(std::string("'messages' must be an array, got ") + msgs->type_name(), "messages");
  if (msgs->empty()) throw bad_request("'messages' is empty: at least one message is needed", "messages");

  Json chat = Json::object();
  chat["messages"] = *msgs;
  if (const auto t = b.find("tools"); t != b.end() && !t->is_null()) chat["tools"] = *t;
  std::optional<bool> thinking = opt_bool(b, "enable_thinking");
  if (const auto k = b.find("chat_template_kwargs"); k != b.end() && !k->is_null()) {
    if (!k->is_object()) throw bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    if (auto v = opt_bool(*k, "enable_thinking")) thinking = v;
  }
  if (thinking) chat["enable_thinking"] = *thinking;
  text::ChatTokens ct;
  try {
    text::ChatRequest req = text::ChatRequest::from_json(chat);
    req.add_generation_prompt = true;
    for (const auto& m : req.messages)
      for (const auto& p : m.parts)
        if (p.kind != text::ChatContentPart::Kind::Text)
          throw bad_request("image and video content parts are not supported by this server (text only)", "messages");
    ct = text::tokenize_chat(*ctx.tok, ctx.tmpl->render(req));
  } catch (const text::ChatTemplateError& e) {
    throw bad_request(std::string("messages: ") + e.what(), "messages");
  }
  out.engine.prompt = std::move(ct.ids);
  for (size_t i = 0; i < ct.message_starts.size() && i < ct.roles.size(); ++i)
    if (ct.roles[i] == "user") out.engine.user_starts.push_back(ct.message_starts[i]);

  parse_common(b, ctx, out.engine.params);
  // The same precedence as agent/request_tokens.h (the simulator reads traces of these bodies).
  std::optional<int64_t> max_tokens = opt_int(b, "max_tokens", 1, ctx.n_ctx);
  if (!max_tokens) max_tokens = opt_int(b, "n_predict", -1, ctx.n_ctx);
  if (!max_tokens) max_tokens = opt_int(b, "max_completion_tokens", 1, ctx.n_ctx);
  if (max_tokens) out.engine.params.n_predict = *max_tokens;
  out.grammar = parse_grammar_request(b, /*chat=*/true, ctx.json_whitespace);
  parse_stream(b, out);
  return out;
}

}  // namespace tandem::http
