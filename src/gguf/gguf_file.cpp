// GGUF reader: maps the file and validates every field a later reader relies on.
//
// Layout (little-endian, versions 2 and 3):
//   u32 magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv × { string key | u32 value_type | value }
//   n_tensors × { string name | u32 n_dims | u64 ne[n_dims] | u32 type | u64 offset }
//   padding to general.alignment (default 32) | data section (tensor offsets are relative to it)
// string = u64 length + bytes (no terminator); array value = u32 elem_type | u64 count | elements.
#include "gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>

namespace tandem {
namespace {

constexpr uint64_t kHeaderBytes = 24;           // magic, version, n_tensors, n_kv
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;     // empty key, type, smallest value
constexpr uint64_t kMinTensorBytes = 8 + 4 + 8 + 4 + 8;  // empty name, n_dims, one ne, type, offset
constexpr uint32_t kMaxValueType = static_cast<uint32_t>(GgufValueType::FLOAT64);
constexpr size_t kMaxShownName = 200;

// A name for messages: quoted, truncated, non-printable bytes escaped.
std::string quoted(std::string_view s) {
  std::string out = "'";
  const size_t n = std::min(s.size(), kMaxShownName);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > n) out += "...";
  out += "'";
  return out;
}

size_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16:
    case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
    case GgufValueType::FLOAT64: return 8;
    case GgufValueType::STRING:
    case GgufValueType::ARRAY: return 0;
  }
  return 0;
}

bool is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::UINT16:
    case GgufValueType::INT16:
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::UINT64:
    case GgufValueType::INT64: return true;
    default: return false;
  }
}

bool is_float(GgufValueType t) { return t == GgufValueType::FLOAT32 || t == GgufValueType::FLOAT64; }

std::string describe(const GgufValue& v) {
  if (v.is_array()) return std::string("array of ") + gguf_value_type_name(v.array_type);
  std::string s = gguf_value_type_name(v.type);
  if (const auto* u = std::get_if<uint64_t>(&v.scalar)) s += " " + std::to_string(*u);
  if (const auto* i = std::get_if<int64_t>(&v.scalar)) s += " " + std::to_string(*i);
  return s;
}

std::string supported_type_list() {
  std::string s;
  for (uint32_t id = 0; id < 64; ++id) {
    if (auto t = ggml_type_traits(id)) {
      if (!s.empty()) s += ", ";
      s += t->name;
    }
  }
  return s;
}

