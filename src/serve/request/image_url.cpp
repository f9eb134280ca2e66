#include "http/image_request.h"

#include <memory>

#include "http/api/api_error.h"
#include "http/json_fields.h"
#include "http/api/request_parse.h"
#include "vision/multimodal_prompt.h"

namespace tandem::http {

namespace {

int base64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // standard and URL-safe alphabets
  if (c == '/' || c == '_') return 63;
  return -1;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

}  // namespace

std::vector<uint8_t> decode_base64(std::string_view text, const std::string& field) {
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3 + 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    const int v = base64_value(c);
    if (v < 0 || pad > 0)
      throw bad_request("'" + field + "': invalid base64 at character " + std::to_string(i) +
                            (pad > 0 ? " (data after '=' padding)" : ""),
                        field);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  if (pad > 2 || bits >= 6) throw bad_request("'" + field + "': truncated base64 data", field);
  return out;
}

std::vector<uint8_t> image_url_bytes(std::string_view url, const std::string& field) {
  if (starts_with_ci(url, "http://") || starts_with_ci(url, "https://") || starts_with_ci(url, "file:"))
    throw bad_request("'" + field + "': only inline images are accepted (a data:image/...;base64 URL or bare base64); "
                          "this server fetches nothing, so remote and file URLs are refused",
                      field);
  if (starts_with_ci(url, "data:")) {
    const size_t comma = url.find(',');
    if (comma == std::string_view::npos) throw bad_request("'" + field + "': a data: URL without ','", field);
    const std::string_view header = url.substr(5, comma - 5);
    if (!starts_with_ci(header, "image/"))
      throw bad_request("'" + field + "': a data: URL of type '" + std::string(header.substr(0, header.find(';'))) +
                            "' (expected data:image/...;base64,...)",
                        field);
    if (header.size() < 7 || !starts_with_ci(header.substr(header.size() - 7), ";base64"))
      throw bad_request("'" + field + "': the data: URL must be base64-encoded (data:image/...;base64,...)", field);
    return decode_base64(url.substr(comma + 1), field);
  }
  return decode_base64(url, field);  // llama.cpp: any other string is bare base64
}

vision::ImageBudget parse_image_budget(const Json& b) {
  vision::ImageBudget budget;
  if (auto v = opt_int(b, "image_min_tokens", -1, vision::kMaxBudgetTokens)) budget.min_tokens = static_cast<int>(*v);
  if (auto v = opt_int(b, "image_max_tokens", -1, vision::kMaxBudgetTokens)) budget.max_tokens = static_cast<int>(*v);
  if (budget.min_tokens > 0 && budget.max_tokens > 0 && budget.min_tokens > budget.max_tokens)
    throw bad_request("'image_min_tokens' (" + std::to_string(budget.min_tokens) + ") exceeds 'image_max_tokens' (" +
                          std::to_string(budget.max_tokens) + ")",
                      "image_min_tokens");
  return budget;
}

void build_image_prompt(const serve::Engine& engine, std::string_view text, std::string_view marker,
                        const std::vector<std::vector<uint8_t>>& files, const vision::ImageBudget& budget,
                        const std::string& field, serve::EngineRequest& req) {
  if (!engine.has_vision())
    throw bad_request("the request has images but this server has no vision model (start it with --mmproj FILE)", field);
  const int limit = engine.config().images.max_per_request;
  if (static_cast<int64_t>(files.size()) > limit)
    throw bad_request("the request has " + std::to_string(files.size()) + " images; this server accepts at most " +
                          std::to_string(limit) + " per request (--max-images)",
                      field);
  vision::PreprocessParams params;
  try {
    params = engine.image_params(budget);
    vision::validate(params);
  } catch (const std::invalid_argument& e) {
    throw bad_request(std::string("image budget: ") + e.what(), "image_max_tokens");
  }
  req.images.clear();
  for (size_t i = 0; i < files.size(); ++i) {
    const auto refuse = [&](const std::exception& e) {
      return bad_request("'" + field + "': image " + std::to_string(i) + ": " + e.what(), field);
    };
    try {
      // Resized now: a queued request holds the budget's pixels, not the file's.
      req.images.push_back(serve::request_image(vision::decode_image(files[i]), params, budget));
    } catch (const vision::ImageError& e) {  // undecodable, truncated, above a limit
      throw refuse(e);
    } catch (const std::invalid_argument& e) {  // a size the budget cannot lay out
      throw refuse(e);
    }
  }
  vision::MultimodalPromptOptions mo;
  mo.marker = std::string(marker);
  std::vector<vision::PromptChunk> chunks;
  try {
    chunks = vision::tokenize_multimodal(engine.tokenizer(), text, files.size(), mo);
  } catch (const std::invalid_argument& e) {
    throw bad_request(std::string("'") + field + "': " + e.what(), field);
  }
  serve::flatten_prompt(chunks, req.images, req.prompt);
  if (req.prompt.empty()) throw bad_request("'" + field + "': the prompt is empty", field);
  if (!req.images.empty() && req.images.back().chunk.end() == static_cast<int64_t>(req.prompt.size()))
    throw bad_request("'" + field + "': the prompt ends with an image; text must follow it", field);
  req.user_starts = find_user_starts(engine.tokenizer(), req.prompt);
}

}  // namespace tandem::http
