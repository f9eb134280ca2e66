#include "vision/vision_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/elementwise/gelu.h"
#include "kernels/gemm_f32/gemm_f32.h"
#include "kernels/norms/norms.h"
#include "kernels/rope/rope_vision.h"
#include "kernels/attention/softmax.h"

namespace tandem::vision {

using kernels::KernelContext;
using kernels::WeightLayout;

// Buffers of one encode, sized for the largest image so far and reused (nothing is allocated per
// patch row; an image larger than any before grows them once).
struct VisionModel::Workspace {
  std::vector<float> patches;  // n_pos x 3PP: the image's patches, merge order (then reused)
  std::vector<float> x;        // n_pos x C: the residual stream
  std::vector<float> a;        // n_pos x C: normed input of a sub-layer / attention output
  std::vector<float> qkv;      // n_pos x 3C
  std::vector<float> kt;       // H x d x n_pos: K transposed, per head (the Q·Kᵀ product's B)
  std::vector<float> scores;   // per thread: q_block x n_pos
  std::vector<float> ffn;      // n_pos x F (also the merger's n_tok x 4C rows)
  std::vector<float> t0;       // n_pos x C: the second patch kernel's product / o-projection
  std::vector<float> rope_cs;  // n_pos x d: cos/sin per patch (the same for every layer)
  size_t bytes() const {
    size_t n = 0;
    for (const auto* v : {&patches, &x, &a, &qkv, &kt, &scores, &ffn, &t0, &rope_cs}) n += v->capacity() * sizeof(float);
    return n;
  }
};

namespace {

float* sized(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Patch (row, col) of token t in the 2x2-merge order (spec §3.2): t = ((Y*nx + X)*2 + dy)*2 + dx.
inline void merge_order_position(int64_t t, int nx, int& row, int& col) {
  const int64_t dx = t & 1, dy = (t >> 1) & 1, blk = t >> 2;
  row = static_cast<int>(2 * (blk / nx) + dy);
  col = static_cast<int>(2 * (blk % nx) + dx);
}

// Query rows per attention task: at most 64 (a task's share of the work stays small enough to
// balance the threads) and the scores of the block against every patch within `budget`.
int64_t query_block(int64_t n_pos, size_t budget) {
  const int64_t q = static_cast<int64_t>(budget / (static_cast<size_t>(n_pos) * sizeof(float)));
  return std::clamp<int64_t>(q, 1, std::min<int64_t>(64, n_pos));
}

}  // namespace

VisionModel::VisionModel() = default;
VisionModel::~VisionModel() = default;

std::unique_ptr<VisionModel> VisionModel::load(const std::string& path, const VisionLoadOptions& opt) {
  std::unique_ptr<VisionModel> m(new VisionModel());
  m->file_ = GgufFile::open(path);
  m->hp_ = VisionHParams::from_gguf(*m->file_);
  m->w_ = VisionWeights::load(*m->file_, m->hp_);
  m->ctx_ = std::make_unique<KernelContext>(opt.tier);
  m->pack_for_matrix_path(opt.pack_matrices);
  m->pool_ = std::make_unique<ThreadPool>(opt.n_threads);
  m->ctx_->pool = m->pool_.get();
  m->ws_ = std::make_unique<Workspace>();
  return m;
}

CpuTier VisionModel::cpu_tier() const { return ctx_->tier; }

void VisionModel::set_activation_mode(kernels::ActivationMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  ctx_->activations = mode;
}

void VisionModel::pack_for_matrix_path(bool pack) {
  if (!pack) return;
  auto one = [&](WeightMatrix& W) {
    if (W.data && kernels::plan_matrix(W.type, ctx_->tier).layout == WeightLayout::Packed) packed_.pack(W);
  };
  for (VisionLayerWeights& L : w_.layers)
    for (WeightMatrix* W : {&L.qkv, &L.out, &L.up, &L.down}) one(*W);
  one(w_.mm0);
  one(w_.mm2);
}

void VisionModel::check_text_model(int64_t text_n_embd, const std::string& text_path) const {
  if (hp_.out_dim != text_n_embd)
    file_->fail("the mmproj's output width (mm.2: " + std::to_string(hp_.out_dim) + ") differs from the text model '" +
                text_path + "' n_embd " + std::to_string(text_n_embd) + ": the two files do not belong together");
}

template <typename F>
void VisionModel::for_rows(int64_t n, F&& fn) {
  // Row ranges of at least 16 rows per task: the elementwise stages are memory-bound.
  const int64_t n_tasks = std::min<int64_t>(std::max<int64_t>(1, n / 16), 4LL * pool_->size());
  pool_->parallel_for(n_tasks, [&](int64_t task, int) {
    const int64_t lo = n * task / n_tasks, hi = n * (task + 1) / n_tasks;
    fn(lo, hi);
  });
}

// Y = X W^T + b over T rows.
void VisionModel::linear(const WeightMatrix& W, const std::vector<float>& bias, const float* X, int64_t ldx, int64_t T,
                         float* Y, int64_t ldy) {
  kernels::matmul(W, X, ldx, T, Y, ldy, *ctx_);
  if (bias.empty()) return;
  const float* b = bias.data();
  for_rows(T, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      float* y = Y + t * ldy;
      for (int64_t o = 0; o < W.rows; ++o) y[o] += b[o];
    }
  });
}

