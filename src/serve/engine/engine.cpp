#include "serve/engine/engine.h"
#include "serve/engine/engine_parts.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <limits>
#include <utility>

#include "serve/backend/model_backend.h"
#include "serve/lifecycle/watched_backend.h"
#include "serve/meter/flop_model.h"
#include "vision/vision_model.h"

namespace tandem::serve {

PromptCacheOptions prompt_cache_options(const EngineConfig& c) {
  PromptCacheOptions o;
  o.budget_mib = c.cache_ram_mib;
  o.select = c.cache_select;
  if (o.select == CacheSelect::Auto)
    o.select = c.policy.kind == PolicyKind::Divergence ? CacheSelect::Restorable : CacheSelect::Fractions;
  return o;
}

namespace {

// What the configuration means for this model, decided once: Marconi scores FLOPs saved with this
// model's coefficients; without an MTP block speculation drafts only what a request's grammar
// forces (requests without one then decode token by token); a model without a replay log
// (HybridModel::keeps_replay_log) verifies in copy mode, rolling back from rollback states.
EngineConfig for_model(EngineConfig cfg, const HybridModel& model) {
  cfg.policy.marconi.flops = FlopModel::for_model(model.shape());
  if (!model.has_mtp()) cfg.speculation.mtp_drafts = false;
  if (!model.keeps_replay_log()) cfg.speculation.replay_rollback = false;
  return cfg;
}

template <typename F>
struct ScopeExit {
  F f;
  ~ScopeExit() { f(); }
};
template <typename F>
ScopeExit(F) -> ScopeExit<F>;  // clang before 17 deduces no aggregate's template arguments by itself
}  // namespace

std::string_view to_string(SlotPhase p) {
  switch (p) {
    case SlotPhase::Idle: return "idle";
    case SlotPhase::Prefill: return "prefill";
    case SlotPhase::Generating: return "generating";
  }
  return "idle";
}

Engine::Engine(HybridModel& model, const text::Tokenizer& tok, EngineConfig cfg, vision::VisionModel* vision)
    : model_(model), tok_(tok), cfg_(for_model(std::move(cfg), model)), watchdog_(cfg_.watchdog), vision_(vision),
      encoder_cache_(cfg_.images.encoder_cache_mib << 20),
      cache_(prompt_cache_options(cfg_)), wake_(std::make_shared<Wake>()) {
  if (cfg_.n_parallel < 1) throw std::invalid_argument("parallel: expected >= 1 slot, got " + std::to_string(cfg_.n_parallel));
  if (cfg_.n_ctx < 2) throw std::invalid_argument("ctx-size: expected >= 2 tokens per slot, got " + std::to_string(cfg_.n_ctx));
  if (cfg_.queue_max < 0) throw std::invalid_argument("queue: expected >= 0, got " + std::to_string(cfg_.queue_max));
  if (cfg_.timeout_ms < 0 || cfg_.timeout_ms > kMaxTimeoutMs)
    throw std::invalid_argument("timeout-ms: expected a value in [0, " + std::to_string(kMaxTimeoutMs) + "], got " +
                                std::to_string(cfg_.timeout_ms));
  if (cfg_.images.max_per_request < 0)
    throw std::invalid_argument("max-images: expected >= 0, got " + std::to_string(cfg_.images.max_per_request));
  if (vision_) {
    vision::validate(image_params());  // the flags' budget
    if (!model_.accepts_image_rows())
      throw std::invalid_argument("a " + model_.architecture() + " model takes no image rows: serve it without --mmproj");
    if (vision_->hparams().out_dim != model_.shape().n_embd)
      throw std::invalid_argument("the vision model's rows have " + std::to_string(vision_->hparams().out_dim) +
                                  " floats, the text model's width is " + std::to_string(model_.shape().n_embd));
  }
  if (tok_.n_vocab() > model_.shape().n_vocab)
    throw std::invalid_argument("the tokenizer has " + std::to_string(tok_.n_vocab()) + " tokens, the model's embedding " +
                                std::to_string(model_.shape().n_vocab) + " rows");
  live_.policy = cfg_.policy;
  live_.consolidate = cfg_.slot.batch.consolidate;
  live_.ctx_checkpoints = cfg_.slot.ctx_checkpoints;
  live_.timeout_ms = cfg_.timeout_ms;
  for (int i = 0; i < cfg_.n_parallel; ++i) {
    auto s = std::make_unique<SlotRun>();
    s->id = i;
    auto backend = std::make_unique<ModelBackend>(model_, cfg_.n_ctx);
    // The same prompt-pass numbers with speculation on and off (ModelBackend::set_prompt_tail).
    backend->set_prompt_tail(cfg_.speculation.draft_max);
    std::unique_ptr<StateBackend> watched = std::move(backend);
    if (watchdog_.enabled()) watched = std::make_unique<WatchedBackend>(std::move(watched), watchdog_);
    s->slot = std::make_unique<Slot>(std::move(watched), make_policy(cfg_.policy), cfg_.slot);
    if (cfg_.cache_ram_mib > 0) s->slot->set_prompt_cache(&cache_);
    if (cfg_.speculation.enabled) s->slot->enable_speculation(cfg_.speculation);
    slots_.push_back(std::move(s));
    slot_snap_.emplace_back();
    refresh_locked(*slots_.back());
  }
  counters_.prompt_cache_budget_bytes = cfg_.cache_ram_mib > 0 ? cache_.budget_bytes() : 0;
  if (cfg_.unload_idle_ms < 0)
    throw std::invalid_argument("unload-idle-s: expected >= 0, got " + std::to_string(cfg_.unload_idle_ms / 1000.0));
  if (!cfg_.state_dir.empty()) {
    if (cfg_.cache_ram_mib == 0)
      throw std::invalid_argument("--state-dir keeps the prompt cache's entries on disk: it needs a prompt cache "
                                  "(--cache-ram > 0)");
    store_ = std::make_unique<StateStore>(cfg_.state_dir,
                                          StateFileIdentity{model_.fingerprint(), slots_[0]->slot->backend().state_layout()});
    const StateDirReport rep = store_->load_cache(cache_, slots_[0]->slot->backend());
    LifecycleStats& L = counters_.lifecycle;
    L.state_dir = cfg_.state_dir;
    L.state_files_loaded = static_cast<uint64_t>(rep.files);
    L.state_bytes_loaded = rep.bytes;
    note_refusals(rep.refused);
    counters_.prompt_cache_bytes = cache_.bytes_used();
    counters_.prompt_cache_entries = cache_.entries();
  }
  last_work_ = Clock::now();
  ThreadCpuClock compute(model_.pool().worker_cpu_clocks());
  if (vision_) compute.add(vision_->pool().worker_cpu_clocks());
  meter_ = std::make_unique<ComputeMeter>(std::move(compute), cfg_.powercap_root);
  thread_ = std::thread([this] { loop(); });
  clockid_t scheduler{};
  if (pthread_getcpuclockid(thread_.native_handle(), &scheduler) == 0) meter_->add_thread(scheduler);
}

Engine::~Engine() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  // The slots and the prompt cache to the state directory: a restarted server restores them.
  if (store_) {
    try {
      persist();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tandem: could not write the states to %s: %s\n", cfg_.state_dir.c_str(), e.what());
    }
  }
}

