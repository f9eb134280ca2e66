// Prompts with images in the serving core (issue 26), under the dry run: an image matches only
// whole; its rows are passes of their own; stock makes no checkpoint in a fill that decoded an
// image (so the text before a new screenshot is reprocessed every step), divergence keeps the
// text before it (§4.5), --checkpoint-before-image keeps the state at the image's first row.
#include <gtest/gtest.h>

#include "serve/policy/divergence_policy.h"
#include "serve/policy/marconi_policy.h"
#include "serve/policy/stock_policy.h"
#include "serve/serve_test_util.h"

namespace tandem::serve {
namespace {

using namespace testing;

// A prompt with one image: text before it, nx * ny rows of image `id`, text after it.
struct ImagePrompt {
  std::vector<int32_t> tokens;
  std::vector<PromptImage> images;
  Prompt view(const std::vector<int64_t>& users) const { return Prompt{tokens, users, images}; }
};

ImagePrompt with_image(const std::vector<int32_t>& before, uint64_t id, int nx, int ny, const std::vector<int32_t>& after) {
  ImagePrompt p;
  p.tokens = before;
  PromptImage im;
  im.chunk = ImageChunk{static_cast<int64_t>(before.size()), nx, ny, id};
  p.tokens.insert(p.tokens.end(), static_cast<size_t>(nx * ny), image_placeholder(id));
  p.tokens.insert(p.tokens.end(), after.begin(), after.end());
  p.images.push_back(im);
  return p;
}

RequestStats image_request(Slot& slot, const ImagePrompt& p, std::vector<int64_t> users, int n_out = 2) {
  slot.prefill(p.view(users));
  for (int i = 0; i < n_out; ++i) slot.decode(999 * 100000 + i);
  return slot.end_request();
}

std::vector<int32_t> rules() { return seg(1, 300); }

// The screenshot episode of the tests below: rules (user message at 10) + history (100 tokens)
// + a 32 x 20 image (640 rows, more than a micro-batch, as the paper's 1,127) + 20 tokens.
//   step 1: history h1, image 1;   step 2: history changes 50 tokens in (L = 350), image 2;
//   step 3: the same text, image 3 (L = 400: the image's first row);   step 4: image 4.
std::vector<ImagePrompt> episode() {
  const auto tail = seg(9, 20);
  const auto h1 = cat({rules(), seg(10, 100)});
  const auto h2 = cat({rules(), seg(10, 50), seg(11, 50)});
  return {with_image(h1, 1, 32, 20, tail), with_image(h2, 2, 32, 20, tail), with_image(h2, 3, 32, 20, tail),
          with_image(h2, 4, 32, 20, tail)};
}

TEST(ImagePrompt, ValidationNamesWhatIsWrong) {
  const ImagePrompt p = with_image(seg(1, 10), 7, 2, 3, seg(2, 4));
  EXPECT_NO_THROW(validate_prompt(p.view({})));
  ImagePrompt bad = p;
  bad.tokens[12] = 5;  // a text token inside the image's rows
  EXPECT_THROW(validate_prompt(bad.view({})), std::invalid_argument);
  bad = p;
  bad.images.clear();  // placeholders outside every image
  EXPECT_THROW(validate_prompt(bad.view({})), std::invalid_argument);
  bad = p;
  bad.tokens.resize(16);  // ends with the image
  EXPECT_THROW(validate_prompt(bad.view({})), std::invalid_argument);
  bad = p;
  bad.images[0].chunk.nx = 0;
  EXPECT_THROW(validate_prompt(bad.view({})), std::invalid_argument);
  try {
    bad = p;
    bad.images[0].chunk.begin = 12;
    validate_prompt(bad.view({}));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("image"), std::string::npos) << e.what();
  }
}

TEST(ImagePrompt, AnImageMatchesOnlyWholeAndOnlyItself) {
  const ImagePrompt a = with_image(seg(1, 10), 7, 2, 3, seg(2, 4));
  const auto ca = image_chunks(a.images);
  EXPECT_EQ(common_prefix_with_images(a.tokens, ca, a.tokens, ca), 20);
  // Another image at the same place: the prefix ends at its first row.
  const ImagePrompt b = with_image(seg(1, 10), 8, 2, 3, seg(2, 4));
  EXPECT_EQ(common_prefix_with_images(a.tokens, ca, b.tokens, image_chunks(b.images)), 10);
  // Same placeholder (a colliding id) but another identity: still only up to the image.
  ImagePrompt c = a;
  c.images[0].chunk.id = 7 + (uint64_t{1} << 31) + (uint64_t{1} << 62);
  ASSERT_EQ(image_placeholder(c.images[0].chunk.id), image_placeholder(7));
  EXPECT_EQ(common_prefix_with_images(a.tokens, ca, c.tokens, image_chunks(c.images)), 10);
  // A sequence holding only part of the image (a prefill stopped inside it): not a match.
  std::vector<int32_t> part(a.tokens.begin(), a.tokens.begin() + 13);
  EXPECT_EQ(common_prefix_with_images(part, ca, a.tokens, ca), 10);
}

TEST(ImagePrompt, ImageRowsArePassesOfTheirOwnAndStockMakesNoCheckpointAroundThem) {
  auto slot = dry_slot(std::make_unique<StockPolicy>());
  const auto ep = episode();
  const RequestStats s1 = image_request(*slot, ep[0], {10});
  // [0,10) user cut, [10,400) text, the image in micro-batches, [1040,1056) text after it, [1056,1060) tail.
  EXPECT_EQ(s1.pass_sizes, (P{10, 390, 512, 128, 16, 4}));
  // The user message and N-4; none at the image's batches or the fill that decoded it (1040).
  EXPECT_EQ(s1.created_positions, (P{10, 1056}));
  EXPECT_EQ(s1.images, 1);
  EXPECT_EQ(s1.image_rows, 640);
  EXPECT_EQ(s1.image_rows_prefilled, 640);
}

TEST(ImagePrompt, StockReprocessesTheTextBeforeTheImageEveryStep) {
  auto slot = dry_slot(std::make_unique<StockPolicy>());
  const auto ep = episode();
  image_request(*slot, ep[0], {10});
  for (size_t k = 1; k < ep.size(); ++k) {
    const RequestStats s = image_request(*slot, ep[k], {10});
    EXPECT_EQ(s.lcp, k == 1 ? 350 : 400) << "step " << k + 1;
    EXPECT_EQ(s.restore_pos, 10) << "step " << k + 1;  // only the user-message checkpoint precedes L
    EXPECT_EQ(s.new_tokens, 1050) << "step " << k + 1;
    EXPECT_EQ(s.image_rows_prefilled, 640);
  }
}

TEST(ImagePrompt, DivergenceRestoresTheTextBeforeTheImage) {
  DivergenceOptions o;
  auto slot = dry_slot(std::make_unique<DivergencePolicy>(o));
  const auto ep = episode();
  image_request(*slot, ep[0], {10});
  const RequestStats s2 = image_request(*slot, ep[1], {10});
  EXPECT_EQ(s2.restore_pos, 10);
  EXPECT_EQ(s2.created_positions, (P{350, 1056}));  // L inside the text before the image
  const RequestStats s3 = image_request(*slot, ep[2], {10});
  EXPECT_EQ(s3.lcp, 400);
  EXPECT_EQ(s3.restore_pos, 350);
  EXPECT_EQ(s3.created_positions, (P{400, 1056}));  // L = the image's first row: the text before it
  const RequestStats s4 = image_request(*slot, ep[3], {10});
  EXPECT_EQ(s4.restore_pos, 400);                   // every shared text token restored
  EXPECT_EQ(s4.new_tokens, 660);                    // the new image and the text after it
  EXPECT_EQ(s4.created_positions, (P{1056}));
}

TEST(ImagePrompt, DivergenceIgnoresADivergencePointAfterAnImage) {
  auto slot = dry_slot(std::make_unique<DivergencePolicy>());
  const auto h = cat({rules(), seg(10, 100)});
  image_request(*slot, with_image(h, 1, 32, 20, seg(9, 60)), {10});
  // The same image, the text after it differs 30 tokens in: L = 1070 lies after the image.
  const RequestStats s = image_request(*slot, with_image(h, 1, 32, 20, cat({seg(9, 30), seg(8, 30)})), {10});
  EXPECT_EQ(s.lcp, 1070);
  EXPECT_EQ(s.restore_pos, 10);               // the user-message checkpoint (none after the image)
  EXPECT_FALSE(s.created_positions.empty());  // stock's own checkpoints are still made
  for (int64_t p : s.created_positions) EXPECT_NE(p, 1070);  // the paper's rule: only before any image
}

TEST(ImagePrompt, CheckpointBeforeImageKeepsTheImagesFirstRow) {
  DivergenceOptions o;
  o.before_image = true;
  auto slot = dry_slot(std::make_unique<DivergencePolicy>(o));
  const auto ep = episode();
  const RequestStats s1 = image_request(*slot, ep[0], {10});
  EXPECT_EQ(s1.created_positions, (P{10, 400, 1056}));
  EXPECT_EQ(s1.pass_sizes, (P{10, 390, 512, 128, 16, 4}));  // the copy rides on the pass ending there
  const RequestStats s2 = image_request(*slot, ep[1], {10});
  EXPECT_EQ(s2.restore_pos, 10);
  EXPECT_EQ(s2.created_positions, (P{350, 400, 1056}));
  const RequestStats s3 = image_request(*slot, ep[2], {10});
  EXPECT_EQ(s3.restore_pos, 400);
  EXPECT_EQ(s3.new_tokens, 660);
}

TEST(ImagePrompt, TheSameScreenIsReusedWhole) {
  auto slot = dry_slot(std::make_unique<StockPolicy>());
  const auto h = cat({rules(), seg(10, 100)});
  image_request(*slot, with_image(h, 1, 32, 20, seg(9, 20)), {10}, 0);
  // The same prompt again: the live state continues at N - 1, the image rows are all reused.
  const RequestStats s = image_request(*slot, with_image(h, 1, 32, 20, seg(9, 20)), {10}, 0);
  EXPECT_EQ(s.lcp, 1060);
  EXPECT_EQ(s.image_rows_prefilled, 0);
  EXPECT_EQ(s.image_rows, 640);
}

TEST(ImagePrompt, MarconiPlacesNoCheckpointInsideAnImage) {
  auto slot = dry_slot(std::make_unique<MarconiPolicy>());
  const auto ep = episode();
  for (const auto& p : ep) {
    const RequestStats s = image_request(*slot, p, {10});
    for (int64_t c : s.created_positions) EXPECT_TRUE(c <= 400 || c >= 1040) << c;
  }
}

TEST(ImagePrompt, DryRunCountsTheSameWithConsolidation) {
  // Consolidated batching: one tail cut at N - 512, which falls inside the image and is dropped.
  auto slot = dry_slot(std::make_unique<StockPolicy>(), SlotConfig{});
  const RequestStats s1 = image_request(*slot, episode()[0], {10});
  EXPECT_EQ(s1.pass_sizes, (P{10, 390, 512, 128, 20}));
  EXPECT_EQ(s1.created_positions, (P{10}));  // the batch after the image belongs to the image's fill
}

}  // namespace
}  // namespace tandem::serve
