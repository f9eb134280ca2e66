// Everything one sequence (one server slot) carries between forward calls:
// the attention KV cache of each full-attention layer, and the recurrent state
// (conv window + delta-rule state) of each Gated DeltaNet layer.
//
// The recurrent state lives in one contiguous buffer so that a checkpoint is a
// single memcpy; the KV cache needs no copy to go back in time: truncating it is
// just moving the position.
//
// Cache indices and rotary positions. Every input row (a text token or an image's embedding
// row) takes one cache index, 0, 1, 2, ...; its M-RoPE position (t, y, x, e) (spec vision.md
// §5.2–5.3) follows from the images the sequence holds, which the state keeps as ImageSpans (the
// one owner of that table: truncate_kv / restore / copy_from / reset keep it with the KV rows):
//   * text before any image: (i, i, i, 0);
//   * row r of an image of nx × ny rows whose first row sits at index b: (p0, p0 + r / nx,
//     p0 + r % nx, 0), p0 = the position a text token at b would have had;
//   * text after an image continues at p0 + max(nx, ny): position = index − Σ (nx·ny − max(nx, ny))
//     over the images before it.
// An image may arrive in pieces (several passes): until its last row is in, it is the state's
// open image, which only its next rows may follow (Qwen35Model::forward_image). A truncation
// inside an image keeps the rows before the cut — the image is open again, and its remaining rows
// continue it exactly (the rows before are in the KV, the position rule does not depend on where
// the pieces end); a truncation at or before an image's first row drops the image.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/cache_aligned.h"


namespace tandem {

class BinaryWriter;  // runtime/binary_io.h
class BinaryReader;

// A sequence's recurrent state (conv states then delta-rule states, every GDN layer), cache-line
// aligned so that kernels may stream whole rows into it.
using StateBuffer = CacheAlignedVector<float>;

// A copy of the recurrent state of all GDN layers at token position `pos`
// (the state after consuming tokens [0, pos)). Cache-line aligned too: the rollback states of a
// prompt pass are written with streaming stores (they are not read again soon).
struct RecurrentCheckpoint {
  int64_t pos = -1;
  StateBuffer data;
  size_t bytes() const { return data.size() * sizeof(float); }
};

// A rotary position (t, y, x, e) (kernels::rope_cache_mrope).
using MropePosition = std::array<int64_t, 4>;

// One image's embedding rows in the sequence: cache indices [begin, begin + nx·ny), raster order
// over its ny × nx grid; p0 its first row's temporal position.
struct ImageSpan {
  int64_t begin = 0;
  int64_t p0 = 0;
  int nx = 0, ny = 0;
  int64_t n_rows() const { return static_cast<int64_t>(nx) * ny; }
  int64_t end() const { return begin + n_rows(); }
  int64_t n_pos() const { return std::max(nx, ny); }  // positions the image takes (spec vision.md §5.2)
};

// The shape of one sequence's memory, which is all a SequenceState needs of its model: every
// architecture (model/hybrid_model.h) describes its layers this way. Recurrent layers carry a
// conv window of conv_floats and a state of ssm_floats (0 where the mixer has none, LFM2's short
// conv); attention layers carry kv_dim floats per cache row for K and for V.
struct SequenceLayout {
  int n_recurrent = 0;
  int64_t conv_floats = 0;
  int64_t ssm_floats = 0;
  int n_attention = 0;
  int64_t kv_dim = 0;
};

class SequenceState {
 public:
  SequenceState(const SequenceLayout& layout, int64_t n_ctx);

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return n_ctx_; }

  // Recurrent state of recurrent layer g (0-based among recurrent layers).
  float* conv(int g) { return recurrent_.data() + g * conv_floats_; }
  float* ssm(int g) { return recurrent_.data() + n_gdn_ * conv_floats_ + g * ssm_floats_; }
  int64_t conv_floats() const { return conv_floats_; }
  int64_t ssm_floats() const { return ssm_floats_; }
  size_t recurrent_bytes() const { return recurrent_.size() * sizeof(float); }

