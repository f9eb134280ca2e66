// libFuzzer harness for image decoding and preprocessing (issue 25: "fuzz the image decoding and
// preprocessing entry point"). The first byte picks a token budget, the rest is the file: it is
// decoded under tight limits, then smart-resized, letterboxed and normalised. Every input either
// decodes or is refused with an ImageError (a std::invalid_argument from preprocessing is allowed
// too); any other exception, a crash or a sanitizer report is a bug. Run with fuzz/run_image_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>

#include "vision/image_decode.h"
#include "vision/image_preprocess.h"

using namespace tandem::vision;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  ImageLimits lim;
  lim.max_width = lim.max_height = 2048;
  lim.max_pixels = size_t{1} << 20;
  lim.max_file_bytes = size_t{1} << 20;
  PreprocessParams p;
  p.budget.max_tokens = 1 + data[0] % 64;  // small targets keep each run fast
  p.budget.min_tokens = data[0] & 0x80 ? 1 + data[0] % 8 : -1;
  const std::span<const uint8_t> file(data + 1, size - 1);
  RgbImage img;
  try {
    img = decode_image(file, lim);
  } catch (const ImageError&) {
    return 0;
  }
  if (img.width <= 0 || img.height <= 0 || img.rgb.size() != static_cast<size_t>(img.width) * img.height * 3) {
    std::fprintf(stderr, "image_fuzz: decoded %dx%d with %zu bytes\n", img.width, img.height, img.rgb.size());
    std::abort();
  }
  try {
    const PreprocessedImage out = preprocess(img, p);
    if (out.width % p.align() != 0 || out.height % p.align() != 0 ||
        out.pixels.size() != static_cast<size_t>(out.width) * out.height * 3) {
      std::fprintf(stderr, "image_fuzz: preprocessed to %dx%d\n", out.width, out.height);
      std::abort();
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
