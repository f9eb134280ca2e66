// Image decoding through Debian's stb_image (libstb, the implementation compiled into libstb.so).
//
// Which stb_image. llama.cpp vendors stb_image v2.30; Debian 12 ships libstb
// 0.0~git20220908.8b5f1f3, whose stb_image.h says v2.27 (it is upstream commit 5ba0baa, 2.27 plus
// "reject fractional JPEG component subsampling ratios"). Comparing that header with v2.30
// (nothings/stb 013ac3b), for files that are well formed:
//   - PNG: the same pixels. 2.28/2.29 restructured the filters (a new Paeth routine, the same
//     results) and made the zlib decoder accept a stream that ends less than 16 bits before the
//     end of its buffer (a PNG always has the 4-byte Adler-32 after it, so no PNG is affected).
//   - GIF, PSD, PIC, TGA: no change. HDR: only the checks below.
//   - JPEG: the same pixels: the IDCT, the upsampling and the YCbCr conversion did not change.
//     What changed (2.28) is the handling of malformed streams: Huffman tables with more than 256
//     codes (in 2.27 they write past the decoder's tables: a heap overflow), Huffman symbol ids
//     out of range, signed overflows in the DC prediction and dequantisation, reads past the
//     entropy-coded data (2.27 goes on with stale bits, 2.30 with zeros), junk after the image
//     data, a failing marker after the first scan (2.30 keeps the image decoded so far, 2.27
//     fails), and a decoder struct that 2.27 leaves uninitialised. So a corrupt or truncated JPEG
//     can give other pixels, or an error where 2.30 gives an image; the overflow is refused below.
//   - BMP: 2.30 accepts up to 1 KiB of padding between the headers and the pixels; 2.27 refuses
//     such files ("bad offset").
//   - PNM: 2.27 leaves the pixels of a truncated file uninitialised, and reads past its buffer
//     converting a 16-bit PGM to RGB (2.28 added stbi__convert_format16). Both handled below.
//
// What stb_image 2.27 (and 2.30) would do badly with hostile input, checked here before it runs:
//   - dimensions: read from the header by this file, checked against ImageLimits before stb
//     allocates anything (stb's own bound is 2^24 per side, and 2^30 bytes for a PNG);
//   - JPEG: a Huffman table (DHT) with more than 256 codes is refused (the 2.27 heap overflow);
//   - HDR: truncated run-length data makes 2.27 loop forever (a zero count at end of file), and
//     truncated flat data leaves pixels uninitialised: the scanlines are walked first;
//   - PNM and uncompressed TGA: truncated pixel data would be uninitialised memory: refused;
//   - PNG: stb inflates into a buffer that it doubles without a bound of its own (up to 4 GiB)
//     when the stream inflates past what the header needs (a "zlib bomb"; deflate reaches
//     ~1032:1): such a stream is measured first, into a buffer bounded by the header's size.
// Formats stb does not decode (WebP, TIFF, AVIF/HEIF, JPEG XL, ...) are named in the error.
#include "vision/image_decode.h"

#include <stb/stb_image.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

