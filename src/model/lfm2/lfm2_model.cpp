#include "model/lfm2/lfm2_model.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/conv/conv1d.h"
#include "kernels/conv/ssm_conv.h"
#include "model/tensor_binder.h"

namespace tandem {

Lfm2Weights Lfm2Weights::load(const GgufFile& f, const Lfm2HParams& hp) {
  const TensorBinder b(f);
  const int64_t E = hp.n_embd, V = hp.n_vocab, ff = hp.n_ff, hd = hp.head_dim;
  Lfm2Weights w;
  w.token_embd = b.matrix("token_embd.weight", E, V);
  w.output_norm = b.floats("token_embd_norm.weight", {E});
  if (const GgufTensorInfo* out = b.find("output.weight", {E, V})) {
    w.output = TensorBinder::to_matrix(*out);
    w.tied = false;
  } else {
    w.output = w.token_embd;
  }
  for (int il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Lfm2LayerWeights L;
    L.recurrent = hp.is_recurrent[static_cast<size_t>(il)];
    L.attn_norm = b.floats(p + "attn_norm.weight", {E});
    L.ffn_norm = b.floats(p + "ffn_norm.weight", {E});
    L.ffn_gate = b.matrix(p + "ffn_gate.weight", E, ff);
    L.ffn_up = b.matrix(p + "ffn_up.weight", E, ff);
    L.ffn_down = b.matrix(p + "ffn_down.weight", ff, E);
    if (L.recurrent) {
      L.in_proj = b.matrix(p + "shortconv.in_proj.weight", E, 3 * E);
      L.conv = b.floats(p + "shortconv.conv.weight", {hp.l_cache, E});
      L.out_proj = b.matrix(p + "shortconv.out_proj.weight", E, E);
    } else {
      L.attn_q = b.matrix(p + "attn_q.weight", E, hp.n_head * hd);
      L.attn_k = b.matrix(p + "attn_k.weight", E, hp.kv_dim());
      L.attn_v = b.matrix(p + "attn_v.weight", E, hp.kv_dim());
      L.attn_output = b.matrix(p + "attn_output.weight", hp.n_head * hd, E);
      L.attn_q_norm = b.floats(p + "attn_q_norm.weight", {hd});
      L.attn_k_norm = b.floats(p + "attn_k_norm.weight", {hd});
    }
    w.layers.push_back(std::move(L));
  }
  b.refuse_unused("an lfm2 model");
  return w;
}

Lfm2Model::~Lfm2Model() = default;

std::unique_ptr<Lfm2Model> Lfm2Model::load(const std::string& path, const LoadOptions& opt) {
  std::unique_ptr<Lfm2Model> m(new Lfm2Model());
  auto file = GgufFile::open(path);
  m->hp_ = Lfm2HParams::from_gguf(*file);
  m->shape_ = m->hp_.shape();
  m->blocks_ = std::make_unique<HybridBlocks>(opt.tier);  // the kernel tier, fixed for the model's life
  m->open_common(path, std::move(file), opt);
  m->blocks_->set_pool(m->pool_.get());
  return m;
}

void Lfm2Model::bind_weights(std::unique_ptr<GgufFile> file) {
  w_ = Lfm2Weights::load(*file, hp_);
  file_ = std::move(file);
}

void Lfm2Model::drop_weights() {
  w_ = Lfm2Weights{};
  for (std::vector<float>* v : {&x_, &cur_, &m_, &bcx_, &u_, &conv_out_, &conv_state_}) std::vector<float>().swap(*v);
}

void Lfm2Model::pack_for_matrix_path() {
  const CpuTier tier = blocks_->kc.tier;
  for (Lfm2LayerWeights& L : w_.layers)
    for (WeightMatrix* W : {&L.ffn_gate, &L.ffn_up, &L.ffn_down, &L.in_proj, &L.out_proj, &L.attn_q, &L.attn_k,
                            &L.attn_v, &L.attn_output})
      pack_matrix(*W, tier, false);
  pack_matrix(w_.output, tier, w_.tied);  // tied: the same bytes are the embedding table, looked up by row
}

void Lfm2Model::set_activation_mode(kernels::ActivationMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_->kc.activations = mode;
}

void Lfm2Model::forward(SequenceState& st, std::span<const int32_t> tokens, const ForwardOptions& opt,
                        ForwardOutput& out) {
  std::lock_guard<std::mutex> lock(mu_);
  require_weights("forward");
  check_text_batch(st, tokens);
  const int64_t T = static_cast<int64_t>(tokens.size()), E = hp_.n_embd, pos0 = st.n_past();
  stops_.plan(opt, st, T, out);
  const ResourceGovernor::Lease lease = governor_->acquire();  // the whole pass: not released during it
  HybridBlocks& B = *blocks_;
  B.column_shared = opt.column_shared;

  // h0 = token_embd[tok] (no scaling); per layer: r = h + mixer(norm(h)); h = r + ffn(norm(r)).
  float* x = grown(x_, static_cast<size_t>(T * E));
  float* cur = grown(cur_, static_cast<size_t>(T * E));
  float* m = grown(m_, static_cast<size_t>(T * E));
  B.embed(w_.token_embd, tokens, 1.0f, x);
  int g = 0, a = 0;
  for (int il = 0; il < hp_.n_layer; ++il) {
    const Lfm2LayerWeights& L = w_.layers[static_cast<size_t>(il)];
    B.rms_norm_rows(x, L.attn_norm.data(), cur, T, E, hp_.rms_eps);
    if (L.recurrent) {
      short_conv(L, g++, st, T);
    } else {
      const AttentionBlock attn{&L.attn_q, &L.attn_k, &L.attn_v, &L.attn_output, L.attn_q_norm.data(),
                                L.attn_k_norm.data(), hp_.n_head, hp_.n_head_kv, hp_.head_dim,
                                1.0f / std::sqrt(static_cast<float>(hp_.head_dim)), hp_.rms_eps,
                                /*rope=*/true, hp_.rope_freq_base};
      B.attention(attn, cur, E, T, pos0, st.k_cache(a), st.v_cache(a), m);
      ++a;
    }
    for (int64_t i = 0; i < T * E; ++i) x[i] += m[i];
    B.rms_norm_rows(x, L.ffn_norm.data(), cur, T, E, hp_.rms_eps);
    B.swiglu_ffn(L.ffn_gate, L.ffn_up, L.ffn_down, cur, E, T, m);
    for (int64_t i = 0; i < T * E; ++i) x[i] += m[i];
  }
  st.advance(T);

  // Final norm (token_embd_norm) and the LM head.
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
}

// Spec A6.1: bcx = in_proj·a; u = B ⊙ x; v = causal depthwise conv of u (the window holds the last
// L-1 values of u, no bias, no activation); y = C ⊙ v; m = out_proj·y.
void Lfm2Model::short_conv(const Lfm2LayerWeights& L, int g, SequenceState& st, int64_t T) {
  HybridBlocks& B = *blocks_;
  const int64_t E = hp_.n_embd;
  const int K = hp_.l_cache;
  float* bcx = grown(bcx_, static_cast<size_t>(T * 3 * E));
  B.project(L.in_proj, cur_.data(), E, T, bcx, 3 * E);
  float* u = grown(u_, static_cast<size_t>(T * E));
  for (int64_t t = 0; t < T; ++t) {
    const float* r = bcx + t * 3 * E;
    for (int64_t c = 0; c < E; ++c) u[t * E + c] = r[c] * r[2 * E + c];
  }
  // The windows the pass hands back (checkpoints, rollback states), then the conv, then the new window.
  float* window = st.conv(g);
  const int64_t cf = st.conv_floats();
  for (size_t i = 0; i < stops_.ends().size(); ++i)
    for (float* dest : stops_.at(i)) kernels::conv_state_after(u, E, stops_.ends()[i], E, K, window, dest + g * cf);
  float* v = grown(conv_out_, static_cast<size_t>(T * E));
  kernels::ssm_conv(B.kc.tier, u, E, T, E, K, L.conv.data(), nullptr, false, window, v, E);
  float* next = grown(conv_state_, static_cast<size_t>(cf));
  kernels::conv_state_after(u, E, T, E, K, window, next);
  std::memcpy(window, next, static_cast<size_t>(cf) * sizeof(float));
  for (int64_t t = 0; t < T; ++t) {
    const float* C = bcx + t * 3 * E + E;
    for (int64_t c = 0; c < E; ++c) v[t * E + c] *= C[c];
  }
  B.project(L.out_proj, v, E, T, m_.data(), E);
}

}  // namespace tandem