// Bounds-checked little-endian reader over the file image.
class Cursor {
 public:
  Cursor(const GgufFile& f, const uint8_t* base, size_t size) : f_(f), base_(base), size_(size) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  void need(uint64_t n, const std::string& what) const {
    if (n > remaining()) {
      f_.fail("truncated file: " + what + " [offset " + std::to_string(pos_) + ", " + std::to_string(n) +
              " bytes] extends past end of file (file has " + std::to_string(size_) + " bytes)");
    }
  }

  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const std::string& what) {
    const size_t at = pos_;
    const uint64_t len = read<uint64_t>(what + " length");
    if (len > remaining()) {
      f_.fail(what + ": string length " + std::to_string(len) + " at offset " + std::to_string(at) +
              " extends past end of file (expected at most " + std::to_string(remaining()) +
              " bytes; file has " + std::to_string(size_) + " bytes)");
    }
    std::string s(reinterpret_cast<const char*>(base_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

 private:
  const GgufFile& f_;
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
};

GgufValueType read_value_type(Cursor& c, const GgufFile& f, const std::string& what) {
  const uint32_t raw = c.read<uint32_t>(what);
  if (raw > kMaxValueType) {
    f.fail(what + ": unknown value type " + std::to_string(raw) + " (expected 0..12)");
  }
  return static_cast<GgufValueType>(raw);
}

// One scalar of a numeric/bool type, widened into the member of its kind.
struct Number {
  uint64_t u = 0;
  int64_t i = 0;
  double d = 0;
  bool b = false;
};
Number read_number(Cursor& c, GgufValueType t, const std::string& what) {
  Number n;
  switch (t) {
    case GgufValueType::UINT8: n.u = c.read<uint8_t>(what); break;
    case GgufValueType::INT8: n.i = c.read<int8_t>(what); break;
    case GgufValueType::UINT16: n.u = c.read<uint16_t>(what); break;
    case GgufValueType::INT16: n.i = c.read<int16_t>(what); break;
    case GgufValueType::UINT32: n.u = c.read<uint32_t>(what); break;
    case GgufValueType::INT32: n.i = c.read<int32_t>(what); break;
    case GgufValueType::UINT64: n.u = c.read<uint64_t>(what); break;
    case GgufValueType::INT64: n.i = c.read<int64_t>(what); break;
    case GgufValueType::FLOAT32: n.d = c.read<float>(what); break;
    case GgufValueType::FLOAT64: n.d = c.read<double>(what); break;
    case GgufValueType::BOOL: n.b = c.read<uint8_t>(what) != 0; break;
    default: break;
  }
  return n;
}

bool is_unsigned(GgufValueType t) {
  return t == GgufValueType::UINT8 || t == GgufValueType::UINT16 || t == GgufValueType::UINT32 ||
         t == GgufValueType::UINT64;
}

GgufValue read_value(Cursor& c, const GgufFile& f, GgufValueType type, const std::string& what) {
  GgufValue v;
  v.type = type;
  if (type == GgufValueType::STRING) {
    v.scalar = c.read_string(what);
    return v;
  }
  if (type != GgufValueType::ARRAY) {
    const Number x = read_number(c, type, what);
    if (type == GgufValueType::BOOL) {
      v.scalar = x.b;
    } else if (is_float(type)) {
      v.scalar = x.d;
    } else if (is_unsigned(type)) {
      v.scalar = x.u;
    } else {
      v.scalar = x.i;
    }
    return v;
  }

  const GgufValueType et = read_value_type(c, f, what + " array element type");
  v.array_type = et;
  if (et == GgufValueType::ARRAY) {
    f.fail(what + ": nested array (expected an array of scalars or strings)");
  }
  const size_t count_at = c.pos();
  const uint64_t count = c.read<uint64_t>(what + " array length");
  const uint64_t min_elem = et == GgufValueType::STRING ? 8 : scalar_size(et);
  if (count > c.remaining() / min_elem) {
    f.fail(what + ": array of " + std::to_string(count) + " " + gguf_value_type_name(et) + " elements at offset " +
           std::to_string(count_at) + " extends past end of file (expected at most " +
           std::to_string(c.remaining() / min_elem) + " elements in the remaining " + std::to_string(c.remaining()) +
           " bytes)");
  }
  const size_t n = static_cast<size_t>(count);
  if (et == GgufValueType::STRING) {
    v.strings.reserve(n);
    for (size_t k = 0; k < n; ++k) v.strings.push_back(c.read_string(what + "[" + std::to_string(k) + "]"));
  } else if (is_float(et)) {
    v.floats.resize(n);
    for (size_t k = 0; k < n; ++k) {
      v.floats[k] = et == GgufValueType::FLOAT32 ? static_cast<double>(c.read<float>(what)) : c.read<double>(what);
    }
  } else {
    v.ints.resize(n);
    for (size_t k = 0; k < n; ++k) {
      const Number x = read_number(c, et, what);
      // u64 values above INT64_MAX keep their bit pattern.
      v.ints[k] = et == GgufValueType::BOOL ? (x.b ? 1 : 0) : is_unsigned(et) ? static_cast<int64_t>(x.u) : x.i;
    }
  }
  return v;
}

}  // namespace

const char* gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: return "u8";
    case GgufValueType::INT8: return "i8";
    case GgufValueType::UINT16: return "u16";
    case GgufValueType::INT16: return "i16";
    case GgufValueType::UINT32: return "u32";
    case GgufValueType::INT32: return "i32";
    case GgufValueType::FLOAT32: return "f32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::UINT64: return "u64";
    case GgufValueType::INT64: return "i64";
    case GgufValueType::FLOAT64: return "f64";
  }
  return "unknown";
}

