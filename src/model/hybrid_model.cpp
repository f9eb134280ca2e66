#include "model/hybrid_model.h"

#include <chrono>
#include <stdexcept>

#include "kernels/matmul/matmul.h"
#include "kernels/matmul/weight_pack.h"
#include "model/model_fingerprint.h"

namespace tandem {

HybridModel::HybridModel() : packed_(std::make_unique<kernels::PackedWeights>()) {}
HybridModel::~HybridModel() = default;

size_t HybridModel::packed_weight_bytes() const { return packed_->bytes(); }

void HybridModel::forward_image(SequenceState&, const EmbeddingRows&, const ForwardOptions&, ForwardOutput&) {
  throw std::logic_error("a " + architecture() + " model takes no image rows (only qwen35 files have an image path)");
}

void HybridModel::forward_logged(SequenceState&, std::span<const int32_t>, const LoggedPassOptions&, ForwardOutput&) {
  throw std::logic_error("a " + architecture() + " model keeps no replay log (verify in copy mode)");
}

void HybridModel::roll_back(SequenceState&, const ForwardOutput&, int64_t) {
  throw std::logic_error("a " + architecture() + " model keeps no replay log (roll back from rollback states)");
}

void HybridModel::open_common(const std::string& path, std::unique_ptr<GgufFile> file, const LoadOptions& opt) {
  path_ = path;
  fingerprint_ = model_fingerprint(*file);  // before packing gives the sampled pages back
  bind_weights(std::move(file));
  pack_matrices_ = opt.pack_matrices;
  if (pack_matrices_) pack_for_matrix_path();
  pool_ = std::make_unique<ThreadPool>(opt.n_threads);
  governor_ = std::make_unique<CpuResourceGovernor>(*pool_);
}

void HybridModel::require_weights(const char* what) const {
  if (!file_) throw std::logic_error(std::string(what) + ": the model's weights are unloaded (reload_weights first)");
}

void HybridModel::check_text_batch(const SequenceState& st, std::span<const int32_t> tokens) const {
  const int64_t T = static_cast<int64_t>(tokens.size()), pos0 = st.n_past();
  if (T == 0) throw std::invalid_argument("forward: empty batch");
  if (pos0 + T > st.n_ctx())
    throw std::length_error("forward: " + std::to_string(pos0) + " cached + " + std::to_string(T) +
                            " new tokens exceed the context of " + std::to_string(st.n_ctx()));
  for (int64_t t = 0; t < T; ++t)
    if (tokens[t] < 0 || tokens[t] >= shape_.n_vocab)
      throw std::invalid_argument("forward: token id " + std::to_string(tokens[t]) + " at index " +
                                  std::to_string(t) + " outside the vocabulary [0, " +
                                  std::to_string(shape_.n_vocab) + ")");
}

int64_t HybridModel::logit_rows(LogitsMode mode, int64_t pos0, int64_t T, ForwardOutput& out) const {
  out.logit_positions.clear();
  if (mode == LogitsMode::None) {
    out.logits.clear();
    return -1;
  }
  const int64_t first = mode == LogitsMode::All ? 0 : T - 1;
  for (int64_t t = first; t < T; ++t) out.logit_positions.push_back(pos0 + t);
  out.logits.resize(static_cast<size_t>((T - first) * shape_.n_vocab));
  return first;
}

void HybridModel::pack_matrix(kernels::WeightMatrix& W, CpuTier tier, bool keep_rows) {
  // After packing, the ggml rows of a matrix are only read by ActivationMode::Exact: their pages
  // leave the resident set (the file stays the backing store), so the model is not held twice.
  if (W.data && kernels::plan_matrix(W.type, tier).layout == kernels::WeightLayout::Packed && packed_->pack(W) &&
      !keep_rows)
    file_->release_pages(W.data, W.row_stride * static_cast<size_t>(W.rows));
}

void HybridModel::unload_weights() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return;
  drop_weights();
  packed_ = std::make_unique<kernels::PackedWeights>();
  file_.reset();
}

HybridModel::ReloadTimes HybridModel::reload_weights() {
  std::lock_guard<std::mutex> lock(mu_);
  ReloadTimes t;
  if (file_) return t;
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  const auto t0 = Clock::now();
  auto file = GgufFile::open(path_);
  if (model_fingerprint(*file) != fingerprint_)
    file->fail("is no longer the file this server loaded (its size, tensors or sampled contents changed); "
               "restart the server to serve the new file");
  bind_weights(std::move(file));
  const auto t1 = Clock::now();
  if (pack_matrices_) pack_for_matrix_path();
  t.map_ms = ms(t0, t1);
  t.pack_ms = ms(t1, Clock::now());
  return t;
}

}  // namespace tandem
