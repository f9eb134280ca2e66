// GGUF reader/writer tests: round trips of every metadata type and tensor type, a catalogue of
// corrupt files (each must be rejected with a message naming the problem, from memory and from
// disk), typed getters, and the golden models.
#include "gguf/gguf_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "gguf/quants.h"
#include "model/test_paths.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

fs::path tmp_dir() {
  const fs::path d = fs::path(TANDEM_BINARY_DIR) / "test-tmp";
  fs::create_directories(d);
  return d;
}

// Parses from an exactly-sized heap copy so AddressSanitizer sees any read past the end.
std::unique_ptr<GgufFile> parse_exact(const Bytes& b, const std::string& name, std::unique_ptr<uint8_t[]>* keep) {
  keep->reset(new uint8_t[b.size() ? b.size() : 1]);
  if (!b.empty()) std::memcpy(keep->get(), b.data(), b.size());
  return GgufFile::from_memory(keep->get(), b.size(), name);
}

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

Bytes quantized(GgmlType t, int64_t ne0, int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(ne0 * rows));
  for (auto& v : x) v = nd(rng);
  Bytes out(row_bytes(t, ne0) * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) quantize_row(t, x.data() + r * ne0, out.data() + r * row_bytes(t, ne0), ne0);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Round trip

TEST(GgufWriter, RoundTripEveryMetadataTypeAndTensorType) {
  GgufWriter w;
  w.set_u8("t.u8", 200);
  w.set_i8("t.i8", -100);
  w.set_u16("t.u16", 60000);
  w.set_i16("t.i16", -30000);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_u64("t.u64", 18000000000000000000ull);
  w.set_i64("t.i64", -9000000000000000000ll);
  w.set_f32("t.f32", 1.5e-7f);
  w.set_f64("t.f64", 3.141592653589793);
  w.set_bool("t.bool", true);
  w.set_bool("t.false", false);
  w.set_string("t.str", "héllo\nworld");
  w.set_string("t.empty", "");
  w.set_array_string("t.astr", {"a", "", "ccc"});
  w.set_array_i32("t.ai32", {-1, 0, 2147483647});
  w.set_array_u32("t.au32", {0, 4294967295u});
  w.set_array_f32("t.af32", {0.5f, -2.25f});
  w.set_array_i32("t.aempty", {});
  // Arrays of the remaining element types through set_value.
  const GgufValueType int_types[] = {GgufValueType::UINT8, GgufValueType::INT8,   GgufValueType::UINT16,
                                     GgufValueType::INT16, GgufValueType::UINT64, GgufValueType::INT64,
                                     GgufValueType::BOOL};
  for (GgufValueType et : int_types) {
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.array_type = et;
    v.ints = et == GgufValueType::BOOL ? std::vector<int64_t>{1, 0, 1} : std::vector<int64_t>{1, 2, 100};
    w.set_value(std::string("t.a") + gguf_value_type_name(et), v);
  }
  {
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.array_type = GgufValueType::FLOAT64;
    v.floats = {1e300, -0.1};
    w.set_value("t.af64", v);
  }
  w.set_u32("t.replaced", 1);
  w.set_u32("t.replaced", 2);  // replaces, keeps position

  struct T { std::string name; GgmlType type; std::vector<int64_t> ne; };
  const std::vector<T> tensors = {
      {"f32.1d", GgmlType::F32, {7}},
      {"f16.2d", GgmlType::F16, {5, 3}},
      {"bf16.3d", GgmlType::BF16, {4, 3, 2}},
      {"q4_0.4d", GgmlType::Q4_0, {64, 2, 2, 2}},
      {"q4_1", GgmlType::Q4_1, {32, 3}},
      {"q5_0", GgmlType::Q5_0, {96, 1}},
      {"q5_1", GgmlType::Q5_1, {32, 2}},
      {"q8_0", GgmlType::Q8_0, {32, 5}},
      {"q8_1", GgmlType::Q8_1, {64}},
      {"q4_k", GgmlType::Q4_K, {256, 2}},
      {"q5_k", GgmlType::Q5_K, {512}},
      {"q6_k", GgmlType::Q6_K, {256, 3}},
      {"q8_k", GgmlType::Q8_K, {256}},
      {"empty", GgmlType::F32, {0, 4}},
  };
  std::vector<Bytes> datas;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const T& t = tensors[i];
    int64_t rows = 1;
    for (size_t d = 1; d < t.ne.size(); ++d) rows *= t.ne[d];
    datas.push_back(quantized(t.type, t.ne[0], rows, static_cast<uint32_t>(i)));
    w.add_tensor(t.name, t.type, t.ne, datas.back());
  }

  const Bytes bytes = w.to_bytes();
  const std::string path = (tmp_dir() / "roundtrip.gguf").string();
  w.write_file(path);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  std::unique_ptr<uint8_t[]> keep;
  auto mem = parse_exact(bytes, "mem.gguf", &keep);
  auto disk = GgufFile::open(path);
  EXPECT_EQ(disk->file_size(), bytes.size());
  for (const GgufFile* f : {mem.get(), disk.get()}) {
    SCOPED_TRACE(f->path());
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), 32u);
    EXPECT_EQ(f->get_uint("t.u8"), 200u);
    EXPECT_EQ(f->get_int("t.i8"), -100);
    EXPECT_EQ(f->get_uint("t.u16"), 60000u);
    EXPECT_EQ(f->get_int("t.i16"), -30000);
    EXPECT_EQ(f->get_uint("t.u32"), 4000000000u);
    EXPECT_EQ(f->get_int("t.u32"), 4000000000ll);
    EXPECT_EQ(f->get_int("t.i32"), -2000000000);
    EXPECT_EQ(f->get_uint("t.u64"), 18000000000000000000ull);
    EXPECT_EQ(f->get_int("t.i64"), -9000000000000000000ll);
    EXPECT_EQ(f->get_float("t.f32"), static_cast<double>(1.5e-7f));
    EXPECT_EQ(f->get_float("t.f64"), 3.141592653589793);
    EXPECT_EQ(f->get_bool("t.bool"), true);
    EXPECT_EQ(f->get_bool("t.false"), false);
    EXPECT_EQ(f->get_string("t.str"), "héllo\nworld");
    EXPECT_EQ(f->require_string("t.empty"), "");
    EXPECT_EQ(*f->get_string_array("t.astr"), (std::vector<std::string>{"a", "", "ccc"}));
    EXPECT_EQ(*f->get_int_array("t.ai32"), (std::vector<int64_t>{-1, 0, 2147483647}));
    EXPECT_EQ(*f->get_int_array("t.au32"), (std::vector<int64_t>{0, 4294967295ll}));
    EXPECT_EQ(*f->get_float_array("t.af32"), (std::vector<double>{0.5, -2.25}));
    EXPECT_EQ(*f->get_float_array("t.af64"), (std::vector<double>{1e300, -0.1}));
    EXPECT_TRUE(f->get_int_array("t.aempty")->empty());
    EXPECT_EQ(f->find("t.aempty")->array_type, GgufValueType::INT32);
    for (GgufValueType et : int_types) {
      const GgufValue* v = f->find(std::string("t.a") + gguf_value_type_name(et));
      ASSERT_NE(v, nullptr);
      EXPECT_TRUE(v->is_array());
      EXPECT_EQ(v->array_type, et);
      EXPECT_EQ(v->array_size(), 3u);
      const std::vector<int64_t> want = et == GgufValueType::BOOL ? std::vector<int64_t>{1, 0, 1} : std::vector<int64_t>{1, 2, 100};
      EXPECT_EQ(v->ints, want);
    }
    EXPECT_EQ(f->get_uint("t.replaced"), 2u);
    EXPECT_EQ(f->get_uint("t.missing"), std::nullopt);
    EXPECT_EQ(f->get_int_array("t.missing"), nullptr);
    // File order is kept; the replaced key stays where it was first set.
    ASSERT_EQ(f->metadata().size(), 28u);
    EXPECT_EQ(f->metadata().front().first, "t.u8");
    EXPECT_EQ(f->metadata().back().first, "t.replaced");
    EXPECT_EQ(f->metadata()[0].second.type, GgufValueType::UINT8);
    EXPECT_EQ(f->metadata()[9].second.type, GgufValueType::FLOAT64);

    ASSERT_EQ(f->tensors().size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const GgufTensorInfo& ti = f->tensors()[i];
      EXPECT_EQ(ti.name, tensors[i].name);
      EXPECT_EQ(ti.type, tensors[i].type);
      EXPECT_EQ(ti.n_dims, static_cast<int>(tensors[i].ne.size()));
      for (int d = 0; d < 4; ++d) EXPECT_EQ(ti.ne[d], d < ti.n_dims ? tensors[i].ne[d] : 1);
      EXPECT_EQ(ti.offset % 32, 0u);
      ASSERT_EQ(ti.nbytes, datas[i].size());
      if (ti.nbytes) {
        EXPECT_EQ(std::memcmp(ti.data, datas[i].data(), ti.nbytes), 0) << ti.name;
      }
      EXPECT_EQ(f->find_tensor(ti.name), &ti);
    }
    EXPECT_EQ(f->find_tensor("nope"), nullptr);
  }

  // Rewriting every value through set_value reproduces the file byte for byte.
  GgufWriter w2;
  for (const auto& [k, v] : mem->metadata()) w2.set_value(k, v);
  for (const auto& t : mem->tensors()) {
    w2.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), Bytes(t.data, t.data + t.nbytes));
  }
  EXPECT_EQ(w2.to_bytes(), bytes);
}

