// libFuzzer harness for the chat-template interpreter (issue 45: "the grammar and template code
// is fuzzed in CI like the others"). The input is a template: it is parsed, and what parses is
// rendered on a conversation with a system turn, tools, a tool call with its result and image
// parts, under tight limits. Every input either renders or is refused with a jinja::Error (a
// ParseError at load, a RenderError or RaisedError while rendering); any other exception, a crash,
// a hang past the limits or a sanitizer report is a bug. Run with fuzz/run_jinja_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "text/jinja/template.h"

using namespace tandem::text::jinja;

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Tap it"}, {"type": "image"}]},
      {"role": "assistant", "content": null, "reasoning_content": "think", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "tap", "arguments": {"x": 1, "y": 2.5}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "ok"},
      {"role": "user", "content": "Zürich 🙂 </think>"}],
    "tools": [{"type": "function", "function": {"name": "tap", "description": "Tap",
      "parameters": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                     "required": ["x", "y"]}}}],
    "add_generation_prompt": true, "enable_thinking": false, "bos_token": "<s>", "eos_token": "</s>"})");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_steps = 200000;
  limits.max_call_depth = 50;
  try {
    const Template t = Template::parse(source);
    (void)t.render(context(), limits);
  } catch (const Error&) {
    // refused at load or while rendering, with a message: the outcomes a template may have
  }
  return 0;
}
