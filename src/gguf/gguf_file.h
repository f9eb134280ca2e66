// Read-only view of a GGUF v3 file (memory-mapped).
//
// open() validates everything a later reader relies on: magic, version, counts,
// string lengths, value types, tensor types, shapes, offsets and alignment, and
// that every tensor's data lies inside the file. After a successful open, any
// tensor's data pointer can be read for nbytes without further checks.
// Every failure throws GgufError naming the file, the key or tensor, and what was
// expected. Never UB on malformed input (the fuzz harness in fuzz/ checks this).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/gguf_error.h"

namespace tandem {

// GGUF metadata value types (ids as in the file format).
enum class GgufValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);

// One metadata value. Scalars are widened into the variant; arrays keep their element
// type. Strings are copied out of the mapping (metadata is small except the vocab).
struct GgufValue {
  GgufValueType type = GgufValueType::UINT32;
  GgufValueType array_type = GgufValueType::UINT32;  // element type when type == ARRAY
  std::variant<uint64_t, int64_t, double, bool, std::string> scalar;  // for non-array values
  std::vector<std::string> strings;  // ARRAY of STRING
  std::vector<int64_t> ints;         // ARRAY of any integer type or BOOL
  std::vector<double> floats;        // ARRAY of FLOAT32/FLOAT64

  bool is_array() const { return type == GgufValueType::ARRAY; }
  size_t array_size() const;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type;
  int n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the contiguous dimension; each >= 0 (0 = empty tensor,
                                 // as ggml allows); the product of the nonzero ne fits in int64
  uint64_t offset = 0;          // relative to the data section
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  // Maps and validates the file. Throws GgufError.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Parses an in-memory image (no copy; the buffer must outlive the object). Used by the fuzzer.
  static std::unique_ptr<GgufFile> from_memory(const uint8_t* data, size_t size, std::string name);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t file_size() const { return size_; }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters. Missing key → nullopt for get_*, GgufError for require_*.
  // A present key of the wrong type is always a GgufError ("key K: expected u32, found string").
  // Integer getters accept any integer type whose value fits.
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  uint64_t require_uint(std::string_view key) const;
  double require_float(std::string_view key) const;
  std::string require_string(std::string_view key) const;
  // Array getters: nullptr if the key is missing, GgufError if it is not an array of that kind.
  // Integer arrays (any integer type or BOOL) are widened to int64; f32/f64 arrays to double.
  const std::vector<int64_t>* get_int_array(std::string_view key) const;
  const std::vector<double>* get_float_array(std::string_view key) const;
  const std::vector<std::string>* get_string_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Tells the kernel that the mapped bytes [p, p + n) are not needed for now (they were
  // copied elsewhere, e.g. packed weights): their pages leave this process's resident set
  // and are read back from the file if touched again. Only whole pages inside the range;
  // a no-op for in-memory images. Contents never change.
  void release_pages(const uint8_t* p, size_t n) const;

  // Builds an error message prefixed with the file name.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  GgufFile() = default;
  void parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
  std::map<std::string, size_t, std::less<>> kv_index_;
};

}  // namespace tandem
