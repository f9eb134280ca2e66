// Forward-pass invariants on a generated tiny model (no external data needed):
// chunked vs per-token agreement, checkpoint round trips, cut-position and
// rollback states, clone, and clear errors for bad calls.
#include "model/qwen35/qwen35_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "model/test_models.h"
#include "model/test_support.h"
#include "runtime/cpu_features.h"

namespace tandem {
namespace {

using test_support::random_tokens;

using test_support::max_abs_diff;
double max_abs(std::span<const float> a) {
  double m = 0;
  for (float x : a) m = std::max(m, std::fabs(double(x)));
  return m;
}

class TinyModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = Qwen35Model::load(ensure_tiny_model("F32")).release(); }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  // Logits of all positions, processing `tokens` in pieces ending at `splits`.
  std::vector<float> run(const std::vector<int32_t>& tokens, std::vector<int64_t> splits, GdnAlgorithm gdn) {
    auto seq = model_->new_sequence(512);
    ForwardOptions opt;
    opt.logits = LogitsMode::All;
    opt.gdn = gdn;
    std::vector<float> all;
    splits.push_back(static_cast<int64_t>(tokens.size()));
    int64_t s = 0;
    ForwardOutput out;
    for (int64_t e : splits) {
      model_->forward(*seq, std::span<const int32_t>(tokens.data() + s, e - s), opt, out);
      all.insert(all.end(), out.logits.begin(), out.logits.end());
      s = e;
    }
    return all;
  }
  static Qwen35Model* model_;
};
Qwen35Model* TinyModel::model_ = nullptr;

TEST_F(TinyModel, ChunkedAndPerTokenPrefillAgree) {
  const auto tokens = random_tokens(200, model_->hparams().n_vocab, 1);
  const auto chunked = run(tokens, {}, GdnAlgorithm::Chunked);
  const auto recurrent = run(tokens, {}, GdnAlgorithm::Recurrent);
  EXPECT_LE(max_abs_diff(chunked, recurrent), 1e-4 * max_abs(recurrent));
}

TEST_F(TinyModel, BatchAndIncrementalAgree) {
  const auto tokens = random_tokens(150, model_->hparams().n_vocab, 2);
  const auto batch = run(tokens, {}, GdnAlgorithm::Auto);
  std::vector<int64_t> splits;
  for (int64_t p = 75; p < 150; ++p) splits.push_back(p);  // the second half one token per call
  const auto split = run(tokens, splits, GdnAlgorithm::Auto);
  EXPECT_LE(max_abs_diff(batch, split), 1e-4 * max_abs(batch));
}

// [0,N) in one call vs [0,P) -> checkpoint -> other tokens -> restore -> [P,N).
TEST_F(TinyModel, CheckpointRoundTripIsBitIdentical) {
  const int64_t N = 170, P = 97;
  const auto tokens = random_tokens(N, model_->hparams().n_vocab, 3);
  const auto other = random_tokens(40, model_->hparams().n_vocab, 4);
  ForwardOptions opt;
  opt.logits = LogitsMode::All;

  auto a = model_->new_sequence(256);
  ForwardOutput out_a1, out_a2;
  model_->forward(*a, std::span<const int32_t>(tokens.data(), P), opt, out_a1);
  model_->forward(*a, std::span<const int32_t>(tokens.data() + P, N - P), opt, out_a2);

  auto b = model_->new_sequence(256);
  ForwardOutput out;
  model_->forward(*b, std::span<const int32_t>(tokens.data(), P), opt, out);
  RecurrentCheckpoint cp;
  b->save_recurrent(cp);
  EXPECT_EQ(cp.pos, P);
  EXPECT_EQ(cp.bytes(), b->recurrent_bytes());
  model_->forward(*b, other, opt, out);  // diverge
  b->restore(cp);
  EXPECT_EQ(b->n_past(), P);
  ForwardOutput out_b2;
  model_->forward(*b, std::span<const int32_t>(tokens.data() + P, N - P), opt, out_b2);
  ASSERT_EQ(out_a2.logits.size(), out_b2.logits.size());
  EXPECT_EQ(0, std::memcmp(out_a2.logits.data(), out_b2.logits.data(), out_a2.logits.size() * sizeof(float)));
}

