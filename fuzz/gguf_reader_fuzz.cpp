// libFuzzer harness for the GGUF reader: any input must either be rejected with GgufError or
// parse into a file whose every tensor byte can be read, every getter called, every tensor
// dequantized, and which the writer can re-serialize into a file the reader accepts again.
// Run with fuzz/run_gguf_fuzz.sh (ASan + UBSan, leaks detected).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/quants.h"

using namespace tandem;

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "gguf_reader_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

volatile uint64_t g_sink;

void touch_metadata(const GgufFile& f) {
  for (const auto& [key, v] : f.metadata()) {
    if (f.find(key) != &v) die("find() does not return the listed value", key);
    uint64_t h = v.array_size();
    // Every getter either returns a value or throws GgufError; nothing else may happen.
    try { h += f.get_uint(key).value_or(0); } catch (const GgufError&) {}
    try { h += static_cast<uint64_t>(f.get_int(key).value_or(0)); } catch (const GgufError&) {}
    try { h += static_cast<uint64_t>(f.get_float(key).value_or(0) != 0); } catch (const GgufError&) {}
    try { h += f.get_bool(key).value_or(false); } catch (const GgufError&) {}
    try { h += f.get_string(key).value_or("").size(); } catch (const GgufError&) {}
    try { if (auto* a = f.get_int_array(key)) for (int64_t x : *a) h += static_cast<uint64_t>(x); } catch (const GgufError&) {}
    try { if (auto* a = f.get_float_array(key)) h += a->size(); } catch (const GgufError&) {}
    try { if (auto* a = f.get_string_array(key)) for (const auto& s : *a) h += s.size(); } catch (const GgufError&) {}
    for (const auto& s : v.strings) h += s.size();
    g_sink = g_sink + h;
  }
  try { f.require_uint("fuzz.no.such.key"); die("require_uint of a missing key returned", ""); } catch (const GgufError&) {}
}

void touch_tensors(const GgufFile& f) {
  int64_t budget = 1 << 20;  // elements dequantized per input, to keep each run fast
  std::vector<float> row;
  for (const GgufTensorInfo& t : f.tensors()) {
    if (f.find_tensor(t.name) != &t) die("find_tensor() does not return the listed tensor", t.name);
    // Every byte of the tensor is readable (ASan checks the bounds).
    uint64_t h = 0;
    for (size_t i = 0; i < t.nbytes; ++i) h += t.data[i];
    g_sink = g_sink + h;
    if (t.nbytes != row_bytes(t.type, t.ne[0]) * static_cast<size_t>(t.n_rows())) die("nbytes mismatch", t.name);
    if (t.nbytes == 0 || t.ne[0] == 0) continue;
    row.resize(static_cast<size_t>(t.ne[0]));  // bounded: a nonempty row lies inside the input
    const size_t rb = row_bytes(t.type, t.ne[0]);
    for (int64_t r = 0; r < t.n_rows() && budget > 0; ++r, budget -= t.ne[0]) {
      dequantize_row(t.type, t.data + static_cast<size_t>(r) * rb, row.data(), t.ne[0]);
      g_sink = g_sink + static_cast<uint64_t>(row[0] == row[0]);
    }
  }
}

// The writer must reproduce what the reader accepted.
void rewrite(const GgufFile& f) {
  GgufWriter w(f.alignment());
  for (const auto& [key, v] : f.metadata()) w.set_value(key, v);
  for (const GgufTensorInfo& t : f.tensors()) {
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                 std::vector<uint8_t>(t.data, t.data + t.nbytes));
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  std::unique_ptr<GgufFile> g;
  try {
    g = GgufFile::from_memory(bytes.data(), bytes.size(), "rewritten.gguf");
  } catch (const GgufError& e) {
    die("the reader rejects the writer's copy of an accepted file", e.what());
  }
  if (g->metadata().size() != f.metadata().size() || g->tensors().size() != f.tensors().size()) {
    die("rewritten file differs", "counts");
  }
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& a = f.tensors()[i];
    const auto& b = g->tensors()[i];
    if (a.name != b.name || a.type != b.type || a.nbytes != b.nbytes ||
        (a.nbytes && std::memcmp(a.data, b.data, a.nbytes) != 0)) {
      die("rewritten tensor differs", a.name);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<GgufFile> f;
  try {
    f = GgufFile::from_memory(data, size, "fuzz.gguf");
  } catch (const GgufError& e) {
    if (std::string(e.what()).rfind("fuzz.gguf: ", 0) != 0) die("error message lacks the file name", e.what());
    return 0;
  }
  touch_metadata(*f);
  touch_tensors(*f);
  if (f->alignment() <= 4096) rewrite(*f);  // a huge (valid) alignment would make the copy huge
  return 0;
}
