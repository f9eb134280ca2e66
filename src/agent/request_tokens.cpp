#include "agent/request_tokens.h"

#include <stdexcept>

#include "agent/action.h"

namespace tandem::agent {

using ojson = nlohmann::ordered_json;

RequestTokens tokenize_request(const text::Tokenizer& tok, const text::ChatTemplate& tmpl, const ojson& body) {
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
  for (size_t i = 0; i < ct.roles.size(); ++i)
    if (ct.roles[i] == "user") out.user_starts.push_back(ct.message_starts[i]);
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
