// Speculative decoding (serve/spec/speculator.h) on the tiny generated models (F32 and Q8_0):
//  * exactness: greedy (and seeded sampled) outputs with speculation equal those without, under
//    every switch combination, across checkpoint restores and prompt-cache loads, with the MTP
//    head's own drafts and with forced-accept / forced-reject / accept-exactly-j drafters;
//  * rollback: after a verify pass with j of k drafts accepted the state equals a per-token run
//    to that position, for every j;
//  * the MTP head stays in step with the trunk: after restores its drafts equal a fresh head's;
//  * the trimmed draft head: selection, file round trip, loader errors, drafting over it.
#include "serve/spec/speculator.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <fstream>
#include <random>
#include <set>

#include "gguf/gguf_writer.h"
#include "model/draft_vocab.h"
#include "model/test_models.h"
#include "model/test_paths.h"
#include "model/test_support.h"
#include "serve/backend/dry_run.h"
#include "serve/backend/model_backend.h"
#include "serve/policy/policy_factory.h"
#include "serve/slot/slot.h"
#include "serve/spec/mtp_drafter.h"
#include "text/sampler.h"

namespace tandem::serve {
namespace {

constexpr int64_t kSpecCtx = 512;

using test_support::random_tokens;
using text::argmax_first;


std::string test_dir() {
  const std::string d = std::string(TANDEM_BINARY_DIR) + "/test-tmp/speculator";
  std::filesystem::create_directories(d);
  return d;
}

// The tiny model with a trimmed draft head of `rows` rows (cached per process), in the form
// that stores the rows as a tensor (the ids-only form: DraftHead.IdsOnlyFormGathersTheRowsAtLoad).
std::string trimmed_tiny(const std::string& ftype, int64_t rows) {
  const std::string src = ensure_tiny_model(ftype);
  const std::string dst = test_dir() + "/tiny-" + ftype + "-draft" + std::to_string(rows) + "-" +
                          std::to_string(::getpid()) + ".gguf";
  if (!std::filesystem::exists(dst)) {
    const std::vector<int32_t> corpus = {300, 301, 301, 302, 302, 302, 17, 17};
    write_trimmed_draft_file(src, dst, corpus, rows, DraftForm::Tensor);
  }
  return dst;
}

struct SpecReq {
  std::vector<int32_t> prompt;
  std::vector<int64_t> users;
};

// Agent-like prompts sharing a prefix (so the slot restores checkpoints), one repeated, one
// unrelated (the prompt cache swaps the slot's sequence), then back.
std::vector<SpecReq> episode(int64_t n_vocab) {
  const auto rules = random_tokens(40, n_vocab, 11);
  std::vector<SpecReq> reqs;
  for (int k = 0; k < 4; ++k) {
    SpecReq r;
    r.prompt = rules;
    const auto tail = random_tokens(12 + 7 * k, n_vocab, 100 + k);
    r.prompt.insert(r.prompt.end(), tail.begin(), tail.end());
    r.users = {8};
    reqs.push_back(std::move(r));
  }
  reqs.push_back(reqs.back());
  reqs.push_back(SpecReq{random_tokens(70, n_vocab, 5), {0}});
  SpecReq back;
  back.prompt.assign(reqs[2].prompt.begin(), reqs[2].prompt.begin() + 50);
  const auto t = random_tokens(9, n_vocab, 6);
  back.prompt.insert(back.prompt.end(), t.begin(), t.end());
  back.users = {8};
  reqs.push_back(std::move(back));
  return reqs;
}

// Greedy outputs without speculation: a fresh state, one full prefill, plain decode steps.
// Plain greedy decoding; the prompt's delta rule runs by `prompt_gdn` (Recurrent: per token, as
// the stock prefill switch runs it).
std::vector<int32_t> reference(Qwen35Model& m, const std::vector<int32_t>& prompt, int n_out,
                               GdnAlgorithm prompt_gdn = GdnAlgorithm::Auto) {
  auto st = m.new_sequence(kSpecCtx);
  ForwardOptions opt;
  ForwardOutput fo;
  opt.gdn = prompt_gdn;
  m.forward(*st, prompt, opt, fo);
  opt.gdn = GdnAlgorithm::Auto;
  std::vector<int32_t> out;
  int32_t t = argmax_first(fo.logits);
  for (int i = 0; i < n_out; ++i) {
    out.push_back(t);
    if (i + 1 == n_out) break;
    m.forward(*st, std::span<const int32_t>(&t, 1), opt, fo);
    t = argmax_first(fo.logits);
  }
  return out;
}

// Runs n_out tokens of one request with decode_speculative; `picker` decides; at most
// max_drafts drafts a step (the request's cap).
std::vector<int32_t> generate(Slot& slot, const SpecReq& r, int n_out, TokenPicker& picker, int64_t* steps = nullptr,
                              int max_drafts = INT_MAX) {
  const PrefillReport rep = slot.prefill(Prompt{r.prompt, r.users});
  std::vector<int32_t> out;
  int32_t t = picker.pick(rep.logits);
  picker.accept(t);
  out.push_back(t);
  while (static_cast<int>(out.size()) < n_out) {
    const auto toks = slot.decode_speculative(t, picker, n_out - static_cast<int64_t>(out.size()), {}, nullptr, max_drafts);
    out.insert(out.end(), toks.begin(), toks.end());
    t = toks.back();
    if (steps) ++*steps;
  }
  return out;
}

class SpeculatorTest : public ::testing::TestWithParam<std::string> {
 protected:
  static Qwen35Model& model(const std::string& ftype) {
    static std::map<std::string, std::unique_ptr<Qwen35Model>> models;
    auto& m = models[ftype];
    if (!m) m = Qwen35Model::load(ensure_tiny_model(ftype), 2);
    return *m;
  }
  static Qwen35Model& trimmed(const std::string& ftype) {
    static std::map<std::string, std::unique_ptr<Qwen35Model>> models;
    auto& m = models[ftype];
    if (!m) m = Qwen35Model::load(trimmed_tiny(ftype, 200), 2);
    return *m;
  }
  // backend: receives the slot's ModelBackend (read-only views: the drafter's MTP state).
  static std::unique_ptr<Slot> make_slot(Qwen35Model& m, PromptCache* cache = nullptr, ModelBackend** backend = nullptr) {
    PolicyConfig pc;
    pc.kind = PolicyKind::Divergence;
    pc.divergence.min_gap = 4;
    SlotConfig cfg;
    cfg.batch = BatchConfig{32, 16, false};
    cfg.ctx_checkpoints = 3;
    auto mb = std::make_unique<ModelBackend>(m, kSpecCtx);
    if (backend) *backend = mb.get();
    auto slot = std::make_unique<Slot>(std::move(mb), make_policy(pc), cfg);
    slot->set_prompt_cache(cache);
    return slot;
  }
  // Greedy outputs of one slot with speculation off, request after request.
  static std::vector<std::vector<int32_t>> plain_outputs(Qwen35Model& m, const std::vector<SpecReq>& reqs, int n_out,
                                                         PromptCache* cache = nullptr) {
    auto slot = make_slot(m, cache);
    SpecConfig off;
    off.enabled = false;
    slot->enable_speculation(off);
    std::vector<std::vector<int32_t>> out;
    for (const SpecReq& r : reqs) {
      GreedyPicker g;
      out.push_back(generate(*slot, r, n_out, g));
      slot->end_request();
    }
    return out;
  }
};

// Every switch combination, the MTP head's own drafts and forced drafters: the greedy output is
// the output without speculation, request after request (restores, prompt-cache loads).
// "Without speculation" is the same slot with speculation off: its prompt passes compute the same
// bits (ModelBackend::set_prompt_tail), so the outputs must be equal token for token. The one
// switch that changes how a prompt is computed, the stock prefill (every prompt token per token
// while rollback states are kept), is held to plain decoding of a prompt run per token: the
// chunked and per-token delta rules agree only to rounding, and a near tie in the logits may
// resolve differently between them (on the AVX2 tier it does, at request 2's last token).
TEST_P(SpeculatorTest, GreedyOutputEqualsPlainDecodingUnderEverySwitch) {
  Qwen35Model& plain = model(GetParam());
  Qwen35Model& trim = trimmed(GetParam());
  const int64_t n_vocab = plain.hparams().n_vocab;
  const std::vector<SpecReq> reqs = episode(n_vocab);
  constexpr int kOut = 14;
  PromptCache off_cache;
  const std::vector<std::vector<int32_t>> ref_off = plain_outputs(trim, reqs, kOut, &off_cache);
  std::vector<std::vector<int32_t>> ref_stock;
  for (const SpecReq& r : reqs) ref_stock.push_back(reference(plain, r.prompt, kOut, GdnAlgorithm::Recurrent));

  enum class Drafter { Mtp, Correct, Wrong };
  for (int combo = 0; combo < 64; ++combo)
    for (Drafter drafter : {Drafter::Mtp, Drafter::Correct, Drafter::Wrong}) {
      SpecConfig cfg;
      cfg.rollback_aware_prefill = combo & 1;
      cfg.column_shared_verify = combo & 2;
      cfg.trimmed_head = combo & 4;
      cfg.retain_prefill_states = !(combo & 8);
      cfg.draft_max = (combo & 16) ? 1 : 3;
      cfg.replay_rollback = !(combo & 32);
      cfg.enabled = !(combo == 31);  // and once fully off
      if (drafter != Drafter::Mtp && (combo & 7) != 0) continue;  // forced drafters: fewer combos
      if ((combo & 32) && (combo & 6) != 0) continue;              // copy rollbacks: fewer combos too
      SCOPED_TRACE("combo " + std::to_string(combo) + " drafter " + std::to_string(static_cast<int>(drafter)));
      const bool stock_prefill = cfg.enabled && !cfg.rollback_aware_prefill && cfg.retain_prefill_states;
      const std::vector<std::vector<int32_t>>& ref = stock_prefill ? ref_stock : ref_off;
      PromptCache cache;
      auto slot = make_slot(trim, &cache);
      Speculator& spec = slot->enable_speculation(cfg);
      size_t req = 0;
      if (drafter != Drafter::Mtp) {
        spec.set_draft_hook([&](int64_t pos, int32_t, int max, std::vector<int32_t>& d) {
          // Output index of the token at position pos: pos - prompt length.
          const int64_t first = pos - static_cast<int64_t>(reqs[req].prompt.size());
          d.clear();
          for (int i = 0; i < max; ++i) {
            const int64_t o = first + i;
            const int32_t want = ref[req][static_cast<size_t>(o)];
            d.push_back(drafter == Drafter::Correct ? want : (want + 1) % static_cast<int32_t>(n_vocab));
          }
        });
      }
      for (req = 0; req < reqs.size(); ++req) {
        GreedyPicker g;
        int64_t steps = 0;
        EXPECT_EQ(generate(*slot, reqs[req], kOut, g, &steps), ref[req]) << "request " << req;
        const RequestStats& s = slot->end_request();
        if (!cfg.enabled) {
          EXPECT_EQ(s.verify_passes, 0);
          continue;
        }
        // Each step emits its accepted drafts plus one token; the last step (one token left)
        // drafts nothing and is a plain pass.
        EXPECT_EQ(s.drafts_accepted + steps, kOut - 1);
        EXPECT_LE(s.verify_passes, steps);
        if (drafter == Drafter::Correct) {
          EXPECT_EQ(s.drafts_accepted, s.drafts_proposed);
          EXPECT_EQ(steps, (kOut - 1 + cfg.draft_max) / (cfg.draft_max + 1)) << nlohmann::json(s).dump();
        }
        if (drafter == Drafter::Wrong) {
          EXPECT_EQ(s.drafts_accepted, 0);
          EXPECT_EQ(s.verify_passes, kOut - 2);
        }
        EXPECT_EQ(s.tokens_generated, kOut - 1);
        EXPECT_EQ(slot->cached_tokens().size(), reqs[req].prompt.size() + kOut - 1);
      }
    }
}

// A request's cap on drafts (GenerationParams::max_drafts; "speculative": false over HTTP): with 0
// nothing is drafted and every step is a one-token pass, with 1 no step drafts more; the output is
// the one without speculation either way, and the MTP head stays in step with the slot, so the
// uncapped requests after a capped one draft and answer alike.
TEST_P(SpeculatorTest, ARequestsDraftCapKeepsTheOutput) {
  Qwen35Model& m = model(GetParam());
  const std::vector<SpecReq> reqs = episode(m.hparams().n_vocab);
  constexpr int kOut = 12;
  const std::vector<std::vector<int32_t>> ref = plain_outputs(m, reqs, kOut);
  auto slot = make_slot(m);
  slot->enable_speculation(SpecConfig{});
  int64_t uncapped_drafts = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const int cap = i % 3 == 0 ? 0 : i % 3 == 1 ? 1 : INT_MAX;
    SCOPED_TRACE("request " + std::to_string(i) + ", cap " + std::to_string(cap));
    GreedyPicker g;
    int64_t steps = 0;
    EXPECT_EQ(generate(*slot, reqs[i], kOut, g, &steps, cap), ref[i]);
    const RequestStats& s = slot->end_request();
    for (int d : s.step_drafted) EXPECT_LE(d, cap);
    if (cap == 0) {
      EXPECT_EQ(s.drafts_proposed, 0);
      EXPECT_EQ(s.verify_passes, 0);
      EXPECT_EQ(steps, kOut - 1);
    }
    if (cap == INT_MAX) uncapped_drafts += s.drafts_proposed;
  }
  EXPECT_GT(uncapped_drafts, 0);
}

// The verification pass computes each row exactly as a plain decode step would (same kernels,
// per-token delta rule, column-shared or not): logits bit for bit, and the state after it.
// Every row of a verification pass, 1 + 3 as MTP drafts give and 1 + 8 as a grammar's forced run
// gives, is bit for bit the one-token decode step at its position.
TEST_P(SpeculatorTest, VerifyRowsAreBitIdenticalToDecodeSteps) {
  Qwen35Model& m = model(GetParam());
  const int64_t n_vocab = m.hparams().n_vocab;
  const auto prompt = random_tokens(40, n_vocab, 8);
  const auto drafts = random_tokens(9, n_vocab, 9);
  for (int k : {3, 8})
    for (bool shared : {true, false}) {
      SCOPED_TRACE("k = " + std::to_string(k) + (shared ? ", column-shared" : ", one column at a time"));
      auto a = m.new_sequence(kSpecCtx), b = m.new_sequence(kSpecCtx);
      ForwardOutput o;
      m.forward(*a, prompt, ForwardOptions{}, o);
      b->copy_from(*a);
      SpecConfig cfg;
      cfg.column_shared_verify = shared;
      cfg.draft_max = 3;
      cfg.forced_max = 8;
      ModelBackend mb(m, std::move(b));
      mb.start_speculation(cfg);
      Speculator spec(mb, cfg);
      spec.set_draft_hook([&](int64_t, int32_t, int, std::vector<int32_t>& d) { d.assign(drafts.begin(), drafts.begin() + k); });
      // A picker that records every row it is shown and accepts everything (returns the draft).
      struct Recorder final : TokenPicker {
        std::vector<std::vector<float>> rows;
        std::vector<int32_t> script;
        int32_t pick(std::span<const float> l) override {
          rows.emplace_back(l.begin(), l.end());
          return script[rows.size() - 1];
        }
      } rec;
      rec.script = drafts;
      SpecStep step;
      SpecLimits lim;
      lim.context = prompt;  // the speculator never saw the prompt pass: tokens from the context
      spec.step(7, rec, step, lim);
      ASSERT_EQ(step.accepted, k);
      ASSERT_EQ(rec.rows.size(), static_cast<size_t>(k + 1));
      std::vector<int32_t> fed = {7};
      fed.insert(fed.end(), drafts.begin(), drafts.begin() + k);
      for (int i = 0; i <= k; ++i) {
        m.forward(*a, std::span<const int32_t>(&fed[static_cast<size_t>(i)], 1), ForwardOptions{}, o);
        EXPECT_EQ(std::memcmp(o.logits.data(), rec.rows[static_cast<size_t>(i)].data(), o.logits.size() * sizeof(float)), 0)
            << "row " << i;
      }
      EXPECT_EQ(std::memcmp(a->recurrent_data(), mb.state().recurrent_data(), a->recurrent_bytes()), 0);
    }
}

// A seeded sampler: sample-and-match gives exactly the tokens the same sampler gives without
// speculation (the same draws in the same order from the same logits).
TEST_P(SpeculatorTest, SampledOutputEqualsPlainSampling) {
  Qwen35Model& m = model(GetParam());
  const std::vector<SpecReq> reqs = episode(m.hparams().n_vocab);
  text::SamplerParams sp;
  sp.temperature = 1.5f;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  sp.repeat_penalty = 1.1f;
  sp.seed = 1234;
  struct SamplerPicker final : TokenPicker {
    text::Sampler s;
    explicit SamplerPicker(text::SamplerParams p) : s(p) {}
    int32_t pick(std::span<const float> l) override { return s.sample(l); }
    void accept(int32_t t) override { s.accept(t); }
  };
  constexpr int kOut = 16;
  for (size_t i = 0; i < 3; ++i) {
    // Without speculation: plain decode().
    SamplerPicker a(sp);
    auto plain = make_slot(m);
    std::vector<int32_t> want;
    std::span<const float> logits = plain->prefill(Prompt{reqs[i].prompt, reqs[i].users}).logits;
    for (int n = 0; n < kOut; ++n) {
      const int32_t t = a.pick(logits);
      a.accept(t);
      want.push_back(t);
      if (n + 1 < kOut) logits = plain->decode(t);
    }
    // With speculation; the correct continuation forced half of the time so drafts get accepted.
    SamplerPicker b(sp);
    auto slot = make_slot(m);
    Speculator& spec = slot->enable_speculation(SpecConfig{});
    int calls = 0;
    spec.set_draft_hook([&](int64_t pos, int32_t, int, std::vector<int32_t>& d) {
      if (calls++ % 2) return;
      const int64_t first = pos - static_cast<int64_t>(reqs[i].prompt.size());
      for (size_t j = 0; j < d.size(); ++j)
        if (first + static_cast<int64_t>(j) < kOut) d[j] = want[static_cast<size_t>(first + j)];
    });
    EXPECT_EQ(generate(*slot, reqs[i], kOut, b), want) << "request " << i;
    EXPECT_GT(slot->end_request().drafts_accepted, 0);
  }
}

// After a verify pass with j of k drafts accepted, the state (recurrent and KV) is the state of
// a per-token run to that position, for every j; the next logits agree too.
TEST_P(SpeculatorTest, RollbackStateEqualsPerTokenRunForEveryAcceptedCount) {
  Qwen35Model& m = model(GetParam());
  const int64_t n_vocab = m.hparams().n_vocab;
  const auto prompt = random_tokens(45, n_vocab, 21);
  constexpr int K = 3;
  const std::vector<int32_t> ref = reference(m, prompt, K + 2);
  for (int variant = 0; variant < 3; ++variant)
    for (int j = 0; j <= K; ++j) {
      const bool shared = variant != 1, replay = variant != 2;
      SCOPED_TRACE("j=" + std::to_string(j) + (shared ? "" : " column-by-column") + (replay ? " replay" : " copy"));
      SpecConfig cfg;
      cfg.draft_max = K;
      cfg.column_shared_verify = shared;
      cfg.replay_rollback = replay;
      ModelBackend mb(m, kSpecCtx);
      mb.start_speculation(cfg);
      Speculator spec(mb, cfg);
      mb.run(prompt, {}, false, {});
      EXPECT_EQ(static_cast<int>(mb.last_pass().rollback_states.size()), K + 1);  // retained in the prompt pass
      const SequenceState* st = &mb.state();
      spec.set_draft_hook([&](int64_t, int32_t, int, std::vector<int32_t>& d) {
        d.clear();
        for (int i = 0; i < K; ++i) d.push_back(i < j ? ref[1 + i] : (ref[1 + i] + 7) % static_cast<int32_t>(n_vocab));
      });
      auto plain = m.new_sequence(kSpecCtx);  // the same prefilled state, decoded token by token below
      plain->copy_from(mb.state());
      GreedyPicker g;
      SpecStep step;
      spec.step(ref[0], g, step);
      ASSERT_EQ(step.drafted, K);
      ASSERT_EQ(step.accepted, j);
      ASSERT_EQ(step.tokens.size(), static_cast<size_t>(j + 1));
      for (int i = 0; i <= j; ++i) EXPECT_EQ(step.tokens[i], ref[1 + i]);
      const int64_t n = static_cast<int64_t>(prompt.size()) + 1 + j;
      ASSERT_EQ(st->n_past(), n);

      // Reference 1: plain one-token decode steps from the same prefilled state.
      ForwardOutput po2;
      for (int i = 0; i <= j; ++i) m.forward(*plain, std::span<const int32_t>(&ref[i], 1), ForwardOptions{}, po2);
      // Reference 2: the whole sequence per token from scratch (F32: the quantized types round
      // their activations to 8 bits, where last-bit differences of the prompt's chunked
      // algorithm can move a value by a quantization step).
      auto scratch = m.new_sequence(kSpecCtx);
      std::vector<int32_t> all = prompt;
      all.insert(all.end(), ref.begin(), ref.begin() + 1 + j);
      ForwardOptions pt;
      pt.gdn = GdnAlgorithm::Recurrent;
      ForwardOutput wo;
      m.forward(*scratch, all, pt, wo);
      std::vector<SequenceState*> refs = {plain.get()};
      if (GetParam() == "F32") refs.push_back(scratch.get());
      for (SequenceState* want : refs) {
        ASSERT_EQ(want->n_past(), n);
        double diff = 0, mag = 0;
        for (int64_t i = 0; i < st->recurrent_floats(); ++i) {
          diff = std::max(diff, std::fabs(double(st->recurrent_data()[i]) - want->recurrent_data()[i]));
          mag = std::max(mag, std::fabs(double(want->recurrent_data()[i])));
        }
        EXPECT_LE(diff, 1e-5 * mag) << (want == plain.get() ? "vs plain decode" : "vs per-token run");
      }
      // The KV rows kept are the plain run's: the continuation agrees.
      const int32_t next = step.tokens.back();
      ForwardOutput b;
      mb.run(std::span<const int32_t>(&next, 1), {}, true, {});
      const std::vector<float> a_logits(mb.logits().begin(), mb.logits().end());
      m.forward(*plain, std::span<const int32_t>(&next, 1), ForwardOptions{}, b);
      double ld = 0, lm = 0;
      for (size_t i = 0; i < a_logits.size(); ++i) {
        ld = std::max(ld, std::fabs(double(a_logits[i]) - b.logits[i]));
        lm = std::max(lm, std::fabs(double(b.logits[i])));
      }
      EXPECT_LE(ld, 1e-5 * lm);
      EXPECT_EQ(argmax_first(a_logits), argmax_first(b.logits));
    }
}

// The MTP head follows the trunk through restores and prompt-cache loads: its drafts (and KV
// rows) after a request that restored a checkpoint equal those of a head that saw the prompt
// in one go.
TEST_P(SpeculatorTest, MtpStateFollowsTheTrunkThroughRestores) {
  // The reference below is one pass over the whole prompt, whose delta-rule chunks fall
  // differently from the slot's passes after a restore; on 4-bit weights the float
  // differences can flip activation codes and so drafts. The MTP bookkeeping this checks does
  // not depend on the weight type: F32 and Q8_0 cover it.
  if (GetParam() == "Q4_0" || GetParam() == "Q4_K_M") GTEST_SKIP() << "compared on F32 and Q8_0 (see the comment)";
  Qwen35Model& m = model(GetParam());
  const std::vector<SpecReq> reqs = episode(m.hparams().n_vocab);
  PromptCache cache;
  ModelBackend* slot_backend = nullptr;
  auto slot = make_slot(m, &cache, &slot_backend);
  slot->enable_speculation(SpecConfig{});
  int restored = 0, loaded = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const PrefillReport rep = slot->prefill(Prompt{reqs[i].prompt, reqs[i].users});
    restored += rep.stats.checkpoints_restored;
    loaded += rep.stats.prompt_cache_loaded;
    const int32_t last = argmax_first(rep.logits);
    const std::vector<int32_t> got = slot->speculator()->draft(last, 3, slot->cached_tokens());

    ModelBackend fresh_backend(m, kSpecCtx);
    fresh_backend.start_speculation(SpecConfig{});
    Speculator fresh(fresh_backend, SpecConfig{});
    fresh_backend.run(reqs[i].prompt, {}, false, {});
    const std::vector<int32_t> want = fresh.draft(last, 3);
    // After a prompt-cache load the head has no trunk hidden states for the loaded rows (zeros
    // there): its drafts may differ from a fresh head's (the output does not, see above).
    if (!rep.stats.prompt_cache_loaded) {
      EXPECT_EQ(got, want) << "request " << i;
    }
    const MtpState& a = slot_backend->drafter()->mtp_state();
    const MtpState& b = fresh_backend.drafter()->mtp_state();
    ASSERT_EQ(a.n_past, b.n_past);
    double diff = 0, mag = 0;
    for (size_t x = 0; x < static_cast<size_t>(a.n_past * m.hparams().kv_dim()); ++x) {
      diff = std::max(diff, std::fabs(double(a.k[x]) - b.k[x]));
      mag = std::max(mag, std::fabs(double(b.k[x])));
    }
    // Rows after a prompt-cache load lack the trunk's hidden states (zeros): drafts may differ
    // there, so only requests without a load must match.
    // Q8_0: the MTP head quantizes its inputs to 8 bits, so the trunk's last-bit differences
    // between pass layouts (chunked vs per-token tails) can move a row by one quantization step.
    const double tol = GetParam() == "F32" ? 1e-3 : 3e-2;
    if (!rep.stats.prompt_cache_loaded) {
      EXPECT_LE(diff, tol * mag) << "request " << i;
    }
  }
  EXPECT_GT(restored, 0);
  EXPECT_GT(loaded, 0);
}

