#include "model/qwen35/qwen35_generator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "gguf/gguf_file.h"
#include "gguf/quants.h"
#include "model/test_models.h"
#include "model/test_paths.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

std::string test_dir() {
  const std::string d = std::string(TANDEM_BINARY_DIR) + "/test-models";
  fs::create_directories(d);
  return d;
}

GenOptions tiny_opts(const std::string& ftype, uint64_t seed = 42) {
  GenOptions o;
  o.shape = Qwen35Shape::preset_shape("tiny");
  o.ftype = ftype;
  o.seed = seed;
  return o;
}

std::vector<float> read_f32(const GgufTensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  if (t.type == GgmlType::F32) {
    std::memcpy(v.data(), t.data, v.size() * sizeof(float));
  } else {
    dequantize_row(t.type, t.data, v.data(), t.n_elements());
  }
  return v;
}

void mean_std(const std::vector<float>& v, double* mean, double* sd) {
  double s = 0, s2 = 0;
  for (float x : v) s += x;
  *mean = s / v.size();
  for (float x : v) s2 += (x - *mean) * (x - *mean);
  *sd = std::sqrt(s2 / v.size());
}

bool has(const std::string& s, const char* w) { return s.find(w) != std::string::npos; }

// The types expected for the tiny preset (n_embd 256, ffn_down rows 384, ssm_out rows 128),
// written out independently of qwen35_tensor_type.
GgmlType expected_tiny_type(const std::string& ft, const std::string& name, int n_dims) {
  if (n_dims == 1 || has(name, "ssm_conv1d")) return GgmlType::F32;
  const bool short_row = has(name, "ffn_down") || has(name, "ssm_out");  // 384 / 128 columns
  if (ft == "F32") return GgmlType::F32;
  if (ft == "F16") return GgmlType::F16;
  if (ft == "BF16") return GgmlType::BF16;
  if (ft == "Q8_0") return GgmlType::Q8_0;
  if (name == "token_embd.weight") return GgmlType::Q6_K;  // tied → output rules
  if (ft == "Q4_0") return GgmlType::Q4_0;
  if (ft == "Q4_1") return GgmlType::Q4_1;
  if (ft == "Q5_0") return GgmlType::Q5_0;
  if (ft == "Q5_1") return GgmlType::Q5_1;
  if (ft == "Q6_K") return short_row ? GgmlType::Q8_0 : GgmlType::Q6_K;
  if (ft == "Q4_K") return short_row ? GgmlType::Q5_0 : GgmlType::Q4_K;
  if (ft == "Q5_K") return short_row ? GgmlType::Q5_1 : GgmlType::Q5_K;
  // K_M mixes: attn_qkv/attn_v counted together: blk0..2 qkv (i 0..2), blk3 v (3), blk4 (MTP) v (4);
  // use_more_bits(i, 5) is true for i = 2, 4. ffn_down likewise for blocks 2 and 4.
  const bool more = has(name, "blk.2.") || has(name, "blk.4.");
  const GgmlType base = ft == "Q4_K_M" ? GgmlType::Q4_K : GgmlType::Q5_K;
  if (has(name, "attn_qkv") || has(name, "attn_v.")) return more ? GgmlType::Q6_K : base;
  if (has(name, "ffn_down")) {
    if (more) return GgmlType::Q8_0;  // Q6_K fallback, 384 columns
    return ft == "Q4_K_M" ? GgmlType::Q5_0 : GgmlType::Q5_1;
  }
  if (short_row) return ft == "Q4_K_M" ? GgmlType::Q5_0 : GgmlType::Q5_1;
  return base;
}

