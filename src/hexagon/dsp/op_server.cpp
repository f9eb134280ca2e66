// The DSP side's op server: reads requests (hexagon/dsp_protocol.h) from standard input, runs
// them on the HVX kernels and writes each reply to standard output, until Exit or end of input.
// A malformed request is refused with a reply naming the field; a request whose payload cannot
// be skipped (bad magic, oversized payload) ends the server after its refusal, since the stream
// can no longer be framed.
#include "hexagon/dsp/runtime.h"
#include "hexagon/dsp_protocol.h"
#include "kernels/matmul/matmul_hvx.h"

namespace tandem::hexagon {
namespace {

namespace hvx = kernels::hvx;

constexpr int kStdin = 0, kStdout = 1;
constexpr uint32_t kMaxMatrices = 1024;
constexpr uint32_t kMaxDim = 1u << 20;

// A refusal's text, built without stdio.
struct Message {
  char text[200];
  uint32_t n = 0;
  Message& operator<<(const char* s) {
    while (*s && n < sizeof text) text[n++] = *s++;
    return *this;
  }
  Message& operator<<(uint32_t v) {
    char digits[10];
    int k = 0;
    do {
      digits[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (k > 0 && n < sizeof text) text[n++] = digits[--k];
    return *this;
  }
};

// Memory from mmap, unmapped when it goes out of scope.
struct Mapping {
  void* p = nullptr;
  size_t n = 0;
  explicit Mapping(size_t bytes) : p(bytes ? dsp::map_memory(bytes) : nullptr), n(bytes) {}
  ~Mapping() { dsp::unmap_memory(p, n); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  uint8_t* bytes() const { return static_cast<uint8_t*>(p); }
};

struct Matrix {
  hvx::PackedMatrix packed;
  void* memory = nullptr;
  size_t bytes = 0;
};

Matrix g_matrices[kMaxMatrices];  // handle h is g_matrices[h - 1]; constant-initialised, no constructor runs

bool reply(const RequestHeader& req, Status status, uint32_t handle, const void* payload, uint32_t bytes) {
  ReplyHeader h;
  h.op = req.op;
  h.status = static_cast<uint32_t>(status);
  h.handle = handle;
  h.payload_bytes = bytes;
  return dsp::write_all(kStdout, &h, sizeof h) && (bytes == 0 || dsp::write_all(kStdout, payload, bytes));
}

bool refuse(const RequestHeader& req, const Message& m) { return reply(req, Status::Refused, 0, m.text, m.n); }

Matrix* matrix_of(uint32_t handle) {
  if (handle == 0 || handle > kMaxMatrices || !g_matrices[handle - 1].memory) return nullptr;
  return &g_matrices[handle - 1];
}

// The checks of a LoadMatrix request: true when it is well formed, else false with the reason in m.
bool check_load(const RequestHeader& req, Message& m) {
  if (req.type != hvx::kTypeQ4_0 && req.type != hvx::kTypeQ8_0) {
    m << "LoadMatrix: type " << req.type << " has no HVX kernel (Q4_0 = 2 and Q8_0 = 8 have)";
  } else if (req.rows == 0 || req.rows > kMaxDim) {
    m << "LoadMatrix: rows " << req.rows << " outside 1.." << kMaxDim;
  } else if (req.cols == 0 || req.cols > kMaxDim || req.cols % 32 != 0) {
    m << "LoadMatrix: cols " << req.cols << " is not a positive multiple of the block size 32 up to " << kMaxDim;
  } else if (req.payload_bytes != hvx::gguf_matrix_bytes(req.type, req.rows, req.cols)) {
    m << "LoadMatrix: payload_bytes " << req.payload_bytes << " is not rows x cols of the type ("
      << static_cast<uint32_t>(hvx::gguf_matrix_bytes(req.type, req.rows, req.cols)) << ")";
  } else {
    return true;
  }
  return false;
}

bool load_matrix(const RequestHeader& req, const uint8_t* payload) {
  Message m;
  if (!check_load(req, m)) return refuse(req, m);
  uint32_t h = 0;
  while (h < kMaxMatrices && g_matrices[h].memory) ++h;
  if (h == kMaxMatrices) return refuse(req, m << "LoadMatrix: handle: all " << kMaxMatrices << " matrices are loaded");
  const size_t bytes = hvx::packed_matrix_bytes(req.type, req.rows, req.cols);
  void* memory = dsp::map_memory(bytes);
  if (!memory) return refuse(req, m << "LoadMatrix: memory: no " << static_cast<uint32_t>(bytes) << " bytes to map");
  g_matrices[h] = {hvx::pack_matrix(req.type, req.rows, req.cols, payload, memory), memory, bytes};
  return reply(req, Status::Ok, h + 1, nullptr, 0);
}

bool matmul(const RequestHeader& req, const uint8_t* payload) {
  Message m;
  const Matrix* mat = matrix_of(req.handle);
  if (!mat) return refuse(req, m << "Matmul: handle " << req.handle << " is not a loaded matrix");
  const hvx::PackedMatrix& pm = mat->packed;
  const uint32_t column_in = static_cast<uint32_t>(pm.cols / 32) * 34;
  if (req.n_columns == 0 || req.n_columns > static_cast<uint32_t>(hvx::kMaxColumns))
    return refuse(req, m << "Matmul: n_columns " << req.n_columns << " outside 1.." << static_cast<uint32_t>(hvx::kMaxColumns));
  if (req.payload_bytes != req.n_columns * column_in)
    return refuse(req, m << "Matmul: payload_bytes " << req.payload_bytes << " is not n_columns x " << column_in
                         << " (Q8_0 activations of " << static_cast<uint32_t>(pm.cols) << ")");
  const size_t stride = hvx::column_bytes(pm.cols);
  const uint32_t out_bytes = req.n_columns * static_cast<uint32_t>(pm.rows) * 4;
  Mapping columns(stride * req.n_columns), out(out_bytes);
  if (!columns.p || !out.p) return refuse(req, m << "Matmul: memory: no room for the columns and the result");
  for (uint32_t c = 0; c < req.n_columns; ++c)
    hvx::prepare_column(pm.type, pm.cols, payload + c * column_in, columns.bytes() + c * stride);
  hvx::matmul_columns(pm, columns.p, static_cast<int>(req.n_columns), reinterpret_cast<float*>(out.p));
  return reply(req, Status::Ok, req.handle, out.p, out_bytes);
}

bool release(const RequestHeader& req) {
  Message m;
  Matrix* mat = matrix_of(req.handle);
  if (!mat) return refuse(req, m << "Release: handle " << req.handle << " is not a loaded matrix");
  dsp::unmap_memory(mat->memory, mat->bytes);
  *mat = Matrix{};
  return reply(req, Status::Ok, req.handle, nullptr, 0);
}

// One request: false when the server must stop (Exit, end of input, or a stream it cannot frame).
bool serve_one() {
  RequestHeader req;
  if (!dsp::read_all(kStdin, &req, sizeof req)) return false;
  Message m;
  if (req.magic != kMagic) {
    refuse(req, m << "magic " << req.magic << " is not " << kMagic << ": stream out of step, op server stopping");
    return false;
  }
  if (req.payload_bytes > kMaxPayloadBytes) {
    refuse(req, m << "payload_bytes " << req.payload_bytes << " over " << kMaxPayloadBytes << ": op server stopping");
    return false;
  }
  Mapping payload(req.payload_bytes);
  if (req.payload_bytes && (!payload.p || !dsp::read_all(kStdin, payload.p, req.payload_bytes))) return false;
  if (req.version != kProtocolVersion)
    return refuse(req, m << "version " << req.version << ": this op server speaks version " << kProtocolVersion);
  switch (static_cast<Op>(req.op)) {
    case Op::Hello: return reply(req, Status::Ok, 0, nullptr, 0);
    case Op::LoadMatrix: return load_matrix(req, payload.bytes());
    case Op::Matmul: return matmul(req, payload.bytes());
    case Op::Release: return release(req);
    case Op::Exit: reply(req, Status::Ok, 0, nullptr, 0); return false;
  }
  return refuse(req, m << "op " << req.op << " is unknown (1..5)");
}

}  // namespace
}  // namespace tandem::hexagon

int dsp_main() {
  while (tandem::hexagon::serve_one()) {
  }
  return 0;
}
