#include "http/api/request_parse.h"

#include <limits>
#include <random>

#include "http/api/api_error.h"
#include "http/api/chat_validation.h"
#include "http/image_request.h"
#include "http/json_fields.h"

namespace tandem::http {

namespace {

constexpr size_t kMaxStops = 16;

// One model is served, so any name is accepted and echoed back, as llama.cpp's server does: a
// client configured with "default" or "gpt-4o-mini" works unchanged. Absent or empty: the first
// served name.
void check_model(const Json& body, const ParseContext& ctx, ParsedRequest& out) {
  const auto model = opt_string(body, "model");
  out.model = model && !model->empty() ? *model : ctx.model_names.empty() ? "tandem" : ctx.model_names.front();
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
  if (auto v = opt_int(b, "timeout_ms", 0, serve::kMaxTimeoutMs)) gp.timeout_ms = *v;
  opt_bool(b, "cache_prompt");  // accepted for llama.cpp clients; reuse is always the policy's
  if (auto v = opt_int(b, "n", 1, std::numeric_limits<int32_t>::max()); v && *v != 1)
    throw bad_request("'n' must be 1: one choice per request", "n");
  // Log-probabilities: OpenAI's logprobs + top_logprobs (chat), llama.cpp's n_probs (/completion).
  if (auto v = opt_bool(b, "logprobs")) gp.logprobs = *v;
  if (auto v = opt_int(b, "top_logprobs", 0, serve::kMaxTopLogprobs)) {
    if (!gp.logprobs && *v > 0) throw bad_request("'top_logprobs' needs \"logprobs\": true", "top_logprobs");
    gp.top_logprobs = static_cast<int>(*v);
  }
  if (auto v = opt_bool(b, "post_sampling_probs"); v && *v)
    throw bad_request("'post_sampling_probs' is not supported: probabilities are the raw logits' (llama.cpp's default)",
                      "post_sampling_probs");
  if (auto v = opt_int(b, "n_probs", 0, serve::kMaxTopLogprobs); v && *v > 0) {
    gp.logprobs = true;
    gp.top_logprobs = static_cast<int>(*v);
  }
}

// A text of `bytes` bytes that cannot fit the context whatever it tokenizes to (see
// ParseContext::max_token_bytes) is refused before the work proportional to it.
void check_prompt_size(size_t bytes, const ParseContext& ctx, const char* field) {
  if (ctx.max_token_bytes == 0 || ctx.n_ctx <= 0) return;
  const uint64_t least = bytes / (3 * ctx.max_token_bytes);
  if (least >= static_cast<uint64_t>(ctx.n_ctx))
    throw bad_request(std::string("'") + field + "' has " + std::to_string(bytes) + " bytes: at least " +
                          std::to_string(least) + " tokens, more than a slot's context of " + std::to_string(ctx.n_ctx) +
                          " tokens",
                      field);
}

size_t text_bytes(const Json& v) {
  if (v.is_string()) return v.get_ref<const std::string&>().size();
  size_t n = 0;
  if (v.is_array())
    for (const Json& e : v) n += e.is_string() ? e.get_ref<const std::string&>().size() : 0;
  return n;
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

// OpenAI content parts -> the string content llama.cpp's server renders: each image part becomes
// the media marker (its file collected in order), text parts are joined with "\n", and no newline
// goes before or after a marker. Images are refused in system messages; videos and audio always.
Json inline_image_parts(const Json& msgs, const std::string& marker, std::vector<std::vector<uint8_t>>& files) {
  Json out = msgs;
  // A string member or "" (another type is the chat parser's error to name, never a throw here).
  const auto str = [](const Json& o, const char* key) {
    const auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  for (size_t mi = 0; mi < out.size(); ++mi) {
    Json& m = out[mi];
    if (!m.is_object()) continue;  // the chat request parser names the error
    const auto content = m.find("content");
    if (content == m.end() || !content->is_array()) continue;
    const auto media = [&](const Json& part) {
      const std::string type = str(part, "type");
      return part.contains("image_url") || part.contains("image") || part.contains("video") || type == "image_url" ||
             type == "image" || type == "video" || type == "input_audio";
    };
    bool has_media = false;
    for (const Json& part : *content) has_media = has_media || (part.is_object() && media(part));
    if (!has_media) continue;
    const std::string role = str(m, "role");
    const std::string where = "messages[" + std::to_string(mi) + "]";
    std::string text;
    bool prev_text = false;
    for (size_t pi = 0; pi < content->size(); ++pi) {
      const Json& part = (*content)[pi];
      const std::string at = where + ".content[" + std::to_string(pi) + "]";
      if (!part.is_object()) throw bad_request("'" + at + "' must be an object", "messages");
      if (const auto ty = part.find("type"); ty != part.end() && !ty->is_string())
        throw bad_request("'" + at + ".type' must be a string", "messages");
      const std::string type = str(part, "type");
      if (type == "video" || part.contains("video") || type == "input_audio")
        throw bad_request("'" + at + "': video and audio parts are not supported (images only)", "messages");
      if (type == "image_url" || type == "image" || part.contains("image_url") || part.contains("image")) {
        // The Qwen3.5 template's rule ("System message cannot contain images"); user and tool
        // messages (a screenshot a tool returned) may.
        if (role == "system")
          throw bad_request("'" + at + "': a system message cannot contain images", "messages");
        auto u = part.find("image_url");
        if (u == part.end()) u = part.find("image");
        const Json* url = u != part.end() ? &*u : nullptr;
        if (url && url->is_object()) {
          const auto inner = url->find("url");
          url = inner != url->end() ? &*inner : nullptr;
        }
        if (!url || !url->is_string())
          throw bad_request("'" + at + "': expected \"image_url\": {\"url\": \"data:image/...;base64,...\"}", "messages");
        files.push_back(image_url_bytes(url->get_ref<const std::string&>(), at + ".image_url.url"));
        text += marker;
        prev_text = false;
        continue;
      }
      const auto t = part.find("text");
      if (t == part.end() || !t->is_string()) throw bad_request("'" + at + "': expected a text or image_url part", "messages");
      if (prev_text) text += "\n";
      text += t->get_ref<const std::string&>();
      prev_text = true;
    }
    m["content"] = text;
  }
  return out;
}

}  // namespace

std::vector<int32_t> tokens_of(const Json& v, const text::Tokenizer& tok, const char* what, bool add_special) {
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
  // add_special as llama.cpp's tokenize_mixed: BOS (when the vocabulary adds one) only before a
  // string that comes first.
  text::EncodeOptions first;
  first.add_special = add_special;
  if (v.is_string()) {
    tok.encode(v.get_ref<const std::string&>(), ids, first);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].is_string()) tok.encode(v[i].get_ref<const std::string&>(), ids, i == 0 ? first : text::EncodeOptions{});
      else add_id(v[i], i);
    }
  } else {
    throw bad_request(std::string("'") + what + "' must be a string or an array of token ids, got " + v.type_name(), what);
  }
  return ids;
}