TEST(Qwen35Generator, PresetsAndRopeSections) {
  EXPECT_EQ(scaled_rope_sections(64), (std::array<int32_t, 4>{11, 11, 10, 0}));
  EXPECT_EQ(scaled_rope_sections(16), (std::array<int32_t, 4>{3, 3, 2, 0}));
  for (int64_t r : {4, 8, 16, 32, 64, 128}) {
    auto s = scaled_rope_sections(r);
    EXPECT_EQ(s[0] + s[1] + s[2] + s[3], r / 2) << r;
  }
  for (const auto& name : Qwen35Shape::preset_names()) {
    const auto s = Qwen35Shape::preset_shape(name);
    EXPECT_NO_THROW(s.validate()) << name;
  }
  const auto s4 = Qwen35Shape::preset_shape("4b");
  EXPECT_EQ(s4.n_embd, 2560);
  EXPECT_EQ(s4.conv_dim(), 8192);
  EXPECT_EQ(s4.value_dim(), 4096);
  EXPECT_EQ(Qwen35Shape::preset_shape("0.8b").conv_dim(), 6144);
  EXPECT_THROW(Qwen35Shape::preset_shape("7b"), std::invalid_argument);
  auto bad = Qwen35Shape::preset_shape("tiny");
  bad.ssm_dt_rank = 3;  // not a multiple of H_k = 2
  EXPECT_THROW(bad.validate(), std::invalid_argument);
}

TEST(Qwen35Generator, BuiltinVocab) {
  const Qwen35Vocab v = builtin_qwen35_vocab();
  ASSERT_GT(v.size(), 300);
  EXPECT_EQ(v.tokens[0], "!");
  EXPECT_EQ(v.tokens[39], "H");
  EXPECT_EQ(v.tokens[198], "\xC4\x8A");  // Ċ (newline)
  EXPECT_EQ(v.tokens[220], "\xC4\xA0");  // Ġ (space)
  EXPECT_EQ(v.tokens[255], "\xC5\x83");  // Ń (byte 0xAD)
  std::set<std::string> uniq(v.tokens.begin(), v.tokens.end());
  EXPECT_EQ(static_cast<int64_t>(uniq.size()), v.size());
  // Every merge's parts and result are tokens, results in id order after the alphabet.
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const auto sp = v.merges[i].find(' ');
    ASSERT_NE(sp, std::string::npos);
    const std::string a = v.merges[i].substr(0, sp), b = v.merges[i].substr(sp + 1);
    EXPECT_TRUE(v.find(a) && v.find(b)) << v.merges[i];
    EXPECT_EQ(v.tokens[256 + i], a + b);
  }
  ASSERT_TRUE(v.eos_id && v.bos_id && v.pad_id);
  EXPECT_EQ(v.tokens[*v.eos_id], "<|im_end|>");
  EXPECT_EQ(v.tokens[*v.bos_id], "<|endoftext|>");
  EXPECT_EQ(v.token_types[*v.find("<|im_start|>")], 3);
  EXPECT_EQ(v.token_types[*v.find("<think>")], 4);
  EXPECT_EQ(v.token_types[*v.find("</think>")], 4);
  EXPECT_EQ(v.token_types[*v.find("<|image_pad|>")], 3);
  EXPECT_EQ(v.token_types[100], 1);
}