  // KV cache of attention layer a (0-based among attention layers): n_ctx rows of kv_dim floats.
  float* k_cache(int a) { return kv_.data() + (2 * a) * n_ctx_ * kv_dim_; }
  float* v_cache(int a) { return kv_.data() + (2 * a + 1) * n_ctx_ * kv_dim_; }
  int64_t kv_dim() const { return kv_dim_; }
  size_t kv_bytes() const { return kv_.size() * sizeof(float); }
  size_t kv_bytes_per_token() const { return static_cast<size_t>(2 * n_attn_ * kv_dim_) * sizeof(float); }

  // Copies the recurrent state out (checkpoint.pos = n_past()). Reuses cp.data's capacity.
  void save_recurrent(RecurrentCheckpoint& cp) const;
  // Goes back to a checkpoint: recurrent state copied in, KV cache truncated to cp.pos.
  // cp.pos must be <= n_past() (the KV rows before it are still the ones it was taken with).
  void restore(const RecurrentCheckpoint& cp);
  // Truncates the KV cache to pos <= n_past() and sets the position; the caller must
  // also put the recurrent state of that position in place (restore() does both). Images that
  // start at or after pos are dropped; one with rows on both sides of pos stays, open.
  void truncate_kv(int64_t pos);
  // Overwrites the recurrent state (a buffer of recurrent_bytes(), e.g. a rollback state).
  void set_recurrent(const float* data);
  // Exchanges the recurrent state's storage with other (resized to recurrent_floats() first),
  // in O(1): a pass can keep the state it started from while writing the new one elsewhere.
  void swap_recurrent(StateBuffer& other);
  // Makes this an exact copy of other (same model, this n_ctx >= other's n_past).
  void copy_from(const SequenceState& other);
  // Back to an empty sequence: zero state, position 0.
  void reset();

  // The sequence as a state file holds it (serve/lifecycle/state_file.h): position, images, recurrent state
  // and the KV rows in use. read() fills a state of the same layout with room for the rows; it
  // throws BinaryFormatError (a file of another layout, too long a sequence, a bad image table)
  // and then leaves this state reset.
  void write(BinaryWriter& w) const;
  void read(BinaryReader& r);

  // The images the sequence holds, by cache index (the last one may be open: see above).
  const std::vector<ImageSpan>& images() const { return images_; }
  // The image whose rows are not all in yet (n_past() inside it), or null.
  const ImageSpan* open_image() const {
    return !images_.empty() && images_.back().end() > n_past_ ? &images_.back() : nullptr;
  }
  // The M-RoPE position of cache index `index` (any index >= 0: past n_past() the rows of the open
  // image, else the position a text token there would take).
  MropePosition position(int64_t index) const;

  // Starts an image of nx × ny rows at n_past() (the forward pass does, before its first rows;
  // throws std::logic_error while another image is open, std::invalid_argument for an empty grid).
  void begin_image(int nx, int ny);

  // Advanced by the forward pass.
  void advance(int64_t n) {
    n_past_ += n;
    bump_version();
  }
  // Changes whenever the position or the recurrent state is set (a ReplayLog is only valid
  // for the version the pass left).
  uint64_t version() const { return version_; }
  const float* recurrent_data() const { return recurrent_.data(); }
  int64_t recurrent_floats() const { return static_cast<int64_t>(recurrent_.size()); }

 private:
  void bump_version();
  int64_t n_ctx_;
  int64_t n_past_ = 0;
  uint64_t version_ = 0;
  int n_gdn_, n_attn_;
  int64_t conv_floats_, ssm_floats_, kv_dim_;
  StateBuffer recurrent_;
  std::vector<float> kv_;
  std::vector<ImageSpan> images_;  // ascending begin, disjoint; rows of the last may be pending
};

}  // namespace tandem
