#include "text/reasoning.h"

#include <gtest/gtest.h>

namespace tandem::text {
namespace {

// Text is released as soon as it is settled: only a possible tag or blanks that may be stripped
// are held back.
TEST(Reasoning, ReleasesSettledTextAtOnce) {
  std::string r, t;
  ReasoningSplitter s;
  s.push("\n<thi", r, t);
  EXPECT_EQ(r + t, "");
  s.push("nk>\nplan", r, t);
  EXPECT_EQ(r, "plan");
  s.push(" more \n</th", r, t);
  EXPECT_EQ(r, "plan more");  // " \n</th" may be the end of the block
  s.push("ink>\n\nTa", r, t);
  EXPECT_EQ(r, "plan more");
  EXPECT_EQ(t, "Ta");
  s.push("p", r, t);
  EXPECT_EQ(t, "Tap");
  s.finish(r, t);
  EXPECT_EQ(r, "plan more");
  EXPECT_EQ(t, "Tap");

  r.clear(), t.clear();
  ReasoningSplitter plain;
  plain.push("Hello", r, t);
  EXPECT_EQ(t, "Hello");
  EXPECT_EQ(r, "");
}

TEST(Reasoning, FormatNames) {
  EXPECT_EQ(reasoning_format_from_name("none"), ReasoningFormat::None);
  EXPECT_EQ(reasoning_format_from_name("auto"), ReasoningFormat::Auto);
  EXPECT_EQ(reasoning_format_from_name("deepseek"), ReasoningFormat::Deepseek);
  EXPECT_EQ(reasoning_format_from_name("deepseek-legacy"), ReasoningFormat::DeepseekLegacy);
  EXPECT_EQ(reasoning_format_from_name("DeepSeek"), std::nullopt);
  EXPECT_EQ(reasoning_format_from_name(""), std::nullopt);
  for (auto f : {ReasoningFormat::None, ReasoningFormat::Auto, ReasoningFormat::Deepseek, ReasoningFormat::DeepseekLegacy})
    EXPECT_EQ(reasoning_format_from_name(reasoning_format_name(f)), f);
}

}  // namespace
}  // namespace tandem::text