TEST(Qwen35Generator, TinyPlan) {
  const Qwen35Plan p = plan_qwen35(tiny_opts("F32"));
  const auto& s = p.shape;
  EXPECT_EQ(s.n_vocab, builtin_qwen35_vocab().size());
  EXPECT_EQ(s.block_count(), 5);
  std::map<std::string, std::vector<int64_t>> ne;
  for (const auto& t : p.tensors) ne[t.name] = t.ne;
  EXPECT_EQ(ne.size(), p.tensors.size());
  EXPECT_EQ(ne.count("output.weight"), 0u);
  EXPECT_EQ(ne["token_embd.weight"], (std::vector<int64_t>{256, s.n_vocab}));
  EXPECT_EQ(ne["blk.0.attn_qkv.weight"], (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(ne["blk.0.ssm_conv1d.weight"], (std::vector<int64_t>{4, 256}));
  EXPECT_EQ(ne["blk.0.ssm_a"], (std::vector<int64_t>{4}));
  EXPECT_EQ(ne["blk.0.ssm_dt.bias"], (std::vector<int64_t>{4}));
  EXPECT_EQ(ne["blk.0.ssm_norm.weight"], (std::vector<int64_t>{32}));
  EXPECT_EQ(ne["blk.0.ssm_out.weight"], (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(ne["blk.2.attn_gate.weight"], (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(ne["blk.3.attn_q.weight"], (std::vector<int64_t>{256, 512}));
  EXPECT_EQ(ne["blk.3.attn_k.weight"], (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(ne["blk.3.attn_output.weight"], (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(ne["blk.3.attn_q_norm.weight"], (std::vector<int64_t>{64}));
  EXPECT_EQ(ne.count("blk.3.attn_qkv.weight"), 0u);
  EXPECT_EQ(ne["blk.4.nextn.eh_proj.weight"], (std::vector<int64_t>{512, 256}));
  EXPECT_EQ(ne.count("blk.4.nextn.shared_head_norm.weight"), 1u);
  EXPECT_EQ(ne.count("blk.4.attn_v.weight"), 1u);
  EXPECT_EQ(ne.count("blk.4.ssm_a"), 0u);
  // 1 + 1 globals, 3 GDN blocks of 14, 1 attention block of 11, MTP 11 + 4.
  EXPECT_EQ(p.tensors.size(), 2u + 3 * 14 + 11 + 15);

  GenOptions o = tiny_opts("F32");
  o.mtp = false;
  o.shape.tied = false;
  const Qwen35Plan q = plan_qwen35(o);
  EXPECT_EQ(q.shape.block_count(), 4);
  EXPECT_EQ(q.tensors[0].name, "output.weight");
  for (const auto& t : q.tensors) EXPECT_EQ(t.name.rfind("blk.4.", 0), std::string::npos) << t.name;
}

TEST(Qwen35Generator, RealShapePlans) {
  GenOptions o;
  o.shape = Qwen35Shape::preset_shape("0.8b");
  o.ftype = "Q4_K_M";
  const Qwen35Plan p = plan_qwen35(o);
  EXPECT_EQ(p.shape.n_vocab, 248320);
  EXPECT_EQ(p.vocab.size(), 248320);
  EXPECT_EQ(p.vocab.tokens.back(), "[PAD248319]");
  EXPECT_EQ(p.vocab.token_types.back(), 5);
  EXPECT_EQ(p.shape.block_count(), 25);
  // ~0.5B trunk + 254M embedding + MTP block (772,845,888).
  EXPECT_GT(p.n_params(), 700'000'000);
  EXPECT_LT(p.n_params(), 1'000'000'000);
  std::map<std::string, GgmlType> ty;
  for (const auto& t : p.tensors) ty[t.name] = t.type;
  EXPECT_EQ(ty["token_embd.weight"], GgmlType::Q6_K);
  EXPECT_EQ(ty["blk.0.attn_qkv.weight"], GgmlType::Q6_K);   // first eighth (25/8 = 3 of 25 wv)
  EXPECT_EQ(ty["blk.4.attn_qkv.weight"], GgmlType::Q4_K);
  EXPECT_EQ(ty["blk.24.attn_v.weight"], GgmlType::Q6_K);    // last eighth
  EXPECT_EQ(ty["blk.0.ffn_down.weight"], GgmlType::Q6_K);
  EXPECT_EQ(ty["blk.0.ssm_conv1d.weight"], GgmlType::F32);
  EXPECT_EQ(ty["blk.3.attn_q.weight"], GgmlType::Q4_K);
  for (const auto& t : p.tensors)
    if (has(t.name, "ssm_out") || has(t.name, "ffn_down") || has(t.name, "attn_output")) {
      EXPECT_NEAR(t.scale, std::sqrt(8.0 / 24.0), 1e-6) << t.name;
    }

  o.shape = Qwen35Shape::preset_shape("4b");
  o.ftype = "Q8_0";
  o.n_vocab = 1000;
  const Qwen35Plan q = plan_qwen35(o);
  EXPECT_EQ(q.shape.block_count(), 33);
  EXPECT_EQ(q.shape.n_vocab, 1000);
  int n_attn = 0;
  for (const auto& t : q.tensors) n_attn += has(t.name, "attn_q.weight");
  EXPECT_EQ(n_attn, 9);  // 8 trunk + MTP
}

TEST(Qwen35Generator, Errors) {
  EXPECT_THROW(plan_qwen35(tiny_opts("Q3_K")), std::invalid_argument);
  GenOptions o = tiny_opts("F32");
  o.n_vocab = 10;
  EXPECT_THROW(plan_qwen35(o), std::invalid_argument);
  o = tiny_opts("F32");
  o.tokenizer_json = test_dir() + "/does-not-exist.json";
  EXPECT_THROW(plan_qwen35(o), std::runtime_error);
}

// Generates tiny in every ftype, reopens the file and checks keys, names, shapes and types.
TEST(Qwen35Generator, TinyAllTypes) {
  for (const std::string& ft : qwen35_ftype_names()) {
    SCOPED_TRACE(ft);
    const std::string path = test_dir() + "/gen-test-tiny-" + ft + ".gguf";
    const GenStats st = generate_qwen35_model(tiny_opts(ft), path);
    const Qwen35Plan p = plan_qwen35(tiny_opts(ft));
    auto f = GgufFile::open(path);
    EXPECT_EQ(st.n_bytes, f->file_size());
    EXPECT_EQ(st.n_params, p.n_params());

    EXPECT_EQ(f->require_string("general.architecture"), "qwen35");
    EXPECT_EQ(f->require_string("general.name"), "tandem-qwen35-tiny");
    EXPECT_EQ(f->require_uint("general.file_type"), p.ftype.llama_ftype);
    EXPECT_EQ(f->get_uint("general.quantization_version").has_value(), p.ftype.quantized);
    // The architecture's integer keys, tiny's values.
    const std::pair<const char*, uint64_t> kTinyKeys[] = {
        {"qwen35.block_count", 5},
        {"qwen35.nextn_predict_layers", 1},
        {"qwen35.context_length", 4096},
        {"qwen35.embedding_length", 256},
        {"qwen35.feed_forward_length", 384},
        {"qwen35.attention.head_count", 4},
        {"qwen35.attention.head_count_kv", 2},
        {"qwen35.attention.key_length", 64},
        {"qwen35.attention.value_length", 64},
        {"qwen35.rope.dimension_count", 16},
        {"qwen35.ssm.conv_kernel", 4},
        {"qwen35.ssm.state_size", 32},
        {"qwen35.ssm.group_count", 2},
        {"qwen35.ssm.time_step_rank", 4},
        {"qwen35.ssm.inner_size", 128},
        {"qwen35.full_attention_interval", 4}};
    for (const auto& [key, value] : kTinyKeys) EXPECT_EQ(f->require_uint(key), value) << key;
    EXPECT_FLOAT_EQ(static_cast<float>(f->require_float("qwen35.attention.layer_norm_rms_epsilon")), 1e-6f);
    EXPECT_FLOAT_EQ(static_cast<float>(f->require_float("qwen35.rope.freq_base")), 1e7f);
    const GgufValue* sec = f->find("qwen35.rope.dimension_sections");
    ASSERT_NE(sec, nullptr);
    EXPECT_EQ(sec->array_type, GgufValueType::INT32);
    EXPECT_EQ(sec->ints, (std::vector<int64_t>{3, 3, 2, 0}));
    EXPECT_EQ(f->require_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(f->require_string("tokenizer.ggml.pre"), "qwen2");
    const GgufValue* toks = f->find("tokenizer.ggml.tokens");
    ASSERT_NE(toks, nullptr);
    EXPECT_EQ(static_cast<int64_t>(toks->strings.size()), p.shape.n_vocab);
    EXPECT_EQ(f->find("tokenizer.ggml.token_type")->ints.size(), toks->strings.size());
    EXPECT_EQ(f->find("tokenizer.ggml.token_type")->array_type, GgufValueType::INT32);
    EXPECT_EQ(toks->strings[f->require_uint("tokenizer.ggml.eos_token_id")], "<|im_end|>");
    EXPECT_EQ(toks->strings[f->require_uint("tokenizer.ggml.bos_token_id")], "<|endoftext|>");
    EXPECT_EQ(f->require_uint("tokenizer.ggml.padding_token_id"), f->require_uint("tokenizer.ggml.bos_token_id"));
    EXPECT_EQ(f->get_bool("tokenizer.ggml.add_bos_token"), std::optional<bool>(false));
    EXPECT_TRUE(has(f->require_string("tokenizer.chat_template"), "<|im_start|>"));
    EXPECT_FALSE(f->find("tokenizer.ggml.merges")->strings.empty());

    ASSERT_EQ(f->tensors().size(), p.tensors.size());
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      const auto& t = f->tensors()[i];
      const auto& e = p.tensors[i];
      EXPECT_EQ(t.name, e.name);
      ASSERT_EQ(t.n_dims, static_cast<int>(e.ne.size())) << t.name;
      for (int d = 0; d < t.n_dims; ++d) EXPECT_EQ(t.ne[d], e.ne[d]) << t.name;
      EXPECT_EQ(t.type, expected_tiny_type(ft, t.name, t.n_dims))
          << t.name << ": " << ggml_type_name(t.type) << " vs " << ggml_type_name(expected_tiny_type(ft, t.name, t.n_dims));
    }
  }
}

TEST(Qwen35Generator, WeightDistributions) {
  const std::string path = test_dir() + "/gen-test-dist-F32.gguf";  // own name: tests may run in parallel
  generate_qwen35_model(tiny_opts("F32"), path);
  auto f = GgufFile::open(path);
  double m, sd;
  for (const auto& t : f->tensors()) {
    SCOPED_TRACE(t.name);
    ASSERT_EQ(t.type, GgmlType::F32);
    const auto v = read_f32(t);
    for (float x : v) ASSERT_TRUE(std::isfinite(x));
    mean_std(v, &m, &sd);
    const std::string& n = t.name;
    if (has(n, "norm.weight")) {  // 1 + 0.2 N(0,1), ssm_norm included
      EXPECT_NEAR(m, 1.0, 0.2);
      EXPECT_GT(sd, 0.08);
      EXPECT_LT(sd, 0.35);
    } else if (n.size() > 5 && n.compare(n.size() - 5, 5, "ssm_a") == 0) {
      for (float x : v) {
        EXPECT_LE(x, -0.5f);
        EXPECT_GE(x, -8.0f);
      }
      EXPECT_GT(sd, 0.0);
    } else if (has(n, "ssm_conv1d")) {
      for (float x : v) EXPECT_LE(std::fabs(x), 0.5f);
      EXPECT_NEAR(sd, std::sqrt(1.0 / 12.0), 0.03);
    } else if (has(n, "ssm_dt.bias")) {  // N(0,1), only H_v = 4 values
      EXPECT_GT(sd, 0.01);
    } else {  // matrices: N(0, 1/fan_in)
      ASSERT_EQ(t.n_dims, 2);
      const double expect = 1.0 / std::sqrt(static_cast<double>(t.ne[0]));
      EXPECT_NEAR(sd / expect, 1.0, 0.1);
      EXPECT_NEAR(m, 0.0, 4 * expect / std::sqrt(static_cast<double>(v.size())) + 1e-3);
    }
  }
  // Different tensors get different values (per-name seeds).
  auto a = read_f32(*f->find_tensor("blk.0.attn_norm.weight"));
  auto b = read_f32(*f->find_tensor("blk.1.attn_norm.weight"));
  EXPECT_NE(a, b);
  // The values are the documented function of (seed, name).
  const Qwen35Plan p = plan_qwen35(tiny_opts("F32"));
  EXPECT_EQ(qwen35_tensor_values(p.tensors[0], 42), read_f32(f->tensors()[0]));
}

TEST(Qwen35Generator, Determinism) {
  GenOptions a = tiny_opts("Q4_K_M", 7);
  a.n_threads = 1;
  GenOptions b = tiny_opts("Q4_K_M", 7);
  b.n_threads = 3;
  const auto ba = build_qwen35_gguf(a).to_bytes();
  const auto bb = build_qwen35_gguf(b).to_bytes();
  EXPECT_EQ(ba, bb);
  const auto bc = build_qwen35_gguf(tiny_opts("Q4_K_M", 8)).to_bytes();
  EXPECT_EQ(ba.size(), bc.size());
  EXPECT_NE(ba, bc);
  // Thread split inside one large tensor: the 0.8b-style embedding rows are generated per row.
  GenOptions big = tiny_opts("Q8_0", 3);
  big.n_vocab = 5000;
  big.n_threads = 1;
  GenOptions big2 = big;
  big2.n_threads = 2;
  EXPECT_EQ(build_qwen35_gguf(big).to_bytes(), build_qwen35_gguf(big2).to_bytes());
}

TEST(Qwen35Generator, OutputTypeOverrideAndUntied) {
  GenOptions o = tiny_opts("Q4_0");
  o.output_type = GgmlType::Q8_0;
  o.shape.tied = false;
  o.embd_type = GgmlType::Q5_K;
  const Qwen35Plan p = plan_qwen35(o);
  std::map<std::string, GgmlType> ty;
  for (const auto& t : p.tensors) ty[t.name] = t.type;
  EXPECT_EQ(ty["output.weight"], GgmlType::Q8_0);
  EXPECT_EQ(ty["token_embd.weight"], GgmlType::Q5_K);
  o.embd_type.reset();
  const Qwen35Plan q = plan_qwen35(o);
  EXPECT_EQ(q.tensors[0].name, "output.weight");
  for (const auto& t : q.tensors)
    if (t.name == "token_embd.weight") {
      EXPECT_EQ(t.type, GgmlType::Q4_0);  // untied: default type
    }
  o = tiny_opts("F16");
  o.output_type = GgmlType::Q6_K;
  for (const auto& t : plan_qwen35(o).tensors)
    if (t.name == "token_embd.weight") {
      EXPECT_EQ(t.type, GgmlType::Q6_K);
    }
}

// The plan for golden-a/b shapes reproduces the golden files' tensor list, shapes, per-tensor
// types (llama-quantize's choices) and architecture keys.
TEST(Qwen35Generator, MatchesGoldenLayout) {
  const std::string dir = std::string(TANDEM_SHARED_DIR) + "/golden/models";
  if (!fs::exists(dir)) GTEST_SKIP() << "no golden models at " << dir;
  auto golden_a = Qwen35Shape::preset_shape("tiny");
  golden_a.preset = "golden-a";
  golden_a.n_layer = 8;
  golden_a.ssm_d_state = 64;
  golden_a.context_length = 262144;
  auto golden_b = golden_a;
  golden_b.preset = "golden-b";
  golden_b.n_embd = 512;
  golden_b.n_layer = 4;
  golden_b.n_ff = 768;
  golden_b.n_head = 8;
  golden_b.n_head_kv = 8;
  golden_b.ssm_n_group = 4;
  golden_b.tied = false;
  golden_b.n_mtp = 0;
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"golden-a", {"F32", "F16", "Q8_0", "Q4_0", "Q4_K_M", "Q6_K"}},
      {"golden-b", {"F32", "Q8_0", "Q4_K_M"}},
  };
  int checked = 0;
  for (const auto& [model, types] : cases) {
    for (const auto& ft : types) {
      const std::string path = dir + "/qwen35-" + model + "-" + ft + ".gguf";
      if (!fs::exists(path)) continue;
      SCOPED_TRACE(path);
      auto g = GgufFile::open(path);
      GenOptions o;
      o.shape = std::string(model) == "golden-a" ? golden_a : golden_b;
      o.ftype = ft;
      o.n_vocab = 1027;
      const Qwen35Plan p = plan_qwen35(o);
      // Same tensor set (the golden F32 files are in converter order, the quantized ones sorted;
      // llama-quantize's layer counters are the same in both orders).
      ASSERT_EQ(g->tensors().size(), p.tensors.size());
      for (const auto& e : p.tensors) {
        const GgufTensorInfo* t = g->find_tensor(e.name);
        ASSERT_NE(t, nullptr) << e.name;
        ASSERT_EQ(t->n_dims, static_cast<int>(e.ne.size())) << e.name;
        for (size_t d = 0; d < e.ne.size(); ++d) EXPECT_EQ(t->ne[d], e.ne[d]) << e.name;
        EXPECT_EQ(t->type, e.type) << e.name << ": golden " << ggml_type_name(t->type) << ", generator "
                                   << ggml_type_name(e.type);
      }
      EXPECT_EQ(g->require_uint("general.file_type"), p.ftype.llama_ftype);
      // Architecture keys: a generated file has exactly the golden key set and values.
      const auto w = build_qwen35_gguf([&] {
        GenOptions small = o;  // values do not matter here; F32 is fastest
        small.ftype = "F32";
        return small;
      }());
      const auto bytes = w.to_bytes();
      auto ours = GgufFile::from_memory(bytes.data(), bytes.size(), "generated");
      for (const auto& [key, val] : g->metadata()) {
        if (key.rfind("qwen35.", 0) != 0) continue;
        const GgufValue* mine = ours->find(key);
        ASSERT_NE(mine, nullptr) << key;
        EXPECT_EQ(mine->type, val.type) << key;
        EXPECT_EQ(mine->scalar, val.scalar) << key;
        EXPECT_EQ(mine->ints, val.ints) << key;
      }
      for (const auto& [key, val] : ours->metadata())
        if (key.rfind("qwen35.", 0) == 0) {
          EXPECT_NE(g->find(key), nullptr) << "extra key " << key;
        }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "golden models missing";
}

TEST(Qwen35Generator, HfTokenizerJson) {
  const fs::path d = fs::path(test_dir()) / "hf-tok";
  fs::create_directories(d);
  {
    std::ofstream j(d / "tokenizer.json");
    j << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 4, "\u0120ab": 5},
              "merges": ["a b", ["\u0120", "ab"]]},
             "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split",
                "pattern": {"Regex": "[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+"}}]},
             "added_tokens": [{"id": 7, "content": "<|endoftext|>", "special": true},
                              {"id": 8, "content": "<|im_end|>", "special": false},
                              {"id": 9, "content": "<think>", "special": false}]})";
    std::ofstream c(d / "tmpl.jinja");
    c << "{{ messages }}";
  }
  const Qwen35Vocab v = load_hf_tokenizer((d / "tokenizer.json").string(), (d / "tmpl.jinja").string());
  ASSERT_EQ(v.size(), 10);
  EXPECT_EQ(v.tokens[2], "ab");
  EXPECT_EQ(v.tokens[3], "[PAD3]");
  EXPECT_EQ(v.token_types[3], 5);
  EXPECT_EQ(v.tokens[6], "[PAD6]");
  EXPECT_EQ(v.token_types[7], 3);
  EXPECT_EQ(v.token_types[8], 3);  // looks like <|...|>
  EXPECT_EQ(v.token_types[9], 4);
  EXPECT_EQ(v.merges, (std::vector<std::string>{"a b", "\xC4\xA0 ab"}));
  EXPECT_EQ(v.pre, "qwen35");
  EXPECT_EQ(v.eos_id, std::optional<int32_t>(8));
  EXPECT_EQ(v.bos_id, std::optional<int32_t>(7));
  EXPECT_EQ(v.chat_template, "{{ messages }}");

  GenOptions o = tiny_opts("Q8_0");
  o.tokenizer_json = (d / "tokenizer.json").string();
  o.n_vocab = 64;
  const std::string path = test_dir() + "/gen-test-hf-tok.gguf";
  generate_qwen35_model(o, path);
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->find_tensor("token_embd.weight")->ne[1], 64);
  EXPECT_EQ(f->find("tokenizer.ggml.tokens")->strings.size(), 64u);
  EXPECT_EQ(f->find("tokenizer.ggml.tokens")->strings[63], "[PAD63]");
  EXPECT_EQ(f->require_string("tokenizer.ggml.pre"), "qwen35");
  EXPECT_EQ(f->require_uint("tokenizer.ggml.eos_token_id"), 8u);
  o.n_vocab.reset();
  EXPECT_EQ(plan_qwen35(o).shape.n_vocab, 10);  // tiny: the tokenizer's size

  std::ofstream(d / "broken.json") << R"({"model": {"vocab": {"a": "x"}}})";
  EXPECT_THROW(load_hf_tokenizer((d / "broken.json").string()), std::runtime_error);
}

TEST(Qwen35Generator, EnsureTinyModelIsFresh) {
  const std::string path = ensure_tiny_model("Q4_0");
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(ensure_tiny_model("Q4_0"), path);
  const auto fresh = build_qwen35_gguf(tiny_opts("Q4_0")).to_bytes();
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(disk == fresh) << "cached " << path
                             << " differs from a fresh build: bump kTinyModelVersion in model/test_models.h";
  const std::string nomtp = ensure_tiny_model("F32", false);
  auto f = GgufFile::open(nomtp);
  EXPECT_EQ(f->require_uint("qwen35.block_count"), 4u);
  EXPECT_EQ(f->find("qwen35.nextn_predict_layers"), nullptr);
}

}  // namespace
}  // namespace tandem
