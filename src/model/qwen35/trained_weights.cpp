#include "model/qwen35/trained_weights.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace tandem {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

int64_t count(const std::vector<int64_t>& ne) {
  int64_t n = 1;
  for (int64_t v : ne) n *= v;
  return n;
}

std::string ne_text(const std::vector<int64_t>& ne) {
  std::string s = "{";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "}";
}

}  // namespace

TrainedWeights TrainedWeights::read(const std::string& dir) {
  const fs::path manifest = fs::path(dir) / "manifest.json";
  std::ifstream in(manifest);
  if (!in) throw std::runtime_error("cannot open '" + manifest.string() + "' (a trained-weights directory from tools/train)");
  Json j;
  try {
    j = Json::parse(in);
  } catch (const Json::exception& e) {
    throw std::runtime_error(manifest.string() + ": not valid JSON: " + e.what());
  }
  auto bad = [&](const std::string& what) { return std::runtime_error(manifest.string() + ": " + what); };
  if (!j.is_object() || j.value("format", "") != "tandem-qwen35-weights/1")
    throw bad("\"format\" must be \"tandem-qwen35-weights/1\"");
  if (!j.contains("shape") || !j["shape"].is_object()) throw bad("missing object \"shape\"");
  if (!j.contains("tensors") || !j["tensors"].is_array()) throw bad("missing array \"tensors\"");

  TrainedWeights w;
  w.dir_ = dir;
  w.name_ = j.value("name", "");
  w.description_ = j.value("description", "");
  const Json& s = j["shape"];
  auto i64 = [&](const char* key) -> int64_t {
    if (!s.contains(key) || !s[key].is_number_integer()) throw bad(std::string("shape.") + key + ": integer required");
    return s[key].get<int64_t>();
  };
  auto f32 = [&](const char* key) -> float {
    if (!s.contains(key) || !s[key].is_number()) throw bad(std::string("shape.") + key + ": number required");
    return s[key].get<float>();
  };
  Qwen35Shape& sh = w.shape_;
  sh.preset = "trained";
  sh.n_vocab = i64("n_vocab");
  sh.n_embd = i64("n_embd");
  sh.n_layer = i64("n_layer");
  sh.n_ff = i64("n_ff");
  sh.n_head = i64("n_head");
  sh.n_head_kv = i64("n_head_kv");
  sh.head_dim = i64("head_dim");
  sh.n_rot = i64("n_rot");
  sh.ssm_d_state = i64("ssm_d_state");
  sh.ssm_n_group = i64("ssm_n_group");
  sh.ssm_dt_rank = i64("ssm_dt_rank");
  sh.ssm_conv_kernel = i64("ssm_conv_kernel");
  sh.full_attention_interval = i64("full_attention_interval");
  sh.rms_eps = f32("rms_eps");
  sh.rope_freq_base = f32("rope_freq_base");
  sh.context_length = static_cast<uint32_t>(i64("context_length"));
  if (!s.contains("tied") || !s["tied"].is_boolean()) throw bad("shape.tied: boolean required");
  sh.tied = s["tied"].get<bool>();
  sh.n_mtp = static_cast<int>(i64("n_mtp"));
  sh.rope_sections = scaled_rope_sections(sh.n_rot);
  try {
    sh.validate();
  } catch (const std::invalid_argument& e) {
    throw bad(e.what());
  }

  for (const Json& t : j["tensors"]) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("file") ||
        !t["file"].is_string() || !t.contains("ne") || !t["ne"].is_array())
      throw bad("every tensors[] entry needs \"name\", \"ne\" and \"file\"");
    Tensor x;
    for (const Json& v : t["ne"]) {
      if (!v.is_number_integer() || v.get<int64_t>() <= 0) throw bad("tensor " + t["name"].get<std::string>() + ": bad ne");
      x.ne.push_back(v.get<int64_t>());
    }
    x.file = t["file"].get<std::string>();
    if (!w.tensors_.emplace(t["name"].get<std::string>(), std::move(x)).second)
      throw bad("tensor " + t["name"].get<std::string>() + " listed twice");
  }
  return w;
}

void TrainedWeights::check_matches(const Qwen35Plan& plan) const {
  std::map<std::string, const Qwen35TensorPlan*> planned;
  for (const auto& t : plan.tensors) planned[t.name] = &t;
  for (const auto& [name, t] : tensors_) {
    auto it = planned.find(name);
    if (it == planned.end())
      throw std::runtime_error(dir_ + ": tensor " + name + " is not part of a qwen35 model of this shape "
                               "(llama.cpp refuses files with tensors its model does not create)");
    if (it->second->ne != t.ne)
      throw std::runtime_error(dir_ + ": tensor " + name + " has ne " + ne_text(t.ne) + ", the shape needs " +
                               ne_text(it->second->ne));
  }
  for (const auto& t : plan.tensors)
    if (!tensors_.count(t.name)) throw std::runtime_error(dir_ + ": tensor " + t.name + " is missing");
}

std::vector<float> TrainedWeights::values(const Qwen35TensorPlan& t) const {
  auto it = tensors_.find(t.name);
  if (it == tensors_.end()) throw std::runtime_error(dir_ + ": tensor " + t.name + " is missing");
  const fs::path path = fs::path(dir_) / it->second.file;
  const int64_t n = count(t.ne);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw std::runtime_error("cannot read '" + path.string() + "' (tensor " + t.name + ")");
  if (size != static_cast<uintmax_t>(n) * sizeof(float))
    throw std::runtime_error(path.string() + ": " + std::to_string(size) + " bytes, tensor " + t.name + " needs " +
                             std::to_string(n * 4) + " (F32, ne " + ne_text(t.ne) + ")");
  std::vector<float> v(static_cast<size_t>(n));
  std::ifstream in(path, std::ios::binary);
  // The files are little-endian F32 and so is every host Tandem builds for (x86-64, Arm64).
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
  if (!in) throw std::runtime_error("cannot read '" + path.string() + "'");
  return v;
}

GenOptions TrainedWeights::gen_options() const {
  GenOptions o;
  o.shape = shape_;
  o.n_vocab = shape_.n_vocab;
  o.mtp = shape_.n_mtp > 0;
  o.name = name_;
  o.description = description_.empty() ? "trained weights (tools/train)" : description_;
  o.values = [this](const Qwen35TensorPlan& t) { return values(t); };
  return o;
}

}  // namespace tandem