size_t VisionModel::workspace_bytes_for(int64_t n_pos, size_t attention_block_bytes) const {
  const int64_t C = hp_.n_embd, F = hp_.n_ff, d = hp_.head_dim;
  const int64_t qb = query_block(n_pos, attention_block_bytes);
  const int64_t floats = n_pos * hp_.patch_dim() + 3 * n_pos * C /* x, a, t0 */ + n_pos * 3 * C /* qkv */ +
                         n_pos * C /* kt */ + qb * n_pos * pool_->size() + n_pos * std::max<int64_t>(F, hp_.merged_dim() / 4) +
                         n_pos * d /* rope */;
  return static_cast<size_t>(floats) * sizeof(float);
}

size_t VisionModel::workspace_bytes() const { return ws_->bytes(); }

PreprocessParams VisionModel::preprocess_params(const ImageBudget& budget) const {
  PreprocessParams p;
  p.patch_size = hp_.patch_size;
  p.merge = hp_.merge;
  for (int c = 0; c < 3; ++c) {
    p.mean[c] = hp_.mean[c];
    p.std[c] = hp_.std[c];
  }
  p.budget = budget;
  return p;
}

EncodeStats VisionModel::encode(const PreprocessedImage& img, std::vector<float>& out, const EncodeOptions& opt) {
  if (img.patch_size != hp_.patch_size || img.merge != hp_.merge)
    throw std::invalid_argument("vision encode: the image was preprocessed for patch " + std::to_string(img.patch_size) +
                                ", merge " + std::to_string(img.merge) + "; this tower has patch " +
                                std::to_string(hp_.patch_size) + ", merge " + std::to_string(hp_.merge));
  if (img.pixels.size() != static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 3)
    throw std::invalid_argument("vision encode: the pixel buffer does not match the image size");
  return encode(img.pixels.data(), img.width, img.height, out, opt);
}

EncodeStats VisionModel::encode(const float* pixels, int width, int height, std::vector<float>& out,
                                const EncodeOptions& opt) {
  const int P = hp_.patch_size, align = hp_.align();
  if (width <= 0 || height <= 0 || width % align != 0 || height % align != 0)
    throw std::invalid_argument("vision encode: image of " + std::to_string(width) + "x" + std::to_string(height) +
                                " pixels: expected positive multiples of " + std::to_string(align) +
                                " (patch size x merge; vision/image_preprocess.h makes them)");
  std::lock_guard<std::mutex> lock(mu_);
  const auto t0 = std::chrono::steady_clock::now();
  const int Wp = width / P, Hp = height / P;
  const int64_t n_pos = static_cast<int64_t>(Wp) * Hp, C = hp_.n_embd;
  Workspace& ws = *ws_;
  float* x = sized(ws.x, static_cast<size_t>(n_pos * C));
  auto node = [&](std::string_view name, const float* data, int64_t rows, int64_t cols, int64_t ld) {
    if (opt.on_node) opt.on_node(EncoderNode{name, data, rows, cols, ld});
  };

  EncodeStats st;
  auto lap = [t = std::chrono::steady_clock::now()](double& acc) mutable {
    const auto now = std::chrono::steady_clock::now();
    acc += std::chrono::duration<double, std::milli>(now - t).count();
    t = now;
  };
  // 1. Patch embedding: both temporal kernels over the one frame, summed, plus the bias (§3.1).
  embed_patches(pixels, width, height, Wp, Hp, x);
  node("patch_bias", x, n_pos, C, C);
  // 2. The learned position table, bilinearly resampled to the patch grid (§3.3).
  add_position_embedding(Wp, Hp, x);
  node("inp_pos_emb", x, n_pos, C, C);
  lap(st.embed_ms);
  // 3. The ViT blocks.
  for (int il = 0; il < hp_.n_layer; ++il) block(il, Wp, Hp, opt, st);
  double blocks_ms = 0;  // block() accounts its stages itself
  lap(blocks_ms);
  // 4. The merger: LayerNorm, 2x2 groups, Linear-GELU-Linear (§3.6).
  merger(n_pos, out, opt);
  lap(st.merger_ms);

  st.nx = Wp / hp_.merge;
  st.ny = Hp / hp_.merge;
  st.n_patches = n_pos;
  st.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const double np = static_cast<double>(n_pos), c = static_cast<double>(C), f = static_cast<double>(hp_.n_ff);
  const double ntok = static_cast<double>(st.nx) * st.ny;
  st.gflop = (2.0 * np * static_cast<double>(hp_.patch_dim()) * c * 2.0 +
              hp_.n_layer * (2.0 * np * c * (3.0 * c + c + 2.0 * f) + 4.0 * np * np * c) +
              2.0 * ntok * (16.0 * c * c + 4.0 * c * static_cast<double>(hp_.out_dim))) * 1e-9;
  st.workspace_bytes = workspace_bytes_for(n_pos, opt.attention_block_bytes);
  return st;
}

