// The encoder against a plain float64 reference written from the spec (vision.md §3), on random
// towers and images whose sizes are not multiples of any kernel block: odd widths (C 48, head
// dim 12, F 96), non-square patch grids that resample the position table on both axes, and
// attention query blocks that do not divide the patch count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/quants.h"
#include "kernels/elementwise/gelu.h"
#include "runtime/cpu_features.h"
#include "vision/vision_generator.h"
#include "vision/vision_model.h"

namespace tandem::vision {
namespace {

using Mat = std::vector<double>;  // row-major

struct RefTower {
  const VisionModel& m;
  std::vector<double> matrix(const WeightMatrix& W) const {
    std::vector<float> row(static_cast<size_t>(W.cols));
    std::vector<double> out(static_cast<size_t>(W.rows * W.cols));
    for (int64_t r = 0; r < W.rows; ++r) {
      dequantize_row(W.type, W.row(r), row.data(), W.cols);
      for (int64_t c = 0; c < W.cols; ++c) out[static_cast<size_t>(r * W.cols + c)] = row[static_cast<size_t>(c)];
    }
    return out;
  }
  // Y[t][o] = sum_i W[o][i] X[t][i] + b[o]
  static Mat linear(const Mat& W, const std::vector<float>& b, const Mat& X, int64_t T, int64_t in, int64_t out) {
    Mat Y(static_cast<size_t>(T * out));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t o = 0; o < out; ++o) {
        double s = b.empty() ? 0.0 : b[static_cast<size_t>(o)];
        for (int64_t i = 0; i < in; ++i) s += W[static_cast<size_t>(o * in + i)] * X[static_cast<size_t>(t * in + i)];
        Y[static_cast<size_t>(t * out + o)] = s;
      }
    return Y;
  }
  static Mat layer_norm(const Mat& X, int64_t T, int64_t C, const std::vector<float>& w, const std::vector<float>& b,
                        double eps) {
    Mat Y(X.size());
    for (int64_t t = 0; t < T; ++t) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < C; ++c) mean += X[static_cast<size_t>(t * C + c)];
      mean /= static_cast<double>(C);
      for (int64_t c = 0; c < C; ++c) var += std::pow(X[static_cast<size_t>(t * C + c)] - mean, 2);
      var /= static_cast<double>(C);
      for (int64_t c = 0; c < C; ++c) {
        double v = (X[static_cast<size_t>(t * C + c)] - mean) / std::sqrt(var + eps);
        if (!w.empty()) v *= w[static_cast<size_t>(c)];
        if (!b.empty()) v += b[static_cast<size_t>(c)];
        Y[static_cast<size_t>(t * C + c)] = v;
      }
    }
    return Y;
  }
  static double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
  static double f16(double x) { return fp16_to_fp32(fp32_to_fp16(static_cast<float>(x))); }

  Mat encode(const std::vector<float>& pix, int W, int H) const {
    const VisionHParams& hp = m.hparams();
    const VisionWeights& w = m.weights();
    const int P = hp.patch_size, Wp = W / P, Hp = H / P, nx = Wp / 2, G = hp.pos_side;
    const int64_t n = static_cast<int64_t>(Wp) * Hp, C = hp.n_embd, K = 3LL * P * P, d = hp.head_dim;
    std::vector<int> prow(static_cast<size_t>(n)), pcol(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
      const int64_t blk = t / 4;
      prow[static_cast<size_t>(t)] = static_cast<int>(2 * (blk / nx) + (t / 2) % 2);
      pcol[static_cast<size_t>(t)] = static_cast<int>(2 * (blk % nx) + t % 2);
    }
    // Patch embedding: F16-rounded pixels and kernels (llama.cpp's im2col), both kernels summed.
    Mat patches(static_cast<size_t>(n * K));
    for (int64_t t = 0; t < n; ++t)
      for (int c = 0; c < 3; ++c)
        for (int ky = 0; ky < P; ++ky)
          for (int kx = 0; kx < P; ++kx) {
            const int y = prow[static_cast<size_t>(t)] * P + ky, x = pcol[static_cast<size_t>(t)] * P + kx;
            patches[static_cast<size_t>(t * K + (c * P + ky) * P + kx)] = f16(pix[static_cast<size_t>((y * W + x) * 3 + c)]);
          }
    Mat k0 = matrix(w.patch[0]), k1 = matrix(w.patch[1]);
    for (auto* k : {&k0, &k1})
      for (double& v : *k) v = f16(v);
    const Mat e0 = linear(k0, {}, patches, n, K, C), e1 = linear(k1, w.patch_bias, patches, n, K, C);
    Mat x(static_cast<size_t>(n * C));
    for (size_t i = 0; i < x.size(); ++i) x[i] = e0[i] + e1[i];
    // Position table, bilinear with align_corners.
    auto axis = [&](int nout, int i, int& c0, int& c1, double& a) {
      const double s = (nout == 1 || G == 1) ? double(nout) / G : double(nout - 1) / (G - 1);
      const double u = i / s;
      c0 = std::clamp(static_cast<int>(std::floor(u)), 0, G - 1);
      c1 = std::min(c0 + 1, G - 1);
      a = std::clamp(u - c0, 0.0, 1.0);
    };
    for (int64_t t = 0; t < n; ++t) {
      int x0, x1, y0, y1;
      double ax, ay;
      axis(Wp, pcol[static_cast<size_t>(t)], x0, x1, ax);
      axis(Hp, prow[static_cast<size_t>(t)], y0, y1, ay);
      for (int64_t c = 0; c < C; ++c) {
        auto T = [&](int r, int cc) { return static_cast<double>(w.pos_embd[static_cast<size_t>((r * G + cc) * C + c)]); };
        x[static_cast<size_t>(t * C + c)] += T(y0, x0) * (1 - ax) * (1 - ay) + T(y0, x1) * ax * (1 - ay) +
                                             T(y1, x0) * (1 - ax) * ay + T(y1, x1) * ax * ay;
      }
    }
    for (const VisionLayerWeights& L : w.layers) {
      Mat a = layer_norm(x, n, C, L.ln1_w, L.ln1_b, hp.eps);
      Mat qkv = linear(matrix(L.qkv), L.qkv_b, a, n, C, 3 * C);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t part = 0; part < 2; ++part)
          for (int64_t h = 0; h < hp.n_head; ++h) {
            double* v = qkv.data() + t * 3 * C + part * C + h * d;
            for (int64_t j = 0; j < d / 2; ++j) {
              const double p = j < d / 4 ? prow[static_cast<size_t>(t)] : pcol[static_cast<size_t>(t)];
              const double th = p * std::pow(10000.0, -4.0 * static_cast<double>(j < d / 4 ? j : j - d / 4) / d);
              const double a0 = v[j], a1 = v[j + d / 2];
              v[j] = a0 * std::cos(th) - a1 * std::sin(th);
              v[j + d / 2] = a0 * std::sin(th) + a1 * std::cos(th);
            }
          }
      Mat att(static_cast<size_t>(n * C));
      for (int64_t h = 0; h < hp.n_head; ++h)
        for (int64_t i = 0; i < n; ++i) {
          std::vector<double> s(static_cast<size_t>(n));
          double mx = -1e300, sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            double dot = 0;
            for (int64_t k = 0; k < d; ++k) dot += qkv[static_cast<size_t>(i * 3 * C + h * d + k)] * qkv[static_cast<size_t>(j * 3 * C + C + h * d + k)];
            s[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(d));
            mx = std::max(mx, s[static_cast<size_t>(j)]);
          }
          for (double& v : s) sum += (v = std::exp(v - mx));
          for (int64_t k = 0; k < d; ++k) {
            double o = 0;
            for (int64_t j = 0; j < n; ++j) o += s[static_cast<size_t>(j)] / sum * qkv[static_cast<size_t>(j * 3 * C + 2 * C + h * d + k)];
            att[static_cast<size_t>(i * C + h * d + k)] = o;
          }
        }
      const Mat o = linear(matrix(L.out), L.out_b, att, n, C, C);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      a = layer_norm(x, n, C, L.ln2_w, L.ln2_b, hp.eps);
      Mat hdn = linear(matrix(L.up), L.up_b, a, n, C, hp.n_ff);
      for (double& v : hdn) v = gelu(v);
      const Mat f = linear(matrix(L.down), L.down_b, hdn, n, hp.n_ff, C);
      for (size_t i = 0; i < x.size(); ++i) x[i] += f[i];
    }
    const Mat a = layer_norm(x, n, C, w.post_ln_w, w.post_ln_b, hp.eps);
    Mat h = linear(matrix(w.mm0), w.mm0_b, a, n / 4, 4 * C, 4 * C);
    for (double& v : h) v = gelu(v);
    return linear(matrix(w.mm2), w.mm2_b, h, n / 4, 4 * C, hp.out_dim);
  }
};

