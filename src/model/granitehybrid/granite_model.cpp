#include "model/granitehybrid/granite_model.h"

#include <cstring>

#include "kernels/ssm_scan/ssm_scan.h"

namespace tandem {

std::unique_ptr<GraniteHybridModel> GraniteHybridModel::load(const std::string& path, const LoadOptions& opt) {
  std::unique_ptr<GraniteHybridModel> m(new GraniteHybridModel());
  m->open_layered(path, opt);
  return m;
}

ModelShape GraniteHybridModel::read_hparams(const GgufFile& f) {
  hp_ = GraniteHybridHParams::from_gguf(f);
  return hp_.shape();
}

void GraniteHybridModel::bind_weights(std::unique_ptr<GgufFile> file) {
  const int64_t E = hp_.n_embd, H = hp_.n_ssm_head;
  mamba_.clear();
  bind_file(std::move(file), "output_norm.weight", /*qk_norms=*/false, "a granitehybrid (Granite-4.0-H, dense) model",
            [&](const TensorBinder& b, const std::string& p) {
              GraniteMamba2Weights W;
              W.ssm_in = b.matrix(p + "ssm_in.weight", E, hp_.in_proj_rows());
              W.conv = b.floats(p + "ssm_conv1d.weight", {hp_.d_conv, hp_.conv_channels()});
              if (const GgufTensorInfo* bias = b.find(p + "ssm_conv1d.bias", {hp_.conv_channels()}))
                W.conv_bias = TensorBinder::to_floats(*bias);
              W.dt_bias = b.floats(p + "ssm_dt.bias", {H});
              W.A = b.floats(p + "ssm_a", {1, H});
              W.D = b.floats(p + "ssm_d", {1, H});
              // {d_inner/ng, ng}; llama-quantize writes it 1-D for one group.
              W.ssm_norm = b.floats_padded(p + "ssm_norm.weight", {hp_.d_inner / hp_.n_group, hp_.n_group});
              W.ssm_out = b.matrix(p + "ssm_out.weight", hp_.d_inner, E);
              mamba_.push_back(std::move(W));
            });
}

std::vector<WeightMatrix*> GraniteHybridModel::mixer_matrices(int g) {
  GraniteMamba2Weights& W = mamba_[static_cast<size_t>(g)];
  return {&W.ssm_in, &W.ssm_out};
}

void GraniteHybridModel::drop_mixer_weights() {
  mamba_.clear();
  for (std::vector<float>* v : {&zxbcdt_, &xbc_, &y_}) std::vector<float>().swap(*v);
}

AttentionBlock GraniteHybridModel::attention_block(const LayeredLayerWeights& L) const {
  return AttentionBlock{&L.attn_q, &L.attn_k, &L.attn_v, &L.attn_output, nullptr, nullptr, hp_.n_head,
                        hp_.n_head_kv, hp_.head_dim, hp_.attention_scale, hp_.rms_eps, /*rope=*/false, 0.0f};
}

void GraniteHybridModel::mixer(int, int g, SequenceState& st, int64_t T, const ForwardOptions& opt) {
  mamba2(mamba_[static_cast<size_t>(g)], g, st, T, opt.gdn);
}

// Spec B5.1: zxBCdt = ssm_in·a; xBC → causal conv (K taps) + bias + SiLU; the selective scan over
// (x, B, C, dt + dt_bias) with A and the D skip; y ⊙ silu(z), grouped RMSNorm; m = ssm_out·y.
void GraniteHybridModel::mamba2(const GraniteMamba2Weights& L, int g, SequenceState& st, int64_t T,
                                GdnAlgorithm algo) {
  HybridBlocks& B = *blocks_;
  const int64_t E = hp_.n_embd, di = hp_.d_inner, rows = hp_.in_proj_rows(), ch = hp_.conv_channels();
  const int K = hp_.d_conv, H = hp_.n_ssm_head, ng = hp_.n_group, ds = hp_.d_state;
  float* zx = grown(zxbcdt_, static_cast<size_t>(T * rows));
  B.project(L.ssm_in, cur_.data(), E, T, zx, rows);
  const float* xbc_in = zx + di;        // T rows of ch, stride `rows`
  const float* dt = zx + di + ch;       // T rows of H, stride `rows`

  // The conv (+ bias + SiLU), with the windows the pass hands back.
  float* xbc = grown(xbc_, static_cast<size_t>(T * ch));
  conv_with_stops(g, st, xbc_in, rows, T, ch, K, L.conv.data(), L.conv_bias.empty() ? nullptr : L.conv_bias.data(),
                  true, xbc, ch);
  const int64_t cf = st.conv_floats(), sf = st.ssm_floats(), n_rec = hp_.n_recurrent_layers();

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