// A cut inside a pass hands back exactly the state a pass ending there would leave.
TEST_F(TinyModel, CutStatesEqualStateOfAPassEndingThere) {
  const auto tokens = random_tokens(160, model_->hparams().n_vocab, 5);
  for (GdnAlgorithm gdn : {GdnAlgorithm::Chunked, GdnAlgorithm::Recurrent}) {
    auto seq = model_->new_sequence(256);
    ForwardOptions opt;
    opt.gdn = gdn;
    opt.cuts = {1, 64, 100, 160};
    ForwardOutput out;
    model_->forward(*seq, tokens, opt, out);
    ASSERT_EQ(out.cut_states.size(), 4u);
    for (size_t i = 0; i < opt.cuts.size(); ++i) {
      auto ref = model_->new_sequence(256);
      ForwardOptions plain;
      plain.gdn = gdn;
      ForwardOutput o2;
      model_->forward(*ref, std::span<const int32_t>(tokens.data(), opt.cuts[i]), plain, o2);
      RecurrentCheckpoint want;
      ref->save_recurrent(want);
      EXPECT_EQ(out.cut_states[i].pos, opt.cuts[i]);
      EXPECT_LE(max_abs_diff(out.cut_states[i].data, want.data), 1e-5 * max_abs(want.data))
          << "cut " << opt.cuts[i];
    }
    RecurrentCheckpoint last;
    seq->save_recurrent(last);
    EXPECT_EQ(last.data, out.cut_states.back().data) << "cut at the end = final state";
  }
}

// Last-K rollback states equal the states of a per-token run, and restoring one of
// them continues exactly like a sequence that stopped there.
TEST_F(TinyModel, RollbackStatesEqualPerTokenStates) {
  const auto tokens = random_tokens(90, model_->hparams().n_vocab, 6);
  const int K = 4;
  for (int64_t T : {90, 3}) {  // chunked body + per-token tail; and a batch shorter than K
    auto seq = model_->new_sequence(256);
    ForwardOptions opt;
    opt.rollback_states = K;
    ForwardOutput out;
    model_->forward(*seq, std::span<const int32_t>(tokens.data(), T), opt, out);
    ASSERT_EQ(static_cast<int64_t>(out.rollback_states.size()), std::min<int64_t>(K, T));
    for (size_t s = 0; s < out.rollback_states.size(); ++s) {
      const int64_t n = T - static_cast<int64_t>(s);
      EXPECT_EQ(out.rollback_states[s].pos, n);
      auto ref = model_->new_sequence(256);
      ForwardOptions per_token;
      per_token.gdn = GdnAlgorithm::Recurrent;
      ForwardOutput o2;
      model_->forward(*ref, std::span<const int32_t>(tokens.data(), n), per_token, o2);
      RecurrentCheckpoint want;
      ref->save_recurrent(want);
      EXPECT_LE(max_abs_diff(out.rollback_states[s].data, want.data), 1e-5 * max_abs(want.data))
          << "T=" << T << " slot " << s;
    }
  }
}

