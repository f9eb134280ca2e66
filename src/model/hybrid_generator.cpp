#include "model/hybrid_generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "gguf/gguf_writer.h"
#include "model/seeded_random.h"
#include "model/tensor_encoder.h"
#include "text/chat_template.h"

namespace tandem {

namespace {

using namespace seeded_random;

// How a tensor's values are drawn (golden-hybrids README, "Random weights").
enum class Init { Matrix, Norm, Uniform, Normal, DtBias, NegUniform };
struct Planned {
  std::string name;
  std::vector<int64_t> ne;
  Init init;
  double a = 1, b = 0;  // Matrix: extra factor; Norm: scale of (1 + 0.2 N); Uniform: [a, b); Normal: sd a;
                        // NegUniform: -U(a, b)
  GgmlType type = GgmlType::F32;
};

void fill(const Planned& t, uint64_t ts, int64_t first, int64_t n, float* dst) {
  switch (t.init) {
    case Init::Matrix:
      fill_normals(ts, first, n, t.a / std::sqrt(static_cast<double>(t.ne[0])), 0.0, dst);
      break;
    case Init::Norm:
      fill_normals(ts, first, n, 0.2 * t.a, t.a, dst);
      break;
    case Init::Normal:
      fill_normals(ts, first, n, t.a, 0.0, dst);
      break;
    case Init::Uniform:
      for (int64_t k = 0; k < n; ++k) dst[k] = static_cast<float>(t.a + (t.b - t.a) * uniform_at(ts, first + k));
      break;
    case Init::NegUniform:
      for (int64_t k = 0; k < n; ++k) dst[k] = static_cast<float>(-(t.a + (t.b - t.a) * uniform_at(ts, first + k)));
      break;
    case Init::DtBias:  // softplus⁻¹(dt0), dt0 log-uniform in [1e-3, 1e-1] (Mamba2's init)
      for (int64_t k = 0; k < n; ++k) {
        const double dt0 = std::exp(std::log(1e-3) + (std::log(1e-1) - std::log(1e-3)) * uniform_at(ts, first + k));
        dst[k] = static_cast<float>(dt0 + std::log(-std::expm1(-dt0)));
      }
      break;
  }
}

std::vector<bool> pattern(int n_layer, std::initializer_list<int> attention) {
  std::vector<bool> r(static_cast<size_t>(n_layer), true);
  for (int i : attention) r[static_cast<size_t>(i)] = false;
  return r;
}

}  // namespace

void HybridShape::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("hybrid shape: " + what);
  };
  need(arch == "lfm2" || arch == "granitehybrid", "arch must be lfm2 or granitehybrid, got '" + arch + "'");
  need(n_embd > 0 && n_ff > 0 && n_head > 0 && n_head_kv > 0, "n_embd, n_ff and the head counts must be positive");
  need(n_embd % n_head == 0 && n_head % n_head_kv == 0, "n_head must divide n_embd and n_head_kv divide n_head");
  need(!recurrent.empty(), "at least one layer");
  if (arch == "lfm2") need(l_cache >= 2, "l_cache must be >= 2");
  if (arch == "granitehybrid") {
    need(d_inner > 0 && d_state > 0 && n_ssm_head > 0 && n_group > 0 && d_conv >= 2, "Mamba2 sizes must be positive");
    need(d_inner % n_ssm_head == 0 && n_ssm_head % n_group == 0, "SSM heads must divide d_inner, groups the heads");
  }
}

