// A request's grammar as the speculator's DraftConstraint (serve/spec/draft_constraint.h): the draft
// position is a grammar state copied from the request's matcher at begin() and moved by each
// draft, so drafting never touches the committed state (a rejected draft needs no grammar
// roll-back: the picker advances the matcher by the emitted tokens only).
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "serve/spec/draft_constraint.h"

namespace tandem::serve {

class GrammarDrafts final : public DraftConstraint {
 public:
  explicit GrammarDrafts(const grammar::Matcher& committed) : m_(committed), pos_(committed.state()) {}
  void begin() override { pos_ = m_.state(); }
  bool complete() override { return m_.grammar().complete(pos_); }
  bool committed_complete() override { return m_.complete(); }
  void forced(std::vector<int32_t>& out) override { m_.grammar().forced_tokens(pos_, out); }
  bool allows(int32_t token) override { return m_.grammar().allows(pos_, token); }
  void advance(int32_t token) override;

 private:
  const grammar::Matcher& m_;
  grammar::GrammarState pos_;
};

}  // namespace tandem::serve
