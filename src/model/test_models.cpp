#include "model/test_models.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "model/hybrid_generator.h"
#include "model/qwen35/qwen35_generator.h"

namespace tandem {

std::string tiny_model_filename(const std::string& ftype, bool mtp) {
  return "qwen35-tiny-v" + std::to_string(kTinyModelVersion) + "-" + ftype + (mtp ? "" : "-nomtp") + ".gguf";
}

std::string ensure_tiny_model_in(const std::string& dir, const std::string& ftype, bool mtp) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  namespace fs = std::filesystem;
  const fs::path path = fs::path(dir) / tiny_model_filename(ftype, mtp);
  if (fs::exists(path)) return path.string();
  fs::create_directories(dir);

  GenOptions opt;
  opt.shape = Qwen35Shape::preset_shape("tiny");
  opt.seed = 42;
  opt.ftype = ftype;
  opt.mtp = mtp;
  // Private name per process and call, then an atomic rename over the final name: concurrent
  // test processes produce identical bytes, so whichever rename wins is fine.
  static std::atomic<int> counter{0};
  const fs::path tmp = fs::path(dir) / (path.filename().string() + ".gen" + std::to_string(::getpid()) + "-" +
                                        std::to_string(counter++));
  generate_qwen35_model(opt, tmp.string());
  fs::rename(tmp, path);
  return path.string();
}

std::string ensure_hybrid_model(const std::string& preset, const std::string& ftype) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(TANDEM_BINARY_DIR) / "test-models";
  const fs::path path = dir / (preset + "-v" + std::to_string(kHybridTestModelVersion) + "-" + ftype + ".gguf");
  if (fs::exists(path)) return path.string();
  fs::create_directories(dir);
  HybridGenOptions opt;
  opt.shape = HybridShape::preset_shape(preset);
  opt.seed = 42;
  opt.ftype = ftype;
  static std::atomic<int> counter{0};  // a private name, then an atomic rename (as above)
  const fs::path tmp = dir / (path.filename().string() + ".gen" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  generate_hybrid_model(opt, tmp.string());
  fs::rename(tmp, path);
  return path.string();
}

}  // namespace tandem
