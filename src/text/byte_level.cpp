#include "text/byte_level.h"

#include "text/utf8.h"

namespace tandem::text {
namespace {

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<std::string, 256> to_str;
  std::array<int16_t, 512> from_cp{};  // every alphabet code point is < 0x144
  Tables() {
    from_cp.fill(-1);
    uint32_t extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = printable ? static_cast<uint32_t>(b) : 0x100 + extra++;
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
      append_utf8(to_str[b], to_cp[b]);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t byte_to_unicode(uint8_t b) { return tables().to_cp[b]; }

int unicode_to_byte(uint32_t cp) { return cp < 512 ? tables().from_cp[cp] : -1; }

const std::array<std::string, 256>& byte_token_strings() { return tables().to_str; }

}  // namespace tandem::text