std::vector<int64_t> find_user_starts(const text::Tokenizer& tok, std::span<const int32_t> tokens,
                                      const text::ChatTemplate* tmpl) {
  const std::string_view delimiter =
      tmpl ? tmpl->user_delimiter() : text::chat_template_user_delimiter(text::ChatTemplateFamily::ChatML);
  return text::find_user_starts(tok, tokens, delimiter);
}

ParsedRequest parse_completion_request(const Json& b, const ParseContext& ctx) {
  ParsedRequest out;
  check_model(b, ctx, out);
  const auto it = b.find("prompt");
  if (it == b.end() || it->is_null()) throw bad_request("missing 'prompt' (a string or an array of token ids)", "prompt");
  // llama.cpp's multimodal form: {"prompt_string": "... <media_marker> ...", "multimodal_data": [base64, ...]}.
  const Json* media = nullptr;
  const Json* text = &*it;
  if (it->is_object()) {
    const auto ps = it->find("prompt_string");
    if (ps == it->end() || !ps->is_string())
      throw bad_request("'prompt' as an object needs a string 'prompt_string' (and 'multimodal_data')", "prompt");
    text = &*ps;
    if (const auto md = it->find("multimodal_data"); md != it->end() && !md->is_null()) media = &*md;
  } else if (const auto md = b.find("multimodal_data"); md != b.end() && !md->is_null()) {
    media = &*md;
  }
  if (media) {
    if (!media->is_array()) throw bad_request("'multimodal_data' must be an array of base64 strings", "multimodal_data");
    if (!text->is_string()) throw bad_request("with 'multimodal_data' the prompt must be a string", "prompt");
    if (!ctx.engine) throw bad_request("images are not accepted here", "multimodal_data");
    std::vector<std::vector<uint8_t>> files;
    for (size_t i = 0; i < media->size(); ++i) {
      const Json& m = (*media)[i];
      if (!m.is_string()) throw bad_request("'multimodal_data' element " + std::to_string(i) + " is not a string", "multimodal_data");
      files.push_back(image_url_bytes(m.get_ref<const std::string&>(), "multimodal_data"));
    }
    build_image_prompt(*ctx.engine, text->get_ref<const std::string&>(), ctx.media_marker, files, parse_image_budget(b),
                       "multimodal_data", out.engine);
  } else {
    check_prompt_size(text_bytes(*text), ctx, "prompt");
    out.engine.prompt = tokens_of(*text, *ctx.tok, "prompt", /*add_special=*/true);
    if (out.engine.prompt.empty()) throw bad_request("'prompt' is empty", "prompt");
    out.engine.user_starts = find_user_starts(*ctx.tok, out.engine.prompt, ctx.tmpl);
  }
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
  validate_chat_messages(*msgs, ctx.tmpl ? text::chat_template_roles(ctx.tmpl->family()) : std::vector<std::string>{});
  const auto tools = b.find("tools");
  if (tools != b.end()) validate_tools(*tools);

  Json chat = Json::object();
  std::vector<std::vector<uint8_t>> files;  // the image parts' files, in order
  chat["messages"] = inline_image_parts(*msgs, ctx.media_marker, files);
  // OpenAI's "developer" is the system role under another name (its newer models' instructions).
  for (Json& m : chat["messages"])
    if (m["role"] == "developer") m["role"] = "system";
  if (tools != b.end() && !tools->is_null()) chat["tools"] = *tools;
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
    if (files.empty()) {
      const text::ChatPrompt rendered = ctx.tmpl->render(req);
      check_prompt_size(rendered.text.size(), ctx, "messages");
      ct = text::tokenize_chat(*ctx.tok, rendered);
    } else {
      if (!ctx.engine) throw bad_request("images are not accepted here", "messages");
      // The rendered text holds a media marker per image: tokenized around them as mtmd does.
      build_image_prompt(*ctx.engine, ctx.tmpl->render(req).text, ctx.media_marker, files, parse_image_budget(b),
                         "messages", out.engine);
    }
  } catch (const text::ChatTemplateError& e) {
    throw bad_request(std::string("messages: ") + e.what(), "messages");
  }
  if (files.empty()) {
    out.engine.prompt = std::move(ct.ids);
    out.engine.user_starts = std::move(ct.user_starts);  // the template family's user spans
  }

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
