// The engine's lifecycle, beside the requests it serves (engine.cpp): llama.cpp's slot actions,
// unloading the weights after --unload-idle-s and reloading them for the next request, and the
// state directory that lets a restarted server restore its prefixes instead of recomputing them
// (docs/serving.md "States on disk", "Unloading"). Everything here runs on the scheduler thread,
// between steps, so no request ever sees a half-saved slot or unloaded weights.
#include <cstdio>
#include <filesystem>

#include "model/qwen35/qwen35_model.h"
#include "serve/engine/engine.h"
#include "serve/engine/engine_parts.h"
#include "serve/lifecycle/state_file.h"

namespace tandem::serve {

SlotActionResult Engine::slot_action(int id, SlotAction action, const std::string& filename) {
  if (id < 0 || id >= cfg_.n_parallel)
    throw std::invalid_argument("id_slot " + std::to_string(id) + " does not exist (slots 0.." +
                                std::to_string(cfg_.n_parallel - 1) + ")");
  if (action != SlotAction::Erase) {
    if (!store_)
      throw std::invalid_argument("slot save and restore need a state directory: start the server with --state-dir DIR "
                                  "(llama.cpp's --slot-save-path)");
    store_->client_file(filename);  // a bad name is refused here, before queueing
  }
  auto task = std::make_shared<SlotTask>();
  task->id = id;
  task->action = action;
  task->filename = filename;
  std::future<SlotActionResult> done = task->done.get_future();
  {
    std::lock_guard lk(mu_);
    if (stop_) throw std::runtime_error("the server is stopping");
    tasks_.push_back(task);
  }
  wake();
  return done.get();
}

bool Engine::run_slot_tasks() {
  std::vector<std::shared_ptr<SlotTask>> ready;
  {
    std::lock_guard lk(mu_);
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (slots_[static_cast<size_t>((*it)->id)]->phase == SlotPhase::Idle) {
        ready.push_back(std::move(*it));
        it = tasks_.erase(it);
      } else {
        ++it;
      }
    }
  }
  const auto refresh = [this](SlotRun& s) {
    std::lock_guard lk(mu_);
    refresh_locked(s);
  };
  for (const auto& t : ready) {
    SlotRun& s = *slots_[static_cast<size_t>(t->id)];
    const auto t0 = Clock::now();
    try {
      SlotActionResult r;
      r.id_slot = t->id;
      r.filename = t->filename;
      switch (t->action) {
        case SlotAction::Save: {
          const PromptCacheEntry e = s.slot->export_state();
          r.n_tokens = static_cast<int64_t>(e.tokens.size());
          r.n_bytes = write_state_file(store_->client_file(t->filename), e, store_->identity());
          break;
        }
        case SlotAction::Restore: {
          const auto path = store_->client_file(t->filename);
          std::error_code ec;
          if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec)))  // a link is read_state_file's to refuse
            throw std::invalid_argument("filename: no state file '" + t->filename + "' in the state directory");
          PromptCacheEntry e = read_state_file(path, store_->identity(), s.slot->backend());
          r.n_tokens = static_cast<int64_t>(e.tokens.size());
          r.n_bytes = std::filesystem::file_size(path, ec);
          s.slot->import_state(std::move(e));
          break;
        }
        case SlotAction::Erase: r.n_tokens = s.slot->erase(); break;
      }
      r.ms = ms_between(t0, Clock::now());
      refresh(s);  // /slots shows the change by the time the caller has its answer
      t->done.set_value(std::move(r));
    } catch (...) {
      refresh(s);
      t->done.set_exception(std::current_exception());
    }
  }
  return !ready.empty();
}

void Engine::fail_slot_tasks(const std::string& why) {
  std::deque<std::shared_ptr<SlotTask>> left;
  {
    std::lock_guard lk(mu_);
    left.swap(tasks_);
  }
  for (const auto& t : left) t->done.set_exception(std::make_exception_ptr(std::runtime_error(why)));
}