// Stop tokens and max_tokens bound what a step emits and feeds.
TEST_P(SpeculatorTest, StopTokensAndMaxTokensEndTheStep) {
  Qwen35Model& m = model(GetParam());
  const std::vector<SpecReq> reqs = episode(m.hparams().n_vocab);
  const std::vector<int32_t> ref = reference(m, reqs[0].prompt, 8);
  auto slot = make_slot(m);
  Speculator& spec = slot->enable_speculation(SpecConfig{});
  spec.set_draft_hook([&](int64_t pos, int32_t, int max, std::vector<int32_t>& d) {
    const int64_t first = pos - static_cast<int64_t>(reqs[0].prompt.size());
    d.clear();
    for (int64_t o = first; o < first + max && o < 8; ++o) d.push_back(ref[static_cast<size_t>(o)]);
  });
  slot->prefill(Prompt{reqs[0].prompt, reqs[0].users});
  GreedyPicker g;
  // ref[2] is a stop token: emitted last, never fed.
  const int32_t stop[] = {ref[2]};
  auto toks = slot->decode_speculative(ref[0], g, 100, stop);
  ASSERT_EQ(std::vector<int32_t>(toks.begin(), toks.end()), std::vector<int32_t>(ref.begin() + 1, ref.begin() + 3));
  EXPECT_EQ(slot->cached_tokens().size(), reqs[0].prompt.size() + 2);
  toks = slot->decode_speculative(ref[2], g, 1);
  ASSERT_EQ(toks.size(), 1u);
  EXPECT_EQ(toks[0], ref[3]);
  const RequestStats s = slot->end_request();
  EXPECT_EQ(s.verify_passes, 1);
  EXPECT_EQ(s.drafts_accepted, 1);
  // One step drafted (the second, limited to one token, could not): its first draft was right.
  EXPECT_EQ(s.mtp_first_drafts, 1);
  EXPECT_EQ(s.mtp_first_accepted, 1);
  const nlohmann::json j = s;
  EXPECT_EQ(j.at("verify_passes"), 1);
  EXPECT_EQ(j.at("mtp_first_drafts"), 1);
  EXPECT_EQ(j.at("mtp_first_accepted"), 1);
  EXPECT_EQ(j.at("drafts_proposed"), 3);
}

