// What a chat body says about its prompt, read into the request object (request.h). tandem-server's
// chat route (http/api/request_parse.cpp) and the dry run (agent/request_tokens.cpp) read the same
// bodies through this one reader, so the dry run predicts the very tokens the server prefills:
//   messages  content strings, or parts: text parts, and image parts as OpenAI clients and
//             llama.cpp's server send them ({"type": "image_url", "image_url": {"url": ...}} or
//             "image_url": "...", "image"), each file decoded from its data: URL or bare base64
//             (image_url.h) into PromptInput::images in order; video and audio parts are refused,
//             and so are images in system messages (the Qwen3.5 template's rule; user and tool
//             messages may carry screenshots); OpenAI's "developer" role renders as system;
//   tools (not rendered under tool_choice "none"), enable_thinking (top level, or llama.cpp's
//             chat_template_kwargs.enable_thinking);
//   image_min_tokens / image_max_tokens, read when there are images.
// A RequestError names the field. What roles and tool definitions may be is the HTTP layer's
// stricter check, made before this one (http/api/chat_validation.h).
#pragma once

#include "serve/request/json_fields.h"
#include "serve/request/request.h"

namespace tandem::serve {

PromptInput read_chat_prompt(const Json& body);

// True for a content part that carries media (an image, or the video and audio parts refused above).
bool is_media_part(const Json& part);

// "image_min_tokens" / "image_max_tokens" (llama.cpp's flag names; -1 or absent: the server's).
vision::ImageBudget read_image_budget(const Json& body);

}  // namespace tandem::serve
