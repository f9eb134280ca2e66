#include "serve/slot/slot.h"
#include "runtime/elapsed.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "serve/spec/speculator.h"

namespace tandem::serve {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

Slot::Slot(std::unique_ptr<StateBackend> backend, std::unique_ptr<CheckpointPolicy> policy, SlotConfig cfg)
    : backend_(std::move(backend)), policy_(std::move(policy)), cfg_(cfg), planner_(cfg.batch) {
  if (!backend_) throw std::invalid_argument("Slot: a state backend is required");
  if (!policy_) throw std::invalid_argument("Slot: a checkpoint policy is required");
  if (cfg_.ctx_checkpoints < 0)
    throw std::invalid_argument("Slot: ctx_checkpoints must be >= 0, got " + std::to_string(cfg_.ctx_checkpoints));
  cached_.reserve(static_cast<size_t>(backend_->n_ctx()));
  previous_.reserve(static_cast<size_t>(backend_->n_ctx()));
  backend_->reset();
}

Slot::~Slot() = default;

void Slot::set_policy(std::unique_ptr<CheckpointPolicy> policy) {
  if (!policy) throw std::invalid_argument("Slot::set_policy: a policy is required");
  policy_ = std::move(policy);
}

void Slot::set_batch(BatchConfig batch) {
  planner_ = BatchPlanner(batch);  // validates
  cfg_.batch = batch;
}

void Slot::set_consolidate(bool on) {
  BatchConfig b = cfg_.batch;
  b.consolidate = on;
  set_batch(b);
}

void Slot::set_capacity(int n) {
  if (n < 0) throw std::invalid_argument("Slot::set_capacity: expected >= 0, got " + std::to_string(n));
  cfg_.ctx_checkpoints = n;
  while (static_cast<int>(held_.size()) > n) {
    recycle(std::move(held_.front().state));
    held_.erase(held_.begin());
  }
}

size_t Slot::checkpoint_bytes_held() const {
  size_t b = 0;
  for (const Checkpoint& c : held_) b += c.bytes;
  return b;
}

RecurrentCheckpoint Slot::take_buffer() {
  if (spare_.empty()) return {};
  RecurrentCheckpoint cp = std::move(spare_.back());
  spare_.pop_back();
  return cp;
}

void Slot::recycle(RecurrentCheckpoint&& cp) {
  // One spare is enough for the common evict-then-create step and bounds the hidden memory.
  if (spare_.empty() && cp.data.capacity() > 0) spare_.push_back(std::move(cp));
}

void Slot::drop_beyond(int64_t pos) {
  while (!held_.empty() && held_.back().pos > pos) {
    stats_.dropped_positions.push_back(held_.back().pos);
    ++stats_.checkpoints_dropped;
    recycle(std::move(held_.back().state));
    held_.pop_back();
  }
  std::reverse(stats_.dropped_positions.begin(), stats_.dropped_positions.end());
}

void Slot::add_checkpoint(int64_t pos, CheckpointOrigin origin, RecurrentCheckpoint&& state) {
  const int capacity = cfg_.ctx_checkpoints;
  // One copy per position: a restore to R followed by a batch starting at R (a user message
  // at R, say) would otherwise hold the same state twice.
  const bool duplicate = std::any_of(held_.begin(), held_.end(), [&](const Checkpoint& c) { return c.pos == pos; });
  if (capacity <= 0 || duplicate) {
    recycle(std::move(state));
    return;
  }
  if (!held_.empty() && pos < held_.back().pos)
    throw std::logic_error("Slot: checkpoint at " + std::to_string(pos) + " made below the newest at " +
                           std::to_string(held_.back().pos));
  Checkpoint incoming;
  incoming.pos = pos;
  incoming.bytes = backend_->checkpoint_bytes();
  incoming.request = request_;
  incoming.origin = origin;
  const std::vector<size_t> evict = policy_->evictions(held_, incoming, capacity, clock_ + 1);
  for (size_t k = 0; k < evict.size(); ++k)
    if (evict[k] >= held_.size() || (k > 0 && evict[k] <= evict[k - 1]))
      throw std::logic_error("Slot: policy '" + std::string(policy_->name()) +
                             "' returned eviction indices that are not ascending indices of the held list");
  for (size_t k = evict.size(); k-- > 0;) {
    stats_.evicted_positions.push_back(held_[evict[k]].pos);
    ++stats_.checkpoints_evicted;
    recycle(std::move(held_[evict[k]].state));
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(evict[k]));
  }
  std::sort(stats_.evicted_positions.begin(), stats_.evicted_positions.end());
  if (static_cast<int>(held_.size()) >= capacity)
    throw std::logic_error("Slot: policy '" + std::string(policy_->name()) + "' left " +
                           std::to_string(held_.size()) + " checkpoints for a capacity of " + std::to_string(capacity));
  incoming.state = std::move(state);
  incoming.state.pos = pos;
  incoming.last_use = ++clock_;
  held_.push_back(std::move(incoming));
  ++stats_.checkpoints_created;
  stats_.created_positions.push_back(pos);
  stats_.bytes_copied += held_.back().bytes;
}