// A logged pass (forward_logged) copies no states; rolling back to any position of its batch recomputes the
// state a snapshot pass holds there, bit for bit (the same per-token kernel on the same inputs),
// truncates the KV, and the sequence then continues exactly as a sequence that stopped there.
TEST_F(TinyModel, ReplayRollbackEqualsSnapshotsBitForBit) {
  const auto tokens = random_tokens(60, model_->hparams().n_vocab, 8);
  const int64_t P = 50, T = 4;
  auto base = model_->new_sequence(256);
  ForwardOutput o;
  model_->forward(*base, std::span<const int32_t>(tokens.data(), P), ForwardOptions{}, o);
  const std::span<const int32_t> batch(tokens.data() + P, T);
  ForwardOptions snap;
  snap.gdn = GdnAlgorithm::Recurrent;
  snap.logits = LogitsMode::All;
  snap.rollback_states = static_cast<int>(T);
  LoggedPassOptions rep;  // every token per token, the whole batch logged: nothing to set
  rep.logits = LogitsMode::All;
  auto a = model_->new_sequence(256);
  a->copy_from(*base);
  ForwardOutput snap_out;
  model_->forward(*a, batch, snap, snap_out);
  RecurrentCheckpoint before;  // n = 0: the state the batch started from
  base->save_recurrent(before);
  for (int64_t n = 0; n <= T; ++n) {
    SCOPED_TRACE("roll back to " + std::to_string(P + n));
    auto b = model_->new_sequence(256);
    b->copy_from(*base);
    ForwardOutput rep_out;
    model_->forward_logged(*b, batch, rep, rep_out);
    EXPECT_TRUE(rep_out.rollback_states.empty());
    EXPECT_EQ(rep_out.logits, snap_out.logits);  // the pass itself computes the same rows
    model_->roll_back(*b, rep_out, P + n);
    EXPECT_EQ(b->n_past(), P + n);
    RecurrentCheckpoint got;
    b->save_recurrent(got);
    const StateBuffer& want = n == 0 ? before.data : snap_out.rollback_states[static_cast<size_t>(T - n)].data;
    ASSERT_EQ(got.data.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data.data(), want.data(), want.size() * sizeof(float)), 0);
    // Continue from there: the same logits as a sequence that ran exactly [0, P + n).
    auto c = model_->new_sequence(256);
    ForwardOptions per_token;
    per_token.gdn = GdnAlgorithm::Recurrent;
    model_->forward(*c, std::span<const int32_t>(tokens.data(), P), ForwardOptions{}, o);
    for (int64_t i = 0; i < n; ++i) model_->forward(*c, std::span<const int32_t>(tokens.data() + P + i, 1), per_token, o);
    ForwardOutput ob, oc;
    model_->forward(*b, std::span<const int32_t>(tokens.data() + 55, 3), ForwardOptions{}, ob);
    model_->forward(*c, std::span<const int32_t>(tokens.data() + 55, 3), ForwardOptions{}, oc);
    EXPECT_EQ(ob.logits, oc.logits);
    // The log is spent: the state moved on.
    EXPECT_THROW(model_->roll_back(*b, rep_out, P), std::logic_error);
  }
  // Wrong use: the log of another sequence, a position outside the batch, a bad batch. (Options
  // that contradict a log — cuts, fewer logged tokens, the chunked body — cannot be written:
  // LoggedPassOptions has no such fields.)
  auto d = model_->new_sequence(256);
  d->copy_from(*base);
  ForwardOutput rep_out;
  model_->forward_logged(*d, batch, rep, rep_out);
  EXPECT_THROW(model_->roll_back(*base, rep_out, P), std::logic_error);
  EXPECT_THROW(model_->roll_back(*d, rep_out, P - 1), std::out_of_range);
  EXPECT_THROW(model_->roll_back(*d, rep_out, P + T + 1), std::out_of_range);
  EXPECT_EQ(d->n_past(), P + T);
  const int32_t oov = static_cast<int32_t>(model_->hparams().n_vocab);
  const std::vector<int32_t> bad_batch = {1, oov};
  EXPECT_THROW(model_->forward_logged(*d, bad_batch, rep, rep_out), std::invalid_argument);
  EXPECT_THROW(model_->forward_logged(*d, std::span<const int32_t>(), rep, rep_out), std::invalid_argument);
  EXPECT_EQ(d->n_past(), P + T);
}

