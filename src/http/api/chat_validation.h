// What a chat request's messages and tools may hold, checked before the template renders them
// (issue 51: roles "hacker", "" and "user\u0000" and "tools": [[1]] were served). The rules are
// OpenAI's chat completions API as llama.cpp's server applies them:
//   - a message is an object with a string role: system, developer (OpenAI's newer name for the
//     system role; rendered as system), user, assistant, tool, or a role the model's chat template
//     names (text::chat_template_roles);
//   - content: a string, or an array of parts {"type": "text", "text": str} / {"type":
//     "image_url", "image_url": {"url": str} or str} (input_audio and video are named as not
//     supported); null or absent only for an assistant message (one that calls tools);
//   - tool_calls (assistant only): an array of {"type": "function", "function": {"name": non-empty
//     string, "arguments": string or object}}; "id" a string when given;
//   - tool messages: tool_call_id a string when given, the "id" of an earlier assistant tool call
//     (OpenAI's rule); "name" a string wherever given;
//   - tools: an array of {"type": "function", "function": {"name": 1-64 of [A-Za-z0-9_-], no two
//     alike, "description": string, "parameters": a JSON Schema object whose "type", when given, is
//     "object" (the arguments are an object), "strict": bool}}.
// Every refusal is a 400 naming the element ("messages[2].role", "tools[0].function.name").
#pragma once

#include <string>
#include <vector>

#include "http/api/json_text.h"

namespace tandem::http {

// template_roles: the roles the model's template renders besides the standard ones.
void validate_chat_messages(const Json& messages, const std::vector<std::string>& template_roles);
void validate_tools(const Json& tools);

}  // namespace tandem::http
