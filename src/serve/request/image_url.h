// Images in requests (issue 26), as OpenAI clients and llama.cpp's server send them:
//   * /v1/chat/completions: user content parts {"type": "image_url", "image_url": {"url": ...}}
//     (or "image_url": "..."), the URL a data: URL (data:image/<any>;base64,...) or bare base64;
//     each part becomes the server's media marker in the message text (text parts joined by
//     "\n", no newline around a marker: llama.cpp's rule);
//   * /completion: "prompt": {"prompt_string": "... <marker> ...", "multimodal_data": [base64...]}
//     with the marker /props reports as "media_marker".
// Remote http(s) and file URLs are refused: the server fetches nothing. Every failure is a 400
// naming the field. The files are decoded (vision/image_decode, bounded from the header) and laid
// out as image chunks in the prompt (serve/request/request_image.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http/api/json_text.h"
#include "serve/engine/engine.h"

namespace tandem::http {

// The bytes of an image URL (a data: URL or bare base64). 400 for a remote or file URL, another
// data: type, or invalid base64.
std::vector<uint8_t> image_url_bytes(std::string_view url, const std::string& field);
std::vector<uint8_t> decode_base64(std::string_view text, const std::string& field);

// A request's per-image token budget: "image_min_tokens" / "image_max_tokens" (llama.cpp's
// flag names; -1 or absent: the server's).
vision::ImageBudget parse_image_budget(const Json& body);

// Decodes the files (400 naming the field and the image's index for an undecodable or oversized
// one), tokenizes `text` split at `marker` as mtmd does, and fills req.prompt and req.images
// (user message starts are found in the tokens). Needs an engine with a vision model (400 naming
// --mmproj otherwise).
void build_image_prompt(const serve::Engine& engine, std::string_view text, std::string_view marker,
                        const std::vector<std::vector<uint8_t>>& files, const vision::ImageBudget& budget,
                        const std::string& field, serve::EngineRequest& req);

}  // namespace tandem::http
