// The random mmproj generator (vision_generator.h, `tandem-gen-model --mmproj --preset NAME`):
// its presets are the Qwen3.5 towers of spec vision.md §8, and the tensors it writes have the
// derived shapes of that section (§1.3), checked without writing the real (hundreds of MB) files:
// the presets' shape descriptions are compared with the spec table, and the tensor plan is checked
// on in-memory files — the tiny tower, and each real preset cut to one block (every width real).
#include "vision/vision_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "vision/vision_hparams.h"
#include "vision/vision_weights.h"

namespace tandem::vision {
namespace {

// Spec vision.md §8 (all sizes: patch 16, 48x48 position table, LayerNorm eps 1e-6).
struct SpecTower {
  const char* preset;
  int64_t depth, hidden, heads, head_dim, mlp, out;
};
const SpecTower kSpec[] = {
    {"0.8b", 12, 768, 12, 64, 3072, 1024},
    {"2b", 24, 1024, 16, 64, 4096, 2048},
    {"4b", 24, 1024, 16, 64, 4096, 2560},
    {"9b", 27, 1152, 16, 72, 4304, 4096},
};

TEST(VisionGenerator, PresetsAreTheSpecTowers) {
  for (const SpecTower& t : kSpec) {
    SCOPED_TRACE(t.preset);
    const VisionTowerShape s = VisionTowerShape::preset_shape(t.preset);
    EXPECT_EQ(s.preset, t.preset);
    EXPECT_EQ(s.n_layer, t.depth);
    EXPECT_EQ(s.n_embd, t.hidden);
    EXPECT_EQ(s.n_head, t.heads);
    EXPECT_EQ(s.n_embd / s.n_head, t.head_dim);
    EXPECT_EQ(s.n_embd % s.n_head, 0);
    EXPECT_EQ(s.n_ff, t.mlp);
    EXPECT_EQ(s.out_dim, t.out);
    EXPECT_EQ(s.pos_side, 48);  // num_position_embeddings 2304
    EXPECT_EQ(s.patch_size, 16);
    EXPECT_FLOAT_EQ(s.eps, 1e-6f);
    // 2-D RoPE: d/4 per axis (16, 18 for 9B).
    EXPECT_EQ((s.n_embd / s.n_head) % 4, 0);
    EXPECT_EQ((s.n_embd / s.n_head) / 4, t.head_dim / 4);
    EXPECT_NO_THROW(s.validate());
  }
  const std::vector<std::string> names = VisionTowerShape::preset_names();
  for (const char* n : {"tiny", "0.8b", "2b", "4b", "9b"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const std::string& n : names) EXPECT_NO_THROW(VisionTowerShape::preset_shape(n)) << n;
  EXPECT_THROW(VisionTowerShape::preset_shape("27b"), std::invalid_argument);
}

TEST(VisionGenerator, BadShapesAreRefused) {
  VisionTowerShape s = VisionTowerShape::preset_shape("tiny");
  s.n_head = 3;  // 64 / 3
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s = VisionTowerShape::preset_shape("tiny");
  s.n_head = 8;  // head dim 8: fine; 64 / 32 = 2 is not a multiple of 4
  EXPECT_NO_THROW(s.validate());
  s.n_head = 32;
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s = VisionTowerShape::preset_shape("tiny");
  s.out_dim = 0;
  EXPECT_THROW(s.validate(), std::invalid_argument);
  MmprojGenOptions g;
  g.type = GgmlType::Q8_K;  // not a type the converter or this generator writes
  EXPECT_THROW(build_mmproj_gguf(g), std::invalid_argument);
}

// Every tensor the generator writes for shape s, with spec §8's derived shapes (ggml ne).
std::map<std::string, std::vector<int64_t>> spec_tensors(const VisionTowerShape& s) {
  const int64_t C = s.n_embd, F = s.n_ff, P = s.patch_size, D = s.out_dim, G2 = s.pos_side * s.pos_side;
  std::map<std::string, std::vector<int64_t>> t = {
      {"v.patch_embd.weight", {P, P, 3, C}},
      {"v.patch_embd.weight.1", {P, P, 3, C}},
      {"v.patch_embd.bias", {C}},
      {"v.position_embd.weight", {C, G2}},
      {"v.post_ln.weight", {C}},
      {"v.post_ln.bias", {C}},
      {"mm.0.weight", {4 * C, 4 * C}},
      {"mm.0.bias", {4 * C}},
      {"mm.2.weight", {4 * C, D}},
      {"mm.2.bias", {D}},
  };
  for (int64_t i = 0; i < s.n_layer; ++i) {
    const std::string b = "v.blk." + std::to_string(i) + ".";
    t[b + "ln1.weight"] = {C};
    t[b + "ln1.bias"] = {C};
    t[b + "attn_qkv.weight"] = {C, 3 * C};
    t[b + "attn_qkv.bias"] = {3 * C};
    t[b + "attn_out.weight"] = {C, C};
    t[b + "attn_out.bias"] = {C};
    t[b + "ln2.weight"] = {C};
    t[b + "ln2.bias"] = {C};
    t[b + "ffn_up.weight"] = {C, F};
    t[b + "ffn_up.bias"] = {F};
    t[b + "ffn_down.weight"] = {F, C};
    t[b + "ffn_down.bias"] = {C};
  }
  return t;
}

// Builds the file in memory, checks its keys and every tensor's shape against the spec, and reads
// it back through the loader's own hyper-parameter and tensor checks.
void check_generated(const VisionTowerShape& s, GgmlType type) {
  MmprojGenOptions g;
  g.shape = s;
  g.type = type;
  const std::vector<uint8_t> bytes = build_mmproj_gguf(g).to_bytes();
  auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "generated-" + s.preset + ".gguf");
  EXPECT_EQ(f->get_string("clip.projector_type"), "qwen3vl_merger");
  EXPECT_EQ(f->get_uint("clip.vision.embedding_length"), static_cast<uint64_t>(s.n_embd));
  EXPECT_EQ(f->get_uint("clip.vision.attention.head_count"), static_cast<uint64_t>(s.n_head));
  EXPECT_EQ(f->get_uint("clip.vision.feed_forward_length"), static_cast<uint64_t>(s.n_ff));
  EXPECT_EQ(f->get_uint("clip.vision.block_count"), static_cast<uint64_t>(s.n_layer));
  EXPECT_EQ(f->get_uint("clip.vision.projection_dim"), static_cast<uint64_t>(s.out_dim));
  EXPECT_EQ(f->get_uint("clip.vision.patch_size"), static_cast<uint64_t>(s.patch_size));
  EXPECT_EQ(f->get_uint("clip.vision.image_size"), static_cast<uint64_t>(s.pos_side * s.patch_size));
  EXPECT_EQ(f->get_uint("clip.vision.spatial_merge_size"), 2u);
  EXPECT_EQ(f->get_bool("clip.use_gelu"), true);

  const auto want = spec_tensors(s);
  EXPECT_EQ(f->tensors().size(), want.size());
  for (const GgufTensorInfo& t : f->tensors()) {
    const auto w = want.find(t.name);
    if (w == want.end()) {
      ADD_FAILURE() << "unexpected tensor " << t.name;
      continue;
    }
    EXPECT_EQ(std::vector<int64_t>(t.ne, t.ne + t.n_dims), w->second) << t.name;
    // The converter's dtype rules (spec §1.3): 1-D tensors and the position table F32; the patch
    // kernels F16 only in an F16 file.
    if (t.n_dims == 1 || t.name == "v.position_embd.weight") {
      EXPECT_EQ(t.type, GgmlType::F32) << t.name;
    }
    if (t.name.rfind("v.patch_embd.weight", 0) == 0) {
      EXPECT_EQ(t.type, type == GgmlType::F16 ? GgmlType::F16 : GgmlType::F32) << t.name;
    }
  }

  VisionHParams hp = VisionHParams::from_gguf(*f);
  const VisionWeights w = VisionWeights::load(*f, hp);  // every shape against the hyper-parameters
  EXPECT_EQ(hp.n_embd, s.n_embd);
  EXPECT_EQ(hp.n_head, s.n_head);
  EXPECT_EQ(hp.head_dim, s.n_embd / s.n_head);
  EXPECT_EQ(hp.n_ff, s.n_ff);
  EXPECT_EQ(hp.n_layer, s.n_layer);
  EXPECT_EQ(hp.pos_side, s.pos_side);
  EXPECT_EQ(hp.out_dim, s.out_dim);
  EXPECT_EQ(static_cast<int64_t>(w.layers.size()), s.n_layer);
}

TEST(VisionGenerator, TinyTowerHasTheSpecTensorShapes) {
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
    SCOPED_TRACE(ggml_type_name(type));
    check_generated(VisionTowerShape::preset_shape("tiny"), type);
  }
}

// The real presets at every real width (C, F, D, the 48x48 table) but one block, in Q4_0 (small
// to build: ~25-60 MB each in memory).
TEST(VisionGenerator, RealPresetsHaveTheSpecTensorShapes) {
  for (const SpecTower& t : kSpec) {
    SCOPED_TRACE(t.preset);
    VisionTowerShape s = VisionTowerShape::preset_shape(t.preset);
    s.n_layer = 1;
    check_generated(s, GgmlType::Q4_0);
  }
}

}  // namespace
}  // namespace tandem::vision
