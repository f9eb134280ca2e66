#include "http/api/logprobs_json.h"

#include <string>

namespace tandem::http {

namespace {

Json entry(const text::Tokenizer& tok, int32_t id, float logprob, bool with_id) {
  std::string piece;
  tok.append_token(piece, id);
  Json bytes = Json::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  Json e = Json::object();
  if (with_id) e["id"] = id;
  // A piece may end inside a UTF-8 character: the response's text replaces what is invalid
  // (to_text), the bytes stay exact.
  e["token"] = piece;
  e["logprob"] = logprob;
  e["bytes"] = std::move(bytes);
  return e;
}

Json entries(const text::Tokenizer& tok, std::span<const serve::TokenLogprob> lps, bool with_id) {
  Json out = Json::array();
  for (const serve::TokenLogprob& lp : lps) {
    Json e = entry(tok, lp.token, lp.logprob, with_id);
    Json top = Json::array();
    for (const auto& [id, l] : lp.top) top.push_back(entry(tok, id, l, with_id));
    e["top_logprobs"] = std::move(top);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

Json chat_logprobs_json(const text::Tokenizer& tok, std::span<const serve::TokenLogprob> lps) {
  return Json{{"content", entries(tok, lps, false)}};
}

Json completion_probabilities_json(const text::Tokenizer& tok, std::span<const serve::TokenLogprob> lps) {
  return entries(tok, lps, true);
}

}  // namespace tandem::http
