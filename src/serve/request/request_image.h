// An image as the engine takes it with a request (issue 26): the decoded pixels, the token
// budget it is encoded under, and its chunk in the request's prompt. The pixels are
// preprocessed and encoded only when a prefill pass first needs the rows (an image inside the
// reused prefix never is), and not at all when the engine's encoder cache holds them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "serve/slot/prompt.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"
#include "vision/multimodal_prompt.h"

namespace tandem::serve {

struct RequestImage {
  // Already resized and padded to the chunk's grid (request_image): the engine only normalises
  // and encodes them, and a queued request holds at most its budget's pixels, not the file's.
  std::shared_ptr<const vision::RgbImage> pixels;
  vision::ImageBudget budget;
  ImageChunk chunk;  // begin: where its rows start in the prompt's tokens
};

// The chunk an image takes under these preprocessing parameters (begin 0): its grid from
// llama.cpp's smart resize (spec vision.md §2.3) and its identity, a hash of the decoded pixels,
// their size and the budget — so the same screen re-encoded as another PNG is the same image,
// and the same screen under another budget is not. Throws what smart_resize_target throws.
ImageChunk image_chunk(const vision::RgbImage& img, const vision::PreprocessParams& p);

// A request's image from a decoded file under these parameters (the budget's): its chunk
// (image_chunk, on the decoded pixels) and its pixels resized and padded to the chunk's size as
// llama.cpp's preprocessing does before normalising (vision::resize_and_pad). Throws what
// image_chunk throws.
RequestImage request_image(const vision::RgbImage& decoded, const vision::PreprocessParams& p,
                           const vision::ImageBudget& budget);

// The prompt's token ids from mtmd-style chunks (vision/multimodal_prompt.h): text chunks as
// they are, each image chunk as its rows' placeholders; sets each image's chunk.begin (images in
// chunk order). Throws std::invalid_argument when the chunks name an image that is not there.
void flatten_prompt(const std::vector<vision::PromptChunk>& chunks, std::vector<RequestImage>& images,
                    std::vector<int32_t>& tokens);

}  // namespace tandem::serve