namespace tandem::vision {

namespace {

[[noreturn]] void fail(const std::string& what) { throw ImageError("image: " + what); }

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// Reads past the end give 0, as stb_image's do.
struct Bytes {
  const uint8_t* p;
  size_t n;
  uint8_t at(size_t i) const { return i < n ? p[i] : 0; }
  uint32_t be16(size_t i) const { return uint32_t{at(i)} << 8 | at(i + 1); }
  uint32_t le16(size_t i) const { return uint32_t{at(i + 1)} << 8 | at(i); }
  uint32_t be32(size_t i) const { return be16(i) << 16 | be16(i + 2); }
  uint32_t le32(size_t i) const { return le16(i + 2) << 16 | le16(i); }
  bool starts_with(size_t i, const char* s) const {
    const size_t len = std::strlen(s);
    return i + len <= n && std::memcmp(p + i, s, len) == 0;
  }
};

const char* stb_reason() {
  const char* r = stbi_failure_reason();
  return r && *r ? r : "no reason given";
}

// The dimensions a header declares, before anything is allocated for them.
void check_declared(ImageFormat f, int64_t w, int64_t h, const ImageLimits& lim) {
  const char* name = format_name(f);
  if (w <= 0 || h <= 0)
    fail(fmt("%s header says %lldx%lld pixels; an image needs at least 1x1", name, static_cast<long long>(w),
             static_cast<long long>(h)));
  if (w > lim.max_width || h > lim.max_height)
    fail(fmt("%s header says %lldx%lld pixels, above the limit of %dx%d", name, static_cast<long long>(w),
             static_cast<long long>(h), lim.max_width, lim.max_height));
  const uint64_t px = static_cast<uint64_t>(w) * static_cast<uint64_t>(h);
  if (px > lim.max_pixels)
    fail(fmt("%s header says %lldx%lld = %llu pixels, above the limit of %zu pixels", name,
             static_cast<long long>(w), static_cast<long long>(h), static_cast<unsigned long long>(px),
             lim.max_pixels));
}

// A file that stops before the data its header announces.
[[noreturn]] void truncated(ImageFormat f, int64_t w, int64_t h, uint64_t need, uint64_t have) {
  fail(fmt("%s pixel data is truncated: the %lldx%lld header needs %llu bytes of pixel data, the file has %llu",
           format_name(f), static_cast<long long>(w), static_cast<long long>(h),
           static_cast<unsigned long long>(need), static_cast<unsigned long long>(have)));
}

struct Declared {
  int64_t w = 0, h = 0;
};

// ---- PNG ---------------------------------------------------------------------------------------

struct PngHeader {
  Declared dims;
  int depth = 0, color = 0, interlace = 0;
  bool iphone = false;  // a CgBI chunk first: Apple's raw-deflate variant, which stb also reads
};

PngHeader png_header(const Bytes& b) {
  size_t pos = 8;
  PngHeader h;
  if (b.n >= pos + 8 && b.starts_with(pos + 4, "CgBI")) {
    h.iphone = true;
    pos += 12 + static_cast<size_t>(b.be32(pos));
  }
  if (b.n < pos + 8 + 13)
    fail(fmt("PNG file ends inside its header (%zu bytes; the signature and the IHDR chunk take %zu)", b.n,
             pos + 8 + 13 + 4));
  if (!b.starts_with(pos + 4, "IHDR"))
    fail(fmt("PNG's first chunk is \"%.4s\", expected IHDR",
             reinterpret_cast<const char*>(b.p + pos + 4)));
  if (b.be32(pos) != 13) fail(fmt("PNG IHDR chunk is %u bytes long, expected 13", b.be32(pos)));
  h.dims = {b.be32(pos + 8), b.be32(pos + 12)};
  h.depth = b.at(pos + 16);
  h.color = b.at(pos + 17);
  h.interlace = b.at(pos + 20);
  return h;
}

// The bytes the filtered scanlines take (what inflating the IDAT stream must give).
uint64_t png_raw_bytes(uint64_t w, uint64_t h, int channels, int depth, bool interlaced) {
  auto rows = [&](uint64_t pw, uint64_t ph) -> uint64_t {
    if (pw == 0 || ph == 0) return 0;
    return ph * (1 + (pw * static_cast<uint64_t>(channels) * static_cast<uint64_t>(depth) + 7) / 8);
  };
  if (!interlaced) return rows(w, h);
  // Adam7: pass p covers x = x0 + k*dx, y = y0 + k*dy.
  static const int x0[7] = {0, 4, 0, 2, 0, 1, 0}, y0[7] = {0, 0, 4, 0, 2, 0, 1};
  static const int dx[7] = {8, 8, 4, 4, 2, 2, 1}, dy[7] = {8, 8, 8, 4, 4, 2, 2};
  uint64_t total = 0;
  for (int p = 0; p < 7; ++p)
    total += rows((w + dx[p] - 1 - x0[p]) / dx[p], (h + dy[p] - 1 - y0[p]) / dy[p]);
  return total;
}

// stb concatenates the IDAT chunks up to IEND and inflates them into a buffer it grows by
// doubling; a stream that inflates to far more than the header needs is refused here, measured
// into a buffer bounded by the header. Only run when the compressed size allows such a stream
// (deflate cannot exceed ~1032:1), so a file that cannot be a bomb is not inflated twice.
void png_check_inflated_size(const Bytes& b, const PngHeader& h) {
  int channels = 0;
  switch (h.color) {
    case 0: channels = 1; break;
    case 2: channels = 3; break;
    case 3: channels = 1; break;
    case 4: channels = 2; break;
    case 6: channels = 4; break;
    default: return;  // stb refuses the header itself
  }
  if (h.depth != 1 && h.depth != 2 && h.depth != 4 && h.depth != 8 && h.depth != 16) return;
  const uint64_t need = png_raw_bytes(static_cast<uint64_t>(h.dims.w), static_cast<uint64_t>(h.dims.h), channels,
                                      h.depth, h.interlace != 0);
  const uint64_t cap = need + need / 4 + 65536;  // slack for encoders that add a little
  if (cap > static_cast<uint64_t>(INT_MAX)) return;  // the dimension limits keep this far away

  std::vector<uint8_t> idat;
  uint64_t idat_bytes = 0;
  bool iend = false;
  size_t pos = 8;
  while (pos + 12 <= b.n) {
    const uint64_t len = b.be32(pos);
    if (len > b.n - pos - 12) return;  // truncated: stb stops with "outofdata" before inflating
    if (b.starts_with(pos + 4, "IEND")) {
      iend = true;
      break;
    }
    if (b.starts_with(pos + 4, "IDAT")) idat_bytes += len;
    pos += 12 + len;
  }
  if (!iend) return;  // stb inflates at IEND only
  if (idat_bytes * 1032 + 1024 <= cap) return;

  idat.reserve(idat_bytes);
  for (pos = 8; pos + 12 <= b.n;) {
    const size_t len = b.be32(pos);
    if (b.starts_with(pos + 4, "IEND")) break;
    if (b.starts_with(pos + 4, "IDAT")) idat.insert(idat.end(), b.p + pos + 8, b.p + pos + 8 + len);
    pos += 12 + len;
  }
  std::vector<char> out(cap);
  const char* in = reinterpret_cast<const char*>(idat.data());
  const int r = h.iphone ? stbi_zlib_decode_noheader_buffer(out.data(), static_cast<int>(cap), in, static_cast<int>(idat.size()))
                         : stbi_zlib_decode_buffer(out.data(), static_cast<int>(cap), in, static_cast<int>(idat.size()));
  if (r < 0 && std::strcmp(stb_reason(), "output buffer limit") == 0)
    fail(fmt("PNG pixel data inflates to more than %llu bytes, while the %lldx%lld header needs %llu "
             "(a decompression bomb?)",
             static_cast<unsigned long long>(cap), static_cast<long long>(h.dims.w), static_cast<long long>(h.dims.h),
             static_cast<unsigned long long>(need)));
  // Any other inflate error is stb's to report when it decodes.
}

// ---- JPEG --------------------------------------------------------------------------------------

// Walks the marker segments as stb does (a superset of the places stb looks: where stb would
// fail, the walk carries on), for the frame size and every Huffman table. Entropy-coded data is
// skipped to the next marker: 0xFF followed by 0x00 is a stuffed byte, 0xFF 0xD0..0xD7 a restart.
std::optional<Declared> jpeg_walk(const Bytes& b) {
  std::optional<Declared> dims;
  size_t pos = 2;  // after SOI
  while (pos < b.n) {
    while (pos < b.n && b.p[pos] != 0xFF) ++pos;  // stb skips stray bytes before the frame header
    while (pos < b.n && b.p[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= b.n) break;
    const uint8_t m = b.p[pos++];
    if (m == 0xD9) break;                                      // EOI
    if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;  // no length follows
    if (pos + 2 > b.n) break;
    const size_t len = b.be16(pos);
    if (len < 2) break;  // stb: "bad segment len"
    const size_t seg = pos + 2;
    if ((m == 0xC0 || m == 0xC1 || m == 0xC2) && !dims) dims = Declared{b.be16(seg + 3), b.be16(seg + 1)};
    if (m == 0xC4) {
      // stb reads each table's 17 header bytes and its n symbols whatever the segment length says.
      int64_t left = static_cast<int64_t>(len) - 2;
      size_t p = seg;
      while (left > 0 && p < b.n) {
        const int tc = b.at(p) >> 4, th = b.at(p) & 15;
        if (tc > 1 || th > 3) break;  // stb: "bad DHT header"
        int n = 0;
        for (int i = 1; i <= 16; ++i) n += b.at(p + i);
        if (n > 256)
          fail(fmt("JPEG Huffman table (DHT at byte %zu) declares %d codes; a table has at most 256", pos - 2, n));
        p += 17 + static_cast<size_t>(n);
        left -= 17 + n;
      }
    }
    pos = seg + (len - 2);
    if (m == 0xDA) {  // SOS: entropy-coded data up to the next marker
      while (pos < b.n) {
        if (b.p[pos] != 0xFF) {
          ++pos;
          continue;
        }
        size_t q = pos + 1;
        while (q < b.n && b.p[q] == 0xFF) ++q;
        if (q >= b.n) {
          pos = b.n;
          break;
        }
        if (b.p[q] == 0x00 || (b.p[q] >= 0xD0 && b.p[q] <= 0xD7)) {
          pos = q + 1;
          continue;
        }
        break;  // a marker: the outer loop reads it
      }
    }
  }
  return dims;
}

// ---- HDR (Radiance RGBE) -----------------------------------------------------------------------

// stb's header reader: a line up to '\n' (at most 1023 characters kept); like stb, the last
// byte of the file is not part of a token.
struct Cursor {
  const Bytes& b;
  size_t pos = 0;
  bool at_eof() const { return pos >= b.n; }
  uint8_t get8() { return pos < b.n ? b.p[pos++] : 0; }
};

std::string hdr_token(Cursor& c) {
  std::string t;
  char ch = static_cast<char>(c.get8());
  while (!c.at_eof() && ch != '\n') {
    t += ch;
    if (t.size() == 1023) {
      while (!c.at_eof() && c.get8() != '\n') {
      }
      break;
    }
    ch = static_cast<char>(c.get8());
  }
  return t;
}

struct HdrHeader {
  Declared dims;
  size_t data = 0;  // first byte of the scanlines
};

HdrHeader hdr_header(const Bytes& b) {
  Cursor c{b};
  hdr_token(c);  // "#?RADIANCE" or "#?RGBE" (sniffed)
  bool rle_rgbe = false;
  for (;;) {
    const std::string t = hdr_token(c);
    if (t.empty()) break;
    if (t == "FORMAT=32-bit_rle_rgbe") rle_rgbe = true;
  }
  if (!rle_rgbe) fail("HDR header has no FORMAT=32-bit_rle_rgbe line (the only Radiance format stb_image reads)");
  const std::string res = hdr_token(c);
  // stb reads "-Y <height> +X <width>" with strtol, and no other orientation.
  const char* s = res.c_str();
  if (std::strncmp(s, "-Y ", 3) != 0)
    fail("HDR resolution line is \"" + res.substr(0, 40) + "\", expected \"-Y <height> +X <width>\"");
  char* end = nullptr;
  const long h = std::strtol(s + 3, &end, 10);
  while (*end == ' ') ++end;
  if (std::strncmp(end, "+X ", 3) != 0)
    fail("HDR resolution line is \"" + res.substr(0, 40) + "\", expected \"-Y <height> +X <width>\"");
  const long w = std::strtol(end + 3, nullptr, 10);
  HdrHeader hh;
  // stb keeps them as int: values beyond the int range are out of every limit anyway.
  hh.dims = {std::clamp<long>(w, INT_MIN, INT_MAX), std::clamp<long>(h, INT_MIN, INT_MAX)};
  hh.data = c.pos;
  return hh;
}

// Follows stb's scanline reader over the bytes without decoding them: every byte it would read
// must be in the file (a run-length count read past the end is 0 for stb, and 2.27 then loops
// forever; flat data read past the end leaves pixels uninitialised).
void hdr_check_data(const Bytes& b, const HdrHeader& hh) {
  const uint64_t w = static_cast<uint64_t>(hh.dims.w), h = static_cast<uint64_t>(hh.dims.h);
  const uint64_t have = b.n - std::min(b.n, hh.data);
  if (w < 8 || w >= 32768) {
    if (have < w * h * 4) truncated(ImageFormat::Hdr, hh.dims.w, hh.dims.h, w * h * 4, have);
    return;
  }
  size_t p = hh.data;
  auto need = [&](uint64_t n) {
    if (p + n > b.n) truncated(ImageFormat::Hdr, hh.dims.w, hh.dims.h, (p - hh.data) + n, have);
  };
  for (uint64_t j = 0; j < h; ++j) {
    need(4);
    const uint8_t c1 = b.p[p], c2 = b.p[p + 1], len_hi = b.p[p + 2];
    if (c1 != 2 || c2 != 2 || (len_hi & 0x80)) {
      // Not run-length encoded: stb reads the whole image as flat pixels from here (restarting at
      // the first pixel, whatever scanline it was on).
      need(w * h * 4);
      return;
    }
    if ((uint64_t{len_hi} << 8 | b.p[p + 3]) != w) return;  // stb: "invalid decoded scanline length"
    p += 4;
    for (int k = 0; k < 4; ++k) {
      uint64_t i = 0;
      while (i < w) {
        need(1);
        uint64_t count = b.p[p++];
        if (count > 128) {  // a run: one value
          count -= 128;
          need(1);
          ++p;
          if (count > w - i) return;  // stb: "bad RLE data in HDR"
        } else {            // a dump: count values (0 is allowed: it only consumes the count byte)
          if (count > w - i) return;
          need(count);
          p += count;
        }
        i += count;
      }
    }
  }
}

// ---- PNM (binary PGM P5 / PPM P6) --------------------------------------------------------------

struct PnmHeader {
  Declared dims;
  int channels = 0;
  int maxval = 0;
  size_t data = 0;
};

// stb's PNM header reader, including its quirk that the last byte of the file is never read as
// a digit; numbers above INT_MAX are refused (2.27 overflows, 2.30 refuses them too).
PnmHeader pnm_header(const Bytes& b) {
  Cursor c{b};
  PnmHeader ph;
  c.get8();
  ph.channels = c.get8() == '6' ? 3 : 1;
  char ch = static_cast<char>(c.get8());
  auto is_space = [](char x) { return x == ' ' || x == '\t' || x == '\n' || x == '\v' || x == '\f' || x == '\r'; };
  auto skip_ws = [&] {
    for (;;) {
      while (!c.at_eof() && is_space(ch)) ch = static_cast<char>(c.get8());
      if (c.at_eof() || ch != '#') break;
      while (!c.at_eof() && ch != '\n' && ch != '\r') ch = static_cast<char>(c.get8());
    }
  };
  auto number = [&](const char* what) {
    int64_t v = 0;
    while (!c.at_eof() && ch >= '0' && ch <= '9') {
      v = v * 10 + (ch - '0');
      if (v > INT_MAX) fail(fmt("PNM header's %s is larger than %d", what, INT_MAX));
      ch = static_cast<char>(c.get8());
    }
    return v;
  };
  skip_ws();
  ph.dims.w = number("width");
  skip_ws();
  ph.dims.h = number("height");
  skip_ws();
  const int64_t maxval = number("maximum value");
  if (maxval > 65535) fail(fmt("PNM maximum value is %lld; at most 65535 is possible", static_cast<long long>(maxval)));
  ph.maxval = static_cast<int>(maxval);
  ph.data = c.pos;
  return ph;
}

// A 16-bit PGM, decoded here because 2.27 reads past its buffer converting one to RGB. The result
// is v2.30's: it stores the samples as they lie in the file into 16-bit words of this (little
// endian) machine and keeps each word's high byte, i.e. the second byte of every sample.
RgbImage decode_pgm16(const Bytes& b, const PnmHeader& ph) {
  RgbImage img;
  img.width = static_cast<int>(ph.dims.w);
  img.height = static_cast<int>(ph.dims.h);
  const size_t n = static_cast<size_t>(img.width) * static_cast<size_t>(img.height);
  img.rgb.resize(n * 3);
  const uint8_t* src = b.p + ph.data;
  for (size_t i = 0; i < n; ++i) {
    uint16_t word;
    std::memcpy(&word, src + 2 * i, 2);
    const uint8_t v = static_cast<uint8_t>(word >> 8);
    img.rgb[3 * i] = img.rgb[3 * i + 1] = img.rgb[3 * i + 2] = v;
  }
  return img;
}

// ---- TGA ---------------------------------------------------------------------------------------

// stb reads uncompressed, non-indexed pixels with one bulk read per row that leaves the row
// untouched when the file is short: such data must be complete.
void tga_check_data(const Bytes& b) {
  if (b.n < 18) fail(fmt("TGA file ends inside its 18-byte header (%zu bytes)", b.n));
  const int id_len = b.at(0), indexed = b.at(1), type = b.at(2), bpp = b.at(16);
  if (indexed || type >= 8) return;  // palettes and run-length data are read byte by byte (zeros past the end)
  int comp = 0;
  switch (bpp) {
    case 8: comp = 1; break;
    case 16: comp = type == 3 ? 2 : 0; break;  // 16-bit colour goes through the byte-wise RGB555 path
    case 24: comp = 3; break;
    case 32: comp = 4; break;
    default: return;
  }
  if (comp == 0) return;
  const uint64_t w = b.le16(12), h = b.le16(14);
  const uint64_t need = w * h * static_cast<uint64_t>(comp);
  const uint64_t have = b.n - std::min<uint64_t>(b.n, 18 + static_cast<uint64_t>(id_len));
  if (have < need) truncated(ImageFormat::Tga, static_cast<int64_t>(w), static_cast<int64_t>(h), need, have);
}

// ---- formats stb does not decode ---------------------------------------------------------------

const char* unsupported_kind(const Bytes& b) {
  if (b.starts_with(0, "RIFF") && b.starts_with(8, "WEBP")) return "WebP";
  if (b.starts_with(0, "RIFF") && b.starts_with(8, "WAVE")) return "WAV audio";
  if (b.n >= 4 && ((b.p[0] == 'I' && b.p[1] == 'I' && (b.p[2] == 42 || b.p[2] == 43) && b.p[3] == 0) ||
                   (b.p[0] == 'M' && b.p[1] == 'M' && b.p[2] == 0 && (b.p[3] == 42 || b.p[3] == 43))))
    return "TIFF";
  if (b.starts_with(4, "ftyp")) {
    if (b.starts_with(8, "avif") || b.starts_with(8, "avis")) return "AVIF";
    for (const char* brand : {"heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"})
      if (b.starts_with(8, brand)) return "HEIF/HEIC";
    return "ISO media (MP4/MOV/HEIF family)";
  }
  if (b.n >= 2 && b.p[0] == 0xFF && b.p[1] == 0x0A) return "JPEG XL";
  if (b.n >= 12 && std::memcmp(b.p, "\0\0\0\x0cJXL \r\n\x87\n", 12) == 0) return "JPEG XL";
  if (b.n >= 12 && std::memcmp(b.p, "\0\0\0\x0cjP  \r\n\x87\n", 12) == 0) return "JPEG 2000";
  if (b.n >= 4 && b.p[0] == 0xFF && b.p[1] == 0x4F && b.p[2] == 0xFF && b.p[3] == 0x51) return "JPEG 2000 codestream";
  // 00 00 01 00 cannot be a TGA (no colour map, yet image type 1); CUR's 00 00 02 00 can.
  if (b.n >= 6 && b.p[0] == 0 && b.p[1] == 0 && b.p[2] == 1 && b.p[3] == 0) return "ICO";
  if (b.starts_with(0, "qoif")) return "QOI";
  if (b.starts_with(0, "%PDF")) return "PDF";
  if (b.starts_with(0, "<svg") || b.starts_with(0, "<?xml")) return "SVG/XML";
  if (b.starts_with(0, "ID3") || b.starts_with(0, "fLaC") || b.starts_with(0, "OggS")) return "audio";
  if (b.n >= 2 && b.p[0] == 'P' && (b.p[1] == '1' || b.p[1] == '2' || b.p[1] == '3' || b.p[1] == '4' || b.p[1] == '7'))
    return "PNM variant other than binary P5/P6 (ASCII, bitmap or PAM)";
  return nullptr;
}

std::string hex_prefix(const Bytes& b) {
  std::string s;
  for (size_t i = 0; i < std::min<size_t>(b.n, 8); ++i) s += fmt("%s%02x", i ? " " : "", b.p[i]);
  return s;
}

constexpr const char* kDecoded = "PNG, JPEG, BMP, GIF, PSD, HDR, PIC, binary PNM (P5/P6) and TGA";

}  // namespace

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::Png: return "PNG";
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Bmp: return "BMP";
    case ImageFormat::Gif: return "GIF";
    case ImageFormat::Psd: return "PSD";
    case ImageFormat::Hdr: return "HDR";
    case ImageFormat::Pnm: return "PNM";
    case ImageFormat::Pic: return "PIC";
    case ImageFormat::Tga: return "TGA";
    case ImageFormat::Unknown: break;
  }
  return "unknown";
}