TEST(GgufWriter, CustomAlignment) {
  GgufWriter w(64);
  w.set_string("general.name", "x");
  w.add_tensor("a", GgmlType::F32, {3}, Bytes(12, 1));
  w.add_tensor("b", GgmlType::F32, {5}, Bytes(20, 2));
  const Bytes b = w.to_bytes();
  std::unique_ptr<uint8_t[]> keep;
  auto f = parse_exact(b, "al.gguf", &keep);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->get_uint("general.alignment"), 64u);
  EXPECT_EQ(f->tensors()[1].offset, 64u);
  EXPECT_EQ((f->tensors()[0].data - keep.get()) % 64, 0);
  EXPECT_EQ(b.size() % 64, 0u);
}

TEST(GgufWriter, RejectsBadInput) {
  GgufWriter w;
  EXPECT_THROW(w.add_tensor("x", GgmlType::Q4_0, {33}, Bytes(18)), GgufError);
  EXPECT_THROW(w.add_tensor("x", GgmlType::F32, {4}, Bytes(15)), GgufError);
  EXPECT_THROW(w.add_tensor("x", GgmlType::F32, {}, Bytes()), GgufError);
  EXPECT_THROW(w.add_tensor("x", GgmlType::F32, {1, 1, 1, 1, 1}, Bytes(4)), GgufError);
  EXPECT_THROW(w.add_tensor("x", GgmlType::F32, {-4}, Bytes()), GgufError);
  EXPECT_THROW(w.add_tensor("", GgmlType::F32, {1}, Bytes(4)), GgufError);
  EXPECT_THROW(w.add_tensor("x", static_cast<GgmlType>(10), {256}, Bytes(84)), GgufError);
  w.add_tensor("x", GgmlType::F32, {1}, Bytes(4));
  EXPECT_THROW(w.add_tensor("x", GgmlType::F32, {1}, Bytes(4)), GgufError);
  EXPECT_THROW(GgufWriter(48).to_bytes(), GgufError);
  EXPECT_THROW(GgufWriter(0).to_bytes(), GgufError);
  try {
    GgufWriter().write_file((tmp_dir() / "no-such-dir" / "x.gguf").string());
    ADD_FAILURE() << "write into a missing directory succeeded";
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-dir"), std::string::npos) << e.what();
  }
}

