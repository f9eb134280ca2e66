// POST /apply-template (llama.cpp's): a chat request's messages rendered by the model's template,
// without generating: {"messages": [...], "tools"?, "chat_template_kwargs"?} -> {"prompt": "..."}.
// The body is read as /v1/chat/completions reads it and rendered by the prompt assembly's own
// renderer, so the prompt is exactly the text a chat request would tokenize (the media marker
// where an image is).
#include <httplib.h>

#include "http/api/request_parse.h"
#include "http/routes/server.h"
#include "serve/engine/engine.h"
#include "serve/request/json_fields.h"
#include "serve/request/prompt_assembly.h"

namespace tandem::http {

void HttpServer::apply_template(const httplib::Request& req, httplib::Response& res) {
  const Json body = serve::parse_json_object(req.body);
  ParseContext ctx;
  ctx.tmpl = &tmpl_;
  ctx.n_ctx = engine_.config().n_ctx;
  ctx.n_parallel = engine_.config().n_parallel;
  ctx.model_names = cfg_.model_names;
  ctx.json_whitespace = cfg_.json_whitespace;
  ctx.reasoning_format = cfg_.reasoning_format;
  const ParsedRequest pr = parse_chat_request(body, ctx);
  serve::PromptContext pc;
  pc.tok = &engine_.tokenizer();
  pc.tmpl = &tmpl_;
  pc.media_marker = cfg_.media_marker;
  const std::string prompt = serve::render_chat_text(pr.request, pc);
  Json out = Json::object();
  out["prompt"] = prompt;
  res.status = 200;
  res.set_content(out.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json; charset=utf-8");
}

}  // namespace tandem::http
