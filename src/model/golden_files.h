// Test support: reading the golden data llama.cpp wrote (../shared/golden*/): a token list as a
// JSON array of integers, and raw little-endian float32 logits. Shared by the golden-logits tests
// of every architecture and the image-rows test, with what those tests each wrote for themselves
// (issue 52): our logits of a token list in llama.cpp's batch or split mode (the reference-logits
// test's batch runs too), and their comparison with llama.cpp's row by row.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <vector>

#include "model/hybrid_model.h"

namespace tandem::golden {

// What both golden sets (golden/, golden-hybrids/) hold: the tiny models' vocabulary and the five
// token sequences each model's logits were saved for (their READMEs).
inline constexpr int64_t kVocab = 1027;
inline constexpr const char* kSeqs[] = {"s1", "s2", "s3", "s4", "s5"};

// "[1, 2, 3]" (any whitespace) -> {1, 2, 3}; stops at the first thing that is not a number.
inline std::vector<int32_t> read_tokens(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::vector<int32_t> v;
  char c;
  int64_t x;
  while (f >> c) {
    if (c == '[' || c == ',' || c == ']') continue;
    f.putback(c);
    if (!(f >> x)) break;
    v.push_back(static_cast<int32_t>(x));
  }
  return v;
}

// The whole file as floats (a trailing partial float is dropped).
inline std::vector<float> read_f32(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<float> v(std::filesystem::file_size(p) / sizeof(float));
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

// Our logits against llama.cpp's, rows of n_vocab: the largest and the summed |difference|, and
// how often the argmax agrees over the rows where llama.cpp's top-1/top-2 margin exceeds
// margin_floor.
struct Compare {
  double max_diff = 0, sum_diff = 0;
  int64_t n = 0;
  int rows = 0, argmax_checked = 0, argmax_agree = 0;
  double mean() const { return n ? sum_diff / static_cast<double>(n) : 0; }
};

inline Compare compare(const std::vector<float>& ours, const std::vector<float>& ref, int64_t n_vocab,
                       double margin_floor) {
  Compare c;
  c.rows = static_cast<int>(static_cast<int64_t>(ref.size()) / n_vocab);
  for (int r = 0; r < c.rows; ++r) {
    const float* a = ours.data() + static_cast<int64_t>(r) * n_vocab;
    const float* b = ref.data() + static_cast<int64_t>(r) * n_vocab;
    int64_t best_a = 0, best_b = 0, second_b = -1;
    for (int64_t v = 0; v < n_vocab; ++v) {
      const double d = std::fabs(double(a[v]) - b[v]);
      c.max_diff = std::max(c.max_diff, d);
      c.sum_diff += d;
      ++c.n;
      if (a[v] > a[best_a]) best_a = v;
      if (b[v] > b[best_b]) {
        second_b = best_b;
        best_b = v;
      } else if (v != best_b && (second_b < 0 || b[v] > b[second_b])) {
        second_b = v;
      }
    }
    if (second_b >= 0 && b[best_b] - b[second_b] > margin_floor) {
      ++c.argmax_checked;
      c.argmax_agree += best_a == best_b ? 1 : 0;
    }
  }
  return c;
}

// Every position's logits of toks on a fresh sequence. batch: every token in one call; split:
// llama.cpp's split mode (the first n/2 tokens in one call, then one token per call: the
// recurrent state and KV carried across calls).
inline std::vector<float> run(HybridModel& m, const std::vector<int32_t>& toks, bool split) {
  auto seq = m.new_sequence(static_cast<int64_t>(toks.size()));
  ForwardOptions opt;
  opt.logits = LogitsMode::All;
  ForwardOutput out;
  std::vector<float> all;
  const int64_t n = static_cast<int64_t>(toks.size());
  int64_t s = 0;
  while (s < n) {
    const int64_t e = !split ? n : (s == 0 && n / 2 > 0 ? n / 2 : s + 1);
    m.forward(*seq, std::span<const int32_t>(toks.data() + s, static_cast<size_t>(e - s)), opt, out);
    all.insert(all.end(), out.logits.begin(), out.logits.end());
    s = e;
  }
  return all;
}

}  // namespace tandem::golden