// A random 4-head tower (the tiny preset's patch size and eps otherwise) written under TempDir as
// tandem-<preset>-mmproj-<type>.gguf; its path.
struct TowerDims {
  int64_t n_embd, n_ff, n_layer, out_dim, pos_side;
};
std::string write_tower(const std::string& preset, const TowerDims& d, uint64_t seed, GgmlType type) {
  MmprojGenOptions g;
  g.shape.preset = preset;
  g.shape.n_embd = d.n_embd, g.shape.n_head = 4, g.shape.n_ff = d.n_ff, g.shape.n_layer = d.n_layer;
  g.shape.out_dim = d.out_dim, g.shape.pos_side = d.pos_side;
  g.type = type;
  g.seed = seed;
  const std::string path = ::testing::TempDir() + "/tandem-" + preset + "-mmproj-" + ggml_type_name(type) + ".gguf";
  write_mmproj(path, g);
  return path;
}

std::string odd_tower(GgmlType type) {
  return write_tower("odd", {.n_embd = 48, .n_ff = 96, .n_layer = 2, .out_dim = 40, .pos_side = 5}, 7, type);
}

// Widths that are multiples of 256, so K-quant matrices keep their type (C 256, d 64, F 512).
std::string wide_tower(GgmlType type) {
  return write_tower("wide", {.n_embd = 256, .n_ff = 512, .n_layer = 1, .out_dim = 64, .pos_side = 4}, 9, type);
}