TEST(GgufFile, EmptyButValidFile) {
  const Bytes b = GgufWriter().to_bytes();
  EXPECT_EQ(b.size(), 32u);  // 24-byte header padded to the alignment
  std::unique_ptr<uint8_t[]> keep;
  auto f = parse_exact(b, "e.gguf", &keep);
  EXPECT_TRUE(f->metadata().empty());
  EXPECT_TRUE(f->tensors().empty());
  // Without the padding too.
  auto g = parse_exact(Bytes(b.begin(), b.begin() + 24), "e24.gguf", &keep);
  EXPECT_TRUE(g->tensors().empty());
}

TEST(GgufFile, AcceptsVersion2) {
  Bytes b = GgufWriter().to_bytes();
  b[4] = 2;
  std::unique_ptr<uint8_t[]> keep;
  EXPECT_EQ(parse_exact(b, "v2.gguf", &keep)->version(), 2u);
}

// ---------------------------------------------------------------------------------------------
// Corrupt files

size_t find_str(const Bytes& b, const std::string& s) {
  for (size_t i = 0; i + s.size() <= b.size(); ++i) {
    if (std::memcmp(b.data() + i, s.data(), s.size()) == 0) return i;
  }
  throw std::runtime_error("pattern not found: " + s);
}
size_t after(const Bytes& b, const std::string& s) { return find_str(b, s) + s.size(); }
void put32(Bytes& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void put64(Bytes& b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

GgufWriter base_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "test");
  w.set_u32("test.u32", 7);
  w.set_string("test.str", "hello");
  w.set_array_u32("test.arr", {1, 2, 3});
  w.set_u32("test.dup1", 1);
  w.set_u32("test.dup2", 2);
  w.add_tensor("weight.a", GgmlType::F32, {8, 2}, Bytes(64, 0));
  w.add_tensor("weight.b", GgmlType::Q8_0, {64, 2}, Bytes(136, 0));
  w.add_tensor("weight.c", GgmlType::F32, {4}, Bytes(16, 0));
  return w;
}

