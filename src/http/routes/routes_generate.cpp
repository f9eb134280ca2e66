// POST /v1/chat/completions and POST /completion: parse, submit to the engine, answer whole or as
// server-sent events. A client that goes away cancels its generation (ConnectionWatch for
// whole answers; a failed write or a hang-up for streams).
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "http/api/api_error.h"
#include "http/api/error_map.h"
#include "http/api/logprobs_json.h"
#include "http/api/request_parse.h"
#include "http/api/response_json.h"
#include "http/api/sse.h"
#include "http/routes/connection_watch.h"
#include "http/routes/server.h"
#include "serve/engine/engine.h"
#include "serve/request/json_fields.h"
#include "serve/request/prompt_assembly.h"
#include "text/chat_answer.h"

namespace tandem::http {

using serve::parse_json_object;

namespace {

using serve::FinishReason;
using namespace std::chrono_literals;

constexpr auto kPoll = 50ms;

// A finished generation that is not a normal answer (nothing to show, or a failure).
std::optional<ApiError> failure_of(const serve::GenerationResult& r, bool server_stopping) {
  if (r.reason == FinishReason::Error) return server_error("generation failed: " + r.error);
  // The server, not the request, failed: 503, which clients retry (after the restart).
  if (r.reason == FinishReason::Watchdog) return unavailable(r.error);
  if (r.reason == FinishReason::Timeout && !r.started)
    return unavailable("the request's deadline passed after " + std::to_string(static_cast<int64_t>(r.queue_ms)) +
                       " ms waiting for a slot");
  if (r.reason == FinishReason::Cancelled)
    return server_stopping ? unavailable("the server is shutting down") : server_error("the request was cancelled");
  return std::nullopt;
}

// What the prompt assembly takes from this server: the tokenizer and template, the engine's image
// layout (when it has a vision model) and limit, the media marker, and the context to fit.
serve::PromptContext prompt_context(const serve::Engine& engine, const text::ChatTemplate& tmpl, const std::string& marker,
                                    size_t max_token_bytes) {
  serve::PromptContext c;
  c.tok = &engine.tokenizer();
  c.tmpl = &tmpl;
  if (engine.has_vision())
    c.image_params = [&engine](const vision::ImageBudget& b) { return engine.image_params(b); };
  c.max_images = engine.config().images.max_per_request;
  c.media_marker = marker;
  c.n_ctx = engine.config().n_ctx;
  c.max_token_bytes = max_token_bytes;
  return c;
}

struct StreamState {
  std::shared_ptr<serve::Generation> gen;
  ResponseMeta meta;
  int64_t n_prompt = 0;
  bool chat = true;
  bool include_usage = false;
  ConnectionWatch watch;
  bool sent_role = false;
  bool finished = false;
  // Chat: the answer's reasoning and tool calls split off as it streams (text/chat_answer.h), over
  // the request's tools (kept here: the stream outlives the handler); one chunk's delta, its
  // buffers reused from chunk to chunk.
  text::Json tools;
  std::optional<text::ChatAnswerStream> answer;
  text::ChatAnswer delta;
};

// How a chat answer is returned: the request's reasoning format, whether the prompt opened the
// think block (Qwen3.5's generation prompt: the answer starts in its reasoning), and the family's
// tool-call format when the request has tools (and tool_choice is not "none").
text::ChatAnswerFormat answer_format(const serve::Request& req, const text::ChatTemplate& tmpl, const text::Json& tools) {
  text::ChatAnswerFormat f;
  f.reasoning = req.reasoning_format;
  f.starts_in_reasoning = tmpl.opens_thinking(req.prompt.chat);
  f.tool_calls = tools.empty() || !req.tool_calls ? text::ToolCallFormat::None : text::tool_call_format(tmpl.family());
  f.tools = &tools;
  return f;
}

}  // namespace

void HttpServer::generate(const httplib::Request& req, httplib::Response& res, Api api) {
  const Json body = parse_json_object(req.body);
  ParseContext ctx;
  ctx.tmpl = &tmpl_;
  ctx.tok = &engine_.tokenizer();
  ctx.n_ctx = engine_.config().n_ctx;
  ctx.n_parallel = engine_.config().n_parallel;
  ctx.model_names = cfg_.model_names;
  ctx.json_whitespace = cfg_.json_whitespace;
  ctx.reasoning_format = cfg_.reasoning_format;
  const bool chat = api == Api::OpenAiChat;
  // JSON -> the request object (http/api/request_parse.cpp) -> the engine's input, through the one
  // prompt assembly the dry run calls too (serve/request/prompt_assembly.h).
  const ParsedRequest pr = chat ? parse_chat_request(body, ctx) : parse_completion_request(body, ctx);
  serve::EngineRequest er = serve::assemble_prompt(pr.request, prompt_context(engine_, tmpl_, cfg_.media_marker, max_token_bytes_));
  const int64_t n_prompt = static_cast<int64_t>(er.prompt.size());
  const serve::GrammarRequest& grammar = pr.request.grammar;
  if (!grammar.gbnf.empty()) {
    try {
      er.params.grammar = engine_.compile_grammar(grammar.gbnf);
    } catch (const grammar::GrammarError& e) {
      // A schema's GBNF failing to compile is our converter's fault, but still the request's input.
      throw bad_request("'" + grammar.field + "': " + e.what(), grammar.field);
    }
  }

  const bool logprobs = er.params.logprobs;
  std::shared_ptr<serve::Generation> gen = engine_.submit(std::move(er));
  ResponseMeta meta;
  meta.id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(gen->id());
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.model = pr.model;
  meta.warnings = grammar.warnings;
  ConnectionWatch watch = ConnectionWatch::current();

  if (!pr.stream) {
    while (!gen->wait_done(kPoll))
      if (stopping() || watch.peer_closed()) gen->cancel();
    const serve::GenerationResult& r = gen->result();
    if (auto err = failure_of(r, stopping())) return send_error(res, *err);
    const text::Json& tools = pr.request.prompt.chat.tools;
    Json out = chat ? chat_completion_json(meta, r, n_prompt,
                                           text::parse_chat_answer(r.text, answer_format(pr.request, tmpl_, tools)))
                    : completion_json(meta, r, n_prompt, r.text);
    if (logprobs && chat) out["choices"][0]["logprobs"] = chat_logprobs_json(engine_.tokenizer(), r.logprobs);
    if (logprobs && !chat) out["completion_probabilities"] = completion_probabilities_json(engine_.tokenizer(), r.logprobs);
    res.status = 200;
    res.set_content(to_text(out), "application/json; charset=utf-8");
    return;
  }

  auto st = std::make_shared<StreamState>();
  st->gen = gen;
  st->meta = meta;
  st->n_prompt = n_prompt;
  st->chat = chat;
  st->include_usage = pr.include_usage;
  st->watch = watch;
  if (chat) {
    st->tools = pr.request.prompt.chat.tools;
    st->answer.emplace(answer_format(pr.request, tmpl_, st->tools));
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, st](size_t, httplib::DataSink& sink) -> bool {
        if (st->finished) return true;
        if (stopping() || st->watch.peer_closed()) {
          st->gen->cancel();
          return false;
        }
        std::string out;
        if (st->chat && !st->sent_role) {
          out += sse_event(chat_chunk_json(st->meta, "assistant", "", std::nullopt));
          st->sent_role = true;
        }
        serve::Generation::Chunk c = st->gen->next(kPoll);
        std::string_view content = c.text, reasoning;
        text::ChatAnswer& delta = st->delta;
        if (st->answer) {
          delta.reasoning.clear();
          delta.content.clear();
          st->answer->push(c.text, delta);
          if (c.done) st->answer->finish(delta);
          content = delta.content;
          reasoning = delta.reasoning;
        }
        if (!content.empty() || !reasoning.empty() || (!st->chat && !c.tokens.empty()) || !c.logprobs.empty()) {
          // A chunk of reasoning alone carries no content; one of log-probabilities alone, content "".
          const auto content_delta = reasoning.empty() || !content.empty() ? std::optional(content) : std::nullopt;
          const auto reasoning_delta = reasoning.empty() ? std::nullopt : std::optional(reasoning);
          Json chunk = st->chat ? chat_chunk_json(st->meta, std::nullopt, content_delta, std::nullopt, reasoning_delta)
                                : completion_chunk_json(content, c.tokens, c.slot);
          if (!c.logprobs.empty() && st->chat)
            chunk["choices"][0]["logprobs"] = chat_logprobs_json(engine_.tokenizer(), c.logprobs);
          if (!c.logprobs.empty() && !st->chat)
            chunk["completion_probabilities"] = completion_probabilities_json(engine_.tokenizer(), c.logprobs);
          out += sse_event(chunk);
        }
        if (c.done) {
          const serve::GenerationResult& r = st->gen->result();
          if (auto err = failure_of(r, stopping())) {
            out += sse_error(err->status(), err->type(), err->what());
          } else if (st->chat) {
            for (const Json& chunk : chat_tool_call_chunks(st->meta, delta.tool_calls)) out += sse_event(chunk);
            out += sse_event(chat_final_chunk_json(st->meta, r, !delta.tool_calls.empty()));
            if (st->include_usage) out += sse_event(chat_usage_chunk_json(st->meta, r, st->n_prompt));
          } else {
            out += sse_event(completion_json(st->meta, r, st->n_prompt, ""));
          }
          if (st->chat) out += sse_done();
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          st->gen->cancel();
          return false;
        }
        if (c.done) {
          st->finished = true;
          sink.done();
        }
        return true;
      },
      [st](bool) {
        if (!st->gen->done()) st->gen->cancel();
      });
}

}  // namespace tandem::http
