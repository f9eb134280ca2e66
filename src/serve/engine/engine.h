// The serving engine: N slots over one loaded model, a bounded queue, and one scheduler thread
// that runs the slots' work. No HTTP here: callers submit token prompts and read Generations.
//
//   Engine engine(model, tokenizer, cfg);
//   auto gen = engine.submit({prompt_ids, user_starts, params});  // throws EngineBusy / invalid_argument
//   while (true) { auto c = gen->next(100ms); ...; if (c.done) break; }
//   gen->result().stats;                                             // serving.md §5
//
// Scheduling: a request goes to the idle slot whose cached tokens share the longest prefix with
// its prompt (else the least recently used idle slot; `id_slot` pins a slot and waits for it).
// Requests that find no idle slot wait in FIFO order, at most `queue_max` of them; beyond that
// submit() throws EngineBusy. The scheduler thread interleaves the active slots one step at a time
// (a step = a whole prefill, or one decode), round robin, so that slots share the model fairly;
// Qwen35Model::forward runs one call at a time anyway. Between steps it drops cancelled requests
// and those past their deadline, and applies run-time configuration changes.
// Every step, pass and image encode is a heartbeat of the watchdog (serve/lifecycle/watchdog.h), which
// fails the requests in flight when one runs past its deadline.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "grammar/grammar_cache.h"
#include "runtime/resource_governor.h"
#include "serve/engine/encoder_cache.h"
#include "serve/engine/generation.h"
#include "serve/lifecycle/state_store.h"
#include "serve/lifecycle/watchdog.h"
#include "serve/meter/compute_meter.h"
#include "serve/meter/request_totals.h"
#include "serve/policy/policy_factory.h"
#include "serve/request/request_image.h"
#include "serve/slot/prompt_cache.h"
#include "serve/slot/slot.h"
#include "serve/spec/speculator.h"
#include "text/sampler.h"
#include "text/tokenizer.h"

namespace tandem {
class HybridModel;  // model/hybrid_model.h: the engine holds a reference; its .cpp runs it
}  // namespace tandem
namespace tandem::vision {
class VisionModel;  // vision/vision_model.h: the encoder of the images requests carry
}  // namespace tandem::vision

