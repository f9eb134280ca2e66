#include "text/chat_template.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/jinja/template.h"
#include "text/special_tokens.h"
#include "text/tokenizer.h"

namespace tandem::text {
namespace {

[[noreturn]] void fail(const std::string& what) { throw ChatTemplateError(what); }

// ---------------------------------------------------------------------------------------------
// Recognition.

// FNV-1a over the template without ASCII whitespace: the same template re-indented (as converters
// and hubs sometimes do) still matches.
uint64_t template_fingerprint(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') continue;
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

struct KnownTemplate {
  uint64_t fingerprint;
  ChatTemplateFamily family;
  const char* what;
};
// The templates the npm reference test renders with @huggingface/jinja (tests/text/).
constexpr KnownTemplate kKnown[] = {
    {0x7175efb54ad7a704ull, ChatTemplateFamily::ChatML, "tandem-gen-model's default ChatML"},
    {0x4629b26c31e7abf0ull, ChatTemplateFamily::Qwen3, "Qwen3 (tokenizer_config.json of Qwen3)"},
    {0x9283a9b049b2b593ull, ChatTemplateFamily::Qwen35, "Qwen3.5 (chat_template.jinja of Qwen3.5)"},
    // tests/text/templates/: rendered with @huggingface/jinja for chat_template_test's expectations.
    {0xcb5d5992ca90d285ull, ChatTemplateFamily::LFM2, "LFM2 (LiquidAI's tool-list template)"},
    {0x107ed9be2ca96818ull, ChatTemplateFamily::Granite4, "Granite 4.0 (ibm-granite-granite-4.0.jinja)"},
};

// Tandem's own templates for generated files (chat_family_tokenizer()); checked against the
// published ones with @huggingface/jinja on chat_template_test's conversations.
const char* kTandemLfm2Template = R"TPL({#- Tandem's LFM2 chat template (tandem-gen-model): the LFM2 tool-list format. -#}
{{- bos_token -}}
{%- set ns = namespace(system="", start=0) -%}
{%- if messages and messages[0].role == "system" -%}
  {%- set ns.system = messages[0].content -%}
  {%- set ns.start = 1 -%}
{%- endif -%}
{%- if tools -%}
  {%- if ns.system -%}{%- set ns.system = ns.system + "\n" -%}{%- endif -%}
  {%- set ns.system = ns.system + "List of tools: <|tool_list_start|>[" -%}
  {%- for tool in tools -%}
    {%- set ns.system = ns.system + (tool if tool is string else tool | tojson) + ("" if loop.last else ", ") -%}
  {%- endfor -%}
  {%- set ns.system = ns.system + "]<|tool_list_end|>" -%}
{%- endif -%}
{%- if ns.system -%}{{- "<|im_start|>system\n" + ns.system + "<|im_end|>\n" -}}{%- endif -%}
{%- for message in messages[ns.start:] -%}
  {{- "<|im_start|>" + message.role + "\n" -}}
  {%- if message.role == "tool" -%}
    {{- "<|tool_response_start|>" + (message.content or "") + "<|tool_response_end|>" -}}
  {%- else -%}
    {%- if message.role == "assistant" and message.tool_calls -%}
      {{- "<|tool_call_start|>[" -}}
      {%- for call in message.tool_calls -%}
        {%- set f = call.function if call.function is defined else call -%}
        {{- f.name + "(" -}}
        {%- for key, value in f.arguments.items() -%}
          {{- key + "=" + (value | tojson) + ("" if loop.last else ", ") -}}
        {%- endfor -%}
        {{- ")" + ("" if loop.last else ", ") -}}
      {%- endfor -%}
      {{- "]<|tool_call_end|>" -}}
    {%- endif -%}
    {{- message.content or "" -}}
  {%- endif -%}
  {{- "<|im_end|>\n" -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<|im_start|>assistant\n" -}}{%- endif -%}
)TPL";
const char* kTandemGraniteTemplate = R"TPL({#- Tandem's Granite 4.0 chat template (tandem-gen-model): the Granite 4.0 role format, without documents. -#}
{%- set ns = namespace(system="") -%}
{%- if tools -%}
  {%- set ns.system = "You are a helpful assistant with access to the following tools. You may call one or more tools to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" -%}
  {%- for tool in tools -%}{%- set ns.system = ns.system + "\n" + (tool | tojson) -%}{%- endfor -%}
  {%- set ns.system = ns.system + "\n</tools>\n\nFor each tool call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>. If a tool does not exist in the provided list of tools, notify the user that you do not have the ability to fulfill the request." -%}
{%- endif -%}
{%- if messages and messages[0].role == "system" -%}
  {%- set ns.system = messages[0].content + ("\n\n" + ns.system if ns.system else "") -%}
{%- endif -%}
{{- "<|start_of_role|>system<|end_of_role|>" + (ns.system or "You are a helpful assistant. Please ensure responses are professional, accurate, and safe.") + "<|end_of_text|>\n" -}}
{%- for message in messages -%}
  {%- if message.role == "user" or (message.role == "system" and not loop.first) -%}
    {{- "<|start_of_role|>" + message.role + "<|end_of_role|>" + message.content + "<|end_of_text|>\n" -}}
  {%- elif message.role == "assistant" -%}
    {{- "<|start_of_role|>assistant<|end_of_role|>" + (message.content or "") -}}
    {%- for call in (message.tool_calls or []) -%}
      {%- set f = call.function if call.function is defined else call -%}
      {{- ("\n" if (message.content or not loop.first) else "") + "<tool_call>\n{\"name\": \"" + f.name + "\", \"arguments\": " + (f.arguments if f.arguments is string else f.arguments | tojson) + "}\n</tool_call>" -}}
    {%- endfor -%}
    {{- "<|end_of_text|>\n" -}}
  {%- elif message.role == "tool" -%}
    {%- if loop.first or messages[loop.index0 - 1].role != "tool" -%}{{- "<|start_of_role|>user<|end_of_role|>" -}}{%- endif -%}
    {{- "\n<tool_response>\n" + message.content + "\n</tool_response>" -}}
    {%- if loop.last or messages[loop.index0 + 1].role != "tool" -%}{{- "<|end_of_text|>\n" -}}{%- endif -%}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<|start_of_role|>assistant<|end_of_role|>" -}}{%- endif -%}
)TPL";

bool has(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

// ---------------------------------------------------------------------------------------------
// Python string semantics used by the templates.

bool is_py_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

// |trim (str.strip()): leading/trailing Unicode whitespace.
std::string trim(const std::string& s) {
  // Decode just enough UTF-8 at both ends; whitespace code points are at most 3 bytes.
  auto cp_at = [&](size_t i, size_t& len) -> uint32_t {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { len = 1; return c; }
    if ((c & 0xE0) == 0xC0 && i + 1 < s.size()) { len = 2; return ((c & 0x1F) << 6) | (s[i + 1] & 0x3F); }
    if ((c & 0xF0) == 0xE0 && i + 2 < s.size()) {
      len = 3;
      return ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    }
    len = 1;
    return 0xFFFD;
  };
  size_t b = 0;
  while (b < s.size()) {
    size_t len;
    if (!is_py_space(cp_at(b, len))) break;
    b += len;
  }
  size_t e = s.size();
  while (e > b) {
    size_t k = e - 1;  // find the start of the last character
    while (k > b && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80 && e - k < 4) --k;
    size_t len;
    if (!is_py_space(cp_at(k, len)) || k + len != e) break;
    e = k;
  }
  return s.substr(b, e - b);
}

std::string lstrip_nl(const std::string& s) {
  const size_t b = s.find_first_not_of('\n');
  return b == std::string::npos ? std::string() : s.substr(b);
}
std::string rstrip_nl(const std::string& s) {
  const size_t e = s.find_last_not_of('\n');
  return e == std::string::npos ? std::string() : s.substr(0, e + 1);
}
std::string strip_nl(const std::string& s) { return rstrip_nl(lstrip_nl(s)); }
// s.split(sep)[0] and s.split(sep)[-1]
std::string split_first(const std::string& s, const std::string& sep) {
  const size_t p = s.find(sep);
  return p == std::string::npos ? s : s.substr(0, p);
}
std::string split_last(const std::string& s, const std::string& sep) {
  const size_t p = s.rfind(sep);
  return p == std::string::npos ? s : s.substr(p + sep.size());
}
bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Jinja |string of a JSON scalar (Python str()).
std::string py_str(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e16) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f", d);
      return buf;
    }
  }
  return v.dump();
}

// Qwen3.5's generation prompt opens the think block unless enable_thinking is false (the other
// families' leave the model to open one, or have none).
bool leaves_think_open(ChatTemplateFamily f, const ChatRequest& req) {
  return f == ChatTemplateFamily::Qwen35 && req.add_generation_prompt && req.enable_thinking.value_or(true);
}

// ---------------------------------------------------------------------------------------------
// Renderers. Each follows its template top to bottom; comments quote the template's branches.

class Renderer {
 public:
  Renderer(const ChatRequest& r, ChatPrompt& p) : req(r), msgs(r.messages), out(p) {
    out.text.clear();
    out.message_offsets.assign(msgs.size(), 0);
    out.roles.clear();
    for (const auto& m : msgs) out.roles.push_back(m.role);
  }