void VisionModel::embed_patches(const float* pixels, int width, int /*height*/, int Wp, int Hp, float* x) {
  const int P = hp_.patch_size;
  const int64_t n_pos = static_cast<int64_t>(Wp) * Hp, C = hp_.n_embd, K = hp_.patch_dim();
  const int nx = Wp / hp_.merge;
  Workspace& ws = *ws_;
  // Patch vectors in the kernel's (channel, ky, kx) order, tokens in the merge order: the
  // convolution as one product (llama.cpp's im2col + matmul, without the planar copy).
  float* patches = sized(ws.patches, static_cast<size_t>(n_pos * K));
  for_rows(n_pos, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      int row, col;
      merge_order_position(t, nx, row, col);
      float* p = patches + t * K;
      for (int c = 0; c < 3; ++c)
        for (int ky = 0; ky < P; ++ky) {
          const float* src = pixels + (static_cast<int64_t>(row * P + ky) * width + col * P) * 3 + c;
          for (int kx = 0; kx < P; ++kx) *p++ = src[3 * kx];
        }
    }
  });
  float* second = sized(ws.t0, static_cast<size_t>(n_pos * C));
  kernels::matmul(w_.patch[0], patches, K, n_pos, x, C, *ctx_);
  kernels::matmul(w_.patch[1], patches, K, n_pos, second, C, *ctx_);
  const float* b = w_.patch_bias.data();
  for_rows(n_pos, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t)
      for (int64_t o = 0; o < C; ++o) x[t * C + o] = (x[t * C + o] + second[t * C + o]) + b[o];
  });
}

void VisionModel::add_position_embedding(int Wp, int Hp, float* x) {
  const int G = hp_.pos_side, nx = Wp / hp_.merge;
  const int64_t n_pos = static_cast<int64_t>(Wp) * Hp, C = hp_.n_embd;
  const float* T = w_.pos_embd.data();
  // Bilinear, align_corners (ggml's upscale with GGML_SCALE_FLAG_ALIGN_CORNERS): output index i
  // reads source coordinate i / s with s = (n_out - 1) / (G - 1), or n_out / G for a side of one.
  auto axis = [G](int n_out, int i, int& c0, int& c1, float& a) {
    const float s = (n_out == 1 || G == 1) ? static_cast<float>(n_out) / static_cast<float>(G)
                                           : static_cast<float>(n_out - 1) / static_cast<float>(G - 1);
    const float u = static_cast<float>(i) / s;
    c0 = std::clamp(static_cast<int>(std::floor(u)), 0, G - 1);
    c1 = std::clamp(c0 + 1, 0, G - 1);
    a = std::clamp(u - static_cast<float>(c0), 0.0f, 1.0f);
  };
  const bool identity = Wp == G && Hp == G;
  for_rows(n_pos, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      int row, col;
      merge_order_position(t, nx, row, col);
      float* xr = x + t * C;
      if (identity) {
        const float* e = T + (static_cast<int64_t>(row) * G + col) * C;
        for (int64_t c = 0; c < C; ++c) xr[c] += e[c];
        continue;
      }
      int x0, x1, y0, y1;
      float ax, ay;
      axis(Wp, col, x0, x1, ax);
      axis(Hp, row, y0, y1, ay);
      const float* e00 = T + (static_cast<int64_t>(y0) * G + x0) * C;
      const float* e01 = T + (static_cast<int64_t>(y0) * G + x1) * C;
      const float* e10 = T + (static_cast<int64_t>(y1) * G + x0) * C;
      const float* e11 = T + (static_cast<int64_t>(y1) * G + x1) * C;
      for (int64_t c = 0; c < C; ++c)
        xr[c] += e00[c] * (1.0f - ax) * (1.0f - ay) + e01[c] * ax * (1.0f - ay) + e10[c] * (1.0f - ax) * ay +
                 e11[c] * ax * ay;
    }
  });
}

