#include "agent/request_tokens.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>

#include "agent/action.h"
#include "gguf/gguf_file.h"
#include "http/image_request.h"
#include "http/api/request_parse.h"
#include "serve/request/request_image.h"
#include "vision/image_decode.h"
#include "vision/vision_hparams.h"

namespace tandem::agent {

using ojson = nlohmann::ordered_json;

namespace {

bool is_media_part(const ojson& part) {
  if (!part.is_object()) return false;
  const std::string type = part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
  return part.contains("image_url") || part.contains("image") || part.contains("video") || type == "image_url" ||
         type == "image" || type == "video" || type == "input_audio";
}

// http/api/request_parse.cpp's inline_image_parts: each image part becomes the marker (its file
// collected in order), text parts are joined with "\n", no newline around a marker; no images
// in system messages.
ojson inline_image_parts(const ojson& msgs, const std::string& marker, std::vector<std::vector<uint8_t>>& files) {
  ojson out = msgs;
  for (size_t mi = 0; mi < out.size(); ++mi) {
    ojson& m = out[mi];
    if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
    const ojson& content = m["content"];
    bool has_media = false;
    for (const ojson& part : content) has_media = has_media || is_media_part(part);
    if (!has_media) continue;
    const std::string role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
    const std::string where = "messages[" + std::to_string(mi) + "]";
    std::string text;
    bool prev_text = false;
    for (size_t pi = 0; pi < content.size(); ++pi) {
      const ojson& part = content[pi];
      const std::string at = where + ".content[" + std::to_string(pi) + "]";
      if (!part.is_object()) throw std::invalid_argument(at + " must be an object");
      if (part.contains("type") && !part["type"].is_string()) throw std::invalid_argument(at + ".type must be a string");
      const std::string type = part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
      if (type == "video" || part.contains("video") || type == "input_audio")
        throw std::invalid_argument(at + ": video and audio parts are not supported");
      if (type == "image_url" || type == "image" || part.contains("image_url") || part.contains("image")) {
        // The server's rule: refused in system messages; user and tool messages may carry them.
        if (role == "system") throw std::invalid_argument(at + ": a system message cannot contain images");
        const ojson* u = part.contains("image_url") ? &part["image_url"] : &part["image"];
        if (u->is_object() && u->contains("url")) u = &(*u)["url"];
        if (!u->is_string()) throw std::invalid_argument(at + ": expected \"image_url\": {\"url\": ...}");
        files.push_back(http::image_url_bytes(u->get<std::string>(), at + ".image_url.url"));
        text += marker;
        prev_text = false;
        continue;
      }
      if (!part.contains("text") || !part["text"].is_string()) throw std::invalid_argument(at + ": expected a text or image_url part");
      if (prev_text) text += "\n";
      text += part["text"].get<std::string>();
      prev_text = true;
    }
    m["content"] = text;
  }
  return out;
}

int budget_field(const ojson& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return -1;
  if (!body[key].is_number_integer()) throw std::invalid_argument(std::string("\"") + key + "\" must be an integer");
  const int64_t v = body[key].get<int64_t>();
  if (v < -1 || v > vision::kMaxBudgetTokens)
    throw std::invalid_argument(std::string("\"") + key + "\" out of range");
  return static_cast<int>(v);
}

const char* image_mime(const std::vector<uint8_t>& f) {
  if (f.size() >= 3 && f[0] == 0xff && f[1] == 0xd8 && f[2] == 0xff) return "image/jpeg";
  if (f.size() >= 4 && f[0] == 'G' && f[1] == 'I' && f[2] == 'F') return "image/gif";
  if (f.size() >= 2 && f[0] == 'B' && f[1] == 'M') return "image/bmp";
  return "image/png";
}

std::string base64(const std::vector<uint8_t>& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += k[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint32_t{in[i]} << 16;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

}  // namespace

vision::PreprocessParams ImageLayout::params(const vision::ImageBudget& request) const {
  vision::PreprocessParams p;
  p.patch_size = patch_size;
  p.merge = merge;
  p.budget = budget;
  if (request.min_tokens > 0) p.budget.min_tokens = request.min_tokens;
  if (request.max_tokens > 0) p.budget.max_tokens = request.max_tokens;
  return p;
}

ImageLayout image_layout_from_mmproj(const std::string& path) {
  const auto f = GgufFile::open(path);
  const vision::VisionHParams hp = vision::VisionHParams::from_gguf(*f);
  ImageLayout l;
  l.patch_size = hp.patch_size;
  l.merge = hp.merge;
  return l;
}

bool has_images(const ojson& body) {
  if (!body.contains("messages") || !body["messages"].is_array()) return false;
  for (const ojson& m : body["messages"])
    if (m.is_object() && m.contains("content") && m["content"].is_array())
      for (const ojson& part : m["content"])
        if (is_media_part(part)) return true;
  return false;
}

ojson with_screenshot(const ojson& body, const std::vector<uint8_t>& file) {
  ojson out = body;
  if (!out.contains("messages") || !out["messages"].is_array()) throw TraceError("a request without \"messages\"");
  ojson* last = nullptr;
  for (ojson& m : out["messages"])
    if (m.is_object() && m.contains("role") && m["role"] == "user") last = &m;
  if (!last) throw TraceError("a screenshot needs a user message to attach to");
  ojson parts = ojson::array();
  if (last->contains("content") && (*last)["content"].is_string()) {
    parts.push_back(ojson{{"type", "text"}, {"text", (*last)["content"]}});
  } else if (last->contains("content") && (*last)["content"].is_array()) {
    parts = (*last)["content"];
  }
  parts.push_back(ojson{{"type", "image_url"},
                        {"image_url", ojson{{"url", std::string("data:") + image_mime(file) + ";base64," + base64(file)}}}});
  (*last)["content"] = std::move(parts);
  return out;
}

ojson request_body(const TraceRecord& rec, const std::string& trace_dir) {
  if (rec.image.empty()) return rec.body;
  namespace fs = std::filesystem;
  const fs::path p = fs::path(rec.image).is_absolute() ? fs::path(rec.image) : fs::path(trace_dir) / rec.image;
  std::ifstream in(p, std::ios::binary);
  const std::string where = rec.line > 0 ? "trace line " + std::to_string(rec.line) + ": " : "";
  if (!in) throw TraceError(where + "cannot read the screenshot " + p.string());
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return with_screenshot(rec.body, bytes);
  } catch (const TraceError& e) {
    throw TraceError(where + e.what());
  }
}

RequestTokens tokenize_request(const text::Tokenizer& tok, const text::ChatTemplate& tmpl, const ojson& body,
                               const ImageLayout& layout) {
  if (has_images(body)) {
    // tandem-server's path for a chat body with image parts (http/api/request_parse.cpp parse_chat_request).
    std::vector<std::vector<uint8_t>> files;
    ojson chat = ojson::object();
    chat["messages"] = inline_image_parts(body["messages"], layout.marker, files);
    if (body.contains("tools") && !body["tools"].is_null()) chat["tools"] = body["tools"];
    std::optional<bool> thinking;
    if (body.contains("enable_thinking") && body["enable_thinking"].is_boolean()) thinking = body["enable_thinking"].get<bool>();
    if (body.contains("chat_template_kwargs") && body["chat_template_kwargs"].is_object()) {
      const ojson& kw = body["chat_template_kwargs"];
      if (kw.contains("enable_thinking") && kw["enable_thinking"].is_boolean()) thinking = kw["enable_thinking"].get<bool>();
    }
    if (thinking) chat["enable_thinking"] = *thinking;
    text::ChatRequest req = text::ChatRequest::from_json(chat);
    req.add_generation_prompt = true;
    const std::string rendered = tmpl.render(req).text;
    vision::ImageBudget budget;
    budget.min_tokens = budget_field(body, "image_min_tokens");
    budget.max_tokens = budget_field(body, "image_max_tokens");
    const vision::PreprocessParams params = layout.params(budget);
    vision::validate(params);
    std::vector<serve::RequestImage> images;
    for (const auto& f : files) {
      serve::RequestImage im;
      im.pixels = std::make_shared<const vision::RgbImage>(vision::decode_image(f));
      im.chunk = serve::image_chunk(*im.pixels, params);
      im.budget = budget;
      images.push_back(std::move(im));
    }
    vision::MultimodalPromptOptions mo;
    mo.marker = layout.marker;
    RequestTokens out;
    serve::flatten_prompt(vision::tokenize_multimodal(tok, rendered, files.size(), mo), images, out.ids);
    for (const auto& im : images) out.images.push_back(im.chunk);
    out.user_starts = http::find_user_starts(tok, out.ids, &tmpl);
    return out;
  }
  text::ChatRequest req = text::ChatRequest::from_json(body);
  req.add_generation_prompt = true;
  if (body.contains("chat_template_kwargs") && body["chat_template_kwargs"].is_object()) {
    const ojson& kw = body["chat_template_kwargs"];
    if (kw.contains("enable_thinking") && kw["enable_thinking"].is_boolean())
      req.enable_thinking = kw["enable_thinking"].get<bool>();
  }
  const text::ChatTokens ct = text::tokenize_chat(tok, tmpl.render(req));
  RequestTokens out;
  out.ids = ct.ids;
  out.user_starts = ct.user_starts;  // the template family's user spans
  return out;
}

int64_t max_output_tokens(const ojson& body) {
  for (const char* key : {"max_tokens", "n_predict", "max_completion_tokens"})
    if (body.contains(key) && body[key].is_number_integer()) return body[key].get<int64_t>();
  return -1;
}

std::vector<int32_t> expected_output(const text::Tokenizer& tok, const TraceRecord& rec) {
  std::vector<int32_t> out;
  if (!rec.expected_action) return out;
  std::string text;
  const ParseResult p = parse_action(rec.expected_action->dump());
  text = p.ok() ? to_text(*p.action) : rec.expected_action->dump();
  out = tok.encode(text, text::EncodeOptions{.parse_special = false});
  int32_t end = -1;
  for (const char* name : {"<|im_end|>", "<|endoftext|>"}) {
    const auto ids = tok.encode(name);
    if (ids.size() == 1 && tok.vocab().is_eog(ids[0])) {
      end = ids[0];
      break;
    }
  }
  if (end < 0 && tok.vocab().eos()) end = *tok.vocab().eos();
  if (end >= 0) out.push_back(end);
  const int64_t cap = max_output_tokens(rec.body);
  if (cap >= 0 && static_cast<int64_t>(out.size()) > cap) out.resize(static_cast<size_t>(cap));
  return out;
}

serve::RecordedRequest recorded_request(const RequestTokens& t, const std::vector<int32_t>& sampled) {
  serve::RecordedRequest r;
  r.prompt = t.ids;
  r.user_starts = t.user_starts;
  r.images = t.images;
  if (!sampled.empty()) r.output.assign(sampled.begin(), sampled.end() - 1);
  return r;
}

serve::RecordedRequest recorded_request_from_log(const RequestTokens& t, const nlohmann::ordered_json& rec) {
  const auto ints = [&](const nlohmann::ordered_json& j, const char* name) {
    try {
      return j.get<std::vector<int32_t>>();
    } catch (const std::exception&) {
      throw std::invalid_argument(std::string("request log: \"") + name + "\" must be an array of integers");
    }
  };
  if (!rec.contains("output")) throw std::invalid_argument("request log: a record without \"output\"");
  serve::RecordedRequest r = recorded_request(t, ints(rec["output"], "output"));
  if (rec.contains("images")) {  // the server's image chunks
    const auto& ims = rec["images"];
    if (!ims.is_array()) throw std::invalid_argument("request log: \"images\" must be an array");
    r.images.clear();
    for (const auto& im : ims) {
      try {
        serve::ImageChunk c;
        c.begin = im.at("begin").get<int64_t>();
        c.nx = im.at("nx").get<int>();
        c.ny = im.at("ny").get<int>();
        c.id = im.at("id").get<uint64_t>();
        r.images.push_back(c);
      } catch (const std::exception&) {
        throw std::invalid_argument("request log: \"images\" entries must be {\"begin\", \"nx\", \"ny\", \"id\"} integers");
      }
    }
  }
  if (rec.contains("fed_past_output")) {
    const std::vector<int32_t> past = ints(rec["fed_past_output"], "fed_past_output");
    r.output.insert(r.output.end(), past.begin(), past.end());
  }
  if (rec.contains("timings")) {
    const auto& tm = rec["timings"];
    if (tm.contains("step_drafted")) r.step_drafted = ints(tm["step_drafted"], "timings.step_drafted");
    if (tm.contains("step_accepted")) r.step_accepted = ints(tm["step_accepted"], "timings.step_accepted");
  }
  return r;
}

SectionTokenCounts count_section_tokens(const text::Tokenizer& tok, const text::ChatTemplate& tmpl, const ojson& body,
                                        const std::string& user_text, const std::vector<PromptSection>& sections) {
  text::ChatRequest req = text::ChatRequest::from_json(body);
  req.add_generation_prompt = true;
  const text::ChatPrompt prompt = tmpl.render(req);
  const size_t base = prompt.text.find(user_text);
  std::vector<int32_t> ids;
  std::vector<uint32_t> offsets;
  tok.encode(prompt.text, ids, {}, &offsets);
  SectionTokenCounts out;
  out.total = static_cast<int64_t>(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const char* name = "template";
    if (base != std::string::npos && offsets[i] >= base) {
      const size_t o = offsets[i] - base;
      for (const PromptSection& s : sections)
        if (o >= s.begin && o < s.end) name = s.name.c_str();
    }
    ++out.by_section[name];
  }
  return out;
}

}  // namespace tandem::agent