// The MTP head catching up with the trunk (LogitsMode::None: only the K/V rows, no attention or
// FFN) writes the cache rows a full pass over the same rows writes, bit for bit, so the drafts
// after it are the ones a full catch-up gives. F32 and quantized (packed where the tier packs)
// weights, a batch longer than 8 columns and a short one, with several threads.
TEST(MtpHead, CatchUpWritesTheCacheRowsOfAFullPass) {
  for (const char* ftype : {"F32", "Q4_K_M", "Q4_0"}) {
    SCOPED_TRACE(ftype);
    auto model = Qwen35Model::load(ensure_tiny_model(ftype), 2);
    ASSERT_TRUE(model->has_mtp());
    const int64_t n_embd = model->hparams().n_embd, n_vocab = model->hparams().n_vocab;
    const auto tokens = random_tokens(40, n_vocab, 21);
    std::vector<float> hidden(static_cast<size_t>(40 * n_embd));
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (float& h : hidden) h = nd(rng);
    auto full = model->new_mtp_state(64), kv = model->new_mtp_state(64);
    ForwardOutput fo, ko;
    for (const auto& [p0, n] : {std::pair<int64_t, int64_t>{0, 29}, {29, 3}}) {
      model->mtp_forward(*full, std::span<const int32_t>(tokens.data() + p0, n), hidden.data() + p0 * n_embd,
                         LogitsMode::All, fo);
      model->mtp_forward(*kv, std::span<const int32_t>(tokens.data() + p0, n), hidden.data() + p0 * n_embd,
                         LogitsMode::None, ko);
      EXPECT_TRUE(ko.hidden.empty());
      EXPECT_TRUE(ko.logits.empty());
    }
    ASSERT_EQ(kv->n_past, 32);
    ASSERT_EQ(full->n_past, 32);
    const size_t rows = static_cast<size_t>(32 * model->hparams().kv_dim());
    EXPECT_EQ(std::memcmp(full->k.data(), kv->k.data(), rows * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(full->v.data(), kv->v.data(), rows * sizeof(float)), 0);
    // The next rows (a draft step) see the same cache.
    model->mtp_forward(*full, std::span<const int32_t>(tokens.data() + 32, 2), hidden.data() + 32 * n_embd,
                       LogitsMode::All, fo);
    model->mtp_forward(*kv, std::span<const int32_t>(tokens.data() + 32, 2), hidden.data() + 32 * n_embd,
                       LogitsMode::All, ko);
    EXPECT_EQ(fo.logits, ko.logits);
    EXPECT_EQ(fo.hidden, ko.hidden);
  }
}

TEST_F(TinyModel, CloneContinuesIdentically) {
  const auto tokens = random_tokens(120, model_->hparams().n_vocab, 7);
  auto a = model_->new_sequence(256);
  ForwardOptions opt;
  ForwardOutput out;
  model_->forward(*a, std::span<const int32_t>(tokens.data(), 100), opt, out);
  auto b = model_->new_sequence(256);
  b->copy_from(*a);
  ForwardOutput oa, ob;
  model_->forward(*a, std::span<const int32_t>(tokens.data() + 100, 20), opt, oa);
  model_->forward(*b, std::span<const int32_t>(tokens.data() + 100, 20), opt, ob);
  EXPECT_EQ(oa.logits, ob.logits);
}

TEST_F(TinyModel, BadCallsAreRejectedWithoutTouchingTheState) {
  auto seq = model_->new_sequence(8);
  ForwardOptions opt;
  ForwardOutput out;
  const int32_t bad = static_cast<int32_t>(model_->hparams().n_vocab);
  std::vector<int32_t> toks = {1, bad};
  try {
    model_->forward(*seq, toks, opt, out);
    FAIL() << "out-of-vocabulary id accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("outside the vocabulary"), std::string::npos) << e.what();
  }
  EXPECT_EQ(seq->n_past(), 0);
  std::vector<int32_t> long_prompt(9, 1);
  EXPECT_THROW(model_->forward(*seq, long_prompt, opt, out), std::length_error);
  EXPECT_THROW(model_->forward(*seq, std::span<const int32_t>(), opt, out), std::invalid_argument);
  opt.cuts = {5};
  std::vector<int32_t> three = {1, 2, 3};
  EXPECT_THROW(model_->forward(*seq, three, opt, out), std::invalid_argument);
  opt.cuts.clear();
  opt.per_token_tail = -1;
  EXPECT_THROW(model_->forward(*seq, three, opt, out), std::invalid_argument);
  EXPECT_EQ(seq->n_past(), 0);
}

// The last per_token_tail tokens of a chunked pass run per token: the same bits as a pass that
// keeps rollback states over them (its last K - 1 tokens per token), and tails longer than the
// batch run it all per token.
TEST_F(TinyModel, PerTokenTailGivesTheBitsOfARollbackPass) {
  const std::vector<int32_t> prompt = random_tokens(37, model_->hparams().n_vocab, 9);
  for (int64_t tail : {3, 5}) {
    auto a = model_->new_sequence(64), b = model_->new_sequence(64), c = model_->new_sequence(64);
    // Chunked named explicitly: Auto runs every token per token on tiers without a fast chunked body.
    ForwardOptions with_tail, with_states, recurrent, chunked;
    with_tail.gdn = with_states.gdn = chunked.gdn = GdnAlgorithm::Chunked;
    with_tail.per_token_tail = tail;
    with_states.rollback_states = static_cast<int>(tail) + 1;
    recurrent.gdn = GdnAlgorithm::Recurrent;
    ForwardOutput oa, ob, oc;
    model_->forward(*a, prompt, with_tail, oa);
    model_->forward(*b, prompt, with_states, ob);
    EXPECT_EQ(oa.logits, ob.logits) << "tail " << tail;
    RecurrentCheckpoint ca, cb;
    a->save_recurrent(ca);
    b->save_recurrent(cb);
    EXPECT_TRUE(ca.data == cb.data) << "tail " << tail;
    // Without the tail the chunked pass differs (slightly) from the rollback pass.
    ForwardOutput plain;
    auto d = model_->new_sequence(64);
    model_->forward(*d, prompt, chunked, plain);
    EXPECT_NE(plain.logits, ob.logits) << "tail " << tail;
    // A tail as long as the batch: every token per token.
    with_tail.per_token_tail = static_cast<int64_t>(prompt.size());
    model_->forward(*c, prompt, with_tail, oc);
    auto e = model_->new_sequence(64);
    ForwardOutput oe;
    model_->forward(*e, prompt, recurrent, oe);
    EXPECT_EQ(oc.logits, oe.logits) << "tail " << tail;
  }
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// From the Avx512Vnni tier on a model packs its Q4_0/Q8_0 and K-quant matrices at load; the packed
// model decodes, one token at a time, to the logits of the unpacked one on every packed path (AVX-512 vector units; on AMX machines also the Amx tier). Q8_0 (tile type),
// Q4_K_M (packed Q4_K and Q6_K) and Q5_K_M (packed Q5_K). Only float summation order differs
// (~1e-7 relative), so a few steps are compared: further on, one activation that lands on a
// rounding boundary in one run and not the other sends the recurrent states apart (as between
// llama.cpp and us: golden_logits_test's "rounding flip"). The tiny Q4_K_M file does that at
// decode step 7 (steps 0-6 agree to 1e-6, then 3e-2): it is compared over 6 steps, the others 12.
// The unpacked model is loaded on the same tier with LoadOptions::pack_matrices off.
TEST(PackedWeights, FromTheAvx512TierAndSameLogits) {
  const CpuTier best = cpu_features().best_tier();
  if (!tier_has(best, CpuTier::Avx512Vnni)) GTEST_SKIP() << "no AVX-512 VNNI on this machine: its packed layout is not used";
  for (const auto& [ftype, steps] : {std::pair{"Q8_0", 12}, std::pair{"Q4_K_M", 6}, std::pair{"Q5_K_M", 12}}) {
    SCOPED_TRACE(ftype);
    const std::string path = ensure_tiny_model(ftype);
    auto plain = Qwen35Model::load(path, {.n_threads = 2, .tier = CpuTier::Avx512Vnni, .pack_matrices = false});
    EXPECT_EQ(plain->packed_weight_bytes(), 0u);
    auto packed = Qwen35Model::load(path, {.n_threads = 2, .tier = CpuTier::Avx512Vnni});
    EXPECT_GT(packed->packed_weight_bytes(), 0u);
    const auto toks = random_tokens(steps, packed->hparams().n_vocab, 11);
    auto run = [&](Qwen35Model& m) {
      auto st = m.new_sequence(64);
      ForwardOutput out;
      std::vector<float> all;
      for (int32_t t : toks) {  // decode steps: T = 1, the packed streaming path
        m.forward(*st, std::span<const int32_t>(&t, 1), ForwardOptions{}, out);
        all.insert(all.end(), out.logits.begin(), out.logits.end());
      }
      return all;
    };
    const auto a = run(*plain);
    const auto b = run(*packed);
    EXPECT_LE(max_abs_diff(a, b), 1e-5 * max_abs(a));
    if (tier_has(best, CpuTier::Amx)) {
      auto amx = Qwen35Model::load(path, {.n_threads = 2, .tier = CpuTier::Amx});
      const auto c = run(*amx);
      EXPECT_EQ(b, c) << "the Amx tier's packed path (vector units for one token) and the AVX-512 one differ";
    }
  }
}

}  // namespace
}  // namespace tandem
