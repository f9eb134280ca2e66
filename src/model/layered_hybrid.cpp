#include "model/layered_hybrid.h"

#include <cstring>

#include "kernels/conv/conv1d.h"
#include "kernels/conv/ssm_conv.h"

namespace tandem {

namespace {

LayeredWeights bind_layers(const TensorBinder& b, const LayeredHParams& hp, const std::string& output_norm,
                           bool qk_norms, const std::function<void(const std::string&)>& mixer) {
  const int64_t E = hp.n_embd, V = hp.n_vocab, ff = hp.n_ff, hd = hp.head_dim;
  LayeredWeights w;
  w.token_embd = b.matrix("token_embd.weight", E, V);
  w.output_norm = b.floats(output_norm, {E});
  if (const GgufTensorInfo* out = b.find("output.weight", {E, V})) {
    w.output = TensorBinder::to_matrix(*out);
    w.tied = false;
  } else {
    w.output = w.token_embd;
  }
  for (int il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    LayeredLayerWeights L;
    L.recurrent = hp.is_recurrent[static_cast<size_t>(il)];
    L.attn_norm = b.floats(p + "attn_norm.weight", {E});
    L.ffn_norm = b.floats(p + "ffn_norm.weight", {E});
    L.ffn_gate = b.matrix(p + "ffn_gate.weight", E, ff);
    L.ffn_up = b.matrix(p + "ffn_up.weight", E, ff);
    L.ffn_down = b.matrix(p + "ffn_down.weight", ff, E);
    if (L.recurrent) {
      mixer(p);
    } else {
      L.attn_q = b.matrix(p + "attn_q.weight", E, hp.n_head * hd);
      L.attn_k = b.matrix(p + "attn_k.weight", E, hp.kv_dim());
      L.attn_v = b.matrix(p + "attn_v.weight", E, hp.kv_dim());
      L.attn_output = b.matrix(p + "attn_output.weight", hp.n_head * hd, E);
      if (qk_norms) {
        L.attn_q_norm = b.floats(p + "attn_q_norm.weight", {hd});
        L.attn_k_norm = b.floats(p + "attn_k_norm.weight", {hd});
      }
    }
    w.layers.push_back(std::move(L));
  }
  return w;
}

}  // namespace

LayeredHybridModel::~LayeredHybridModel() = default;

void LayeredHybridModel::open_layered(const std::string& path, const LoadOptions& opt) {
  auto file = GgufFile::open(path);
  shape_ = read_hparams(*file);
  blocks_ = std::make_unique<HybridBlocks>(opt.tier);  // the kernel tier, fixed for the model's life
  open_common(path, std::move(file), opt);
  blocks_->set_pool(pool_.get());
}

void LayeredHybridModel::bind_file(std::unique_ptr<GgufFile> file, const std::string& output_norm, bool qk_norms,
                                   const std::string& model,
                                   const std::function<void(const TensorBinder&, const std::string&)>& mixer) {
  const TensorBinder b(*file);
  w_ = bind_layers(b, layered_hparams(), output_norm, qk_norms, [&](const std::string& p) { mixer(b, p); });
  b.refuse_unused(model);
  file_ = std::move(file);
}

void LayeredHybridModel::drop_weights() {
  w_ = LayeredWeights{};
  drop_mixer_weights();
  for (std::vector<float>* v : {&x_, &cur_, &m_, &conv_state_}) std::vector<float>().swap(*v);
}

void LayeredHybridModel::pack_for_matrix_path() {
  const CpuTier tier = blocks_->kc.tier;
  int g = 0;
  for (LayeredLayerWeights& L : w_.layers) {
    for (WeightMatrix* W : {&L.ffn_gate, &L.ffn_up, &L.ffn_down}) pack_matrix(*W, tier, false);
    if (L.recurrent)
      for (WeightMatrix* W : mixer_matrices(g++)) pack_matrix(*W, tier, false);
    for (WeightMatrix* W : {&L.attn_q, &L.attn_k, &L.attn_v, &L.attn_output}) pack_matrix(*W, tier, false);
  }
  pack_matrix(w_.output, tier, w_.tied);  // tied: the same bytes are the embedding table, looked up by row
}

void LayeredHybridModel::set_activation_mode(ActivationMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_->kc.activations = mode;
}

void LayeredHybridModel::forward(SequenceState& st, std::span<const int32_t> tokens, const ForwardOptions& opt,
                                 ForwardOutput& out) {
  std::lock_guard<std::mutex> lock(mu_);
  require_weights("forward");
  check_text_batch(st, tokens);
  const LayeredHParams& hp = layered_hparams();
  const Scalings sc = scalings();
  const int64_t T = static_cast<int64_t>(tokens.size()), E = hp.n_embd, pos0 = st.n_past();
  stops_.plan(opt, st, T, out);
  const ResourceGovernor::Lease lease = governor_->acquire();  // the whole pass: not released during it
  HybridBlocks& B = *blocks_;
  B.column_shared = opt.column_shared;

  float* x = grown(x_, static_cast<size_t>(T * E));
  float* cur = grown(cur_, static_cast<size_t>(T * E));
  float* m = grown(m_, static_cast<size_t>(T * E));
  B.embed(w_.token_embd, tokens, sc.embedding, x);
  int g = 0, a = 0;
  for (int il = 0; il < hp.n_layer; ++il) {
    const LayeredLayerWeights& L = w_.layers[static_cast<size_t>(il)];
    B.rms_norm_rows(x, L.attn_norm.data(), cur, T, E, hp.rms_eps);
    if (L.recurrent) {
      mixer(il, g++, st, T, opt);
    } else {
      B.attention(attention_block(L), cur, E, T, pos0, st.k_cache(a), st.v_cache(a), m);
      ++a;
    }
    for (int64_t i = 0; i < T * E; ++i) x[i] += sc.residual * m[i];
    B.rms_norm_rows(x, L.ffn_norm.data(), cur, T, E, hp.rms_eps);
    B.swiglu_ffn(L.ffn_gate, L.ffn_up, L.ffn_down, cur, E, T, m);
    for (int64_t i = 0; i < T * E; ++i) x[i] += sc.residual * m[i];
  }
  st.advance(T);

  // Final norm, the LM head, then logits ÷ logit scale (after the product, as llama.cpp's graphs).
  B.rms_norm_rows(x, w_.output_norm.data(), cur, T, E, hp.rms_eps);
  out.n_vocab = hp.n_vocab;
  if (opt.hidden) out.hidden.assign(cur, cur + T * E);
  const int64_t first = logit_rows(opt.logits, pos0, T, out);
  if (first < 0) return;
  B.project(w_.output, cur + first * E, E, T - first, out.logits.data(), hp.n_vocab);
  if (sc.logit != 1.0f) {
    const float inv = 1.0f / sc.logit;
    for (float& v : out.logits) v *= inv;
  }
}

void LayeredHybridModel::conv_with_stops(int g, SequenceState& st, const float* x, int64_t ldx, int64_t T,
                                         int64_t channels, int K, const float* w, const float* bias, bool silu,
                                         float* y, int64_t ldy) {
  float* window = st.conv(g);
  const int64_t cf = st.conv_floats();
  for (size_t i = 0; i < stops_.ends().size(); ++i)
    for (float* dest : stops_.at(i))
      kernels::conv_state_after(x, ldx, stops_.ends()[i], channels, K, window, dest + g * cf);
  kernels::ssm_conv(blocks_->kc.tier, x, ldx, T, channels, K, w, bias, silu, window, y, ldy);
  float* next = grown(conv_state_, static_cast<size_t>(cf));
  kernels::conv_state_after(x, ldx, T, channels, K, window, next);
  std::memcpy(window, next, static_cast<size_t>(cf) * sizeof(float));
}

}  // namespace tandem
