// Constrained decoding through the engine (serve/engine/grammar_picker.h, serve/spec/grammar_drafts.h,
// spec/constrained.md §6.6) on the tiny generated model:
//  * I3: constrained greedy output is token for token the same with speculation off, with MTP +
//    forced drafts, with forced drafts off, with forced drafts alone (MTP off, and a file without
//    an MTP block), and seeded sampling gives the same tokens with speculation on and off;
//  * the same across checkpoint restores, prompt-cache loads and idle-release cycles;
//  * I2: constrained greedy equals unconstrained greedy when every unconstrained token was legal
//    in its grammar state, and departs exactly at the first illegal one otherwise;
//  * every answer is a sentence of the grammar, ends where it is complete (no end-of-generation
//    token the grammar forbids), and forced drafts are counted apart from MTP drafts.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_cache.h"
#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"
#include "serve/backend/model_backend.h"
#include "serve/engine/engine.h"
#include "serve/policy/policy_factory.h"
#include "serve/slot/slot.h"
#include "text/tokenizer.h"

namespace tandem::serve {
namespace {

using namespace std::chrono_literals;

// An action-like grammar in compact JSON: long forced runs (keys, punctuation), short choices.
constexpr const char* kAction =
    "root ::= \"{\\\"action\\\":\\\"\" ( \"tap\\\",\\\"index\\\":\" [0-9] [0-9]? | \"type\\\",\\\"text\\\":\\\"\" "
    "[a-z ]{0,8} \"\\\"\" | \"back\\\"\" | \"home\\\"\" ) \"}\"\n";
constexpr const char* kAnything = "root ::= .*\n";
constexpr const char* kDigits = "root ::= [0-9]+\n";
// A choice, then a long forced run to the end: one speculative step drafts it all and picks the
// end-of-generation token after it; the answer must still end after the run's last token.
constexpr const char* kForcedTail = "root ::= [0-9] \"abc\\\"}\"\n";

struct Loaded {
  std::unique_ptr<Qwen35Model> model;
  std::unique_ptr<text::Tokenizer> tok;
};

Loaded& tiny(bool mtp = true) {
  static Loaded with = [] {
    Loaded l;
    l.model = Qwen35Model::load(ensure_tiny_model("F32"), 2);
    l.tok = text::Tokenizer::from_gguf(l.model->file());
    return l;
  }();
  static Loaded without = [] {
    Loaded l;
    l.model = Qwen35Model::load(ensure_tiny_model("F32", /*mtp=*/false), 2);
    l.tok = text::Tokenizer::from_gguf(l.model->file());
    return l;
  }();
  return mtp ? with : without;
}

EngineConfig engine_cfg(bool spec) {
  EngineConfig c;
  c.n_ctx = 512;
  c.slot.ctx_checkpoints = 4;
  c.cache_ram_mib = 16;
  c.speculation.enabled = spec;
  c.speculation.draft_max = 3;
  return c;
}

struct Answer {
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason reason = FinishReason::Error;
  RequestStats stats;
};

Answer ask(Engine& e, const std::vector<int32_t>& prompt, const std::string& gbnf, int64_t n_predict,
           text::SamplerParams sp = {.temperature = 0}, bool ignore_eos = false) {
  EngineRequest r;
  r.prompt = prompt;
  r.params.sampling = sp;
  r.params.n_predict = n_predict;
  r.params.ignore_eos = ignore_eos;
  if (!gbnf.empty()) r.params.grammar = e.compile_grammar(gbnf);
  auto g = e.submit(std::move(r));
  EXPECT_TRUE(g->wait_done(120s));
  const GenerationResult& res = g->result();
  EXPECT_NE(res.reason, FinishReason::Error) << res.error;
  return Answer{res.output, res.text, res.reason, res.stats};
}

// Agent-like prompts: shared rules, a task, a growing history (restores), then a repeat.
std::vector<std::vector<int32_t>> prompts(const text::Tokenizer& tok) {
  std::vector<std::vector<int32_t>> out;
  std::string hist;
  for (int k = 0; k < 4; ++k) {
    out.push_back(tok.encode("<|im_start|>system\nYou are a phone agent. Answer with one JSON action.<|im_end|>\n"
                             "<|im_start|>user\nTask: open settings. History:" + hist +
                             " Screen: [0] Back [1] Wi-Fi [2] Display<|im_end|>\n<|im_start|>assistant\n"));
    hist += " tap " + std::to_string(k);
  }
  out.push_back(out[1]);
  return out;
}

std::shared_ptr<grammar::CompiledGrammar> compiled(const text::Tokenizer& tok, const std::string& gbnf) {
  return grammar::CompiledGrammar::compile(gbnf, std::make_shared<grammar::VocabIndex>(tok));
}

// The answer is a complete sentence of the grammar (the end-of-generation token, if emitted,
// allowed where it was).
void expect_sentence(const text::Tokenizer& tok, const std::string& gbnf, const Answer& a) {
  auto g = compiled(tok, gbnf);
  grammar::Matcher m(g);
  for (size_t i = 0; i < a.tokens.size(); ++i) ASSERT_TRUE(m.accept(a.tokens[i])) << "token " << i << " = " << a.tokens[i];
  if (a.reason == FinishReason::GrammarComplete || a.reason == FinishReason::EndOfGeneration) EXPECT_TRUE(m.accepting());
}

TEST(ConstrainedDecoding, GreedyIsTheSameWithEverySpeculationSwitch) {
  // The reference: speculation off, on each file (with and without the MTP block).
  // The action grammar (long forced runs; a random MTP head's top 10 are rarely legal in it) and
  // one that allows almost everything (the head's drafts pass the filter).
  const std::string grammars[] = {kAction, kAnything, kForcedTail};
  std::vector<std::vector<int32_t>> ref[2];
  for (bool mtp_file : {true, false}) {
    Loaded& M = tiny(mtp_file);
    Engine e(*M.model, *M.tok, engine_cfg(false));
    for (const std::string& gbnf : grammars)
      for (const auto& p : prompts(*M.tok)) {
        Answer a = ask(e, p, gbnf, 24);
        expect_sentence(*M.tok, gbnf, a);
        if (gbnf != kAnything) EXPECT_EQ(a.reason, FinishReason::GrammarComplete) << M.tok->decode(a.tokens);
        EXPECT_EQ(a.stats.drafts_proposed, 0);
        ref[mtp_file].push_back(a.tokens);
      }
  }
  struct Case {
    const char* name;
    bool mtp_file, mtp, forced;
  };
  for (const Case c : {Case{"mtp+forced", true, true, true}, Case{"mtp, forced off", true, true, false},
                       Case{"forced only", true, false, true}, Case{"file without MTP", false, true, true}}) {
    SCOPED_TRACE(c.name);
    Loaded& M = tiny(c.mtp_file);
    EngineConfig cfg = engine_cfg(true);
    cfg.speculation.mtp_drafts = c.mtp;
    cfg.speculation.forced_drafts = c.forced;
    Engine e(*M.model, *M.tok, cfg);
    const auto ps = prompts(*M.tok);
    int64_t forced = 0, mtp = 0, accepted = 0, passes = 0, emitted = 0;
    for (size_t i = 0; i < std::size(grammars) * ps.size(); ++i) {
      const std::string& gbnf = grammars[i / ps.size()];
      Answer a = ask(e, ps[i % ps.size()], gbnf, 24);
      EXPECT_EQ(a.tokens, ref[c.mtp_file][i]) << "request " << i << ": " << M.tok->decode(a.tokens);
      expect_sentence(*M.tok, gbnf, a);
      forced += a.stats.drafts_forced;
      mtp += a.stats.drafts_mtp;
      accepted += a.stats.drafts_accepted;
      passes += a.stats.verify_passes;
      emitted += static_cast<int64_t>(a.tokens.size());
      EXPECT_EQ(a.stats.drafts_proposed, a.stats.drafts_forced + a.stats.drafts_mtp);
      EXPECT_LE(a.stats.drafts_forced_accepted, a.stats.drafts_forced);
      // The MTP head's first draft: only steps that had one (never a forced run alone).
      EXPECT_LE(a.stats.mtp_first_accepted, a.stats.mtp_first_drafts);
      EXPECT_LE(a.stats.mtp_first_drafts, a.stats.verify_passes);
      EXPECT_LE(a.stats.mtp_first_drafts, a.stats.drafts_mtp);
      if (a.stats.drafts_mtp == 0) EXPECT_EQ(a.stats.mtp_first_drafts, 0);
      else EXPECT_GT(a.stats.mtp_first_drafts, 0);
    }
    // A random MTP head's drafts are legal (under the permissive grammar) but almost never the
    // target's pick; the forced ones mostly are.
    if (c.forced) EXPECT_GT(forced, 0);
    else EXPECT_EQ(forced, 0);
    if (c.mtp && c.mtp_file) EXPECT_GT(mtp, 0);
    else EXPECT_EQ(mtp, 0);
    if (c.forced) EXPECT_GT(accepted, 0);
    std::printf("  [%s] %lld tokens, %lld verify passes, drafts forced %lld / mtp %lld, accepted %lld\n", c.name,
                static_cast<long long>(emitted), static_cast<long long>(passes), static_cast<long long>(forced),
                static_cast<long long>(mtp), static_cast<long long>(accepted));
  }
}

TEST(ConstrainedDecoding, SeededSamplingIsTheSameWithSpeculation) {
  Loaded& L = tiny();
  const auto ps = prompts(*L.tok);
  const text::SamplerParams sp{.temperature = 0.9f, .top_k = 40, .top_p = 0.95f, .min_p = 0.0f, .seed = 77};
  std::vector<std::vector<int32_t>> plain, spec;
  {
    Engine e(*L.model, *L.tok, engine_cfg(false));
    for (const auto& p : ps) plain.push_back(ask(e, p, kAction, 24, sp).tokens);
  }
  {
    Engine e(*L.model, *L.tok, engine_cfg(true));
    for (const auto& p : ps) {
      Answer a = ask(e, p, kAction, 24, sp);
      expect_sentence(*L.tok, kAction, a);
      spec.push_back(a.tokens);
    }
  }
  EXPECT_EQ(spec, plain);
}

TEST(ConstrainedDecoding, RestoresCacheLoadsAndIdleReleaseChangeNothing) {
  Loaded& L = tiny();
  const auto ps = prompts(*L.tok);
  std::vector<std::vector<int32_t>> fresh;
  for (const auto& p : ps) {
    Engine e(*L.model, *L.tok, engine_cfg(false));  // a new engine per prompt: nothing to reuse
    fresh.push_back(ask(e, p, kAction, 24).tokens);
  }
  Engine e(*L.model, *L.tok, engine_cfg(true));
  int64_t restored = 0;
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < ps.size(); ++i) {
      L.model->governor().release_now();
      Answer a = ask(e, ps[i], kAction, 24);
      EXPECT_EQ(a.tokens, fresh[i]) << "round " << round << " prompt " << i;
      restored += a.stats.checkpoints_restored + (a.stats.prompt_cache_loaded ? 1 : 0) + (a.stats.restore_pos > 0 ? 1 : 0);
    }
  EXPECT_GT(restored, 0);
}

// I2: masking removes candidates but changes no logit, so the unconstrained argmax survives
// wherever it was legal. The all-legal case: a grammar of token terminals over every token the
// unconstrained answer used (a random model's favourite tokens are often lone UTF-8 bytes, which
// no character grammar allows). The departing case: digits only.
TEST(ConstrainedDecoding, EqualsUnconstrainedGreedyExactlyWhileEveryTokenIsLegal) {
  Loaded& L = tiny();
  const auto ps = prompts(*L.tok);
  Engine e(*L.model, *L.tok, engine_cfg(false));
  int all_legal = 0, departed = 0;
  for (const auto& p : ps) {
    const Answer u = ask(e, p, "", 16);
    ASSERT_FALSE(u.tokens.empty());
    std::string used = "root ::= ( ";
    for (size_t i = 0; i < u.tokens.size(); ++i)
      if (std::find(u.tokens.begin(), u.tokens.begin() + static_cast<std::ptrdiff_t>(i), u.tokens[i]) ==
          u.tokens.begin() + static_cast<std::ptrdiff_t>(i))
        used += (i ? " | <[" : "<[") + std::to_string(u.tokens[i]) + "]>";
    used += " )*\n";
    for (const std::string& gbnf : {used, std::string(kDigits)}) {
      auto g = compiled(*L.tok, gbnf);
      const Answer c = ask(e, p, gbnf, 16);
      // The first unconstrained token the grammar forbids (in the state after the ones before).
      grammar::Matcher m(g);
      size_t first_illegal = u.tokens.size();
      for (size_t i = 0; i < u.tokens.size(); ++i)
        if (!m.accept(u.tokens[i])) {
          first_illegal = i;
          break;
        }
      ASSERT_GE(c.tokens.size(), first_illegal);
      EXPECT_EQ(std::vector<int32_t>(c.tokens.begin(), c.tokens.begin() + static_cast<std::ptrdiff_t>(first_illegal)),
                std::vector<int32_t>(u.tokens.begin(), u.tokens.begin() + static_cast<std::ptrdiff_t>(first_illegal)));
      if (first_illegal == u.tokens.size()) {
        EXPECT_EQ(c.tokens, u.tokens) << gbnf;
        ++all_legal;
      } else {
        EXPECT_NE(c.tokens[first_illegal], u.tokens[first_illegal]);
        ++departed;
      }
      expect_sentence(*L.tok, gbnf, c);
    }
  }
  EXPECT_EQ(all_legal, static_cast<int>(ps.size())) << "the token-terminal grammar allows every token of the answer";
  EXPECT_GT(departed, 0) << "no prompt tested the departing case";
}

TEST(ConstrainedDecoding, LengthLimitEndsWithAValidPrefix) {
  Loaded& L = tiny();
  Engine e(*L.model, *L.tok, engine_cfg(true));
  const auto ps = prompts(*L.tok);
  const Answer a = ask(e, ps[0], kDigits, 5);
  EXPECT_EQ(a.reason, FinishReason::Length);
  EXPECT_EQ(a.tokens.size(), 5u);
  auto g = compiled(*L.tok, kDigits);
  grammar::Matcher m(g);
  for (int32_t t : a.tokens) EXPECT_TRUE(m.accept(t));
}


// ignore_eos under a grammar: an end-of-generation token the grammar allows still ends the answer
// (nothing can follow it), with speculation as without (the flexible grammar stays open after its
// last character, so a draft may be the end-of-generation token).
TEST(ConstrainedDecoding, IgnoreEosStillEndsAtTheGrammarsEnd) {
  Loaded& L = tiny();
  const auto ps = prompts(*L.tok);
  const std::string gbnf = "root ::= [0-9]{1,3} [ ]*\n";
  const auto ask_ignoring_eos = [&](Engine& e, const std::vector<int32_t>& p) {
    return ask(e, p, gbnf, 12, {.temperature = 0}, /*ignore_eos=*/true);
  };
  std::vector<Answer> ref;
  {
    Engine e(*L.model, *L.tok, engine_cfg(false));
    for (const auto& p : ps) ref.push_back(ask_ignoring_eos(e, p));
  }
  Engine e(*L.model, *L.tok, engine_cfg(true));
  for (size_t i = 0; i < ps.size(); ++i) {
    const Answer a = ask_ignoring_eos(e, ps[i]);  // ask() checks that it did not fail
    EXPECT_EQ(a.tokens, ref[i].tokens) << "prompt " << i;
    EXPECT_EQ(a.reason, ref[i].reason) << "prompt " << i;
  }
}

// A pick that fails inside a verified pass (a grammar limit) leaves the slot's tokens and its
// state in step: the next request on the slot answers as a fresh slot would.
TEST(ConstrainedDecoding, APickThatThrowsMidStepLeavesTheSlotConsistent) {
  Loaded& L = tiny();
  const auto ps = prompts(*L.tok);
  auto make_slot = [&] {
    auto s = std::make_unique<Slot>(std::make_unique<ModelBackend>(*L.model, 512), make_policy(PolicyConfig{}), SlotConfig{});
    s->enable_speculation(SpecConfig{});
    return s;
  };
  struct Throwing final : TokenPicker {
    int rows = 0;
    int32_t pick(std::span<const float>) override {
      if (++rows == 2) throw grammar::GrammarLimitError("test: limit reached");
      return 300;
    }
  };
  auto greedy = [&](Slot& s, const std::vector<int32_t>& p) {
    GreedyPicker g;
    auto rep = s.prefill(Prompt{p, {}});
    std::vector<int32_t> out{g.pick(rep.logits)};
    while (out.size() < 6) {
      auto t = s.decode_speculative(out.back(), g, static_cast<int64_t>(6 - out.size()));
      out.insert(out.end(), t.begin(), t.end());
    }
    return out;
  };
  auto fresh = make_slot();
  const auto want = greedy(*fresh, ps[1]);
  auto slot = make_slot();
  slot->prefill(Prompt{ps[0], {}});
  slot->speculator()->set_draft_hook([](int64_t, int32_t, int, std::vector<int32_t>& d) { d.assign(3, 300); });
  Throwing bad;
  EXPECT_THROW(slot->decode_speculative(300, bad), grammar::GrammarLimitError);
  EXPECT_EQ(static_cast<int64_t>(slot->cached_tokens().size()), slot->backend().n_past());
  slot->speculator()->set_draft_hook(nullptr);
  EXPECT_EQ(greedy(*slot, ps[1]), want);
}

}  // namespace
}  // namespace tandem::serve
