#include "model/qwen35/qwen35_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "gguf/quants.h"
#include "kernels/attention/attention.h"
#include "kernels/conv/conv1d.h"
#include "kernels/delta_rule/delta_rule.h"
#include "kernels/elementwise/activations.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/elementwise/stream_copy.h"
#include "kernels/matmul/matmul.h"
#include "kernels/norms/norms.h"
#include "kernels/rope/rope.h"
#include "model/model_fingerprint.h"
#include "model/qwen35/rollback_aware_prefill.h"
#include "model/state_stops.h"

namespace tandem {

using namespace kernels;

// One pass's shape, validated and decided once: which states it hands back and how its tokens
// split between the chunked and the per-token delta rule (rollback-aware prefill). The vectors
// live in the workspace's instance: no allocation per pass once they have grown.
struct Qwen35Model::PassShape {
  LogitsMode logits = LogitsMode::Last;
  bool hidden = false;
  bool column_shared = true;
  bool replay_log = false;       // forward_logged: the layers log their inputs, no state copies
  int64_t rollback_slots = 0;    // snapshot slots kept: min(K, T)
  bool rollback_live = true;
  std::vector<int64_t> rel_cuts; // cut positions relative to the pass start, in (0, T]
  std::vector<DeltaRuleSegment> segments;
};

// Activation buffers of one forward pass, sized for the largest batch seen so far
// (grow-only: a steady stream of same-sized batches allocates nothing).
struct Qwen35Model::Workspace {
  std::vector<float> x, cur, m;       // residual stream, normed input, mixer output: T x n_embd
  std::vector<float> mixed, conv_out; // T x conv_dim
  std::vector<float> z, o;            // T x value_dim (GDN); o also T x n_head*head_dim (attention)
  std::vector<float> beta, g;         // T x H_v
  std::vector<float> qg, k, v;        // attention projections
  std::vector<float> ff_act;          // silu(gate) * up: T x n_ff
  std::vector<float> conv_tmp;
  std::vector<float> rope_cs;         // the pass's rotary cos/sin rows: T x n_rot (rope_rows)
  std::unique_ptr<PassShape> shape;  // the running pass's shape (its vectors reused)
  std::vector<float*> snapshot_to;   // per token of a per-token segment: its rollback slot or null
  std::vector<float> cat;            // MTP: [normed embedding ; normed hidden], T x 2*n_embd
  explicit Workspace(CpuTier tier) : shape(std::make_unique<PassShape>()), kc(tier) {}
  KernelContext kc;                   // the model's kernel tier, matmul threads and converted activations
  bool column_shared = true;          // ForwardOptions::column_shared of the running pass
  std::unique_ptr<ScratchBuffer[]> per_thread;  // delta-rule chunks, attention scores
};

namespace {

template <typename T>
T* sized(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

Qwen35Model::~Qwen35Model() = default;

// Every projection of the network. With column sharing off (ForwardOptions::column_shared =
// false) each of the T columns is its own T = 1 product: the weights are read once per column,
// as a kernel without a multi-column path would (the baseline of the verification benchmark).
void Qwen35Model::project(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy) {
  Workspace& ws = *ws_;
  if (ws.column_shared || T == 1) {
    matmul(W, X, ldx, T, Y, ldy, ws.kc);
    return;
  }
  for (int64_t t = 0; t < T; ++t) matmul(W, X + t * ldx, ldx, 1, Y + t * ldy, ldy, ws.kc);
}

// Several projections of the same input rows (kernels::matmul_multi), the same way.
void Qwen35Model::project_many(std::span<const MatmulTarget> targets, const float* X, int64_t ldx, int64_t T) {
  Workspace& ws = *ws_;
  if (ws.column_shared || T == 1) {
    matmul_multi(targets, X, ldx, T, ws.kc);
    return;
  }
  for (const MatmulTarget& m : targets) project(*m.W, X, ldx, T, m.Y, m.ldy);
}

std::unique_ptr<Qwen35Model> Qwen35Model::load(const std::string& path, int n_threads) {
  LoadOptions opt;
  opt.n_threads = n_threads;
  return load(path, opt);
}

std::unique_ptr<Qwen35Model> Qwen35Model::load(const std::string& path, const LoadOptions& opt) {
  std::unique_ptr<Qwen35Model> m(new Qwen35Model());
  auto file = GgufFile::open(path);
  m->hp_ = Qwen35HParams::from_gguf(*file);
  m->ws_ = std::make_unique<Workspace>(opt.tier);  // the kernel tier, fixed for the model's life
  m->open_common(path, std::move(file), opt);
  m->shape_ = m->hp_.shape();  // after binding: the vocabulary is token_embd's rows
  m->ws_->kc.pool = m->pool_.get();
  m->ws_->per_thread.reset(new ScratchBuffer[static_cast<size_t>(m->pool_->size())]);
  return m;
}

void Qwen35Model::bind_weights(std::unique_ptr<GgufFile> file) {
  w_ = Qwen35Weights::load(*file, hp_);
  has_mtp_ = w_.mtp.has_value();
  file_ = std::move(file);
}

void Qwen35Model::drop_weights() {
  w_ = Qwen35Weights{};
  // A fresh workspace on the same kernel context: the pass buffers (sized by the largest pass
  // so far) go with the weights.
  auto ws = std::make_unique<Workspace>(ws_->kc.tier);
  ws->kc.pool = ws_->kc.pool;
  ws->kc.packed_few_tokens_on_vector_units = ws_->kc.packed_few_tokens_on_vector_units;
  ws->kc.activations = ws_->kc.activations;
  ws->per_thread.reset(new ScratchBuffer[static_cast<size_t>(pool_->size())]);
  ws_ = std::move(ws);
}

CpuTier Qwen35Model::cpu_tier() const { return ws_->kc.tier; }
void Qwen35Model::set_packed_few_tokens_on_vector_units(bool on) { ws_->kc.packed_few_tokens_on_vector_units = on; }
void Qwen35Model::set_activation_mode(ActivationMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  ws_->kc.activations = mode;
}
ActivationMode Qwen35Model::activation_mode() const { return ws_->kc.activations; }

void Qwen35Model::pack_for_matrix_path() {
  const CpuTier tier = ws_->kc.tier;
  auto pack = [&](WeightMatrix& W, bool keep_rows) { pack_matrix(W, tier, keep_rows); };
  auto layer = [&](Qwen35LayerWeights& L) {
    for (WeightMatrix* W : {&L.ffn_gate, &L.ffn_up, &L.ffn_down, &L.attn_qkv, &L.attn_gate, &L.ssm_beta, &L.ssm_alpha,
                            &L.ssm_out, &L.attn_q, &L.attn_k, &L.attn_v, &L.attn_output})
      pack(*W, false);
  };
  for (Qwen35LayerWeights& L : w_.layers) layer(L);
  pack(w_.output, w_.tied);  // tied: the same bytes are the embedding table, looked up by row
  if (w_.mtp) {
    Qwen35MtpWeights& M = *w_.mtp;
    pack(M.eh_proj, false);
    layer(M.block);
    if (M.shared_head_head) pack(*M.shared_head_head, M.embed_tokens && M.embed_tokens->data == M.shared_head_head->data);
    if (M.draft_head) pack(*M.draft_head, false);
  }
}

MtpState::MtpState(const Qwen35HParams& hp, int64_t n) : n_ctx(n) {
  if (n <= 0) throw std::invalid_argument("MtpState: n_ctx must be positive");
  k.assign(static_cast<size_t>(n * hp.kv_dim()), 0.0f);
  v.assign(static_cast<size_t>(n * hp.kv_dim()), 0.0f);
}

void MtpState::truncate(int64_t pos) {
  if (pos < 0 || pos > n_past)
    throw std::out_of_range("MtpState::truncate: position " + std::to_string(pos) + " outside [0, " +
                            std::to_string(n_past) + "]");
  n_past = pos;
}

std::unique_ptr<MtpState> Qwen35Model::new_mtp_state(int64_t n_ctx) const {
  if (!has_mtp()) throw std::logic_error("this model file has no MTP block (nextn_predict_layers = 0)");
  return std::make_unique<MtpState>(hp_, n_ctx);
}

void Qwen35Model::mtp_forward(MtpState& st, std::span<const int32_t> tokens, const float* hidden, LogitsMode logits,
                              ForwardOutput& out, const WeightMatrix* head) {
  std::lock_guard<std::mutex> lock(mu_);
  require_weights("mtp_forward");
  if (!has_mtp()) throw std::logic_error("this model file has no MTP block (nextn_predict_layers = 0)");
  const int64_t T = static_cast<int64_t>(tokens.size()), n_embd = hp_.n_embd, pos0 = st.n_past;
  if (T == 0) throw std::invalid_argument("mtp_forward: empty batch");
  if (pos0 + T > st.n_ctx)
    throw std::length_error("mtp_forward: " + std::to_string(pos0) + " cached + " + std::to_string(T) +
                            " new rows exceed the context of " + std::to_string(st.n_ctx));
  for (int64_t t = 0; t < T; ++t)
    if (tokens[t] < 0 || tokens[t] >= hp_.n_vocab)
      throw std::invalid_argument("mtp_forward: token id " + std::to_string(tokens[t]) + " outside the vocabulary");
  const ResourceGovernor::Lease lease = governor_->acquire();
  const Qwen35MtpWeights& M = *w_.mtp;
  Workspace& ws = *ws_;
  ws.column_shared = true;
  out.n_vocab = head ? head->rows : hp_.n_vocab;

  // u = eh_proj . [RMSNorm(E[x], enorm) ; RMSNorm(h, hnorm)]
  const WeightMatrix& E = M.embed_tokens ? *M.embed_tokens : w_.token_embd;
  float* cat = sized(ws.cat, T * 2 * n_embd);
  for (int64_t t = 0; t < T; ++t) {
    float* row = cat + t * 2 * n_embd;
    dequantize_row(E.type, E.row(tokens[t]), row, n_embd);
    rms_norm(ws.kc.tier, row, M.enorm.data(), row, n_embd, hp_.rms_eps);
    rms_norm(ws.kc.tier, hidden + t * n_embd, M.hnorm.data(), row + n_embd, n_embd, hp_.rms_eps);
  }
  float* x = sized(ws.x, T * n_embd);
  project(M.eh_proj, cat, 2 * n_embd, T, x, n_embd);

  // One full-attention block with its own KV cache, then the FFN.
  residual_norm(nullptr, M.block.attn_norm, sized(ws.cur, T * n_embd), T);
  out.logit_positions.clear();
  resize_states(out.cut_states, 0, out.spare_states, 0);
  resize_states(out.rollback_states, 0, out.spare_states, 0);
  if (logits == LogitsMode::None) {
    // Rows that only catch the head up with the trunk: nothing reads their outputs, only their
    // cache rows (the block's single attention layer is the only one later rows look back at).
    attention_kv_only(M.block, st.k.data(), st.v.data(), pos0, T, rope_rows(nullptr, pos0, T));
    st.n_past += T;
    out.hidden.clear();
    out.logits.clear();
    return;
  }
  attention_layer(M.block, st.k.data(), st.v.data(), pos0, T, rope_rows(nullptr, pos0, T));
  ffn(M.block, T);  // x += the attention output; the FFN's output into ws.m
  st.n_past += T;

  const std::vector<float>& norm = M.shared_head_norm.empty() ? w_.output_norm : M.shared_head_norm;
  float* hn = sized(ws.cur, T * n_embd);
  residual_norm(ws.m.data(), norm, hn, T);  // x += the FFN's output
  out.hidden.assign(hn, hn + T * n_embd);
  const WeightMatrix& H = head ? *head : (M.shared_head_head ? *M.shared_head_head : w_.output);
  const int64_t first = logits == LogitsMode::All ? 0 : T - 1;
  for (int64_t t = first; t < T; ++t) out.logit_positions.push_back(pos0 + t);
  out.logits.resize(static_cast<size_t>((T - first) * H.rows));
  project(H, hn + first * n_embd, n_embd, T - first, out.logits.data(), H.rows);
}

void Qwen35Model::validate_batch(const SequenceState& st, std::span<const int32_t> tokens) const {
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t pos0 = st.n_past();
  if (T == 0) throw std::invalid_argument("forward: empty batch");
  if (const ImageSpan* im = st.open_image())
    throw std::logic_error("forward: the image at index " + std::to_string(im->begin) + " holds " +
                           std::to_string(pos0 - im->begin) + " of its " + std::to_string(im->n_rows()) +
                           " rows; text may follow it only once its last row is in (forward_image)");
  check_text_batch(st, tokens);
}

void Qwen35Model::validate_rows(const SequenceState& st, const EmbeddingRows& r) const {
  const int64_t pos0 = st.n_past();
  if (r.n_rows <= 0 || r.rows == nullptr) throw std::invalid_argument("forward_image: no rows");
  if (r.nx <= 0 || r.ny <= 0)
    throw std::invalid_argument("forward_image: empty image grid " + std::to_string(r.nx) + " x " +
                                std::to_string(r.ny));
  const int64_t n_img = static_cast<int64_t>(r.nx) * r.ny;
  if (r.first_row < 0 || r.first_row + r.n_rows > n_img)
    throw std::invalid_argument("forward_image: rows [" + std::to_string(r.first_row) + ", " +
                                std::to_string(r.first_row + r.n_rows) + ") outside the image's " +
                                std::to_string(n_img) + " rows");
  const ImageSpan* open = st.open_image();
  if (r.first_row == 0 && open)
    throw std::logic_error("forward_image: the image at index " + std::to_string(open->begin) +
                           " is not complete; a new image cannot start before its last row");
  if (r.first_row > 0 &&
      (!open || open->nx != r.nx || open->ny != r.ny || pos0 - open->begin != r.first_row))
    throw std::logic_error("forward_image: rows from " + std::to_string(r.first_row) + " of a " +
                           std::to_string(r.nx) + " x " + std::to_string(r.ny) +
                           " image do not continue the state's open image");
  const int64_t begin = pos0 - r.first_row;
  if (begin + n_img > st.n_ctx())
    throw std::length_error("forward_image: an image of " + std::to_string(n_img) + " rows at index " +
                            std::to_string(begin) + " exceeds the context of " + std::to_string(st.n_ctx()));
}

Qwen35Model::PassShape& Qwen35Model::plan_pass(const SequenceState& st, int64_t T, const ForwardOptions& opt) {
  const int64_t pos0 = st.n_past();
  PassShape& sh = *ws_->shape;
  sh.rel_cuts.clear();
  for (int64_t p : opt.cuts) {
    if (p <= pos0 || p > pos0 + T)
      throw std::invalid_argument("forward: cut position " + std::to_string(p) + " outside (" +
                                  std::to_string(pos0) + ", " + std::to_string(pos0 + T) + "]");
    if (!sh.rel_cuts.empty() && p - pos0 <= sh.rel_cuts.back())
      throw std::invalid_argument("forward: cut positions must be strictly increasing");
    sh.rel_cuts.push_back(p - pos0);
  }
  if (opt.rollback_states < 0) throw std::invalid_argument("forward: rollback_states must be >= 0");
  if (opt.per_token_tail < 0) throw std::invalid_argument("forward: per_token_tail must be >= 0");
  sh.logits = opt.logits;
  sh.hidden = opt.hidden;
  sh.column_shared = opt.column_shared;
  sh.replay_log = false;
  sh.rollback_slots = std::min<int64_t>(opt.rollback_states, T);
  sh.rollback_live = opt.rollback_live;
  const bool chunked = opt.gdn == GdnAlgorithm::Chunked ||
                       (opt.gdn == GdnAlgorithm::Auto && T > 1 && delta_rule_prefers_chunked(ws_->kc.tier, hp_.d_state));
  plan_delta_rule_segments(T, sh.rel_cuts, sh.rollback_slots, opt.per_token_tail, chunked, sh.segments);
  return sh;
}

void Qwen35Model::forward(SequenceState& st, std::span<const int32_t> tokens, const ForwardOptions& opt,
                          ForwardOutput& out) {
  std::lock_guard<std::mutex> lock(mu_);
  require_weights("forward");
  // Validate everything before touching the state.
  validate_batch(st, tokens);
  const int64_t T = static_cast<int64_t>(tokens.size());
  const PassShape& sh = plan_pass(st, T, opt);
  run_pass(st, PassInput{tokens, nullptr, T}, sh, out);
}

void Qwen35Model::forward_image(SequenceState& st, const EmbeddingRows& rows, const ForwardOptions& opt,
                                ForwardOutput& out) {
  std::lock_guard<std::mutex> lock(mu_);
  require_weights("forward_image");
  validate_rows(st, rows);
  const PassShape& sh = plan_pass(st, rows.n_rows, opt);
  // The image's first rows: the state now holds it (open until its last row is in), which gives
  // the rows their positions (SequenceState::position).
  if (rows.first_row == 0) st.begin_image(rows.nx, rows.ny);
  run_pass(st, PassInput{{}, rows.rows, rows.n_rows}, sh, out);
}

void Qwen35Model::forward_logged(SequenceState& st, std::span<const int32_t> tokens, const LoggedPassOptions& opt,
                                 ForwardOutput& out) {
  std::lock_guard<std::mutex> lock(mu_);
  require_weights("forward_logged");
  validate_batch(st, tokens);
  const int64_t T = static_cast<int64_t>(tokens.size());
  PassShape& sh = *ws_->shape;
  sh.rel_cuts.clear();
  sh.logits = opt.logits;
  sh.hidden = opt.hidden;
  sh.column_shared = opt.column_shared;
  sh.replay_log = true;
  sh.rollback_slots = 0;
  sh.rollback_live = true;
  // Every token per token, as T decode steps would run them (and as roll_back() replays them).
  plan_delta_rule_segments(T, {}, 0, 0, /*chunked=*/false, sh.segments);
  run_pass(st, PassInput{tokens, nullptr, T}, sh, out);
}

// The pass itself (mu_ held, the shape validated).
void Qwen35Model::run_pass(SequenceState& st, const PassInput& in, const PassShape& sh, ForwardOutput& out) {
  const int64_t T = in.T;
  const int64_t n_embd = hp_.n_embd;
  const int64_t pos0 = st.n_past();
  const std::vector<int64_t>& rel_cuts = sh.rel_cuts;
  const bool replay = sh.replay_log;

  // Resources are (re-)acquired for the whole pass and cannot be released during it.
  const ResourceGovernor::Lease lease = governor_->acquire();
  Workspace& ws = *ws_;
  ws.column_shared = sh.column_shared;
  out.n_vocab = hp_.n_vocab;
  const size_t floats = static_cast<size_t>(st.recurrent_floats());
  resize_states(out.cut_states, rel_cuts.size(), out.spare_states, floats);
  for (size_t i = 0; i < rel_cuts.size(); ++i) out.cut_states[i].pos = pos0 + rel_cuts[i];
  const int64_t n_rb = sh.rollback_slots;
  out.replay.seq = nullptr;
  if (replay) {
    ReplayLog& log = out.replay;
    log.pos0 = pos0;
    log.T = T;
    log.inputs.resize(static_cast<size_t>(hp_.n_recurrent_layers() * replay_floats_per_layer(T)));
    // The starting state becomes the log's; every GDN layer writes the new one into the
    // buffer the sequence gets in exchange (the log's previous one: nothing to copy).
    st.swap_recurrent(log.before);
  }
  resize_states(out.rollback_states, static_cast<size_t>(n_rb), out.spare_states, floats);
  for (int64_t s = 0; s < n_rb; ++s) out.rollback_states[s].pos = pos0 + T - s;
  if (n_rb > 0 && !sh.rollback_live) out.rollback_states[0].pos = -1;

  // Layer-0 input: token embeddings (get_rows: one dequantized row per token), or embedding
  // rows as they are (an image's, spec vision.md §5.4).
  float* x = sized(ws.x, T * n_embd);
  if (in.rows) {
    std::memcpy(x, in.rows, static_cast<size_t>(T * n_embd) * sizeof(float));
  } else {
    for (int64_t t = 0; t < T; ++t)
      dequantize_row(w_.token_embd.type, w_.token_embd.row(in.tokens[t]), x + t * n_embd, n_embd);
  }
  // The rotary angles of the inputs' positions: text and image rows alike (SequenceState::position).
  const float* rope_cs = rope_rows(&st, pos0, T);

  int g = 0, a = 0;
  for (int il = 0; il < hp_.n_layer; ++il) {
    const Qwen35LayerWeights& L = w_.layers[il];
    // x += the previous layer's FFN output; cur = attn_norm(x).
    residual_norm(il == 0 ? nullptr : ws.m.data(), L.attn_norm, sized(ws.cur, T * n_embd), T);
    if (L.recurrent) {
      gdn_layer(il, g++, st, T, sh, out);
    } else {
      attention_layer(L, st.k_cache(a), st.v_cache(a), pos0, T, rope_cs);
      ++a;
    }
    ffn(L, T);  // x += the mixer's output (ws.m); then the FFN's output into ws.m
  }
  st.advance(T);
  if (replay) {
    out.replay.seq = &st;
    out.replay.seq_version = st.version();
  }

  // Final norm, hidden states and logits.
  float* hn = sized(ws.cur, T * n_embd);
  residual_norm(ws.m.data(), w_.output_norm, hn, T);  // x += the last FFN's output
  if (sh.hidden) out.hidden.assign(hn, hn + T * n_embd);
  const int64_t first = logit_rows(sh.logits, pos0, T, out);
  if (first < 0) return;
  project(w_.output, hn + first * n_embd, n_embd, T - first, out.logits.data(), hp_.n_vocab);
}

// Gated DeltaNet mixer (spec §4.3): reads ws.cur, writes ws.m.
// Where one GDN layer's per-token rows live: the workspace, or in a logged pass
// (forward_logged) the replay log's slots for this layer, so that the pass writes the log itself
// and nothing is copied (Qwen35Model::roll_back reads them back).
struct Qwen35Model::GdnRows {
  float* mixed;     // T x conv_dim: the projection's q|k|v before the conv (the conv's input)
  float* conv_out;  // T x conv_dim: after conv + SiLU, q and k L2-normalised (the delta rule's input)
  float* gdec;      // T x H_v decays
  float* beta;      // T x H_v
  float* z;         // T x value_dim: the output gate
};

Qwen35Model::GdnRows Qwen35Model::gdn_rows(int g, int64_t T, const PassShape& shape, ForwardOutput& out) {
  Workspace& ws = *ws_;
  const int64_t conv_dim = hp_.conv_dim();
  const int H_v = hp_.H_v;
  GdnRows r;
  r.z = sized(ws.z, T * hp_.value_dim());
  if (shape.replay_log) {
    float* log_in = out.replay.inputs.data() + g * replay_floats_per_layer(T);
    r.mixed = log_in;
    r.conv_out = log_in + T * conv_dim;
    r.gdec = log_in + 2 * T * conv_dim;
    r.beta = r.gdec + T * H_v;
  } else {
    r.mixed = sized(ws.mixed, T * conv_dim);
    r.conv_out = sized(ws.conv_out, T * conv_dim);
    r.gdec = sized(ws.g, T * H_v);
    r.beta = sized(ws.beta, T * H_v);
  }
  return r;
}

// One Gated DeltaNet layer (spec §4.3): reads ws.cur, writes ws.m, advances the layer's state.
void Qwen35Model::gdn_layer(int il, int g, SequenceState& st, int64_t T, const PassShape& shape,
                            ForwardOutput& out) {
  const Qwen35LayerWeights& L = w_.layers[il];
  Workspace& ws = *ws_;
  const int64_t n_embd = hp_.n_embd, conv_dim = hp_.conv_dim(), vdim = hp_.value_dim();
  const int H_v = hp_.H_v;
  const GdnRows r = gdn_rows(g, T, shape, out);

  // 1. Projections.
  const MatmulTarget proj[] = {
      {&L.attn_qkv, r.mixed, conv_dim}, {&L.attn_gate, r.z, vdim}, {&L.ssm_beta, r.beta, H_v}, {&L.ssm_alpha, r.gdec, H_v}};
  project_many(proj, ws.cur.data(), n_embd, T);
  for (int64_t t = 0; t < T; ++t)
    for (int h = 0; h < H_v; ++h) {
      float& b = r.beta[t * H_v + h];
      b = sigmoid(b);
      float& gg = r.gdec[t * H_v + h];
      gg = softplus(gg + L.ssm_dt_bias[h]) * L.ssm_a[h];
    }

  // 2. Causal conv + SiLU, and the conv state at every position the pass hands back.
  gdn_conv(L, g, st, T, shape, r, out);
  // 3. q | k | v split: q and k were L2-normalised per head in the conv tasks.
  // 4.-5. The delta rule and the gated RMSNorm of its outputs, segment by segment.
  gdn_delta_rule(L, g, st, T, shape, r, out);
  // 6. The output projection.
  project(L.ssm_out, ws.o.data(), vdim, T, sized(ws.m, T * n_embd), n_embd);
}

void Qwen35Model::gdn_conv(const Qwen35LayerWeights& L, int g, SequenceState& st, int64_t T, const PassShape& shape,
                           const GdnRows& r, ForwardOutput& out) {
  Workspace& ws = *ws_;
  const std::vector<int64_t>& rel_cuts = shape.rel_cuts;
  const bool replay = shape.replay_log;
  const int64_t conv_dim = hp_.conv_dim(), kdim = hp_.key_dim();
  const int d = hp_.d_state, K = hp_.conv_kernel;
  float* mixed = r.mixed;
  float* conv_out = r.conv_out;
  float* conv_state = st.conv(g);
  const size_t conv_off = static_cast<size_t>(conv_state - st.recurrent_data());
  // The state before the batch: the sequence's, or in a logged pass the log's (see run_pass()).
  const float* conv_before = replay ? out.replay.before.data() + conv_off : conv_state;
  // Channels are independent: ranges of whole heads (~256 channels) are the pool's tasks,
  // each also L2-normalising its q and k heads (channels [0, 2 key_dim)) for every token.
  const int64_t conv_block = std::max<int64_t>(1, 256 / d) * d;
  pool_->parallel_for((conv_dim + conv_block - 1) / conv_block, [&](int64_t b, int) {
    const int64_t c0 = b * conv_block, nc = std::min(conv_block, conv_dim - c0);
    conv1d_silu(ws.kc.tier, mixed + c0, conv_dim, T, nc, K, L.ssm_conv1d.data() + c0 * K, conv_before + c0 * (K - 1),
                conv_out + c0, conv_dim);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = c0; c + d <= c0 + nc && c < 2 * kdim; c += d) {
        float* p = conv_out + t * conv_dim + c;
        l2_norm(ws.kc.tier, p, p, d, hp_.rms_eps);
      }
  });
  for (size_t i = 0; i < rel_cuts.size(); ++i)
    conv_state_after(mixed, conv_dim, rel_cuts[i], conv_dim, K, conv_before, out.cut_states[i].data.data() + conv_off);
  for (size_t s = 0; s < out.rollback_states.size(); ++s)
    if (out.rollback_states[s].pos >= 0)  // pos -1: the live state's slot, not kept
      conv_state_after(mixed, conv_dim, T - static_cast<int64_t>(s), conv_dim, K, conv_before,
                       out.rollback_states[s].data.data() + conv_off);
  if (replay) {
    conv_state_after(mixed, conv_dim, T, conv_dim, K, conv_before, conv_state);
  } else {  // in place: through a copy, the old state being an input
    float* conv_tmp = sized(ws.conv_tmp, static_cast<size_t>(st.conv_floats()));
    conv_state_after(mixed, conv_dim, T, conv_dim, K, conv_state, conv_tmp);
    std::memcpy(conv_state, conv_tmp, static_cast<size_t>(st.conv_floats()) * sizeof(float));
  }
}

// The delta rule, segment by segment, as rollback-aware prefill planned the pass
// (model/qwen35/rollback_aware_prefill.h): segments end at every cut and where the per-token rollback
// tail starts, so those states exist between segments; then (in the same tasks) the gated
// RMSNorm of the outputs into ws.o.
void Qwen35Model::gdn_delta_rule(const Qwen35LayerWeights& L, int g, SequenceState& st, int64_t T,
                                 const PassShape& shape, const GdnRows& r, ForwardOutput& out) {
  Workspace& ws = *ws_;
  const std::vector<int64_t>& rel_cuts = shape.rel_cuts;
  const bool replay = shape.replay_log;
  const int64_t conv_dim = hp_.conv_dim(), vdim = hp_.value_dim();
  const int H_v = hp_.H_v, d = hp_.d_state;
  const float* conv_out = r.conv_out;
  const float* gdec = r.gdec;
  const float* beta = r.beta;
  const float* z = r.z;
  float* o = sized(ws.o, T * vdim);
  float* ssm = st.ssm(g);
  const size_t ssm_off = static_cast<size_t>(ssm - st.recurrent_data());
  const int64_t sf = st.ssm_floats();
  const int64_t K_rb = static_cast<int64_t>(out.rollback_states.size());
  // The slot that keeps the state after `after_tokens` tokens, or -1 (none, or the live state's).
  auto kept_slot = [&](int64_t after_tokens) {
    const int64_t slot = rollback_slot(T, after_tokens, K_rb);
    return slot >= 0 && out.rollback_states[static_cast<size_t>(slot)].pos >= 0 ? slot : -1;
  };

  // A kept state is not read again unless a draft is rejected: streamed out by both threads.
  auto save_rollback = [&](int64_t after_tokens, const float* state) {
    if (const int64_t slot = kept_slot(after_tokens); slot >= 0) {
      float* dst = out.rollback_states[static_cast<size_t>(slot)].data.data() + ssm_off;
      pool_->parallel_for(H_v, [&](int64_t h, int) {
        copy_streaming(dst + h * d * d, state + h * d * d, static_cast<int64_t>(d) * d);
      });
    }
  };
  // 5. (in the same tasks) Gated RMSNorm of head h's outputs for tokens [t0, t1).
  auto gated_norm = [&](int64_t h, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* oh = o + t * vdim + h * d;
      rms_norm(ws.kc.tier, oh, L.ssm_norm.data(), oh, d, hp_.rms_eps);
      mul_silu(ws.kc.tier, oh, z + t * vdim + h * d, d);
    }
  };
  size_t next_cut = 0;
  for (const DeltaRuleSegment& seg : shape.segments) {
    const int64_t s = seg.begin, e = seg.end;
    const DeltaRuleInput in =
        delta_rule_input(conv_out + s * conv_dim, gdec + s * H_v, beta + s * H_v, o + s * vdim, e - s);
    if (seg.per_token) {
      // Value heads are independent: one task per head runs all of the segment's tokens,
      // its d x d state staying in that core's cache. The state after each token whose
      // rollback slot is kept goes straight into that slot (snapshot_to): one write per
      // kept state, no staging buffer and no per-token pass over the heads.
      std::vector<float*>& dst = ws.snapshot_to;
      dst.assign(static_cast<size_t>(in.T), nullptr);
      bool any = false;
      for (int64_t t = 0; t < in.T; ++t)
        if (const int64_t slot = kept_slot(s + t + 1); slot >= 0) {
          dst[static_cast<size_t>(t)] = out.rollback_states[static_cast<size_t>(slot)].data.data() + ssm_off;
          any = true;
        }
      DeltaRuleInput part = in;
      part.snapshot_to = any ? dst.data() : nullptr;
      part.state_in = replay ? out.replay.before.data() + ssm_off : nullptr;  // the whole batch is this segment
      pool_->parallel_for(H_v, [&](int64_t h, int) {
        DeltaRuleInput one = part;
        one.h_begin = static_cast<int>(h);
        one.h_end = static_cast<int>(h) + 1;
        delta_rule_recurrent(ws.kc.tier, one, ssm);
        gated_norm(h, s, e);
      });
    } else {
      pool_->parallel_for(H_v, [&](int64_t h, int thread) {
        DeltaRuleInput one = in;
        one.h_begin = static_cast<int>(h);
        one.h_end = static_cast<int>(h) + 1;
        delta_rule_chunked(ws.kc.tier, one, ssm, ws.per_thread[thread]);
        gated_norm(h, s, e);
      });
      save_rollback(e, ssm);
    }
    while (next_cut < rel_cuts.size() && rel_cuts[next_cut] == e) {
      std::memcpy(out.cut_states[next_cut].data.data() + ssm_off, ssm, sf * sizeof(float));
      ++next_cut;
    }
  }
}

size_t ForwardOutput::bytes() const {
  size_t b = (logits.capacity() + hidden.capacity() + replay.before.capacity() + replay.inputs.capacity()) *
                 sizeof(float) +
             logit_positions.capacity() * sizeof(int64_t);
  for (const auto* v : {&cut_states, &rollback_states, &spare_states})
    for (const RecurrentCheckpoint& c : *v) b += c.data.capacity() * sizeof(float);
  return b;
}

DeltaRuleInput Qwen35Model::delta_rule_input(const float* qkv, const float* g, const float* beta, float* out,
                                             int64_t T) const {
  DeltaRuleInput in;
  in.H_k = hp_.H_k;
  in.H_v = hp_.H_v;
  in.d = hp_.d_state;
  in.T = T;
  in.q = qkv;
  in.k = qkv + hp_.key_dim();
  in.v = qkv + 2 * hp_.key_dim();
  in.ldqk = hp_.conv_dim();
  in.ldv = hp_.conv_dim();
  in.g = g;
  in.beta = beta;
  in.out = out;
  in.ldo = hp_.value_dim();
  return in;
}

bool ReplayLog::valid_for(const SequenceState& st) const { return seq == &st && seq_version == st.version(); }

int64_t Qwen35Model::replay_floats_per_layer(int64_t T) const { return 2 * T * hp_.conv_dim() + 2 * T * hp_.H_v; }

void Qwen35Model::roll_back(SequenceState& st, const ForwardOutput& out, int64_t pos) {
  std::lock_guard<std::mutex> lock(mu_);
  require_weights("roll_back");
  const ReplayLog& log = out.replay;
  if (!log.valid_for(st))
    throw std::logic_error("roll_back: the replay log is not from this sequence's last forward pass");
  if (pos < log.pos0 || pos > log.pos0 + log.T)
    throw std::out_of_range("roll_back: position " + std::to_string(pos) + " outside the logged batch [" +
                            std::to_string(log.pos0) + ", " + std::to_string(log.pos0 + log.T) + "]");
  const ResourceGovernor::Lease lease = governor_->acquire();
  Workspace& ws = *ws_;
  const int64_t T = log.T, n = pos - log.pos0, conv_dim = hp_.conv_dim(), vdim = hp_.value_dim();
  const int H_v = hp_.H_v, d = hp_.d_state, K = hp_.conv_kernel;
  const size_t head_floats = static_cast<size_t>(d) * d;
  st.truncate_kv(pos);
  float* o = sized(ws.o, std::max<int64_t>(1, n) * vdim);  // the outputs are not needed
  for (int g = 0; g < hp_.n_recurrent_layers(); ++g) {
    const float* mixed = log.inputs.data() + g * replay_floats_per_layer(T);
    const float* qkv = mixed + T * conv_dim;
    const float* gdec = qkv + T * conv_dim;
    const float* beta = gdec + T * H_v;
    float* conv = st.conv(g);
    float* ssm = st.ssm(g);
    const float* before_conv = log.before.data() + (conv - st.recurrent_data());
    const float* before_ssm = log.before.data() + (ssm - st.recurrent_data());
    conv_state_after(mixed, conv_dim, n, conv_dim, K, before_conv, conv);
    // The same per-token kernel on the same inputs as the pass: the same state, bit for bit.
    DeltaRuleInput in = delta_rule_input(qkv, gdec, beta, o, n);
    in.state_in = before_ssm;
    pool_->parallel_for(H_v, [&](int64_t h, int) {
      if (n == 0) {
        std::memcpy(ssm + h * head_floats, before_ssm + h * head_floats, head_floats * sizeof(float));
        return;
      }
      DeltaRuleInput one = in;
      one.h_begin = static_cast<int>(h);
      one.h_end = static_cast<int>(h) + 1;
      delta_rule_recurrent(ws.kc.tier, one, ssm);
    });
  }
}

const float* Qwen35Model::rope_rows(const SequenceState* st, int64_t pos0, int64_t T) {
  const int n_rot = hp_.n_rot;
  float* cs = sized(ws_->rope_cs, static_cast<size_t>(T * n_rot));
  for (int64_t t = 0; t < T; ++t) {
    const MropePosition p = st ? st->position(pos0 + t) : MropePosition{pos0 + t, pos0 + t, pos0 + t, 0};
    rope_cache_mrope(p.data(), n_rot, hp_.rope_freq_base, hp_.rope_sections, cs + t * n_rot);
  }
  return cs;
}

// The K/V rows of T inputs (their projections in ws.k, ws.v) into the cache at pos0: the k head
// norms and RoPE, then the copies. attention_layer and attention_kv_only share it, so a row
// enters the cache with the same bits either way.
void Qwen35Model::store_kv_rows(const Qwen35LayerWeights& L, float* kc, float* vc, int64_t pos0, int64_t T,
                                const float* rope_cs) {
  Workspace& ws = *ws_;
  const int64_t kvd = hp_.kv_dim();
  const int hd = hp_.head_dim, nkv = hp_.n_head_kv;
  for (int64_t t = 0; t < T; ++t) {
    const float* cs = rope_cs + t * hp_.n_rot;
    float* krow = ws.k.data() + t * kvd;
    for (int h = 0; h < nkv; ++h)
      rms_norm(ws.kc.tier, krow + h * hd, L.attn_k_norm.data(), krow + h * hd, hd, hp_.rms_eps);
    rope_apply(krow, nkv, hd, hp_.n_rot, cs);
    std::memcpy(kc + (pos0 + t) * kvd, krow, kvd * sizeof(float));
    std::memcpy(vc + (pos0 + t) * kvd, ws.v.data() + t * kvd, kvd * sizeof(float));
  }
}

// Only the cache rows of an attention layer (reads ws.cur): the K and V projections (each the
// bits of its own product, as in attention_layer's matmul_multi), norms and RoPE, no queries,
// scores or output.
void Qwen35Model::attention_kv_only(const Qwen35LayerWeights& L, float* kc, float* vc, int64_t pos0, int64_t T,
                                   const float* rope_cs) {
  Workspace& ws = *ws_;
  const int64_t kvd = hp_.kv_dim();
  const MatmulTarget proj[] = {{&L.attn_k, sized(ws.k, T * kvd), kvd}, {&L.attn_v, sized(ws.v, T * kvd), kvd}};
  project_many(proj, ws.cur.data(), hp_.n_embd, T);
  store_kv_rows(L, kc, vc, pos0, T, rope_cs);
}

// Gated full attention (spec §4.4): reads ws.cur, writes ws.m, appends to the KV cache.
void Qwen35Model::attention_layer(const Qwen35LayerWeights& L, float* kc, float* vc, int64_t pos0, int64_t T,
                                  const float* rope_cs) {
  Workspace& ws = *ws_;
  const int64_t n_embd = hp_.n_embd, qdim = hp_.q_proj_dim(), kvd = hp_.kv_dim();
  const int hd = hp_.head_dim, nh = hp_.n_head, nkv = hp_.n_head_kv;
  const float* cur = ws.cur.data();
  float* qg = sized(ws.qg, T * qdim);
  float* k = sized(ws.k, T * kvd);
  float* v = sized(ws.v, T * kvd);
  const MatmulTarget proj[] = {{&L.attn_q, qg, qdim}, {&L.attn_k, k, kvd}, {&L.attn_v, v, kvd}};
  project_many(proj, cur, n_embd, T);

  // q head norms and RoPE; then the new K/V rows into the cache. The query of head h
  // is qg[h*2*hd, +hd); its output gate follows it.
  for (int64_t t = 0; t < T; ++t) {
    const float* cs = rope_cs + t * hp_.n_rot;
    float* qrow = qg + t * qdim;
    for (int h = 0; h < nh; ++h) {
      float* qh = qrow + static_cast<int64_t>(h) * 2 * hd;
      rms_norm(ws.kc.tier, qh, L.attn_q_norm.data(), qh, hd, hp_.rms_eps);
      rope_apply(qh, 1, hd, hp_.n_rot, cs);
    }
  }
  store_kv_rows(L, kc, vc, pos0, T, rope_cs);

  // One task per KV head and a few consecutive tokens: its query rows (the group's heads,
  // interleaved with their gates in qg, for those tokens) share every K/V row read; then the
  // output gate of the task's rows.
  float* o = sized(ws.o, T * nh * hd);
  attention_causal_tasks(
      ws.kc.tier,
      {.n_head = nh, .n_head_kv = nkv, .head_dim = hd, .T = T, .pos0 = pos0,
       .scale = 1.0f / std::sqrt(static_cast<float>(hd)), .q = qg, .ldq = qdim, .k_cache = kc, .v_cache = vc,
       .kv_stride = kvd, .out = o, .ldo = nh * hd, .q_head_stride = 2 * hd},
      *pool_, ws.per_thread.get(), [&](const AttentionRows& rows) {
        for (int r = 0; r < rows.n; ++r) mul_sigmoid(ws.kc.tier, rows.out[r], rows.q[r] + hd, hd);
      });
  project(L.attn_output, o, nh * hd, T, sized(ws.m, T * n_embd), n_embd);
}

// SwiGLU FFN: adds the mixer's output (ws.m) into the residual stream ws.x, then runs on its
// post-attention norm; writes its own output to ws.m (added by the next residual_norm).
void Qwen35Model::ffn(const Qwen35LayerWeights& L, int64_t T) {
  Workspace& ws = *ws_;
  const int64_t n_embd = hp_.n_embd, n_ff = L.ffn_gate.rows;
  float* cur = sized(ws.cur, T * n_embd);
  residual_norm(ws.m.data(), L.post_attention_norm, cur, T);
  // Gate and up projections fused with SwiGLU: the two products never leave a per-task tile.
  float* act = sized(ws.ff_act, T * n_ff);
  if (ws.column_shared || T == 1) {
    matmul_swiglu(L.ffn_gate, L.ffn_up, cur, n_embd, T, act, n_ff, ws.kc);
  } else {
    for (int64_t t = 0; t < T; ++t)
      matmul_swiglu(L.ffn_gate, L.ffn_up, cur + t * n_embd, n_embd, 1, act + t * n_ff, n_ff, ws.kc);
  }
  project(L.ffn_down, act, n_ff, T, sized(ws.m, T * n_embd), n_embd);
}

void Qwen35Model::residual_norm(const float* m, const std::vector<float>& w, float* out, int64_t T) {
  float* x = ws_->x.data();
  const int64_t n = hp_.n_embd;
  auto rows = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      if (m)
        for (int64_t i = t * n; i < (t + 1) * n; ++i) x[i] += m[i];
      rms_norm(ws_->kc.tier, x + t * n, w.data(), out + t * n, n, hp_.rms_eps);
    }
  };
  constexpr int64_t kRows = 16;  // tokens per task: a long batch spreads over the pool
  if (T < 2 * kRows) return rows(0, T);
  pool_->parallel_for((T + kRows - 1) / kRows, [&](int64_t b, int) { rows(b * kRows, std::min(T, (b + 1) * kRows)); });
}

}  // namespace tandem
