#include "agent/request_tokens.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>

#include "agent/action.h"
#include "gguf/gguf_file.h"
#include "serve/request/chat_prompt.h"
#include "serve/request/image_url.h"
#include "serve/request/prompt_assembly.h"
#include "vision/vision_hparams.h"

namespace tandem::agent {

using ojson = nlohmann::ordered_json;

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
        if (serve::is_media_part(part)) return true;
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
  parts.push_back(ojson{{"type", "image_url"}, {"image_url", ojson{{"url", serve::image_data_url(file)}}}});
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
  // tandem-server's way: the chat body read into the request object, then the one prompt
  // assembly (serve/request/), with this layout's images and no pixels kept.
  serve::Request req;
  req.prompt = serve::read_chat_prompt(body);
  serve::PromptContext ctx;
  ctx.tok = &tok;
  ctx.tmpl = &tmpl;
  ctx.image_params = [&layout](const vision::ImageBudget& b) { return layout.params(b); };
  ctx.media_marker = layout.marker;
  ctx.keep_pixels = false;
  serve::EngineRequest e = serve::assemble_prompt(req, ctx);
  RequestTokens out;
  out.ids = std::move(e.prompt);
  out.user_starts = std::move(e.user_starts);
  for (const serve::RequestImage& im : e.images) out.images.push_back(im.chunk);
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
