// mmproj files that must not load (spec vision.md §1, issue 25 "mmproj loading"): a valid tiny
// tower from the generator (vision_generator.h), rewritten with one thing wrong — the projector,
// a key, a tensor missing, a tensor that must stay absent added, a tensor of the wrong shape. Each
// is a GgufError whose message names the file and the key or tensor, so a user can tell which
// file is broken and how. Needs no ../shared data.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/quants.h"
#include "vision/vision_generator.h"
#include "vision/vision_model.h"

namespace tandem::vision {
namespace {

namespace fs = std::filesystem;

// Files of this process only (ctest runs each test as its own process, several at once), removed
// when the process exits.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    std::error_code ec;
    for (const std::string& p : paths) fs::remove(p, ec);
  }
};
std::string temp_path(const std::string& name) {
  static TempFiles files;
  files.paths.push_back(::testing::TempDir() + "/tandem-load-errors-" + std::to_string(::getpid()) + "-" + name + ".gguf");
  return files.paths.back();
}

// The golden tower's shape (C 64, 4 heads, F 128, 2 blocks, G 6, D 256), F32 weights.
const std::string& base_mmproj() {
  static const std::string path = [] {
    MmprojGenOptions g;
    g.type = GgmlType::F32;
    g.seed = 5;
    const std::string p = temp_path("base");
    write_mmproj(p, g);
    return p;
  }();
  return path;
}

// One edit of the base file: keys dropped, keys set (after the copy, so a set replaces), tensors
// dropped, tensors added (after the copied ones).
struct Edit {
  std::function<bool(const std::string&)> drop_key;
  std::function<void(GgufWriter&)> set_keys;
  std::function<bool(const std::string&)> drop_tensor;
  std::function<void(GgufWriter&)> add_tensors;
};

std::string write_edited(const std::string& name, const Edit& e) {
  auto base = GgufFile::open(base_mmproj());
  GgufWriter w;
  for (const auto& [k, v] : base->metadata())
    if (!e.drop_key || !e.drop_key(k)) w.set_value(k, v);
  if (e.set_keys) e.set_keys(w);
  for (const GgufTensorInfo& t : base->tensors()) {
    if (e.drop_tensor && e.drop_tensor(t.name)) continue;
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                 std::vector<uint8_t>(t.data, t.data + t.nbytes));
  }
  if (e.add_tensors) e.add_tensors(w);
  const std::string path = temp_path(name);
  w.write_file(path);
  return path;
}

// An F32 tensor of the given shape, values 0.01.
void add_f32(GgufWriter& w, const std::string& name, std::vector<int64_t> ne) {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  std::vector<float> v(static_cast<size_t>(n), 0.01f);
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  w.add_tensor(name, GgmlType::F32, std::move(ne), std::move(bytes));
}

// A tensor replaced by one of another shape.
Edit reshaped(const std::string& name, std::vector<int64_t> ne) {
  Edit e;
  e.drop_tensor = [name](const std::string& n) { return n == name; };
  e.add_tensors = [name, ne](GgufWriter& w) { add_f32(w, name, ne); };
  return e;
}

