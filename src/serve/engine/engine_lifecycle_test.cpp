// The engine's lifecycle (serve/engine/engine_lifecycle.cpp, issue 27 items 1 and 2) on the tiny model:
//  * restart: an episode's first steps on one engine with a state directory, the engine destroyed
//    (its states written), a new engine on the same directory: the next step loads them, restores
//    the rules from a checkpoint, and answers exactly as an uninterrupted engine does;
//  * unload after idle and reload on demand: the same answers, the cold start reported, the
//    states reloaded from the directory; a model file changed while unloaded is refused with a
//    clear error and the engine serves again once the file is back;
//  * slot save / restore / erase, and their refusals.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"
#include "model/test_support.h"
#include "serve/engine/engine.h"
#include "serve/engine/engine_test_util.h"
#include "serve/lifecycle/state_file.h"
#include "text/tokenizer.h"

namespace tandem::serve {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kSystem =
    "<|im_start|>system\nYou are a phone agent. Follow the rules: one JSON action per step, never guess.<|im_end|>\n";

struct Tiny {
  std::unique_ptr<Qwen35Model> model;
  std::unique_ptr<text::Tokenizer> tok;
  explicit Tiny(const std::string& path) {
    model = Qwen35Model::load(path, 2);
    tok = text::Tokenizer::from_gguf(model->file());
  }
};

// Rules, a task, a growing history, a new screen each step.
std::vector<std::vector<int32_t>> episode(const text::Tokenizer& tok, int steps) {
  std::vector<std::vector<int32_t>> out;
  std::string hist;
  for (int k = 0; k < steps; ++k) {
    out.push_back(tok.encode(std::string(kSystem) + "<|im_start|>user\nTask: turn on Wi-Fi. History:" + hist +
                             " Screen: [" + std::to_string(k * 7) + "] Network [3] Display [5] Sound<|im_end|>\n"
                             "<|im_start|>assistant\n"));
    hist += " step " + std::to_string(k) + " tapped " + std::to_string(k * 7);
  }
  return out;
}

EngineConfig config(const fs::path& state_dir = {}) {
  EngineConfig c;
  c.n_ctx = 512;
  c.cache_ram_mib = 64;
  c.slot.ctx_checkpoints = 4;
  c.state_dir = state_dir.string();
  return c;
}

GenerationResult ask(Engine& e, const std::vector<int32_t>& prompt) {
  return testing::ask_greedy(e, prompt, {static_cast<int64_t>(e.tokenizer().encode(kSystem).size())}, 6, 3);
}

void expect_same_answer(const GenerationResult& a, const GenerationResult& b, const std::string& where) {
  ASSERT_EQ(a.reason, b.reason) << where << ": " << a.error << b.error;
  EXPECT_EQ(a.output, b.output) << where;
  ASSERT_EQ(a.logprobs.size(), b.logprobs.size()) << where;
  for (size_t i = 0; i < a.logprobs.size(); ++i) {
    EXPECT_EQ(a.logprobs[i].logprob, b.logprobs[i].logprob) << where << ", token " << i;  // bit for bit
    EXPECT_EQ(a.logprobs[i].top, b.logprobs[i].top) << where << ", token " << i;
  }
}

using test_support::TempDir;
using test_support::wait_until;

// What an engine without a state directory answers to each prompt in turn: the reference.
std::vector<GenerationResult> uninterrupted_answers(const Tiny& t, const std::vector<std::vector<int32_t>>& prompts) {
  Engine e(*t.model, *t.tok, config());
  std::vector<GenerationResult> out;
  for (const auto& p : prompts) out.push_back(ask(e, p));
  return out;
}

TEST(EngineLifecycle, ARestartedEngineRestoresTheRulesAndAnswersAsAnUninterruptedOne) {
  Tiny t(ensure_tiny_model("F32"));
  const auto prompts = episode(*t.tok, 4);
  const std::vector<GenerationResult> uninterrupted = uninterrupted_answers(t, prompts);
  TempDir dir("tandem-restart");
  {
    Engine first(*t.model, *t.tok, config(dir.path));
    for (size_t k = 0; k < 3; ++k) expect_same_answer(ask(first, prompts[k]), uninterrupted[k], "before the restart");
  }  // stops: the slot and the cache are written to the directory
  int files = 0;
  for (const auto& d : fs::directory_iterator(dir.path)) files += d.path().extension() == ".tstate";
  EXPECT_GE(files, 1);

  Engine second(*t.model, *t.tok, config(dir.path));
  const EngineSnapshot s = second.snapshot();
  EXPECT_GE(s.lifecycle.state_files_loaded, 1u);
  EXPECT_EQ(s.lifecycle.state_files_refused, 0u);
  EXPECT_GE(s.prompt_cache_entries, 1u);
  const GenerationResult r = ask(second, prompts[3]);
  EXPECT_TRUE(r.stats.prompt_cache_loaded) << "the restarted engine must load the saved state";
  EXPECT_EQ(r.stats.checkpoints_restored, 1) << "the rules come back from a checkpoint";
  EXPECT_EQ(r.stats.restore_pos, uninterrupted[3].stats.restore_pos);
  EXPECT_GT(r.stats.restore_pos, static_cast<int64_t>(t.tok->encode(kSystem).size()));
  EXPECT_EQ(r.stats.new_tokens, uninterrupted[3].stats.new_tokens);
  expect_same_answer(r, uninterrupted[3], "after the restart");
}

TEST(EngineLifecycle, UnloadsAfterIdleAndReloadsForTheNextRequest) {
  Tiny t(ensure_tiny_model("F32"));
  const auto prompts = episode(*t.tok, 3);
  const std::vector<GenerationResult> ref = uninterrupted_answers(t, prompts);
  TempDir dir("tandem-unload");
  EngineConfig c = config(dir.path);
  c.unload_idle_ms = 150;
  Engine e(*t.model, *t.tok, c);
  for (size_t k = 0; k < prompts.size(); ++k) {
    const GenerationResult r = ask(e, prompts[k]);
    expect_same_answer(r, ref[k], "request " + std::to_string(k));
    if (k > 0) {
      EXPECT_GT(r.cold_start_ms, 0.0) << "request " << k << " waited for the reload";
      EXPECT_TRUE(r.stats.prompt_cache_loaded) << "the slot's state came back from the directory";
      EXPECT_EQ(r.stats.restore_pos, ref[k].stats.restore_pos);
    } else {
      EXPECT_EQ(r.cold_start_ms, 0.0);
    }
    ASSERT_TRUE(wait_until([&] { return !e.snapshot().lifecycle.weights_loaded; })) << "no unload after " << k;
    EXPECT_FALSE(t.model->weights_loaded());
    const EngineSnapshot s = e.snapshot();
    EXPECT_EQ(s.slots[0].n_cached, 0);
    EXPECT_LT(s.slots[0].kv_bytes, size_t{512} * t.model->new_sequence(1)->kv_bytes_per_token()) << "the KV cache is freed";
    EXPECT_EQ(s.prompt_cache_entries, 0u) << "on disk while unloaded";
  }
  const EngineSnapshot s = e.snapshot();
  EXPECT_EQ(s.lifecycle.unloads, 3u);
  EXPECT_EQ(s.lifecycle.reloads, 2u);
  EXPECT_GT(s.lifecycle.cold_start_ms, 0.0);
  EXPECT_GE(s.lifecycle.cold_start_ms, s.lifecycle.cold_map_ms);
  EXPECT_GE(s.lifecycle.state_files_written, 1u);
  EXPECT_GE(s.lifecycle.state_files_loaded, 1u);
}

TEST(EngineLifecycle, AModelFileChangedWhileUnloadedIsRefusedUntilItIsBack) {
  TempDir dir("tandem-changed");
  const fs::path file = dir.path / "model.gguf";
  fs::copy_file(ensure_tiny_model("F32"), file);
  Tiny t(file.string());
  const auto prompts = episode(*t.tok, 2);
  EngineConfig c = config();
  c.unload_idle_ms = 100;
  Engine e(*t.model, *t.tok, c);
  const GenerationResult first = ask(e, prompts[0]);
  ASSERT_NE(first.reason, FinishReason::Error) << first.error;
  ASSERT_TRUE(wait_until([&] { return !e.snapshot().lifecycle.weights_loaded; }));

  fs::copy_file(ensure_tiny_model("Q8_0"), file, fs::copy_options::overwrite_existing);
  const GenerationResult refused = ask(e, prompts[1]);
  EXPECT_EQ(refused.reason, FinishReason::Error);
  EXPECT_NE(refused.error.find("could not be reloaded"), std::string::npos) << refused.error;
  EXPECT_NE(refused.error.find("no longer the file"), std::string::npos) << refused.error;
  EXPECT_FALSE(e.snapshot().lifecycle.weights_loaded);

  fs::copy_file(ensure_tiny_model("F32"), file, fs::copy_options::overwrite_existing);
  const GenerationResult back = ask(e, prompts[1]);
  EXPECT_NE(back.reason, FinishReason::Error) << back.error;
  EXPECT_EQ(back.output.size(), 6u);
}

TEST(EngineLifecycle, SlotSaveRestoreAndErase) {
  Tiny t(ensure_tiny_model("F32"));
  const auto prompts = episode(*t.tok, 2);
  TempDir dir("tandem-slot-actions");
  Engine e(*t.model, *t.tok, config(dir.path));
  ask(e, prompts[0]);
  const int64_t held = e.snapshot().slots[0].n_cached;
  const SlotActionResult saved = e.slot_action(0, SlotAction::Save, "agent.bin");
  EXPECT_EQ(saved.n_tokens, held);
  EXPECT_EQ(saved.n_bytes, fs::file_size(dir.path / "agent.bin"));
  const SlotActionResult erased = e.slot_action(0, SlotAction::Erase);
  EXPECT_EQ(erased.n_tokens, held);
  EXPECT_EQ(e.snapshot().slots[0].n_cached, 0);
  const SlotActionResult restored = e.slot_action(0, SlotAction::Restore, "agent.bin");
  EXPECT_EQ(restored.n_tokens, held);
  EXPECT_EQ(e.snapshot().slots[0].n_cached, held);
  EXPECT_EQ(e.snapshot().slots[0].checkpoint_positions.size(), e.snapshot().slots[0].checkpoint_positions.size());
  // The restored slot continues the episode from its state (not from the empty slot).
  const GenerationResult next = ask(e, prompts[1]);
  EXPECT_GT(next.stats.restore_pos, 0);

  EXPECT_THROW(e.slot_action(3, SlotAction::Erase), std::invalid_argument);
  EXPECT_THROW(e.slot_action(0, SlotAction::Save, "../escape.bin"), std::invalid_argument);
  EXPECT_THROW(e.slot_action(0, SlotAction::Restore, "missing.bin"), std::invalid_argument);
  std::FILE* f = std::fopen((dir.path / "junk.bin").c_str(), "wb");
  std::fputs("not a state", f);
  std::fclose(f);
  EXPECT_THROW(e.slot_action(0, SlotAction::Restore, "junk.bin"), StateFileError);

  Engine no_dir(*t.model, *t.tok, config());
  try {
    no_dir.slot_action(0, SlotAction::Save, "x.bin");
    FAIL() << "a save without a state directory";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("--state-dir"), std::string::npos) << err.what();
  }
  EXPECT_EQ(no_dir.slot_action(0, SlotAction::Erase).n_tokens, 0);
}

TEST(EngineLifecycle, AStateDirNeedsAPromptCache) {
  Tiny t(ensure_tiny_model("F32"));
  TempDir dir("tandem-no-cache");
  EngineConfig c = config(dir.path);
  c.cache_ram_mib = 0;
  EXPECT_THROW(Engine(*t.model, *t.tok, c), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::serve
