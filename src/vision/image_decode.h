// Image files -> RGB8 bitmaps, as llama.cpp's mtmd does it (spec vision.md §2.1): the image id
// is FNV-1a 64 over the encoded bytes, and the pixels are stb_image's `stbi_load_from_memory(...,
// req_comp = 3)` (alpha dropped, not composited; gray replicated; a GIF's first frame; EXIF
// orientation ignored). The stb_image used is Debian's (libstb, v2.27); what that changes against
// the v2.30 llama.cpp vendors, and the checks made here because of it, are in image_decode.cpp.
//
// Everything a request can send is checked before stb_image allocates for it: the byte count,
// the format (from its magic bytes), and the dimensions the header declares. A failure is an
// ImageError (the server answers 400) whose message names the format and what was expected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::vision {

struct ImageLimits {
  int max_width = 16384;                         // pixels, per side
  int max_height = 16384;
  size_t max_pixels = size_t{64} << 20;          // width * height (64 Mpixel: 192 MiB of RGB8)
  size_t max_file_bytes = size_t{64} << 20;      // the encoded file
};

// Row-major RGB8, top row first: pixel (x, y) channel c at rgb[(y * width + x) * 3 + c].
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

// The image is empty, of a format that is not decoded, corrupt, truncated, or above a limit.
class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ImageFormat { Unknown, Png, Jpeg, Bmp, Gif, Psd, Hdr, Pnm, Pic, Tga };
const char* format_name(ImageFormat f);  // "PNG", "JPEG", ...

// The format named by the leading bytes. TGA has no magic: it is reported as Unknown here and
// recognised by decode_image only when stb_image's own TGA header test accepts the bytes.
ImageFormat sniff_format(std::span<const uint8_t> bytes);

// FNV-1a 64 over the bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3): mtmd's
// bitmap id, used by the prompt cache to recognise the same image.
uint64_t image_id(std::span<const uint8_t> bytes);
std::string image_id_string(std::span<const uint8_t> bytes);  // decimal, as mtmd renders it

// Decodes an image file. Throws ImageError.
RgbImage decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits = {});

}  // namespace tandem::vision
