#include "model/qwen35/trained_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "gguf/gguf_file.h"
#include "model/test_paths.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

GenOptions tiny() {
  GenOptions o;
  o.shape = Qwen35Shape::preset_shape("tiny");
  o.seed = 5;
  return o;
}

// Writes the tiny model's generated values as a trained-weights directory (what tools/train writes).
fs::path write_dir(const std::string& name, const std::function<void(nlohmann::json&)>& edit = {}) {
  const fs::path dir = fs::path(TANDEM_BINARY_DIR) / "test-tmp" / ("trained-" + std::to_string(::getpid())) / name;
  fs::create_directories(dir);
  const GenOptions o = tiny();
  const Qwen35Plan plan = plan_qwen35(o);
  const Qwen35Shape& s = plan.shape;
  nlohmann::json m;
  m["format"] = "tandem-qwen35-weights/1";
  m["name"] = "test-trained";
  m["description"] = "written by trained_weights_test";
  m["shape"] = {{"n_vocab", s.n_vocab}, {"n_embd", s.n_embd}, {"n_layer", s.n_layer}, {"n_ff", s.n_ff},
                {"n_head", s.n_head}, {"n_head_kv", s.n_head_kv}, {"head_dim", s.head_dim}, {"n_rot", s.n_rot},
                {"ssm_d_state", s.ssm_d_state}, {"ssm_n_group", s.ssm_n_group}, {"ssm_dt_rank", s.ssm_dt_rank},
                {"ssm_conv_kernel", s.ssm_conv_kernel}, {"full_attention_interval", s.full_attention_interval},
                {"rms_eps", s.rms_eps}, {"rope_freq_base", s.rope_freq_base}, {"context_length", s.context_length},
                {"tied", s.tied}, {"n_mtp", s.n_mtp}};
  m["tensors"] = nlohmann::json::array();
  for (const auto& t : plan.tensors) {
    const std::vector<float> v = qwen35_tensor_values(t, o.seed);
    const std::string file = t.name + ".f32";
    std::ofstream(dir / file, std::ios::binary)
        .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
    m["tensors"].push_back({{"name", t.name}, {"ne", t.ne}, {"file", file}});
  }
  if (edit) edit(m);
  std::ofstream(dir / "manifest.json") << m.dump(1);
  return dir;
}

// Importing the generator's own values gives the generator's tensors, byte for byte, under the
// manifest's name and description.
TEST(TrainedWeights, ImportEqualsGeneratedTensors) {
  const fs::path dir = write_dir("same");
  const TrainedWeights tw = TrainedWeights::read(dir.string());
  for (const char* type : {"F32", "Q4_0"}) {
    GenOptions o = tw.gen_options();
    o.ftype = type;
    tw.check_matches(plan_qwen35(o));
    const std::vector<uint8_t> a = build_qwen35_gguf(o).to_bytes();
    GenOptions g = tiny();
    g.ftype = type;
    const std::vector<uint8_t> b = build_qwen35_gguf(g).to_bytes();
    auto fa = GgufFile::from_memory(a.data(), a.size(), "imported");
    auto fb = GgufFile::from_memory(b.data(), b.size(), "generated");
    ASSERT_EQ(fa->tensors().size(), fb->tensors().size());
    for (size_t i = 0; i < fa->tensors().size(); ++i) {
      const auto& x = fa->tensors()[i];
      const auto& y = fb->tensors()[i];
      ASSERT_EQ(x.name, y.name);
      EXPECT_EQ(x.type, y.type);
      ASSERT_EQ(x.nbytes, y.nbytes);
      EXPECT_EQ(std::memcmp(x.data, y.data, x.nbytes), 0) << type << " " << x.name;
    }
    EXPECT_EQ(fa->get_string("general.name"), std::optional<std::string>("test-trained"));
    EXPECT_EQ(fa->get_string("general.description"), std::optional<std::string>("written by trained_weights_test"));
  }
}

TEST(TrainedWeights, RefusesExtraMissingOrMisshapenTensors) {
  auto refused = [](const fs::path& dir) {
    const TrainedWeights tw = TrainedWeights::read(dir.string());
    GenOptions o = tw.gen_options();
    EXPECT_THROW(tw.check_matches(plan_qwen35(o)), std::runtime_error) << dir;
  };
  // An extra tensor (as the two-tensor draft head was): llama.cpp would refuse the file.
  refused(write_dir("extra", [](nlohmann::json& m) {
    m["tensors"].push_back({{"name", "blk.4.nextn.shared_head_head.weight"}, {"ne", {256, 354}}, {"file", "x.f32"}});
  }));
  refused(write_dir("missing", [](nlohmann::json& m) { m["tensors"].erase(m["tensors"].begin()); }));
  refused(write_dir("shape", [](nlohmann::json& m) { m["tensors"][0]["ne"] = {7}; }));
  // A tensor file of the wrong size is refused when read.
  const fs::path dir = write_dir("short");
  fs::resize_file(dir / "output_norm.weight.f32", 12);
  const TrainedWeights tw = TrainedWeights::read(dir.string());
  EXPECT_THROW(build_qwen35_gguf(tw.gen_options()), std::runtime_error);
  // A manifest without the format tag.
  EXPECT_THROW(TrainedWeights::read(write_dir("format", [](nlohmann::json& m) { m["format"] = "x"; }).string()),
               std::runtime_error);
}

}  // namespace
}  // namespace tandem
