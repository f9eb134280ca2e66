#include "model/lfm2/lfm2_model.h"

#include <cmath>

namespace tandem {

std::unique_ptr<Lfm2Model> Lfm2Model::load(const std::string& path, const LoadOptions& opt) {
  std::unique_ptr<Lfm2Model> m(new Lfm2Model());
  m->open_layered(path, opt);
  return m;
}

ModelShape Lfm2Model::read_hparams(const GgufFile& f) {
  hp_ = Lfm2HParams::from_gguf(f);
  return hp_.shape();
}

void Lfm2Model::bind_weights(std::unique_ptr<GgufFile> file) {
  const int64_t E = hp_.n_embd;
  conv_.clear();
  bind_file(std::move(file), "token_embd_norm.weight" /* spec A4 */, /*qk_norms=*/true, "an lfm2 model",
            [&](const TensorBinder& b, const std::string& p) {
              Lfm2ConvWeights W;
              W.in_proj = b.matrix(p + "shortconv.in_proj.weight", E, 3 * E);
              W.conv = b.floats(p + "shortconv.conv.weight", {hp_.l_cache, E});
              W.out_proj = b.matrix(p + "shortconv.out_proj.weight", E, E);
              conv_.push_back(std::move(W));
            });
}

std::vector<WeightMatrix*> Lfm2Model::mixer_matrices(int g) {
  Lfm2ConvWeights& W = conv_[static_cast<size_t>(g)];
  return {&W.in_proj, &W.out_proj};
}

void Lfm2Model::drop_mixer_weights() {
  conv_.clear();
  for (std::vector<float>* v : {&bcx_, &u_, &conv_out_}) std::vector<float>().swap(*v);
}

AttentionBlock Lfm2Model::attention_block(const LayeredLayerWeights& L) const {
  return AttentionBlock{&L.attn_q, &L.attn_k, &L.attn_v, &L.attn_output, L.attn_q_norm.data(),
                        L.attn_k_norm.data(), hp_.n_head, hp_.n_head_kv, hp_.head_dim,
                        1.0f / std::sqrt(static_cast<float>(hp_.head_dim)), hp_.rms_eps,
                        /*rope=*/true, hp_.rope_freq_base};
}

void Lfm2Model::mixer(int, int g, SequenceState& st, int64_t T, const ForwardOptions&) {
  short_conv(conv_[static_cast<size_t>(g)], g, st, T);
}

// Spec A6.1: bcx = in_proj·a; u = B ⊙ x; v = causal depthwise conv of u (the window holds the last
// L-1 values of u, no bias, no activation); y = C ⊙ v; m = out_proj·y.
void Lfm2Model::short_conv(const Lfm2ConvWeights& W, int g, SequenceState& st, int64_t T) {
  HybridBlocks& B = *blocks_;
  const int64_t E = hp_.n_embd;
  float* bcx = grown(bcx_, static_cast<size_t>(T * 3 * E));
  B.project(W.in_proj, cur_.data(), E, T, bcx, 3 * E);
  float* u = grown(u_, static_cast<size_t>(T * E));
  for (int64_t t = 0; t < T; ++t) {
    const float* r = bcx + t * 3 * E;
    for (int64_t c = 0; c < E; ++c) u[t * E + c] = r[c] * r[2 * E + c];
  }
  float* v = grown(conv_out_, static_cast<size_t>(T * E));
  conv_with_stops(g, st, u, E, T, E, hp_.l_cache, W.conv.data(), nullptr, false, v, E);
  for (int64_t t = 0; t < T; ++t) {
    const float* C = bcx + t * 3 * E + E;
    for (int64_t c = 0; c < E; ++c) v[t * E + c] *= C[c];
  }
  B.project(W.out_proj, v, E, T, m_.data(), E);
}

}  // namespace tandem
