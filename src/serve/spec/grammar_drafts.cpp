#include "serve/spec/grammar_drafts.h"

#include <stdexcept>
#include <string>

namespace tandem::serve {

void GrammarDrafts::advance(int32_t token) {
  const grammar::GrammarState next = m_.grammar().advance(pos_, token);
  // Drafts are forced tokens or tokens allows() accepted: a dead state is a bug, not bad input.
  if (next == grammar::kDeadState)
    throw std::logic_error("grammar drafts: draft token " + std::to_string(token) + " is not allowed where it was drafted");
  pos_ = next;
}

}  // namespace tandem::serve