std::vector<float> random_image(int W, int H, uint32_t seed) {
  std::vector<float> p(static_cast<size_t>(W) * H * 3);
  uint32_t s = seed;
  for (float& v : p) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
  }
  return p;
}

TEST(VisionReference, RandomTowersAndOddSizesMatchAFloat64Reference) {
  for (GgmlType type : {GgmlType::F32, GgmlType::F16}) {
    const std::string path = odd_tower(type);
    auto m = VisionModel::load(path);
    ASSERT_EQ(m->hparams().head_dim, 12);
    const RefTower ref{*m};
    struct Size { int w, h; };
    for (const Size sz : {Size{96, 64}, Size{32, 160}, Size{64, 64}}) {
      const std::vector<float> pix = random_image(sz.w, sz.h, 11u + static_cast<uint32_t>(sz.w));
      const Mat want = ref.encode(pix, sz.w, sz.h);
      for (size_t block_bytes : {size_t{4} << 20, size_t{5 * 4 * 20}}) {  // all queries at once; blocks of 5 or fewer rows
        EncodeOptions opt;
        opt.attention_block_bytes = block_bytes;
        std::vector<float> got;
        const EncodeStats st = m->encode(pix.data(), sz.w, sz.h, got, opt);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(st.nx * st.ny * m->hparams().out_dim, static_cast<int64_t>(got.size()));
        double md = 0, mr = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          md = std::max(md, std::fabs(got[i] - want[i]));
          mr = std::max(mr, std::fabs(want[i]));
        }
        // Float32 products and the F16 GELU table against float64 and an exact GELU.
        EXPECT_LE(md, 3e-3 * std::max(1.0, mr)) << ggml_type_name(type) << " " << sz.w << "x" << sz.h << " block "
                                               << block_bytes << " (max |ref| " << mr << ")";
        // The stated working memory is what a fresh model allocates for this image.
        auto fresh = VisionModel::load(path);
        std::vector<float> again;
        fresh->encode(pix.data(), sz.w, sz.h, again, opt);
        EXPECT_EQ(again, got);
        EXPECT_EQ(fresh->workspace_bytes(), st.workspace_bytes);
      }
    }
  }
}

