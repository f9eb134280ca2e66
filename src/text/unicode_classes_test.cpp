#include "text/unicode_classes.h"

#include <gtest/gtest.h>

namespace tandem::text {
namespace {

TEST(UnicodeClasses, GeneralCategories) {
  EXPECT_TRUE(is_letter('a'));
  EXPECT_TRUE(is_letter(0x4F60));   // 你
  EXPECT_TRUE(is_letter(0x01C5));   // Dž (titlecase)
  EXPECT_TRUE(is_letter(0x20000));  // CJK extension B (astral)
  EXPECT_FALSE(is_letter('1'));
  EXPECT_TRUE(is_mark(0x0301));     // combining acute
  EXPECT_TRUE(is_mark(0x093E));     // Devanagari vowel sign (Mc)
  EXPECT_FALSE(is_letter(0x0301));
  EXPECT_TRUE(is_number('7'));
  EXPECT_TRUE(is_number(0x2163));   // Roman numeral four (Nl)
  EXPECT_TRUE(is_number(0x00BD));   // ½ (No)
  EXPECT_TRUE(is_number(0x0661));   // Arabic-Indic one (Nd)
  EXPECT_FALSE(is_number('x'));
  EXPECT_EQ(code_point_flags(0x1F600), 0);  // emoji: So
  EXPECT_EQ(code_point_flags(0x110000), 0);
}

// \s of JavaScript RegExp, which the reference uses.
TEST(UnicodeClasses, JavaScriptWhitespace) {
  for (uint32_t cp : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u, 0x2029u,
                      0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu})
    EXPECT_TRUE(is_whitespace(cp)) << std::hex << cp;
  for (uint32_t cp : {0x85u, 0x1Cu, 0x1Fu, 0x200Bu, 0x61u, 0u})
    EXPECT_FALSE(is_whitespace(cp)) << std::hex << cp;
}

}  // namespace
}  // namespace tandem::text