void VisionModel::block(int il, int Wp, int Hp, const EncodeOptions& opt, EncodeStats& st) {
  const VisionLayerWeights& L = w_.layers[static_cast<size_t>(il)];
  const int64_t n_pos = static_cast<int64_t>(Wp) * Hp, C = hp_.n_embd, F = hp_.n_ff;
  Workspace& ws = *ws_;
  float* x = ws.x.data();
  float* a = sized(ws.a, static_cast<size_t>(n_pos * C));
  const std::string sfx = "-" + std::to_string(il);
  auto node = [&](const char* name, const float* data, int64_t cols, int64_t ld) {
    if (!opt.on_node) return;
    const std::string n = name + sfx;
    opt.on_node(EncoderNode{n, data, n_pos, cols, ld});
  };
  auto norm = [&](const std::vector<float>& w, const std::vector<float>& b) {
    const float* wp = w.empty() ? nullptr : w.data();
    const float* bp = b.empty() ? nullptr : b.data();
    for_rows(n_pos, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) kernels::layer_norm(x + t * C, wp, bp, a + t * C, C, hp_.eps);
    });
  };

  auto lap = [t = std::chrono::steady_clock::now()](double& acc) mutable {
    const auto now = std::chrono::steady_clock::now();
    acc += std::chrono::duration<double, std::milli>(now - t).count();
    t = now;
  };
  // Attention sub-layer: x += W_out · Attn(RoPE(QKV(LN1(x)))) (§3.5 steps 1-5).
  norm(L.ln1_w, L.ln1_b);
  node("ln1", a, C, C);
  lap(st.norm_ms);
  float* qkv = sized(ws.qkv, static_cast<size_t>(n_pos * 3 * C));
  linear(L.qkv, L.qkv_b, a, C, n_pos, qkv, 3 * C);
  lap(st.qkv_ms);
  // 2-D RoPE on q and k; the angles depend on the patch only, computed once per image.
  const int d = hp_.head_dim;
  float* cs = ws.rope_cs.data();
  if (il == 0) {
    cs = sized(ws.rope_cs, static_cast<size_t>(n_pos * d));
    const int nx = Wp / hp_.merge;
    for_rows(n_pos, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        int row, col;
        merge_order_position(t, nx, row, col);
        kernels::rope_vision_cache(row, col, d, 10000.0f, cs + t * d);
      }
    });
  }
  for_rows(n_pos, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      kernels::rope_vision_apply(qkv + t * 3 * C, hp_.n_head, d, cs + t * d);
      kernels::rope_vision_apply(qkv + t * 3 * C + C, hp_.n_head, d, cs + t * d);
    }
  });
  node("Qcur_rope", qkv, C, 3 * C);
  node("Kcur_rope", qkv + C, C, 3 * C);
  lap(st.rope_ms);
  attention(n_pos, opt);  // a = softmax(q k^T / sqrt(d)) v, heads concatenated
  node("kqv_out", a, C, C);
  lap(st.attention_ms);
  float* o = sized(ws.t0, static_cast<size_t>(n_pos * C));
  linear(L.out, L.out_b, a, C, n_pos, o, C);
  node("attn_out", o, C, C);
  lap(st.out_ms);
  for_rows(n_pos, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo * C; i < hi * C; ++i) x[i] += o[i];
  });
  node("ffn_inp", x, C, C);

  // MLP sub-layer: x += W_down · GELU(W_up · LN2(x)) (§3.5 step 6).
  norm(L.ln2_w, L.ln2_b);
  node("ffn_inp_normed", a, C, C);
  lap(st.norm_ms);
  float* h = sized(ws.ffn, static_cast<size_t>(n_pos * F));
  linear(L.up, L.up_b, a, C, n_pos, h, F);
  for_rows(n_pos, [&](int64_t lo, int64_t hi) { kernels::gelu_tanh_table(ctx_->tier, h + lo * F, h + lo * F, (hi - lo) * F); });
  linear(L.down, L.down_b, h, F, n_pos, o, C);
  node("ffn_out", o, C, C);
  lap(st.mlp_ms);
  for_rows(n_pos, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo * C; i < hi * C; ++i) x[i] += o[i];
  });
  node("layer_out", x, C, C);
  lap(st.norm_ms);
}

