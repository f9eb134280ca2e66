// One request's prompt as the serving core sees it: token ids plus where the chat
// template put the user messages. The positions come from the caller (the chat template
// knows where each `<|im_start|>user` begins); the core never parses tokens, so it works
// for any prompt layout an agent invents.
#pragma once

#include <cstdint>
#include <span>

namespace tandem::serve {

struct Prompt {
  std::span<const int32_t> tokens;
  // Position of the first token of every user message, ascending, each in [0, tokens.size()).
  // The last entry is "the last user message" of serving.md §3.1. May be empty.
  std::span<const int64_t> user_starts;

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t last_user_start() const { return user_starts.empty() ? -1 : user_starts.back(); }
};

// Throws std::invalid_argument naming what was expected when the prompt is empty or the user
// message positions are not ascending positions inside the prompt.
void validate_prompt(const Prompt& prompt);

}  // namespace tandem::serve