// A speculating slot's prompt passes keep rollback states, so their last draft_max tokens run
// the delta rule per token; a plain slot's prompt passes take the same per-token tail
// (ModelBackend::set_prompt_tail), so both compute the same bits — on quantized weights a float
// difference there can flip an activation code and move the logits by ~1%, enough to change a
// sampled token.
TEST_P(SpeculatorTest, PromptPassesWithAndWithoutRollbackStatesAgreeBitForBit) {
  Qwen35Model& m = model(GetParam());
  const std::vector<SpecReq> reqs = episode(m.hparams().n_vocab);
  for (const SpecReq& r : {reqs[0], reqs[5]}) {
    auto plain_st = m.new_sequence(kSpecCtx), spec_st = m.new_sequence(kSpecCtx);
    ForwardOptions plain, spec;
    plain.per_token_tail = ModelBackend::kDefaultPromptTail;
    spec.per_token_tail = ModelBackend::kDefaultPromptTail;
    ModelBackend probe(m, kSpecCtx);
    probe.start_speculation(SpecConfig{});
    probe.drafter()->configure_prompt_pass(static_cast<int64_t>(r.prompt.size()), spec);
    ASSERT_EQ(spec.rollback_states, SpecConfig{}.draft_max + 1);
    ForwardOutput a, b;
    m.forward(*plain_st, r.prompt, plain, a);
    m.forward(*spec_st, r.prompt, spec, b);
    EXPECT_EQ(a.logits, b.logits);
    RecurrentCheckpoint ca, cb;
    plain_st->save_recurrent(ca);
    spec_st->save_recurrent(cb);
    EXPECT_TRUE(ca.data == cb.data) << "recurrent state after the prompt";
  }
}

