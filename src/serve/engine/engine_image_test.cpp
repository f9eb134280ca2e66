// Screenshot requests through the engine (issue 26) on the tiny generated model and a tiny
// random mmproj of the same width:
//  * the slot feeds an image's rows at their M-RoPE positions: its prompt logits equal those of
//    vision::prefill_multimodal over the same chunks;
//  * greedy output is the same with speculation on and off, and across a restore of the text
//    before the image (divergence) against a fresh engine;
//  * the encoder cache: the same screen under the same budget is encoded once; another budget is
//    another image; an image inside the reused prefix is not encoded at all;
//  * requests with images are refused without a vision model or beyond --max-images.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/qwen35/qwen35_model.h"
#include "model/test_support.h"
#include "serve/backend/model_backend.h"
#include "serve/engine/engine.h"
#include "serve/policy/policy_factory.h"
#include "serve/request/request_image.h"
#include "serve/slot/slot.h"
#include "text/tokenizer.h"
#include "vision/multimodal_prompt.h"
#include "vision/vision_generator.h"
#include "vision/vision_model.h"

namespace tandem::serve {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const vision::RgbImage> screen(int w, int h, uint32_t seed) {
  auto img = std::make_shared<vision::RgbImage>();
  img->width = w;
  img->height = h;
  img->rgb.resize(static_cast<size_t>(w) * h * 3);
  std::mt19937 rng(seed);
  for (auto& b : img->rgb) b = static_cast<uint8_t>(rng() & 0xff);
  return img;
}

EngineConfig cfg(bool spec = false) {
  EngineConfig c;
  c.n_ctx = 512;
  c.slot.ctx_checkpoints = 4;
  c.speculation.enabled = spec;
  c.images.budget.max_tokens = 16;
  return c;
}

// "<|im_start|>user\n<before><image><after><|im_end|>\n<|im_start|>assistant\n" as the server lays it out.
EngineRequest image_request(const Engine& e, const std::string& before, std::shared_ptr<const vision::RgbImage> img,
                            const std::string& after, vision::ImageBudget budget = {}, int64_t n_predict = 6) {
  EngineRequest r;
  r.images.push_back(request_image(*img, e.image_params(budget), budget));
  const std::string text = "<|im_start|>user\n" + before + vision::kDefaultMediaMarker + after +
                           "<|im_end|>\n<|im_start|>assistant\n";
  flatten_prompt(vision::tokenize_multimodal(e.tokenizer(), text, 1), r.images, r.prompt);
  r.user_starts = {0};
  r.params.n_predict = n_predict;
  r.params.ignore_eos = true;
  r.params.sampling.temperature = 0.0f;
  return r;
}

GenerationResult run(Engine& e, EngineRequest r) {
  auto g = e.submit(std::move(r));
  EXPECT_TRUE(g->wait_done(120s));
  return g->result();
}

TEST(EngineImages, SlotPrefillEqualsPrefillMultimodal) {
  test_support::TinyModel& t = test_support::TinyModel::get();
  Engine e(*t.model, *t.tok, cfg(), t.vision());
  const auto original = screen(90, 70, 1);
  const EngineRequest r = image_request(e, "Look: ", original, " What now?");
  const RequestImage& im = r.images[0];
  std::vector<float> rows;  // llama.cpp's whole preprocessing of the decoded image, then the encoder
  t.vision()->encode(vision::preprocess(*original, e.image_params()), rows);
  ASSERT_EQ(static_cast<int64_t>(rows.size()), im.chunk.rows() * t.model->hparams().n_embd);

  // The reference: prefill_multimodal over mtmd's chunks on a fresh sequence.
  const auto chunks = vision::tokenize_multimodal(
      *t.tok, "<|im_start|>user\nLook: " + std::string(vision::kDefaultMediaMarker) + " What now?<|im_end|>\n<|im_start|>assistant\n", 1);
  auto seq = t.model->new_sequence(512);
  ForwardOptions fo;
  fo.logits = LogitsMode::Last;
  ForwardOutput ref;
  vision::prefill_multimodal(*t.model, *seq, chunks, {vision::ImageEmbedding{rows, im.chunk.nx, im.chunk.ny}}, fo, ref);

  Slot slot(std::make_unique<ModelBackend>(*t.model, 512), make_policy(PolicyConfig{}));
  std::vector<PromptImage> images{PromptImage{im.chunk, [&] { return rows.data(); }}};
  const PrefillReport rep = slot.prefill(Prompt{r.prompt, r.user_starts, images});
  ASSERT_EQ(rep.logits.size(), ref.logits.size());
  double worst = 0;
  for (size_t i = 0; i < ref.logits.size(); ++i) worst = std::max(worst, std::abs(double(rep.logits[i]) - ref.logits[i]));
  EXPECT_LT(worst, 1e-4);  // the same rows and positions; only the passes' split differs
  EXPECT_EQ(rep.stats.image_rows_prefilled, im.chunk.rows());
}

TEST(EngineImages, GreedyIsTheSameWithSpeculationAndAcrossRestores) {
  test_support::TinyModel& t = test_support::TinyModel::get();
  Engine plain(*t.model, *t.tok, cfg(false), t.vision());
  Engine spec(*t.model, *t.tok, cfg(true), t.vision());
  const std::string rules = "You operate a phone. Answer with one JSON action. ";
  // Three steps share the text before the screenshot; the screens differ. Step 2 keeps the
  // state at the image's first row (divergence: L = the image), step 3 restores it.
  std::vector<int32_t> first_out;
  GenerationResult a, b;
  for (uint32_t k = 1; k <= 3; ++k) {
    a = run(plain, image_request(plain, rules + "Step 1.", screen(90, 70, k), " Act."));
    b = run(spec, image_request(spec, rules + "Step 1.", screen(90, 70, k), " Act."));
    EXPECT_EQ(a.output, b.output) << "step " << k;
    EXPECT_EQ(a.stats.image_rows_prefilled, a.stats.image_rows);
  }
  const int64_t image_begin = a.stats.lcp;  // the text before the screen is all shared
  EXPECT_GT(image_begin, 0);
  EXPECT_EQ(a.stats.restore_pos, image_begin);  // restored, not recomputed
  EXPECT_GT(b.stats.verify_passes, 0);          // drafting after an image ran

  Engine fresh(*t.model, *t.tok, cfg(false), t.vision());
  const auto c = run(fresh, image_request(fresh, rules + "Step 1.", screen(90, 70, 3), " Act."));
  EXPECT_EQ(c.output, a.output);
  EXPECT_EQ(c.stats.restore_pos, 0);
}

TEST(EngineImages, EncoderCacheSkipsTheEncoderForTheSameScreenAndBudget) {
  test_support::TinyModel& t = test_support::TinyModel::get();
  Engine e(*t.model, *t.tok, cfg(), t.vision());
  const auto img = screen(300, 200, 3);  // above both budgets: 16 and 8 tokens
  const auto r1 = run(e, image_request(e, "First question. ", img, " Go."));
  EXPECT_EQ(r1.stats.images_encoded, 1);
  EXPECT_GT(r1.stats.encoder_ms, 0.0);
  // Another text before the same screen: its rows are needed again, and found in the cache.
  const auto r2 = run(e, image_request(e, "Second, other question. ", img, " Go."));
  EXPECT_EQ(r2.stats.images_encoded, 0);
  EXPECT_EQ(r2.stats.encoder_cache_hits, 1);
  EXPECT_EQ(r2.stats.image_rows_prefilled, r2.stats.image_rows);
  // The same screen under another budget is another image.
  vision::ImageBudget small;
  small.max_tokens = 8;
  const auto r3 = run(e, image_request(e, "Second, other question. ", img, " Go.", small));
  EXPECT_EQ(r3.stats.images_encoded, 1);
  EXPECT_NE(r3.stats.image_rows, r2.stats.image_rows);
  // The same request again: no checkpoint lies after the image (none is made in the fill that
  // decoded it), so its rows run again, from the cache.
  const auto r4 = run(e, image_request(e, "Second, other question. ", img, " Go.", small));
  EXPECT_EQ(r4.stats.images_encoded, 0);
  EXPECT_EQ(r4.stats.encoder_cache_hits, 1);
  // A continuation (the last prompt, the answer, more text): the live state goes on, the image
  // lies in the reused prefix and is neither encoded nor looked up.
  EngineRequest r5 = image_request(e, "Second, other question. ", img, " Go.", small);
  r5.prompt.insert(r5.prompt.end(), r4.output.begin(), r4.output.end() - 1);
  const std::vector<int32_t> more = e.tokenizer().encode("<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n");
  r5.prompt.insert(r5.prompt.end(), more.begin(), more.end());
  const auto a5 = run(e, r5);
  EXPECT_EQ(a5.stats.restore_pos, static_cast<int64_t>(r4.stats.n_prompt + r4.output.size() - 1));
  EXPECT_EQ(a5.stats.images_encoded, 0);
  EXPECT_EQ(a5.stats.encoder_cache_hits, 0);
  EXPECT_EQ(a5.stats.image_rows_prefilled, 0);
  EXPECT_EQ(a5.stats.image_rows, r4.stats.image_rows);
  const EncoderCacheStats cs = e.snapshot().encoder_cache;
  EXPECT_EQ(cs.entries, 2u);
  EXPECT_GT(cs.bytes, 0u);
  EXPECT_LE(cs.bytes, cs.budget_bytes);
}

TEST(EngineImages, ImagesNeedAVisionModelAndRespectTheLimit) {
  test_support::TinyModel& t = test_support::TinyModel::get();
  Engine with(*t.model, *t.tok, cfg(), t.vision());
  EngineRequest r = image_request(with, "x ", screen(40, 40, 4), " y");
  Engine without(*t.model, *t.tok, cfg());
  try {
    without.submit(r);
    FAIL() << "accepted an image without a vision model";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--mmproj"), std::string::npos) << e.what();
  }
  EngineConfig one = cfg();
  one.images.max_per_request = 0;
  Engine limited(*t.model, *t.tok, one, t.vision());
  EXPECT_THROW(limited.submit(r), std::invalid_argument);
  // A placeholder row that does not belong to the image it claims: refused before any state moves.
  EngineRequest bad = r;
  bad.images[0].chunk.id ^= 1;
  EXPECT_THROW(with.submit(bad), std::invalid_argument);
  // The engine keeps serving.
  EXPECT_EQ(run(with, r).reason, FinishReason::Length);
}

}  // namespace
}  // namespace tandem::serve
