// GGUF v3 writer (see gguf_file.cpp for the layout).
#include "gguf/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tandem {
namespace {

[[noreturn]] void writer_fail(const std::string& what) { throw GgufError("GgufWriter: " + what); }

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

// Serializes one scalar of type t from whatever the variant holds (converted as by static_cast).
void put_scalar(std::vector<uint8_t>& out, GgufValueType t, const GgufValue& v) {
  if (t == GgufValueType::STRING) {
    const auto* s = std::get_if<std::string>(&v.scalar);
    if (!s) writer_fail("string value does not hold a string");
    put_string(out, *s);
    return;
  }
  const auto num = [&](auto tag) {
    using T = decltype(tag);
    return std::visit(
        [](const auto& x) -> T {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, std::string>) {
            writer_fail("numeric value holds a string");
          } else {
            return static_cast<T>(x);
          }
        },
        v.scalar);
  };
  switch (t) {
    case GgufValueType::UINT8: put(out, num(uint8_t{})); return;
    case GgufValueType::INT8: put(out, num(int8_t{})); return;
    case GgufValueType::UINT16: put(out, num(uint16_t{})); return;
    case GgufValueType::INT16: put(out, num(int16_t{})); return;
    case GgufValueType::UINT32: put(out, num(uint32_t{})); return;
    case GgufValueType::INT32: put(out, num(int32_t{})); return;
    case GgufValueType::FLOAT32: put(out, num(float{})); return;
    case GgufValueType::BOOL: put<uint8_t>(out, num(bool{}) ? 1 : 0); return;
    case GgufValueType::UINT64: put(out, num(uint64_t{})); return;
    case GgufValueType::INT64: put(out, num(int64_t{})); return;
    case GgufValueType::FLOAT64: put(out, num(double{})); return;
    default: writer_fail("bad scalar type");
  }
}

