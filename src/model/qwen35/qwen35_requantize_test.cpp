#include "model/qwen35/qwen35_requantize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace tandem {
namespace {

GenOptions tiny(const std::string& ftype) {
  GenOptions o;
  o.shape = Qwen35Shape::preset_shape("tiny");
  o.ftype = ftype;
  o.seed = 11;
  return o;
}

struct Image {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
};
Image open(GgufWriter w, const char* name) {
  Image im;
  im.bytes = w.to_bytes();
  im.file = GgufFile::from_memory(im.bytes.data(), im.bytes.size(), name);
  return im;
}

// Quantizing the generator's F32 file gives exactly the file the generator writes with that type
// (same per-tensor types, same bytes): the generator encodes the same F32 values with the same
// quantizers and rules, so the two paths can only differ by a bug in one of them.
void expect_same_as_generated(const std::string& ftype) {
  const Image f32 = open(build_qwen35_gguf(tiny("F32")), "f32");
  RequantizeOptions opt;
  opt.ftype = *qwen35_ftype_from_name(ftype);
  RequantizeStats st;
  const Image q = open(requantize_qwen35(*f32.file, opt, &st), "requantized");
  const Image gen = open(build_qwen35_gguf(tiny(ftype)), "generated");
  ASSERT_EQ(q.file->tensors().size(), gen.file->tensors().size());
  for (size_t i = 0; i < gen.file->tensors().size(); ++i) {
    const auto& a = q.file->tensors()[i];
    const auto& b = gen.file->tensors()[i];
    ASSERT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type) << ftype << " " << a.name;
    ASSERT_EQ(a.nbytes, b.nbytes) << a.name;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << ftype << " " << a.name;
  }
  EXPECT_EQ(q.file->get_uint("general.file_type"), gen.file->get_uint("general.file_type"));
  EXPECT_EQ(q.file->get_uint("general.quantization_version"), std::optional<uint64_t>(2));
  EXPECT_EQ(q.file->get_string("tokenizer.chat_template"), gen.file->get_string("tokenizer.chat_template"));
  std::printf("  %s: %s\n", ftype.c_str(), st.type_summary.c_str());
}

TEST(Qwen35Requantize, Q4_0EqualsGeneratedFile) { expect_same_as_generated("Q4_0"); }
TEST(Qwen35Requantize, Q4_K_MEqualsGeneratedFile) { expect_same_as_generated("Q4_K_M"); }

TEST(Qwen35Requantize, TiedHeadIsQ6KOrTheOverride) {
  const Image f32 = open(build_qwen35_gguf(tiny("F32")), "f32");
  RequantizeOptions opt;
  opt.ftype = *qwen35_ftype_from_name("Q4_0");
  Image q = open(requantize_qwen35(*f32.file, opt), "q");
  EXPECT_EQ(q.file->find_tensor("token_embd.weight")->type, GgmlType::Q6_K);  // n_embd 256
  opt.output_type = GgmlType::Q5_0;
  q = open(requantize_qwen35(*f32.file, opt), "q");
  EXPECT_EQ(q.file->find_tensor("token_embd.weight")->type, GgmlType::Q5_0);
}

TEST(Qwen35Requantize, RefusesQuantizedInput) {
  const Image q = open(build_qwen35_gguf(tiny("Q8_0")), "q8");
  RequantizeOptions opt;
  opt.ftype = *qwen35_ftype_from_name("Q4_0");
  EXPECT_THROW(requantize_qwen35(*q.file, opt), std::runtime_error);
}

}  // namespace
}  // namespace tandem