HybridShape HybridShape::preset_shape(std::string_view name) {
  HybridShape s;
  s.preset = std::string(name);
  if (name == "lfm2-tiny" || name == "lfm2-350m" || name == "lfm2-1.2b" || name == "lfm2-2.6b") {
    s.arch = "lfm2";
    if (name == "lfm2-tiny") {  // golden lfm2-a's layout: the real first six layers
      s.n_embd = 256, s.n_ff = 512, s.n_head = 4, s.n_head_kv = 2;
      s.recurrent = pattern(6, {2, 5});
    } else if (name == "lfm2-350m") {
      s.n_embd = 1024, s.n_ff = 4608, s.n_head = 16, s.n_head_kv = 8, s.n_vocab = 65536;
      s.recurrent = pattern(16, {2, 5, 8, 10, 12, 14});
    } else if (name == "lfm2-1.2b") {
      s.n_embd = 2048, s.n_ff = 8192, s.n_head = 32, s.n_head_kv = 8, s.n_vocab = 65536;
      s.recurrent = pattern(16, {2, 5, 8, 10, 12, 14});
    } else {
      s.n_embd = 2048, s.n_ff = 10752, s.n_head = 32, s.n_head_kv = 8, s.n_vocab = 65536;
      s.recurrent = pattern(30, {2, 5, 9, 13, 17, 21, 24, 27});
    }
  } else if (name == "granite-tiny" || name == "granite-h-micro") {
    s.arch = "granitehybrid";
    s.context_length = 1u << 20;  // the converter writes 2^20 for NoPE hybrids
    if (name == "granite-tiny") {  // golden granite-a's layout
      s.n_embd = 256, s.n_ff = 512, s.n_head = 4, s.n_head_kv = 1;
      s.d_inner = 512, s.n_ssm_head = 8, s.d_state = 64, s.n_group = 1;
      s.attention_scale = 1.0f / 64;
      s.recurrent = pattern(6, {5});
    } else {
      s.n_embd = 2048, s.n_ff = 8192, s.n_head = 32, s.n_head_kv = 8, s.n_vocab = 100352;
      s.d_inner = 4096, s.n_ssm_head = 64, s.d_state = 128, s.n_group = 1;
      s.attention_scale = 1.0f / 64;
      s.recurrent = pattern(40, {5, 15, 25, 35});
    }
  } else {
    std::string names;
    for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown hybrid preset '" + std::string(name) + "' (expected one of " + names + ")");
  }
  return s;
}

std::vector<std::string> HybridShape::preset_names() {
  return {"lfm2-tiny", "lfm2-350m", "lfm2-1.2b", "lfm2-2.6b", "granite-tiny", "granite-h-micro"};
}

