// Chat prompts of Qwen3 / Qwen3.5 (ChatML), LFM2 and Granite-4.0, rendered natively (no Jinja engine).
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
//   LFM2    - Liquid's LFM2 template (hybrids.md A8): <|im_start|>role\ncontent<|im_end|>\n, tools
//             as "List of tools: <|tool_list_start|>[...]<|tool_list_end|>" in the system turn, tool
//             results in <|tool_response_start|>..<|tool_response_end|>, tool calls as
//             <|tool_call_start|>[name(arg=value, ...)]<|tool_call_end|>. The template's leading
//             bos_token is not rendered: the tokenizer adds BOS (the vocabulary's add_bos), as
//             llama.cpp strips it and tokenizes with add_special.
//   Granite-4.0 - IBM's Granite 4.0 template (hybrids.md B7): <|start_of_role|>role<|end_of_role|>
//             content<|end_of_text|>\n, a default system prompt when there is none, tools in
//             <tools></tools>, <tool_call> JSON, tool results as one user turn per run of tool
//             messages.
// Any other template is interpreted (text/jinja/: a Jinja2 interpreter checked against python3-jinja2):
// parsed when the model loads, so that a construct the interpreter lacks is a load error
// (ChatTemplateLoadError, naming it and its line) rather than a wrong prompt at the first request.
// An interpreted template has no user spans (tail checkpoints only, as LFM2) and no tool-call format.
// ChatML / Qwen families: add_generation_prompt opens the assistant turn; enable_thinking = false
// adds the empty think block "<think>\n\n</think>\n\n". LFM2 and Granite-4.0 have no thinking
// switch (their templates do not read enable_thinking; it is ignored).
//
// Rendering also records where each message starts and where each *user span* starts: the places
// llama.cpp's server cuts a prompt batch (and checkpoints) under the stock policy. They come from
// the family's message delimiter, decided here once per template (user_delimiter()):
//   ChatML / Qwen3 / Qwen3.5: every message with role "user" (<|im_start|>user; tool results folded
//             into user turns are not user spans)
//   LFM2:     none (llama.cpp's LFM2 chat handler sets no delimiters: tail checkpoints only)
//   Granite-4.0: every <|start_of_role|>user<|end_of_role|>, which opens user messages and tool-result
//             turns alike (llama.cpp's differential autoparser finds USER = that string)
// tokenize_chat() turns both into token indices.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::text {

class Tokenizer;

class ChatTemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The template cannot be used at all (a Jinja construct the interpreter does not implement, a
// syntax error): the model's load fails with it.
class ChatTemplateLoadError : public ChatTemplateError {
 public:
  using ChatTemplateError::ChatTemplateError;
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
  // The message as the request sent it (from_json): an interpreted template sees all its fields
  // (tool_call_id, name, ...), with role and content as above.
  Json source;
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  Json tools = Json::array();  // function schemas, rendered with tojson
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // unset = the template's default
  bool add_vision_id = false;           // Qwen3.5: "Picture N: " before each image
  // chat_template_kwargs: more variables for an interpreted template (enable_thinking is read
  // from them into enable_thinking as well).
  Json template_kwargs = Json::object();

  // OpenAI-style JSON: {"messages": [...], "tools": [...], "add_generation_prompt": true,
  // "enable_thinking": false} or just the messages array. Throws ChatTemplateError on bad input.
  static ChatRequest from_json(const Json& j);
};

struct ChatPrompt {
  std::string text;
  std::vector<size_t> message_offsets;  // byte offset where each message's rendering starts
  std::vector<std::string> roles;
  std::vector<size_t> user_offsets;     // byte offset of each user span (see above), ascending
};

enum class ChatTemplateFamily { ChatML, Qwen3, Qwen35, LFM2, Granite4 };
// "chatml", "qwen3", "qwen3.5", "lfm2", "granite-4.0"
const char* chat_template_family_name(ChatTemplateFamily f);
// The text that opens a user span in a rendered prompt of this family ("" for LFM2: none).
const char* chat_template_user_delimiter(ChatTemplateFamily f);
// The message roles this family's template renders (every family here: system, user, assistant,
// tool; another role would render nothing). The HTTP layer refuses roles outside these and
// OpenAI's (http/api/chat_validation.h).
std::vector<std::string> chat_template_roles(ChatTemplateFamily f);

namespace jinja {
class Template;
}

// What an interpreted template sees of the vocabulary: bos_token and eos_token, and whether the
// tokenizer adds BOS itself (then a rendered prompt's leading bos_token is dropped, as llama.cpp
// does, so that BOS is not doubled).
struct ChatTemplateTokens {
  std::string bos_token, eos_token;
  bool add_bos = false;
};

class ChatTemplate {
 public:
  explicit ChatTemplate(ChatTemplateFamily family) : family_(family) {}
  // Recognizes a template string (tokenizer.chat_template) as one of the families, or else parses
  // it for the interpreter. Throws ChatTemplateError for an empty template and
  // ChatTemplateLoadError for one the interpreter cannot run.
  static ChatTemplate from_gguf_template(const std::string& source, const ChatTemplateTokens& tokens = {});
  // The interpreter on `source` whatever it is (tests, and the family templates re-expressed).
  static ChatTemplate interpreted(const std::string& source, const ChatTemplateTokens& tokens = {});

  // For an interpreted template: ChatML (nominal: its roles; no tool-call format is derived from it).
  ChatTemplateFamily family() const { return family_; }
  bool is_interpreted() const { return jinja_ != nullptr; }
  // The family's name, or "jinja" for an interpreted template.
  std::string name() const;
  // The stock policy's message delimiter for this template (chat_template_user_delimiter(); none
  // for an interpreted template).
  std::string_view user_delimiter() const {
    return jinja_ ? std::string_view() : std::string_view(chat_template_user_delimiter(family_));
  }
  // True when the source was one of the exact templates Tandem is tested against; false when it
  // was recognized by its markers only (note() then says so, for a warning).
  bool exact() const { return exact_; }
  const std::string& note() const { return note_; }

  // Throws ChatTemplateError where the template itself would raise (e.g. Qwen3.5: "No user query
  // found in messages.", an interpreted template's raise_exception) or when a message cannot be
  // expressed in this family. An interpreted template's prompt has no user offsets, and its
  // message offsets are 0 (nothing reads them; llama.cpp's server has none either).
  ChatPrompt render(const ChatRequest& req) const;
  // Whether the generation prompt render() appends for req leaves a <think> block open, so that
  // the answer begins inside its reasoning (Qwen3.5, unless enable_thinking is false).
  bool opens_thinking(const ChatRequest& req) const;

 private:
  ChatTemplateFamily family_;
  bool exact_ = true;
  std::string note_;
  std::shared_ptr<const jinja::Template> jinja_;
  ChatTemplateTokens tokens_;
};

// The template tokens of a tokenizer's vocabulary (the texts of BOS and EOS, add_bos).
ChatTemplateTokens chat_template_tokens(const Tokenizer& tok);

struct ChatTokens {
  std::vector<int32_t> ids;
  std::vector<int32_t> message_starts;  // token index where each message starts
  std::vector<std::string> roles;
  // Token index of each user span (ChatPrompt::user_offsets): serve::Prompt::user_starts.
  std::vector<int64_t> user_starts;
  // Token index of the last user span (-1 if none).
  int32_t last_user_start() const;
};

// Tokenizes a rendered prompt with special tokens on, with BOS first when the vocabulary adds one
// (EncodeOptions::add_special). A message start is the first token that begins at or after the
// message's first byte (messages start at a special token or next to one, so that is exact for
// these templates).
ChatTokens tokenize_chat(const Tokenizer& tok, const ChatPrompt& prompt);

// User spans in a token sequence (raw prompts, or prompts with images, that were not rendered
// here): the index of every token where `delimiter` (chat_template_user_delimiter()) begins in the
// detokenized text at a token boundary. A delimiter that does not end in a special token's '>'
// must be followed by the end, '\n' or ' ' (so "<|im_start|>user" does not match
// "<|im_start|>username"). An empty delimiter finds nothing.
std::vector<int64_t> find_user_starts(const Tokenizer& tok, std::span<const int32_t> tokens,
                                      std::string_view delimiter);

// What a generated GGUF of a family carries in its tokenizer keys (tandem-gen-model, the lfm2 /
// granitehybrid generators): the pre-tokenizer, the control tokens the template and the tokenizer
// use (append them, in this order, after the byte-level vocabulary), the texts of the special ids,
// tokenizer.ggml.add_bos_token, and a chat template of Tandem's own (in tokenizer.chat_template)
// that renders like the family's published template for string contents, tools, tool calls and tool
// results, which both Tandem (recognized as exact) and llama.cpp's Jinja engine render, and
// which llama.cpp routes as it does the real one (LFM2: its LFM2 handler, by the tool-list tokens;
// Granite: the autoparser, delimiter <|start_of_role|>user<|end_of_role|>).
struct ChatFamilyTokenizer {
  std::string pre;                          // tokenizer.ggml.pre
  std::vector<std::string> control_tokens;  // token_type 3 (CONTROL)
  std::string bos, eos, pad;                // texts of bos_token_id / eos_token_id / padding_token_id
  bool add_bos_token = false;               // tokenizer.ggml.add_bos_token
  std::string chat_template;                // tokenizer.chat_template
};
// LFM2 (pre lfm2, BOS <|startoftext|> added, EOS <|im_end|>, PAD <|pad|>) and Granite4 (pre dbrx,
// BOS = EOS = <|end_of_text|>, PAD <|pad|>, no BOS added). Throws std::invalid_argument for the
// other families (tandem-gen-model's Qwen vocabulary has its own, model/qwen35_generator.h).
const ChatFamilyTokenizer& chat_family_tokenizer(ChatTemplateFamily f);

// Jinja's tojson as the reference renders it: ", " and ": " separators, non-ASCII unescaped.
std::string to_json_text(const Json& j);

}  // namespace tandem::text