// Tensor info fields, located after the name string.
size_t ndims_at(const Bytes& b, const std::string& t) { return after(b, t); }
size_t ne_at(const Bytes& b, const std::string& t, int d) { return after(b, t) + 4 + 8 * d; }
size_t type_at(const Bytes& b, const std::string& t, int n_dims) { return after(b, t) + 4 + 8 * n_dims; }
size_t offset_at(const Bytes& b, const std::string& t, int n_dims) { return after(b, t) + 4 + 8 * n_dims + 4; }

struct Corrupt {
  std::string name;
  std::function<Bytes()> make;
  std::vector<std::string> expect;  // substrings the message must contain
};

std::vector<Corrupt> corrupt_cases() {
  const Bytes base = base_writer().to_bytes();
  auto patch = [base](std::function<void(Bytes&)> f) {
    return [base, f]() {
      Bytes b = base;
      f(b);
      return b;
    };
  };
  auto with_writer = [](std::function<void(GgufWriter&)> f) {
    return [f]() {
      GgufWriter w = base_writer();
      f(w);
      return w.to_bytes();
    };
  };
  const uint64_t huge = 1ull << 60;
  GgufWriter sw;
  sw.set_string("general.architecture", "test");
  sw.set_u32("test.u32", 7);
  const Bytes small = sw.to_bytes();
  return {
      {"empty", [] { return Bytes(); }, {"empty file"}},
      {"bad-magic", patch([](Bytes& b) { b[3] = 'L'; }), {"bad magic", "GGUF"}},
      {"garbage", [] { return random_bytes(100, 5); }, {"bad magic"}},
      {"short-magic", [] { return Bytes{'G', 'G'}; }, {"bad magic"}},
      {"version-1", patch([](Bytes& b) { put32(b, 4, 1); }), {"version 1", "expected version 3"}},
      {"version-4", patch([](Bytes& b) { put32(b, 4, 4); }), {"version 4"}},
      {"big-endian", patch([](Bytes& b) { put32(b, 4, 0x03000000u); }), {"big-endian"}},
      {"truncated-after-magic", [base] { return Bytes(base.begin(), base.begin() + 4); },
       {"truncated", "version", "past end of file"}},
      {"truncated-header", [base] { return Bytes(base.begin(), base.begin() + 12); },
       {"truncated", "tensor count", "file has 12 bytes"}},
      // (Cut early in a file with many keys/tensors, the count bounds fire first; use a small file.)
      {"truncated-key", [small] { return Bytes(small.begin(), small.begin() + find_str(small, "test.u32") + 3); },
       {"metadata key #1", "string length 8", "past end of file"}},
      {"truncated-kv-value", [small] { return Bytes(small.begin(), small.begin() + after(small, "test.u32") + 6); },
       {"truncated file: key 'test.u32' value", "4 bytes] extends past end of file"}},
      {"truncated-tensor-info", [base] { return Bytes(base.begin(), base.begin() + after(base, "weight.b") + 6); },
       {"truncated", "tensor 'weight.b' ne[0]"}},
      {"truncated-data", [base] { return Bytes(base.begin(), base.end() - 40); },
       {"tensor 'weight.c'", "16 bytes] extends past end of file"}},
      {"kv-count-huge", patch([huge](Bytes& b) { put64(b, 16, huge); }), {"metadata key count 1152921504606846976"}},
      {"tensor-count-huge", patch([huge](Bytes& b) { put64(b, 8, huge); }), {"tensor count 1152921504606846976"}},
      {"key-length-huge", patch([huge](Bytes& b) { put64(b, 24, huge); }),
       {"metadata key #0", "string length 1152921504606846976", "past end of file"}},
      {"string-length-huge", patch([huge](Bytes& b) { put64(b, after(b, "test.str") + 4, huge); }),
       {"key 'test.str' value", "string length 1152921504606846976", "past end of file"}},
      {"bad-value-type", patch([](Bytes& b) { put32(b, after(b, "test.u32"), 13); }),
       {"key 'test.u32'", "unknown value type 13"}},
      {"bad-array-elem-type", patch([](Bytes& b) { put32(b, after(b, "test.arr") + 4, 77); }),
       {"key 'test.arr'", "unknown value type 77"}},
      {"nested-array", patch([](Bytes& b) { put32(b, after(b, "test.arr") + 4, 9); }),
       {"key 'test.arr'", "nested array"}},
      {"array-count-huge", patch([](Bytes& b) { put64(b, after(b, "test.arr") + 8, 1ull << 61); }),
       {"key 'test.arr'", "array of 2305843009213693952 u32 elements", "past end of file"}},
      {"string-array-count-huge",
       [] {
         GgufWriter w;
         w.set_array_string("tok", {"a", "b"});
         Bytes b = w.to_bytes();
         put64(b, after(b, "tok") + 8, 1ull << 40);
         return b;
       },
       {"key 'tok'", "array of 1099511627776 string elements"}},
      {"alignment-0", with_writer([](GgufWriter& w) { w.set_u32("general.alignment", 0); }),
       {"general.alignment", "alignment 0 is not a power of two"}},
      {"alignment-3", with_writer([](GgufWriter& w) { w.set_u32("general.alignment", 3); }),
       {"general.alignment", "alignment 3 is not a power of two"}},
      {"alignment-wrong-type", with_writer([](GgufWriter& w) { w.set_string("general.alignment", "32"); }),
       {"general.alignment", "expected u32, found string"}},
      {"duplicate-key", patch([](Bytes& b) { b[find_str(b, "test.dup2") + 8] = '1'; }),
       {"duplicate metadata key 'test.dup1'"}},
      {"n-dims-0", patch([](Bytes& b) { put32(b, ndims_at(b, "weight.a"), 0); }),
       {"tensor 'weight.a'", "n_dims 0", "expected 1..4"}},
      {"n-dims-5", patch([](Bytes& b) { put32(b, ndims_at(b, "weight.a"), 5); }),
       {"tensor 'weight.a'", "n_dims 5", "expected 1..4"}},
      {"ne-negative", patch([](Bytes& b) { put64(b, ne_at(b, "weight.a", 1), static_cast<uint64_t>(-5)); }),
       {"tensor 'weight.a'", "ne[1] = -5 is negative"}},
      {"ne-product-overflow",
       patch([](Bytes& b) {
         put64(b, ne_at(b, "weight.a", 0), 1ull << 40);
         put64(b, ne_at(b, "weight.a", 1), 1ull << 40);
       }),
       {"tensor 'weight.a'", "overflows int64"}},
      // Found by the fuzzer: with ne[0] = 0 the element count is 0, but n_rows() overflowed.
      {"empty-tensor-rows-overflow",
       [] {
         GgufWriter w;
         w.add_tensor("empty.t", GgmlType::F32, {0, 4, 4}, {});
         Bytes b = w.to_bytes();
         put64(b, ne_at(b, "empty.t", 1), 1ull << 40);
         put64(b, ne_at(b, "empty.t", 2), 1ull << 40);
         return b;
       },
       {"tensor 'empty.t'", "shape [0, 1099511627776, 1099511627776] overflows int64"}},
      {"byte-size-overflow",
       patch([](Bytes& b) {
         put64(b, ne_at(b, "weight.a", 0), 1ull << 62);
         put64(b, ne_at(b, "weight.a", 1), 1);
       }),
       {"tensor 'weight.a'", "byte size", "overflows"}},
      {"tensor-larger-than-file", patch([](Bytes& b) { put64(b, ne_at(b, "weight.a", 0), 1ull << 40); }),
       {"tensor 'weight.a'", "extends past end of file"}},
      {"unknown-tensor-type", patch([](Bytes& b) { put32(b, type_at(b, "weight.a", 2), 99); }),
       {"tensor 'weight.a'", "unknown tensor type 99", "Q4_K"}},
      {"unsupported-tensor-type", patch([](Bytes& b) { put32(b, type_at(b, "weight.c", 1), 10); }),
       {"tensor 'weight.c'", "unsupported tensor type 10 (Q2_K)"}},
      {"ne0-not-block-multiple", patch([](Bytes& b) { put64(b, ne_at(b, "weight.b", 0), 48); }),
       {"tensor 'weight.b'", "ne[0] = 48 is not a multiple of the Q8_0 block size 32"}},
      {"offset-misaligned", patch([](Bytes& b) { put64(b, offset_at(b, "weight.b", 2), 65); }),
       {"tensor 'weight.b'", "offset 65", "alignment 32"}},
      {"data-past-eof", patch([](Bytes& b) { put64(b, offset_at(b, "weight.c", 1), 1 << 20); }),
       {"tensor 'weight.c': data [offset", "extends past end of file (file has"}},
      {"offset-wraps", patch([](Bytes& b) { put64(b, offset_at(b, "weight.c", 1), ~uint64_t{31}); }),
       {"tensor 'weight.c'", "past end of file"}},
      {"duplicate-tensor-name", patch([](Bytes& b) { b[find_str(b, "weight.b") + 7] = 'a'; }),
       {"duplicate tensor name 'weight.a'"}},
      {"tensors-overlap", patch([](Bytes& b) { put64(b, offset_at(b, "weight.c", 1), 64); }),
       {"tensor 'weight.c'", "overlaps tensor 'weight.b'"}},
  };
}

