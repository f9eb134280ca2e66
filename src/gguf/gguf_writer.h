// Writes GGUF v3 files: metadata of every value type, then tensor infos, then the
// aligned data section. Used by tandem-gen-model, tandem-trim-draft and the tests
// (which also write deliberately corrupt files with it plus byte patches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/gguf_file.h"

namespace tandem {

class GgufWriter {
 public:
  explicit GgufWriter(uint64_t alignment = 32) : alignment_(alignment) {}

  // Setting a key that is already set replaces its value (keeping its position).
  // If alignment != 32 and no "general.alignment" key is set, to_bytes() adds one (u32).
  void set_u8(const std::string& key, uint8_t v);
  void set_i8(const std::string& key, int8_t v);
  void set_u16(const std::string& key, uint16_t v);
  void set_i16(const std::string& key, int16_t v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_i64(const std::string& key, int64_t v);
  void set_f32(const std::string& key, float v);
  void set_f64(const std::string& key, double v);
  void set_bool(const std::string& key, bool v);
  void set_string(const std::string& key, const std::string& v);
  void set_array_string(const std::string& key, const std::vector<std::string>& v);
  void set_array_i32(const std::string& key, const std::vector<int32_t>& v);
  void set_array_u32(const std::string& key, const std::vector<uint32_t>& v);
  void set_array_f32(const std::string& key, const std::vector<float>& v);
  // Copies any value read from another file (used to rewrite a file with additions).
  void set_value(const std::string& key, const GgufValue& v);

  // ne[0] is the contiguous dimension; data must hold row_bytes(type, ne[0]) * rows bytes.
  // Throws GgufError on a bad shape, a size mismatch or a duplicate name.
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, std::vector<uint8_t> data);

  // Serialize to bytes / to a file (written to path + ".tmp" then renamed). Throws GgufError.
  std::vector<uint8_t> to_bytes() const;
  void write_file(const std::string& path) const;

 private:
  struct Kv { std::string key; GgufValueType type; GgufValueType array_type; std::vector<uint8_t> payload; };
  struct Tensor { std::string name; GgmlType type; std::vector<int64_t> ne; std::vector<uint8_t> data; };
  void set_kv(const std::string& key, GgufValueType type, GgufValueType array_type, std::vector<uint8_t> payload);
  std::vector<uint8_t> header_bytes(uint64_t* data_bytes) const;  // header + kv + tensor infos + padding
  uint64_t alignment_;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace tandem
