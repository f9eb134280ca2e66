// The engine's private parts, shared by its two sources: engine.cpp (requests: scheduling,
// prefill, decoding) and engine_lifecycle.cpp (slot actions, unload/reload, states on disk).
// Not for anyone else: the engine's users see serve/engine/engine.h.
#pragma once

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "serve/engine/engine.h"
#include "serve/engine/grammar_picker.h"
#include "runtime/elapsed.h"
#include "serve/spec/grammar_drafts.h"
#include "text/stop_strings.h"

namespace tandem::serve {

using Clock = std::chrono::steady_clock;


// Wakes the scheduler; shared with the Generations' cancel hooks so that a late cancel() never
// touches a destroyed engine.
struct Engine::Wake {
  std::mutex m;
  std::condition_variable cv;
  bool flag = false;
  void signal() {
    {
      std::lock_guard lk(m);
      flag = true;
    }
    cv.notify_all();
  }
};

struct Engine::Pending {
  EngineRequest req;
  std::shared_ptr<Generation> gen;
  std::optional<Clock::time_point> deadline;
  double cold_start_ms = 0;  // the reload it waited for
};

// A slot action (Engine::slot_action), run by the scheduler once the slot is idle.
struct Engine::SlotTask {
  int id = 0;
  SlotAction action = SlotAction::Erase;
  std::string filename;
  std::promise<SlotActionResult> done;
};

struct Engine::SlotRun {
  int id = 0;
  std::unique_ptr<Slot> slot;
  uint64_t applied_version = 0;
  uint64_t last_used = 0;
  // The request in the slot (phase != Idle).
  SlotPhase phase = SlotPhase::Idle;
  std::unique_ptr<Pending> p;
  std::optional<Live> apply;  // configuration to apply before the next prefill
  std::optional<text::Sampler> sampler;
  std::optional<grammar::Matcher> matcher;     // the request's grammar, if it has one
  std::optional<GrammarPicker> picker;         // the sampler under the grammar's mask
  std::optional<GrammarDrafts> grammar_drafts; // the grammar's view for speculative drafting
  // The grammar after the last *emitted* token: a speculative step's picker has already moved the
  // matcher past the whole step (the bonus token included), which the engine emits one by one.
  grammar::GrammarState emitted_state = grammar::kDeadState;
  std::optional<text::StreamDecoder> decoder;
  std::optional<text::StopStrings> stops;
  std::string raw_text;  // decoded output before stop strings (to name the matching one)
  GenerationResult result;
  int32_t last = -1;
  bool prefilled = false;
  std::vector<int32_t> spec_tokens;  // one speculative step's tokens, emitted in order
  // The request's images: the slot's view (rows on demand), the rows once got, and what getting
  // them took.
  std::vector<PromptImage> prompt_images;
  std::vector<ImageRows> image_rows;
  int64_t images_encoded = 0, encoder_cache_hits = 0;
  double encoder_ms = 0;
  Clock::time_point assigned, prefill_end, last_token;
  std::optional<MeterReading> step_from;  // the meter at the start of the running step
  RequestSpend spent;                     // the request's steps so far
};

}  // namespace tandem::serve
