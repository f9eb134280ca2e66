#include "model/model_fingerprint.h"

#include <algorithm>
#include <variant>

#include "gguf/gguf_file.h"
#include "runtime/binary_io.h"

namespace tandem {

uint64_t model_fingerprint(const GgufFile& file) {
  Checksum64 h;
  const auto u64 = [&](uint64_t v) { h.update(&v, sizeof v); };
  const auto str = [&](const std::string& s) {
    u64(s.size());
    h.update(s.data(), s.size());
  };
  u64(file.file_size());
  for (const auto& [key, v] : file.metadata()) {
    str(key);
    u64(static_cast<uint64_t>(v.type));
    if (v.is_array()) {
      u64(v.array_size());  // the arrays are the tokenizer's: their lengths, not their contents
      continue;
    }
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) str(x);
          else h.update(&x, sizeof x);
        },
        v.scalar);
  }
  constexpr size_t kSample = 256;
  for (const GgufTensorInfo& t : file.tensors()) {
    str(t.name);
    u64(static_cast<uint64_t>(t.type));
    h.update(t.ne, sizeof t.ne);
    u64(t.offset);
    if (!t.data || t.nbytes == 0) continue;
    const size_t n = std::min(kSample, t.nbytes);
    h.update(t.data, n);
    h.update(t.data + (t.nbytes - n) / 2, n);
    h.update(t.data + t.nbytes - n, n);
  }
  return h.value();
}

}  // namespace tandem
