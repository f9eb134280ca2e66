#include "serve/engine/generation.h"

#include <utility>

namespace tandem::serve {

std::string_view to_string(FinishReason r) {
  switch (r) {
    case FinishReason::EndOfGeneration: return "eos";
    case FinishReason::GrammarComplete: return "grammar";
    case FinishReason::StopString: return "word";
    case FinishReason::Length: return "limit";
    case FinishReason::ContextFull: return "context";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Timeout: return "timeout";
    case FinishReason::Error: return "error";
    case FinishReason::Watchdog: return "watchdog";
  }
  return "error";
}

Generation::Chunk Generation::next(std::chrono::milliseconds wait) {
  std::unique_lock lk(mu_);
  if (text_.empty() && tokens_.empty() && !done_)
    cv_.wait_for(lk, wait, [&] { return !text_.empty() || !tokens_.empty() || done_; });
  Chunk c;
  c.text.swap(text_);
  c.tokens.swap(tokens_);
  c.logprobs.swap(logprobs_);
  c.done = done_;
  c.started = started_;
  c.slot = slot_;
  return c;
}

bool Generation::wait_done(std::chrono::milliseconds wait) {
  std::unique_lock lk(mu_);
  return cv_.wait_for(lk, wait, [&] { return done_; });
}

void Generation::cancel() {
  if (cancelled_.exchange(true)) return;
  std::function<void()> hook;
  {
    std::lock_guard lk(mu_);
    hook = cancel_hook_;
  }
  if (hook) hook();
}

bool Generation::done() const {
  std::lock_guard lk(mu_);
  return done_;
}

void Generation::set_cancel_hook(std::function<void()> hook) {
  std::lock_guard lk(mu_);
  cancel_hook_ = std::move(hook);
}

void Generation::mark_started(int slot) {
  std::lock_guard lk(mu_);
  started_ = true;
  slot_ = slot;
}

void Generation::push(std::string_view text, int32_t token, const TokenLogprob* logprob) {
  {
    std::lock_guard lk(mu_);
    text_.append(text);
    if (token >= 0) tokens_.push_back(token);
    if (logprob) logprobs_.push_back(*logprob);
  }
  cv_.notify_all();
}

bool Generation::finish(GenerationResult result) {
  {
    std::lock_guard lk(mu_);
    if (done_) return false;
    result_ = std::move(result);
    done_ = true;
    cancel_hook_ = nullptr;  // the engine may go away; nothing to wake any more
  }
  cv_.notify_all();
  return true;
}

}  // namespace tandem::serve
