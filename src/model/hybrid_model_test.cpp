// The lfm2 and granitehybrid models on generated files (model/hybrid_generator.h): the states a
// pass hands back (checkpoints at cuts, rollback states) are bit for bit the states of a pass
// that ends there, a restore continues bit for bit, one token per call agrees with one batch,
// and the loader refuses what it does not compute with a message that names it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "model/architectures.h"
#include "model/test_models.h"

namespace tandem {
namespace {

std::vector<int32_t> tokens(int64_t n, int64_t vocab, int salt) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + salt * 131 + 17) % vocab);
  return t;
}

struct Case {
  const char* preset;
  const char* ftype;
};

class HybridModelStates : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    LoadOptions lo;
    lo.n_threads = 2;
    model_ = load_model(ensure_hybrid_model(GetParam().preset, GetParam().ftype), lo);
  }
  std::unique_ptr<HybridModel> model_;
};

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

TEST_P(HybridModelStates, CutsAndRollbackStatesAreThePassesThatEndThere) {
  HybridModel& m = *model_;
  const int64_t T = 150;
  const auto toks = tokens(T, m.shape().n_vocab, 1);
  for (GdnAlgorithm algo : {GdnAlgorithm::Auto, GdnAlgorithm::Recurrent, GdnAlgorithm::Chunked}) {
    SCOPED_TRACE(static_cast<int>(algo));
    auto seq = m.new_sequence(T);
    ForwardOptions opt;
    opt.gdn = algo;
    opt.cuts = {37, 100};
    opt.rollback_states = 3;
    ForwardOutput out;
    m.forward(*seq, toks, opt, out);
    ASSERT_EQ(out.cut_states.size(), 2u);
    ASSERT_EQ(out.rollback_states.size(), 3u);
    // A pass that stops at the cut (with the same cuts before it, the same per-token tail after it).
    auto check = [&](const RecurrentCheckpoint& cp, const char* what) {
      auto ref = m.new_sequence(T);
      ForwardOptions o;
      o.gdn = algo;
      for (int64_t c : opt.cuts)
        if (c < cp.pos) o.cuts.push_back(c);
      // The rollback tail runs per token: a pass that ends inside it runs the same tokens per token.
      o.per_token_tail = std::max<int64_t>(0, cp.pos - (T - (opt.rollback_states - 1)));
      ForwardOutput ro;
      m.forward(*ref, std::span<const int32_t>(toks.data(), static_cast<size_t>(cp.pos)), o, ro);
      EXPECT_TRUE(same_bits(cp.data.data(), ref->recurrent_data(), cp.data.size())) << what << " at " << cp.pos;
    };
    check(out.cut_states[0], "cut");
    check(out.cut_states[1], "cut");
    for (const RecurrentCheckpoint& rb : out.rollback_states) check(rb, "rollback state");
    EXPECT_TRUE(same_bits(out.rollback_states[0].data.data(), seq->recurrent_data(), out.rollback_states[0].data.size()));
  }
}

TEST_P(HybridModelStates, ARestoredCheckpointContinuesBitForBit) {
  HybridModel& m = *model_;
  const int64_t T = 120, cut = 70;
  const auto toks = tokens(T, m.shape().n_vocab, 2);
  auto seq = m.new_sequence(T);
  ForwardOptions opt;
  opt.logits = LogitsMode::All;
  opt.cuts = {cut};
  ForwardOutput whole;
  m.forward(*seq, toks, opt, whole);
  // Another token stream after the cut, then back to the checkpoint and the original tokens.
  ForwardOptions plain;
  plain.logits = LogitsMode::All;
  seq->restore(whole.cut_states[0]);
  ForwardOutput other;
  m.forward(*seq, tokens(T - cut, m.shape().n_vocab, 9), plain, other);
  seq->restore(whole.cut_states[0]);
  ForwardOutput again;
  m.forward(*seq, std::span<const int32_t>(toks.data() + cut, static_cast<size_t>(T - cut)), plain, again);
  const size_t V = static_cast<size_t>(m.shape().n_vocab);
  ASSERT_EQ(again.logits.size(), static_cast<size_t>(T - cut) * V);
  EXPECT_TRUE(same_bits(again.logits.data(), whole.logits.data() + static_cast<size_t>(cut) * V, again.logits.size()));
}

TEST_P(HybridModelStates, OneTokenPerCallAgreesWithOneBatch) {
  HybridModel& m = *model_;
  const int64_t T = 70;
  const auto toks = tokens(T, m.shape().n_vocab, 3);
  auto b = m.new_sequence(T);
  ForwardOptions one_opt;
  ForwardOutput one;
  std::vector<float> singles;
  for (int64_t t = 0; t < T; ++t) {
    m.forward(*b, std::span<const int32_t>(toks.data() + t, 1), one_opt, one);
    singles.insert(singles.end(), one.logits.begin(), one.logits.end());
  }
  // The per-token scan over the batch is the decode path's arithmetic: the same bits. The chunked
  // scan sums in another order: within float noise on F32 files (on quantized ones that noise can
  // flip an activation's rounding, as llama.cpp's own batch and split modes differ).
  for (GdnAlgorithm algo : {GdnAlgorithm::Recurrent, GdnAlgorithm::Auto}) {
    ForwardOptions opt;
    opt.logits = LogitsMode::All;
    opt.gdn = algo;
    auto a = m.new_sequence(T);
    ForwardOutput batch;
    m.forward(*a, toks, opt, batch);
    ASSERT_EQ(batch.logits.size(), singles.size());
    double max_diff = 0;
    for (size_t i = 0; i < singles.size(); ++i) max_diff = std::max(max_diff, std::fabs(double(singles[i]) - batch.logits[i]));
    if (algo == GdnAlgorithm::Recurrent)
      EXPECT_EQ(max_diff, 0.0) << "per-token batch vs one token per call";
    else if (std::string(GetParam().ftype) == "F32")
      EXPECT_LT(max_diff, 1e-3) << "chunked batch vs one token per call";
  }
}

