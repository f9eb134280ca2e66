// Binds GGUF tensors by name to the forms the model code uses, checking each shape against what
// the hyper-parameters say (errors name the file, the tensor and both shapes). Matrices stay in
// the mapping in their storage type; small tensors are converted to float once.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/quants.h"
#include "kernels/matmul/matmul.h"

namespace tandem {

using kernels::WeightMatrix;

// "[ne0, ne1, ...]" of a tensor, for error messages.
inline std::string tensor_shape_str(const GgufTensorInfo& t) {
  std::ostringstream s;
  s << "[";
  for (int i = 0; i < t.n_dims; ++i) s << (i ? ", " : "") << t.ne[i];
  s << "]";
  return s.str();
}

class TensorBinder {
 public:
  explicit TensorBinder(const GgufFile& f) : f_(f) {}

  const GgufTensorInfo& get(const std::string& name, std::vector<int64_t> ne) const {
    const GgufTensorInfo* t = f_.find_tensor(name);
    if (!t) f_.fail("missing required tensor '" + name + "'");
    check_shape(*t, ne);
    used_.push_back(t);
    return *t;
  }
  const GgufTensorInfo* find(const std::string& name, std::vector<int64_t> ne) const {
    const GgufTensorInfo* t = f_.find_tensor(name);
    if (t) {
      check_shape(*t, ne);
      used_.push_back(t);
    }
    return t;
  }
  // Refuses a file with a tensor nothing bound (a bias, a .scale, an extra head): the model would
  // silently compute other numbers than llama.cpp does with it. `model` names what was loading.
  void refuse_unused(const std::string& model) const {
    for (const GgufTensorInfo& t : f_.tensors()) {
      bool used = false;
      for (const GgufTensorInfo* u : used_) used = used || u == &t;
      if (!used)
        f_.fail("tensor '" + t.name + "' is not part of " + model +
                " as Tandem computes it (an unsupported variant: refusing rather than ignoring it)");
    }
  }

  WeightMatrix matrix(const std::string& name, int64_t cols, int64_t rows) const {
    return to_matrix(get(name, {cols, rows}));
  }
  static WeightMatrix to_matrix(const GgufTensorInfo& t) {
    WeightMatrix m;
    m.type = t.type;
    m.cols = t.ne[0];
    m.rows = t.ne[1];
    m.data = t.data;
    m.row_stride = row_bytes(t.type, t.ne[0]);
    return m;
  }
  std::vector<float> floats(const std::string& name, std::vector<int64_t> ne) const {
    return to_floats(get(name, ne));
  }
  // floats(), accepting the tensor with its trailing dimensions of 1 dropped.
  std::vector<float> floats_padded(const std::string& name, std::vector<int64_t> ne) const {
    allow_dropped_ones_ = true;
    const GgufTensorInfo* t = nullptr;
    try {
      t = &get(name, ne);
    } catch (...) {
      allow_dropped_ones_ = false;
      throw;
    }
    allow_dropped_ones_ = false;
    return to_floats(*t);
  }
  static std::vector<float> to_floats(const GgufTensorInfo& t) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    dequantize_row(t.type, t.data, v.data(), t.n_elements());
    return v;
  }

 private:
  void check_shape(const GgufTensorInfo& t, const std::vector<int64_t>& ne) const {
    bool ok = t.n_dims == static_cast<int>(ne.size());
    for (size_t i = 0; ok && i < ne.size(); ++i) ok = t.ne[i] == ne[i];
    // Trailing dimensions of 1 dropped ([512] for [512, 1]), as llama-quantize writes Mamba2's
    // {d_inner/ng, ng} norm for one group; only where the caller allows it (get_padded).
    if (!ok && allow_dropped_ones_ && t.n_dims < static_cast<int>(ne.size())) {
      ok = true;
      for (size_t i = 0; ok && i < ne.size(); ++i) ok = t.ne[i] == (static_cast<int>(i) < t.n_dims ? ne[i] : 1) && (static_cast<int>(i) < t.n_dims || ne[i] == 1);
    }
    if (!ok) {
      std::ostringstream want;
      want << "[";
      for (size_t i = 0; i < ne.size(); ++i) want << (i ? ", " : "") << ne[i];
      want << "]";
      f_.fail("tensor '" + t.name + "' has shape " + tensor_shape_str(t) + ": expected " + want.str() +
              " from the hyper-parameters");
    }
  }
  const GgufFile& f_;
  mutable std::vector<const GgufTensorInfo*> used_;
  mutable bool allow_dropped_ones_ = false;
};


}  // namespace tandem
