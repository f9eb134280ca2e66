// What a request's grammar tells the drafting of one speculative step (spec/constrained.md §6.4).
// The speculator asks it for the tokens the grammar forces at a draft position (free drafts: no
// MTP call, proposed to verification like any other) and hands it to the backend, whose drafter
// proposes only tokens it allows. Drafting never changes what is emitted: every verified row is
// picked under the grammar's mask (serve/engine/grammar_picker.h), so a draft the target would not pick
// is rejected as usual. serve/spec/grammar_drafts.h implements it over a grammar::Matcher.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::serve {

class DraftConstraint {
 public:
  virtual ~DraftConstraint() = default;
  // Back to the committed state: the grammar after `last`, the token the step starts from.
  virtual void begin() = 0;
  // The text is complete here and nothing may follow: the answer ends, nothing is drafted past it.
  virtual bool complete() = 0;
  // The same for the committed state (after the tokens the picker accepted so far): the step's
  // verification stops picking there, as the engine stops emitting.
  virtual bool committed_complete() = 0;
  // The tokens the grammar forces from the current draft position (empty: the next token is a
  // choice). Appended to out (cleared first).
  virtual void forced(std::vector<int32_t>& out) = 0;
  virtual bool allows(int32_t token) = 0;
  // The token was drafted at the current position: the position moves past it.
  virtual void advance(int32_t token) = 0;
};

}  // namespace tandem::serve
