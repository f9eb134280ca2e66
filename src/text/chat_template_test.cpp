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

std::string template_file(const char* name) {
  std::ifstream in(std::string(TANDEM_SOURCE_DIR) + "/tests/text/templates/" + name);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
std::string qwen35_template() { return template_file("qwen3.5.jinja"); }

// The built-in vocabulary plus the control tokens of LFM2 and Granite, BOS <|startoftext|>.
std::unique_ptr<Tokenizer> hybrid_tokenizer(const std::string& pre) {
  Qwen35Vocab v = builtin_qwen35_vocab();
  v.pre = pre;
  for (const char* t : {"<|startoftext|>", "<|tool_list_start|>", "<|tool_list_end|>", "<|tool_call_start|>",
                        "<|tool_call_end|>", "<|tool_response_start|>", "<|tool_response_end|>", "<|start_of_role|>",
                        "<|end_of_role|>", "<|end_of_text|>"}) {
    v.tokens.push_back(t);
    v.token_types.push_back(3);
  }
  v.bos_id = static_cast<int32_t>(*v.find("<|startoftext|>"));
  return Tokenizer::from_gguf(*testing::vocab_image(v)->file);
}

// Expectations below were rendered from tests/text/templates/{lfm2,granite-4.0}.jinja with
// @huggingface/jinja 0.5.11 (bos_token "<|startoftext|>", which Tandem leaves to the tokenizer).
const char* kGraniteTools =
    "You are a helpful assistant with access to the following tools. You may call one or more tools to assist with "
    "the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n";
const char* kGraniteToolsEnd =
    "\n</tools>\n\nFor each tool call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call>. If a tool does not exist in the provided list of tools, notify the user that "
    "you do not have the ability to fulfill the request.";

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
  // Unknown (Llama 3 style): interpreted, its BOS dropped when the tokenizer adds one.
  ChatTemplateTokens toks;
  toks.bos_token = "<|begin_of_text|>";
  toks.add_bos = true;
  const auto llama = ChatTemplate::from_gguf_template(
      "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}{% endfor %}", toks);
  EXPECT_TRUE(llama.is_interpreted());
  EXPECT_EQ(llama.name(), "jinja");
  EXPECT_EQ(llama.user_delimiter(), "");
  EXPECT_EQ(llama.render(request(R"([{"role": "user", "content": "hi"}])")).text, "<|start_header_id|>user");
  // A construct the interpreter lacks: a load error naming it and its line.
  try {
    ChatTemplate::from_gguf_template("{% for m in messages %}\n{% include 'x.jinja' %}{% endfor %}");
    FAIL();
  } catch (const ChatTemplateLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("'{% include %}' at line 2"), std::string::npos) << e.what();
  }
  // Empty: an error that says what happened.
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