ImageFormat sniff_format(std::span<const uint8_t> bytes) {
  const Bytes b{bytes.data(), bytes.size()};
  if (b.starts_with(0, "\x89PNG\r\n\x1a\n")) return ImageFormat::Png;
  if (b.n >= 2 && b.p[0] == 0xFF && b.p[1] == 0xD8) return ImageFormat::Jpeg;
  if (b.starts_with(0, "BM")) return ImageFormat::Bmp;
  if (b.starts_with(0, "GIF87a") || b.starts_with(0, "GIF89a")) return ImageFormat::Gif;
  if (b.starts_with(0, "8BPS")) return ImageFormat::Psd;
  if (b.starts_with(0, "#?RADIANCE\n") || b.starts_with(0, "#?RGBE\n")) return ImageFormat::Hdr;
  if (b.n >= 2 && b.p[0] == 'P' && (b.p[1] == '5' || b.p[1] == '6')) return ImageFormat::Pnm;
  if (b.starts_with(0, "\x53\x80\xF6\x34")) return ImageFormat::Pic;
  return ImageFormat::Unknown;
}

uint64_t image_id(std::span<const uint8_t> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string image_id_string(std::span<const uint8_t> bytes) { return std::to_string(image_id(bytes)); }

RgbImage decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  const Bytes b{bytes.data(), bytes.size()};
  if (b.n == 0) fail("the input is empty (0 bytes)");
  if (b.n > limits.max_file_bytes)
    fail(fmt("the file is %zu bytes, above the limit of %zu bytes", b.n, limits.max_file_bytes));
  if (b.n > static_cast<size_t>(INT_MAX)) fail(fmt("the file is %zu bytes; stb_image reads at most %d", b.n, INT_MAX));

  ImageFormat f = sniff_format(bytes);
  if (f == ImageFormat::Unknown) {
    // TGA has no magic bytes: stb's TGA header test is the only way to recognise one (every other
    // format stb reads has failed the sniffing above, so only that test can accept the bytes).
    int x = 0, y = 0, c = 0;
    if (!stbi_info_from_memory(b.p, static_cast<int>(b.n), &x, &y, &c)) {
      if (const char* kind = unsupported_kind(b))
        fail(fmt("unsupported format: this is %s, which stb_image does not decode (it decodes %s)", kind, kDecoded));
      fail(fmt("unsupported format: the first bytes (%s) are none of %s", hex_prefix(b).c_str(), kDecoded));
    }
    f = ImageFormat::Tga;
  }
  const char* name = format_name(f);

  // The declared size, checked before stb allocates, then the checks of the header comment.
  std::optional<PngHeader> png;
  std::optional<PnmHeader> pnm;
  switch (f) {
    case ImageFormat::Png:
      png = png_header(b);
      check_declared(f, png->dims.w, png->dims.h, limits);
      png_check_inflated_size(b, *png);
      break;
    case ImageFormat::Jpeg: {
      // Before stbi_info too: stb reads the Huffman tables ahead of the frame header there.
      const std::optional<Declared> d = jpeg_walk(b);
      if (d) check_declared(f, d->w, d->h, limits);
      break;
    }
    case ImageFormat::Bmp: {
      if (b.n < 26) fail(fmt("BMP file ends inside its header (%zu bytes)", b.n));
      const uint32_t hsz = b.le32(14);
      if (hsz != 12 && hsz != 40 && hsz != 56 && hsz != 108 && hsz != 124)
        fail(fmt("BMP info header is %u bytes; stb_image reads 12, 40, 56, 108 or 124", hsz));
      if (hsz == 12) {
        check_declared(f, b.le16(18), b.le16(20), limits);
      } else {
        // Signed; a negative height is a top-down bitmap (stb takes its absolute value).
        const int64_t w = static_cast<int32_t>(b.le32(18)), h = static_cast<int32_t>(b.le32(22));
        if (w < 0) fail(fmt("BMP header says a width of %lld pixels", static_cast<long long>(w)));
        if (h == INT_MIN) fail(fmt("BMP header says a height of %lld pixels", static_cast<long long>(h)));
        check_declared(f, w, h < 0 ? -h : h, limits);
      }
      break;
    }
    case ImageFormat::Gif:
      if (b.n < 10) fail(fmt("GIF file ends inside its header (%zu bytes)", b.n));
      check_declared(f, b.le16(6), b.le16(8), limits);
      break;
    case ImageFormat::Psd:
      if (b.n < 26) fail(fmt("PSD file ends inside its header (%zu bytes)", b.n));
      check_declared(f, b.be32(18), b.be32(14), limits);
      break;
    case ImageFormat::Hdr: {
      const HdrHeader hh = hdr_header(b);
      check_declared(f, hh.dims.w, hh.dims.h, limits);
      hdr_check_data(b, hh);
      break;
    }
    case ImageFormat::Pnm: {
      pnm = pnm_header(b);
      check_declared(f, pnm->dims.w, pnm->dims.h, limits);
      const uint64_t need = static_cast<uint64_t>(pnm->dims.w) * static_cast<uint64_t>(pnm->dims.h) *
                            static_cast<uint64_t>(pnm->channels) * (pnm->maxval > 255 ? 2 : 1);
      const uint64_t have = b.n - std::min(b.n, pnm->data);
      if (have < need) truncated(f, pnm->dims.w, pnm->dims.h, need, have);
      break;
    }
    case ImageFormat::Pic:
      if (b.n < 96 || !b.starts_with(88, "PICT")) fail("PIC header is incomplete (\"PICT\" expected at byte 88)");
      check_declared(f, b.be16(92), b.be16(94), limits);
      break;
    case ImageFormat::Tga:
      tga_check_data(b);
      break;
    case ImageFormat::Unknown:
      break;
  }

  int w = 0, h = 0, comp = 0;
  if (!stbi_info_from_memory(b.p, static_cast<int>(b.n), &w, &h, &comp))
    fail(fmt("%s header could not be read (stb_image: %s)", name, stb_reason()));
  if (f == ImageFormat::Bmp && h < 0) h = -h;  // top-down (INT_MIN was refused above): stb's load flips it
  // The size stb itself will allocate for (the only check for TGA; the same numbers otherwise).
  check_declared(f, w, h, limits);

  if (pnm && pnm->channels == 1 && pnm->maxval > 255) return decode_pgm16(b, *pnm);

  int x = 0, y = 0, n = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load_from_memory(b.p, static_cast<int>(b.n), &x, &y, &n, 3),
                                                 stbi_image_free);
  if (!data) fail(fmt("%s data could not be decoded (stb_image: %s)", name, stb_reason()));
  if (x != w || y != h)
    fail(fmt("%s header says %dx%d pixels but stb_image decoded %dx%d", name, w, h, x, y));
  RgbImage img;
  img.width = x;
  img.height = y;
  img.rgb.assign(data.get(), data.get() + static_cast<size_t>(x) * static_cast<size_t>(y) * 3);
  return img;
}

}  // namespace tandem::vision