// The dry run of a speculating slot: given what the server's steps drafted and accepted (its
// request log's step_drafted / step_accepted) and the tokens it fed, a NullBackend slot with the
// same settings reproduces every count of every request — verification passes, roll-backs,
// drafts, tokens, and through the positions the next request's restore, passes and checkpoints.
// MTP drafts with and without a probability floor (so steps draft fewer than k), forced wrong
// drafts (a roll-back every step), and a stop token inside a step.
TEST_P(SpeculatorTest, DryRunReproducesASpeculatingSlotsCounts) {
  Qwen35Model& m = model(GetParam());
  const int64_t n_vocab = m.hparams().n_vocab;
  const std::vector<SpecReq> reqs = episode(n_vocab);
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    SpecConfig cfg;
    if (variant == 1) cfg.p_min = 0.11f;
    PromptCache cache;
    auto slot = make_slot(m, &cache);
    Speculator& spec = slot->enable_speculation(cfg);
    if (variant == 2)
      spec.set_draft_hook([&](int64_t pos, int32_t last, int max, std::vector<int32_t>& d) {
        d.assign(static_cast<size_t>(max), static_cast<int32_t>((last + pos) % n_vocab));
      });
    std::vector<RecordedRequest> recorded;
    std::vector<RequestStats> served;
    int64_t roll_backs = 0, verify_passes = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      const SpecReq& r = reqs[i];
      const PrefillReport rep = slot->prefill(Prompt{r.prompt, r.users});
      GreedyPicker g;
      int32_t t = g.pick(rep.logits);
      const int64_t n_out = 6 + static_cast<int64_t>(i % 4) * 3;
      // Request 3 stops at its fourth greedy token if a step emits it (a stop token is emitted,
      // never fed).
      const std::vector<int32_t> ref = reference(m, r.prompt, static_cast<int>(n_out));
      std::vector<int32_t> stops;
      if (i == 3) stops.push_back(ref[3]);
      int64_t emitted = 1;
      while (emitted < n_out) {
        const auto toks = slot->decode_speculative(t, g, n_out - emitted, stops);
        emitted += static_cast<int64_t>(toks.size());
        t = toks.back();
        if (!stops.empty() && t == stops[0]) break;
      }
      served.push_back(slot->end_request());
      // No grammar: every draft is the MTP head's (or the hook's in its place), so the first-draft
      // counts follow from the per-step lists: steps that drafted, and those that accepted one.
      int64_t first_drafts = 0, first_accepted = 0;
      for (size_t k = 0; k < served.back().step_drafted.size(); ++k)
        if (served.back().step_drafted[k] > 0) {
          ++first_drafts;
          first_accepted += served.back().step_accepted[k] > 0;
        }
      EXPECT_EQ(served.back().mtp_first_drafts, first_drafts) << "request " << i + 1;
      EXPECT_EQ(served.back().mtp_first_accepted, first_accepted) << "request " << i + 1;
      roll_backs += served.back().roll_backs;
      verify_passes += served.back().verify_passes;
      RecordedRequest rec;
      rec.prompt = r.prompt;
      rec.user_starts = r.users;
      rec.output.assign(slot->cached_tokens().begin() + static_cast<std::ptrdiff_t>(r.prompt.size()),
                        slot->cached_tokens().end());
      rec.step_drafted = served.back().step_drafted;
      rec.step_accepted = served.back().step_accepted;
      recorded.push_back(std::move(rec));
    }
    if (variant == 2) {
      EXPECT_GT(roll_backs, 0);
    }
    EXPECT_GT(verify_passes, 0);
    std::set<int32_t> drafted;
    for (const RequestStats& st : served) drafted.insert(st.step_drafted.begin(), st.step_drafted.end());
    EXPECT_GT(drafted.size(), 1u);  // steps that drafted fewer than k (probability floor, output limit)

    PolicyConfig pc;
    pc.kind = PolicyKind::Divergence;
    pc.divergence.min_gap = 4;
    auto dry = make_dry_run_slot(make_policy(pc), slot->config(), NullBackend::for_model(m.shape(), kSpecCtx));
    PromptCache dry_cache;
    dry->set_prompt_cache(&dry_cache);
    dry->enable_speculation(cfg);
    const std::vector<RequestStats> sim = replay(*dry, recorded);
    ASSERT_EQ(sim.size(), served.size());
    int64_t sim_roll_backs = 0, sim_verify = 0;
    for (size_t i = 0; i < sim.size(); ++i) {
      EXPECT_TRUE(sim[i].same_counts(served[i])) << "request " << i + 1 << "\nserver " << nlohmann::json(served[i]).dump()
                                                  << "\ndry run " << nlohmann::json(sim[i]).dump();
      sim_roll_backs += sim[i].roll_backs;
      sim_verify += sim[i].verify_passes;
    }
    EXPECT_EQ(sim_roll_backs, roll_backs);
    EXPECT_EQ(sim_verify, verify_passes);
    // The dry-run backend counted the same passes and roll-backs itself.
    EXPECT_EQ(dry->backend().spec_counts().verify_passes, verify_passes);
    EXPECT_EQ(dry->backend().spec_counts().roll_backs, roll_backs);
    EXPECT_EQ(dry->cached_tokens(), slot->cached_tokens());
  }
}

