// The whole image path against llama.cpp (../shared/golden-vision): the PNG file decoded and
// preprocessed here, encoded by this engine's tower, laid out with the markers as mtmd does,
// prefilled into the golden-a text model at M-RoPE positions. The text model magnifies an
// embedding difference several times in its logits (model/qwen35/qwen35_image_rows_test.cpp checks the
// text side alone with llama.cpp's own embeddings: 2e-5), so the bound here is llama.cpp's own
// spread between two ways of computing the same thing: for an F32 mmproj its logits with flash
// attention on vs off in the encoder (a different attention summation order, as ours is), for
// F16 / Q8_0 its logits with that mmproj vs the F32 one. Named *Golden* so the per-tier ctest
// runs repeat it on every tier.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/qwen35/qwen35_model.h"
#include "text/test_vocab.h"
#include "text/tokenizer.h"
#include "vision/golden_vision_test_util.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"
#include "vision/multimodal_prompt.h"
#include "vision/vision_model.h"
#include "model/test_paths.h"

namespace tandem::vision {
namespace {

namespace fs = std::filesystem;
using golden::Json;
using golden::max_abs_diff;
const fs::path kMultimodalDir = golden::dir();
const fs::path kText = fs::path(TANDEM_SHARED_DIR) / "golden" / "models" / "qwen35-golden-a-F32.gguf";

std::vector<float> read_out(const std::string& file) { return golden::read_out_f32(file); }

// llama.cpp's own logits spread for run r, on r's own image where the manifest has the runs for it:
// for an F32 mmproj, its flash-attention-on run vs the off run of the same image and budget (the
// only flash-attention runs may be of another image: then that pair, said in the output); for an
// F16 / Q8_0 mmproj, the F32 run of the same image and budget vs r itself.
std::pair<std::string, std::string> logits_spread_runs(const std::string& name, const Json& r) {
  if (golden::mmproj_type(r) != "F32") return {golden::f32_counterpart(r), name};
  const auto fa_of = [](const Json& like) {
    return golden::runs([&](const std::string&, const Json& c) {
      return golden::mmproj_type(c) == "F32" && golden::flash_attn_on(c) && (like.is_null() || golden::same_image_input(c, like));
    });
  };
  std::vector<std::string> fa = fa_of(r);
  if (fa.empty()) fa = fa_of(Json());  // no flash-attention run of this image (img3): the one there is
  if (fa.empty()) return {"", ""};
  return {golden::f32_counterpart(golden::run(fa.front())), fa.front()};
}

// Every run of the manifest without flash attention in the encoder (those with it are one end of
// the F32 spread): F32, F16 and Q8_0 mmproj files, each image and budget.
TEST(MultimodalGolden, PngToLogitsWithinLlamaCppsOwnSpread) {
  if (!golden::available() || !fs::exists(kText)) GTEST_SKIP() << "SKIPPED: no " << kMultimodalDir << " or " << kText;
  const Json& manifest = golden::manifest();
  auto text_model = Qwen35Model::load(kText.string(), LoadOptions{2});
  auto tok = text::Tokenizer::from_gguf(text_model->file());
  const std::vector<std::string> runs =
      golden::runs([](const std::string&, const Json& r) { return !golden::flash_attn_on(r) && r.contains("logits_file"); });
  ASSERT_FALSE(runs.empty()) << "the manifest lists no run with logits";
  for (const std::string& run : runs) {
    SCOPED_TRACE(run);
    const auto& r = manifest["runs"][run];
    auto vm = VisionModel::load((kMultimodalDir / r["mmproj"].get<std::string>()).string(), VisionLoadOptions{2});
    vm->check_text_model(text_model->hparams().n_embd, kText.string());
    const std::vector<uint8_t> file = golden::read_bytes(kMultimodalDir / r["image"].get<std::string>());
    EXPECT_EQ(image_id_string(file), r["image_id_fnv1a64"].get<std::string>());
    ImageBudget budget;
    budget.min_tokens = r["image_min_tokens"].get<int>();
    budget.max_tokens = r["image_max_tokens"].get<int>();
    const PreprocessedImage img = preprocess(decode_image(file), vm->preprocess_params(budget));
    EXPECT_EQ(img.width, r["preprocessed_size"][0].get<int>());
    EXPECT_EQ(img.height, r["preprocessed_size"][1].get<int>());
    ImageEmbedding emb;
    const EncodeStats st = vm->encode(img, emb.rows);
    emb.nx = st.nx;
    emb.ny = st.ny;

    // The layout: the same tokens as mtmd's chunks.
    std::string prompt = r["prompt"].get<std::string>();
    prompt.replace(prompt.find("<__media__>"), 11, kDefaultMediaMarker);
    const std::vector<PromptChunk> chunks = tokenize_multimodal(*tok, prompt, 1);
    const auto& want = r["chunks"];
    ASSERT_EQ(chunks.size(), want.size()) << run;
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (want[i]["type"] == "image") {
        EXPECT_EQ(chunks[i].kind, PromptChunk::Kind::Image) << "chunk " << i;
        EXPECT_EQ(emb.nx, want[i]["nx"].get<int>());
        EXPECT_EQ(emb.ny, want[i]["ny"].get<int>());
      } else {
        EXPECT_EQ(chunks[i].kind, PromptChunk::Kind::Text) << "chunk " << i;
        EXPECT_EQ(chunks[i].tokens, want[i]["tokens"].get<std::vector<int32_t>>()) << "chunk " << i;
      }
    }

    // Every text token's logits (llama.cpp's logits file has one row per text token).
    auto seq = text_model->new_sequence(256);
    std::vector<float> logits;
    ForwardOutput out;
    ForwardOptions all;
    all.logits = LogitsMode::All;
    for (const PromptChunk& c : chunks) {
      prefill_multimodal(*text_model, *seq, {c}, {emb}, all, out, 4);
      if (c.kind == PromptChunk::Kind::Text) logits.insert(logits.end(), out.logits.begin(), out.logits.end());
    }
    const std::vector<float> ref = read_out(r["logits_file"].get<std::string>());
    ASSERT_EQ(logits.size(), ref.size()) << run;
    const auto [a, b] = logits_spread_runs(run, r);
    ASSERT_FALSE(a.empty() || b.empty()) << run << ": no pair of runs in the manifest gives llama.cpp's own spread";
    const float spread = max_abs_diff(read_out(golden::run(a)["logits_file"].get<std::string>()),
                                      read_out(golden::run(b)["logits_file"].get<std::string>()));
    const float md = max_abs_diff(logits, ref);
    const bool other_image = !golden::same_image_input(golden::run(b), r);
    std::printf("  %s (%s): text logits after this engine's embeddings max|d| %.3g (llama.cpp's own spread %s vs %s%s: %.3g)\n",
                run.c_str(), cpu_tier_name(vm->cpu_tier()), md, a.c_str(), b.c_str(),
                other_image ? ", no flash-attention run of this image" : "", spread);
    EXPECT_LE(md, spread) << run;
    // Every row's M-RoPE id (t, y, x) as mtmd gives it, and the next text position after the image
    // is p0 + max(nx, ny) (mtmd), not the cache row.
    int64_t index = 0;
    std::vector<int64_t> text_positions;
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (chunks[i].kind != PromptChunk::Kind::Image) {
        EXPECT_EQ(seq->position(index)[0], want[i]["pos_0"].get<int64_t>()) << "chunk " << i;
        for (size_t k = 0; k < chunks[i].tokens.size(); ++k) text_positions.push_back(seq->position(index++)[0]);
        continue;
      }
      const auto& ids = want[i]["decoder_pos_t_y_x_z"];
      ASSERT_EQ(static_cast<int64_t>(ids.size()), static_cast<int64_t>(emb.nx) * emb.ny);
      for (size_t k = 0; k < ids.size(); ++k) {
        const MropePosition p = seq->position(index + static_cast<int64_t>(k));
        for (int a3 = 0; a3 < 3; ++a3)
          EXPECT_EQ(p[static_cast<size_t>(a3)], ids[k][static_cast<size_t>(a3)].get<int64_t>()) << "image row " << k << " axis " << a3;
      }
      index += static_cast<int64_t>(ids.size());
    }
    EXPECT_EQ(seq->n_past(), index);
    EXPECT_EQ(seq->position(index)[0], r["n_past_end"].get<int64_t>());
    if (r.contains("logits_text_positions")) {
      EXPECT_EQ(text_positions, r["logits_text_positions"].get<std::vector<int64_t>>());
    }
  }
}

