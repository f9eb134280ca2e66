#include "model/qwen35/qwen35_requantize.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include "gguf/quants.h"
#include "model/tensor_encoder.h"

namespace tandem {

namespace {
bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }
}  // namespace

GgufWriter requantize_qwen35(const GgufFile& in, const RequantizeOptions& opt, RequantizeStats* stats) {
  const auto arch = in.get_string("general.architecture");
  if (arch != "qwen35")
    in.fail("general.architecture is '" + arch.value_or("(missing)") + "', tandem-quantize handles qwen35 files");
  for (const auto& t : in.tensors())
    if (t.type != GgmlType::F32 && t.type != GgmlType::F16 && t.type != GgmlType::BF16)
      in.fail("tensor " + t.name + " is already " + ggml_type_name(t.type) +
              "; quantize from the F32/F16/BF16 file (requantizing loses precision twice)");

  // qwen35_tensor_type reads the shape only for whether the head is tied.
  Qwen35Shape shape;
  shape.tied = in.find_tensor("output.weight") == nullptr;

  GgufWriter w(in.alignment());
  for (const auto& [key, value] : in.metadata()) w.set_value(key, value);
  w.set_u32("general.file_type", opt.ftype.llama_ftype);
  if (opt.ftype.quantized) w.set_u32("general.quantization_version", 2);

  // llama-quantize's counters over the file order (attn_v + attn_qkv; ffn_down).
  auto is_wv = [](const std::string& n) { return contains(n, "attn_v.weight") || contains(n, "attn_qkv.weight"); };
  int n_wv = 0, n_ffn = 0;
  for (const auto& t : in.tensors()) {
    n_wv += is_wv(t.name);
    n_ffn += contains(t.name, "ffn_down");
  }
  int i_wv = 0, i_ffn = 0;
  std::map<std::string, int> type_count;
  for (const auto& t : in.tensors()) {
    const std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    const GgmlType type = qwen35_tensor_type(opt.ftype, shape, t.name, ne, i_wv, n_wv, i_ffn, n_ffn, opt.output_type,
                                             std::nullopt);
    if (is_wv(t.name)) ++i_wv;
    if (contains(t.name, "ffn_down")) ++i_ffn;
    const int64_t nx = t.ne[0];
    const size_t src_row = row_bytes(t.type, nx);
    w.add_tensor(t.name, type, ne,
                 encode_generated_tensor(type, ne, [&](int64_t first, int64_t n, float* dst) {
                   // The encoder asks for whole rows.
                   const int64_t r0 = first / nx, nr = n / nx;
                   for (int64_t r = 0; r < nr; ++r)
                     dequantize_row(t.type, t.data + static_cast<size_t>(r0 + r) * src_row, dst + r * nx, nx);
                 }, std::max(1, opt.n_threads)));
    ++type_count[ggml_type_name(type)];
  }
  if (stats) {
    stats->type_summary.clear();
    for (const auto& [name, n] : type_count)
      stats->type_summary += (stats->type_summary.empty() ? "" : ", ") + name + " " + std::to_string(n);
  }
  return w;
}

}  // namespace tandem