// The answer begins inside a think block exactly when the generation prompt ends in one.
TEST(ChatTemplate, OpensThinkingWhereTheGenerationPromptOpensTheBlock) {
  const std::string user = R"("messages": [{"role": "user", "content": "U"}])";
  for (ChatTemplateFamily f : {ChatTemplateFamily::ChatML, ChatTemplateFamily::Qwen3, ChatTemplateFamily::Qwen35,
                               ChatTemplateFamily::LFM2, ChatTemplateFamily::Granite4}) {
    const ChatTemplate t(f);
    for (const char* extra : {"", R"(, "enable_thinking": true)", R"(, "enable_thinking": false)",
                              R"(, "add_generation_prompt": false)"}) {
      SCOPED_TRACE(std::string(chat_template_family_name(f)) + extra);
      const ChatRequest req = request(("{" + user + extra + "}").c_str());
      const bool open = f == ChatTemplateFamily::Qwen35 && (std::string_view(extra).empty() ||
                                                            std::string_view(extra).find("true") != std::string_view::npos);
      EXPECT_EQ(t.opens_thinking(req), open);
      EXPECT_EQ(t.render(req).text.ends_with("<think>\n"), open);
    }
  }
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

// OpenAI sends function.arguments as a JSON string. Qwen3.5's template iterates the arguments
// (|items), so the string is parsed first (llama.cpp does the same for such templates); Qwen3's
// and Granite's write a string as it is (`arguments is string`), which is the same text for the
// compact-with-spaces JSON clients send. A string that is not a JSON object is an error.
TEST(ChatTemplate, ToolCallArgumentsAsAJsonString) {
  auto conversation = [](const std::string& args) {
    return ChatRequest::from_json(Json::parse(R"({"messages": [{"role": "user", "content": "go"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "tap", "arguments": )" +
                   args + R"(}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]})"));
  };
  for (const auto f : {ChatTemplateFamily::Qwen35, ChatTemplateFamily::Qwen3, ChatTemplateFamily::Granite4}) {
    const ChatTemplate t(f);
    EXPECT_EQ(t.render(conversation(R"("{\"element\": 3, \"opts\": {\"long\": true}}")")).text,
              t.render(conversation(R"({"element": 3, "opts": {"long": true}})")).text)
        << chat_template_family_name(f);
  }
  EXPECT_THROW(ChatTemplate(ChatTemplateFamily::Qwen35).render(conversation(R"("element=3")")), ChatTemplateError);
  EXPECT_THROW(ChatTemplate(ChatTemplateFamily::Qwen35).render(conversation(R"("[3]")")), ChatTemplateError);
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

TEST(ChatTemplate, RecognizesLfm2AndGranite) {
  const auto lfm2 = ChatTemplate::from_gguf_template(template_file("lfm2.jinja"));
  EXPECT_EQ(lfm2.family(), ChatTemplateFamily::LFM2);
  EXPECT_TRUE(lfm2.exact());
  const auto granite = ChatTemplate::from_gguf_template(template_file("granite-4.0.jinja"));
  EXPECT_EQ(granite.family(), ChatTemplateFamily::Granite4);
  EXPECT_TRUE(granite.exact());
  // llama.cpp's own LFM2 variant (tool calls as JSON, tabs): recognized by its markers, with a note.
  const auto variant = ChatTemplate::from_gguf_template(
      "{{- bos_token -}}{%- if tools -%}List of tools: <|tool_list_start|>[]<|tool_list_end|>{%- endif -%}"
      "{%- for message in messages -%}{{- \"<|im_start|>\" + message[\"role\"] + \"\\n\" -}}"
      "{%- if message[\"role\"] == \"tool\" -%}<|tool_response_start|>{%- endif -%}{%- endfor -%}");
  EXPECT_EQ(variant.family(), ChatTemplateFamily::LFM2);
  EXPECT_FALSE(variant.exact());
  EXPECT_NE(variant.note().find("lfm2"), std::string::npos);
  EXPECT_EQ(ChatTemplate::from_gguf_template(template_file("granite-4.0.jinja") + "{# edit #}").family(),
            ChatTemplateFamily::Granite4);
  // LFM2.5's template ("List of tools: " + tojson, thinking, dates) is another family: interpreted.
  const auto lfm25 = ChatTemplate::from_gguf_template(
      "{{- bos_token -}}{%- if tools -%}{{- \"List of tools: \" + (tools | tojson) -}}"
      "{%- endif -%}<|im_start|>{{ strftime_now(\"%Y\") | length }}<think>");
  EXPECT_TRUE(lfm25.is_interpreted());
  EXPECT_EQ(lfm25.render(request(R"({"messages": [{"role": "user", "content": "Hi"}], "tools": [{"a": 1}]})")).text,
            "List of tools: [{\"a\": 1}]<|im_start|>4<think>");
  EXPECT_TRUE(lfm25.opens_thinking(request(R"([{"role": "user", "content": "Hi"}])")));
}

TEST(ChatTemplate, Lfm2Rendering) {
  const ChatTemplate t(ChatTemplateFamily::LFM2);
  auto p = t.render(request(R"([{"role": "user", "content": "Hi"}])"));
  EXPECT_EQ(p.text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  p = t.render(request(R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello"}, {"role": "tool", "content": "{\"ok\": true}"},
      {"role": "user", "content": "Open settings"}],
      "tools": [{"name": "tap", "parameters": {"type": "object"}}, "raw_tool"], "enable_thinking": false})"));
  EXPECT_EQ(p.text,
            "<|im_start|>system\nBe brief.\nList of tools: <|tool_list_start|>[{\"name\": \"tap\", \"parameters\": "
            "{\"type\": \"object\"}}, raw_tool]<|tool_list_end|><|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>tool\n<|tool_response_start|>{\"ok\": true}"
            "<|tool_response_end|><|im_end|>\n<|im_start|>user\nOpen settings<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_TRUE(p.user_offsets.empty());  // LFM2: no user spans
  p = t.render(request(R"({"messages": [{"role": "user", "content": "u"}], "tools": [{"name": "tap"}],
                           "add_generation_prompt": false})"));
  EXPECT_EQ(p.text, "<|im_start|>system\nList of tools: <|tool_list_start|>[{\"name\": \"tap\"}]<|tool_list_end|>"
                    "<|im_end|>\n<|im_start|>user\nu<|im_end|>\n");
  // Structured tool calls: the Pythonic list the model writes.
  p = t.render(request(R"({"messages": [{"role": "user", "content": "go"},
      {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "tap", "arguments": {"element": 3, "why": "ok"}}},
                                                           {"function": {"name": "back", "arguments": "{}"}}]}],
      "add_generation_prompt": false})"));
  EXPECT_EQ(p.text, "<|im_start|>user\ngo<|im_end|>\n<|im_start|>assistant\n<|tool_call_start|>[tap(element=3, "
                    "why=\"ok\"), back()]<|tool_call_end|><|im_end|>\n");
  EXPECT_THROW(t.render(request(R"([{"role": "user", "content": [{"type": "image"}]}])")), ChatTemplateError);
}

TEST(ChatTemplate, GraniteRendering) {
  const ChatTemplate t(ChatTemplateFamily::Granite4);
  auto p = t.render(request(R"([{"role": "user", "content": "Hi"}])"));
  EXPECT_EQ(p.text, "<|start_of_role|>system<|end_of_role|>You are a helpful assistant. Please ensure responses are "
                    "professional, accurate, and safe.<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hi"
                    "<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>");
  p = t.render(request(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Open settings"}])"));
  EXPECT_EQ(p.text, "<|start_of_role|>system<|end_of_role|>Be brief.<|end_of_text|>\n<|start_of_role|>user"
                    "<|end_of_role|>Hi<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>Hello<|end_of_text|>\n"
                    "<|start_of_role|>user<|end_of_role|>Open settings<|end_of_text|>\n<|start_of_role|>assistant"
                    "<|end_of_role|>");
  p = t.render(request(R"({"messages": [{"role": "user", "content": "go"},
      {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "tap", "arguments": {"element": 3}}},
                                                         {"function": {"name": "type", "arguments": "{\"text\": \"a\"}"}}]},
      {"role": "tool", "content": "ok"}, {"role": "tool", "content": "done"},
      {"role": "user", "content": [{"type": "text", "text": "next"}, {"type": "text", "text": "step"}]}],
      "tools": [{"type": "function", "function": {"name": "tap", "parameters": {"type": "object"}}}]})"));
  const std::string tools = std::string(kGraniteTools) +
                            "{\"type\": \"function\", \"function\": {\"name\": \"tap\", \"parameters\": {\"type\": \"object\"}}}" +
                            kGraniteToolsEnd;
  EXPECT_EQ(p.text, "<|start_of_role|>system<|end_of_role|>" + tools +
                        "<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>go<|end_of_text|>\n"
                        "<|start_of_role|>assistant<|end_of_role|><tool_call>\n{\"name\": \"tap\", \"arguments\": "
                        "{\"element\": 3}}\n</tool_call>\n<tool_call>\n{\"name\": \"type\", \"arguments\": {\"text\": "
                        "\"a\"}}\n</tool_call><|end_of_text|>\n<|start_of_role|>user<|end_of_role|>\n<tool_response>\nok\n"
                        "</tool_response>\n<tool_response>\ndone\n</tool_response><|end_of_text|>\n"
                        "<|start_of_role|>user<|end_of_role|>next\nstep<|end_of_text|>\n"
                        "<|start_of_role|>assistant<|end_of_role|>");
  // User spans: both user messages and the (one) tool-result turn between them.
  ASSERT_EQ(p.user_offsets.size(), 3u);
  for (size_t off : p.user_offsets)
    EXPECT_EQ(p.text.compare(off, 36, "<|start_of_role|>user<|end_of_role|>"), 0) << off;
  p = t.render(request(R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "u"},
      {"role": "assistant", "content": "thinking", "tool_calls": [{"function": {"name": "tap", "arguments": {}}}]}],
      "tools": [{"name": "tap"}], "add_generation_prompt": false})"));
  EXPECT_EQ(p.text, "<|start_of_role|>system<|end_of_role|>S\n\n" + std::string(kGraniteTools) + "{\"name\": \"tap\"}" +
                        kGraniteToolsEnd +
                        "<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>u<|end_of_text|>\n<|start_of_role|>"
                        "assistant<|end_of_role|>thinking\n<tool_call>\n{\"name\": \"tap\", \"arguments\": {}}\n"
                        "</tool_call><|end_of_text|>\n");
}

