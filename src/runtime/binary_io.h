// Binary files with a running checksum, for the serving states kept on disk (serve/lifecycle/state_file.h).
//
// BinaryWriter and BinaryReader move raw host-order bytes (the files are a cache of this machine's
// states, never an interchange format) and fold every byte into a Checksum64 as it passes, so a
// reader can check a payload while it streams it into place, without a second copy in memory.
// Reading past the end the caller declared is an error that names the file: a truncated file is
// refused, never half-read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tandem {

// A 64-bit FNV-1a over 8-byte words (the tail padded with zeros), finished with the length.
// Each word's step h' = (h ^ w) * prime is a bijection of h, so a change confined to one word
// always changes the result; that is what it is for (torn or corrupted files), not security.
class Checksum64 {
 public:
  void update(const void* data, size_t n);
  uint64_t value() const;  // of everything so far (does not end the stream)

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
  uint64_t bytes_ = 0;
  unsigned char tail_[8] = {};
  size_t n_tail_ = 0;
};

class BinaryFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class BinaryWriter {
 public:
  // f stays the caller's (not closed here); name is for messages.
  BinaryWriter(std::FILE* f, std::string name) : f_(f), name_(std::move(name)) {}
  void write(const void* data, size_t n);
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    write(&v, sizeof v);
  }
  void string(const std::string& s) {
    pod<uint64_t>(s.size());
    write(s.data(), s.size());
  }
  uint64_t bytes() const { return bytes_; }
  const Checksum64& checksum() const { return sum_; }

 private:
  std::FILE* f_;
  std::string name_;
  uint64_t bytes_ = 0;
  Checksum64 sum_;
};

class BinaryReader {
 public:
  // At most `limit` bytes are read from f (the rest of the declared payload); name for messages.
  BinaryReader(std::FILE* f, uint64_t limit, std::string name) : f_(f), left_(limit), name_(std::move(name)) {}
  // Throws BinaryFormatError when fewer than n bytes are left or the file ends early.
  void read(void* data, size_t n);
  template <typename T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    read(&v, sizeof v);
    return v;
  }
  // A length-prefixed string of at most max_len bytes.
  std::string string(size_t max_len = 4096);
  // A count of items of item_bytes each that must fit in what is left (so that a corrupted
  // count is refused before anything is allocated for it).
  uint64_t count(uint64_t item_bytes, const char* what);
  uint64_t left() const { return left_; }
  const Checksum64& checksum() const { return sum_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::FILE* f_;
  uint64_t left_;
  std::string name_;
  Checksum64 sum_;
};

}  // namespace tandem
