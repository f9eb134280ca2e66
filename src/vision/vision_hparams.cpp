#include "vision/vision_hparams.h"

#include <cmath>
#include <sstream>

namespace tandem::vision {
namespace {

int positive_u32(const GgufFile& f, const char* key, int64_t max) {
  const uint64_t v = f.require_uint(key);
  if (v == 0 || v > static_cast<uint64_t>(max))
    f.fail("key '" + std::string(key) + "' = " + std::to_string(v) + ": expected a positive value <= " +
           std::to_string(max));
  return static_cast<int>(v);
}

void read_triple(const GgufFile& f, const char* key, float out[3]) {
  const std::vector<double>* v = f.get_float_array(key);
  if (!v) f.fail("missing required key '" + std::string(key) + "' (a float array of 3 values, one per RGB channel)");
  if (v->size() < 3)
    f.fail("key '" + std::string(key) + "' has " + std::to_string(v->size()) + " values: expected 3 (R, G, B)");
  for (int c = 0; c < 3; ++c) out[c] = static_cast<float>((*v)[static_cast<size_t>(c)]);
}

}  // namespace

VisionHParams VisionHParams::from_gguf(const GgufFile& f) {
  if (!f.get_bool("clip.has_vision_encoder").value_or(false))
    f.fail("key 'clip.has_vision_encoder' is absent or false: expected an mmproj file with a vision encoder");
  std::string proj = f.get_string("clip.projector_type").value_or("");
  if (proj.empty()) proj = f.get_string("clip.vision.projector_type").value_or("");
  if (proj != "qwen3vl_merger")
    f.fail("key 'clip.projector_type' is '" + proj + "': expected 'qwen3vl_merger' (a Qwen3.5 / Qwen3-VL mmproj)");

  VisionHParams hp;
  hp.n_embd = positive_u32(f, "clip.vision.embedding_length", 1 << 16);
  hp.n_head = positive_u32(f, "clip.vision.attention.head_count", 1 << 10);
  hp.n_ff = positive_u32(f, "clip.vision.feed_forward_length", 1 << 20);
  hp.n_layer = positive_u32(f, "clip.vision.block_count", 1024);
  hp.patch_size = positive_u32(f, "clip.vision.patch_size", 65535);
  hp.image_size = static_cast<int>(f.require_uint("clip.vision.image_size"));
  if (hp.image_size > 65536) f.fail("key 'clip.vision.image_size' = " + std::to_string(hp.image_size) + ": expected <= 65536");
  hp.merge = static_cast<int>(f.get_uint("clip.vision.spatial_merge_size").value_or(2));
  if (hp.merge != 2)
    f.fail("key 'clip.vision.spatial_merge_size' = " + std::to_string(hp.merge) + ": only 2 (the Qwen3.5 towers) is supported");
  hp.eps = static_cast<float>(f.require_float("clip.vision.attention.layer_norm_epsilon"));
  if (!(hp.eps > 0.0f) || hp.eps > 1.0f)
    f.fail("key 'clip.vision.attention.layer_norm_epsilon' = " + std::to_string(hp.eps) + ": expected a value in (0, 1]");
  const uint64_t hd = f.get_uint("clip.vision.attention.head_dim").value_or(0);
  if (hd == 0) {
    if (hp.n_embd % hp.n_head != 0)
      f.fail("clip.vision.embedding_length " + std::to_string(hp.n_embd) + " is not a multiple of the head count " +
             std::to_string(hp.n_head));
    hp.head_dim = hp.n_embd / hp.n_head;
  } else {
    hp.head_dim = static_cast<int>(hd);
  }
  if (static_cast<int64_t>(hp.head_dim) * hp.n_head != hp.n_embd)
    f.fail("clip.vision.attention.head_dim " + std::to_string(hp.head_dim) + " x " + std::to_string(hp.n_head) +
           " heads != embedding_length " + std::to_string(hp.n_embd) + ": the fused QKV needs them equal");
  // 2-D RoPE rotates d/2 pairs, a quarter of the head per axis.
  if (hp.head_dim % 4 != 0) f.fail("vision head_dim " + std::to_string(hp.head_dim) + ": expected a multiple of 4 (2-D RoPE)");
  read_triple(f, "clip.vision.image_mean", hp.mean);
  read_triple(f, "clip.vision.image_std", hp.std);
  for (int c = 0; c < 3; ++c)
    if (!(hp.std[c] != 0.0f) || !std::isfinite(hp.std[c]) || !std::isfinite(hp.mean[c]))
      f.fail("key 'clip.vision.image_std' / 'image_mean': expected finite values and a non-zero std");
  const bool gelu = f.get_bool("clip.use_gelu").value_or(false), silu = f.get_bool("clip.use_silu").value_or(false);
  if (gelu && silu) f.fail("keys 'clip.use_gelu' and 'clip.use_silu' are both true: expected at most one");
  if (!gelu)
    f.fail(std::string("the vision MLP activation is ") + (silu ? "SiLU" : "GELU_QUICK") +
           " (clip.use_gelu false): only the tanh GELU of the Qwen3.5 towers is supported");
  hp.use_gelu = true;
  // pos_side and out_dim come from the tensors (VisionWeights::load), as llama.cpp takes them.
  return hp;
}

std::string VisionHParams::summary() const {
  std::ostringstream s;
  s << "vision: " << n_layer << " blocks, C " << n_embd << ", " << n_head << " heads of " << head_dim << ", MLP " << n_ff
    << ", patch " << patch_size << ", merge " << merge << ", position grid " << pos_side << "x" << pos_side << ", out "
    << out_dim;
  return s.str();
}

}  // namespace tandem::vision