GenStats generate_hybrid_model(const HybridGenOptions& opt, const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  HybridShape s = opt.shape;
  s.validate();
  const auto ft = qwen35_ftype_from_name(opt.ftype);
  if (!ft) throw std::invalid_argument("unknown type '" + opt.ftype + "'");
  // The built-in byte-level vocabulary with the family's control tokens, ids, pre-tokenizer and
  // chat template (text::chat_family_tokenizer: what real LFM2 / Granite-4.0 files carry), so that
  // the stock policy's user spans are the family's (LFM2: none; Granite: user and tool turns).
  Qwen35Vocab vocab = builtin_qwen35_vocab();
  const text::ChatFamilyTokenizer& fam =
      text::chat_family_tokenizer(s.arch == "lfm2" ? text::ChatTemplateFamily::LFM2 : text::ChatTemplateFamily::Granite4);
  for (const std::string& t : fam.control_tokens)
    if (!vocab.find(t)) {
      vocab.tokens.push_back(t);
      vocab.token_types.push_back(3);  // CONTROL
    }
  vocab.pre = fam.pre;
  vocab.bos_id = vocab.find(fam.bos);
  vocab.eos_id = vocab.find(fam.eos);
  vocab.pad_id = vocab.find(fam.pad);
  vocab.chat_template = fam.chat_template;
  if (s.n_vocab == 0) s.n_vocab = vocab.size();
  if (s.n_vocab < vocab.size())
    throw std::invalid_argument("vocab size " + std::to_string(s.n_vocab) + " is smaller than the built-in " +
                                std::to_string(vocab.size()) + " tokens");
  vocab.pad_to(s.n_vocab);
  const bool lfm2 = s.arch == "lfm2";
  const int64_t E = s.n_embd, hd = s.head_dim(), L = s.n_layer();
  // Residual-branch outputs scaled by sqrt(8 / n_layer) past 8 layers, as the qwen35 generator does.
  const double depth = L > 8 ? std::sqrt(8.0 / static_cast<double>(L)) : 1.0;

  std::vector<Planned> plan;
  auto add = [&](std::vector<Planned>& v, std::string name, std::vector<int64_t> ne, Init init, double a = 1,
                 double b = 0) { v.push_back({std::move(name), std::move(ne), init, a, b}); };
  {
    std::vector<Planned> g;
    if (!s.tied) add(g, "output.weight", {E, s.n_vocab}, Init::Matrix);
    if (lfm2) {
      add(g, "token_embd.weight", {E, s.n_vocab}, Init::Matrix);
      add(g, "token_embd_norm.weight", {E}, Init::Norm);
    } else {
      // The ×embedding_scale embedding keeps the usual 1/sqrt(n_embd) size; the final norm carries
      // logit_scale so that logits ÷ logit_scale have std ≈ 1 (golden-hybrids README).
      add(g, "token_embd.weight", {E, s.n_vocab}, Init::Normal, 1.0 / (s.embedding_scale * std::sqrt(double(E))));
      add(g, "output_norm.weight", {E}, Init::Norm, s.logit_scale * (s.tied ? s.embedding_scale : 1.0));
    }
    std::sort(g.begin(), g.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
    plan = std::move(g);
  }
  for (int64_t il = 0; il < L; ++il) {
    std::vector<Planned> b;
    const std::string p = "blk." + std::to_string(il) + ".";
    add(b, p + "attn_norm.weight", {E}, Init::Norm);
    add(b, p + "ffn_norm.weight", {E}, Init::Norm);
    add(b, p + "ffn_gate.weight", {E, s.n_ff}, Init::Matrix);
    add(b, p + "ffn_up.weight", {E, s.n_ff}, Init::Matrix);
    add(b, p + "ffn_down.weight", {s.n_ff, E}, Init::Matrix, depth);
    if (!s.recurrent[static_cast<size_t>(il)]) {
      add(b, p + "attn_q.weight", {E, s.n_head * hd}, Init::Matrix);
      add(b, p + "attn_k.weight", {E, s.n_head_kv * hd}, Init::Matrix);
      add(b, p + "attn_v.weight", {E, s.n_head_kv * hd}, Init::Matrix);
      add(b, p + "attn_output.weight", {s.n_head * hd, E}, Init::Matrix, depth);
      if (lfm2) {
        add(b, p + "attn_q_norm.weight", {hd}, Init::Norm);
        add(b, p + "attn_k_norm.weight", {hd}, Init::Norm);
      }
    } else if (lfm2) {
      add(b, p + "shortconv.in_proj.weight", {E, 3 * E}, Init::Matrix);
      add(b, p + "shortconv.conv.weight", {s.l_cache, E}, Init::Uniform, -0.5, 0.5);
      add(b, p + "shortconv.out_proj.weight", {E, E}, Init::Matrix, depth);
    } else {
      const int64_t H = s.n_ssm_head;
      add(b, p + "ssm_in.weight", {E, s.in_proj_rows()}, Init::Matrix);
      add(b, p + "ssm_conv1d.weight", {s.d_conv, s.conv_channels()}, Init::Uniform, -1.0, 1.0);
      add(b, p + "ssm_conv1d.bias", {s.conv_channels()}, Init::Normal, 0.25);
      add(b, p + "ssm_dt.bias", {H}, Init::DtBias);
      add(b, p + "ssm_a", {1, H}, Init::NegUniform, 1.0, 16.0);
      add(b, p + "ssm_d", {1, H}, Init::Uniform, 0.0, 1.0);
      add(b, p + "ssm_norm.weight", {s.d_inner / s.n_group, s.n_group}, Init::Norm);
      add(b, p + "ssm_out.weight", {s.d_inner, E}, Init::Matrix, depth);
    }
    std::sort(b.begin(), b.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
    for (auto& t : b) plan.push_back(std::move(t));
  }

  // Types: llama-quantize's rules (qwen35_tensor_type: the output / tied embedding, the more-bits
  // mix of attn_v and ffn_down, block-size fallbacks); conv kernels, A, D, biases and every norm
  // stay F32 (spec A5, B4).
  Qwen35Shape rules;  // qwen35_tensor_type reads only whether the head is tied
  rules.tied = s.tied;
  int n_wv = 0, n_ffn = 0;
  for (const auto& t : plan) {
    n_wv += t.name.find("attn_v.weight") != std::string::npos;
    n_ffn += t.name.find("ffn_down") != std::string::npos;
  }
  int i_wv = 0, i_ffn = 0;
  for (auto& t : plan) {
    const bool f32 = t.ne.size() < 2 || t.name.find("_norm") != std::string::npos ||
                     t.name.find("shortconv.conv") != std::string::npos || t.name.find("ssm_conv1d") != std::string::npos ||
                     t.name.size() < 7 || t.name.compare(t.name.size() - 7, 7, ".weight") != 0;
    t.type = f32 ? GgmlType::F32 : qwen35_tensor_type(*ft, rules, t.name, t.ne, i_wv, n_wv, i_ffn, n_ffn, {}, {});
    i_wv += t.name.find("attn_v.weight") != std::string::npos;
    i_ffn += t.name.find("ffn_down") != std::string::npos;
  }

  const std::string a = s.arch;
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  GgufWriter w;
  std::ostringstream d;
  d << "RANDOM weights (tandem-gen-model, seed=" << opt.seed << "; golden-hybrids distributions); " << a
    << " schema, preset " << s.preset;
  write_header_keys(w, a, "tandem-" + s.preset, d.str(), L, s.context_length, E, s.n_ff, s.n_head);
  std::vector<int32_t> kv;
  for (bool r : s.recurrent) kv.push_back(r ? 0 : static_cast<int32_t>(s.n_head_kv));
  w.set_array_i32(a + ".attention.head_count_kv", kv);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  w.set_u32(a + ".vocab_size", u32(s.n_vocab));
  if (lfm2) {
    w.set_f32(a + ".rope.freq_base", s.rope_freq_base);
    w.set_u32(a + ".shortconv.l_cache", u32(s.l_cache));
  } else {
    w.set_f32(a + ".rope.freq_base", 10000.0f);
    w.set_u32(a + ".expert_count", 0);
    w.set_u32(a + ".expert_used_count", 0);
    w.set_u32(a + ".rope.dimension_count", u32(hd));
    w.set_f32(a + ".attention.scale", s.attention_scale > 0 ? s.attention_scale : 1.0f / std::sqrt(float(hd)));
    w.set_f32(a + ".embedding_scale", s.embedding_scale);
    w.set_f32(a + ".residual_scale", s.residual_scale);
    w.set_f32(a + ".logit_scale", s.logit_scale);
    w.set_u32(a + ".expert_shared_feed_forward_length", u32(s.n_ff));
    w.set_u32(a + ".ssm.conv_kernel", u32(s.d_conv));
    w.set_u32(a + ".ssm.state_size", u32(s.d_state));
    w.set_u32(a + ".ssm.group_count", u32(s.n_group));
    w.set_u32(a + ".ssm.inner_size", u32(s.d_inner));
    w.set_u32(a + ".ssm.time_step_rank", u32(s.n_ssm_head));
    w.set_bool(a + ".rope.scaling.finetuned", false);
  }
  write_vocab_keys(w, vocab, fam.add_bos_token);
  if (ft->quantized) w.set_u32("general.quantization_version", 2);
  w.set_u32("general.file_type", ft->llama_ftype);

  GenStats st;
  std::map<std::string, int> type_count;
  for (const auto& t : plan) {
    const uint64_t ts = tensor_seed(opt.seed, t.name);
    w.add_tensor(t.name, t.type, t.ne,
                 encode_generated_tensor(t.type, t.ne, [&](int64_t first, int64_t n, float* dst) { fill(t, ts, first, n, dst); },
                                         std::max(1, opt.n_threads)));
    ++type_count[ggml_type_name(t.type)];
    int64_t n = 1;
    for (int64_t v : t.ne) n *= v;
    st.n_params += n;
  }
  st.type_summary = type_summary(type_count);
  write_generated(w, path, t0, st);
  return st;
}

}  // namespace tandem
