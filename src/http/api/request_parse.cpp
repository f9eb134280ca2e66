#include "http/api/request_parse.h"

#include <algorithm>
#include <limits>
#include <random>

#include "http/api/api_error.h"
#include "http/api/chat_validation.h"
#include "grammar/tool_grammar.h"
#include "http/api/grammar_request.h"
#include "serve/request/chat_prompt.h"
#include "serve/request/image_url.h"
#include "serve/request/json_fields.h"
#include "serve/request/prompt_assembly.h"

namespace tandem::http {

using serve::opt_bool;
using serve::opt_int;
using serve::opt_number;
using serve::opt_string;
using serve::opt_string_list;

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
  // Speculation per request: "speculative": false (Tandem's) or llama.cpp's "speculative.n_max"
  // (0: none); both given, the smaller cap holds. Neither can switch speculation on.
  if (auto v = opt_bool(b, "speculative"); v && !*v) gp.max_drafts = 0;
  if (auto v = opt_int(b, "speculative.n_max", 0, std::numeric_limits<int32_t>::max()))
    gp.max_drafts = std::min(gp.max_drafts, static_cast<int>(*v));
}

// OpenAI's tool_choice: "none" (no tools rendered, calls stay text), "auto" (the default: calls
// when the model opens one), "required" or a named function {"type": "function", "function":
// {"name": ...}} (calls only, of that function).
struct ToolChoice {
  enum class Kind { Auto, None, Required } kind = Kind::Auto;
  std::string function;  // Required: only this one
};

ToolChoice parse_tool_choice(const Json& b) {
  ToolChoice c;
  const auto it = b.find("tool_choice");
  if (it == b.end() || it->is_null()) return c;
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (s == "none") c.kind = ToolChoice::Kind::None;
    else if (s == "required") c.kind = ToolChoice::Kind::Required;
    else if (s != "auto")
      throw bad_request("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
                        "{\"name\": ...}}, got " + it->dump(),
                        "tool_choice");
    return c;
  }
  if (!it->is_object())
    throw bad_request("'tool_choice' must be a string or {\"type\": \"function\", \"function\": {\"name\": ...}}, got " +
                          std::string(it->type_name()),
                      "tool_choice");
  if (const auto ty = it->find("type"); ty == it->end() || *ty != "function")
    throw bad_request("'tool_choice.type' must be \"function\"", "tool_choice");
  const auto f = it->find("function");
  const Json* name = nullptr;
  if (f != it->end() && f->is_object())
    if (const auto n = f->find("name"); n != f->end() && n->is_string()) name = &*n;
  if (!name) throw bad_request("'tool_choice.function.name' must be the name of a function in 'tools'", "tool_choice");
  c.kind = ToolChoice::Kind::Required;
  c.function = name->get<std::string>();
  return c;
}

// The names of the request's functions, for a message ("tap, type").
std::string function_names(const Json& tools) {
  std::string out;
  for (const Json& t : tools)
    if (t.is_object() && t.contains("function") && t["function"].contains("name"))
      out += (out.empty() ? "" : ", ") + t["function"]["name"].get<std::string>();
  return out;
}

// The tools' grammar (grammar/tool_grammar.h) for a request with tools, as its tool_choice asks.
void tool_call_constraint(const Json& b, const ToolChoice& c, const ParseContext& ctx, serve::Request& r) {
  const Json* tools = nullptr;
  if (const auto it = b.find("tools"); it != b.end() && it->is_array() && !it->empty()) tools = &*it;
  const bool required = c.kind == ToolChoice::Kind::Required;
  if (required && !tools)
    throw bad_request("'tool_choice' " + std::string(c.function.empty() ? "\"required\"" : "naming a function") +
                          " needs 'tools' (there are none to call)",
                      "tool_choice");
  if (!c.function.empty()) {
    bool found = false;
    for (const Json& t : *tools) found = found || t["function"]["name"] == c.function;
    if (!found)
      throw bad_request("'tool_choice.function.name' '" + c.function + "' is not a function in 'tools' (" +
                            function_names(*tools) + ")",
                        "tool_choice");
  }
  if (!tools || c.kind == ToolChoice::Kind::None) return;
  const text::ChatTemplateFamily family = ctx.tmpl ? ctx.tmpl->family() : text::ChatTemplateFamily::ChatML;
  const text::ToolCallFormat format = text::tool_call_format(family);
  if (format == text::ToolCallFormat::None) {
    if (required)
      throw bad_request(std::string("'tool_choice': calls cannot be required of this model: its chat template (") +
                            text::chat_template_family_name(family) +
                            ") has no tool-call format Tandem parses (Qwen3.5, Qwen3, Granite-4.0 and LFM2 have)",
                        "tool_choice");
    return;  // auto: the calls the model writes are not parsed either
  }
  if (!r.grammar.gbnf.empty()) {
    // The request's own constraint (response_format, json_schema) holds under "auto"; calls the
    // model writes anyway are still parsed.
    if (required)
      throw bad_request("'tool_choice' requires a call, which '" + r.grammar.field + "' does not allow: send one or the other",
                        "tool_choice");
    return;
  }
  grammar::ToolGrammarOptions o;
  o.format = format;
  o.required = required;
  o.function = c.function;
  o.parallel = opt_bool(b, "parallel_tool_calls").value_or(true);
  const text::ChatRequest& chat = r.prompt.chat;
  if (ctx.tmpl && ctx.tmpl->opens_thinking(chat)) o.reasoning = grammar::ToolReasoning::Open;
  else if (family == text::ChatTemplateFamily::Qwen3 && chat.enable_thinking.value_or(true))
    o.reasoning = grammar::ToolReasoning::Optional;  // the model opens its own <think> block
  o.whitespace = request_json_whitespace(b, ctx.json_whitespace);
  if (ctx.tok) o.special_token = grammar::special_token_test(*ctx.tok);
  try {
    grammar::SchemaGrammar g = grammar::tool_call_grammar(*tools, o);
    r.grammar.gbnf = std::move(g.gbnf);
    r.grammar.warnings = std::move(g.warnings);
    r.grammar.field = "tools";
  } catch (const grammar::GrammarError& e) {
    throw bad_request(std::string("'tools': ") + e.what(), "tools");
  }
}

