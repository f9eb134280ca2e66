#include "text/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "model/qwen35/qwen35_generator.h"
#include "text/test_vocab.h"
#include "text/tokenizer.h"
#include "model/test_paths.h"

namespace tandem::text {
namespace {

std::string qwen35_template() {
  std::ifstream in(std::string(TANDEM_SOURCE_DIR) + "/tests/text/templates/qwen3.5.jinja");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ChatRequest request(const char* json) { return ChatRequest::from_json(Json::parse(json)); }

TEST(ChatTemplate, RecognizesKnownTemplatesAndRejectsOthers) {
  EXPECT_EQ(ChatTemplate::from_gguf_template(default_chat_template()).family(), ChatTemplateFamily::ChatML);
  const auto q35 = ChatTemplate::from_gguf_template(qwen35_template());
  EXPECT_EQ(q35.family(), ChatTemplateFamily::Qwen35);
  EXPECT_TRUE(q35.exact());
  // Re-indented: same fingerprint.
  std::string reindented = qwen35_template();
  for (size_t p = 0; (p = reindented.find("\n    ", p)) != std::string::npos; ++p) reindented.replace(p, 5, "\n  ");
  EXPECT_TRUE(ChatTemplate::from_gguf_template(reindented).exact());
  // Edited but recognizable: accepted with a note.
  const auto edited = ChatTemplate::from_gguf_template(qwen35_template() + "{# local edit #}");
  EXPECT_EQ(edited.family(), ChatTemplateFamily::Qwen35);
  EXPECT_FALSE(edited.exact());
  EXPECT_FALSE(edited.note().empty());
  // Unknown (Llama 3 style) and empty: errors that say what happened.
  try {
    ChatTemplate::from_gguf_template("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}{% endfor %}");
    FAIL();
  } catch (const ChatTemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("unrecognized chat template"), std::string::npos);
  }
  EXPECT_THROW(ChatTemplate::from_gguf_template(""), ChatTemplateError);
}

TEST(ChatTemplate, ChatMLWithThinkingDisabled) {
  const ChatTemplate t(ChatTemplateFamily::ChatML);
  const auto p = t.render(request(R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
                                      "enable_thinking": false})"));
  EXPECT_EQ(p.text, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
                    "<think>\n\n</think>\n\n");
  EXPECT_EQ(p.message_offsets, (std::vector<size_t>{0, 31}));
}

TEST(ChatTemplate, Qwen35ImagesToolsAndErrors) {
  const ChatTemplate t(ChatTemplateFamily::Qwen35);
  auto p = t.render(request(R"({"messages": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " What is this? "}]}]})"));
  EXPECT_EQ(p.text, "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|> What is this?<|im_end|>\n"
                    "<|im_start|>assistant\n<think>\n");
  p = t.render(request(R"({"messages": [{"role": "user", "content": "go"},
      {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "tap", "arguments": {"element": 3, "opts": {"long": true}}}}]},
      {"role": "tool", "content": "ok"}], "add_generation_prompt": false})"));
  EXPECT_EQ(p.text, "<|im_start|>user\ngo<|im_end|>\n<|im_start|>assistant\n<tool_call>\n<function=tap>\n"
                    "<parameter=element>\n3\n</parameter>\n<parameter=opts>\n{\"long\": true}\n</parameter>\n"
                    "</function>\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nok\n</tool_response>"
                    "<|im_end|>\n");
  EXPECT_THROW(t.render(request(R"([{"role": "system", "content": "only"}])")), ChatTemplateError);
  EXPECT_THROW(t.render(request(R"([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}])")),
               ChatTemplateError);
  EXPECT_THROW(ChatTemplate(ChatTemplateFamily::Qwen3).render(request(R"([{"role": "user", "content": [{"type": "image"}]}])")),
               ChatTemplateError);
  EXPECT_THROW(request(R"({"messages": [{"content": "no role"}]})"), ChatTemplateError);
}

TEST(ChatTemplate, MessageStartsInTokens) {
  const auto tok = testing::builtin_tokenizer();
  const ChatTemplate t(ChatTemplateFamily::ChatML);
  const auto p = t.render(request(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                                      {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Open settings"}])"));
  const ChatTokens ct = tokenize_chat(*tok, p);
  ASSERT_EQ(ct.message_starts.size(), 4u);
  const int32_t im_start = *tok->vocab().find("<|im_start|>");
  for (int32_t s : ct.message_starts) EXPECT_EQ(ct.ids[static_cast<size_t>(s)], im_start);
  EXPECT_EQ(ct.last_user_start(), ct.message_starts[3]);
  // The prefix before the last user message is exactly the tokens of the earlier messages.
  const std::string before = p.text.substr(0, p.message_offsets[3]);
  EXPECT_EQ(tok->encode(before), std::vector<int32_t>(ct.ids.begin(), ct.ids.begin() + ct.last_user_start()));
}

TEST(ChatTemplate, ToJsonMatchesJinjaTojson) {
  EXPECT_EQ(to_json_text(Json::parse(R"({"b": [1, 2.5, "x\n"], "a": {"é": null, "t": true}})")),
            "{\"b\": [1, 2.5, \"x\\n\"], \"a\": {\"é\": null, \"t\": true}}");
}

}  // namespace
}  // namespace tandem::text