TEST_P(HybridModelStates, BadInputLeavesTheStateUntouched) {
  HybridModel& m = *model_;
  auto seq = m.new_sequence(8);
  ForwardOptions opt;
  ForwardOutput out;
  const std::vector<int32_t> bad = {1, 2, static_cast<int32_t>(m.shape().n_vocab)};
  EXPECT_THROW(m.forward(*seq, bad, opt, out), std::invalid_argument);
  EXPECT_THROW(m.forward(*seq, tokens(9, m.shape().n_vocab, 1), opt, out), std::length_error);
  ForwardOptions cut;
  cut.cuts = {5};
  EXPECT_THROW(m.forward(*seq, tokens(3, m.shape().n_vocab, 1), cut, out), std::invalid_argument);
  EXPECT_EQ(seq->n_past(), 0);
  EXPECT_THROW(m.forward_image(*seq, EmbeddingRows{}, opt, out), std::logic_error);
  EXPECT_FALSE(m.keeps_replay_log());
  EXPECT_FALSE(m.has_mtp());
}

INSTANTIATE_TEST_SUITE_P(Models, HybridModelStates,
                         ::testing::Values(Case{"lfm2-tiny", "F32"}, Case{"lfm2-tiny", "Q4_0"},
                                           Case{"granite-tiny", "F32"}, Case{"granite-tiny", "Q8_0"}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string n = std::string(i.param.preset) + "_" + i.param.ftype;
                           for (char& c : n)
                             if (c == '-' || c == '.') c = '_';
                           return n;
                         });

// A copy of `src` with its metadata edited (set / removed keys) and optionally one tensor more.
void rewrite(const std::string& src, const std::string& dst, const std::function<void(GgufWriter&)>& edit,
             const std::vector<std::string>& drop_keys = {}, bool extra_tensor = false) {
  auto f = GgufFile::open(src);
  GgufWriter w;
  for (const auto& [k, v] : f->metadata())
    if (std::find(drop_keys.begin(), drop_keys.end(), k) == drop_keys.end()) w.set_value(k, v);
  edit(w);
  for (const GgufTensorInfo& t : f->tensors())
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + std::max(1, t.n_dims)),
                 std::vector<uint8_t>(t.data, t.data + t.nbytes));
  if (extra_tensor) w.add_tensor("blk.0.attn_norm.bias", GgmlType::F32, {256}, std::vector<uint8_t>(1024, 0));
  w.write_file(dst);
}

std::string load_error(const std::string& path) {
  try {
    load_model(path, LoadOptions{});
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(HybridModelLoad, RefusesWhatItDoesNotComputeNamingIt) {
  namespace fs = std::filesystem;
  const std::string dir = std::string(TANDEM_BINARY_DIR) + "/test-models";
  const std::string lfm2 = ensure_hybrid_model("lfm2-tiny", "F32"), granite = ensure_hybrid_model("granite-tiny", "F32");
  const std::string out = dir + "/hybrid-refusal-" + std::to_string(::getpid()) + ".gguf";
  struct Want {
    std::string src;
    std::function<void(GgufWriter&)> edit;
    std::vector<std::string> drop;
    bool extra;
    std::vector<std::string> says;
  };
  const std::vector<Want> cases = {
      {lfm2, [](GgufWriter& w) { w.set_string("general.architecture", "llama"); }, {}, false,
       {"'llama'", "qwen35, lfm2, granitehybrid"}},
      {granite, [](GgufWriter& w) { w.set_u32("granitehybrid.expert_count", 64); }, {}, false,
       {"mixture-of-experts", "H-Tiny"}},
      {granite, [](GgufWriter&) {}, {"granitehybrid.rope.scaling.finetuned"}, false, {"rope.scaling.finetuned", "RoPE"}},
      {lfm2, [](GgufWriter& w) { w.set_u32("lfm2.attention.sliding_window", 16); }, {}, false, {"sliding-window"}},
      {lfm2, [](GgufWriter&) {}, {"lfm2.attention.head_count_kv"}, false, {"head_count_kv"}},
      {lfm2, [](GgufWriter&) {}, {}, true, {"blk.0.attn_norm.bias", "unsupported variant"}},
      {granite, [](GgufWriter&) {}, {}, true, {"blk.0.attn_norm.bias"}},
  };
  for (const Want& c : cases) {
    rewrite(c.src, out, c.edit, c.drop, c.extra);
    const std::string err = load_error(out);
    for (const std::string& s : c.says) EXPECT_NE(err.find(s), std::string::npos) << "error: '" << err << "', want " << s;
  }
  fs::remove(out);
}

}  // namespace
}  // namespace tandem
