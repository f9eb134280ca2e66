#include "serve/prompt.h"

#include <stdexcept>
#include <string>

namespace tandem::serve {

void validate_prompt(const Prompt& prompt) {
  if (prompt.tokens.empty()) throw std::invalid_argument("prompt: expected at least one token");
  int64_t prev = -1;
  for (int64_t u : prompt.user_starts) {
    if (u < 0 || u >= prompt.size())
      throw std::invalid_argument("prompt: user message start " + std::to_string(u) + " outside [0, " +
                                  std::to_string(prompt.size()) + ")");
    if (u <= prev)
      throw std::invalid_argument("prompt: user message starts must be strictly ascending (" + std::to_string(prev) +
                                  " then " + std::to_string(u) + ")");
    prev = u;
  }
}

}  // namespace tandem::serve
