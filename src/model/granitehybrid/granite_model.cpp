#include "model/granitehybrid/granite_model.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/conv/conv1d.h"
#include "kernels/conv/ssm_conv.h"
#include "kernels/ssm_scan/ssm_scan.h"
#include "model/tensor_binder.h"

namespace tandem {

GraniteHybridWeights GraniteHybridWeights::load(const GgufFile& f, const GraniteHybridHParams& hp) {
  const TensorBinder b(f);
  const int64_t E = hp.n_embd, V = hp.n_vocab, ff = hp.n_ff, hd = hp.head_dim, H = hp.n_ssm_head;
  GraniteHybridWeights w;
  w.token_embd = b.matrix("token_embd.weight", E, V);
  w.output_norm = b.floats("output_norm.weight", {E});
  if (const GgufTensorInfo* out = b.find("output.weight", {E, V})) {
    w.output = TensorBinder::to_matrix(*out);
    w.tied = false;
  } else {
    w.output = w.token_embd;
  }
  for (int il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    GraniteHybridLayerWeights L;
    L.recurrent = hp.is_recurrent[static_cast<size_t>(il)];
    L.attn_norm = b.floats(p + "attn_norm.weight", {E});
    L.ffn_norm = b.floats(p + "ffn_norm.weight", {E});
    L.ffn_gate = b.matrix(p + "ffn_gate.weight", E, ff);
    L.ffn_up = b.matrix(p + "ffn_up.weight", E, ff);
    L.ffn_down = b.matrix(p + "ffn_down.weight", ff, E);
    if (L.recurrent) {
      L.ssm_in = b.matrix(p + "ssm_in.weight", E, hp.in_proj_rows());
      L.conv = b.floats(p + "ssm_conv1d.weight", {hp.d_conv, hp.conv_channels()});
      if (const GgufTensorInfo* bias = b.find(p + "ssm_conv1d.bias", {hp.conv_channels()}))
        L.conv_bias = TensorBinder::to_floats(*bias);
      L.dt_bias = b.floats(p + "ssm_dt.bias", {H});
      L.A = b.floats(p + "ssm_a", {1, H});
      L.D = b.floats(p + "ssm_d", {1, H});
      // {d_inner/ng, ng}; llama-quantize writes it 1-D for one group.
      L.ssm_norm = b.floats_padded(p + "ssm_norm.weight", {hp.d_inner / hp.n_group, hp.n_group});
      L.ssm_out = b.matrix(p + "ssm_out.weight", hp.d_inner, E);
    } else {
      L.attn_q = b.matrix(p + "attn_q.weight", E, hp.n_head * hd);
      L.attn_k = b.matrix(p + "attn_k.weight", E, hp.kv_dim());
      L.attn_v = b.matrix(p + "attn_v.weight", E, hp.kv_dim());
      L.attn_output = b.matrix(p + "attn_output.weight", hp.n_head * hd, E);
    }
    w.layers.push_back(std::move(L));
  }
  b.refuse_unused("a granitehybrid (Granite-4.0-H, dense) model");
  return w;
}

GraniteHybridModel::~GraniteHybridModel() = default;

std::unique_ptr<GraniteHybridModel> GraniteHybridModel::load(const std::string& path, const LoadOptions& opt) {
  std::unique_ptr<GraniteHybridModel> m(new GraniteHybridModel());
  auto file = GgufFile::open(path);
  m->hp_ = GraniteHybridHParams::from_gguf(*file);
  m->shape_ = m->hp_.shape();
  m->blocks_ = std::make_unique<HybridBlocks>(opt.tier);  // the kernel tier, fixed for the model's life
  m->open_common(path, std::move(file), opt);
  m->blocks_->set_pool(m->pool_.get());
  return m;
}

void GraniteHybridModel::bind_weights(std::unique_ptr<GgufFile> file) {
  w_ = GraniteHybridWeights::load(*file, hp_);
  file_ = std::move(file);
}

void GraniteHybridModel::drop_weights() {
  w_ = GraniteHybridWeights{};
  for (std::vector<float>* v : {&x_, &cur_, &m_, &zxbcdt_, &xbc_, &y_, &conv_state_}) std::vector<float>().swap(*v);
}

void GraniteHybridModel::pack_for_matrix_path() {
  const CpuTier tier = blocks_->kc.tier;
  for (GraniteHybridLayerWeights& L : w_.layers)
    for (WeightMatrix* W : {&L.ffn_gate, &L.ffn_up, &L.ffn_down, &L.ssm_in, &L.ssm_out, &L.attn_q, &L.attn_k,
                            &L.attn_v, &L.attn_output})
      pack_matrix(*W, tier, false);
  pack_matrix(w_.output, tier, w_.tied);  // tied: the same bytes are the embedding table, looked up by row
}

void GraniteHybridModel::set_activation_mode(kernels::ActivationMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_->kc.activations = mode;
}

void GraniteHybridModel::forward(SequenceState& st, std::span<const int32_t> tokens, const ForwardOptions& opt,
                                 ForwardOutput& out) {
  std::lock_guard<std::mutex> lock(mu_);
  require_weights("forward");
  check_text_batch(st, tokens);
  const int64_t T = static_cast<int64_t>(tokens.size()), E = hp_.n_embd, pos0 = st.n_past();
  stops_.plan(opt, st, T, out);
  const ResourceGovernor::Lease lease = governor_->acquire();  // the whole pass: not released during it
  HybridBlocks& B = *blocks_;
  B.column_shared = opt.column_shared;

  // h0 = embedding_scale · token_embd[tok]; per layer (spec B5):
  //   r = h + residual_scale · mixer(norm(h));  h = r + residual_scale · ffn(norm(r)).
  float* x = grown(x_, static_cast<size_t>(T * E));
  float* cur = grown(cur_, static_cast<size_t>(T * E));
  float* m = grown(m_, static_cast<size_t>(T * E));
  B.embed(w_.token_embd, tokens, hp_.embedding_scale, x);
  const float rs = hp_.residual_scale;
  int g = 0, a = 0;
  for (int il = 0; il < hp_.n_layer; ++il) {
    const GraniteHybridLayerWeights& L = w_.layers[static_cast<size_t>(il)];
    B.rms_norm_rows(x, L.attn_norm.data(), cur, T, E, hp_.rms_eps);
    if (L.recurrent) {
      mamba2(L, g++, st, T, opt.gdn);
    } else {
      const AttentionBlock attn{&L.attn_q, &L.attn_k, &L.attn_v, &L.attn_output, nullptr, nullptr, hp_.n_head,
                                hp_.n_head_kv, hp_.head_dim, hp_.attention_scale, hp_.rms_eps, /*rope=*/false, 0.0f};
      B.attention(attn, cur, E, T, pos0, st.k_cache(a), st.v_cache(a), m);
      ++a;
    }
    for (int64_t i = 0; i < T * E; ++i) x[i] += rs * m[i];
    B.rms_norm_rows(x, L.ffn_norm.data(), cur, T, E, hp_.rms_eps);
    B.swiglu_ffn(L.ffn_gate, L.ffn_up, L.ffn_down, cur, E, T, m);
    for (int64_t i = 0; i < T * E; ++i) x[i] += rs * m[i];
  }
  st.advance(T);

  // Final norm, the LM head, then logits ÷ logit_scale (after the product, as llama.cpp's graph).
  B.rms_norm_rows(x, w_.output_norm.data(), cur, T, E, hp_.rms_eps);
  out.n_vocab = hp_.n_vocab;
  if (opt.hidden) out.hidden.assign(cur, cur + T * E);
  out.logit_positions.clear();
  if (opt.logits == LogitsMode::None) {
    out.logits.clear();
    return;
  }
  const int64_t first = opt.logits == LogitsMode::All ? 0 : T - 1;
  for (int64_t t = first; t < T; ++t) out.logit_positions.push_back(pos0 + t);
  out.logits.resize(static_cast<size_t>((T - first) * hp_.n_vocab));
  B.project(w_.output, cur + first * E, E, T - first, out.logits.data(), hp_.n_vocab);
  if (hp_.logit_scale != 1.0f) {
    const float inv = 1.0f / hp_.logit_scale;
    for (float& v : out.logits) v *= inv;
  }
}

// Spec B5.1: zxBCdt = ssm_in·a; xBC → causal conv (K taps) + bias + SiLU; the selective scan over
// (x, B, C, dt + dt_bias) with A and the D skip; y ⊙ silu(z), grouped RMSNorm; m = ssm_out·y.
void GraniteHybridModel::mamba2(const GraniteHybridLayerWeights& L, int g, SequenceState& st, int64_t T,
                                GdnAlgorithm algo) {
  HybridBlocks& B = *blocks_;
  const int64_t E = hp_.n_embd, di = hp_.d_inner, rows = hp_.in_proj_rows(), ch = hp_.conv_channels();
  const int K = hp_.d_conv, H = hp_.n_ssm_head, ng = hp_.n_group, ds = hp_.d_state;
  float* zx = grown(zxbcdt_, static_cast<size_t>(T * rows));
  B.project(L.ssm_in, cur_.data(), E, T, zx, rows);
  const float* xbc_in = zx + di;        // T rows of ch, stride `rows`
  const float* dt = zx + di + ch;       // T rows of H, stride `rows`

  // The conv windows the pass hands back, the conv (+ bias + SiLU), then the new window.
  float* window = st.conv(g);
  const int64_t cf = st.conv_floats(), sf = st.ssm_floats(), n_rec = hp_.n_recurrent_layers();
  for (size_t i = 0; i < stops_.ends().size(); ++i)
    for (float* dest : stops_.at(i))
      kernels::conv_state_after(xbc_in, rows, stops_.ends()[i], ch, K, window, dest + g * cf);
  float* xbc = grown(xbc_, static_cast<size_t>(T * ch));
  kernels::ssm_conv(B.kc.tier, xbc_in, rows, T, ch, K, L.conv.data(), L.conv_bias.empty() ? nullptr : L.conv_bias.data(),
                    true, window, xbc, ch);
  float* next = grown(conv_state_, static_cast<size_t>(cf));
  kernels::conv_state_after(xbc_in, rows, T, ch, K, window, next);
  std::memcpy(window, next, static_cast<size_t>(cf) * sizeof(float));

  // The scan, segment by segment: it stops at every position the pass hands a state back from,
  // and runs per token from stops_.per_token_from() on (see StateStops).
  float* y = grown(y_, static_cast<size_t>(T * di));
  float* S = st.ssm(g);
  kernels::SsmScanInput in;
  in.H = H;
  in.P = hp_.ssm_head_dim();
  in.ds = ds;
  in.ng = ng;
  in.ldx = ch;
  in.ldbc = ch;
  in.lddt = rows;
  in.dt_bias = L.dt_bias.data();
  in.A = L.A.data();
  in.D = L.D.data();
  in.ldy = di;
  const auto run = [&](int64_t t0, int64_t t1) {
    kernels::SsmScanInput seg = in;
    seg.T = t1 - t0;
    seg.x = xbc + t0 * ch;
    seg.B = xbc + t0 * ch + di;
    seg.C = xbc + t0 * ch + di + static_cast<int64_t>(ng) * ds;
    seg.dt = dt + t0 * rows;
    seg.y = y + t0 * di;
    const bool chunked = seg.T > 1 && t0 < stops_.per_token_from() &&
                         (algo == GdnAlgorithm::Chunked ||
                          (algo == GdnAlgorithm::Auto && kernels::ssm_scan_prefers_chunked(B.kc.tier, seg)));
    // Heads are independent: one task per head.
    pool_->parallel_for(H, [&](int64_t h, int) {
      kernels::SsmScanInput part = seg;
      part.h_begin = static_cast<int>(h);
      part.h_end = static_cast<int>(h) + 1;
      if (chunked)
        kernels::ssm_scan_chunked(B.kc.tier, part, S);
      else
        kernels::ssm_scan(B.kc.tier, part, S);
    });
  };
  int64_t t0 = 0;
  const int64_t split = stops_.per_token_from();
  for (size_t i = 0; i <= stops_.ends().size(); ++i) {
    const int64_t end = i < stops_.ends().size() ? stops_.ends()[i] : T;
    if (split > t0 && split < end) {
      run(t0, split);
      t0 = split;
    }
    if (end > t0) run(t0, end);
    t0 = end;
    if (i < stops_.ends().size())
      for (float* dest : stops_.at(i))
        std::memcpy(dest + n_rec * cf + g * sf, S, static_cast<size_t>(sf) * sizeof(float));
  }

  // y ⊙ silu(z), then the grouped RMSNorm (gate first: spec B5.1 steps 7-8), then ssm_out.
  kernels::gated_group_rms_norm(B.kc.tier, y, di, zx, rows, T, di, ng, L.ssm_norm.data(), hp_.rms_eps, y, di);
  B.project(L.ssm_out, y, di, T, m_.data(), E);
}

}  // namespace tandem
