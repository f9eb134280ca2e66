#include "runtime/binary_io.h"

namespace tandem {

namespace {
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
}

void Checksum64::update(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  bytes_ += n;
  while (n > 0 && n_tail_ > 0) {  // complete a word left open by the previous call
    tail_[n_tail_++] = *p++;
    --n;
    if (n_tail_ == 8) {
      uint64_t w;
      std::memcpy(&w, tail_, 8);
      h_ = (h_ ^ w) * kFnvPrime;
      n_tail_ = 0;
    }
  }
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h_ = (h_ ^ w) * kFnvPrime;
  }
  for (; n > 0; --n) tail_[n_tail_++] = *p++;
}

uint64_t Checksum64::value() const {
  uint64_t h = h_;
  if (n_tail_ > 0) {
    unsigned char last[8] = {};
    std::memcpy(last, tail_, n_tail_);
    uint64_t w;
    std::memcpy(&w, last, 8);
    h = (h ^ w) * kFnvPrime;
  }
  return (h ^ bytes_) * kFnvPrime;
}

void BinaryWriter::write(const void* data, size_t n) {
  if (n == 0) return;
  if (std::fwrite(data, 1, n, f_) != n) throw BinaryFormatError(name_ + ": write failed (disk full?)");
  sum_.update(data, n);
  bytes_ += n;
}

void BinaryReader::fail(const std::string& what) const { throw BinaryFormatError(name_ + ": " + what); }

void BinaryReader::read(void* data, size_t n) {
  if (n > left_)
    fail("truncated or corrupted: " + std::to_string(n) + " more bytes expected, the payload has " +
         std::to_string(left_) + " left");
  if (n > 0 && std::fread(data, 1, n, f_) != n) fail("the file ends early (truncated)");
  left_ -= n;
  sum_.update(data, n);
}

std::string BinaryReader::string(size_t max_len) {
  const auto n = pod<uint64_t>();
  if (n > max_len) fail("a string of " + std::to_string(n) + " bytes is longer than allowed (corrupted)");
  std::string s(n, '\0');
  read(s.data(), n);
  return s;
}

uint64_t BinaryReader::count(uint64_t item_bytes, const char* what) {
  const auto n = pod<uint64_t>();
  if (item_bytes > 0 && n > left_ / item_bytes)
    fail(std::string("a count of ") + std::to_string(n) + " " + what + " does not fit the payload (corrupted)");
  return n;
}

}  // namespace tandem
