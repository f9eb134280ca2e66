// Seeded random-weight Qwen3.5 (llama.cpp arch "qwen35") GGUF models.
//
// Produces files with exactly the metadata keys and tensors a converted Qwen3.5 dense
// checkpoint has (spec/qwen35.md §2–§3), with the weight distributions of the golden
// models (golden/README.md, "How the models were made"), quantized with llama-quantize's
// per-tensor type rules. Used by tandem-gen-model and by tests that need a model file.
//
// Determinism: every tensor's values are a pure function of (seed, tensor name, element
// index) — a counter-based splitmix64 stream with Box–Muller normals — so the same options
// give byte-identical files on every machine and thread count. (std::normal_distribution is
// not used: its algorithm differs between standard libraries.)
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/gguf_writer.h"

namespace tandem {

// Hyper-parameters of a qwen35 model (names as in spec §1/§2.1).
struct Qwen35Shape {
  std::string preset = "custom";  // written into general.name
  int64_t n_vocab = 0;            // embedding rows; 0 = the tokenizer's size
  int64_t n_embd = 0;
  int64_t n_layer = 0;            // trunk layers (block_count = n_layer + n_mtp)
  int64_t n_ff = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;           // attention key_length = value_length
  int64_t n_rot = 0;              // rope.dimension_count
  std::array<int32_t, 4> rope_sections{11, 11, 10, 0};  // sums to n_rot / 2
  int64_t ssm_d_state = 0;        // d: GDN key = value head dim (ssm.state_size)
  int64_t ssm_n_group = 0;        // H_k (ssm.group_count)
  int64_t ssm_dt_rank = 0;        // H_v (ssm.time_step_rank)
  int64_t ssm_conv_kernel = 4;
  int64_t full_attention_interval = 4;
  float rms_eps = 1e-6f;
  float rope_freq_base = 1e7f;
  uint32_t context_length = 262144;
  bool tied = true;               // no output.weight; token_embd is the LM head
  int n_mtp = 1;                  // 0 or 1 NextN blocks appended after the trunk

  int64_t key_dim() const { return ssm_n_group * ssm_d_state; }
  int64_t value_dim() const { return ssm_dt_rank * ssm_d_state; }  // ssm.inner_size
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
  int64_t block_count() const { return n_layer + n_mtp; }
  // Layer il (trunk or MTP) is Gated-DeltaNet (recurrent) rather than full attention.
  bool is_recurrent(int64_t il) const {
    return il < n_layer && (il + 1) % full_attention_interval != 0;
  }

  // Throws std::invalid_argument naming the first inconsistent field.
  void validate() const;

  // "tiny", "0.8b", "2b", "4b"; throws std::invalid_argument for anything else.
  static Qwen35Shape preset_shape(std::string_view name);
  static std::vector<std::string> preset_names();
};

// M-RoPE sections for n_rot rotary dims: Qwen3.5's {11, 11, 10, 0} (n_rot 64) scaled to
// n_rot / 2 pairs (e.g. n_rot 16 → {3, 3, 2, 0}, as in the golden models).
std::array<int32_t, 4> scaled_rope_sections(int64_t n_rot);

// A file type in llama-quantize's sense: the default matrix type plus its mixing rules.
struct Qwen35FType {
  std::string name;        // "Q4_K_M"
  uint32_t llama_ftype;    // general.file_type (llama_ftype enum)
  GgmlType base;           // default type of a 2-D weight
  bool quantized;          // false for F32/F16/BF16: no per-tensor rules at all
  bool more_bits_mix;      // Q4_K_M / Q5_K_M: Q6_K for attn_v, attn_qkv, ffn_down on use_more_bits layers
};
// Accepted: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K Q4_K_M Q5_K_M (case-insensitive).
// Plain Q4_K / Q5_K are "pure" (every matrix that type, file_type Q4_K_S / Q5_K_S).
std::optional<Qwen35FType> qwen35_ftype_from_name(std::string_view name);
std::vector<std::string> qwen35_ftype_names();

// Byte-level BPE vocabulary as written into tokenizer.ggml.*.
struct Qwen35Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;  // 1 NORMAL, 3 CONTROL, 4 USER_DEFINED, 5 UNUSED
  std::vector<std::string> merges;   // "left right"
  std::string pre = "qwen2";         // tokenizer.ggml.pre
  std::optional<int32_t> bos_id, eos_id, pad_id;
  std::string chat_template;

  // Appends "[PAD{id}]" UNUSED tokens up to n tokens (n >= size()).
  void pad_to(int64_t n);
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  std::optional<int32_t> find(std::string_view token) const;
};

// The built-in ~340-token vocabulary: ids 0..255 = the GPT-2 bytes_to_unicode alphabet in
// its standard order ("!" = 0, "Ġ" = 220, "Ċ" = 198), then one token per built-in merge
// (common English pairs, in rank order), then <|endoftext|> <|im_start|> <|im_end|> (CONTROL),
// <think> </think> (USER_DEFINED), <|vision_start|> <|vision_end|> <|image_pad|> (CONTROL).
// bos = pad = <|endoftext|>, eos = <|im_end|>, a ChatML chat template.
Qwen35Vocab builtin_qwen35_vocab();
// A HF tokenizer.json (BPE): ids exactly as in the file, holes filled with [PAD{id}].
// chat_template_path (optional) overrides the template; otherwise a sibling
// tokenizer_config.json "chat_template" or chat_template.jinja is used if present, else ChatML.
// Throws std::runtime_error with the file name on malformed input.
Qwen35Vocab load_hf_tokenizer(const std::string& tokenizer_json_path, const std::string& chat_template_path = "");
// Writes the tokenizer.* keys of v (llama.cpp's gpt2 BPE keys, ids, chat template).
void write_qwen35_vocab(GgufWriter& w, const Qwen35Vocab& v);
// The ChatML template embedded by default (Qwen3 style, with <think> handling).
const std::string& default_chat_template();