void put_array_elem_int(std::vector<uint8_t>& out, GgufValueType t, int64_t x) {
  switch (t) {
    case GgufValueType::UINT8: put(out, static_cast<uint8_t>(x)); return;
    case GgufValueType::INT8: put(out, static_cast<int8_t>(x)); return;
    case GgufValueType::UINT16: put(out, static_cast<uint16_t>(x)); return;
    case GgufValueType::INT16: put(out, static_cast<int16_t>(x)); return;
    case GgufValueType::UINT32: put(out, static_cast<uint32_t>(x)); return;
    case GgufValueType::INT32: put(out, static_cast<int32_t>(x)); return;
    case GgufValueType::BOOL: put<uint8_t>(out, x ? 1 : 0); return;
    case GgufValueType::UINT64: put(out, static_cast<uint64_t>(x)); return;
    case GgufValueType::INT64: put(out, x); return;
    default: writer_fail("bad integer array element type");
  }
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

void GgufWriter::set_kv(const std::string& key, GgufValueType type, GgufValueType array_type,
                        std::vector<uint8_t> payload) {
  if (key.empty()) writer_fail("empty metadata key");
  for (Kv& kv : kvs_) {
    if (kv.key == key) {
      kv.type = type;
      kv.array_type = array_type;
      kv.payload = std::move(payload);
      return;
    }
  }
  kvs_.push_back(Kv{key, type, array_type, std::move(payload)});
}

template <class T>
static std::vector<uint8_t> raw_bytes(T v) {
  std::vector<uint8_t> p;
  put(p, v);
  return p;
}

void GgufWriter::set_u8(const std::string& key, uint8_t v) { set_kv(key, GgufValueType::UINT8, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_i8(const std::string& key, int8_t v) { set_kv(key, GgufValueType::INT8, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_u16(const std::string& key, uint16_t v) { set_kv(key, GgufValueType::UINT16, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_i16(const std::string& key, int16_t v) { set_kv(key, GgufValueType::INT16, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_u32(const std::string& key, uint32_t v) { set_kv(key, GgufValueType::UINT32, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_i32(const std::string& key, int32_t v) { set_kv(key, GgufValueType::INT32, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_u64(const std::string& key, uint64_t v) { set_kv(key, GgufValueType::UINT64, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_i64(const std::string& key, int64_t v) { set_kv(key, GgufValueType::INT64, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_f32(const std::string& key, float v) { set_kv(key, GgufValueType::FLOAT32, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_f64(const std::string& key, double v) { set_kv(key, GgufValueType::FLOAT64, GgufValueType::UINT8, raw_bytes(v)); }
void GgufWriter::set_bool(const std::string& key, bool v) {
  set_kv(key, GgufValueType::BOOL, GgufValueType::UINT8, raw_bytes<uint8_t>(v ? 1 : 0));
}

void GgufWriter::set_string(const std::string& key, const std::string& v) {
  std::vector<uint8_t> p;
  put_string(p, v);
  set_kv(key, GgufValueType::STRING, GgufValueType::UINT8, std::move(p));
}

void GgufWriter::set_array_string(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> p;
  put<uint32_t>(p, static_cast<uint32_t>(GgufValueType::STRING));
  put<uint64_t>(p, v.size());
  for (const auto& s : v) put_string(p, s);
  set_kv(key, GgufValueType::ARRAY, GgufValueType::STRING, std::move(p));
}

template <class T>
static std::vector<uint8_t> array_payload(GgufValueType et, const std::vector<T>& v) {
  std::vector<uint8_t> p;
  put<uint32_t>(p, static_cast<uint32_t>(et));
  put<uint64_t>(p, v.size());
  const size_t at = p.size();
  p.resize(at + v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(p.data() + at, v.data(), v.size() * sizeof(T));
  return p;
}

void GgufWriter::set_array_i32(const std::string& key, const std::vector<int32_t>& v) {
  set_kv(key, GgufValueType::ARRAY, GgufValueType::INT32, array_payload(GgufValueType::INT32, v));
}
void GgufWriter::set_array_u32(const std::string& key, const std::vector<uint32_t>& v) {
  set_kv(key, GgufValueType::ARRAY, GgufValueType::UINT32, array_payload(GgufValueType::UINT32, v));
}
void GgufWriter::set_array_f32(const std::string& key, const std::vector<float>& v) {
  set_kv(key, GgufValueType::ARRAY, GgufValueType::FLOAT32, array_payload(GgufValueType::FLOAT32, v));
}

void GgufWriter::set_value(const std::string& key, const GgufValue& v) {
  std::vector<uint8_t> p;
  if (!v.is_array()) {
    if (static_cast<uint32_t>(v.type) > static_cast<uint32_t>(GgufValueType::FLOAT64)) {
      writer_fail("key '" + key + "': bad value type " + std::to_string(static_cast<uint32_t>(v.type)));
    }
    put_scalar(p, v.type, v);
    set_kv(key, v.type, GgufValueType::UINT8, std::move(p));
    return;
  }
  const GgufValueType et = v.array_type;
  put<uint32_t>(p, static_cast<uint32_t>(et));
  switch (et) {
    case GgufValueType::STRING:
      put<uint64_t>(p, v.strings.size());
      for (const auto& s : v.strings) put_string(p, s);
      break;
    case GgufValueType::FLOAT32:
      put<uint64_t>(p, v.floats.size());
      for (double x : v.floats) put(p, static_cast<float>(x));
      break;
    case GgufValueType::FLOAT64:
      put<uint64_t>(p, v.floats.size());
      for (double x : v.floats) put(p, x);
      break;
    case GgufValueType::ARRAY: writer_fail("key '" + key + "': nested arrays are not supported");
    default:
      if (static_cast<uint32_t>(et) > static_cast<uint32_t>(GgufValueType::FLOAT64)) {
        writer_fail("key '" + key + "': bad array element type " + std::to_string(static_cast<uint32_t>(et)));
      }
      put<uint64_t>(p, v.ints.size());
      for (int64_t x : v.ints) put_array_elem_int(p, et, x);
      break;
  }
  set_kv(key, GgufValueType::ARRAY, et, std::move(p));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, std::vector<uint8_t> data) {
  if (name.empty()) writer_fail("empty tensor name");
  for (const Tensor& t : tensors_) {
    if (t.name == name) writer_fail("duplicate tensor name '" + name + "'");
  }
  const auto tr = ggml_type_traits(static_cast<uint32_t>(type));
  if (!tr) writer_fail("tensor '" + name + "': unsupported type " + std::to_string(static_cast<uint32_t>(type)));
  if (ne.empty() || ne.size() > 4) {
    writer_fail("tensor '" + name + "': " + std::to_string(ne.size()) + " dimensions (expected 1..4)");
  }
  uint64_t rows = 1;
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] < 0) writer_fail("tensor '" + name + "': ne[" + std::to_string(d) + "] is negative");
    if (d > 0) {
      if (ne[d] != 0 && rows > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(ne[d])) {
        writer_fail("tensor '" + name + "': shape overflows");
      }
      rows *= static_cast<uint64_t>(ne[d]);
    }
  }
  if (ne[0] % tr->block_elems != 0) {
    writer_fail("tensor '" + name + "': ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the " + tr->name +
                " block size " + std::to_string(tr->block_elems));
  }
  const uint64_t rb = row_bytes(type, ne[0]);
  if (rows != 0 && rb > std::numeric_limits<uint64_t>::max() / rows) writer_fail("tensor '" + name + "': size overflows");
  if (data.size() != rb * rows) {
    writer_fail("tensor '" + name + "': data has " + std::to_string(data.size()) + " bytes (expected " +
                std::to_string(rb * rows) + ")");
  }
  tensors_.push_back(Tensor{name, type, std::move(ne), std::move(data)});
}

std::vector<uint8_t> GgufWriter::header_bytes(uint64_t* data_bytes) const {
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > 0xFFFFFFFFu) {
    writer_fail("alignment " + std::to_string(alignment_) + " is not a power of two that fits in u32");
  }
  bool has_alignment_key = false;
  for (const Kv& kv : kvs_) has_alignment_key |= kv.key == "general.alignment";
  const bool add_alignment_key = !has_alignment_key && alignment_ != 32;

  std::vector<uint8_t> out;
  out.insert(out.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kvs_.size() + (add_alignment_key ? 1 : 0));
  for (const Kv& kv : kvs_) {
    put_string(out, kv.key);
    put<uint32_t>(out, static_cast<uint32_t>(kv.type));
    out.insert(out.end(), kv.payload.begin(), kv.payload.end());
  }
  if (add_alignment_key) {
    put_string(out, "general.alignment");
    put<uint32_t>(out, static_cast<uint32_t>(GgufValueType::UINT32));
    put<uint32_t>(out, static_cast<uint32_t>(alignment_));
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) put<int64_t>(out, n);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset = align_up(offset + t.data.size(), alignment_);
  }
  out.resize(align_up(out.size(), alignment_), 0);
  *data_bytes = offset;
  return out;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  uint64_t data_bytes = 0;
  std::vector<uint8_t> out = header_bytes(&data_bytes);
  out.reserve(out.size() + data_bytes);
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize(align_up(out.size(), alignment_), 0);
  }
  return out;
}

void GgufWriter::write_file(const std::string& path) const {
  uint64_t data_bytes = 0;
  const std::vector<uint8_t> header = header_bytes(&data_bytes);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw GgufError(tmp + ": cannot create: " + std::strerror(errno));
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  static const uint8_t zeros[256] = {};
  for (const Tensor& t : tensors_) {
    if (!ok) break;
    if (!t.data.empty()) ok = std::fwrite(t.data.data(), 1, t.data.size(), f) == t.data.size();
    size_t pad = static_cast<size_t>(align_up(t.data.size(), alignment_) - t.data.size());
    while (ok && pad > 0) {
      const size_t n = std::min(pad, sizeof zeros);
      ok = std::fwrite(zeros, 1, n, f) == n;
      pad -= n;
    }
  }
  const int write_errno = errno;
  if (std::fclose(f) != 0) ok = false;
  if (!ok) {
    std::remove(tmp.c_str());
    throw GgufError(tmp + ": write failed: " + std::strerror(write_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw GgufError(path + ": cannot rename from " + tmp + ": " + std::strerror(e));
  }
}

}  // namespace tandem