void Engine::wake() { wake_->signal(); }

void Engine::set_finish_hook(FinishHook hook) {
  std::lock_guard lk(mu_);
  finish_hook_ = std::move(hook);
}

std::shared_ptr<Generation> Engine::submit(EngineRequest req) {
  const int64_t N = static_cast<int64_t>(req.prompt.size());
  if (N == 0) throw std::invalid_argument("the prompt is empty");
  if (N >= cfg_.n_ctx)
    throw std::invalid_argument("the prompt has " + std::to_string(N) + " tokens; a slot's context is " +
                                std::to_string(cfg_.n_ctx) + " tokens (the prompt must leave room for output)");
  if (!req.images.empty() && !vision_)
    throw std::invalid_argument("the request has images but this server has no vision model (start it with --mmproj)");
  if (static_cast<int64_t>(req.images.size()) > cfg_.images.max_per_request)
    throw std::invalid_argument("the request has " + std::to_string(req.images.size()) + " images; at most " +
                                std::to_string(cfg_.images.max_per_request) + " are accepted (--max-images)");
  std::vector<PromptImage> images;
  for (const RequestImage& im : req.images) {
    if (!im.pixels) throw std::invalid_argument("an image of the request has no pixels");
    images.push_back(PromptImage{im.chunk, nullptr});
  }
  // Placeholders only inside images (validate_prompt), ids below the vocabulary everywhere else.
  validate_prompt(Prompt{req.prompt, req.user_starts, images});
  const int32_t n_vocab = tok_.n_vocab();
  for (size_t i = 0; i < req.prompt.size(); ++i)
    if (req.prompt[i] >= n_vocab)
      throw std::invalid_argument("token id " + std::to_string(req.prompt[i]) + " at index " + std::to_string(i) +
                                  " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
  const GenerationParams& gp = req.params;
  if (gp.id_slot < -1 || gp.id_slot >= cfg_.n_parallel)
    throw std::invalid_argument("id_slot " + std::to_string(gp.id_slot) + " does not exist (slots 0.." +
                                std::to_string(cfg_.n_parallel - 1) + ", or -1 for any)");
  if (gp.n_predict < -1) throw std::invalid_argument("n_predict must be >= -1, got " + std::to_string(gp.n_predict));
  if (gp.top_logprobs < 0 || gp.top_logprobs > kMaxTopLogprobs)
    throw std::invalid_argument("top_logprobs must be in [0, " + std::to_string(kMaxTopLogprobs) + "], got " +
                                std::to_string(gp.top_logprobs));
  if (gp.timeout_ms < -1 || gp.timeout_ms > kMaxTimeoutMs)
    throw std::invalid_argument("timeout_ms must be in [0, " + std::to_string(kMaxTimeoutMs) + "], got " +
                                std::to_string(gp.timeout_ms));

  if (auto why = watchdog_.refusal()) throw EngineBusy(*why);
  auto p = std::make_unique<Pending>();
  std::shared_ptr<Generation> gen;
  {
    std::lock_guard lk(mu_);
    if (stop_) throw EngineBusy("the server is shutting down");
    if (busy_ + static_cast<int>(queue_.size()) >= cfg_.n_parallel + cfg_.queue_max) {
      ++counters_.rejected;
      throw EngineBusy("all " + std::to_string(cfg_.n_parallel) + " slots are busy and " +
                       std::to_string(queue_.size()) + " requests are already waiting (--queue " +
                       std::to_string(cfg_.queue_max) + ")");
    }
    gen = std::make_shared<Generation>(next_id_++);
    const int64_t timeout = gp.timeout_ms >= 0 ? gp.timeout_ms : live_.timeout_ms;
    if (timeout > 0) p->deadline = gen->arrival() + std::chrono::milliseconds(timeout);
    p->req = std::move(req);
    p->gen = gen;
    ++counters_.submitted;
    queue_.push_back(std::move(p));
  }
  gen->set_cancel_hook([w = wake_] { w->signal(); });
  watchdog_.track(gen);
  wake();
  return gen;
}

void Engine::reconfigure(const ServingChange& c) {
  if (c.min_gap && *c.min_gap < 0) throw std::invalid_argument("min_gap must be >= 0, got " + std::to_string(*c.min_gap));
  if (c.ctx_checkpoints && *c.ctx_checkpoints < 0)
    throw std::invalid_argument("ctx_checkpoints must be >= 0, got " + std::to_string(*c.ctx_checkpoints));
  if (c.timeout_ms && (*c.timeout_ms < 0 || *c.timeout_ms > kMaxTimeoutMs))
    throw std::invalid_argument("timeout_ms must be in [0, " + std::to_string(kMaxTimeoutMs) + "], got " +
                                std::to_string(*c.timeout_ms));
  {
    std::lock_guard lk(mu_);
    if (c.policy) live_.policy.kind = *c.policy;
    if (c.min_gap) live_.policy.divergence.min_gap = *c.min_gap;
    if (c.consolidate) live_.consolidate = *c.consolidate;
    if (c.ctx_checkpoints) live_.ctx_checkpoints = *c.ctx_checkpoints;
    if (c.timeout_ms) live_.timeout_ms = *c.timeout_ms;
    ++live_.version;
  }
  wake();
}

std::shared_ptr<grammar::CompiledGrammar> Engine::compile_grammar(std::string_view gbnf) {
  grammar::GrammarCache* cache = nullptr;
  {
    std::lock_guard lk(grammar_mu_);
    if (!grammars_)
      grammars_ = std::make_unique<grammar::GrammarCache>(std::make_shared<grammar::VocabIndex>(tok_),
                                                          cfg_.grammar_cache_mib << 20);
    cache = grammars_.get();
  }
  return cache->get(gbnf);  // the cache locks itself; compiling does not hold grammar_mu_
}

vision::PreprocessParams Engine::image_params(const vision::ImageBudget& request_budget) const {
  if (!vision_) throw std::logic_error("Engine::image_params: no vision model (start the server with --mmproj)");
  vision::ImageBudget b = cfg_.images.budget;
  if (request_budget.min_tokens > 0) b.min_tokens = request_budget.min_tokens;
  if (request_budget.max_tokens > 0) b.max_tokens = request_budget.max_tokens;
  return vision_->preprocess_params(b);
}

const float* Engine::image_rows(SlotRun& s, size_t i) {
  ImageRows& held = s.image_rows[i];
  if (held) return held->data();
  const RequestImage& im = s.p->req.images[i];
  if (cfg_.images.encoder_cache_mib > 0) held = encoder_cache_.find(im.chunk.id);
  if (held) {
    ++s.encoder_cache_hits;
    return held->data();
  }
  // Preprocessed and encoded here, on the scheduler thread, when the first pass needs the rows.
  const auto beat = watchdog_.unit(WorkKind::Encode, static_cast<int64_t>(im.chunk.nx) * im.chunk.ny);
  const auto t0 = Clock::now();
  auto rows = std::make_shared<std::vector<float>>();
  const vision::PreprocessedImage pre = vision::normalize(*im.pixels, image_params(im.budget));  // resized already
  if (pre.nx() != im.chunk.nx || pre.ny() != im.chunk.ny)
    throw std::logic_error("image " + std::to_string(i) + ": preprocessed to " + std::to_string(pre.nx()) + " x " +
                           std::to_string(pre.ny()) + " rows where the prompt has " + std::to_string(im.chunk.nx) +
                           " x " + std::to_string(im.chunk.ny));
  vision_->encode(pre, *rows);
  s.encoder_ms += ms_between(t0, Clock::now());
  ++s.images_encoded;
  held = std::move(rows);
  if (cfg_.images.encoder_cache_mib > 0) encoder_cache_.insert(im.chunk.id, held);
  return held->data();
}

EngineSnapshot Engine::snapshot() const {
  EngineSnapshot s;
  {
    std::lock_guard lk(grammar_mu_);
    if (grammars_) s.grammar_cache = grammars_->stats();
    else s.grammar_cache.budget_bytes = cfg_.grammar_cache_mib << 20;
  }
  {
    std::lock_guard lk(mu_);
    const grammar::GrammarCacheStats gc = s.grammar_cache;
    s = counters_;
    s.grammar_cache = gc;
    s.slots = slot_snap_;
    s.queued = static_cast<int>(queue_.size());
    s.queue_max = cfg_.queue_max;
    s.policy = live_.policy.kind;
    s.min_gap = live_.policy.divergence.min_gap;
    s.consolidate = live_.consolidate;
    s.ctx_checkpoints = live_.ctx_checkpoints;
    s.timeout_ms = live_.timeout_ms;
    s.speculation = cfg_.speculation;
  }
  s.vision = vision_ != nullptr;
  s.encoder_cache = encoder_cache_.stats();
  s.encoder_cache.budget_bytes = vision_ ? cfg_.images.encoder_cache_mib << 20 : 0;
  s.governor = model_.governor().stats();
  s.energy = meter_->figures();
  s.packed_weight_bytes = model_.packed_weight_bytes();
  s.watchdog = watchdog_.status();
  return s;
}

void Engine::refresh_locked(SlotRun& s) {
  SlotSnapshot& o = slot_snap_[static_cast<size_t>(s.id)];
  Slot& sl = *s.slot;
  o.id = s.id;
  o.phase = s.phase;
  o.generation_id = s.p ? s.p->gen->id() : 0;
  o.requests = sl.requests();
  o.n_ctx = cfg_.n_ctx;
  o.n_cached = static_cast<int64_t>(sl.cached_tokens().size());
  o.n_generated = static_cast<int64_t>(s.result.output.size());
  o.checkpoint_positions.clear();
  for (const Checkpoint& c : sl.checkpoints()) o.checkpoint_positions.push_back(c.pos);
  o.checkpoint_bytes = sl.checkpoint_bytes_held();
  o.kv_bytes = sl.backend().kv_bytes();
  o.recurrent_bytes = sl.backend().recurrent_bytes();
  o.speculation_bytes = sl.speculation_bytes();
  o.policy = std::string(sl.policy().name());
  o.consolidate = sl.config().batch.consolidate;
  o.ctx_checkpoints = sl.config().ctx_checkpoints;
}

void Engine::expire_queue_locked(std::vector<std::unique_ptr<Pending>>& out, std::vector<FinishReason>& why) {
  const auto now = Clock::now();
  for (auto it = queue_.begin(); it != queue_.end();) {
    Pending& p = **it;
    const bool cancelled = p.gen->cancel_requested() || stop_;
    const bool late = p.deadline && now >= *p.deadline;
    if (cancelled || late) {
      why.push_back(cancelled ? FinishReason::Cancelled : FinishReason::Timeout);
      out.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
}

int Engine::pick_slot_locked(const Pending& p) const {
  // A slot with an action waiting (slot_action) runs it before any new request.
  const auto free = [&](const SlotRun& s) {
    return s.phase == SlotPhase::Idle &&
           std::none_of(tasks_.begin(), tasks_.end(), [&](const auto& t) { return t->id == s.id; });
  };
  const int pinned = p.req.params.id_slot;
  if (pinned >= 0) return free(*slots_[static_cast<size_t>(pinned)]) ? pinned : -1;
  int best = -1;
  int64_t best_lcp = -1;
  uint64_t best_use = 0;
  for (const auto& s : slots_) {
    if (!free(*s)) continue;
    const int64_t lcp = common_prefix(s->slot->cached_tokens(), p.req.prompt);  // placeholders: close enough to rank
    if (lcp > best_lcp || (lcp == best_lcp && s->last_used < best_use)) {
      best = s->id;
      best_lcp = lcp;
      best_use = s->last_used;
    }
  }
  return best;
}

void Engine::assign_locked() {
  for (auto it = queue_.begin(); it != queue_.end() && busy_ < cfg_.n_parallel;) {
    const int id = pick_slot_locked(**it);
    if (id < 0) {
      ++it;
      continue;
    }
    SlotRun& s = *slots_[static_cast<size_t>(id)];
    s.p = std::move(*it);
    it = queue_.erase(it);
    s.phase = SlotPhase::Prefill;
    s.assigned = Clock::now();
    s.prefilled = false;
    s.result = GenerationResult{};
    s.result.slot = id;
    s.result.started = true;
    s.result.queue_ms = ms_between(s.p->gen->arrival(), s.assigned);
    s.result.cold_start_ms = s.p->cold_start_ms;
    if (s.applied_version != live_.version) {
      s.apply = live_;
      s.applied_version = live_.version;
    }
    ++busy_;
    s.p->gen->mark_started(id);
    refresh_locked(s);
  }
}

void Engine::loop() {
  size_t rr = 0;  // round-robin start
  for (;;) {
    std::vector<std::unique_ptr<Pending>> expired;
    std::vector<FinishReason> why;
    bool idle = false;
    bool stopping = false;
    bool reload_first = false;
    bool tasks = false;
    std::optional<Clock::time_point> next_deadline;
    {
      std::lock_guard lk(mu_);
      stopping = stop_;
      expire_queue_locked(expired, why);
      // Queued requests on unloaded weights: reload first (outside the lock), then assign.
      reload_first = !stopping && !queue_.empty() && !model_.weights_loaded();
      tasks = !tasks_.empty();
      if (!stopping && !reload_first) assign_locked();  // not to a slot with an action waiting
      idle = busy_ == 0;
      for (const auto& p : queue_)
        if (p->deadline && (!next_deadline || *p->deadline < *next_deadline)) next_deadline = p->deadline;
    }
    for (size_t i = 0; i < expired.size(); ++i) {
      GenerationResult r;
      r.reason = why[i];
      r.queue_ms = ms_between(expired[i]->gen->arrival(), Clock::now());
      complete(expired[i]->req, *expired[i]->gen, std::move(r));
    }
    if (stopping) {
      for (auto& s : slots_)
        if (s->phase != SlotPhase::Idle) finish(*s, FinishReason::Cancelled);
      fail_slot_tasks("the server is stopping");
      return;
    }
    if (tasks) {
      if (run_slot_tasks()) continue;  // some ran: look at the queue again
    }
    if (reload_first) {
      const auto beat = watchdog_.unit(WorkKind::Reload, 0);  // a hung reload would hold the queue forever
      reload();
      continue;
    }
    if (idle) {
      // Unloading after --unload-idle-s without work (the weights go; the next request reloads).
      std::optional<Clock::time_point> unload_at;
      if (cfg_.unload_idle_ms > 0 && model_.weights_loaded())
        unload_at = last_work_ + std::chrono::milliseconds(cfg_.unload_idle_ms);
      if (unload_at && Clock::now() >= *unload_at) {
        bool still_idle;
        {
          std::lock_guard lk(mu_);
          still_idle = busy_ == 0 && queue_.empty() && tasks_.empty() && !stop_;
        }
        if (still_idle) unload();
        continue;
      }
      std::optional<Clock::time_point> until = next_deadline;
      if (unload_at && (!until || *unload_at < *until)) until = unload_at;
      std::unique_lock lk(wake_->m);
      const auto pred = [&] { return wake_->flag; };
      if (until) wake_->cv.wait_until(lk, *until, pred);
      else wake_->cv.wait(lk, pred);
      wake_->flag = false;
      continue;
    }
    // One step for every active slot, starting one further each round.
    const size_t n = slots_.size();
    for (size_t k = 0; k < n; ++k) {
      SlotRun& s = *slots_[(rr + k) % n];
      if (s.phase == SlotPhase::Idle) continue;
      const auto beat = watchdog_.step(!s.prefilled, s.id, s.p->gen->id());  // the watchdog's heartbeat
      step(s);
    }
    rr = (rr + 1) % n;
    last_work_ = Clock::now();
  }
}

void Engine::charge(SlotRun& s) {
  if (!s.step_from) return;
  s.spent.add(*s.step_from, meter_->read());
  s.step_from.reset();
}

void Engine::step(SlotRun& s) {
  s.step_from = meter_->read();
  const ScopeExit charged{[&] { charge(s); }};  // finish() charges first when the step ends the request
  if (s.p->gen->cancel_requested()) return finish(s, FinishReason::Cancelled);
  if (s.p->deadline && Clock::now() >= *s.p->deadline) return finish(s, FinishReason::Timeout);
  try {
    if (!s.prefilled) {
      start(s);
    } else if (s.slot->speculator()) {
      decode_speculative(s);
    } else {
      const std::span<const float> logits = s.slot->decode(s.last);
      emit(s, pick(s, logits), /*accepted=*/true);
    }
  } catch (const grammar::GrammarLimitError& e) {
    // The grammar's states and masks only grow: the next request with this text compiles anew.
    if (s.matcher) {
      std::lock_guard lk(grammar_mu_);
      if (grammars_) grammars_->invalidate(s.matcher->grammar().source());
    }
    if (s.p) finish(s, FinishReason::Error, e.what());
    return;
  } catch (const std::exception& e) {
    if (s.p) finish(s, FinishReason::Error, e.what());
    return;
  }
  if (s.phase != SlotPhase::Idle) {
    std::lock_guard lk(mu_);
    refresh_locked(s);
  }
}

void Engine::start(SlotRun& s) {
  Slot& slot = *s.slot;
  if (s.apply) {
    const Live& c = *s.apply;
    slot.set_policy(make_policy(c.policy));
    slot.set_consolidate(c.consolidate);
    slot.set_capacity(c.ctx_checkpoints);
    s.apply.reset();
  }
  const EngineRequest& req = s.p->req;
  s.sampler.emplace(req.params.sampling);
  for (int32_t id : req.prompt)
    if (id >= 0) s.sampler->accept(id);  // image rows are no tokens (penalties see text only)
  s.prompt_images.clear();
  s.image_rows.assign(req.images.size(), nullptr);
  s.images_encoded = s.encoder_cache_hits = 0;
  s.encoder_ms = 0;
  for (size_t i = 0; i < req.images.size(); ++i)
    s.prompt_images.push_back(PromptImage{req.images[i].chunk, [this, &s, i] { return image_rows(s, i); }});
  if (req.params.grammar) {
    s.matcher.emplace(req.params.grammar);
    s.grammar_drafts.emplace(*s.matcher);
    s.emitted_state = s.matcher->state();
    std::lock_guard lk(mu_);
    ++counters_.grammar_requests;
  }
  s.picker.emplace(*s.sampler, s.matcher ? &*s.matcher : nullptr);
  if (req.params.logprobs) s.picker->record_logprobs(req.params.top_logprobs, tok_.n_vocab());
  s.decoder.emplace(tok_, /*render_special=*/false);
  s.stops.emplace(req.params.stop);
  s.raw_text.clear();
  const PrefillReport rep = slot.prefill(Prompt{req.prompt, req.user_starts, s.prompt_images});
  s.prefilled = true;
  s.phase = SlotPhase::Generating;
  s.prefill_end = Clock::now();
  s.last_token = s.prefill_end;
  if (req.params.n_predict == 0) return finish(s, FinishReason::Length);
  emit(s, pick(s, rep.logits), /*accepted=*/true);
}

int32_t Engine::pick(SlotRun& s, std::span<const float> logits) {
  const int32_t t = s.picker->pick(logits);
  s.picker->accept(t);
  return t;
}

// One speculative step: the last token plus up to draft_max drafts in one verified pass; the
// accepted drafts and the next token are emitted in order (the request may end in between).
void Engine::decode_speculative(SlotRun& s) {
  const GenerationParams& gp = s.p->req.params;
  int64_t left = std::numeric_limits<int64_t>::max();
  if (gp.n_predict > 0) left = gp.n_predict - static_cast<int64_t>(s.result.output.size());
  // Under a grammar an end-of-generation token ends the answer even with ignore_eos: nothing
  // can follow it (emit ends the request on the finished grammar).
  const std::span<const int32_t> stops = gp.ignore_eos && !s.matcher
                                             ? std::span<const int32_t>()
                                             : std::span<const int32_t>(tok_.vocab().eog_ids());
  // Every verified row is drawn exactly as a plain decode step would draw it (same picker: same
  // distribution, random stream, penalties and grammar mask).
  const std::span<const int32_t> toks = s.slot->decode_speculative(
      s.last, *s.picker, std::max<int64_t>(1, left), stops, s.grammar_drafts ? &*s.grammar_drafts : nullptr,
      gp.max_drafts);
  s.spec_tokens.assign(toks.begin(), toks.end());
  for (int32_t t : s.spec_tokens) {
    emit(s, t, /*accepted=*/true);
    if (s.phase == SlotPhase::Idle) break;
  }
}

void Engine::emit(SlotRun& s, int32_t token, bool accepted) {
  const GenerationParams& gp = s.p->req.params;
  Generation& gen = *s.p->gen;
  if (!accepted) s.sampler->accept(token);
  // The picker recorded one entry per pick, in the order tokens are emitted.
  const TokenLogprob* lp = nullptr;
  if (gp.logprobs && s.result.output.size() < s.picker->logprobs().size()) {
    s.result.logprobs.push_back(s.picker->take_logprob(s.result.output.size()));
    lp = &s.result.logprobs.back();
  }
  s.result.output.push_back(token);
  s.last = token;
  s.last_token = Clock::now();
  if (!gp.ignore_eos && tok_.vocab().is_eog(token)) {
    gen.push({}, token, lp);
    return finish(s, FinishReason::EndOfGeneration);
  }
  const std::string_view decoded = s.decoder->push(token);
  s.raw_text.append(decoded);
  const std::string_view shown = s.stops->push(decoded);
  s.result.text.append(shown);
  gen.push(shown, token, lp);
  if (s.stops->stopped()) return finish(s, FinishReason::StopString);
  if (s.matcher) {
    grammar::CompiledGrammar& g = s.matcher->grammar();
    s.emitted_state = g.advance(s.emitted_state, token);  // memoized: a few table reads
    if (s.emitted_state != grammar::kDeadState && g.complete(s.emitted_state))
      return finish(s, FinishReason::GrammarComplete);
  }
  if (gp.n_predict > 0 && static_cast<int64_t>(s.result.output.size()) >= gp.n_predict)
    return finish(s, FinishReason::Length);
  if (static_cast<int64_t>(s.slot->cached_tokens().size()) >= cfg_.n_ctx) return finish(s, FinishReason::ContextFull);
}

void Engine::finish(SlotRun& s, FinishReason reason, std::string error) {
  GenerationResult r = std::move(s.result);
  r.reason = reason;
  r.error = std::move(error);
  Generation& gen = *s.p->gen;
  if (s.prefilled && reason != FinishReason::StopString && reason != FinishReason::EndOfGeneration && s.decoder) {
    // What the stream decoder and the stop strings still hold back.
    const std::string_view held = s.decoder->flush();
    s.raw_text.append(held);
    std::string tail(s.stops->push(held));
    if (!s.stops->stopped()) tail.append(s.stops->flush());
    r.text.append(tail);
    if (!tail.empty()) gen.push(tail, -1);
  }
  if (reason == FinishReason::StopString) {
    size_t best = std::string::npos;
    for (const std::string& w : s.p->req.params.stop) {
      const size_t at = w.empty() ? std::string::npos : s.raw_text.find(w);
      if (at < best) {
        best = at;
        r.stop_word = w;
      }
    }
  }
  if (s.prefilled && !r.output.empty()) {
    const std::vector<int32_t>& cached = s.slot->cached_tokens();
    const size_t last_at = s.p->req.prompt.size() + r.output.size() - 1;  // where the last output token would go
    if (cached.size() > last_at) r.fed_past_output.assign(cached.begin() + static_cast<std::ptrdiff_t>(last_at), cached.end());
  }
  if (s.slot->request_open()) r.stats = s.slot->end_request();
  else if (s.prefilled) r.stats = s.slot->stats();
  if (s.prefilled && !r.output.empty()) r.predicted_ms = ms_between(s.prefill_end, s.last_token);
  if (s.picker) r.stats.grammar_ms += s.picker->grammar_ms();
  r.stats.images_encoded = s.images_encoded;
  r.stats.encoder_cache_hits = s.encoder_cache_hits;
  r.stats.encoder_ms = s.encoder_ms;
  charge(s);
  s.spent.to_stats(r.stats);
  s.spent = RequestSpend{};
  s.prompt_images.clear();
  s.image_rows.clear();  // the rows stay only in the encoder cache
  std::unique_ptr<Pending> p = std::move(s.p);
  s.grammar_drafts.reset();
  s.picker.reset();
  s.matcher.reset();
  s.sampler.reset();
  s.decoder.reset();
  s.stops.reset();
  s.raw_text.clear();
  {
    std::lock_guard lk(mu_);
    s.phase = SlotPhase::Idle;
    s.last_used = ++use_clock_;
    --busy_;
    if (s.prefilled) counters_.totals.add(r.stats);
    counters_.prompt_cache_bytes = cache_.bytes_used();
    counters_.prompt_cache_entries = cache_.entries();
    refresh_locked(s);
  }
  s.prefilled = false;
  s.result = GenerationResult{};
  complete(p->req, gen, std::move(r));
}

void Engine::complete(const EngineRequest& req, Generation& gen, GenerationResult&& r) {
  FinishHook hook;
  {
    std::lock_guard lk(mu_);
    switch (r.reason) {
      case FinishReason::Cancelled: ++counters_.cancelled; break;
      case FinishReason::Timeout: ++counters_.timed_out; break;
      case FinishReason::Error: ++counters_.failed; break;
      default: ++counters_.completed; break;
    }
    counters_.sampled_tokens += static_cast<int64_t>(r.output.size());
    hook = finish_hook_;
  }
  if (hook) {
    try {
      hook(req, r, gen.id());
    } catch (...) {
      // A failing log must not take the scheduler down.
    }
  }
  gen.finish(std::move(r));
}

}  // namespace tandem::serve
