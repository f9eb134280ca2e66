// One request's generation as its client sees it: the output arriving piece by piece, a way to
// cancel, and the final result. Shared between the Engine (which produces) and the caller (an HTTP
// handler, a test) that consumes; every member is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "serve/engine/token_logprobs.h"
#include "serve/meter/request_stats.h"

namespace tandem::serve {

enum class FinishReason : uint8_t {
  EndOfGeneration,  // an end-of-generation token (not part of the output text)
  GrammarComplete,  // the request's grammar is complete and allows nothing more (finish_reason "stop")
  StopString,       // a stop string matched (it and what follows are withheld)
  Length,           // n_predict tokens
  ContextFull,      // the slot's context is full
  Cancelled,        // the client went away (or cancel() was called)
  Timeout,          // the request's deadline passed
  Error,            // the engine failed on this request (message in error)
  Watchdog,         // the engine's work passed the watchdog's deadline (serve/lifecycle/watchdog.h; message in error)
};
std::string_view to_string(FinishReason r);

struct GenerationResult {
  FinishReason reason = FinishReason::Error;
  std::string error;       // reason == Error or Watchdog
  std::string stop_word;   // reason == StopString: the stop string that matched
  bool started = false;    // the request reached a slot (false: it ended while queued)
  int slot = -1;
  std::vector<int32_t> output;  // sampled tokens, in order (the end-of-generation token included)
  // With GenerationParams::logprobs: one entry per output token, in order.
  std::vector<TokenLogprob> logprobs;
  // Normally empty: the slot fed every output token but the last. With speculation a stop string
  // or a length limit can end the request inside a step whose later drafts were accepted and fed
  // all the same; then these are the tokens the slot consumed from the last output token's
  // position on (its first is output.back()), so that a replay knows what the state holds.
  std::vector<int32_t> fed_past_output;
  std::string text;             // the whole output text, as streamed
  RequestStats stats;           // the slot's numbers (serving.md §5); zero when !started
  double queue_ms = 0;          // arrival -> assigned to a slot
  double predicted_ms = 0;      // end of prefill -> last token (wall clock, as llama.cpp's t_token_generation)
  double cold_start_ms = 0;     // the weights' reload the request waited for (--unload-idle-s); 0: none
};

class Generation {
 public:
  explicit Generation(uint64_t id) : id_(id), arrival_(std::chrono::steady_clock::now()) {}
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  uint64_t id() const { return id_; }
  std::chrono::steady_clock::time_point arrival() const { return arrival_; }

  // What arrived since the previous call. Waits up to `wait` when nothing is pending.
  struct Chunk {
    std::string text;
    std::vector<int32_t> tokens;
    std::vector<TokenLogprob> logprobs;  // one per token, when the request asked for them
    bool done = false;  // the result is final (result() may be read)
    bool started = false;
    int slot = -1;  // once started
  };
  Chunk next(std::chrono::milliseconds wait);
  // Blocks until the generation is finished or `wait` passed; returns whether it is finished.
  bool wait_done(std::chrono::milliseconds wait);

  // Asks the engine to stop this generation (or drop it from the queue); idempotent.
  void cancel();
  bool cancel_requested() const { return cancelled_.load(std::memory_order_relaxed); }
  bool done() const;
  // Valid once done.
  const GenerationResult& result() const { return result_; }

  // Producer side (the engine).
  void set_cancel_hook(std::function<void()> hook);
  void mark_started(int slot);
  // token < 0: text only (what a flush released at the end).
  void push(std::string_view text, int32_t token, const TokenLogprob* logprob = nullptr);
  // The first call wins (the engine and the watchdog may both finish it); returns whether this one did.
  bool finish(GenerationResult result);

 private:
  const uint64_t id_;
  const std::chrono::steady_clock::time_point arrival_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;
  std::vector<int32_t> tokens_;
  std::vector<TokenLogprob> logprobs_;
  bool started_ = false;
  int slot_ = -1;
  bool done_ = false;
  std::atomic<bool> cancelled_{false};
  std::function<void()> cancel_hook_;
  GenerationResult result_;
};

}  // namespace tandem::serve