size_t GgufValue::array_size() const {
  if (!is_array()) return 0;
  if (array_type == GgufValueType::STRING) return strings.size();
  if (is_float(array_type)) return floats.size();
  return ints.size();
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) f->fail(std::string("cannot open: ") + std::strerror(errno) + " (expected a readable GGUF file)");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    f->fail(std::string("cannot stat: ") + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    f->fail("not a regular file (expected a GGUF file)");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      f->fail(std::string("cannot mmap ") + std::to_string(size) + " bytes: " + std::strerror(e));
    }
    f->base_ = static_cast<const uint8_t*>(p);
    f->mapped_ = true;
  }
  ::close(fd);  // the mapping stays valid
  f->size_ = size;
  f->parse();
  return f;
}

std::unique_ptr<GgufFile> GgufFile::from_memory(const uint8_t* data, size_t size, std::string name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = std::move(name);
  f->base_ = data;
  f->size_ = data ? size : 0;
  f->parse();
  return f;
}

void GgufFile::release_pages(const uint8_t* p, size_t n) const {
  if (!mapped_ || p < base_ || p + n > base_ + size_) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  // A private read-only file mapping never written to: dropping its pages loses nothing.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

GgufFile::~GgufFile() {
  if (mapped_ && base_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

void GgufFile::fail(const std::string& what) const { throw GgufError(path_ + ": " + what); }

void GgufFile::parse() {
  if (size_ == 0) fail("empty file (expected a GGUF header: magic \"GGUF\", version, tensor and key counts)");
  Cursor c(*this, base_, size_);

  // Header.
  if (size_ < 4 || std::memcmp(base_, "GGUF", 4) != 0) {
    std::string got;
    for (size_t i = 0; i < std::min<size_t>(size_, 4); ++i) {
      static const char* hex = "0123456789abcdef";
      got += hex[base_[i] >> 4];
      got += hex[base_[i] & 15];
    }
    fail("bad magic 0x" + got + " (expected \"GGUF\" = 0x47475546)");
  }
  c.read<uint32_t>("magic");
  version_ = c.read<uint32_t>("header version");
  if (version_ != 2 && version_ != 3) {
    if (version_ == 0x02000000u || version_ == 0x03000000u) {
      fail("unsupported big-endian GGUF (version field " + std::to_string(version_) +
           "; expected a little-endian file, version 3)");
    }
    fail("unsupported GGUF version " + std::to_string(version_) + " (expected version 3; 2 is also accepted)");
  }
  const uint64_t n_tensors = c.read<uint64_t>("header tensor count");
  const uint64_t n_kv = c.read<uint64_t>("header metadata key count");
  if (n_kv > c.remaining() / kMinKvBytes) {
    fail("metadata key count " + std::to_string(n_kv) + " is impossible for a file of " + std::to_string(size_) +
         " bytes (expected at most " + std::to_string(c.remaining() / kMinKvBytes) + ")");
  }
  if (n_tensors > c.remaining() / kMinTensorBytes) {
    fail("tensor count " + std::to_string(n_tensors) + " is impossible for a file of " + std::to_string(size_) +
         " bytes (expected at most " + std::to_string(c.remaining() / kMinTensorBytes) + ")");
  }

  // Metadata.
  kv_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string("metadata key #" + std::to_string(i));
    const std::string what = "key " + quoted(key);
    if (key.empty()) fail("metadata key #" + std::to_string(i) + ": empty key (expected a non-empty name)");
    if (kv_index_.count(key)) fail("duplicate metadata " + what + " (expected each key once)");
    const GgufValueType t = read_value_type(c, *this, what + " value type");
    GgufValue v = read_value(c, *this, t, what + " value");
    kv_index_.emplace(key, kv_.size());
    kv_.emplace_back(std::move(key), std::move(v));
  }

  alignment_ = 32;
  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufValueType::UINT32) {
      fail("key 'general.alignment': expected u32, found " + describe(*a));
    }
    const uint64_t al = std::get<uint64_t>(a->scalar);
    if (al == 0 || (al & (al - 1)) != 0) {
      fail("key 'general.alignment': alignment " + std::to_string(al) +
           " is not a power of two (expected a nonzero power of two, e.g. 32)");
    }
    alignment_ = al;
  }

  // Tensor infos.
  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo ti;
    ti.name = c.read_string("tensor info #" + std::to_string(i) + " name");
    const std::string what = "tensor " + quoted(ti.name);
    if (ti.name.empty()) fail("tensor info #" + std::to_string(i) + ": empty tensor name (expected a non-empty name)");
    if (tensor_index_.count(ti.name)) {
      fail("duplicate tensor name " + quoted(ti.name) + " (tensor #" + std::to_string(tensor_index_[ti.name]) +
           " and #" + std::to_string(i) + "; expected unique names)");
    }
    const uint32_t n_dims = c.read<uint32_t>(what + " n_dims");
    if (n_dims < 1 || n_dims > 4) {
      fail(what + ": n_dims " + std::to_string(n_dims) + " out of range (expected 1..4)");
    }
    ti.n_dims = static_cast<int>(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      const int64_t ne = c.read<int64_t>(what + " ne[" + std::to_string(d) + "]");
      if (ne < 0) {
        fail(what + ": ne[" + std::to_string(d) + "] = " + std::to_string(ne) + " is negative (expected >= 0)");
      }
      ti.ne[d] = ne;
    }
    std::string shape = "[";
    for (int d = 0; d < ti.n_dims; ++d) shape += (d ? ", " : "") + std::to_string(ti.ne[d]);
    shape += "]";
    // The product of the dimensions, zeros counted as 1, must fit in int64: then n_elements(),
    // n_rows() and every partial product are safe even for empty tensors.
    int64_t prod = 1;
    for (int d = 0; d < 4; ++d) {
      const int64_t f = ti.ne[d] != 0 ? ti.ne[d] : 1;
      if (prod > std::numeric_limits<int64_t>::max() / f) {
        fail(what + ": element count of shape " + shape + " overflows int64 (expected at most 2^63-1 elements)");
      }
      prod *= f;
    }
    const uint32_t raw_type = c.read<uint32_t>(what + " type");
    const auto tr = ggml_type_traits(raw_type);
    if (!tr) {
      const char* known = ggml_known_type_name(raw_type);
      if (known) {
        fail(what + ": unsupported tensor type " + std::to_string(raw_type) + " (" + known + ") (expected one of " +
             supported_type_list() + ")");
      }
      fail(what + ": unknown tensor type " + std::to_string(raw_type) + " (expected one of " + supported_type_list() +
           ")");
    }
    ti.type = tr->type;
    if (ti.ne[0] % tr->block_elems != 0) {
      fail(what + ": ne[0] = " + std::to_string(ti.ne[0]) + " is not a multiple of the " + tr->name + " block size " +
           std::to_string(tr->block_elems) + " (shape " + shape + ")");
    }
    const uint64_t blocks = static_cast<uint64_t>(ti.ne[0] / tr->block_elems);
    const uint64_t rows = static_cast<uint64_t>(ti.n_rows());
    if (blocks > std::numeric_limits<uint64_t>::max() / tr->block_bytes) {
      fail(what + ": byte size of shape " + shape + " overflows (expected a tensor that fits in the file)");
    }
    const uint64_t rb = blocks * tr->block_bytes;
    if (rows != 0 && rb > std::numeric_limits<uint64_t>::max() / rows) {
      fail(what + ": byte size of shape " + shape + " overflows (expected a tensor that fits in the file)");
    }
    const uint64_t nbytes = rb * rows;
    ti.offset = c.read<uint64_t>(what + " data offset");
    if (ti.offset % alignment_ != 0) {
      fail(what + ": data offset " + std::to_string(ti.offset) + " is not a multiple of the alignment " +
           std::to_string(alignment_) + " (misaligned; expected offsets aligned to general.alignment)");
    }
    if (nbytes > std::numeric_limits<size_t>::max()) fail(what + ": " + std::to_string(nbytes) + " bytes overflow size_t");
    ti.nbytes = static_cast<size_t>(nbytes);
    tensor_index_.emplace(ti.name, tensors_.size());
    tensors_.push_back(std::move(ti));
  }

  // Data section: starts at the first aligned offset after the tensor infos.
  const uint64_t infos_end = c.pos();
  const uint64_t data_start = (infos_end + alignment_ - 1) / alignment_ * alignment_;
  for (GgufTensorInfo& ti : tensors_) {
    const uint64_t avail = data_start <= size_ ? size_ - data_start : 0;
    if (data_start > size_ || ti.offset > avail || ti.nbytes > avail - ti.offset) {
      // Report the absolute file offset so it compares with the file size directly.
      const uint64_t abs = ti.offset <= std::numeric_limits<uint64_t>::max() - data_start ? data_start + ti.offset
                                                                                          : ti.offset;
      fail("tensor " + quoted(ti.name) + ": data [offset " + std::to_string(abs) + ", " + std::to_string(ti.nbytes) +
           " bytes] extends past end of file (file has " + std::to_string(size_) + " bytes; data section starts at " +
           std::to_string(data_start) + ")");
    }
    ti.data = base_ + data_start + ti.offset;
  }

  // Tensors must not overlap.
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors_[a].offset != tensors_[b].offset ? tensors_[a].offset < tensors_[b].offset : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& p = tensors_[order[k - 1]];
    const GgufTensorInfo& q = tensors_[order[k]];
    if (p.nbytes != 0 && q.nbytes != 0 && p.offset + p.nbytes > q.offset) {
      fail("tensor " + quoted(q.name) + ": data [offset " + std::to_string(data_start + q.offset) + ", " +
           std::to_string(q.nbytes) + " bytes] overlaps tensor " + quoted(p.name) + " [offset " +
           std::to_string(data_start + p.offset) + ", " + std::to_string(p.nbytes) +
           " bytes] (expected disjoint tensor data)");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Lookups and typed getters

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() && is_integer(v->type)) {
    if (const auto* u = std::get_if<uint64_t>(&v->scalar)) return *u;
    if (const auto* i = std::get_if<int64_t>(&v->scalar); i && *i >= 0) return static_cast<uint64_t>(*i);
  }
  fail("key " + quoted(key) + ": expected unsigned integer, found " + describe(*v));
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() && is_integer(v->type)) {
    if (const auto* i = std::get_if<int64_t>(&v->scalar)) return *i;
    if (const auto* u = std::get_if<uint64_t>(&v->scalar);
        u && *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(*u);
    }
  }
  fail("key " + quoted(key) + ": expected integer (fitting in i64), found " + describe(*v));
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() && is_float(v->type)) return std::get<double>(v->scalar);
  fail("key " + quoted(key) + ": expected f32 or f64, found " + describe(*v));
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() && v->type == GgufValueType::BOOL) return std::get<bool>(v->scalar);
  fail("key " + quoted(key) + ": expected bool, found " + describe(*v));
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() && v->type == GgufValueType::STRING) return std::get<std::string>(v->scalar);
  fail("key " + quoted(key) + ": expected string, found " + describe(*v));
}

uint64_t GgufFile::require_uint(std::string_view key) const {
  if (auto v = get_uint(key)) return *v;
  fail("missing required key " + quoted(key) + " (expected an unsigned integer)");
}

double GgufFile::require_float(std::string_view key) const {
  if (auto v = get_float(key)) return *v;
  fail("missing required key " + quoted(key) + " (expected f32 or f64)");
}

std::string GgufFile::require_string(std::string_view key) const {
  if (auto v = get_string(key)) return *v;
  fail("missing required key " + quoted(key) + " (expected a string)");
}

const std::vector<int64_t>* GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  if (v->is_array() && (is_integer(v->array_type) || v->array_type == GgufValueType::BOOL)) return &v->ints;
  fail("key " + quoted(key) + ": expected array of integers, found " + describe(*v));
}

const std::vector<double>* GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  if (v->is_array() && is_float(v->array_type)) return &v->floats;
  fail("key " + quoted(key) + ": expected array of f32 or f64, found " + describe(*v));
}

const std::vector<std::string>* GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  if (v->is_array() && v->array_type == GgufValueType::STRING) return &v->strings;
  fail("key " + quoted(key) + ": expected array of string, found " + describe(*v));
}

}  // namespace tandem