  void chatml() {
    for (size_t i = 0; i < msgs.size(); ++i) {
      mark(i);
      emit("<|im_start|>" + msgs[i].role + "\n" + string_content(msgs[i], "ChatML") + "<|im_end|>\n");
    }
    generation_prompt(ChatTemplateFamily::ChatML);
  }

  void qwen3() {
    const bool tools = !req.tools.empty();
    const bool first_system = !msgs.empty() && msgs[0].role == "system";
    if (tools) {
      emit("<|im_start|>system\n");
      if (first_system) emit(string_content(msgs[0], "Qwen3") + "\n\n");
      emit("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
           "function signatures within <tools></tools> XML tags:\n<tools>");
      for (const auto& t : req.tools) emit("\n" + to_json_text(t));
      emit("\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
           "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
           "<args-json-object>}\n</tool_call><|im_end|>\n");
    } else if (first_system) {
      emit("<|im_start|>system\n" + string_content(msgs[0], "Qwen3") + "<|im_end|>\n");
    }
    // The last user message that is not a wrapped tool response.
    bool multi_step_tool = true;
    int64_t last_query_index = static_cast<int64_t>(msgs.size()) - 1;
    for (int64_t i = last_query_index; i >= 0; --i) {
      const auto& m = msgs[i];
      if (multi_step_tool && m.role == "user") {
        const std::string c = string_content(m, "Qwen3");
        if (!(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>"))) {
          multi_step_tool = false;
          last_query_index = i;
        }
      }
    }
    for (size_t i = 0; i < msgs.size(); ++i) {
      const auto& m = msgs[i];
      const bool first = i == 0, last = i + 1 == msgs.size();
      if (!(first && m.role == "system")) mark(i);
      if (m.role == "user" || (m.role == "system" && !first)) {
        emit("<|im_start|>" + m.role + "\n" + string_content(m, "Qwen3") + "<|im_end|>\n");
      } else if (m.role == "assistant") {
        const std::string original = string_content(m, "Qwen3");
        std::string content = original, reasoning;
        if (m.reasoning_content) {
          reasoning = *m.reasoning_content;
        } else if (has(original, "</think>")) {
          content = lstrip_nl(split_last(original, "</think>"));
          reasoning = lstrip_nl(split_last(rstrip_nl(split_first(original, "</think>")), "<think>"));
        }
        if (static_cast<int64_t>(i) > last_query_index && (last || !reasoning.empty())) {
          emit("<|im_start|>" + m.role + "\n<think>\n" + strip_nl(reasoning) + "\n</think>\n\n" + lstrip_nl(content));
        } else {
          emit("<|im_start|>" + m.role + "\n" + content);
        }
        json_tool_calls(m, content);
        emit("<|im_end|>\n");
      } else if (m.role == "tool") {
        if (first || msgs[i - 1].role != "tool") emit("<|im_start|>user");
        emit("\n<tool_response>\n" + string_content(m, "Qwen3") + "\n</tool_response>");
        if (last || msgs[i + 1].role != "tool") emit("<|im_end|>\n");
      }
      // Other roles render nothing in this template.
    }
    generation_prompt(ChatTemplateFamily::Qwen3);
  }

  void qwen35() {
    if (msgs.empty()) fail("No messages provided.");
    const bool first_system = msgs[0].role == "system";
    if (!req.tools.empty()) {
      emit("<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>");
      for (const auto& t : req.tools) emit("\n" + to_json_text(t));
      emit("\n</tools>");
      emit("\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n"
           "<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
           "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple "
           "lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow "
           "the specified format: an inner <function=...></function> block must be nested within "
           "<tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional "
           "reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If "
           "there is no function call available, answer the question like normal with your current knowledge and "
           "do not tell the user about function calls\n</IMPORTANT>");
      if (first_system) {
        const std::string c = trim(render_content(msgs[0], false, true));
        if (!c.empty()) emit("\n\n" + c);
      }
      emit("<|im_end|>\n");
    } else if (first_system) {
      emit("<|im_start|>system\n" + trim(render_content(msgs[0], false, true)) + "<|im_end|>\n");
    }
    bool multi_step_tool = true;
    int64_t last_query_index = static_cast<int64_t>(msgs.size()) - 1;
    for (int64_t i = last_query_index; i >= 0; --i) {
      if (multi_step_tool && msgs[i].role == "user") {
        const std::string c = trim(render_content(msgs[i], false, false));
        if (!(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>"))) {
          multi_step_tool = false;
          last_query_index = i;
        }
      }
    }
    if (multi_step_tool) fail("No user query found in messages.");

    for (size_t i = 0; i < msgs.size(); ++i) {
      const auto& m = msgs[i];
      const bool first = i == 0, last = i + 1 == msgs.size();
      if (!(first && m.role == "system")) mark(i);
      std::string content = trim(render_content(m, true, false));
      if (m.role == "system") {
        if (!first) fail("System message must be at the beginning.");
      } else if (m.role == "user") {
        emit("<|im_start|>" + m.role + "\n" + content + "<|im_end|>\n");
      } else if (m.role == "assistant") {
        std::string reasoning;
        if (m.reasoning_content) {
          reasoning = *m.reasoning_content;
        } else if (has(content, "</think>")) {
          reasoning = lstrip_nl(split_last(rstrip_nl(split_first(content, "</think>")), "<think>"));
          content = lstrip_nl(split_last(content, "</think>"));
        }
        reasoning = trim(reasoning);
        if (static_cast<int64_t>(i) > last_query_index && !reasoning.empty()) {
          emit("<|im_start|>" + m.role + "\n<think>\n" + reasoning + "\n</think>\n\n" + content);
        } else {
          emit("<|im_start|>" + m.role + "\n" + content);
        }
        for (size_t k = 0; k < m.tool_calls.size(); ++k) {
          const auto& tc = m.tool_calls[k];
          if (k == 0) emit(trim(content).empty() ? "<tool_call>\n<function=" : "\n\n<tool_call>\n<function=");
          else emit("\n<tool_call>\n<function=");
          emit(tc.name + ">\n");
          // The template iterates the arguments (|items): a string (OpenAI's function.arguments)
          // is parsed first, as llama.cpp does for templates that need object arguments.
          Json args = tc.arguments;
          if (args.is_string()) {
            args = Json::parse(tc.arguments.get<std::string>(), nullptr, /*allow_exceptions=*/false);
            if (args.is_discarded())
              fail("Qwen3.5 template: tool call '" + tc.name + "' arguments are not JSON: " + tc.arguments.get<std::string>());
          }
          if (!args.is_null()) {
            if (!args.is_object())
              fail("Qwen3.5 template: tool call '" + tc.name + "' arguments must be a JSON object (|items)");
            for (const auto& [name, value] : args.items()) {
              emit("<parameter=" + name + ">\n");
              emit(value.is_object() || value.is_array() ? to_json_text(value) : py_str(value));
              emit("\n</parameter>\n");
            }
          }
          emit("</function>\n</tool_call>");
        }
        emit("<|im_end|>\n");
      } else if (m.role == "tool") {
        if (!first && msgs[i - 1].role != "tool") emit("<|im_start|>user");
        emit("\n<tool_response>\n" + content + "\n</tool_response>");
        if ((!last && msgs[i + 1].role != "tool") || last) emit("<|im_end|>\n");
      } else {
        fail("Unexpected message role.");
      }
    }
    generation_prompt(ChatTemplateFamily::Qwen35);
  }

  // LFM2 (hybrids.md A8). The system turn exists when there is a system message or tools.
  void lfm2() {
    size_t first = 0;
    std::string system;
    if (!msgs.empty() && msgs[0].role == "system") {
      system = lfm2_content(msgs[0]);
      first = 1;
    }
    if (!req.tools.empty()) {
      if (!system.empty()) system += "\n";
      system += "List of tools: <|tool_list_start|>[";
      for (size_t k = 0; k < req.tools.size(); ++k) {
        if (k) system += ", ";
        const Json& t = req.tools[k];
        system += t.is_string() ? t.get<std::string>() : to_json_text(t);
      }
      system += "]<|tool_list_end|>";
    }
    if (!system.empty()) emit("<|im_start|>system\n" + system + "<|im_end|>\n");
    for (size_t i = first; i < msgs.size(); ++i) {
      const auto& m = msgs[i];
      mark(i);
      std::string content = lfm2_content(m);
      if (m.role == "tool") {
        content = "<|tool_response_start|>" + content + "<|tool_response_end|>";
      } else if (m.role == "assistant" && !m.tool_calls.empty()) {
        std::string calls;
        for (size_t k = 0; k < m.tool_calls.size(); ++k) {
          if (k) calls += ", ";
          calls += pythonic_call(m.tool_calls[k]);
        }
        content = "<|tool_call_start|>[" + calls + "]<|tool_call_end|>" + content;
      }
      emit("<|im_start|>" + m.role + "\n" + content + "<|im_end|>\n");
    }
    if (req.add_generation_prompt) emit("<|im_start|>assistant\n");
  }

  // Granite 4.0 (hybrids.md B7).
  void granite4() {
    static const char* kDefaultSystem =
        "You are a helpful assistant. Please ensure responses are professional, accurate, and safe.";
    std::string tools_message;
    if (!req.tools.empty()) {
      tools_message =
          "You are a helpful assistant with access to the following tools. You may call one or more tools to assist "
          "with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";
      for (const auto& t : req.tools) tools_message.append("\n").append(to_json_text(t));
      tools_message +=
          "\n</tools>\n\nFor each tool call, return a json object with function name and arguments within "
          "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
          "<args-json-object>}\n</tool_call>. If a tool does not exist in the provided list of tools, notify the user "
          "that you do not have the ability to fulfill the request.";
    }
    std::string system;
    if (!msgs.empty() && msgs[0].role == "system") {
      system = granite_content(msgs[0]);
      if (!tools_message.empty()) system.append("\n\n").append(tools_message);
    } else {
      system = tools_message;
    }
    emit("<|start_of_role|>system<|end_of_role|>" + (system.empty() ? std::string(kDefaultSystem) : system) +
         "<|end_of_text|>\n");
    for (size_t i = 0; i < msgs.size(); ++i) {
      const auto& m = msgs[i];
      const bool first = i == 0, last = i + 1 == msgs.size();
      if (!(first && m.role == "system")) mark(i);
      const std::string content = granite_content(m);
      if (m.role == "user" || (m.role == "system" && !first)) {
        if (m.role == "user") user_span();
        emit("<|start_of_role|>" + m.role + "<|end_of_role|>" + content + "<|end_of_text|>\n");
      } else if (m.role == "assistant") {
        emit("<|start_of_role|>assistant<|end_of_role|>" + content);
        json_tool_calls(m, content);
        emit("<|end_of_text|>\n");
      } else if (m.role == "tool") {
        if (first || msgs[i - 1].role != "tool") {
          user_span();  // a tool-result turn is a user turn: llama.cpp's USER delimiter matches it
          emit("<|start_of_role|>user<|end_of_role|>");
        }
        emit("\n<tool_response>\n" + content + "\n</tool_response>");
        if (last || msgs[i + 1].role != "tool") emit("<|end_of_text|>\n");
      }
      // Other roles render nothing in this template.
    }
    if (req.add_generation_prompt) emit("<|start_of_role|>assistant<|end_of_role|>");
  }

 private:
  void emit(const std::string& s) { out.text += s; }
  // An assistant turn's tool calls as Qwen3 and Granite 4.0 write them: one <tool_call> JSON object
  // each, on a line of its own after any content.
  void json_tool_calls(const ChatMessage& m, const std::string& content) {
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
      const auto& tc = m.tool_calls[k];
      if (k > 0 || !content.empty()) emit("\n");  // each call on a line of its own
      emit("<tool_call>\n{\"name\": \"" + tc.name + "\", \"arguments\": ");
      emit(tc.arguments.is_string() ? tc.arguments.get<std::string>() : to_json_text(tc.arguments));
      emit("}\n</tool_call>");
    }
  }
  void mark(size_t i) { out.message_offsets[i] = out.text.size(); }
  void user_span() { out.user_offsets.push_back(out.text.size()); }

  // LFM2: a string, "" for none; parts are not expressible in this family.
  std::string lfm2_content(const ChatMessage& m) const { return string_content(m, "LFM2"); }

  // Granite: a string, or the text parts joined by "\n" (other parts dropped), "" for none.
  static std::string granite_content(const ChatMessage& m) {
    if (!m.content_is_parts) return m.content;
    std::string s;
    for (const auto& p : m.parts) {
      if (p.kind != ChatContentPart::Kind::Text) continue;
      if (!s.empty()) s += "\n";
      s += p.text;
    }
    return s;
  }

  // LFM2's tool call: name(arg=value, ...), values as JSON (strings quoted), arguments in order.
  static std::string pythonic_call(const ChatToolCall& tc) {
    Json args = tc.arguments;
    if (args.is_string()) {
      args = Json::parse(tc.arguments.get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (args.is_discarded()) fail("LFM2 template: tool call '" + tc.name + "' arguments are not JSON");
    }
    if (!args.is_null() && !args.is_object())
      fail("LFM2 template: tool call '" + tc.name + "' arguments must be a JSON object");
    std::string s = tc.name + "(";
    bool first = true;
    if (args.is_object()) {
      for (const auto& [k, v] : args.items()) {
        if (!first) s += ", ";
        first = false;
        s += k + "=" + to_json_text(v);
      }
    }
    return s + ")";
  }

  void generation_prompt(ChatTemplateFamily f) {
    if (!req.add_generation_prompt) return;
    emit("<|im_start|>assistant\n");
    if (req.enable_thinking && !*req.enable_thinking) emit("<think>\n\n</think>\n\n");
    else if (leaves_think_open(f, req)) emit("<think>\n");
  }

  // Templates that concatenate message.content need a string.
  std::string string_content(const ChatMessage& m, const char* family) const {
    if (m.content_is_parts)
      fail(std::string(family) + " template: message content must be a string (content parts such as images "
                                 "need the Qwen3.5 template)");
    return m.content;
  }

  // Qwen3.5's render_content macro.
  std::string render_content(const ChatMessage& m, bool do_vision_count, bool is_system) {
    if (!m.content_is_parts) return m.content;  // string, or '' for none
    std::string s;
    // An image or a video: its label when the request asks for ids, then its pad token.
    auto vision_part = [&](const std::string& plural, const std::string& label, int& count, const char* pad) {
      if (is_system) fail("System message cannot contain " + plural + ".");
      if (do_vision_count) ++count;
      if (req.add_vision_id) s += label + " " + std::to_string(count) + ": ";
      s += std::string("<|vision_start|>") + pad + "<|vision_end|>";
    };
    for (const auto& p : m.parts) {
      switch (p.kind) {
        case ChatContentPart::Kind::Image:
          vision_part("images", "Picture", image_count, "<|image_pad|>");
          break;
        case ChatContentPart::Kind::Video:
          vision_part("videos", "Video", video_count, "<|video_pad|>");
          break;
        case ChatContentPart::Kind::Text:
          s += p.text;
          break;
      }
    }
    return s;
  }

  const ChatRequest& req;
  const std::vector<ChatMessage>& msgs;
  ChatPrompt& out;
  int image_count = 0, video_count = 0;
};

void to_json_text_impl(const Json& j, std::string& out) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) out += ", ";
      first = false;
      out += Json(k).dump(-1, ' ', false, Json::error_handler_t::replace);
      out += ": ";
      to_json_text_impl(v, out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i) out += ", ";
      to_json_text_impl(j[i], out);
    }
    out += ']';
  } else {
    out += j.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

// The variables an interpreted template renders with, as llama.cpp's server passes them: the
// messages (each as the request sent it, with the role and content the request path settled on),
// the tools when there are any, add_generation_prompt, bos_token / eos_token, enable_thinking when
// set, and every chat_template_kwargs member.
Json interpreter_context(const ChatRequest& req, const ChatTemplateTokens& tokens) {
  Json ctx = Json::object();
  Json msgs = Json::array();
  for (const ChatMessage& m : req.messages) {
    Json j = m.source.is_object() ? m.source : Json::object();
    j["role"] = m.role;
    if (m.content_is_parts) {
      if (!(j.contains("content") && j["content"].is_array())) {
        Json parts = Json::array();
        for (const ChatContentPart& p : m.parts) {
          if (p.kind == ChatContentPart::Kind::Text) parts.push_back({{"type", "text"}, {"text", p.text}});
          else parts.push_back({{"type", p.kind == ChatContentPart::Kind::Image ? "image" : "video"}});
        }
        j["content"] = std::move(parts);
      }
    } else if (m.content_is_null) {
      j["content"] = nullptr;
    } else {
      j["content"] = m.content;
    }
    if (m.reasoning_content && !j.contains("reasoning_content")) j["reasoning_content"] = *m.reasoning_content;
    if (!m.tool_calls.empty() && !j.contains("tool_calls")) {
      Json calls = Json::array();
      for (const ChatToolCall& c : m.tool_calls)
        calls.push_back({{"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      j["tool_calls"] = std::move(calls);
    }
    msgs.push_back(std::move(j));
  }
  ctx["messages"] = std::move(msgs);
  if (!req.tools.empty()) ctx["tools"] = req.tools;
  ctx["add_generation_prompt"] = req.add_generation_prompt;
  ctx["bos_token"] = tokens.bos_token;
  ctx["eos_token"] = tokens.eos_token;
  if (req.enable_thinking) ctx["enable_thinking"] = *req.enable_thinking;
  if (req.template_kwargs.is_object())
    for (const auto& [k, v] : req.template_kwargs.items()) ctx[k] = v;
  return ctx;
}

}  // namespace

std::string to_json_text(const Json& j) {
  std::string out;
  to_json_text_impl(j, out);
  return out;
}

const char* chat_template_family_name(ChatTemplateFamily f) {
  switch (f) {
    case ChatTemplateFamily::ChatML: return "chatml";
    case ChatTemplateFamily::Qwen3: return "qwen3";
    case ChatTemplateFamily::Qwen35: return "qwen3.5";
    case ChatTemplateFamily::LFM2: return "lfm2";
    case ChatTemplateFamily::Granite4: return "granite-4.0";
  }
  return "?";
}

std::vector<std::string> chat_template_roles(ChatTemplateFamily f) {
  switch (f) {
    case ChatTemplateFamily::ChatML:
    case ChatTemplateFamily::Qwen3:
    case ChatTemplateFamily::Qwen35:
    case ChatTemplateFamily::LFM2:
    case ChatTemplateFamily::Granite4: return {"system", "user", "assistant", "tool"};
  }
  return {};
}

const char* chat_template_user_delimiter(ChatTemplateFamily f) {
  switch (f) {
    case ChatTemplateFamily::ChatML:
    case ChatTemplateFamily::Qwen3:
    case ChatTemplateFamily::Qwen35: return "<|im_start|>user";
    case ChatTemplateFamily::LFM2: return "";
    case ChatTemplateFamily::Granite4: return "<|start_of_role|>user<|end_of_role|>";
  }
  return "";
}

ChatTemplate ChatTemplate::interpreted(const std::string& source, const ChatTemplateTokens& tokens) {
  ChatTemplate t(ChatTemplateFamily::ChatML);
  try {
    t.jinja_ = std::make_shared<const jinja::Template>(jinja::Template::parse(source));
  } catch (const jinja::ParseError& e) {
    throw ChatTemplateLoadError(std::string("chat template (Jinja): ") + e.what());
  }
  t.tokens_ = tokens;
  return t;
}

std::string ChatTemplate::name() const { return jinja_ ? "jinja" : chat_template_family_name(family_); }

ChatTemplate ChatTemplate::from_gguf_template(const std::string& src, const ChatTemplateTokens& tokens) {
  if (src.empty())
    fail("the model has no chat template (tokenizer.chat_template is missing); use a plain prompt (-p) instead");
  const uint64_t fp = template_fingerprint(src);
  for (const auto& k : kKnown)
    if (k.fingerprint == fp) return ChatTemplate(k.family);
  for (const ChatTemplateFamily f : {ChatTemplateFamily::LFM2, ChatTemplateFamily::Granite4}) {
    if (template_fingerprint(chat_family_tokenizer(f).chat_template) == fp) return ChatTemplate(f);
  }

  // Not one of the exact templates: accept the families by their unmistakable markers, and say so.
  ChatTemplate t(ChatTemplateFamily::ChatML);
  t.exact_ = false;
  if (has(src, "<|tool_list_start|>") && has(src, "<|tool_list_end|>") && has(src, "<|im_start|>") &&
      has(src, "<|tool_response_start|>")) {
    // llama.cpp's test for its LFM2 handler (common/chat.cpp) is the tool-list tokens.
    t.family_ = ChatTemplateFamily::LFM2;
  } else if (has(src, "<|start_of_role|>") && has(src, "<|end_of_role|>") && has(src, "<|end_of_text|>") &&
             has(src, "<tool_response>") && has(src, "<tool_call>")) {
    t.family_ = ChatTemplateFamily::Granite4;
  } else if (has(src, "render_content") && has(src, "<|vision_start|><|image_pad|><|vision_end|>") &&
      has(src, "<function=") && has(src, "<parameter=") && has(src, "last_query_index")) {
    t.family_ = ChatTemplateFamily::Qwen35;
  } else if (has(src, "<tool_call>") && has(src, "last_query_index") && has(src, "reasoning_content") &&
             has(src, "<tool_response>") && !has(src, "<function=")) {
    t.family_ = ChatTemplateFamily::Qwen3;
  } else {
    // Not a family Tandem renders natively: the interpreter renders it as written.
    return interpreted(src, tokens);
  }
  t.note_ = std::string("chat template is not byte-identical to a tested ") + chat_template_family_name(t.family_) +
            " template; rendering it as that family (check the output if the model's template was customized)";
  return t;
}

const ChatFamilyTokenizer& chat_family_tokenizer(ChatTemplateFamily f) {
  static const ChatFamilyTokenizer lfm2{
      "lfm2",
      {"<|pad|>", "<|startoftext|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|tool_list_start|>",
       "<|tool_list_end|>", "<|tool_call_start|>", "<|tool_call_end|>", "<|tool_response_start|>",
       "<|tool_response_end|>"},
      "<|startoftext|>", "<|im_end|>", "<|pad|>", true, kTandemLfm2Template};
  static const ChatFamilyTokenizer granite{
      "dbrx",
      {"<|pad|>", "<|end_of_text|>", "<|start_of_role|>", "<|end_of_role|>"},
      "<|end_of_text|>", "<|end_of_text|>", "<|pad|>", false, kTandemGraniteTemplate};
  switch (f) {
    case ChatTemplateFamily::LFM2: return lfm2;
    case ChatTemplateFamily::Granite4: return granite;
    default: break;
  }
  throw std::invalid_argument(std::string("chat_family_tokenizer: no generated-file tokenizer for the ") +
                              chat_template_family_name(f) + " family");
}

ChatPrompt ChatTemplate::render(const ChatRequest& req) const {
  ChatPrompt p;
  if (jinja_) {
    try {
      p.text = jinja_->render(interpreter_context(req, tokens_));
    } catch (const jinja::Error& e) {
      throw ChatTemplateError(e.what());
    }
    // llama.cpp drops the template's BOS when the tokenizer adds one (common_chat_templates_apply).
    if (tokens_.add_bos && !tokens_.bos_token.empty() && p.text.rfind(tokens_.bos_token, 0) == 0)
      p.text.erase(0, tokens_.bos_token.size());
    p.message_offsets.assign(req.messages.size(), 0);
    for (const auto& m : req.messages) p.roles.push_back(m.role);
    return p;
  }
  Renderer r(req, p);
  switch (family_) {
    case ChatTemplateFamily::ChatML: r.chatml(); break;
    case ChatTemplateFamily::Qwen3: r.qwen3(); break;
    case ChatTemplateFamily::Qwen35: r.qwen35(); break;
    case ChatTemplateFamily::LFM2: r.lfm2(); break;
    case ChatTemplateFamily::Granite4: r.granite4(); break;
  }
  if (family_ == ChatTemplateFamily::ChatML || family_ == ChatTemplateFamily::Qwen3 ||
      family_ == ChatTemplateFamily::Qwen35) {
    // The user messages (tool results these templates fold into user turns are not user spans).
    for (size_t i = 0; i < p.roles.size(); ++i)
      if (p.roles[i] == "user") p.user_offsets.push_back(p.message_offsets[i]);
  }
  return p;
}

bool ChatTemplate::opens_thinking(const ChatRequest& req) const {
  if (jinja_) {
    // The prompt itself says: it ends inside an opened think block.
    try {
      std::string text = render(req).text;
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      return text.size() >= 7 && text.compare(text.size() - 7, 7, "<think>") == 0;
    } catch (const ChatTemplateError&) {
      return false;
    }
  }
  return leaves_think_open(family_, req);
}

// ---------------------------------------------------------------------------------------------
// Request parsing.

ChatRequest ChatRequest::from_json(const Json& j) {
  ChatRequest r;
  const Json* msgs = &j;
  if (j.is_object()) {
    if (!j.contains("messages")) fail("chat request: missing \"messages\"");
    msgs = &j["messages"];
    if (j.contains("tools") && !j["tools"].is_null()) {
      if (!j["tools"].is_array()) fail("chat request: \"tools\" must be an array");
      r.tools = j["tools"];
    }
    if (j.contains("add_generation_prompt")) {
      if (!j["add_generation_prompt"].is_boolean()) fail("chat request: \"add_generation_prompt\" must be a boolean");
      r.add_generation_prompt = j["add_generation_prompt"].get<bool>();
    }
    if (j.contains("enable_thinking") && !j["enable_thinking"].is_null()) {
      if (!j["enable_thinking"].is_boolean()) fail("chat request: \"enable_thinking\" must be a boolean");
      r.enable_thinking = j["enable_thinking"].get<bool>();
    }
    if (j.contains("add_vision_id") && j["add_vision_id"].is_boolean()) r.add_vision_id = j["add_vision_id"].get<bool>();
  }
  if (!msgs->is_array()) fail("chat request: \"messages\" must be an array");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const Json& m = (*msgs)[i];
    const std::string where = "chat request: messages[" + std::to_string(i) + "]";
    if (!m.is_object()) fail(where + " is not an object");
    ChatMessage cm;
    cm.source = m;
    if (!m.contains("role") || !m["role"].is_string()) fail(where + ": missing string \"role\"");
    cm.role = m["role"].get<std::string>();
    const Json content = m.contains("content") ? m["content"] : Json();
    if (content.is_string()) {
      cm.content = content.get<std::string>();
    } else if (content.is_null()) {
      cm.content_is_null = true;
    } else if (content.is_array()) {
      cm.content_is_parts = true;
      for (const auto& part : content) {
        if (!part.is_object()) fail(where + ": content parts must be objects");
        const std::string type = part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
        ChatContentPart p;
        // The same tests as the Qwen3.5 template, in its order.
        if (part.contains("image") || part.contains("image_url") || type == "image") {
          p.kind = ChatContentPart::Kind::Image;
        } else if (part.contains("video") || type == "video") {
          p.kind = ChatContentPart::Kind::Video;
        } else if (part.contains("text")) {
          if (!part["text"].is_string()) fail(where + ": content part \"text\" must be a string");
          p.text = part["text"].get<std::string>();
        } else {
          fail("Unexpected item type in content.");
        }
        cm.parts.push_back(std::move(p));
      }
    } else {
      fail(where + ": \"content\" must be a string, an array of parts or null");
    }
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
      cm.reasoning_content = m["reasoning_content"].get<std::string>();
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (!m["tool_calls"].is_array()) fail(where + ": \"tool_calls\" must be an array");
      for (const auto& tc : m["tool_calls"]) {
        const Json& f = tc.is_object() && tc.contains("function") ? tc["function"] : tc;
        if (!f.is_object() || !f.contains("name") || !f["name"].is_string())
          fail(where + ": tool call without a string \"name\"");
        ChatToolCall call;
        call.name = f["name"].get<std::string>();
        if (f.contains("arguments")) call.arguments = f["arguments"];
        cm.tool_calls.push_back(std::move(call));
      }
    }
    r.messages.push_back(std::move(cm));
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Tokens.

ChatTemplateTokens chat_template_tokens(const Tokenizer& tok) {
  ChatTemplateTokens t;
  const Vocabulary& v = tok.vocab();
  if (const auto b = v.bos(); b && v.valid_id(*b)) t.bos_token = v.token_text(*b);
  if (const auto e = v.eos(); e && v.valid_id(*e)) t.eos_token = v.token_text(*e);
  t.add_bos = tok.add_bos();
  return t;
}

int32_t ChatTokens::last_user_start() const {
  return user_starts.empty() ? -1 : static_cast<int32_t>(user_starts.back());
}

ChatTokens tokenize_chat(const Tokenizer& tok, const ChatPrompt& prompt) {
  ChatTokens t;
  std::vector<uint32_t> offsets;
  // BOS (when the vocabulary adds one) is placed first without an offset of its own, so that a
  // message at byte 0 starts after it.
  const bool bos = tok.add_bos();
  if (bos) t.ids.push_back(*tok.vocab().bos());
  EncodeOptions eo;
  eo.parse_special = true;
  tok.encode(prompt.text, t.ids, eo, &offsets);
  const int32_t shift = bos ? 1 : 0;
  auto index_of = [&](size_t off) {
    const auto it = std::lower_bound(offsets.begin(), offsets.end(), static_cast<uint32_t>(off));
    return static_cast<int32_t>(it - offsets.begin()) + shift;
  };
  t.roles = prompt.roles;
  for (size_t off : prompt.message_offsets) t.message_starts.push_back(index_of(off));
  for (size_t off : prompt.user_offsets) t.user_starts.push_back(index_of(off));
  return t;
}

std::vector<int64_t> find_user_starts(const Tokenizer& tok, std::span<const int32_t> tokens,
                                      std::string_view delimiter) {
  std::vector<int64_t> starts;
  if (delimiter.empty()) return starts;
  // The delimiters begin with a special token: only positions holding it are candidates.
  const SpecialTokenMatcher specials(tok.vocab().specials());
  const auto lead = specials.find(delimiter, 0, true);
  if (lead.len == 0 || lead.pos != 0) return starts;
  const bool ends_in_tag = delimiter.back() == '>';
  std::string head;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] != lead.id) continue;
    head.clear();
    for (size_t k = i; k < tokens.size() && head.size() <= delimiter.size(); ++k) {
      if (!tok.vocab().valid_id(tokens[k])) break;
      tok.append_token(head, tokens[k]);
    }
    if (head.compare(0, delimiter.size(), delimiter) != 0 || head.size() < delimiter.size()) continue;
    if (!ends_in_tag && head.size() > delimiter.size() && head[delimiter.size()] != '\n' &&
        head[delimiter.size()] != ' ')
      continue;
    starts.push_back(static_cast<int64_t>(i));
  }
  return starts;
}

}  // namespace tandem::text