void expect_message(const std::string& msg, const std::string& prefix, const std::vector<std::string>& expect) {
  EXPECT_EQ(msg.rfind(prefix + ": ", 0), 0u) << "message does not start with the file name: " << msg;
  for (const auto& e : expect) EXPECT_NE(msg.find(e), std::string::npos) << "missing \"" << e << "\" in: " << msg;
}

TEST(GgufFile, RejectsCorruptFiles) {
  const auto cases = corrupt_cases();
  EXPECT_GE(cases.size(), 20u);
  // The unpatched base file is valid (so each case tests exactly its own patch).
  {
    std::unique_ptr<uint8_t[]> keep;
    auto f = parse_exact(base_writer().to_bytes(), "base.gguf", &keep);
    EXPECT_EQ(f->tensors().size(), 3u);
  }
  for (const Corrupt& c : cases) {
    SCOPED_TRACE(c.name);
    Bytes b;
    ASSERT_NO_THROW(b = c.make());
    const std::string mem_name = c.name + ".gguf";
    try {
      std::unique_ptr<uint8_t[]> keep;
      parse_exact(b, mem_name, &keep);
      ADD_FAILURE() << "from_memory accepted the corrupt file";
    } catch (const GgufError& e) {
      expect_message(e.what(), mem_name, c.expect);
    }
    const std::string path = (tmp_dir() / ("corrupt-" + c.name + ".gguf")).string();
    {
      std::ofstream o(path, std::ios::binary | std::ios::trunc);
      o.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    }
    try {
      GgufFile::open(path);
      ADD_FAILURE() << "open accepted the corrupt file";
    } catch (const GgufError& e) {
      expect_message(e.what(), path, c.expect);
    }
  }
}

