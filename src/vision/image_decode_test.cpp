#include "vision/image_decode.h"

#include <gtest/gtest.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vision/golden_vision_test_util.h"
#include "vision/image_preprocess.h"
#include "model/test_paths.h"

// In libstb.so with the writers, not declared by the header outside its implementation part.
extern "C" unsigned char* stbi_zlib_compress(unsigned char* data, int data_len, int* out_len, int quality);

namespace tandem::vision {
namespace {

using Bytes = std::vector<uint8_t>;

// ---- writers for the test images ---------------------------------------------------------------

void append(void* ctx, void* data, int size) {
  auto* out = static_cast<Bytes*>(ctx);
  const auto* p = static_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + size);
}

// A deterministic picture: gradients plus a little structure, comp channels.
Bytes pattern(int w, int h, int comp, uint32_t seed = 1) {
  Bytes px(static_cast<size_t>(w) * h * comp);
  std::mt19937 rng(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < comp; ++c)
        px[(static_cast<size_t>(y) * w + x) * comp + c] =
            static_cast<uint8_t>((x * 7 + y * 3 + c * 50 + ((x / 4 + y / 4) % 2) * 40 + rng() % 8) & 255);
  return px;
}

Bytes png_of(int w, int h, int comp, const Bytes& px) {
  Bytes out;
  EXPECT_TRUE(stbi_write_png_to_func(append, &out, w, h, comp, px.data(), w * comp));
  return out;
}
Bytes bmp_of(int w, int h, int comp, const Bytes& px) {
  Bytes out;
  EXPECT_TRUE(stbi_write_bmp_to_func(append, &out, w, h, comp, px.data()));
  return out;
}
Bytes tga_of(int w, int h, int comp, const Bytes& px, bool rle) {
  Bytes out;
  const int saved = stbi_write_tga_with_rle;
  stbi_write_tga_with_rle = rle ? 1 : 0;
  EXPECT_TRUE(stbi_write_tga_to_func(append, &out, w, h, comp, px.data()));
  stbi_write_tga_with_rle = saved;
  return out;
}
Bytes jpg_of(int w, int h, int comp, const Bytes& px, int quality = 95) {
  Bytes out;
  EXPECT_TRUE(stbi_write_jpg_to_func(append, &out, w, h, comp, px.data(), quality));
  return out;
}
Bytes hdr_of(int w, int h) {
  std::vector<float> px(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<float>(i % 17) / 8.0f;
  Bytes out;
  EXPECT_TRUE(stbi_write_hdr_to_func(append, &out, w, h, 3, px.data()));
  return out;
}
Bytes pnm_of(char kind, int w, int h, int maxval, const Bytes& samples) {
  const std::string head = std::string("P") + kind + "\n# a comment\n" + std::to_string(w) + " " + std::to_string(h) +
                           "\n" + std::to_string(maxval) + "\n";
  Bytes out(head.begin(), head.end());
  out.insert(out.end(), samples.begin(), samples.end());
  return out;
}

// CRC-32 (PNG's polynomial), for PNG chunks built here.
uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}
void put_be32(Bytes& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}
void chunk(Bytes& out, const char* type, const Bytes& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put_be32(out, crc32(out.data() + start, out.size() - start));
}
// An 8-bit RGB PNG whose IDAT holds `raw` (filter bytes included) compressed with stb's deflate.
Bytes png_with_raw(uint32_t w, uint32_t h, const Bytes& raw) {
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
  chunk(out, "IHDR", ihdr);
  int len = 0;
  unsigned char* z = stbi_zlib_compress(const_cast<uint8_t*>(raw.data()), static_cast<int>(raw.size()), &len, 8);
  chunk(out, "IDAT", Bytes(z, z + len));
  std::free(z);
  chunk(out, "IEND", {});
  return out;
}

// A GIF89a with a 256-entry grey palette and one frame: every pixel a literal 9-bit LZW code,
// with a clear code every 100 codes so that the code width never grows.
Bytes gif_of(int w, int h, const Bytes& index) {
  Bytes out = {'G', 'I', 'F', '8', '9', 'a'};
  auto le16 = [&](int v) {
    out.push_back(static_cast<uint8_t>(v & 255));
    out.push_back(static_cast<uint8_t>(v >> 8));
  };
  le16(w);
  le16(h);
  out.insert(out.end(), {0xF7, 0, 0});  // global table, 2^(7+1) entries
  for (int i = 0; i < 256; ++i) out.insert(out.end(), {static_cast<uint8_t>(i), static_cast<uint8_t>(i), static_cast<uint8_t>(255 - i)});
  out.push_back(0x2C);
  le16(0);
  le16(0);
  le16(w);
  le16(h);
  out.push_back(0);
  out.push_back(8);  // LZW minimum code size
  Bytes lzw;
  uint32_t acc = 0;
  int bits = 0;
  auto code = [&](int c) {
    acc |= static_cast<uint32_t>(c) << bits;
    bits += 9;
    while (bits >= 8) {
      lzw.push_back(static_cast<uint8_t>(acc & 255));
      acc >>= 8;
      bits -= 8;
    }
  };
  for (size_t i = 0; i < index.size(); ++i) {
    if (i % 100 == 0) code(256);
    code(index[i]);
  }
  code(257);
  if (bits > 0) lzw.push_back(static_cast<uint8_t>(acc & 255));
  for (size_t i = 0; i < lzw.size(); i += 255) {
    const size_t n = std::min<size_t>(255, lzw.size() - i);
    out.push_back(static_cast<uint8_t>(n));
    out.insert(out.end(), lzw.begin() + static_cast<std::ptrdiff_t>(i), lzw.begin() + static_cast<std::ptrdiff_t>(i + n));
  }
  out.push_back(0);
  out.push_back(0x3B);
  return out;
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

// The ImageError message, or "decoded WxH" when the bytes decode. Any other exception fails.
std::string outcome(const Bytes& b, const ImageLimits& lim = {}) {
  try {
    const RgbImage img = decode_image(b, lim);
    EXPECT_EQ(img.rgb.size(), static_cast<size_t>(img.width) * img.height * 3);
    return "decoded " + std::to_string(img.width) + "x" + std::to_string(img.height);
  } catch (const ImageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("image: ", 0), 0u) << e.what();
    return e.what();
  }
}

#define EXPECT_ERROR(bytes, substring)                                             \
  do {                                                                             \
    const std::string got_ = outcome(bytes);                                       \
    EXPECT_NE(got_.find(substring), std::string::npos) << "got: " << got_;          \
  } while (0)

std::filesystem::path vision_golden_dir() { return std::filesystem::path(TANDEM_SHARED_DIR) / "golden-vision"; }

Bytes read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// ---- ImageDecode -------------------------------------------------------------------------------

TEST(ImageDecode, FnvIdMatchesTheReferenceVectors) {
  EXPECT_EQ(image_id({}), 0xcbf29ce484222325ull);
  const Bytes a = text("a"), foobar = text("foobar");
  EXPECT_EQ(image_id(a), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(image_id(foobar), 0x85944171f73967e8ull);
  EXPECT_EQ(image_id_string(foobar), "9625390261332436968");
}

// Every image the manifest's runs use (each once).
TEST(ImageDecode, GoldenImagesHaveTheManifestIdsAndSizes) {
  SKIP_WITHOUT_GOLDEN_VISION();
  const auto& manifest = golden::manifest();
  std::vector<std::string> runs, seen;
  for (const std::string& run : golden::runs()) {
    const std::string image = manifest["runs"][run]["image"].get<std::string>();
    if (std::find(seen.begin(), seen.end(), image) != seen.end()) continue;
    seen.push_back(image);
    runs.push_back(run);
  }
  ASSERT_FALSE(runs.empty()) << "the manifest lists no run";
  for (const std::string& run : runs) {
    SCOPED_TRACE(run);
    const auto& r = manifest["runs"][run];
    const Bytes file = read_file(vision_golden_dir() / r["image"].get<std::string>());
    ASSERT_FALSE(file.empty());
    if (manifest.contains("files") && manifest["files"].contains(r["image"].get<std::string>())) {
      EXPECT_EQ(file.size(), manifest["files"][r["image"].get<std::string>()]["bytes"].get<size_t>());
    }
    EXPECT_EQ(image_id_string(file), r["image_id_fnv1a64"].get<std::string>());
    EXPECT_EQ(sniff_format(file), ImageFormat::Png);
    const RgbImage img = decode_image(file);
    EXPECT_EQ(img.width, r["decoded_size"][0].get<int>());
    EXPECT_EQ(img.height, r["decoded_size"][1].get<int>());
  }
}

TEST(ImageDecode, PngRoundTripsEveryChannelCount) {
  for (int comp = 1; comp <= 4; ++comp) {
    SCOPED_TRACE(comp);
    const Bytes px = pattern(13, 7, comp);
    const RgbImage img = decode_image(png_of(13, 7, comp, px));
    ASSERT_EQ(img.width, 13);
    ASSERT_EQ(img.height, 7);
    for (size_t i = 0; i < 13 * 7; ++i)
      for (int c = 0; c < 3; ++c) {
        // grey (1, 2 channels) is replicated; alpha (2, 4) is dropped
        const uint8_t want = comp <= 2 ? px[i * comp] : px[i * comp + c];
        ASSERT_EQ(img.rgb[i * 3 + c], want) << "pixel " << i << " channel " << c;
      }
  }
}

TEST(ImageDecode, AlphaIsDroppedNotComposited) {
  Bytes px = {10, 20, 30, 0, 200, 100, 50, 128};  // transparent, half transparent
  const RgbImage img = decode_image(png_of(2, 1, 4, px));
  EXPECT_EQ(img.rgb, (Bytes{10, 20, 30, 200, 100, 50}));
}

TEST(ImageDecode, BmpTgaPnmGifRoundTrip) {
  const int w = 19, h = 11;
  const Bytes rgb = pattern(w, h, 3);
  EXPECT_EQ(decode_image(bmp_of(w, h, 3, rgb)).rgb, rgb);
  EXPECT_EQ(decode_image(tga_of(w, h, 3, rgb, false)).rgb, rgb);
  EXPECT_EQ(decode_image(tga_of(w, h, 3, rgb, true)).rgb, rgb);
  EXPECT_EQ(sniff_format(tga_of(w, h, 3, rgb, true)), ImageFormat::Unknown);  // TGA has no magic
  EXPECT_EQ(decode_image(pnm_of('6', w, h, 255, rgb)).rgb, rgb);

  const Bytes grey = pattern(w, h, 1);
  Bytes grey3;
  for (uint8_t v : grey) grey3.insert(grey3.end(), {v, v, v});
  EXPECT_EQ(decode_image(pnm_of('5', w, h, 255, grey)).rgb, grey3);

  const RgbImage gif = decode_image(gif_of(w, h, grey));
  ASSERT_EQ(gif.width, w);
  for (size_t i = 0; i < grey.size(); ++i) {
    ASSERT_EQ(gif.rgb[i * 3], grey[i]);  // the palette built above: (i, i, 255 - i)
    ASSERT_EQ(gif.rgb[i * 3 + 2], 255 - grey[i]);
  }
}

TEST(ImageDecode, SixteenBitPgmKeepsTheSecondByteOfEachSampleAsStb230Does) {
  // stb_image reads 16-bit PNM samples into native (little-endian) words and keeps their high
  // byte: the second byte of each big-endian sample. Decoded here for 16-bit PGM (see the .cpp).
  const Bytes samples = {0x12, 0x34, 0xAB, 0xCD, 0x00, 0xFF};
  EXPECT_EQ(decode_image(pnm_of('5', 3, 1, 65535, samples)).rgb, (Bytes{0x34, 0x34, 0x34, 0xCD, 0xCD, 0xCD, 0xFF, 0xFF, 0xFF}));
  // 16-bit PPM goes through stb itself (no conversion of the channel count there): the same rule.
  EXPECT_EQ(decode_image(pnm_of('6', 1, 1, 65535, samples)).rgb, (Bytes{0x34, 0xCD, 0xFF}));
}

TEST(ImageDecode, JpegAndHdrDecode) {
  const int w = 32, h = 24;
  const Bytes rgb = pattern(w, h, 3);
  const RgbImage jpg = decode_image(jpg_of(w, h, 3, rgb, 100));
  ASSERT_EQ(jpg.width, w);
  ASSERT_EQ(jpg.height, h);
  double err = 0;
  for (size_t i = 0; i < rgb.size(); ++i) err += std::abs(int{jpg.rgb[i]} - int{rgb[i]});
  EXPECT_LT(err / static_cast<double>(rgb.size()), 8.0);  // lossy, but this picture
  const RgbImage hdr = decode_image(hdr_of(20, 5));
  EXPECT_EQ(hdr.width, 20);
  EXPECT_EQ(hdr.height, 5);
}

TEST(ImageDecode, SniffsEveryStbFormat) {
  EXPECT_EQ(sniff_format(png_of(1, 1, 3, {1, 2, 3})), ImageFormat::Png);
  EXPECT_EQ(sniff_format(jpg_of(8, 8, 3, pattern(8, 8, 3))), ImageFormat::Jpeg);
  EXPECT_EQ(sniff_format(bmp_of(1, 1, 3, {1, 2, 3})), ImageFormat::Bmp);
  EXPECT_EQ(sniff_format(gif_of(1, 1, {7})), ImageFormat::Gif);
  EXPECT_EQ(sniff_format(hdr_of(1, 1)), ImageFormat::Hdr);
  EXPECT_EQ(sniff_format(pnm_of('6', 1, 1, 255, {1, 2, 3})), ImageFormat::Pnm);
  EXPECT_EQ(sniff_format(text("8BPS")), ImageFormat::Psd);
  EXPECT_EQ(sniff_format(text("\x53\x80\xF6\x34")), ImageFormat::Pic);
  EXPECT_EQ(sniff_format(text("hello")), ImageFormat::Unknown);
  EXPECT_STREQ(format_name(ImageFormat::Jpeg), "JPEG");
}

// ---- CorruptImage: malformed inputs, each with its specific error, never a crash ----------------

TEST(CorruptImage, EmptyAndOneByte) {
  EXPECT_ERROR(Bytes{}, "the input is empty (0 bytes)");
  EXPECT_ERROR(Bytes{0x89}, "unsupported format: the first bytes (89)");
}

TEST(CorruptImage, TruncatedPngHeader) {
  const Bytes png = png_of(4, 4, 3, pattern(4, 4, 3));
  EXPECT_ERROR(Bytes(png.begin(), png.begin() + 20), "PNG file ends inside its header (20 bytes; the signature and the IHDR chunk take 33)");
  Bytes wrong = png;
  std::memcpy(wrong.data() + 12, "IDAT", 4);
  EXPECT_ERROR(wrong, "PNG's first chunk is \"IDAT\", expected IHDR");
}

TEST(CorruptImage, TruncatedPngData) {
  const Bytes png = png_of(64, 64, 3, pattern(64, 64, 3));
  EXPECT_ERROR(Bytes(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(png.size() / 2)),
               "PNG data could not be decoded (stb_image: outofdata)");
}

TEST(CorruptImage, BadPngCrcIsIgnoredAsByStb) {
  // stb_image does not check chunk CRCs (nor does llama.cpp, through it): a PNG whose CRCs are
  // all wrong decodes to the same pixels.
  const Bytes px = pattern(9, 9, 3);
  Bytes png = png_of(9, 9, 3, px);
  for (size_t pos = 8; pos + 12 <= png.size();) {
    const uint32_t len = uint32_t{png[pos]} << 24 | uint32_t{png[pos + 1]} << 16 | uint32_t{png[pos + 2]} << 8 | png[pos + 3];
    png[pos + 8 + len] ^= 0x5A;  // first CRC byte
    pos += 12 + len;
  }
  EXPECT_EQ(decode_image(png).rgb, px);
}

TEST(CorruptImage, PngHeaderAboveTheDimensionLimitIsRefusedBeforeDecoding) {
  // 100000 x 100000 RGB would be 30 GB; the header alone is refused (no allocation: the message
  // is this file's, stb's own check would say "too large").
  Bytes raw(1 + 3, 0);
  EXPECT_ERROR(png_with_raw(100000, 100000, raw), "PNG header says 100000x100000 pixels, above the limit of 16384x16384");
  EXPECT_ERROR(png_with_raw(16384, 16384, raw), "PNG header says 16384x16384 = 268435456 pixels, above the limit of 67108864 pixels");
  ImageLimits small;
  small.max_pixels = 100;
  EXPECT_NE(outcome(png_of(11, 10, 3, pattern(11, 10, 3)), small).find("PNG header says 11x10 = 110 pixels, above the limit of 100 pixels"),
            std::string::npos);
  EXPECT_EQ(outcome(png_of(10, 10, 3, pattern(10, 10, 3)), small), "decoded 10x10");
}

TEST(CorruptImage, PngZeroWidth) {
  EXPECT_ERROR(png_with_raw(0, 16, Bytes(16, 0)), "PNG header says 0x16 pixels; an image needs at least 1x1");
}

TEST(CorruptImage, PngDecompressionBomb) {
  // 1x1 pixels in the header, 4 MiB of zeros in the stream (40 KiB with stb's deflate; zlib -9
  // would make it 4 KiB): stb would grow its buffer to 4 MiB; refused after a measurement into
  // 4 + 4 / 4 + 65536 bytes.
  const Bytes png = png_with_raw(1, 1, Bytes(size_t{4} << 20, 0));
  EXPECT_LT(png.size(), size_t{64} << 10);
  EXPECT_ERROR(png, "PNG pixel data inflates to more than 65541 bytes, while the 1x1 header needs 4 (a decompression bomb?)");
  // The same construction with the right amount of data decodes.
  EXPECT_EQ(outcome(png_with_raw(1, 1, Bytes{0, 1, 2, 3})), "decoded 1x1");
}

// A BMP (40-byte info header) with its width and height replaced.
Bytes bmp_with(int32_t w, int32_t h) {
  Bytes bmp = bmp_of(4, 4, 3, pattern(4, 4, 3));
  std::memcpy(bmp.data() + 18, &w, 4);
  std::memcpy(bmp.data() + 22, &h, 4);
  return bmp;
}

TEST(CorruptImage, BmpNegativeOrHugeDimensions) {
  EXPECT_ERROR(bmp_with(-4, 4), "BMP header says a width of -4 pixels");
  EXPECT_ERROR(bmp_with(4, INT32_MIN), "BMP header says a height of -2147483648 pixels");
  EXPECT_ERROR(bmp_with(4, INT32_MAX), "BMP header says 4x2147483647 pixels, above the limit of 16384x16384");
  EXPECT_ERROR(bmp_with(0, 4), "BMP header says 0x4 pixels; an image needs at least 1x1");
  // A negative height is a top-down bitmap: legal, and decoded right way up.
  const Bytes px = pattern(4, 4, 3);
  const RgbImage up = decode_image(bmp_of(4, 4, 3, px));
  const RgbImage down = decode_image(bmp_with(4, -4));
  for (int y = 0; y < 4; ++y)
    EXPECT_TRUE(std::equal(down.rgb.begin() + y * 12, down.rgb.begin() + y * 12 + 12, up.rgb.begin() + (3 - y) * 12));
  Bytes bad_hsz = bmp_of(4, 4, 3, px);
  bad_hsz[14] = 99;
  EXPECT_ERROR(bad_hsz, "BMP info header is 99 bytes; stb_image reads 12, 40, 56, 108 or 124");
}

TEST(CorruptImage, GifTruncatedOrHuge) {
  const Bytes gif = gif_of(16, 16, pattern(16, 16, 1));
  EXPECT_ERROR(Bytes(gif.begin(), gif.begin() + 8), "GIF file ends inside its header (8 bytes)");
  // Cut inside the LZW data: stb reads zeros past the end, which end the frame; what was decoded
  // is kept (the rest of the frame stays the zero-initialised canvas). An image, not an error.
  EXPECT_EQ(outcome(Bytes(gif.begin(), gif.begin() + static_cast<std::ptrdiff_t>(gif.size() - 100))), "decoded 16x16");
  // Cut inside the palette: stb reports it.
  EXPECT_ERROR(Bytes(gif.begin(), gif.begin() + 200), "GIF data could not be decoded (stb_image: ");
  Bytes huge = gif;
  huge[6] = huge[7] = huge[8] = huge[9] = 0xFF;
  EXPECT_ERROR(huge, "GIF header says 65535x65535 pixels, above the limit of 16384x16384");
}

TEST(CorruptImage, JpegTruncatedOrGarbage) {
  const Bytes jpg = jpg_of(64, 48, 3, pattern(64, 48, 3));
  // Cut inside the entropy-coded data: stb decodes the rest of the scan from zero bits, then
  // finds no marker where EOI should be. 2.27 fails there; llama.cpp's 2.30 returns the image
  // decoded so far (its marker loop ends with success when a marker cannot be processed).
  EXPECT_ERROR(Bytes(jpg.begin(), jpg.begin() + static_cast<std::ptrdiff_t>(jpg.size() * 3 / 4)),
               "JPEG data could not be decoded (stb_image: expected marker)");
  // Cut before the frame header.
  EXPECT_ERROR(Bytes(jpg.begin(), jpg.begin() + 30), "JPEG header could not be read (stb_image: ");
  Bytes garbage = {0xFF, 0xD8};
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) garbage.push_back(static_cast<uint8_t>(rng() & 0x7F));  // no 0xFF: no marker at all
  EXPECT_ERROR(garbage, "JPEG header could not be read (stb_image: ");
}

TEST(CorruptImage, JpegHuffmanTableWithTooManyCodes) {
  // A DHT whose 16 counts say 255 codes of each length (4080): stb 2.27 would write them past its
  // 256-entry tables. Refused before stb sees the file.
  const Bytes jpg = jpg_of(8, 8, 3, pattern(8, 8, 3));
  Bytes dht = {0xFF, 0xC4, 0x0F, 0xF3, 0x00};  // length 2 + 17 + 4080 = 4099
  for (int i = 0; i < 16; ++i) dht.push_back(255);
  dht.resize(dht.size() + 4080, 0);
  Bytes bad(jpg.begin(), jpg.begin() + 2);
  bad.insert(bad.end(), dht.begin(), dht.end());
  bad.insert(bad.end(), jpg.begin() + 2, jpg.end());
  EXPECT_ERROR(bad, "JPEG Huffman table (DHT at byte 2) declares 4080 codes; a table has at most 256");
}

TEST(CorruptImage, JpegFrameAboveTheLimit) {
  Bytes jpg = jpg_of(8, 8, 3, pattern(8, 8, 3));
  for (size_t i = 2; i + 9 < jpg.size(); ++i)
    if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {
      jpg[i + 5] = jpg[i + 6] = jpg[i + 7] = jpg[i + 8] = 0xFF;
      break;
    }
  EXPECT_ERROR(jpg, "JPEG header says 65535x65535 pixels, above the limit of 16384x16384");
}

TEST(CorruptImage, FormatsStbDoesNotDecodeAreNamed) {
  Bytes webp = {'R', 'I', 'F', 'F', 0x24, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', ' '};
  webp.resize(44, 0);
  EXPECT_ERROR(webp, "unsupported format: this is WebP, which stb_image does not decode");
  EXPECT_ERROR(Bytes({'I', 'I', 42, 0, 8, 0, 0, 0}), "unsupported format: this is TIFF");
  EXPECT_ERROR(Bytes({'M', 'M', 0, 42, 0, 0, 0, 8}), "unsupported format: this is TIFF");
  Bytes avif = {0, 0, 0, 0x1c, 'f', 't', 'y', 'p', 'a', 'v', 'i', 'f'};
  EXPECT_ERROR(avif, "unsupported format: this is AVIF");
  EXPECT_ERROR(text("P3\n1 1\n255\n1 2 3\n"), "unsupported format: this is PNM variant other than binary P5/P6");
}

TEST(CorruptImage, RandomBytesAndText) {
  std::mt19937 rng(12345);
  Bytes noise(4096);
  for (auto& v : noise) v = static_cast<uint8_t>(rng());
  noise[1] = 0x77;  // not a TGA colour-map type (0 or 1): stb's TGA test says no, as for most noise
  EXPECT_ERROR(noise, "unsupported format: the first bytes (");
  EXPECT_ERROR(text("Hello, this is not an image.\n"), "unsupported format: the first bytes (48 65 6c 6c 6f 2c 20 74)");
}

TEST(CorruptImage, AboveMaxFileBytes) {
  ImageLimits lim;
  lim.max_file_bytes = 100;
  const Bytes png = png_of(32, 32, 3, pattern(32, 32, 3));
  EXPECT_NE(outcome(png, lim).find("the file is " + std::to_string(png.size()) + " bytes, above the limit of 100 bytes"),
            std::string::npos);
}

TEST(CorruptImage, PnmTruncatedOrOverflowing) {
  const Bytes ppm = pnm_of('6', 8, 8, 255, pattern(8, 8, 3));
  EXPECT_ERROR(Bytes(ppm.begin(), ppm.end() - 10), "PNM pixel data is truncated: the 8x8 header needs 192 bytes of pixel data, the file has 182");
  EXPECT_ERROR(text("P6\n99999999999 1\n255\n"), "PNM header's width is larger than 2147483647");
  EXPECT_ERROR(text("P5\n4 4\n70000\n"), "PNM maximum value is 70000; at most 65535 is possible");
  EXPECT_ERROR(text("P6\n0 5\n255\n"), "PNM header says 0x5 pixels");
}

TEST(CorruptImage, HdrTruncatedRunLengthDataDoesNotHang) {
  // stb 2.27 would spin forever on this (a run-length count read past the end is 0).
  const Bytes hdr = hdr_of(20, 5);
  EXPECT_ERROR(Bytes(hdr.begin(), hdr.end() - 7), "HDR pixel data is truncated");
  // Narrow images are stored flat: truncated flat data would leave pixels uninitialised.
  const Bytes narrow = hdr_of(4, 4);
  EXPECT_ERROR(Bytes(narrow.begin(), narrow.end() - 3), "HDR pixel data is truncated: the 4x4 header needs 64 bytes of pixel data, the file has 61");
  EXPECT_ERROR(text("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n+X 4 -Y 4\n"), "expected \"-Y <height> +X <width>\"");
  EXPECT_ERROR(text("#?RADIANCE\nFORMAT=32-bit_rle_xyze\n\n-Y 4 +X 4\n"), "HDR header has no FORMAT=32-bit_rle_rgbe line");
}

TEST(CorruptImage, TgaTruncatedUncompressedData) {
  const Bytes tga = tga_of(8, 8, 3, pattern(8, 8, 3), false);
  EXPECT_ERROR(Bytes(tga.begin(), tga.begin() + 100), "TGA pixel data is truncated: the 8x8 header needs 192 bytes of pixel data, the file has 82");
}

TEST(CorruptImage, PsdAndPicHeaders) {
  Bytes psd = text("8BPS");
  psd.resize(26, 0);
  psd[5] = 1;
  psd[13] = 3;
  psd[14] = psd[15] = psd[16] = psd[17] = 0x7F;  // height
  psd[21] = 1;                                   // width 1
  EXPECT_ERROR(psd, "PSD header says 1x2139062143 pixels, above the limit of 16384x16384");
  EXPECT_ERROR(Bytes({'8', 'B', 'P', 'S', 0, 1}), "PSD file ends inside its header (6 bytes)");
  EXPECT_ERROR(text("\x53\x80\xF6\x34 short"), "PIC header is incomplete");
}

TEST(CorruptImage, OneByOneDecodesAndPreprocessesToTheMinimumBudget) {
  const RgbImage img = decode_image(png_of(1, 1, 3, {200, 100, 50}));
  ASSERT_EQ(img.width, 1);
  // §2.3: 32x32 is below min_pixels = 8 * 1024, so beta = sqrt(8192 / 1) and each side is
  // ceil(90.51 / 32) * 32 = 96: 96x96, 3x3 = 9 tokens (>= 8).
  const PreprocessedImage pre = preprocess(img, PreprocessParams{});
  EXPECT_EQ(pre.width, 96);
  EXPECT_EQ(pre.height, 96);
  EXPECT_EQ(pre.n_tokens(), 9);
  // One source pixel: every output pixel is it (no padding: the scale fills both sides).
  for (int y = 0; y < 96; y += 19)
    for (int x = 0; x < 96; x += 17) EXPECT_EQ(pre.at(x, y, 0), (200 / 255.0f - 0.5f) / 0.5f);
}

TEST(CorruptImage, ExtremeAspectRatios) {
  for (const auto& [w, h] : {std::pair{1, 4000}, std::pair{4000, 1}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const Bytes px = pattern(w, h, 3);
    const RgbImage img = decode_image(png_of(w, h, 3, px));
    ASSERT_EQ(img.width, w);
    ASSERT_EQ(img.height, h);
    // §2.3: the long side 4000 = 125 * 32 stays, the short side becomes max(32, round(1/32) * 32) = 32.
    const PreprocessedImage pre = preprocess(img, PreprocessParams{});
    EXPECT_EQ(pre.width, w == 1 ? 32 : 4000);
    EXPECT_EQ(pre.height, h == 1 ? 32 : 4000);
    EXPECT_EQ(pre.n_tokens(), 125);
    // s = min(32 / 1, 4000 / 4000) = 1: the line is copied as is at offset (32 - 1) / 2 = 15.
    const RgbImage padded = resize_and_pad(img, {pre.width, pre.height});
    for (int i = 0; i < 4000; ++i) {
      const int x = w == 1 ? 15 : i, y = w == 1 ? i : 15;
      const int other_x = w == 1 ? 0 : i, other_y = w == 1 ? i : 31;
      ASSERT_EQ(padded.rgb[(static_cast<size_t>(y) * padded.width + x) * 3], px[static_cast<size_t>(i) * 3]);
      ASSERT_EQ(padded.rgb[(static_cast<size_t>(other_y) * padded.width + other_x) * 3], 0);
    }
  }
}

// Every prefix and every single-byte corruption of small valid files of each format: an image or
// an ImageError, never a crash, a hang or another exception (the fuzzer does this at random).
TEST(CorruptImage, EveryPrefixAndByteFlipOfSmallFiles) {
  const Bytes rgb = pattern(9, 8, 3), grey = pattern(9, 8, 1);
  const std::vector<std::pair<const char*, Bytes>> files = {
      {"png", png_of(9, 8, 3, rgb)},          {"bmp", bmp_of(9, 8, 3, rgb)},
      {"gif", gif_of(9, 8, grey)},            {"jpg", jpg_of(9, 8, 3, rgb)},
      {"ppm", pnm_of('6', 9, 8, 255, rgb)},   {"tga", tga_of(9, 8, 3, rgb, true)},
      {"hdr", hdr_of(9, 8)},
  };
  ImageLimits lim;
  lim.max_width = lim.max_height = 256;
  lim.max_pixels = 4096;
  size_t decoded = 0, refused = 0;
  for (const auto& [name, file] : files) {
    SCOPED_TRACE(name);
    auto once = [&](const Bytes& b) {
      const std::string r = outcome(b, lim);
      (r.rfind("decoded", 0) == 0 ? decoded : refused)++;
    };
    for (size_t n = 0; n <= file.size(); ++n) once(Bytes(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n)));
    for (size_t i = 0; i < file.size(); ++i) {
      Bytes b = file;
      b[i] ^= 0xFF;
      once(b);
    }
  }
  EXPECT_GT(decoded, 0u);
  EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace tandem::vision
