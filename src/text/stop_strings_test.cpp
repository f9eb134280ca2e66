#include "text/stop_strings.h"

#include <gtest/gtest.h>

namespace tandem::text {
namespace {

TEST(StopStrings, HoldsBackPossiblePrefixesAndCutsAtTheStop) {
  StopStrings s({"</answer>", "STOP"});
  std::string out;
  out += s.push("The answer is 4<");
  EXPECT_EQ(out, "The answer is 4");  // "<" might start "</answer>"
  out += s.push("/ans");
  EXPECT_EQ(out, "The answer is 4");
  out += s.push("wer> trailing");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(out, "The answer is 4");
  EXPECT_EQ(s.push("more"), "");
  EXPECT_EQ(s.flush(), "");
}

TEST(StopStrings, ReleasesFalseAlarmsAndFlushes) {
  StopStrings s({"STOP"});
  std::string out;
  out += s.push("ST");
  out += s.push("ART ST");
  EXPECT_EQ(out, "START ");
  out += s.flush();
  EXPECT_EQ(out, "START ST");
  StopStrings none;
  EXPECT_EQ(none.push("abc"), "abc");
}

}  // namespace
}  // namespace tandem::text