TEST(GgufFile, OpenErrors) {
  const std::string missing = (tmp_dir() / "does-not-exist.gguf").string();
  try {
    GgufFile::open(missing);
    ADD_FAILURE();
  } catch (const GgufError& e) {
    expect_message(e.what(), missing, {"cannot open"});
  }
  try {
    GgufFile::open(tmp_dir().string());
    ADD_FAILURE();
  } catch (const GgufError& e) {
    expect_message(e.what(), tmp_dir().string(), {"not a regular file"});
  }
}

// Every prefix of a valid file must be rejected cleanly (or accepted only if complete).
TEST(GgufFile, EveryTruncationRejected) {
  const Bytes base = base_writer().to_bytes();
  // The last tensor (16 bytes) is followed by 16 bytes of padding, which may be cut.
  for (size_t n = 0; n < base.size() - 16; ++n) {
    std::unique_ptr<uint8_t[]> keep;
    EXPECT_THROW(parse_exact(Bytes(base.begin(), base.begin() + n), "t.gguf", &keep), GgufError) << n;
  }
}

TEST(GgufFile, TypedGetters) {
  GgufWriter w;
  w.set_u32("u32", 5);
  w.set_i32("neg", -3);
  w.set_i32("pos", 3);
  w.set_u8("u8", 9);
  w.set_u64("big", 18446744073709551615ull);
  w.set_string("str", "s");
  w.set_f32("f", 0.25f);
  w.set_bool("b", true);
  w.set_array_i32("arr", {1, 2});
  const Bytes bytes = w.to_bytes();
  std::unique_ptr<uint8_t[]> keep;
  auto f = parse_exact(bytes, "g.gguf", &keep);
  EXPECT_EQ(f->get_uint("u32"), 5u);
  EXPECT_EQ(f->get_uint("pos"), 3u);
  EXPECT_EQ(f->get_uint("u8"), 9u);
  EXPECT_EQ(f->get_int("neg"), -3);
  EXPECT_EQ(f->get_uint("big"), 18446744073709551615ull);
  EXPECT_EQ(f->require_uint("u32"), 5u);
  EXPECT_EQ(f->require_float("f"), 0.25);
  EXPECT_EQ(f->require_string("str"), "s");
  EXPECT_EQ(f->get_bool("b"), true);
  EXPECT_EQ(f->get_uint("missing"), std::nullopt);
  EXPECT_EQ(f->get_string("missing"), std::nullopt);
  EXPECT_EQ(f->get_float("missing"), std::nullopt);
  EXPECT_EQ(f->get_bool("missing"), std::nullopt);
  EXPECT_EQ(f->get_int("missing"), std::nullopt);

  auto expect_error = [&](const std::function<void()>& fn, const std::vector<std::string>& parts) {
    try {
      fn();
      ADD_FAILURE() << "no error for " << parts[0];
    } catch (const GgufError& e) {
      expect_message(e.what(), "g.gguf", parts);
    }
  };
  expect_error([&] { f->get_uint("str"); }, {"key 'str'", "expected unsigned integer, found string"});
  expect_error([&] { f->get_uint("neg"); }, {"key 'neg'", "expected unsigned integer, found i32 -3"});
  expect_error([&] { f->get_uint("f"); }, {"key 'f'", "found f32"});
  expect_error([&] { f->get_uint("arr"); }, {"key 'arr'", "found array of i32"});
  expect_error([&] { f->get_int("big"); }, {"key 'big'", "found u64 18446744073709551615"});
  expect_error([&] { f->get_string("u32"); }, {"key 'u32'", "expected string, found u32"});
  expect_error([&] { f->get_float("u32"); }, {"key 'u32'", "expected f32 or f64, found u32"});
  expect_error([&] { f->get_bool("u8"); }, {"key 'u8'", "expected bool, found u8"});
  expect_error([&] { f->require_uint("nope"); }, {"missing required key 'nope'"});
  expect_error([&] { f->require_float("nope"); }, {"missing required key 'nope'"});
  expect_error([&] { f->require_string("nope"); }, {"missing required key 'nope'"});
  expect_error([&] { f->require_string("b"); }, {"key 'b'", "expected string, found bool"});
  expect_error([&] { f->get_string_array("arr"); }, {"key 'arr'", "expected array of string, found array of i32"});
  expect_error([&] { f->get_int_array("u32"); }, {"key 'u32'", "expected array of integers, found u32"});
  expect_error([&] { f->get_float_array("arr"); }, {"key 'arr'"});
  try {
    f->fail("custom problem (expected nothing)");
  } catch (const GgufError& e) {
    EXPECT_STREQ(e.what(), "g.gguf: custom problem (expected nothing)");
  }
}

