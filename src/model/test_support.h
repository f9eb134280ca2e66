// Helpers the tests of several folders share (tandem_test_support; issue 52): a temporary folder
// that is removed with its contents, a polling wait, random token ids, a fake RAPL counter, and the tiny generated
// model loaded once per test process with its tokenizer, chat template and a random mmproj of its
// width — what the engine, lifecycle, watchdog, meter and HTTP suites each wrote for themselves.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "vision/vision_generator.h"
#include "vision/vision_model.h"

namespace tandem::test_support {

// ::testing::TempDir()/<name>-<pid>, empty when made (one per process: ctest runs tests as
// concurrent processes), removed with its contents when it goes.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::path(::testing::TempDir()) / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Polls pred every `poll` until it holds or `timeout` passes; the last answer of pred.
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(60),
                       std::chrono::milliseconds poll = std::chrono::milliseconds(5)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(poll);
  }
  return pred();
}

// n token ids drawn uniformly from [0, n_vocab) by mt19937(seed): the model and speculation
// tests' random prompts.
inline std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = dist(rng);
  return t;
}

// The largest |a[i] - b[i]| (the model tests' logit comparisons); a size mismatch fails the test.
inline double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

// A powercap tree with one RAPL package zone (what runtime/energy_meter.h reads), made afresh under
// `root`: the counter's range and its value, in microjoules. set_rapl_energy moves the counter.
inline void set_rapl_energy(const std::filesystem::path& root, uint64_t energy_uj) {
  std::ofstream(root / "intel-rapl:0/energy_uj", std::ios::trunc) << energy_uj << "\n";
}
inline void write_fake_rapl(const std::filesystem::path& root, uint64_t max_energy_range_uj, uint64_t energy_uj) {
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "intel-rapl:0");
  std::ofstream(root / "intel-rapl:0/name") << "package-0\n";
  std::ofstream(root / "intel-rapl:0/max_energy_range_uj") << max_energy_range_uj << "\n";
  set_rapl_energy(root, energy_uj);
}

// The tiny model (F32, with its MTP head; model/test_models.h), its tokenizer and chat template,
// loaded once per test process. Tests that unload or change a model load their own.
struct TinyModel {
  std::unique_ptr<Qwen35Model> model;
  std::unique_ptr<text::Tokenizer> tok;
  text::ChatTemplate tmpl{text::ChatTemplateFamily::ChatML};

  static TinyModel& get() {
    static TinyModel m = [] {
      TinyModel t;
      t.model = Qwen35Model::load(ensure_tiny_model("F32"), 2);
      t.tok = text::Tokenizer::from_gguf(t.model->file());
      t.tmpl = text::ChatTemplate::from_gguf_template(t.tok->vocab().chat_template());
      return t;
    }();
    return m;
  }

  // A random mmproj of the golden tower's shape whose rows have the tiny model's width (256):
  // written and loaded once per test process.
  vision::VisionModel* vision() {
    static std::unique_ptr<vision::VisionModel> v = [] {
      vision::MmprojGenOptions g;
      g.type = GgmlType::F32;
      // One file per process (ctest runs tests as concurrent processes); mapped, then unlinked.
      const std::string path = ::testing::TempDir() + "/tandem-test-mmproj-" + std::to_string(::getpid()) + ".gguf";
      vision::write_mmproj(path, g);
      vision::VisionLoadOptions vo;
      vo.n_threads = 2;
      auto m = vision::VisionModel::load(path, vo);
      std::remove(path.c_str());
      return m;
    }();
    return v.get();
  }
};

}  // namespace tandem::test_support