namespace tandem::serve {

// The longest request deadline (--timeout-ms, a request's "timeout_ms", POST /props): about 24.8
// days. Arrival + deadline must fit the steady clock's nanoseconds (int64: 292 years from its
// epoch); a larger value wrapped round and every request failed at once (issue 51).
inline constexpr int64_t kMaxTimeoutMs = 2147483647;

struct EngineConfig {
  int n_parallel = 1;        // slots
  int64_t n_ctx = 4096;      // context (KV rows) of each slot
  int queue_max = 64;        // requests that may wait for a slot
  int64_t timeout_ms = 0;    // default per-request deadline from arrival; 0: none
  SlotConfig slot;           // batch sizes, consolidation, ctx_checkpoints
  PolicyConfig policy;
  size_t cache_ram_mib = 512;  // host prompt cache shared by the slots; 0: none
  // Which cache entry a prompt loads (serve/slot/prompt_cache.h). Auto: Restorable under the
  // divergence policy (Tandem's), Fractions (llama.cpp's) under stock and marconi.
  CacheSelect cache_select = CacheSelect::Auto;
  // Speculative decoding with the model's MTP head (docs/speculation.md): off unless enabled.
  // Every slot then drafts draft_max tokens per step and verifies them in one pass; the output
  // is token for token what plain decoding gives (greedy, or the same sampler draws).
  SpecConfig speculation = {.enabled = false};
  // Compiled grammars (and the masks they cached) kept by text across requests.
  size_t grammar_cache_mib = 64;
  // Images (docs/vision.md), used when the engine has a vision model.
  struct Images {
    vision::ImageBudget budget;     // llama.cpp's --image-min-tokens / --image-max-tokens (-1: default)
    size_t encoder_cache_mib = 256; // encoded images kept by identity; 0: none
    int max_per_request = 8;
  } images;
  // Where package energy is read (runtime/energy_meter.h: RAPL zones); tests point it at a fake tree.
  std::string powercap_root = kPowercapRoot;
  // A forward pass, image encode or step past its deadline fails the requests in flight and, by
  // default, exits the process for a supervisor to restart it (serve/lifecycle/watchdog.h).
  WatchdogConfig watchdog;
  // States on disk (serve/lifecycle/state_store.h, docs/serving.md "States on disk"): the prompt cache's
  // entries (and the slots, saved into it) are written here when the engine unloads or stops,
  // and loaded when it starts or reloads. "": none. Needs a prompt cache (cache_ram_mib > 0).
  std::string state_dir;
  // Unload the model's weights after this long without work (0: never); the next request reloads
  // them (GenerationResult::cold_start_ms). The slots are saved into the prompt cache first, and
  // the cache to state_dir when one is set.
  int64_t unload_idle_ms = 0;
};

// llama.cpp's POST /slots/{id}?action=save|restore|erase (Engine::slot_action).
enum class SlotAction : uint8_t { Save, Restore, Erase };
struct SlotActionResult {
  int id_slot = 0;
  std::string filename;
  int64_t n_tokens = 0;  // saved, restored or erased
  uint64_t n_bytes = 0;  // written or read
  double ms = 0;
};

// The unload/reload cycle and the state directory (EngineSnapshot::lifecycle).
struct LifecycleStats {
  bool weights_loaded = true;
  uint64_t unloads = 0, reloads = 0;
  double last_unload_ms = 0;
  // The last reload's parts (a cold start): mapping + binding, packing, state files, and the total.
  double cold_start_ms = 0, cold_map_ms = 0, cold_pack_ms = 0, cold_states_ms = 0;
  std::string state_dir;        // "" without one
  uint64_t state_files_written = 0, state_files_loaded = 0, state_files_refused = 0;
  uint64_t state_bytes_written = 0, state_bytes_loaded = 0;
  std::vector<std::string> refused;  // the latest refusals ("file: why"), at most 16
};

// The prompt cache's options for this configuration (Auto resolved).
PromptCacheOptions prompt_cache_options(const EngineConfig& c);

struct GenerationParams {
  text::SamplerParams sampling;
  int64_t n_predict = -1;  // -1: until end of generation or a full context
  bool ignore_eos = false;
  std::vector<std::string> stop;
  int id_slot = -1;         // -1: any slot
  int64_t timeout_ms = -1;  // -1: the engine's default; 0: none
  // Constrained decoding (Engine::compile_grammar): every token is picked under its mask, an
  // end-of-generation only where the grammar is complete, and the answer ends when nothing may
  // follow (FinishReason::GrammarComplete). null: unconstrained.
  std::shared_ptr<grammar::CompiledGrammar> grammar;
  // Log-probabilities of every output token and its top_logprobs best alternatives
  // (serve/engine/token_logprobs.h: the raw logits' log-softmax, as llama.cpp reports by default).
  bool logprobs = false;
  int top_logprobs = 0;  // 0..kMaxTopLogprobs
  // Speculation (--spec on): at most this many drafts per step, under the server's --draft-max;
  // 0: no drafts, every step a one-token pass (the answer is the same either way). Without
  // speculation on the server it changes nothing.
  int max_drafts = std::numeric_limits<int>::max();
};
inline constexpr int kMaxTopLogprobs = 20;  // OpenAI's limit

struct EngineRequest {
  // Token ids; the rows of each image hold its placeholder (serve/slot/prompt.h, flatten_prompt).
  std::vector<int32_t> prompt;
  std::vector<int64_t> user_starts;  // first token of each user message (serve::Prompt)
  std::vector<RequestImage> images;  // ascending chunk.begin; needs an engine with a vision model
  GenerationParams params;
};

// All slots busy and the queue full.
class EngineBusy : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Run-time changes (serve API: effective at each slot's next prefill); unset fields stay.
struct ServingChange {
  std::optional<PolicyKind> policy;
  std::optional<int64_t> min_gap;  // divergence
  std::optional<bool> consolidate;
  std::optional<int> ctx_checkpoints;
  std::optional<int64_t> timeout_ms;
};

enum class SlotPhase : uint8_t { Idle, Prefill, Generating };
std::string_view to_string(SlotPhase p);

struct SlotSnapshot {
  int id = 0;
  SlotPhase phase = SlotPhase::Idle;
  uint64_t generation_id = 0;  // the request in the slot (0: none)
  uint64_t requests = 0;       // requests served
  int64_t n_ctx = 0;
  int64_t n_cached = 0;        // tokens the state holds
  int64_t n_generated = 0;     // tokens sampled for the current request
  std::vector<int64_t> checkpoint_positions;
  size_t checkpoint_bytes = 0;
  size_t kv_bytes = 0;         // allocated KV cache
  size_t recurrent_bytes = 0;  // live recurrent state
  size_t speculation_bytes = 0;  // the slot's speculator (MTP cache, verification buffers); 0 when off
  std::string policy;
  bool consolidate = false;
  int ctx_checkpoints = 0;
};

struct EngineSnapshot {
  std::vector<SlotSnapshot> slots;
  int queued = 0;
  int queue_max = 0;
  RequestTotals totals;
  uint64_t submitted = 0, rejected = 0, completed = 0, cancelled = 0, timed_out = 0, failed = 0;
  int64_t sampled_tokens = 0;  // output tokens of all requests
  size_t prompt_cache_bytes = 0, prompt_cache_budget_bytes = 0, prompt_cache_entries = 0;
  GovernorStats governor;
  size_t packed_weight_bytes = 0;  // the weights' 16-row tile-order copies (0 below the AVX-512 VNNI tier)
  PolicyKind policy = PolicyKind::Divergence;
  int64_t min_gap = 0;
  bool consolidate = false;
  int ctx_checkpoints = 0;
  int64_t timeout_ms = 0;
  SpecConfig speculation;
  bool vision = false;  // the engine encodes images
  EncoderCacheStats encoder_cache;
  grammar::GrammarCacheStats grammar_cache;
  int64_t grammar_requests = 0;  // requests with a grammar
  WatchdogStatus watchdog;
  LifecycleStats lifecycle;
  EnergyFigures energy;  // CPU time and package energy since the engine started
};

class Engine {
 public:
  // The model and tokenizer (and the vision model, when given: requests may then carry images)
  // must outlive the engine. Allocates every slot's state now. Throws std::invalid_argument for a
  // configuration it cannot run.
  Engine(HybridModel& model, const text::Tokenizer& tok, EngineConfig cfg, vision::VisionModel* vision = nullptr);
  ~Engine();  // finishes queued and running requests as Cancelled, joins the scheduler
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates (std::invalid_argument saying what is wrong: empty prompt, prompt not fitting the
  // context, token id outside the vocabulary, bad user-message positions, unknown slot, n_predict
  // below -1, images without a vision model or beyond the limit, image chunks that do not match
  // the prompt) and queues the request. Throws EngineBusy when it cannot even wait.
  std::shared_ptr<Generation> submit(EngineRequest req);

  // Called on the scheduler thread when a request finishes (any reason), just before its
  // Generation is marked done: request logs. Set before the first submit.
  using FinishHook = std::function<void(const EngineRequest&, const GenerationResult&, uint64_t id)>;
  void set_finish_hook(FinishHook hook);

  // Validates (std::invalid_argument) and records the change; each slot applies it before its
  // next request (the serve API's switches take effect at the next prefill anyway).
  void reconfigure(const ServingChange& change);

  // The grammar for GBNF text, compiled against this model's vocabulary once and cached by text
  // (thread-safe; the first call builds the vocabulary's token trie). Throws grammar::GrammarError.
  std::shared_ptr<grammar::CompiledGrammar> compile_grammar(std::string_view gbnf);

  // Images: whether requests may carry them, and the preprocessing an image gets under a budget
  // (the engine's flags where the budget says -1; std::logic_error without a vision model). The
  // caller lays out the prompt with image_chunk() and flatten_prompt() (serve/request/request_image.h).
  bool has_vision() const { return vision_ != nullptr; }
  vision::PreprocessParams image_params(const vision::ImageBudget& request_budget = {}) const;

  // Saves the slot's state to a file of the state directory, restores it from one, or erases it
  // (llama.cpp's slot API). Waits until the slot is idle and runs on the scheduler thread.
  // Throws std::invalid_argument (no such slot, no state directory, a bad file name),
  // StateFileError (a file refused: another model or layout, truncated, corrupted; named) or
  // std::runtime_error (the engine is stopping).
  SlotActionResult slot_action(int id, SlotAction action, const std::string& filename = {});

  EngineSnapshot snapshot() const;
  // The watchdog's state alone: never waits for the scheduler (GET /health while it is stuck).
  WatchdogStatus watchdog_status() const { return watchdog_.status(); }
  // The configuration the engine was built with (snapshot() has the current switches).
  const EngineConfig& config() const { return cfg_; }
  const text::Tokenizer& tokenizer() const { return tok_; }
  HybridModel& model() { return model_; }

 private:
  struct Pending;
  struct SlotRun;
  struct Wake;
  struct Live {  // the switchable part of the configuration
    PolicyConfig policy;
    bool consolidate = false;
    int ctx_checkpoints = 0;
    int64_t timeout_ms = 0;
    uint64_t version = 0;
  };

  void loop();
  void expire_queue_locked(std::vector<std::unique_ptr<Pending>>& out, std::vector<FinishReason>& why);
  void assign_locked();
  int pick_slot_locked(const Pending& p) const;
  void step(SlotRun& s);
  void start(SlotRun& s);
  // accepted: the sampler already recorded the token (a speculative step's picker did).
  void emit(SlotRun& s, int32_t token, bool accepted = false);
  void decode_speculative(SlotRun& s);
  // The request's next token from a row of logits (its sampler under its grammar), recorded.
  int32_t pick(SlotRun& s, std::span<const float> logits);
  void finish(SlotRun& s, FinishReason reason, std::string error = {});
  void refresh_locked(SlotRun& s);  // scheduler thread (or the constructor), mu_ held
  void complete(const EngineRequest& req, Generation& gen, GenerationResult&& r);
  void charge(SlotRun& s);  // the running step's CPU time and energy to the slot's request
  void wake();

  // The lifecycle (serve/engine/engine_lifecycle.cpp): slot actions, unloading and reloading, the state
  // directory. All on the scheduler thread.
  struct SlotTask;
  bool run_slot_tasks();  // the queued tasks whose slot is idle; whether any ran
  void fail_slot_tasks(const std::string& why);
  void unload();
  // Before a queued request runs on unloaded weights; false when they could not be reloaded
  // (the queued requests then fail with the reason).
  bool reload();
  void persist();  // the slots into the prompt cache, the cache to the state directory
  void note_refusals(const std::vector<std::string>& refused);  // mu_ held

  // The rows of image i of the request in slot s: from the encoder cache, or encoded now.
  const float* image_rows(SlotRun& s, size_t i);

  HybridModel& model_;
  const text::Tokenizer& tok_;
  const EngineConfig cfg_;
  Watchdog watchdog_;  // before the slots: their backends report to it
  vision::VisionModel* vision_ = nullptr;
  EncoderCache encoder_cache_;
  PromptCache cache_;  // touched by the scheduler thread only (its sizes are mirrored under mu_)
  std::unique_ptr<StateStore> store_;  // --state-dir; scheduler thread (and the constructor, destructor)
  std::deque<std::shared_ptr<SlotTask>> tasks_;  // under mu_
  std::chrono::steady_clock::time_point last_work_;  // scheduler thread: when the last request ended or started
  mutable std::mutex grammar_mu_;
  std::unique_ptr<grammar::GrammarCache> grammars_;  // built at the first grammar request

  mutable std::mutex mu_;
  std::shared_ptr<Wake> wake_;
  bool stop_ = false;
  Live live_;
  std::deque<std::unique_ptr<Pending>> queue_;
  std::vector<std::unique_ptr<SlotRun>> slots_;  // phase/assignment under mu_; the Slot itself: scheduler only
  std::vector<SlotSnapshot> slot_snap_;
  FinishHook finish_hook_;
  uint64_t next_id_ = 1;
  uint64_t use_clock_ = 0;
  int busy_ = 0;             // slots holding a request
  EngineSnapshot counters_;  // totals, counters and prompt-cache sizes
  std::unique_ptr<ComputeMeter> meter_;
  std::thread thread_;
};

}  // namespace tandem::serve
