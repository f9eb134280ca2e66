// Idle release on the real engine: outputs do not depend on release/re-acquire
// cycles, and a released process sits at (almost) zero CPU.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"

namespace tandem {
namespace {

// utime + stime of this process, in seconds (from /proc/self/stat).
double process_cpu_seconds() {
  std::ifstream f("/proc/self/stat");
  std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream in(content.substr(content.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

TEST(IdleRelease, FourHundredCyclesGiveBitIdenticalOutputs) {
  const std::string path = ensure_tiny_model("Q8_0");
  auto with = Qwen35Model::load(path, 2);
  auto without = Qwen35Model::load(path, 2);
  without->governor().set_idle_release_ms(0);
  auto a = with->new_sequence(512), b = without->new_sequence(512);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(with->hparams().n_vocab - 1));
  ForwardOptions opt;
  ForwardOutput oa, ob;
  int cycles = 0;
  for (int i = 0; i < 400; ++i) {
    if (a->n_past() >= 500) {  // keep going on fresh sequences
      a->reset();
      b->reset();
    }
    std::vector<int32_t> toks(static_cast<size_t>(1 + i % 5));
    for (auto& t : toks) t = tok(rng);
    with->forward(*a, toks, opt, oa);
    without->forward(*b, toks, opt, ob);
    ASSERT_EQ(oa.logits, ob.logits) << "step " << i;
    cycles += with->governor().release_now() ? 1 : 0;
  }
  EXPECT_EQ(cycles, 400);
  EXPECT_EQ(with->governor().stats().reacquires, 399u);
  EXPECT_EQ(without->governor().stats().releases, 0u);
}

// 10 s idle windows after a burst; released vs release disabled, reported side by side.
TEST(IdleRelease, ReleasedProcessUsesUnderOnePercentOfACore) {
  const std::string path = ensure_tiny_model("Q8_0");
  auto model = Qwen35Model::load(path, 2);
  auto seq = model->new_sequence(256);
  ForwardOptions opt;
  ForwardOutput out;
  std::vector<int32_t> toks(64, 1);
  auto idle_window = [&](bool release) {
    model->governor().set_idle_release_ms(release ? 100 : 0);
    seq->reset();
    model->forward(*seq, toks, opt, out);  // a burst
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double c0 = process_cpu_seconds();
    std::this_thread::sleep_for(std::chrono::seconds(10));
    return (process_cpu_seconds() - c0) / 10.0;
  };
  const double released = idle_window(true);
  EXPECT_TRUE(model->governor().stats().released);
  const double held = idle_window(false);
  std::printf("  idle CPU over 10 s: released %.3f%% of a core, release disabled %.3f%%\n", released * 100,
              held * 100);
  EXPECT_LT(released, 0.01);
}

}  // namespace
}  // namespace tandem
