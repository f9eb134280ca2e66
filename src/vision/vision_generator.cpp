#include "vision/vision_generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "gguf/quants.h"
#include "model/seeded_random.h"

namespace tandem::vision {
namespace {

using namespace seeded_random;

enum class Init { Matrix, Bias, NormWeight, NormBias, PosTable };

struct TensorPlan {
  std::string name;
  std::vector<int64_t> ne;
  GgmlType type;
  Init init;
};

int64_t elements(const std::vector<int64_t>& ne) {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

void fill(const TensorPlan& t, uint64_t ts, int64_t first, int64_t n, float* dst) {
  switch (t.init) {
    case Init::Matrix: {
      // fan_in: the contiguous width, or P*P*3 for a patch kernel.
      const int64_t fan_in = t.ne.size() == 4 ? t.ne[0] * t.ne[1] * t.ne[2] : t.ne[0];
      fill_normals(ts, first, n, 1.0 / std::sqrt(static_cast<double>(fan_in)), 0.0, dst);
      break;
    }
    case Init::Bias: fill_normals(ts, first, n, 0.1, 0.0, dst); break;
    case Init::NormWeight: fill_normals(ts, first, n, 0.2, 1.0, dst); break;
    case Init::NormBias: fill_normals(ts, first, n, 0.1, 0.0, dst); break;
    case Init::PosTable: fill_normals(ts, first, n, 0.5, 0.0, dst); break;
  }
}

std::vector<uint8_t> encode(const TensorPlan& t, uint64_t seed, int n_threads) {
  const int64_t nx = t.ne[0], rows = elements(t.ne) / nx;
  const size_t rb = row_bytes(t.type, nx);
  std::vector<uint8_t> out(rb * static_cast<size_t>(rows));
  const uint64_t ts = tensor_seed(seed, t.name);
  auto work = [&](int64_t r0, int64_t r1) {
    std::vector<float> buf(static_cast<size_t>(nx));
    for (int64_t r = r0; r < r1; ++r) {
      fill(t, ts, r * nx, nx, buf.data());
      uint8_t* dst = out.data() + static_cast<size_t>(r) * rb;
      if (t.type == GgmlType::F32) {
        std::memcpy(dst, buf.data(), static_cast<size_t>(nx) * sizeof(float));
      } else if (t.type == GgmlType::F16 || t.type == GgmlType::BF16) {
        for (int64_t k = 0; k < nx; ++k) {
          const uint16_t h = t.type == GgmlType::F16 ? fp32_to_fp16(buf[static_cast<size_t>(k)]) : fp32_to_bf16(buf[static_cast<size_t>(k)]);
          std::memcpy(dst + 2 * k, &h, 2);
        }
      } else {
        quantize_row(t.type, buf.data(), dst, nx);
      }
    }
  };
  const int nt = std::max(1, std::min<int>(n_threads, static_cast<int>(rows)));
  std::vector<std::thread> threads;
  for (int i = 1; i < nt; ++i) threads.emplace_back(work, rows * i / nt, rows * (i + 1) / nt);
  work(0, rows / nt);
  for (auto& th : threads) th.join();
  return out;
}

// A type whose block does not divide the width falls back to Q8_0 (32 divides every real
// tower's widths), then to F16 (small test towers).
GgmlType matrix_type(GgmlType want, int64_t cols) {
  for (GgmlType t : {want, GgmlType::Q8_0, GgmlType::F16})
    if (cols % traits(t).block_elems == 0) return t;
  return GgmlType::F32;
}

}  // namespace

void VisionTowerShape::validate() const {
  auto pos = [](int64_t v, const char* name) {
    if (v <= 0) throw std::invalid_argument(std::string("vision tower: ") + name + " must be positive");
  };
  pos(n_embd, "n_embd");
  pos(n_head, "n_head");
  pos(n_ff, "n_ff");
  pos(n_layer, "n_layer");
  pos(out_dim, "out_dim");
  pos(pos_side, "pos_side");
  pos(patch_size, "patch_size");
  if (n_embd % n_head != 0 || (n_embd / n_head) % 4 != 0)
    throw std::invalid_argument("vision tower: n_embd / n_head must be a whole multiple of 4 (2-D RoPE)");
}

VisionTowerShape VisionTowerShape::preset_shape(std::string_view name) {
  VisionTowerShape s;
  s.preset = std::string(name);
  if (name == "tiny") {
    s.n_embd = 64, s.n_head = 4, s.n_ff = 128, s.n_layer = 2, s.out_dim = 256, s.pos_side = 6;
  } else if (name == "0.8b") {
    s.n_embd = 768, s.n_head = 12, s.n_ff = 3072, s.n_layer = 12, s.out_dim = 1024;
  } else if (name == "2b") {
    s.n_embd = 1024, s.n_head = 16, s.n_ff = 4096, s.n_layer = 24, s.out_dim = 2048;
  } else if (name == "4b") {
    s.n_embd = 1024, s.n_head = 16, s.n_ff = 4096, s.n_layer = 24, s.out_dim = 2560;
  } else if (name == "9b") {
    s.n_embd = 1152, s.n_head = 16, s.n_ff = 4304, s.n_layer = 27, s.out_dim = 4096;
  } else {
    throw std::invalid_argument("unknown vision tower preset '" + std::string(name) + "': expected tiny, 0.8b, 2b, 4b or 9b");
  }
  return s;
}

std::vector<std::string> VisionTowerShape::preset_names() { return {"tiny", "0.8b", "2b", "4b", "9b"}; }

GgufWriter build_mmproj_gguf(const MmprojGenOptions& opt) {
  const VisionTowerShape& s = opt.shape;
  s.validate();
  switch (opt.type) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0: case GgmlType::Q4_0:
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K: break;
    default: throw std::invalid_argument(std::string("mmproj type ") + ggml_type_name(opt.type) + " is not supported: expected F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K");
  }
  GgufWriter w;
  w.set_string("general.architecture", "clip");
  w.set_string("general.type", "mmproj");
  w.set_string("general.name", "tandem-random-vision-" + s.preset);
  w.set_bool("clip.has_vision_encoder", true);
  w.set_string("clip.projector_type", "qwen3vl_merger");
  w.set_u32("clip.vision.embedding_length", static_cast<uint32_t>(s.n_embd));
  w.set_u32("clip.vision.attention.head_count", static_cast<uint32_t>(s.n_head));
  w.set_u32("clip.vision.feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.set_u32("clip.vision.block_count", static_cast<uint32_t>(s.n_layer));
  w.set_u32("clip.vision.projection_dim", static_cast<uint32_t>(s.out_dim));
  w.set_f32("clip.vision.attention.layer_norm_epsilon", s.eps);
  w.set_u32("clip.vision.image_size", static_cast<uint32_t>(s.pos_side * s.patch_size));
  w.set_u32("clip.vision.patch_size", static_cast<uint32_t>(s.patch_size));
  w.set_array_f32("clip.vision.image_mean", {0.5f, 0.5f, 0.5f});
  w.set_array_f32("clip.vision.image_std", {0.5f, 0.5f, 0.5f});
  w.set_bool("clip.use_gelu", true);
  w.set_u32("clip.vision.spatial_merge_size", 2);

  const int64_t C = s.n_embd, F = s.n_ff, P = s.patch_size, C4 = 4 * C, D = s.out_dim;
  const GgmlType patch_type = opt.type == GgmlType::F16 ? GgmlType::F16 : GgmlType::F32;
  std::vector<TensorPlan> plan;
  plan.push_back({"v.patch_embd.weight", {P, P, 3, C}, patch_type, Init::Matrix});
  plan.push_back({"v.patch_embd.weight.1", {P, P, 3, C}, patch_type, Init::Matrix});
  plan.push_back({"v.patch_embd.bias", {C}, GgmlType::F32, Init::Bias});
  plan.push_back({"v.position_embd.weight", {C, s.pos_side * s.pos_side}, GgmlType::F32, Init::PosTable});
  auto mat = [&](const std::string& n, int64_t cols, int64_t rows) {
    plan.push_back({n, {cols, rows}, matrix_type(opt.type, cols), Init::Matrix});
  };
  for (int64_t i = 0; i < s.n_layer; ++i) {
    const std::string b = "v.blk." + std::to_string(i) + ".";
    plan.push_back({b + "ln1.weight", {C}, GgmlType::F32, Init::NormWeight});
    plan.push_back({b + "ln1.bias", {C}, GgmlType::F32, Init::NormBias});
    mat(b + "attn_qkv.weight", C, 3 * C);
    plan.push_back({b + "attn_qkv.bias", {3 * C}, GgmlType::F32, Init::Bias});
    mat(b + "attn_out.weight", C, C);
    plan.push_back({b + "attn_out.bias", {C}, GgmlType::F32, Init::Bias});
    plan.push_back({b + "ln2.weight", {C}, GgmlType::F32, Init::NormWeight});
    plan.push_back({b + "ln2.bias", {C}, GgmlType::F32, Init::NormBias});
    mat(b + "ffn_up.weight", C, F);
    plan.push_back({b + "ffn_up.bias", {F}, GgmlType::F32, Init::Bias});
    mat(b + "ffn_down.weight", F, C);
    plan.push_back({b + "ffn_down.bias", {C}, GgmlType::F32, Init::Bias});
  }
  plan.push_back({"v.post_ln.weight", {C}, GgmlType::F32, Init::NormWeight});
  plan.push_back({"v.post_ln.bias", {C}, GgmlType::F32, Init::NormBias});
  mat("mm.0.weight", C4, C4);
  plan.push_back({"mm.0.bias", {C4}, GgmlType::F32, Init::Bias});
  mat("mm.2.weight", C4, D);
  plan.push_back({"mm.2.bias", {D}, GgmlType::F32, Init::Bias});
  for (const TensorPlan& t : plan) w.add_tensor(t.name, t.type, t.ne, encode(t, opt.seed, opt.n_threads));
  return w;
}

size_t write_mmproj(const std::string& path, const MmprojGenOptions& opt) {
  build_mmproj_gguf(opt).write_file(path);
  return static_cast<size_t>(std::filesystem::file_size(path));
}

}  // namespace tandem::vision
