// A policy's answers scored against the environment (issue 50): an answer parsed with
// parse_action and compared with the trace record's expected_action, every field; whether it is
// valid under the action schema (schemas/agent-action.schema.json); and the greedy answer of a
// model to a request, decoded exactly as tandem-server decodes it with temperature 0 (the model's
// chat template, special tokens, lowest id on ties, stop at an end-of-generation token).
//
// Used by tandem-policy-eval (accuracy, task success and schema validity over test traces),
// tandem-replay (its accuracy column) and the test of the shipped policy file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/action.h"
#include "agent/trace.h"
#include "model/hybrid_model.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace tandem::grammar {
class CompiledGrammar;
class VocabIndex;
}  // namespace tandem::grammar

namespace tandem::agent {

// An answer against the expected action.
struct AnswerCheck {
  bool parsed = false;      // parse_action accepts the answer
  bool exact = false;       // ... and its action equals the expected one, every field
  std::string error;        // parse_action's error when it does not parse
};

// `expected` is parsed with parse_action as well (so "click" and "tap" compare equal, and an
// index's integer spelling does not matter). No screen check on the answer's index: the exact
// comparison decides whether it is the right control. An expected action that does not parse
// throws std::invalid_argument.
AnswerCheck check_answer(std::string_view answer, const nlohmann::ordered_json& expected);

// The action schema as a grammar over bytes (flexible whitespace: any JSON spacing the schema's
// documents may have), for validating answers: valid(text) is true when the text is a document of
// the schema. The grammar is compiled against `tok`'s vocabulary, which must outlive this.
class SchemaValidator {
 public:
  SchemaValidator(const text::Tokenizer& tok, const nlohmann::ordered_json& schema);
  ~SchemaValidator();
  bool valid(std::string_view text) const;

 private:
  std::shared_ptr<grammar::VocabIndex> vocab_;
  std::shared_ptr<grammar::CompiledGrammar> g_;
};

struct GreedyAnswer {
  std::vector<int32_t> tokens;   // every generated token, the end-of-generation token included
  std::string text;              // the tokens' text without the end-of-generation token
  std::string finish_reason;     // "stop" (an end-of-generation token) or "length"
  double prompt_ms = 0, decode_ms = 0;
};

// The greedy continuation of `prompt` (token ids, e.g. tokenize_request's), at most max_tokens
// tokens. The model's context is the prompt plus max_tokens.
GreedyAnswer greedy_answer(HybridModel& model, const text::Tokenizer& tok, const std::vector<int32_t>& prompt,
                           int max_tokens);

// The same for a trace record's request (rendered and tokenized as tandem-server does:
// tokenize_request); max_tokens <= 0: the record's own limit (max_tokens, else 64).
GreedyAnswer greedy_answer(HybridModel& model, const text::Tokenizer& tok, const text::ChatTemplate& tmpl,
                           const TraceRecord& rec, int max_tokens = 0);

}  // namespace tandem::agent
