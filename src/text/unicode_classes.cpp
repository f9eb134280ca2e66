#include "text/unicode_classes.h"

#include <unicode/uchar.h>

#include <array>
#include <memory>

namespace tandem::text {
namespace {

uint8_t compute_flags(uint32_t cp) {
  uint8_t f = 0;
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
      f |= kLetter;
      break;
    case U_NON_SPACING_MARK:
    case U_ENCLOSING_MARK:
    case U_COMBINING_SPACING_MARK:
      f |= kMark;
      break;
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER:
      f |= kNumber;
      break;
    case U_SPACE_SEPARATOR:
      f |= kWhitespace;
      break;
    default:
      break;
  }
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0xA0:
    case 0xFEFF: case 0x2028: case 0x2029:
      f |= kWhitespace;
      break;
    default:
      break;
  }
  return f;
}

// One byte per BMP code point (64 KiB), built on first use; astral planes ask ICU directly.
const std::array<uint8_t, 0x10000>& bmp_table() {
  static const std::unique_ptr<std::array<uint8_t, 0x10000>> table = [] {
    auto t = std::make_unique<std::array<uint8_t, 0x10000>>();
    for (uint32_t cp = 0; cp < 0x10000; ++cp) (*t)[cp] = compute_flags(cp);
    return t;
  }();
  return *table;
}

}  // namespace

uint8_t code_point_flags(uint32_t cp) {
  if (cp < 0x10000) return bmp_table()[cp];
  if (cp > 0x10FFFF) return 0;
  return compute_flags(cp);
}

}  // namespace tandem::text
