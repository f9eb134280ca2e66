#include "text/normalizer.h"

#include <unicode/unorm2.h>
#include <unicode/utf16.h>

#include <stdexcept>
#include <string>

#include "text/scratch.h"

namespace tandem::text {
namespace {

const UNormalizer2* nfc_instance() {
  static const UNormalizer2* n = [] {
    UErrorCode err = U_ZERO_ERROR;
    const UNormalizer2* p = unorm2_getNFCInstance(&err);
    if (U_FAILURE(err)) throw std::runtime_error(std::string("ICU NFC normalizer unavailable: ") + u_errorName(err));
    return p;
  }();
  return n;
}

}  // namespace

bool nfc_normalize(std::vector<uint32_t>& cps) {
  bool simple = true;
  for (uint32_t cp : cps) {
    if (cp >= 0x300) {
      simple = false;
      break;
    }
  }
  if (simple) return false;

  // Per-thread scratch, freed after a text that grew it past kScratchKeepBytes (text/scratch.h).
  thread_local Scratch<std::u16string> src_s, dst_s;
  ScratchTrim trim(src_s, dst_s);
  std::u16string& src = src_s.buf;
  std::u16string& dst = dst_s.buf;
  src.clear();
  for (uint32_t cp : cps) {
    if (cp >= 0x10000) {
      src += static_cast<char16_t>(U16_LEAD(cp));
      src += static_cast<char16_t>(U16_TRAIL(cp));
    } else {
      src += static_cast<char16_t>(cp);
    }
  }
  const UNormalizer2* n = nfc_instance();
  UErrorCode err = U_ZERO_ERROR;
  const UChar* s = reinterpret_cast<const UChar*>(src.data());
  const int32_t len = static_cast<int32_t>(src.size());
  if (unorm2_isNormalized(n, s, len, &err) && U_SUCCESS(err)) return false;

  err = U_ZERO_ERROR;
  dst.resize(src.size() * 3 + 16);  // NFC can grow text (at most 3x for the worst singletons)
  int32_t out_len = unorm2_normalize(n, s, len, reinterpret_cast<UChar*>(dst.data()),
                                     static_cast<int32_t>(dst.size()), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    dst.resize(static_cast<size_t>(out_len));
    err = U_ZERO_ERROR;
    out_len = unorm2_normalize(n, s, len, reinterpret_cast<UChar*>(dst.data()), out_len, &err);
  }
  if (U_FAILURE(err)) return false;  // leave the text as it was rather than fail the whole request

  cps.clear();
  for (int32_t i = 0; i < out_len;) {
    UChar32 c;
    U16_NEXT(dst.data(), i, out_len, c);
    cps.push_back(static_cast<uint32_t>(c));
  }
  return true;
}

}  // namespace tandem::text
