#include "agent/policy_eval.h"
#include "runtime/elapsed.h"

#include <chrono>
#include <span>
#include <stdexcept>

#include "agent/request_tokens.h"
#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/vocab_index.h"
#include "text/sampler.h"

namespace tandem::agent {

AnswerCheck check_answer(std::string_view answer, const nlohmann::ordered_json& expected) {
  const ParseResult want = parse_action(expected.dump());
  if (!want.ok()) throw std::invalid_argument("expected_action does not parse: " + want.error);
  const ParseResult got = parse_action(answer);
  AnswerCheck c;
  c.parsed = got.ok();
  c.error = got.error;
  c.exact = got.ok() && *got.action == *want.action;
  return c;
}

SchemaValidator::SchemaValidator(const text::Tokenizer& tok, const nlohmann::ordered_json& schema) {
  vocab_ = std::make_shared<grammar::VocabIndex>(tok);
  grammar::SchemaOptions o;
  o.whitespace = grammar::JsonWhitespace::Flexible;
  g_ = grammar::CompiledGrammar::compile(grammar::json_schema_to_gbnf(schema, o).gbnf, vocab_);
}

SchemaValidator::~SchemaValidator() = default;

bool SchemaValidator::valid(std::string_view text) const {
  const grammar::GrammarState s = g_->advance_bytes(g_->initial(), text);
  return s != grammar::kDeadState && g_->accepting(s);
}


GreedyAnswer greedy_answer(HybridModel& model, const text::Tokenizer& tok, const std::vector<int32_t>& prompt,
                           int max_tokens) {
  if (prompt.empty()) throw std::invalid_argument("greedy_answer: empty prompt");
  if (max_tokens <= 0) throw std::invalid_argument("greedy_answer: max_tokens must be positive");
  auto seq = model.new_sequence(static_cast<int64_t>(prompt.size()) + max_tokens);
  text::SamplerParams sp;
  sp.temperature = 0;  // greedy, lowest id on ties, as the server samples at temperature 0
  text::Sampler sampler(sp);
  ForwardOptions opt;  // the last row's logits
  ForwardOutput out;
  GreedyAnswer a;
  auto t0 = std::chrono::steady_clock::now();
  model.forward(*seq, std::span<const int32_t>(prompt), opt, out);
  a.prompt_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  a.finish_reason = "length";
  std::vector<int32_t> text_ids;
  while (static_cast<int>(a.tokens.size()) < max_tokens) {
    const int32_t next = sampler.sample(std::span<const float>(out.logits_row(0), static_cast<size_t>(out.n_vocab)));
    a.tokens.push_back(next);
    if (tok.vocab().is_eog(next)) {
      a.finish_reason = "stop";
      break;
    }
    text_ids.push_back(next);
    if (static_cast<int>(a.tokens.size()) == max_tokens) break;
    model.forward(*seq, std::span<const int32_t>(&next, 1), opt, out);
  }
  a.decode_ms = ms_since(t0);
  a.text = tok.decode(text_ids, /*render_special=*/false);
  return a;
}

GreedyAnswer greedy_answer(HybridModel& model, const text::Tokenizer& tok, const text::ChatTemplate& tmpl,
                           const TraceRecord& rec, int max_tokens) {
  if (max_tokens <= 0) {
    const int64_t m = max_output_tokens(rec.body);
    max_tokens = m > 0 ? static_cast<int>(m) : 64;
  }
  return greedy_answer(model, tok, tokenize_request(tok, tmpl, rec.body).ids, max_tokens);
}

}  // namespace tandem::agent