// Loads `path` expecting a GgufError; returns its message ("" and a failure if it loaded).
std::string load_error(const std::string& path) {
  try {
    VisionModel::load(path);
  } catch (const GgufError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << ": threw something other than GgufError: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << path << " loaded; expected a GgufError";
  return "";
}

#define EXPECT_LOAD_ERROR(path, ...)                                                            \
  do {                                                                                          \
    const std::string path_ = (path);                                                           \
    const std::string msg_ = load_error(path_);                                                 \
    EXPECT_NE(msg_.find(path_), std::string::npos) << "the message does not name the file: " << msg_; \
    for (const std::string& want_ : std::initializer_list<std::string>{__VA_ARGS__}) {          \
      EXPECT_NE(msg_.find(want_), std::string::npos) << "'" << want_ << "' not in: " << msg_;   \
    }                                                                                           \
  } while (0)

TEST(VisionLoadErrors, TheBaseFileLoads) {
  auto m = VisionModel::load(base_mmproj());
  EXPECT_EQ(m->hparams().n_embd, 64);
  EXPECT_EQ(m->hparams().out_dim, 256);
  // The rewrite itself keeps a loadable file.
  EXPECT_NO_THROW(VisionModel::load(write_edited("identity", Edit{})));
}

TEST(VisionLoadErrors, WrongProjectorType) {
  Edit e;
  e.set_keys = [](GgufWriter& w) { w.set_string("clip.projector_type", "mlp"); };
  EXPECT_LOAD_ERROR(write_edited("projector-mlp", e), "'clip.projector_type'", "'mlp'", "qwen3vl_merger");

  // Qwen2.5-VL's projector is a near miss, still refused.
  e.set_keys = [](GgufWriter& w) { w.set_string("clip.projector_type", "qwen2.5vl_merger"); };
  EXPECT_LOAD_ERROR(write_edited("projector-qwen25", e), "'clip.projector_type'", "qwen2.5vl_merger");

  // No projector key at all (neither clip.projector_type nor clip.vision.projector_type).
  Edit none;
  none.drop_key = [](const std::string& k) { return k == "clip.projector_type"; };
  EXPECT_LOAD_ERROR(write_edited("projector-none", none), "clip.projector_type");

  // The fallback key llama.cpp reads when clip.projector_type is absent: accepted when right,
  // refused when wrong.
  Edit fallback = none;
  fallback.set_keys = [](GgufWriter& w) { w.set_string("clip.vision.projector_type", "qwen3vl_merger"); };
  EXPECT_NO_THROW(VisionModel::load(write_edited("projector-fallback", fallback)));
  fallback.set_keys = [](GgufWriter& w) { w.set_string("clip.vision.projector_type", "ldp"); };
  EXPECT_LOAD_ERROR(write_edited("projector-fallback-ldp", fallback), "projector_type", "'ldp'");

  // A projector key of the wrong GGUF type.
  e.set_keys = [](GgufWriter& w) { w.set_u32("clip.projector_type", 7); };
  EXPECT_LOAD_ERROR(write_edited("projector-u32", e), "clip.projector_type");
}

TEST(VisionLoadErrors, NotAVisionEncoder) {
  Edit e;
  e.set_keys = [](GgufWriter& w) { w.set_bool("clip.has_vision_encoder", false); };
  EXPECT_LOAD_ERROR(write_edited("no-vision", e), "clip.has_vision_encoder");
}

TEST(VisionLoadErrors, MissingRequiredKeys) {
  for (const char* key : {"clip.vision.embedding_length", "clip.vision.attention.head_count",
                          "clip.vision.feed_forward_length", "clip.vision.block_count", "clip.vision.patch_size",
                          "clip.vision.image_size", "clip.vision.attention.layer_norm_epsilon",
                          "clip.vision.image_mean", "clip.vision.image_std"}) {
    SCOPED_TRACE(key);
    Edit e;
    e.drop_key = [key](const std::string& k) { return k == key; };
    std::string name = std::string("no-") + key;
    for (char& c : name)
      if (c == '.') c = '_';
    EXPECT_LOAD_ERROR(write_edited(name, e), key);
  }
}

TEST(VisionLoadErrors, UnsupportedHyperParameters) {
  struct Case { const char* name; std::function<void(GgufWriter&)> set; const char* key; };
  const Case cases[] = {
      {"merge-3", [](GgufWriter& w) { w.set_u32("clip.vision.spatial_merge_size", 3); }, "clip.vision.spatial_merge_size"},
      {"no-gelu", [](GgufWriter& w) { w.set_bool("clip.use_gelu", false); }, "clip.use_gelu"},
      {"gelu-and-silu", [](GgufWriter& w) { w.set_bool("clip.use_silu", true); }, "clip.use_silu"},
      {"zero-heads", [](GgufWriter& w) { w.set_u32("clip.vision.attention.head_count", 0); },
       "clip.vision.attention.head_count"},
      {"heads-not-dividing", [](GgufWriter& w) { w.set_u32("clip.vision.attention.head_count", 3); },
       "clip.vision.embedding_length"},
      {"eps-zero", [](GgufWriter& w) { w.set_f32("clip.vision.attention.layer_norm_epsilon", 0.0f); },
       "clip.vision.attention.layer_norm_epsilon"},
      {"std-zero", [](GgufWriter& w) { w.set_array_f32("clip.vision.image_std", {0.5f, 0.0f, 0.5f}); },
       "clip.vision.image_std"},
      {"mean-two", [](GgufWriter& w) { w.set_array_f32("clip.vision.image_mean", {0.5f, 0.5f}); },
       "clip.vision.image_mean"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Edit e;
    e.set_keys = c.set;
    EXPECT_LOAD_ERROR(write_edited(c.name, e), c.key);
  }
}

TEST(VisionLoadErrors, MissingTensor) {
  // Every tensor the graph needs (spec §1.3): the two patch kernels, the patch bias, the position
  // table, each block's fused QKV (+ bias), output projection, MLP up and down, the merger.
  for (const char* name : {"v.patch_embd.weight", "v.patch_embd.weight.1", "v.patch_embd.bias",
                           "v.position_embd.weight", "v.blk.0.attn_qkv.weight", "v.blk.1.attn_qkv.bias",
                           "v.blk.1.attn_out.weight", "v.blk.0.ffn_up.weight", "v.blk.1.ffn_down.weight",
                           "mm.0.weight", "mm.0.bias", "mm.2.weight", "mm.2.bias"}) {
    SCOPED_TRACE(name);
    Edit e;
    e.drop_tensor = [name](const std::string& n) { return n == name; };
    EXPECT_LOAD_ERROR(write_edited(std::string("missing-") + name, e), "missing", std::string("'") + name + "'");
  }
}

// The optional tensors llama.cpp applies only when present (LayerNorm weights and biases, the
// output-projection and MLP biases) may be absent.
TEST(VisionLoadErrors, OptionalTensorsMayBeAbsent) {
  Edit e;
  e.drop_tensor = [](const std::string& n) {
    return n == "v.blk.0.ln1.weight" || n == "v.blk.1.ln2.bias" || n == "v.post_ln.weight" || n == "v.blk.0.ffn_up.bias";
  };
  auto m = VisionModel::load(write_edited("optional-absent", e));
  EXPECT_TRUE(m->weights().layers[0].ln1_w.empty());
  EXPECT_TRUE(m->weights().layers[1].ln2_b.empty());
  EXPECT_TRUE(m->weights().post_ln_w.empty());
  EXPECT_TRUE(m->weights().layers[0].up_b.empty());
  EXPECT_FALSE(m->weights().layers[0].ln1_b.empty());
}

// Tensors that must stay absent in a Qwen3.5 tower: deepstack layers (Qwen3-VL; each would widen
// the output), a class embedding, a pre-encoder LayerNorm.
TEST(VisionLoadErrors, AddedTensorThatMustBeAbsent) {
  const int64_t C = 64, C4 = 4 * C, D = 256;
  struct Case { const char* name; std::vector<int64_t> ne; const char* why; };
  const Case cases[] = {
      {"v.deepstack.0.fc1.weight", {C4, C4}, "deepstack"},
      {"v.deepstack.1.fc1.weight", {C4, C4}, "deepstack"},
      {"v.class_embd", {C}, "class embedding"},
      {"v.pre_ln.weight", {C}, "LayerNorm"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Edit e;
    e.add_tensors = [&c](GgufWriter& w) { add_f32(w, c.name, c.ne); };
    EXPECT_LOAD_ERROR(write_edited(std::string("added-") + c.name, e), std::string("'") + c.name + "'", c.why);
  }
  // A whole deepstack layer (norm, fc1, fc2), as a Qwen3-VL converter writes it.
  Edit e;
  e.add_tensors = [&](GgufWriter& w) {
    add_f32(w, "v.deepstack.0.norm.weight", {C4});
    add_f32(w, "v.deepstack.0.norm.bias", {C4});
    add_f32(w, "v.deepstack.0.fc1.weight", {C4, C4});
    add_f32(w, "v.deepstack.0.fc1.bias", {C4});
    add_f32(w, "v.deepstack.0.fc2.weight", {C4, D});
    add_f32(w, "v.deepstack.0.fc2.bias", {D});
  };
  EXPECT_LOAD_ERROR(write_edited("added-deepstack-layer", e), "v.deepstack.0.", "deepstack");
}

TEST(VisionLoadErrors, WrongTensorShape) {
  const int64_t C = 64, F = 128, P = 16, C4 = 4 * C, D = 256;
  struct Case { const char* name; std::vector<int64_t> ne; const char* want; };
  const Case cases[] = {
      // A matrix: "has shape [..]: expected [..]".
      {"v.blk.0.ffn_up.weight", {C, F + 32}, "[64, 128]"},
      {"v.blk.1.attn_qkv.weight", {C, 2 * C}, "[64, 192]"},
      {"v.blk.0.ffn_down.weight", {F, C, 1}, "[128, 64]"},  // an extra dimension
      {"v.patch_embd.weight.1", {P, P, 3, C + 1}, "[16, 16, 3, 64]"},
      {"v.patch_embd.weight", {P, P, C}, "[16, 16, 3, 64]"},
      {"mm.0.weight", {C4, C4 / 2}, "[256, 256]"},
      {"mm.2.weight", {C4, D + 8}, "[256, 256]"},  // disagrees with mm.2.bias
      // 1-D tensors.
      {"v.patch_embd.bias", {C + 1}, "[64]"},
      {"v.blk.0.attn_qkv.bias", {C}, "[192]"},
      {"v.blk.1.ln2.weight", {C - 1}, "[64]"},  // optional, but a wrong shape when present
      {"mm.0.bias", {C}, "[256]"},
      {"mm.2.bias", {D, 2}, "1-D"},
      // The position table: width C, a square number of rows.
      {"v.position_embd.weight", {C + 1, 36}, "[64, G*G]"},
      {"v.position_embd.weight", {C, 35}, "square"},
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_LOAD_ERROR(write_edited("shape-" + std::to_string(i++), reshaped(c.name, c.ne)),
                      std::string("'") + c.name + "'", c.want);
  }
}

// llama.cpp multiplies a matrix of any ggml type (spec §1.3: "dequantize by tensor type, never
// assume"). A matrix in one of the other types this reader knows (the legacy Q4_1 / Q5_0 / Q5_1,
// and Q8_1 / Q8_K) must either encode sensibly — close to the F32 tower, the matrix only
// re-quantized — or be refused at load with a GgufError naming the tensor; never crash or give
// garbage.
TEST(VisionLoadErrors, OtherMatrixTypesEncodeOrAreRefused) {
  auto base = VisionModel::load(base_mmproj());
  const int W = 64, H = 64;
  std::vector<float> pix(static_cast<size_t>(W) * H * 3);
  uint32_t seed = 11;
  for (float& v : pix) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
  }
  std::vector<float> want;
  base->encode(pix.data(), W, H, want);
  for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_1, GgmlType::Q8_K}) {
    // A matrix whose width is a whole number of blocks: ffn_up [64, 128], or mm.0 [256, 256].
    const std::string name = traits(type).block_elems <= 64 ? "v.blk.0.ffn_up.weight" : "mm.0.weight";
    SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + name);
    auto f = GgufFile::open(base_mmproj());
    const GgufTensorInfo* t = f->find_tensor(name);
    ASSERT_NE(t, nullptr);
    std::vector<float> vals(static_cast<size_t>(t->n_elements()));
    dequantize_row(t->type, t->data, vals.data(), t->n_elements());
    std::vector<uint8_t> q(row_bytes(type, t->ne[0]) * static_cast<size_t>(t->n_rows()));
    for (int64_t r = 0; r < t->n_rows(); ++r)
      quantize_row(type, vals.data() + r * t->ne[0], q.data() + static_cast<size_t>(r) * row_bytes(type, t->ne[0]), t->ne[0]);
    const std::vector<int64_t> ne(t->ne, t->ne + t->n_dims);
    Edit e;
    e.drop_tensor = [name](const std::string& n) { return n == name; };
    e.add_tensors = [&](GgufWriter& w) { w.add_tensor(name, type, ne, q); };
    const std::string path = write_edited(std::string("type-") + ggml_type_name(type), e);
    std::unique_ptr<VisionModel> m;
    try {
      m = VisionModel::load(path);
    } catch (const GgufError& err) {
      const std::string msg = err.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find(name), std::string::npos) << msg;
      std::printf("  %s %s: refused at load: %s\n", ggml_type_name(type), name.c_str(), msg.c_str());
      continue;
    }
    std::vector<float> got;
    try {
      m->encode(pix.data(), W, H, got);
    } catch (const std::exception& err) {
      ADD_FAILURE() << "loaded, then encode threw: " << err.what() << " (refuse the type at load instead)";
      continue;
    }
    ASSERT_EQ(got.size(), want.size());
    float d = 0, amax = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << "row value " << i;
      d = std::max(d, std::fabs(got[i] - want[i]));
      amax = std::max(amax, std::fabs(want[i]));
    }
    std::printf("  %s %s: encodes, max|d| vs F32 %.3g (max|ref| %.3g)\n", ggml_type_name(type), name.c_str(), d, amax);
    EXPECT_LE(d, 0.1f * amax);
  }
}

// A tower whose output width D differs from the text model's n_embd is refused when the two meet
// (llama.cpp refuses it in mtmd_init_from_file), naming both files.
TEST(VisionLoadErrors, OutputWidthDiffersFromTheTextModel) {
  auto m = VisionModel::load(base_mmproj());
  try {
    m->check_text_model(1024, "/models/text-1024.gguf");
    FAIL() << "a width mismatch must be refused";
  } catch (const GgufError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(base_mmproj()), std::string::npos) << msg;
    EXPECT_NE(msg.find("/models/text-1024.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("256"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1024"), std::string::npos) << msg;
  }
}

TEST(VisionLoadErrors, NotAGgufFile) {
  const std::string path = temp_path("not-gguf");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("PNG? no.", f);
    std::fclose(f);
  }
  EXPECT_LOAD_ERROR(path, "");
  EXPECT_LOAD_ERROR(temp_path("does-not-exist"), "");
}

}  // namespace
}  // namespace tandem::vision
