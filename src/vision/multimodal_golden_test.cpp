// The whole image path against llama.cpp (../shared/golden-vision): the PNG file decoded and
// preprocessed here, encoded by this engine's tower, laid out with the markers as mtmd does,
// prefilled into the golden-a text model at M-RoPE positions. The text model magnifies an
// embedding difference several times in its logits (model/qwen35_image_rows_test.cpp checks the
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

#include "model/qwen35_model.h"
#include "text/test_vocab.h"
#include "text/tokenizer.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"
#include "vision/multimodal_prompt.h"
#include "vision/vision_model.h"

namespace tandem::vision {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(TANDEM_SHARED_DIR) / "golden-vision";
const fs::path kText = fs::path(TANDEM_SHARED_DIR) / "golden" / "models" / "qwen35-golden-a-F32.gguf";

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
std::vector<float> read_f32(const fs::path& p) {
  const std::vector<uint8_t> b = read_bytes(p);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

float max_abs_diff(const std::vector<float>& x, const std::vector<float>& y) {
  EXPECT_EQ(x.size(), y.size());
  float m = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

TEST(MultimodalGolden, PngToLogitsWithinLlamaCppsOwnSpread) {
  if (!fs::exists(kDir / "manifest.json") || !fs::exists(kText)) GTEST_SKIP() << "SKIPPED: no " << kDir << " or " << kText;
  std::ifstream mf(kDir / "manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(mf);
  auto text_model = Qwen35Model::load(kText.string(), LoadOptions{2});
  auto tok = text::Tokenizer::from_gguf(text_model->file());
  for (const std::string run : {"f32-img1", "f32-img3-max8", "f16-img1", "f16-img3-max8", "q8_0-img1", "q8_0-img3-max8"}) {
    const auto& r = manifest["runs"][run];
    auto vm = VisionModel::load((kDir / r["mmproj"].get<std::string>()).string(), VisionLoadOptions{2});
    vm->check_text_model(text_model->hparams().n_embd, kText.string());
    const std::vector<uint8_t> file = read_bytes(kDir / r["image"].get<std::string>());
    EXPECT_EQ(image_id_string(file), r["image_id_fnv1a64"].get<std::string>());
    ImageBudget budget;
    budget.min_tokens = r["image_min_tokens"].get<int>();
    budget.max_tokens = r["image_max_tokens"].get<int>();
    const PreprocessedImage img = preprocess(decode_image(file), vm->preprocess_params(budget));
    ImageEmbedding emb;
    const EncodeStats st = vm->encode(img, emb.rows);
    emb.nx = st.nx;
    emb.ny = st.ny;

    // The layout: the same tokens as mtmd's chunks.
    std::string prompt = r["prompt"].get<std::string>();
    prompt.replace(prompt.find("<__media__>"), 11, kDefaultMediaMarker);
    const std::vector<PromptChunk> chunks = tokenize_multimodal(*tok, prompt, 1);
    ASSERT_EQ(chunks.size(), 3u) << run;
    const auto& want = r["chunks"];
    EXPECT_EQ(chunks[0].tokens, want[0]["tokens"].get<std::vector<int32_t>>()) << run;
    EXPECT_EQ(chunks[1].kind, PromptChunk::Kind::Image);
    EXPECT_EQ(emb.nx, want[1]["nx"].get<int>());
    EXPECT_EQ(emb.ny, want[1]["ny"].get<int>());
    EXPECT_EQ(chunks[2].tokens, want[2]["tokens"].get<std::vector<int32_t>>()) << run;

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
    const std::vector<float> ref = read_f32(kDir / "out" / r["logits_file"].get<std::string>());
    ASSERT_EQ(logits.size(), ref.size()) << run;
    const std::string which = run.substr(run.find('-') + 1);
    const std::string a = run.rfind("f32", 0) == 0 ? "f32-img1" : "f32-" + which;
    const std::string b = run.rfind("f32", 0) == 0 ? "f32fa-img1" : run;
    const float spread = max_abs_diff(read_f32(kDir / "out" / (a + ".logits.f32")), read_f32(kDir / "out" / (b + ".logits.f32")));
    const float md = max_abs_diff(logits, ref);
    std::printf("  %s (%s): text logits after this engine's embeddings max|d| %.3g (llama.cpp's own spread %s vs %s: %.3g)\n",
                run.c_str(), cpu_tier_name(vm->cpu_tier()), md, a.c_str(), b.c_str(), spread);
    EXPECT_LE(md, spread) << run;
    // The next text position after the image is p0 + max(nx, ny) (mtmd), not the cache row.
    EXPECT_EQ(seq->position(static_cast<int64_t>(chunks[0].tokens.size()) + emb.nx * emb.ny)[0],
              want[2]["pos_0"].get<int64_t>());
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