void Slot::adopt(PromptCacheEntry&& e) {
  backend_->reacquire_memory();
  backend_->load_sequence(*e.state);
  for (Checkpoint& c : held_) recycle(std::move(c.state));
  held_ = std::move(e.checkpoints);
  cached_.assign(e.tokens.begin(), e.tokens.end());
  cached_images_ = std::move(e.images);
}

PromptCacheEntry Slot::export_state() const {
  PromptCacheEntry e;
  e.tokens = cached_;
  e.images = cached_images_;
  e.state = backend_->save_sequence();
  e.checkpoints.assign(held_.begin(), held_.end());  // copies the states
  return e;
}

void Slot::import_state(PromptCacheEntry&& e) {
  if (static_cast<int64_t>(e.tokens.size()) > backend_->n_ctx())
    throw std::length_error("Slot: a saved state of " + std::to_string(e.tokens.size()) +
                            " tokens does not fit the context of " + std::to_string(backend_->n_ctx()));
  if (open_) end_request();
  adopt(std::move(e));
  set_capacity(cfg_.ctx_checkpoints);  // imported checkpoints obey the capacity too (the oldest go)
}

int64_t Slot::erase() {
  if (open_) end_request();
  const auto n = static_cast<int64_t>(cached_.size());
  backend_->reset();
  for (Checkpoint& c : held_) recycle(std::move(c.state));
  held_.clear();
  cached_.clear();
  cached_images_.clear();
  return n;
}

void Slot::release_memory() {
  erase();
  spare_.clear();
  held_.shrink_to_fit();
  backend_->release_memory();
}

void Slot::restore_for(const Prompt& prompt) {
  const int64_t N = prompt.size();
  // llama.cpp's server: go through the prompt cache when the slot is a poor match.
  image_chunks(prompt.images, prompt_chunks_);
  if (cache_ && cache_->should_update(cached_, cached_images_, prompt.tokens, prompt_chunks_)) {
    if (!cached_.empty()) {
      const size_t b = cache_->save(cached_, cached_images_, *backend_, held_);
      stats_.prompt_cache_saved = b > 0;
      stats_.bytes_copied += b;
    }
    if (auto entry = cache_->take_best(cached_, cached_images_, prompt.tokens, prompt_chunks_, held_)) {
      if (static_cast<int64_t>(entry->tokens.size()) > backend_->n_ctx())
        throw std::length_error("Slot: a prompt-cache entry of " + std::to_string(entry->tokens.size()) +
                                " tokens does not fit the context of " + std::to_string(backend_->n_ctx()));
      stats_.bytes_copied += entry->state->bytes();
      adopt(std::move(*entry));
      stats_.prompt_cache_loaded = true;
    }
    cache_->enforce_budget();
  }
  if (cache_) {
    stats_.prompt_cache_bytes = cache_->bytes_used();
    stats_.prompt_cache_budget_bytes = cache_->budget_bytes();
    stats_.prompt_cache_entries = static_cast<int64_t>(cache_->entries());
  }

  const int64_t cached = static_cast<int64_t>(cached_.size());
  cached_before_ = cached;
  previous_.assign(cached_.begin(), cached_.end());  // the restore truncates cached_; the policy may compare
  // An image counts only whole and only as the same image (serve/slot/prompt.h).
  const int64_t L = common_prefix_with_images(cached_, cached_images_, prompt.tokens, prompt_chunks_);
  const int64_t target = std::min(L, N - 1);  // at least one prompt token runs: the first output needs logits
  int64_t R = 0;
  if (target == cached) {
    R = cached;  // continue from the live state
  } else {
    auto it = std::find_if(held_.rbegin(), held_.rend(), [&](const Checkpoint& c) { return c.pos <= target; });
    if (it != held_.rend()) {
      backend_->restore(it->state);
      it->last_use = ++clock_;
      R = it->pos;
      stats_.checkpoints_restored = 1;
      stats_.restored_pos = R;
      stats_.bytes_copied += it->bytes;
    } else {
      backend_->reset();
      R = 0;
    }
  }
  drop_beyond(R);
  cached_.resize(static_cast<size_t>(R));
  while (!cached_images_.empty() && cached_images_.back().begin >= R) cached_images_.pop_back();
  stats_.lcp = L;
  stats_.restore_pos = R;
}