// The built-in vocabulary has <|vision_start|> / <|vision_end|> as control tokens (as Qwen3.5's).
TEST(MultimodalPrompt, MarkersBecomeVisionTokensAroundImageChunks) {
  auto tok = text::testing::builtin_tokenizer();
  const int32_t vs = *tok->vocab().find("<|vision_start|>"), ve = *tok->vocab().find("<|vision_end|>");
  EXPECT_THROW(tokenize_multimodal(*tok, "no marker", 1), std::invalid_argument);
  EXPECT_THROW(tokenize_multimodal(*tok, "<__media__><__media__>", 1), std::invalid_argument);
  const auto c = tokenize_multimodal(*tok, "a<__media__>b<__media__>", 2);
  ASSERT_EQ(c.size(), 5u);  // text, image, text, image, text (<|vision_end|> alone)
  EXPECT_EQ(c[0].tokens.back(), vs);
  EXPECT_EQ(c[1].kind, PromptChunk::Kind::Image);
  EXPECT_EQ(c[1].image, 0);
  EXPECT_EQ(c[2].tokens.front(), ve);
  EXPECT_EQ(c[2].tokens.back(), vs);
  EXPECT_EQ(c[3].image, 1);
  EXPECT_EQ(c[4].tokens, std::vector<int32_t>{ve});
  std::vector<ImageEmbedding> imgs(2);
  imgs[0].nx = 4, imgs[0].ny = 3, imgs[1].nx = 2, imgs[1].ny = 2;
  EXPECT_EQ(multimodal_prompt_rows(c, imgs), static_cast<int64_t>(c[0].tokens.size() + c[2].tokens.size() + 1 + 12 + 4));
  MultimodalPromptOptions o;
  o.marker = "<img>";
  EXPECT_EQ(tokenize_multimodal(*tok, "x<img>", 1, o).size(), 3u);
}

}  // namespace
}  // namespace tandem::vision
