#include "vision/vision_weights.h"

#include <cmath>
#include <string>

#include "gguf/ggml_type.h"
#include "model/tensor_binder.h"

namespace tandem::vision {
namespace {

std::string blk(int i, const char* name) { return "v.blk." + std::to_string(i) + "." + name; }

// A 1-D tensor of n floats when present (llama.cpp applies a norm weight or bias only if the
// file has it), else empty.
std::vector<float> optional_floats(const TensorBinder& b, const std::string& name, int64_t n) {
  const GgufTensorInfo* t = b.find(name, {n});
  return t ? TensorBinder::to_floats(*t) : std::vector<float>{};
}

void refuse_present(const GgufFile& f, const std::string& name, const char* why) {
  if (f.find_tensor(name)) f.fail("tensor '" + name + "' is present: " + why);
}

// A matrix bound by shape, in a type the kernels multiply. Q8_1 and Q8_K are activation types
// (ggml has no dot product with them as weights either): refused here, by name, rather than
// failing inside a pool task at the first encode.
WeightMatrix matrix(const GgufFile& f, const TensorBinder& b, const std::string& name, int64_t cols, int64_t rows) {
  const WeightMatrix m = b.matrix(name, cols, rows);
  if (m.type == GgmlType::Q8_1 || m.type == GgmlType::Q8_K)
    f.fail("tensor '" + name + "' has type " + ggml_type_name(m.type) +
           ": not a weight type (expected F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K or Q6_K)");
  return m;
}

}  // namespace

VisionWeights VisionWeights::load(const GgufFile& f, VisionHParams& hp) {
  const TensorBinder b(f);
  VisionWeights w;
  const int64_t C = hp.n_embd, P = hp.patch_size, F = hp.n_ff;

  refuse_present(f, "v.class_embd", "a class embedding is not part of the qwen3vl_merger encoder");
  refuse_present(f, "v.pre_ln.weight", "a pre-encoder LayerNorm is not part of the Qwen3.5 towers (not supported)");
  for (int i = 0; i < hp.n_layer; ++i)
    refuse_present(f, "v.deepstack." + std::to_string(i) + ".fc1.weight",
                   "deepstack layers (Qwen3-VL) are not supported; Qwen3.5 towers have none");

  for (int k = 0; k < 2; ++k) {
    const std::string name = k == 0 ? "v.patch_embd.weight" : "v.patch_embd.weight.1";
    const GgufTensorInfo& t = b.get(name, {P, P, 3, C});
    WeightMatrix m;
    m.cols = 3 * P * P;
    m.rows = C;
    if (t.type == GgmlType::BF16 || t.type == GgmlType::F16) {
      m.type = t.type;
      m.data = t.data;
      m.row_stride = row_bytes(t.type, m.cols);
    } else {
      // F32 (the converter's choice for every non-F16 file) or anything else: to F16, as
      // ggml-cpu converts the kernel to the F16 im2col's dot type.
      std::vector<float> tmp(static_cast<size_t>(t.n_elements()));
      dequantize_row(t.type, t.data, tmp.data(), t.n_elements());
      w.patch_f16[k].resize(tmp.size());
      for (size_t i = 0; i < tmp.size(); ++i) w.patch_f16[k][i] = fp32_to_fp16(tmp[i]);
      m.type = GgmlType::F16;
      m.data = reinterpret_cast<const uint8_t*>(w.patch_f16[k].data());
      m.row_stride = row_bytes(GgmlType::F16, m.cols);
    }
    w.patch[k] = m;
  }
  w.patch_bias = b.floats("v.patch_embd.bias", {C});

  const GgufTensorInfo* pos = f.find_tensor("v.position_embd.weight");
  if (!pos) f.fail("missing required tensor 'v.position_embd.weight'");
  if (pos->n_dims != 2 || pos->ne[0] != C)
    f.fail("tensor 'v.position_embd.weight': expected shape [" + std::to_string(C) + ", G*G]");
  const int64_t g = static_cast<int64_t>(std::sqrt(static_cast<double>(pos->ne[1])));
  if (g < 1 || g * g != pos->ne[1])
    f.fail("tensor 'v.position_embd.weight' has " + std::to_string(pos->ne[1]) +
           " positions: expected a square number (a G x G grid)");
  hp.pos_side = static_cast<int>(g);
  w.pos_embd = TensorBinder::to_floats(*pos);

  w.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int i = 0; i < hp.n_layer; ++i) {
    VisionLayerWeights& L = w.layers[static_cast<size_t>(i)];
    L.ln1_w = optional_floats(b, blk(i, "ln1.weight"), C);
    L.ln1_b = optional_floats(b, blk(i, "ln1.bias"), C);
    L.ln2_w = optional_floats(b, blk(i, "ln2.weight"), C);
    L.ln2_b = optional_floats(b, blk(i, "ln2.bias"), C);
    L.qkv = matrix(f, b, blk(i, "attn_qkv.weight"), C, 3 * C);
    L.qkv_b = b.floats(blk(i, "attn_qkv.bias"), {3 * C});  // the graph adds it unconditionally
    L.out = matrix(f, b, blk(i, "attn_out.weight"), C, C);
    L.out_b = optional_floats(b, blk(i, "attn_out.bias"), C);
    L.up = matrix(f, b, blk(i, "ffn_up.weight"), C, F);
    L.up_b = optional_floats(b, blk(i, "ffn_up.bias"), F);
    L.down = matrix(f, b, blk(i, "ffn_down.weight"), F, C);
    L.down_b = optional_floats(b, blk(i, "ffn_down.bias"), C);
  }
  w.post_ln_w = optional_floats(b, "v.post_ln.weight", C);
  w.post_ln_b = optional_floats(b, "v.post_ln.bias", C);

  const int64_t C4 = hp.merged_dim();
  w.mm0 = matrix(f, b, "mm.0.weight", C4, C4);
  w.mm0_b = b.floats("mm.0.bias", {C4});
  const GgufTensorInfo* b2 = f.find_tensor("mm.2.bias");
  if (!b2) f.fail("missing required tensor 'mm.2.bias'");
  if (b2->n_dims != 1 || b2->ne[0] <= 0) f.fail("tensor 'mm.2.bias': expected a 1-D tensor [D]");
  hp.out_dim = b2->ne[0];  // the output width, as llama.cpp takes it (spec §1.4)
  w.mm2 = matrix(f, b, "mm.2.weight", C4, hp.out_dim);
  w.mm2_b = TensorBinder::to_floats(*b2);
  return w;
}

size_t VisionWeights::owned_bytes() const {
  size_t n = (patch_f16[0].capacity() + patch_f16[1].capacity()) * 2;
  auto add = [&](const std::vector<float>& v) { n += v.capacity() * sizeof(float); };
  add(patch_bias);
  add(pos_embd);
  add(post_ln_w);
  add(post_ln_b);
  add(mm0_b);
  add(mm2_b);
  for (const auto& L : layers)
    for (const auto* v : {&L.ln1_w, &L.ln1_b, &L.ln2_w, &L.ln2_b, &L.qkv_b, &L.out_b, &L.up_b, &L.down_b}) add(*v);
  return n;
}

}  // namespace tandem::vision