void Slot::check_plan(const Prompt& prompt, const PrefillPlan& plan, int64_t R, int64_t N) const {
  const auto fail = [&](const std::string& what) {
    throw std::logic_error("Slot: policy '" + std::string(policy_->name()) + "' planned " + what);
  };
  int64_t pos = R;
  for (const Pass& p : plan.batches.passes) {
    if (p.begin != pos || p.end <= p.begin || p.size() > cfg_.batch.n_ubatch)
      fail("a pass [" + std::to_string(p.begin) + ", " + std::to_string(p.end) + ") where one of at most n_ubatch = " +
           std::to_string(cfg_.batch.n_ubatch) + " tokens starting at " + std::to_string(pos) + " was expected");
    pos = p.end;
  }
  if (pos != N) fail("passes ending at " + std::to_string(pos) + " for a prompt of " + std::to_string(N));
  // A pass holds text or rows of one image, never both (llama.cpp decodes an image as its own
  // batches), and no state is kept inside an image.
  for (const Pass& p : plan.batches.passes)
    for (const PromptImage& im : prompt.images) {
      const int64_t b = im.chunk.begin, e = im.chunk.end();
      if (p.begin < e && p.end > b && (p.begin < b || p.end > e))
        fail("a pass [" + std::to_string(p.begin) + ", " + std::to_string(p.end) + ") across the edge of the image at [" +
             std::to_string(b) + ", " + std::to_string(e) + ")");
    }
  int64_t prev = -1;
  for (const PlannedSave& s : plan.saves) {
    if (s.pos <= prev || s.pos < R || s.pos > N || (s.when == SaveWhen::InPass && s.pos == R))
      fail("a checkpoint at " + std::to_string(s.pos) + " (expected ascending positions in [R, N] = [" +
           std::to_string(R) + ", " + std::to_string(N) + "])");
    if (const PromptImage* im = prompt.image_at(s.pos); im && s.pos > im->chunk.begin)
      fail("a checkpoint at " + std::to_string(s.pos) + " inside the image at [" + std::to_string(im->chunk.begin) +
           ", " + std::to_string(im->chunk.end()) + ")");
    prev = s.pos;
  }
}

void Slot::run_plan(const Prompt& prompt, const PrefillPlan& plan) {
  const auto& passes = plan.batches.passes;
  size_t si = 0;
  for (size_t pi = 0; pi < passes.size(); ++pi) {
    const Pass& p = passes[pi];
    // A checkpoint at the start of a batch is the state before its first pass runs.
    while (si < plan.saves.size() && plan.saves[si].when == SaveWhen::BeforeBatch && plan.saves[si].pos == p.begin) {
      RecurrentCheckpoint cp = take_buffer();
      backend_->save(cp);
      add_checkpoint(p.begin, plan.saves[si].origin, std::move(cp));
      ++si;
    }
    cuts_.clear();
    cut_origins_.clear();
    while (si < plan.saves.size() && plan.saves[si].when == SaveWhen::InPass && plan.saves[si].pos > p.begin &&
           plan.saves[si].pos <= p.end) {
      cuts_.push_back(plan.saves[si].pos);
      cut_origins_.push_back(plan.saves[si].origin);
      ++si;
    }
    cut_states_.resize(cuts_.size());
    for (auto& cs : cut_states_)
      if (cs.data.capacity() == 0) cs = take_buffer();
    const auto toks = prompt.tokens.subspan(static_cast<size_t>(p.begin), static_cast<size_t>(p.size()));
    const bool last = pi + 1 == passes.size();
    if (const PromptImage* im = prompt.image_at(p.begin)) {
      const ImageChunk& c = im->chunk;
      ImageRowsPiece piece;
      if (im->rows) {
        const auto t0 = Clock::now();
        const float* rows = im->rows();  // the first pass of an image encodes it (or finds it cached)
        stats_.image_rows_ms += ms_since(t0);
        if (!rows) throw std::logic_error("Slot: the image at " + std::to_string(c.begin) + " has no rows");
        piece.rows = rows + (p.begin - c.begin) * backend_->row_width();
      }
      piece.n_rows = p.size();
      piece.nx = c.nx;
      piece.ny = c.ny;
      piece.first_row = p.begin - c.begin;
      piece.placeholder = image_placeholder(c.id);
      backend_->run_image(piece, cuts_, last, cut_states_);
      if (p.begin == c.begin) cached_images_.push_back(c);
      stats_.image_rows_prefilled += p.size();
    } else {
      backend_->run(toks, cuts_, last, cut_states_);
    }
    cached_.insert(cached_.end(), toks.begin(), toks.end());
    for (size_t k = 0; k < cuts_.size(); ++k) add_checkpoint(cuts_[k], cut_origins_[k], std::move(cut_states_[k]));
    cut_states_.clear();
  }
  if (si != plan.saves.size())
    throw std::logic_error("Slot: policy '" + std::string(policy_->name()) + "' planned a checkpoint at " +
                           std::to_string(plan.saves[si].pos) + " that no batch start or pass reaches");
}

