// A request as the replay simulator (and Marconi's alpha tuning) sees it: the prompt, where
// its user messages start, and the generated tokens the slot consumed after it.
#pragma once

#include <cstdint>
#include <vector>

#include "serve/slot/prompt.h"

namespace tandem::serve {

struct RecordedRequest {
  std::vector<int32_t> prompt;
  std::vector<int64_t> user_starts;
  std::vector<ImageChunk> images;  // the prompt's image chunks (their rows hold placeholders)
  std::vector<int32_t> output;  // tokens fed back through decode (the last sampled one excluded)
  // A speculating server's steps (RequestStats::step_drafted / step_accepted, from its request
  // log): drafts verified and accepted per step. Empty for a server without speculation.
  std::vector<int32_t> step_drafted, step_accepted;
};

}  // namespace tandem::serve
