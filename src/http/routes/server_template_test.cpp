// POST /apply-template, and a template the Jinja interpreter renders served end to end: its
// raise_exception is a 400 with the template's message, and the server keeps serving.
#include "http/routes/server.h"

#include <gtest/gtest.h>

#include "http/routes/http_test_util.h"

namespace tandem::http {
namespace {

using namespace tandem::http::testing;

Json conversation(bool system) {
  Json msgs = Json::array();
  if (system) msgs.push_back({{"role", "system"}, {"content", "You operate a phone."}});
  msgs.push_back({{"role", "user"}, {"content", "Open the settings app."}});
  return msgs;
}

// The tokens /tokenize makes of a text.
size_t token_count(TestServer& s, const std::string& text) {
  const Json t = parse_body(s.client()->Post("/tokenize", to_text(Json{{"content", text}}), "application/json"));
  return t["tokens"].size();
}

TEST(HttpApplyTemplate, RendersExactlyWhatAChatRequestTokenizes) {
  TestServer s(small_engine());
  auto c = s.client();
  const Json body{{"messages", conversation(true)}, {"chat_template_kwargs", {{"enable_thinking", false}}}};
  const Json r = parse_body(c->Post("/apply-template", to_text(body), "application/json"));
  text::ChatRequest req = text::ChatRequest::from_json(body);
  req.enable_thinking = false;
  EXPECT_EQ(r["prompt"], TinyModel::get().tmpl.render(req).text);
  // The same body as a chat request prefills those very tokens.
  Json chat = body;
  chat["max_tokens"] = 1;
  const Json answer = parse_body(c->Post("/v1/chat/completions", to_text(chat), "application/json"));
  EXPECT_EQ(answer["usage"]["prompt_tokens"].get<size_t>(), token_count(s, r["prompt"].get<std::string>()));
  // Read as a chat request is: the same 400s.
  auto bad = c->Post("/apply-template", to_text(Json{{"messages", Json::array()}}), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("messages"), std::string::npos) << bad->body;
}

// Gemma 2's template (no family of Tandem's): rendered by the interpreter.
const char* kGemma2 =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}";

TEST(HttpApplyTemplate, AnInterpretedTemplateThatRaisesIsA400AndTheServerKeepsServing) {
  TinyModel& m = TinyModel::get();
  text::ChatTemplateTokens toks = text::chat_template_tokens(*m.tok);
  toks.bos_token = "<bos>";
  const text::ChatTemplate gemma = text::ChatTemplate::from_gguf_template(kGemma2, toks);
  ASSERT_TRUE(gemma.is_interpreted());
  TestServer s(*m.model, *m.tok, gemma, small_engine());
  auto c = s.client();
  EXPECT_EQ(parse_body(c->Get("/props"))["chat_template"], "jinja");
  const Json r = parse_body(c->Post("/apply-template", to_text(Json{{"messages", conversation(false)}}), "application/json"));
  EXPECT_EQ(r["prompt"], "<bos><start_of_turn>user\nOpen the settings app.<end_of_turn>\n<start_of_turn>model\n");

  for (const char* path : {"/v1/chat/completions", "/apply-template"}) {
    auto raised = c->Post(path, to_text(Json{{"messages", conversation(true)}, {"max_tokens", 2}}), "application/json");
    ASSERT_TRUE(raised);
    EXPECT_EQ(raised->status, 400) << path;
    EXPECT_NE(raised->body.find("System role not supported"), std::string::npos) << raised->body;
  }
  auto ok = c->Post("/v1/chat/completions", to_text(Json{{"messages", conversation(false)}, {"max_tokens", 2}}),
                    "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

}  // namespace
}  // namespace tandem::http