PrefillReport Slot::prefill(const Prompt& prompt) {
  end_request();
  validate_prompt(prompt);
  const int64_t N = prompt.size();
  if (N > backend_->n_ctx())
    throw std::length_error("Slot::prefill: a prompt of " + std::to_string(N) + " tokens exceeds the context of " +
                            std::to_string(backend_->n_ctx()));
  // Checked here so that a bad id fails before any state (or the prompt cache) changes.
  // (Negative ids are image rows: validate_prompt checked that each lies in its image.)
  if (const int64_t n_vocab = backend_->n_vocab(); n_vocab > 0)
    for (int64_t i = 0; i < N; ++i)
      if (prompt.tokens[i] >= n_vocab)
        throw std::invalid_argument("Slot::prefill: token id " + std::to_string(prompt.tokens[i]) + " at index " +
                                    std::to_string(i) + " outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
  const auto t0 = Clock::now();
  ++request_;
  // A new request's numbers; the per-step lists keep their memory (reserved when speculation
  // starts): no allocation per speculative step.
  std::vector<int32_t> step_drafted = std::move(stats_.step_drafted), step_accepted = std::move(stats_.step_accepted);
  stats_ = RequestStats{};
  step_drafted.clear();
  step_accepted.clear();
  stats_.step_drafted = std::move(step_drafted);
  stats_.step_accepted = std::move(step_accepted);
  stats_.request = request_;
  stats_.policy = std::string(policy_->name());
  stats_.consolidate = cfg_.batch.consolidate;
  stats_.n_prompt = N;
  user_starts_.assign(prompt.user_starts.begin(), prompt.user_starts.end());
  n_prompt_ = N;
  open_ = true;

  try {
    return run_prefill(prompt, t0);
  } catch (...) {
    // The state and cached tokens stay consistent (both advance pass by pass), but the
    // request is over: decode must not continue a half-prefilled prompt.
    open_ = false;
    throw;
  }
}

PrefillReport Slot::run_prefill(const Prompt& prompt, std::chrono::steady_clock::time_point t0) {
  const int64_t N = prompt.size();
  backend_->reacquire_memory();  // after an unload released it
  restore_for(prompt);
  const int64_t R = stats_.restore_pos;

  PrefillContext ctx;
  ctx.prompt = prompt;
  ctx.lcp = stats_.lcp;
  ctx.restore_pos = R;
  ctx.checkpoints = held_;
  ctx.planner = &planner_;
  ctx.capacity = cfg_.ctx_checkpoints;
  ctx.request = request_;
  ctx.cached_before = cached_before_;
  ctx.previous = previous_;
  PrefillReport report;
  PrefillPlan plan = policy_->plan_prefill(ctx);
  check_plan(prompt, plan, R, N);
  run_plan(prompt, plan);

  stats_.new_tokens = N - R;
  stats_.image_rows = prompt.image_rows();
  stats_.images = static_cast<int64_t>(prompt.images.size());
  stats_.kv_bound = N - stats_.lcp;
  stats_.passes = static_cast<int64_t>(plan.batches.passes.size());
  stats_.pass_sizes = plan.batches.pass_sizes();
  stats_.checkpoints_held = static_cast<int64_t>(held_.size());
  stats_.checkpoint_bytes_held = checkpoint_bytes_held();
  stats_.prefill_ms = ms_since(t0);
  report.logits = backend_->logits();
  report.stats = stats_;
  report.plan = std::move(plan.batches);
  return report;
}

std::span<const float> Slot::decode(int32_t token) {
  if (!open_) throw std::logic_error("Slot::decode: no open request (call prefill first)");
  if (const int64_t n_vocab = backend_->n_vocab(); n_vocab > 0 && (token < 0 || token >= n_vocab))
    throw std::invalid_argument("Slot::decode: token id " + std::to_string(token) + " outside the vocabulary [0, " +
                                std::to_string(n_vocab) + ")");
  if (static_cast<int64_t>(cached_.size()) >= backend_->n_ctx())
    throw std::length_error("Slot::decode: the context of " + std::to_string(backend_->n_ctx()) + " tokens is full");
  const auto t0 = Clock::now();
  backend_->run(std::span<const int32_t>(&token, 1), {}, true, {});
  cached_.push_back(token);
  stats_.decode_ms += ms_since(t0);
  ++stats_.tokens_generated;
  return backend_->logits();
}

Speculator& Slot::enable_speculation(const SpecConfig& cfg) {
  Speculator::validate(cfg);  // before the backend takes it
  backend_->start_speculation(cfg);
  if (spec_) spec_->set_config(cfg);
  else spec_ = std::make_unique<Speculator>(*backend_, cfg);
  // A step emits at least one token: at most n_ctx steps per request.
  stats_.step_drafted.reserve(static_cast<size_t>(backend_->n_ctx()));
  stats_.step_accepted.reserve(static_cast<size_t>(backend_->n_ctx()));
  return *spec_;
}

void Slot::disable_speculation() {
  if (!spec_) return;
  backend_->stop_speculation();
  spec_.reset();
}

size_t Slot::speculation_bytes() const {
  return spec_ ? spec_->bytes() + spec_tokens_.capacity() * sizeof(int32_t) + backend_->speculation_bytes() : 0;
}

std::span<const int32_t> Slot::decode_speculative(int32_t token, TokenPicker& picker, int64_t max_tokens,
                                                  std::span<const int32_t> stop_tokens, DraftConstraint* constraint,
                                                  int max_drafts) {
  if (!open_) throw std::logic_error("Slot::decode_speculative: no open request (call prefill first)");
  if (!spec_) throw std::logic_error("Slot::decode_speculative: speculation is not enabled (enable_speculation)");
  const auto t0 = Clock::now();
  SpecStep step;
  step.tokens.swap(spec_tokens_);
  SpecLimits lim;
  lim.max_tokens = max_tokens;
  lim.stop_tokens = stop_tokens;
  lim.context = cached_;
  lim.constraint = constraint;
  lim.max_drafts = max_drafts;
  try {
    spec_->step(token, picker, step, lim);
  } catch (...) {
    step.tokens.swap(spec_tokens_);
    // A failure after the pass leaves the state past `token` (the speculator rolled back to
    // there): the token list follows, so a later restore or prompt-cache save stays consistent.
    if (backend_->n_past() == static_cast<int64_t>(cached_.size()) + 1) cached_.push_back(token);
    throw;
  }
  spec_tokens_.swap(step.tokens);
  cached_.push_back(token);
  cached_.insert(cached_.end(), spec_tokens_.begin(), spec_tokens_.begin() + step.accepted);
  stats_.decode_ms += ms_since(t0);
  stats_.tokens_generated += 1 + step.accepted;
  stats_.drafts_proposed += step.drafted;
  stats_.drafts_accepted += step.accepted;
  stats_.drafts_forced += step.forced;
  stats_.drafts_mtp += step.drafted - step.forced;
  stats_.drafts_forced_accepted += step.forced_accepted;
  if (step.drafted > step.forced) {  // the step's first draft is the MTP head's (the forced run comes last)
    ++stats_.mtp_first_drafts;
    stats_.mtp_first_accepted += step.accepted > 0 ? 1 : 0;
  }
  stats_.verify_passes += step.verified ? 1 : 0;
  stats_.roll_backs += step.rolled_back ? 1 : 0;
  stats_.step_drafted.push_back(step.drafted);  // every step, verified or not: the dry run replays them in order
  stats_.step_accepted.push_back(step.accepted);
  return spec_tokens_;
}

const RequestStats& Slot::end_request() {
  if (!open_) return stats_;
  open_ = false;
  stats_.ms_per_output_token =
      stats_.tokens_generated > 0 ? stats_.decode_ms / static_cast<double>(stats_.tokens_generated) : 0.0;
  policy_->on_request_end(RequestRecord{cached_, n_prompt_, user_starts_});
  return stats_;
}

}  // namespace tandem::serve