// A log without per-step counts cannot drive a speculating dry run: a clear error, not a guess.
TEST(SpeculationDryRun, NeedsTheLoggedSteps) {
  auto dry = make_dry_run_slot(make_policy(PolicyConfig{}), SlotConfig{}, NullBackend(64, 100, 10));
  dry->enable_speculation(SpecConfig{});
  RecordedRequest r;
  r.prompt = {1, 2, 3};
  r.output = {4, 5};
  const std::vector<RecordedRequest> reqs = {r};
  EXPECT_THROW(replay(*dry, reqs), std::invalid_argument);
  r.step_drafted = {3};
  r.step_accepted = {4};  // more accepted than drafted
  const std::vector<RecordedRequest> bad = {r};
  EXPECT_THROW(replay(*dry, bad), std::invalid_argument);
}

// F32 and Q8_0, and the two packed paths a served file most often takes: Q4_0 (packed Q4_0 trunk,
// packed Q6_K head) and Q4_K_M (packed Q4_K / Q6_K), whose 1..4-token products run on the
// vector units in verification passes and decode steps alike.
// Named by weight type (…/Q4_0, not …/2): the sanitizer build's skip list (CMakeLists.txt) picks
// the types it leaves to the release run by these names.
INSTANTIATE_TEST_SUITE_P(Types, SpeculatorTest, ::testing::Values("F32", "Q8_0", "Q4_0", "Q4_K_M"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The first 3 drafts after a prompt pass over `prompt`, with the trimmed draft head when `trimmed`
// (and the file has one: checked).
std::vector<int32_t> first_drafts(Qwen35Model& m, const std::vector<int32_t>& prompt, bool trimmed) {
  SpecConfig cfg;
  cfg.trimmed_head = trimmed;
  ModelBackend mb(m, kSpecCtx);
  mb.start_speculation(cfg);
  Speculator spec(mb, cfg);
  mb.run(prompt, {}, true, {});
  EXPECT_EQ(mb.drafter()->drafting_trimmed(), trimmed && m.weights().mtp->draft_head.has_value());
  const std::vector<float> logits(mb.logits().begin(), mb.logits().end());
  return spec.draft(argmax_first(logits), 3);
}

TEST(DraftHead, SelectionPutsSpecialAndByteTokensFirstThenCorpusFrequency) {
  auto f = GgufFile::open(ensure_tiny_model("F32"));
  const int64_t n_vocab = static_cast<int64_t>(f->get_string_array("tokenizer.ggml.tokens")->size());
  const std::vector<int32_t> corpus = {300, 301, 301, 302, 302, 302};
  const DraftRowSelection all = select_draft_rows(*f, n_vocab, corpus, 1 << 20);
  EXPECT_EQ(static_cast<int64_t>(all.ids.size()), n_vocab);  // capped by the vocabulary
  const DraftRowSelection s = select_draft_rows(*f, n_vocab, corpus, 258);
  ASSERT_EQ(s.ids.size(), 258u);
  EXPECT_TRUE(std::is_sorted(s.ids.begin(), s.ids.end()));
  EXPECT_GE(s.special_and_byte, 256);  // the 256 byte-level characters (and the specials)
  for (int32_t b = 0; b < 256; ++b) EXPECT_TRUE(std::binary_search(s.ids.begin(), s.ids.end(), b)) << b;
  // Rows left after the specials and bytes go to the most frequent corpus tokens.
  const int64_t left = 258 - s.special_and_byte;
  if (left >= 1) {
    EXPECT_TRUE(std::binary_search(s.ids.begin(), s.ids.end(), 302));
  }
  EXPECT_THROW(select_draft_rows(*f, n_vocab, std::vector<int32_t>{static_cast<int32_t>(n_vocab)}, 10),
               std::invalid_argument);
}

TEST(DraftHead, CorpusFileFormats) {
  const std::string dir = test_dir();
  std::ofstream(dir + "/c.json") << R"([{"prompt": [1, 2], "output": [5, 6, 6]}, {"output": [7]}])";
  std::ofstream(dir + "/c.txt") << "5 6,6\n7\n";
  std::ofstream(dir + "/bad.txt") << "5 x 6";
  const std::vector<int32_t> want = {5, 6, 6, 7};
  EXPECT_EQ(read_token_corpus(dir + "/c.json"), want);
  EXPECT_EQ(read_token_corpus(dir + "/c.txt"), want);
  EXPECT_THROW(read_token_corpus(dir + "/bad.txt"), std::runtime_error);
  EXPECT_THROW(read_token_corpus(dir + "/missing.txt"), std::runtime_error);
}

// The trimmed file keeps every tensor; the loader binds the head and its ids; drafting over it
// maps rows back to token ids; a head with every row drafts exactly like the full head.
TEST(DraftHead, TrimmedFileLoadsAndDrafts) {
  const std::string src = ensure_tiny_model("Q8_0");
  const std::string path = trimmed_tiny("Q8_0", 200);
  auto a = GgufFile::open(src);
  auto b = GgufFile::open(path);
  for (const GgufTensorInfo& t : a->tensors()) {
    const GgufTensorInfo* u = b->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    ASSERT_EQ(u->nbytes, t.nbytes);
    EXPECT_EQ(std::memcmp(u->data, t.data, t.nbytes), 0) << t.name;
  }
  auto m = Qwen35Model::load(path, 1);
  const Qwen35MtpWeights& M = *m->weights().mtp;
  ASSERT_TRUE(M.draft_head.has_value());
  EXPECT_EQ(M.draft_head->rows, 200);
  ASSERT_EQ(M.draft_token_ids.size(), 200u);
  for (int64_t r = 0; r < 200; ++r)  // each row is the head row of its token, byte for byte
    EXPECT_EQ(std::memcmp(M.draft_head->row(r), m->weights().output.row(M.draft_token_ids[r]), M.draft_head->row_stride), 0);

  const auto prompt = random_tokens(30, m->hparams().n_vocab, 3);
  auto draft_with = [&](Qwen35Model& mm, bool trimmed) { return first_drafts(mm, prompt, trimmed); };
  for (int32_t d : draft_with(*m, true))
    EXPECT_TRUE(std::binary_search(M.draft_token_ids.begin(), M.draft_token_ids.end(), d)) << d;
  // All rows: the same drafts as the full head.
  const std::string full_rows = test_dir() + "/tiny-allrows-" + std::to_string(::getpid()) + ".gguf";
  write_trimmed_draft_file(src, full_rows, {}, 1 << 20, DraftForm::Tensor);
  auto mf = Qwen35Model::load(full_rows, 1);
  EXPECT_EQ(draft_with(*mf, true), draft_with(*mf, false));
  // Trimming a trimmed file replaces the head.
  const std::string again = test_dir() + "/tiny-again-" + std::to_string(::getpid()) + ".gguf";
  write_trimmed_draft_file(path, again, {}, 100, DraftForm::Tensor);
  EXPECT_EQ(Qwen35Model::load(again, 1)->weights().mtp->draft_head->rows, 100);
  std::filesystem::remove(full_rows);
  std::filesystem::remove(again);
}

TEST(DraftHead, LoaderRejectsInconsistentTables) {
  const std::string src = trimmed_tiny("F32", 200);
  auto f = GgufFile::open(src);
  Qwen35HParams hp = Qwen35HParams::from_gguf(*f);
  hp.n_vocab = f->find_tensor("token_embd.weight")->ne[1];
  const std::string head = draft_head_tensor_name(hp.n_layer);
  auto rewrite = [&](const std::string& name, auto edit) {
    GgufWriter w(f->alignment());
    for (const auto& [k, v] : f->metadata()) w.set_value(k, v);
    for (const GgufTensorInfo& t : f->tensors())
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                   std::vector<uint8_t>(t.data, t.data + t.nbytes));
    edit(w);
    const std::string p = test_dir() + "/" + name + "-" + std::to_string(::getpid()) + ".gguf";
    w.write_file(p);
    return p;
  };
  auto expect_error = [&](const std::string& path, const std::string& needle) {
    try {
      Qwen35Model::load(path, 1);
      ADD_FAILURE() << "no error for " << path;
    } catch (const GgufError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
  };
  const std::vector<int64_t>& ids = *f->get_int_array(kDraftTokenIdsKey);
  std::vector<int32_t> ids32(ids.begin(), ids.end());
  {
    auto dup = ids32;
    dup[1] = dup[0];
    expect_error(rewrite("dup", [&](GgufWriter& w) { w.set_array_i32(kDraftTokenIdsKey, dup); }), "appears twice");
  }
  {
    auto out = ids32;
    out[5] = static_cast<int32_t>(hp.n_vocab);
    expect_error(rewrite("range", [&](GgufWriter& w) { w.set_array_i32(kDraftTokenIdsKey, out); }), "outside the vocabulary");
  }
  {
    auto shortv = ids32;
    shortv.pop_back();
    expect_error(rewrite("short", [&](GgufWriter& w) { w.set_array_i32(kDraftTokenIdsKey, shortv); }), "one row per id");
  }
  {
    // The tensor without its table.
    GgufWriter w(f->alignment());
    for (const auto& [k, v] : f->metadata())
      if (k != kDraftTokenIdsKey) w.set_value(k, v);
    for (const GgufTensorInfo& t : f->tensors())
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                   std::vector<uint8_t>(t.data, t.data + t.nbytes));
    const std::string p = test_dir() + "/noids-" + std::to_string(::getpid()) + ".gguf";
    w.write_file(p);
    expect_error(p, "is missing");
  }
  expect_error(rewrite("empty", [&](GgufWriter& w) { w.set_array_i32(kDraftTokenIdsKey, {}); }), "is empty");
}

TEST(DraftHead, IdsOnlyFormGathersTheRowsAtLoad) {
  // The shipped policy's form: the ids alone, no tensor llama.cpp would refuse; the rows gathered
  // at load are the head's rows, byte for byte, and draft as the tensor form does.
  for (const std::string ftype : {"F32", "Q4_0"}) {
    const std::string src = ensure_tiny_model(ftype);
    const std::string ids_only = test_dir() + "/tiny-" + ftype + "-ids-" + std::to_string(::getpid()) + ".gguf";
    const std::vector<int32_t> corpus = {300, 301, 301, 302, 302, 302, 17, 17};
    const TrimReport rep = write_trimmed_draft_file(src, ids_only, corpus, 200, DraftForm::Ids);
    EXPECT_TRUE(rep.tensor_name.empty());
    auto f = GgufFile::open(ids_only);
    EXPECT_EQ(f->tensors().size(), GgufFile::open(src)->tensors().size()) << "the ids-only form adds no tensor";
    auto m = Qwen35Model::load(ids_only, 1);
    const Qwen35MtpWeights& M = *m->weights().mtp;
    ASSERT_TRUE(M.draft_head.has_value());
    ASSERT_EQ(M.draft_head->rows, 200);
    EXPECT_EQ(M.draft_token_ids, rep.selection.ids);
    const WeightMatrix& head = M.shared_head_head ? *M.shared_head_head : m->weights().output;
    for (int64_t r = 0; r < M.draft_head->rows; ++r)
      ASSERT_EQ(std::memcmp(M.draft_head->row(r), head.row(M.draft_token_ids[static_cast<size_t>(r)]), head.row_stride), 0)
          << "row " << r;
    // The same drafts as the tensor form of the same rows.
    auto mt = Qwen35Model::load(trimmed_tiny(ftype, 200), 1);
    EXPECT_TRUE(mt->weights().mtp->draft_head.has_value()) << ftype;  // both draft trimmed (first_drafts checks)
    const auto prompt = random_tokens(30, m->hparams().n_vocab, 3);
    EXPECT_EQ(first_drafts(*m, prompt, true), first_drafts(*mt, prompt, true)) << ftype;
    std::filesystem::remove(ids_only);
  }
}

TEST(Speculation, NeedsAnMtpBlockAndTheModelBackend) {
  auto m = Qwen35Model::load(ensure_tiny_model("F32", /*mtp=*/false), 1);
  ModelBackend no_mtp(*m, 64);
  EXPECT_THROW(no_mtp.start_speculation(SpecConfig{}), std::logic_error);
  auto mm = Qwen35Model::load(ensure_tiny_model("F32"), 1);
  ModelBackend with_mtp(*mm, 64);
  with_mtp.start_speculation(SpecConfig{});
  SpecConfig bad;
  bad.draft_max = -1;
  EXPECT_THROW(Speculator(with_mtp, bad), std::invalid_argument);
  // The slot refuses both: a bad config before the backend sees it, a model without an MTP block
  // in the backend's start_speculation; either way no speculator is left behind.
  Slot no_mtp_slot(std::make_unique<ModelBackend>(*m, 64), make_policy(PolicyConfig{}));
  EXPECT_THROW(no_mtp_slot.enable_speculation(SpecConfig{}), std::logic_error);
  Slot slot(std::make_unique<ModelBackend>(*mm, 64), make_policy(PolicyConfig{}));
  EXPECT_THROW(slot.enable_speculation(bad), std::invalid_argument);
  EXPECT_EQ(slot.speculator(), nullptr);
}

}  // namespace
}  // namespace tandem::serve