struct Qwen35TensorPlan;

struct GenOptions {
  Qwen35Shape shape = Qwen35Shape::preset_shape("tiny");
  uint64_t seed = 42;
  std::string ftype = "F32";
  std::optional<GgmlType> output_type;  // LM head (token_embd when tied); like --output-tensor-type
  std::optional<GgmlType> embd_type;    // token_embd of an untied model; like --token-embedding-type
  bool mtp = true;                      // false forces n_mtp = 0
  std::string tokenizer_json;           // empty: built-in vocabulary
  std::string chat_template_file;       // empty: default / from tokenizer dir
  std::optional<int64_t> n_vocab;       // override embedding rows (pads the vocabulary)
  int n_threads = 2;                    // generation + quantization workers (result independent of it)
  // Where the weights come from. Empty: the seeded random distributions above. Otherwise every
  // tensor's F32 values in ne[0]-contiguous order (n_elements of the plan's ne), e.g. trained
  // weights (model/qwen35/trained_weights.h); the file's keys, vocabulary, tensor order and type
  // rules stay the generator's, so a trained file is laid out exactly as a generated one.
  std::function<std::vector<float>(const Qwen35TensorPlan&)> values;
  std::string name;         // general.name; empty: "tandem-qwen35-<preset>"
  std::string description;  // general.description; empty: the random-weights description
};

// What will be written for one tensor.
enum class Qwen35Init { Matrix, Norm, SsmNorm, DtBias, SsmA, Conv };
struct Qwen35TensorPlan {
  std::string name;
  std::vector<int64_t> ne;
  GgmlType type;
  Qwen35Init init;
  float scale = 1.0f;  // extra factor on a Matrix's N(0, 1/fan_in) (residual-branch depth factor)
};

// The resolved model: shape with the final n_vocab / n_mtp, vocabulary, tensor list.
struct Qwen35Plan {
  Qwen35Shape shape;
  Qwen35FType ftype;
  Qwen35Vocab vocab;
  std::vector<Qwen35TensorPlan> tensors;  // file order
  int64_t n_params() const;
};

// Resolves options into a plan (no weights generated). Throws std::invalid_argument /
// std::runtime_error with a user-facing message.
Qwen35Plan plan_qwen35(const GenOptions& opt);

// Per-tensor type as llama-quantize picks it. i_wv / n_wv count attn_v + attn_qkv tensors
// (file order), i_ffn / n_ffn count ffn_down tensors. Exposed for tests.
GgmlType qwen35_tensor_type(const Qwen35FType& ft, const Qwen35Shape& s, const std::string& name,
                            const std::vector<int64_t>& ne, int i_wv, int n_wv, int i_ffn, int n_ffn,
                            std::optional<GgmlType> output_type, std::optional<GgmlType> embd_type);

// Deterministic values of one tensor (F32, ne[0]-contiguous); for tests and tools.
std::vector<float> qwen35_tensor_values(const Qwen35TensorPlan& t, uint64_t seed);

struct GenStats {
  int64_t n_params = 0;
  size_t n_bytes = 0;        // file size (after write) / serialized size
  double seconds = 0;
  std::string type_summary;  // "F32 52, Q4_0 70, Q6_K 1"
};

// What every generator writes the same way, in llama.cpp's order: the keys a file starts with
// (general.architecture, name, type and description, then the architecture's block_count,
// context_length, embedding_length, feed_forward_length and attention.head_count) ...
void write_header_keys(GgufWriter& w, const std::string& arch, const std::string& name,
                       const std::string& description, int64_t block_count, int64_t context_length, int64_t n_embd,
                       int64_t n_ff, int64_t n_head);
// ... and the tokenizer.ggml.* keys of a vocabulary (and tokenizer.chat_template when it has one).
void write_vocab_keys(GgufWriter& w, const Qwen35Vocab& v, bool add_bos_token);
// A generated file's tensor types, counted: "F32 52, Q4_0 70, Q6_K 1" (GenStats::type_summary).
std::string type_summary(const std::map<std::string, int>& type_count);
// Writes w to path (the writer's tmp + rename), then st.n_bytes (the file's size) and st.seconds
// (the time since t0).
void write_generated(const GgufWriter& w, const std::string& path, std::chrono::steady_clock::time_point t0,
                     GenStats& st);

// Builds the complete GGUF in memory.
GgufWriter build_qwen35_gguf(const GenOptions& opt, GenStats* stats = nullptr);
// Builds and writes path (atomically, via the writer's tmp + rename). Returns stats.
GenStats generate_qwen35_model(const GenOptions& opt, const std::string& path);

}  // namespace tandem
