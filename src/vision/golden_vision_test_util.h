// Test-only helpers for llama.cpp's golden vision data (../shared/golden-vision, spec vision.md
// §9): the manifest and the runs it lists. The golden tests select runs from the manifest by what
// a run is (its mmproj, flash attention, image and token budget, dumped nodes) rather than by
// name, so runs added to the manifest later (the held-back third image) are tested without
// editing the tests. Included by the src/vision tests only; not part of any library.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "model/test_paths.h"

namespace tandem::vision::golden {

namespace fs = std::filesystem;
using Json = nlohmann::json;

inline fs::path dir() { return fs::path(TANDEM_SHARED_DIR) / "golden-vision"; }
inline bool available() { return fs::exists(dir() / "manifest.json"); }

// Parsed once per process; only call after available().
inline const Json& manifest() {
  static const Json m = [] {
    std::ifstream f(dir() / "manifest.json");
    return Json::parse(f);
  }();
  return m;
}

inline const Json& run(const std::string& name) { return manifest().at("runs").at(name); }

inline std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) ADD_FAILURE() << "cannot read " << p;
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline std::vector<float> read_f32(const fs::path& p) {
  const std::vector<uint8_t> b = read_bytes(p);
  EXPECT_EQ(b.size() % sizeof(float), 0u) << p;
  std::vector<float> v(b.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(float));
  return v;
}
inline std::vector<float> read_out_f32(const std::string& file) { return read_f32(dir() / "out" / file); }

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// The mmproj's type as the manifest's checks spell it: "F32" for "mmproj-tiny-F32.gguf".
inline std::string mmproj_type(const Json& r) {
  const std::string f = r.at("mmproj").get<std::string>();
  const size_t dash = f.rfind('-'), dot = f.rfind(".gguf");
  if (dash == std::string::npos || dot == std::string::npos || dot < dash) {
    ADD_FAILURE() << "mmproj name '" << f << "' does not end in -TYPE.gguf";
    return f;
  }
  return f.substr(dash + 1, dot - dash - 1);
}
inline bool flash_attn_on(const Json& r) { return r.value("flash_attn", std::string("off")) == "on"; }
inline bool is_f32_plain(const Json& r) { return mmproj_type(r) == "F32" && !flash_attn_on(r); }

// The run's one image chunk (the golden prompts have one marker).
inline const Json& image_chunk(const Json& r) {
  for (const Json& c : r.at("chunks"))
    if (c.at("type") == "image") return c;
  ADD_FAILURE() << "run has no image chunk";
  static const Json empty = Json::object();
  return empty;
}

// What the manifest's checks call the image of a run: the run name after its type prefix
// ("img1" for "f16-img1", "img3-max8" for "q8_0-img3-max8").
inline std::string image_tag(const std::string& run_name) {
  const size_t dash = run_name.find('-');
  return dash == std::string::npos ? run_name : run_name.substr(dash + 1);
}

// The same encoder input: image file and token budget.
inline bool same_image_input(const Json& a, const Json& b) {
  return a.at("image") == b.at("image") && a.at("image_min_tokens") == b.at("image_min_tokens") &&
         a.at("image_max_tokens") == b.at("image_max_tokens");
}

// Run names in manifest order whose run satisfies pred (all when pred is empty).
inline std::vector<std::string> runs(const std::function<bool(const std::string&, const Json&)>& pred = {}) {
  std::vector<std::string> out;
  for (const auto& [name, r] : manifest().at("runs").items())
    if (!pred || pred(name, r)) out.push_back(name);
  return out;
}

// The F32-mmproj, flash-attention-off run of the same image and budget as r, preferring the same
// n_batch; "" when the manifest has none.
inline std::string f32_counterpart(const Json& r) {
  std::string any;
  for (const auto& [name, c] : manifest().at("runs").items()) {
    if (!is_f32_plain(c) || !same_image_input(c, r)) continue;
    if (c.at("n_batch") == r.at("n_batch")) return name;
    if (any.empty()) any = name;
  }
  return any;
}

// llama.cpp's own spread between the F32 mmproj's embeddings and those of run `name` (an F16 or
// Q8_0 mmproj) on this run's image: the manifest's check "max|embd(F32) - embd(T)| <image>" for
// this very image; when the manifest states none, the same number computed from this image's own
// golden files (the F32 run of the same image and budget). Never another image's spread.
struct Spread {
  float value = std::numeric_limits<float>::quiet_NaN();
  std::string source;
};
inline Spread embd_spread(const std::string& name) {
  const Json& r = run(name);
  const std::string key = "max|embd(F32) - embd(" + mmproj_type(r) + ")| " + image_tag(name);
  const Json& checks = manifest().at("checks");
  if (checks.contains(key)) return {checks.at(key).get<float>(), "manifest check '" + key + "'"};
  const std::string f32 = f32_counterpart(r);
  if (f32.empty()) {
    ADD_FAILURE() << name << ": the manifest has neither the check '" << key
                  << "' nor an F32 run of the same image and budget to measure llama.cpp's spread";
    return {};
  }
  const float d = max_abs_diff(read_out_f32(image_chunk(run(f32)).at("embd_file").get<std::string>()),
                               read_out_f32(image_chunk(r).at("embd_file").get<std::string>()));
  return {d, "measured: " + f32 + " vs " + name + " embeddings"};
}

}  // namespace tandem::vision::golden

// Skips, visibly, when ../shared (or its golden-vision set) is absent.
#define SKIP_WITHOUT_GOLDEN_VISION()                                                                        \
  if (!::tandem::vision::golden::available()) GTEST_SKIP() << "SKIPPED: no " << ::tandem::vision::golden::dir(); \
  else (void)0