// The stock policy's user boundaries per family, from the rendering and from raw tokens alike.
TEST(ChatTemplate, UserStartsPerFamily) {
  const char* conversation = R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "tap", "arguments": {"element": 3}}}]},
      {"role": "tool", "content": "ok"}, {"role": "user", "content": "Open settings"}]})";
  {  // Granite: user messages and tool-result turns; no BOS.
    const auto tok = hybrid_tokenizer("dbrx");
    const ChatTemplate t = ChatTemplate::from_gguf_template(template_file("granite-4.0.jinja"));
    EXPECT_EQ(t.user_delimiter(), "<|start_of_role|>user<|end_of_role|>");
    const ChatTokens ct = tokenize_chat(*tok, t.render(request(conversation)));
    const int32_t sor = *tok->vocab().find("<|start_of_role|>");
    EXPECT_EQ(ct.ids.front(), sor);
    ASSERT_EQ(ct.user_starts.size(), 3u);
    EXPECT_EQ(ct.user_starts[0], ct.message_starts[1]);
    EXPECT_EQ(ct.user_starts[1], ct.message_starts[3]);  // the tool result's turn
    EXPECT_EQ(ct.user_starts[2], ct.message_starts[4]);
    EXPECT_EQ(ct.last_user_start(), ct.message_starts[4]);
    EXPECT_EQ(find_user_starts(*tok, ct.ids, t.user_delimiter()), ct.user_starts);
  }
  {  // LFM2: BOS first, no user spans.
    const auto tok = hybrid_tokenizer("lfm2");
    const ChatTemplate t = ChatTemplate::from_gguf_template(template_file("lfm2.jinja"));
    EXPECT_EQ(t.user_delimiter(), "");
    const ChatTokens ct = tokenize_chat(*tok, t.render(request(conversation)));
    EXPECT_EQ(ct.ids.front(), *tok->vocab().bos());
    EXPECT_EQ(ct.ids[1], *tok->vocab().find("<|im_start|>"));
    EXPECT_EQ(ct.message_starts[1], 1 + static_cast<int32_t>(tok->encode("<|im_start|>system\nBe brief.<|im_end|>\n").size()));
    EXPECT_TRUE(ct.user_starts.empty());
    EXPECT_EQ(ct.last_user_start(), -1);
    EXPECT_TRUE(find_user_starts(*tok, ct.ids, t.user_delimiter()).empty());
  }
  {  // Qwen3 (ChatML delimiter): user messages only, the tool result folded into a user turn is not one.
    const auto tok = testing::builtin_tokenizer();
    const ChatTemplate t(ChatTemplateFamily::Qwen3);
    const ChatTokens ct = tokenize_chat(*tok, t.render(request(conversation)));
    EXPECT_EQ(ct.user_starts, (std::vector<int64_t>{ct.message_starts[1], ct.message_starts[4]}));
    // Raw tokens carry no roles: there every <|im_start|>user counts, the tool turn included.
    EXPECT_EQ(find_user_starts(*tok, ct.ids, t.user_delimiter()),
              (std::vector<int64_t>{ct.message_starts[1], ct.message_starts[3], ct.message_starts[4]}));
    EXPECT_TRUE(find_user_starts(*tok, tok->encode("<|im_start|>username\nx"), t.user_delimiter()).empty());
    EXPECT_EQ(find_user_starts(*tok, tok->encode("<|im_start|>user"), t.user_delimiter()), (std::vector<int64_t>{0}));
  }
}

