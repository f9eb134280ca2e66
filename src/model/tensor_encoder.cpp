#include "model/tensor_encoder.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "gguf/quants.h"

namespace tandem {

namespace {

// Generates and encodes rows [r0, r1) into out (row_bytes each).
void encode_rows(GgmlType type, int64_t nx, const TensorFill& fill, int64_t r0, int64_t r1, uint8_t* out) {
  const size_t rb = row_bytes(type, nx);
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 16) / nx);
  std::vector<float> buf(static_cast<size_t>(chunk * nx));
  for (int64_t r = r0; r < r1; r += chunk) {
    const int64_t nr = std::min(chunk, r1 - r);
    fill(r * nx, nr * nx, buf.data());
    uint8_t* dst = out + static_cast<size_t>(r - r0) * rb;
    const int64_t n = nr * nx;
    switch (type) {
      case GgmlType::F32:
        std::memcpy(dst, buf.data(), static_cast<size_t>(n) * sizeof(float));
        break;
      case GgmlType::F16:
      case GgmlType::BF16: {
        const bool f16 = type == GgmlType::F16;
        for (int64_t k = 0; k < n; ++k) {
          const uint16_t h = f16 ? fp32_to_fp16(buf[k]) : fp32_to_bf16(buf[k]);
          std::memcpy(dst + 2 * k, &h, 2);
        }
        break;
      }
      default:
        for (int64_t i = 0; i < nr; ++i) quantize_row(type, buf.data() + i * nx, dst + i * rb, nx);
        break;
    }
  }
}

}  // namespace

std::vector<uint8_t> encode_generated_tensor(GgmlType type, const std::vector<int64_t>& ne, const TensorFill& fill,
                                             int n_threads) {
  int64_t work = 1;
  for (int64_t v : ne) work *= v;
  const int64_t nx = ne[0];
  const int64_t rows = work / nx;
  const size_t rb = row_bytes(type, nx);
  std::vector<uint8_t> data(rb * static_cast<size_t>(rows));
  const int nt = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(n_threads, rows), 1, 64));
  if (nt == 1 || work < (int64_t{1} << 18)) {
    encode_rows(type, nx, fill, 0, rows, data.data());
    return data;
  }
  std::vector<std::thread> th;
  std::exception_ptr err;
  std::mutex m;
  for (int k = 0; k < nt; ++k) {
    const int64_t r0 = rows * k / nt, r1 = rows * (k + 1) / nt;
    th.emplace_back([&, r0, r1] {
      try {
        encode_rows(type, nx, fill, r0, r1, data.data() + static_cast<size_t>(r0) * rb);
      } catch (...) {
        std::lock_guard<std::mutex> g(m);
        if (!err) err = std::current_exception();
      }
    });
  }
  for (auto& x : th) x.join();
  if (err) std::rethrow_exception(err);
  return data;
}

}  // namespace tandem
