// Writes a few small valid GGUF files into a directory: the seed corpus of gguf_reader_fuzz.
// Usage: gguf_seed_writer <dir>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "gguf/quants.h"

using namespace tandem;

namespace {

std::vector<uint8_t> tensor_data(GgmlType t, int64_t ne0, int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(ne0));
  const size_t rb = row_bytes(t, ne0);
  std::vector<uint8_t> out(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : x) v = nd(rng);
    quantize_row(t, x.data(), out.data() + r * rb, ne0);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  try {
    GgufWriter().write_file(dir + "/seed-empty.gguf");

    {  // every metadata value type
      GgufWriter w;
      w.set_u8("a.u8", 1);
      w.set_i8("a.i8", -1);
      w.set_u16("a.u16", 2);
      w.set_i16("a.i16", -2);
      w.set_u32("a.u32", 3);
      w.set_i32("a.i32", -3);
      w.set_u64("a.u64", 4);
      w.set_i64("a.i64", -4);
      w.set_f32("a.f32", 0.5f);
      w.set_f64("a.f64", 0.25);
      w.set_bool("a.bool", true);
      w.set_string("a.str", "hello");
      w.set_array_string("a.astr", {"x", "yy"});
      w.set_array_i32("a.ai32", {1, -2});
      w.set_array_u32("a.au32", {3, 4});
      w.set_array_f32("a.af32", {1.5f});
      w.add_tensor("t", GgmlType::F32, {4}, tensor_data(GgmlType::F32, 4, 1, 1));
      w.write_file(dir + "/seed-metadata.gguf");
    }

    {  // one small tensor of every supported type
      GgufWriter w;
      w.set_string("general.architecture", "qwen35");
      const GgmlType types[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                                GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q4_K,
                                GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_K};
      uint32_t seed = 10;
      for (GgmlType t : types) {
        const int64_t ne0 = traits(t).block_elems == 1 ? 8 : traits(t).block_elems;
        w.add_tensor(std::string("blk.0.") + ggml_type_name(t) + ".weight", t, {ne0, 2},
                     tensor_data(t, ne0, 2, seed++));
      }
      w.write_file(dir + "/seed-types.gguf");
    }

    {  // qwen35-like keys, custom alignment, 3-D/4-D and empty tensors
      GgufWriter w(64);
      w.set_string("general.architecture", "qwen35");
      w.set_u32("qwen35.block_count", 1);
      w.set_f32("qwen35.rope.freq_base", 1e7f);
      w.set_array_i32("qwen35.rope.dimension_sections", {3, 3, 2, 0});
      w.set_array_string("tokenizer.ggml.tokens", {"a", "b", "<|im_end|>"});
      w.set_array_i32("tokenizer.ggml.token_type", {1, 1, 3});
      w.add_tensor("a", GgmlType::F32, {2, 3, 4}, tensor_data(GgmlType::F32, 2, 12, 20));
      w.add_tensor("b", GgmlType::F16, {2, 1, 2, 2}, tensor_data(GgmlType::F16, 2, 4, 21));
      w.add_tensor("c", GgmlType::Q8_0, {0, 5}, {});
      w.add_tensor("d", GgmlType::Q4_K, {256}, tensor_data(GgmlType::Q4_K, 256, 1, 22));
      w.write_file(dir + "/seed-qwen35.gguf");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_seed_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