// What tandem-gen-model writes for a family: a vocabulary with the family's control tokens, its
// pre-tokenizer and BOS rule, and Tandem's own template, recognized as that family (exact).
TEST(ChatTemplate, FamilyTokenizerForGeneratedFiles) {
  for (const ChatTemplateFamily f : {ChatTemplateFamily::LFM2, ChatTemplateFamily::Granite4}) {
    const ChatFamilyTokenizer& ft = chat_family_tokenizer(f);
    Qwen35Vocab v = builtin_qwen35_vocab();
    v.pre = ft.pre;
    for (const auto& t : ft.control_tokens) {
      if (v.find(t)) continue;
      v.tokens.push_back(t);
      v.token_types.push_back(3);
    }
    v.bos_id = static_cast<int32_t>(*v.find(ft.bos));
    v.eos_id = static_cast<int32_t>(*v.find(ft.eos));
    v.chat_template = ft.chat_template;
    const auto tok = Tokenizer::from_gguf(*testing::vocab_image(v, ft.add_bos_token)->file);
    EXPECT_EQ(tok->add_bos(), f == ChatTemplateFamily::LFM2);
    const ChatTemplate t = ChatTemplate::from_gguf_template(tok->vocab().chat_template());
    EXPECT_EQ(t.family(), f);
    EXPECT_TRUE(t.exact());
    const ChatTokens ct = tokenize_chat(*tok, t.render(request(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                                                                    {"role": "user", "content": "Open settings"}])")));
    EXPECT_EQ(ct.user_starts.size(), f == ChatTemplateFamily::LFM2 ? 0u : 2u);
    EXPECT_TRUE(tok->vocab().is_eog(*v.eos_id));
  }
  EXPECT_THROW(chat_family_tokenizer(ChatTemplateFamily::Qwen35), std::invalid_argument);
}

TEST(ChatTemplate, ToJsonMatchesJinjaTojson) {
  EXPECT_EQ(to_json_text(Json::parse(R"({"b": [1, 2.5, "x\n"], "a": {"é": null, "t": true}})")),
            "{\"b\": [1, 2.5, \"x\\n\"], \"a\": {\"é\": null, \"t\": true}}");
}

}  // namespace
}  // namespace tandem::text