void Engine::note_refusals(const std::vector<std::string>& refused) {
  LifecycleStats& L = counters_.lifecycle;
  L.state_files_refused += refused.size();
  for (const std::string& r : refused) {
    std::fprintf(stderr, "tandem: state file refused: %s\n", r.c_str());
    L.refused.push_back(r);
  }
  constexpr size_t kKeep = 16;
  if (L.refused.size() > kKeep) L.refused.erase(L.refused.begin(), L.refused.end() - kKeep);
}

void Engine::persist() {
  // Each slot's tokens, sequence and checkpoints as a prompt-cache entry (the cache keeps one
  // entry per prefix: a slot already held there adds nothing), then the cache to the directory.
  for (const auto& s : slots_) {
    const Slot& sl = *s->slot;
    if (!sl.cached_tokens().empty()) cache_.save(sl.cached_tokens(), sl.cached_images(), sl.backend(), sl.checkpoints());
  }
  cache_.enforce_budget();
  if (!store_) return;
  const StateDirReport rep = store_->save_cache(cache_);
  std::lock_guard lk(mu_);
  LifecycleStats& L = counters_.lifecycle;
  L.state_files_written += static_cast<uint64_t>(rep.files);
  L.state_bytes_written += rep.bytes;
  note_refusals(rep.refused);
}

void Engine::unload() {
  const auto t0 = Clock::now();
  if (cfg_.cache_ram_mib > 0) persist();  // without a prompt cache the slots' states are simply dropped
  if (store_) cache_.clear();             // on disk now: reloaded with the weights
  for (const auto& s : slots_) s->slot->release_memory();
  model_.unload_weights();
  std::lock_guard lk(mu_);
  LifecycleStats& L = counters_.lifecycle;
  L.weights_loaded = false;
  ++L.unloads;
  L.last_unload_ms = ms_between(t0, Clock::now());
  counters_.prompt_cache_bytes = cache_.bytes_used();
  counters_.prompt_cache_entries = cache_.entries();
  for (const auto& s : slots_) refresh_locked(*s);
}

bool Engine::reload() {
  const auto t0 = Clock::now();
  HybridModel::ReloadTimes times;
  std::string error;
  try {
    times = model_.reload_weights();
  } catch (const std::exception& e) {
    error = e.what();
  }
  StateDirReport rep;
  const auto t1 = Clock::now();
  if (error.empty() && store_) rep = store_->load_cache(cache_, slots_[0]->slot->backend());
  const auto t2 = Clock::now();
  std::deque<std::unique_ptr<Pending>> failed;
  {
    std::lock_guard lk(mu_);
    LifecycleStats& L = counters_.lifecycle;
    if (error.empty()) {
      L.weights_loaded = true;
      ++L.reloads;
      L.cold_map_ms = times.map_ms;
      L.cold_pack_ms = times.pack_ms;
      L.cold_states_ms = ms_between(t1, t2);
      L.cold_start_ms = ms_between(t0, t2);
      L.state_files_loaded += static_cast<uint64_t>(rep.files);
      L.state_bytes_loaded += rep.bytes;
      note_refusals(rep.refused);
      for (const auto& p : queue_) p->cold_start_ms = L.cold_start_ms;
      counters_.prompt_cache_bytes = cache_.bytes_used();
      counters_.prompt_cache_entries = cache_.entries();
    } else {
      failed.swap(queue_);  // nothing can run them; the next request tries again
    }
  }
  for (auto& p : failed) {
    GenerationResult r;
    r.reason = FinishReason::Error;
    r.error = "the model could not be reloaded after an idle unload: " + error;
    r.queue_ms = ms_between(p->gen->arrival(), Clock::now());
    complete(p->req, *p->gen, std::move(r));
  }
  last_work_ = Clock::now();
  return error.empty();
}

}  // namespace tandem::serve
