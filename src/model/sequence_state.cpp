#include "model/sequence_state.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

#include "runtime/binary_io.h"

namespace tandem {

SequenceState::SequenceState(const SequenceLayout& layout, int64_t n_ctx)
    : n_ctx_(n_ctx),
      n_gdn_(layout.n_recurrent),
      n_attn_(layout.n_attention),
      conv_floats_(layout.conv_floats),
      ssm_floats_(layout.ssm_floats),
      kv_dim_(layout.kv_dim) {
  if (n_ctx <= 0) throw std::invalid_argument("SequenceState: n_ctx must be positive");
  recurrent_.assign(static_cast<size_t>(n_gdn_ * (conv_floats_ + ssm_floats_)), 0.0f);
  kv_.assign(static_cast<size_t>(2 * n_attn_ * n_ctx_ * kv_dim_), 0.0f);
  bump_version();
}

void SequenceState::bump_version() {
  // One counter for all sequences: a version is never seen on two states (nor on a new
  // state at a freed one's address).
  static std::atomic<uint64_t> counter{0};
  version_ = counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

void SequenceState::save_recurrent(RecurrentCheckpoint& cp) const {
  cp.pos = n_past_;
  cp.data.assign(recurrent_.begin(), recurrent_.end());
}

void SequenceState::restore(const RecurrentCheckpoint& cp) {
  if (cp.data.size() != recurrent_.size())
    throw std::invalid_argument("SequenceState::restore: checkpoint holds " + std::to_string(cp.data.size()) +
                                " floats, expected " + std::to_string(recurrent_.size()));
  truncate_kv(cp.pos);
  std::memcpy(recurrent_.data(), cp.data.data(), recurrent_bytes());
}

void SequenceState::truncate_kv(int64_t pos) {
  if (pos < 0 || pos > n_past_)
    throw std::out_of_range("SequenceState::truncate_kv: position " + std::to_string(pos) + " outside [0, " +
                            std::to_string(n_past_) + "]");
  n_past_ = pos;
  while (!images_.empty() && images_.back().begin >= pos) images_.pop_back();
  bump_version();
}

MropePosition SequenceState::position(int64_t index) const {
  // The last image that starts at or before index.
  const auto it = std::upper_bound(images_.begin(), images_.end(), index,
                                   [](int64_t i, const ImageSpan& s) { return i < s.begin; });
  if (it == images_.begin()) return {index, index, index, 0};  // no image before: position = index
  const ImageSpan& s = *(it - 1);
  if (index < s.end()) {
    const int64_t r = index - s.begin;
    return {s.p0, s.p0 + r / s.nx, s.p0 + r % s.nx, 0};
  }
  const int64_t p = s.p0 + s.n_pos() + (index - s.end());  // text after the image
  return {p, p, p, 0};
}

void SequenceState::begin_image(int nx, int ny) {
  if (nx <= 0 || ny <= 0)
    throw std::invalid_argument("SequenceState::begin_image: empty grid " + std::to_string(nx) + " x " +
                                std::to_string(ny));
  if (open_image())
    throw std::logic_error("SequenceState::begin_image: the image at index " + std::to_string(images_.back().begin) +
                           " is not complete");
  ImageSpan s;
  s.begin = n_past_;
  s.p0 = position(n_past_)[0];
  s.nx = nx;
  s.ny = ny;
  images_.push_back(s);
  bump_version();
}

void SequenceState::set_recurrent(const float* data) {
  std::memcpy(recurrent_.data(), data, recurrent_bytes());
  bump_version();
}

void SequenceState::swap_recurrent(StateBuffer& other) {
  other.resize(recurrent_.size());
  recurrent_.swap(other);
  bump_version();
}

void SequenceState::copy_from(const SequenceState& other) {
  if (other.recurrent_.size() != recurrent_.size() || other.kv_dim_ != kv_dim_ || other.n_attn_ != n_attn_)
    throw std::invalid_argument("SequenceState::copy_from: states of different models");
  if (other.n_past_ > n_ctx_)
    throw std::length_error("SequenceState::copy_from: source holds " + std::to_string(other.n_past_) +
                            " tokens, this context has room for " + std::to_string(n_ctx_));
  recurrent_ = other.recurrent_;
  for (int a = 0; a < n_attn_; ++a) {
    const auto* ks = other.kv_.data() + (2 * a) * other.n_ctx_ * kv_dim_;
    const auto* vs = other.kv_.data() + (2 * a + 1) * other.n_ctx_ * kv_dim_;
    std::copy(ks, ks + other.n_past_ * kv_dim_, k_cache(a));
    std::copy(vs, vs + other.n_past_ * kv_dim_, v_cache(a));
  }
  n_past_ = other.n_past_;
  images_ = other.images_;
  bump_version();
}

void SequenceState::reset() {
  std::fill(recurrent_.begin(), recurrent_.end(), 0.0f);
  n_past_ = 0;
  images_.clear();
  bump_version();
}

void SequenceState::write(BinaryWriter& w) const {
  w.pod<int64_t>(n_past_);
  w.pod<uint64_t>(images_.size());
  for (const ImageSpan& im : images_) {
    w.pod<int64_t>(im.begin);
    w.pod<int64_t>(im.p0);
    w.pod<int32_t>(im.nx);
    w.pod<int32_t>(im.ny);
  }
  w.pod<uint64_t>(recurrent_.size());
  w.write(recurrent_.data(), recurrent_.size() * sizeof(float));
  w.pod<int64_t>(kv_dim_);
  w.pod<int32_t>(n_attn_);
  const size_t row = static_cast<size_t>(n_past_ * kv_dim_);
  for (int a = 0; a < n_attn_; ++a) {
    w.write(kv_.data() + (2 * a) * n_ctx_ * kv_dim_, row * sizeof(float));
    w.write(kv_.data() + (2 * a + 1) * n_ctx_ * kv_dim_, row * sizeof(float));
  }
}

void SequenceState::read(BinaryReader& r) {
  reset();
  try {
    const auto n_past = r.pod<int64_t>();
    if (n_past < 0 || n_past > n_ctx_)
      r.fail("a sequence of " + std::to_string(n_past) + " rows does not fit a context of " + std::to_string(n_ctx_));
    const uint64_t n_images = r.count(2 * sizeof(int64_t) + 2 * sizeof(int32_t), "images");
    std::vector<ImageSpan> images;
    images.reserve(n_images);
    int64_t prev_end = 0;
    for (uint64_t i = 0; i < n_images; ++i) {
      ImageSpan im;
      im.begin = r.pod<int64_t>();
      im.p0 = r.pod<int64_t>();
      im.nx = r.pod<int32_t>();
      im.ny = r.pod<int32_t>();
      // Ascending, disjoint, inside the sequence (the last may be open: rows pending past n_past).
      if (im.nx <= 0 || im.ny <= 0 || im.begin < prev_end || im.begin >= n_past || im.p0 < 0 || im.p0 > im.begin)
        r.fail("image " + std::to_string(i) + " of the sequence is not a valid span (corrupted)");
      prev_end = im.end();
      images.push_back(im);
    }
    if (r.pod<uint64_t>() != recurrent_.size())
      r.fail("the recurrent state has another size than this model's (another layout)");
    r.read(recurrent_.data(), recurrent_.size() * sizeof(float));
    if (r.pod<int64_t>() != kv_dim_ || r.pod<int32_t>() != n_attn_)
      r.fail("the KV rows have another shape than this model's (another layout)");
    const size_t row = static_cast<size_t>(n_past * kv_dim_);
    for (int a = 0; a < n_attn_; ++a) {
      r.read(k_cache(a), row * sizeof(float));
      r.read(v_cache(a), row * sizeof(float));
    }
    n_past_ = n_past;
    images_ = std::move(images);
    bump_version();
  } catch (...) {
    reset();
    throw;
  }
}

}  // namespace tandem
