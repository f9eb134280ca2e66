// Chat prompts in the ChatML format of Qwen3 / Qwen3.5, rendered natively (no Jinja engine).
//
// The GGUF's tokenizer.chat_template is *recognized*, not interpreted: its text is compared with
// the templates Tandem reproduces (whitespace-insensitive hash), and failing that with the marker
// strings of each family. A template that matches neither is rejected with ChatTemplateError
// rather than rendered approximately. Families:
//   ChatML  - plain <|im_start|>role\ncontent<|im_end|>\n turns (tandem-gen-model's default)
//   Qwen3   - Qwen3's template: tools block, <tool_call> JSON, <think> for the last turns,
//             tool results folded into user turns
//   Qwen3.5 - Qwen3.5's template: content parts (text / image / video), XML-style tool calls
//             (<function=..><parameter=..>), the generation prompt opens <think>
// Every family: add_generation_prompt opens the assistant turn; enable_thinking = false adds the
// empty think block "<think>\n\n</think>\n\n".
//
// Rendering also records where each message starts, and tokenize_chat() turns that into token
// indices (the serving layer keeps checkpoints at the last user message).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::text {

class Tokenizer;

class ChatTemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using Json = nlohmann::ordered_json;  // keeps key order, as tojson in the reference does

struct ChatContentPart {
  enum class Kind { Text, Image, Video };
  Kind kind = Kind::Text;
  std::string text;  // Kind::Text
};

struct ChatToolCall {
  std::string name;
  Json arguments;  // an object, or a string holding JSON (kept verbatim by the Qwen3 template)
};

struct ChatMessage {
  std::string role;  // system, user, assistant, tool
  // Either a plain string (parts empty, content_is_parts false) or a list of parts.
  std::string content;
  bool content_is_parts = false;
  bool content_is_null = false;  // "content": null or missing
  std::vector<ChatContentPart> parts;
  std::optional<std::string> reasoning_content;
  std::vector<ChatToolCall> tool_calls;
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  Json tools = Json::array();  // function schemas, rendered with tojson
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // unset = the template's default
  bool add_vision_id = false;           // Qwen3.5: "Picture N: " before each image

  // OpenAI-style JSON: {"messages": [...], "tools": [...], "add_generation_prompt": true,
  // "enable_thinking": false} or just the messages array. Throws ChatTemplateError on bad input.
  static ChatRequest from_json(const Json& j);
};

struct ChatPrompt {
  std::string text;
  std::vector<size_t> message_offsets;  // byte offset where each message's rendering starts
  std::vector<std::string> roles;
};

enum class ChatTemplateFamily { ChatML, Qwen3, Qwen35 };
const char* chat_template_family_name(ChatTemplateFamily f);

class ChatTemplate {
 public:
  explicit ChatTemplate(ChatTemplateFamily family) : family_(family) {}
  // Recognizes a template string (tokenizer.chat_template). Throws ChatTemplateError for an empty
  // or unknown template.
  static ChatTemplate from_gguf_template(const std::string& source);

  ChatTemplateFamily family() const { return family_; }
  // True when the source was one of the exact templates Tandem is tested against; false when it
  // was recognized by its markers only (note() then says so, for a warning).
  bool exact() const { return exact_; }
  const std::string& note() const { return note_; }

  // Throws ChatTemplateError where the template itself would raise (e.g. Qwen3.5: "No user query
  // found in messages.") or when a message cannot be expressed in this family.
  ChatPrompt render(const ChatRequest& req) const;

 private:
  ChatTemplateFamily family_;
  bool exact_ = true;
  std::string note_;
};

struct ChatTokens {
  std::vector<int32_t> ids;
  std::vector<int32_t> message_starts;  // token index where each message starts
  std::vector<std::string> roles;
  // Token index of the last user message (-1 if none).
  int32_t last_user_start() const;
};

// Tokenizes a rendered prompt with special tokens on. A message start is the first token that
// begins at or after the message's first byte (messages start at <|im_start|> or next to another
// special token, so that is exact for these templates).
ChatTokens tokenize_chat(const Tokenizer& tok, const ChatPrompt& prompt);

// Jinja's tojson as the reference renders it: ", " and ": " separators, non-ASCII unescaped.
std::string to_json_text(const Json& j);

}  // namespace tandem::text