// llama.cpp's reasoning_format, over the server's --reasoning-format.
text::ReasoningFormat parse_reasoning_format(const Json& b, const ParseContext& ctx) {
  const auto v = opt_string(b, "reasoning_format");
  if (!v) return ctx.reasoning_format;
  if (const auto f = text::reasoning_format_from_name(*v)) return *f;
  throw bad_request(std::string("'reasoning_format' must be ") + text::reasoning_format_names() + ", got \"" + *v + "\"",
                    "reasoning_format");
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

std::vector<serve::PromptPiece> prompt_pieces(const Json& v, const char* what) {
  std::vector<serve::PromptPiece> pieces;
  const auto add_id = [&](const Json& e, size_t i) {
    if (!e.is_number_integer())
      throw bad_request(std::string("'") + what + "' must be a string or an array of token ids and strings; element " +
                            std::to_string(i) + " is " + (e.is_array() ? "an array (several prompts in one request are not supported)" : std::string(e.type_name())),
                        what);
    serve::PromptPiece p;
    p.is_token = true;
    p.token = e.is_number_unsigned() && e.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : e.get<int64_t>();
    pieces.push_back(p);
  };
  if (v.is_string()) {
    pieces.push_back(serve::PromptPiece{.text = v.get<std::string>()});
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].is_string()) pieces.push_back(serve::PromptPiece{.text = v[i].get<std::string>()});
      else add_id(v[i], i);
    }
  } else {
    throw bad_request(std::string("'") + what + "' must be a string or an array of token ids, got " + v.type_name(), what);
  }
  return pieces;
}

std::vector<int32_t> tokens_of(const Json& v, const text::Tokenizer& tok, const char* what, bool add_special) {
  return serve::prompt_tokens(prompt_pieces(v, what), tok, what, add_special);
}

ParsedRequest parse_completion_request(const Json& b, const ParseContext& ctx) {
  ParsedRequest out;
  check_model(b, ctx, out);
  serve::PromptInput& in = out.request.prompt;
  in.form = serve::PromptInput::Form::Raw;
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
    for (size_t i = 0; i < media->size(); ++i) {
      const Json& m = (*media)[i];
      if (!m.is_string()) throw bad_request("'multimodal_data' element " + std::to_string(i) + " is not a string", "multimodal_data");
      in.images.push_back(serve::image_url_bytes(m.get_ref<const std::string&>(), "multimodal_data"));
    }
    in.raw.push_back(serve::PromptPiece{.text = text->get<std::string>()});
    in.image_budget = serve::read_image_budget(b);
  } else {
    in.raw = prompt_pieces(*text, "prompt");
  }
  serve::GenerationParams& gp = out.request.params;
  parse_common(b, ctx, gp);
  if (auto v = opt_int(b, "n_predict", -1, ctx.n_ctx)) gp.n_predict = *v;
  else if (auto m = opt_int(b, "max_tokens", -1, ctx.n_ctx)) gp.n_predict = *m;
  out.request.grammar = parse_grammar_request(b, /*chat=*/false, ctx.json_whitespace);
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
  if (const auto tools = b.find("tools"); tools != b.end()) validate_tools(*tools);
  // Messages with their image parts' files, tools, thinking: the reader the dry run uses too.
  out.request.prompt = serve::read_chat_prompt(b);

  serve::GenerationParams& gp = out.request.params;
  parse_common(b, ctx, gp);
  // The same precedence as agent/request_tokens.h (the simulator reads traces of these bodies).
  std::optional<int64_t> max_tokens = opt_int(b, "max_tokens", 1, ctx.n_ctx);
  if (!max_tokens) max_tokens = opt_int(b, "n_predict", -1, ctx.n_ctx);
  if (!max_tokens) max_tokens = opt_int(b, "max_completion_tokens", 1, ctx.n_ctx);
  if (max_tokens) gp.n_predict = *max_tokens;
  out.request.grammar = parse_grammar_request(b, /*chat=*/true, ctx.json_whitespace);
  out.request.reasoning_format = parse_reasoning_format(b, ctx);
  const ToolChoice choice = parse_tool_choice(b);
  opt_bool(b, "parallel_tool_calls");  // type-checked here, read by the tools' grammar
  tool_call_constraint(b, choice, ctx, out.request);
  out.request.tool_calls = choice.kind != ToolChoice::Kind::None;
  parse_stream(b, out);
  return out;
}

}  // namespace tandem::http