// Full bidirectional attention of every head over all patches (llama.cpp's non-flash path:
// kq = k·q, softmax(kq / sqrt(d)) in F32, then v·kq). Tasks are (head, block of query rows): a
// task's scores against all n_pos keys sit in its thread's buffer (at most the byte budget),
// get their exact row softmax, and multiply V where it lies in the QKV rows. K is transposed per
// head once so that both products are gemm_f32's row-major A·B.
void VisionModel::attention(int64_t n_pos, const EncodeOptions& opt) {
  const int64_t C = hp_.n_embd, H = hp_.n_head, d = hp_.head_dim, ld = 3 * C;
  Workspace& ws = *ws_;
  const float* qkv = ws.qkv.data();
  float* a = ws.a.data();
  float* kt = sized(ws.kt, static_cast<size_t>(n_pos * C));
  // K^T: head h, dim j, patch t at kt[(h*d + j)*n_pos + t].
  pool_->parallel_for(C, [&](int64_t hj, int) {
    const float* src = qkv + C + hj;
    float* dst = kt + hj * n_pos;
    for (int64_t t = 0; t < n_pos; ++t) dst[t] = src[t * ld];
  });
  const int64_t qb = query_block(n_pos, opt.attention_block_bytes);
  float* scores = sized(ws.scores, static_cast<size_t>(qb * n_pos * pool_->size()));
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int64_t n_blocks = (n_pos + qb - 1) / qb;
  const CpuTier tier = ctx_->tier;
  pool_->parallel_for(H * n_blocks, [&](int64_t task, int thread) {
    const int64_t h = task / n_blocks, q0 = (task % n_blocks) * qb, nq = std::min(qb, n_pos - q0);
    float* s = scores + static_cast<int64_t>(thread) * qb * n_pos;
    kernels::gemm_f32(tier, qkv + q0 * ld + h * d, ld, kt + h * d * n_pos, n_pos, s, n_pos, nq, n_pos, d);
    for (int64_t r = 0; r < nq; ++r) kernels::softmax_scaled(tier, s + r * n_pos, n_pos, scale);
    kernels::gemm_f32(tier, s, n_pos, qkv + 2 * C + h * d, ld, a + q0 * C + h * d, C, nq, d, n_pos);
  });
}

void VisionModel::merger(int64_t n_pos, std::vector<float>& out, const EncodeOptions& opt) {
  const int64_t C = hp_.n_embd, C4 = hp_.merged_dim(), n_tok = n_pos / (hp_.merge * hp_.merge);
  Workspace& ws = *ws_;
  float* x = ws.x.data();
  float* a = ws.a.data();
  const float* wp = w_.post_ln_w.empty() ? nullptr : w_.post_ln_w.data();
  const float* bp = w_.post_ln_b.empty() ? nullptr : w_.post_ln_b.data();
  for_rows(n_pos, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) kernels::layer_norm(x + t * C, wp, bp, a + t * C, C, hp_.eps);
  });
  if (opt.on_node) {
    const std::string name = "norm_b-" + std::to_string(hp_.n_layer);
    opt.on_node(EncoderNode{name, a, n_pos, C, C});
  }
  // The merge order makes each 2x2 block four consecutive rows: [n_pos, C] is [n_tok, 4C] as is.
  float* h = sized(ws.ffn, static_cast<size_t>(n_tok * C4));
  linear(w_.mm0, w_.mm0_b, a, C4, n_tok, h, C4);
  for_rows(n_tok, [&](int64_t lo, int64_t hi) { kernels::gelu_tanh_table(ctx_->tier, h + lo * C4, h + lo * C4, (hi - lo) * C4); });
  if (opt.on_node) opt.on_node(EncoderNode{"ffn_gelu", h, n_tok, C4, C4});
  out.resize(static_cast<size_t>(n_tok * hp_.out_dim));
  linear(w_.mm2, w_.mm2_b, h, C4, n_tok, out.data(), hp_.out_dim);
}

}  // namespace tandem::vision
