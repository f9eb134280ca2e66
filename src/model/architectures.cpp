#include "model/architectures.h"

#include "model/granitehybrid/granite_model.h"
#include "model/layer_pattern.h"
#include "model/lfm2/lfm2_model.h"
#include "model/qwen35/qwen35_hparams.h"
#include "model/qwen35/qwen35_model.h"

namespace tandem {

namespace {

std::string architecture_of(const GgufFile& f) { return f.require_string("general.architecture"); }

[[noreturn]] void refuse(const GgufFile& f, const std::string& arch) {
  std::string list;
  for (const std::string& a : supported_architectures()) list += (list.empty() ? "" : ", ") + a;
  f.fail("has architecture '" + arch + "', which Tandem does not run (supported: " + list + ")");
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> archs = {"qwen35", "lfm2", "granitehybrid"};
  return archs;
}

std::unique_ptr<HybridModel> load_model(const std::string& path, const LoadOptions& opt) {
  std::string arch;
  {
    auto probe = GgufFile::open(path);  // metadata only: the model's load maps it again
    arch = architecture_of(*probe);
    if (arch != "qwen35" && arch != "lfm2" && arch != "granitehybrid") refuse(*probe, arch);
  }
  if (arch == "lfm2") return Lfm2Model::load(path, opt);
  if (arch == "granitehybrid") return GraniteHybridModel::load(path, opt);
  return Qwen35Model::load(path, opt);
}

ModelShape read_model_shape(const GgufFile& file) {
  const std::string arch = architecture_of(file);
  if (arch == "qwen35") {
    Qwen35HParams hp = Qwen35HParams::from_gguf(file);
    hp.n_vocab = vocab_rows(file);  // Qwen35Weights::load reads it the same way
    return hp.shape();
  }
  if (arch == "lfm2") return Lfm2HParams::from_gguf(file).shape();
  if (arch == "granitehybrid") return GraniteHybridHParams::from_gguf(file).shape();
  refuse(file, arch);
}

}  // namespace tandem