// The weight types an mmproj may carry: BF16 (activations rounded to BF16), Q8_0 and the
// K-quants (activations quantized to Q8_0 / Q8_K, as ggml-cpu does) against the same float64
// reference on the dequantized weights: the bound is the activations' quantization.
TEST(VisionReference, QuantizedAndBf16TowersMatchTheReference) {
  struct Case { GgmlType type; double tol; };
  for (const Case c : {Case{GgmlType::BF16, 2e-2}, Case{GgmlType::Q8_0, 3e-2}, Case{GgmlType::Q4_K, 3e-2},
                       Case{GgmlType::Q5_K, 3e-2}, Case{GgmlType::Q6_K, 3e-2}}) {
    auto m = VisionModel::load(wide_tower(c.type));
    ASSERT_EQ(m->weights().layers[0].up.type, c.type);
    const RefTower ref{*m};
    const std::vector<float> pix = random_image(96, 32, 5u);
    const Mat want = ref.encode(pix, 96, 32);
    std::vector<float> got;
    m->encode(pix.data(), 96, 32, got);
    double md = 0, mr = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      md = std::max(md, std::fabs(got[i] - want[i]));
      mr = std::max(mr, std::fabs(want[i]));
    }
    std::printf("  %s: max|d| %.3g of max|ref| %.3g\n", ggml_type_name(c.type), md, mr);
    EXPECT_LE(md, c.tol * std::max(1.0, mr)) << ggml_type_name(c.type);
  }
}

// ggml's table GELU against the plain formula through F16 on every F16 input in (-10, 10).
// (and every tier the same bits, on every F16 value and on floats between them, which the
// conversion must round as fp32_to_fp16 does).
TEST(VisionKernels, GeluTableIsTheF16RoundedFormula) {
  std::vector<float> xs;
  for (uint32_t i = 0; i < 65536; ++i) {
    const float x = fp16_to_fp32(static_cast<uint16_t>(i));
    if (!std::isfinite(x)) continue;
    xs.push_back(x);
    xs.push_back(std::nextafter(x, 0.0f));
    xs.push_back(x * 1.0004f);
  }
  std::vector<float> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = xs[i];
    want[i] = x <= -10.0f ? 0.0f : x >= 10.0f ? x : fp16_to_fp32(fp32_to_fp16(kernels::gelu_tanh(fp16_to_fp32(fp32_to_fp16(x)))));
  }
  for (CpuTier t : kBuildTiers) {
    if (clamp_to_machine(t) != t) continue;
    std::vector<float> got(xs.size());
    kernels::gelu_tanh_table(t, xs.data(), got.data(), static_cast<int64_t>(xs.size()));
    for (size_t i = 0; i < xs.size(); ++i)
      ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0) << cpu_tier_name(t) << " x = " << xs[i] << ": " << got[i] << " vs " << want[i];
  }
}

}  // namespace
}  // namespace tandem::vision