// ---------------------------------------------------------------------------------------------
// Golden models

TEST(GgufFileGolden, GoldenModelsParse) {
  const fs::path models = fs::path(TANDEM_SHARED_DIR) / "golden" / "models";
  if (!fs::exists(models)) GTEST_SKIP() << "golden data absent: " << models << " not found";
  int n_files = 0;
  for (const auto& entry : fs::directory_iterator(models)) {
    if (entry.path().extension() != ".gguf") continue;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    ++n_files;
    auto f = GgufFile::open(entry.path().string());
    EXPECT_EQ(f->file_size(), fs::file_size(entry.path()));
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->require_string("general.architecture"), "qwen35");
    const bool is_a = name.find("golden-a") != std::string::npos;
    EXPECT_EQ(f->require_uint("qwen35.block_count"), is_a ? 9u : 4u);
    EXPECT_EQ(f->require_uint("qwen35.embedding_length"), is_a ? 256u : 512u);
    EXPECT_EQ(f->get_uint("qwen35.nextn_predict_layers"), is_a ? std::optional<uint64_t>(1) : std::nullopt);
    EXPECT_NEAR(f->require_float("qwen35.rope.freq_base"), 1e7, 1e-3);
    EXPECT_EQ(*f->get_int_array("qwen35.rope.dimension_sections"), (std::vector<int64_t>{3, 3, 2, 0}));
    EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->size(), 1027u);
    EXPECT_EQ(f->get_string_array("tokenizer.ggml.merges")->size(), 768u);
    EXPECT_EQ(f->require_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(f->tensors().size(), is_a ? 123u : 56u);
    EXPECT_EQ(f->find_tensor("output.weight") != nullptr, !is_a);
    const GgufTensorInfo* emb = f->find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->ne[0], is_a ? 256 : 512);
    EXPECT_EQ(emb->ne[1], 1027);
    for (const GgufTensorInfo& t : f->tensors()) {
      EXPECT_NE(t.data, nullptr);
      ASSERT_EQ(t.nbytes, row_bytes(t.type, t.ne[0]) * static_cast<size_t>(t.n_rows()));
      std::vector<float> row(static_cast<size_t>(t.ne[0]));
      dequantize_row(t.type, t.data, row.data(), t.ne[0]);
      for (float v : row) ASSERT_TRUE(std::isfinite(v)) << t.name;
    }
    // The writer reproduces the file byte for byte from what the reader parsed.
    GgufWriter w(f->alignment());
    for (const auto& [k, v] : f->metadata()) w.set_value(k, v);
    for (const auto& t : f->tensors()) {
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), Bytes(t.data, t.data + t.nbytes));
    }
    const Bytes re = w.to_bytes();
    Bytes orig(static_cast<size_t>(fs::file_size(entry.path())));
    std::ifstream in(entry.path(), std::ios::binary);
    in.read(reinterpret_cast<char*>(orig.data()), static_cast<std::streamsize>(orig.size()));
    EXPECT_TRUE(re.size() == orig.size() && std::memcmp(re.data(), orig.data(), re.size()) == 0)
        << "rewritten file differs (" << re.size() << " vs " << orig.size() << " bytes)";
  }
  if (n_files == 0) GTEST_SKIP() << "golden data absent: no .gguf files in " << models;
}

}  // namespace
}  // namespace tandem
