#include "text/tokenizer.h"

#include <stdexcept>

#include "text/byte_level.h"
#include "text/normalizer.h"
#include "text/pre_tokenizer.h"
#include "text/scratch.h"
#include "text/utf8.h"

namespace tandem::text {

Tokenizer::Tokenizer(Vocabulary vocab, TokenizerOptions opt)
    : vocab_(std::move(vocab)), opt_(opt), specials_(vocab_.specials()) {}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& f, TokenizerOptions opt) {
  return std::make_unique<Tokenizer>(Vocabulary::from_gguf(f), opt);
}

std::unique_ptr<Tokenizer> Tokenizer::from_file(const std::string& path, TokenizerOptions opt) {
  std::unique_ptr<GgufFile> f;
  try {
    f = GgufFile::open(path);
  } catch (const GgufError& e) {
    throw TokenizerError(e.what());
  }
  return from_gguf(*f, opt);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, EncodeOptions opt) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  encode(text, out, opt);
  return out;
}

void Tokenizer::encode(std::string_view text, std::vector<int32_t>& out, EncodeOptions opt,
                       std::vector<uint32_t>* offsets) const {
  if (opt.add_special && vocab_.add_bos()) {
    out.push_back(*vocab_.bos());
    if (offsets) offsets->push_back(0);
  }
  size_t pos = 0;
  while (pos < text.size()) {
    const auto m = specials_.find(text, pos, opt.parse_special);
    if (m.pos > pos) encode_section(text.substr(pos, m.pos - pos), pos, out, offsets);
    if (m.len == 0) break;
    out.push_back(m.id);
    if (offsets) offsets->push_back(static_cast<uint32_t>(m.pos));
    pos = m.pos + m.len;
  }
}

void Tokenizer::encode_section(std::string_view section, size_t base, std::vector<int32_t>& out,
                               std::vector<uint32_t>* offsets) const {
  // Per-thread scratch: encode() allocates nothing for sections up to kScratchKeepBytes' worth;
  // a larger section's buffers are freed when it is done (text/scratch.h), so that no thread keeps
  // the largest input it ever saw.
  thread_local Scratch<std::vector<uint32_t>> cps_s;
  thread_local Scratch<std::vector<uint32_t>> cp_offset_s;  // byte offset (in section) of each code point
  thread_local Scratch<std::vector<std::pair<uint32_t, uint32_t>>> pieces_s;
  thread_local Scratch<std::string> piece_bytes_s;
  thread_local Scratch<std::vector<uint32_t>> byte_cp_s;  // piece byte -> code point index (offsets only)
  thread_local Scratch<std::string> spelled_s;
  ScratchTrim trim(cps_s, cp_offset_s, pieces_s, piece_bytes_s, byte_cp_s, spelled_s);
  std::vector<uint32_t>& cps = cps_s.buf;
  std::vector<uint32_t>& cp_offset = cp_offset_s.buf;
  std::vector<std::pair<uint32_t, uint32_t>>& pieces = pieces_s.buf;
  std::string& piece_bytes = piece_bytes_s.buf;
  std::vector<uint32_t>& byte_cp = byte_cp_s.buf;
  cps.clear();
  cp_offset.clear();
  pieces.clear();

  for (size_t i = 0; i < section.size();) {
    cp_offset.push_back(static_cast<uint32_t>(i));
    cps.push_back(next_code_point(section, i));
  }
  bool normalized = false;
  if (opt_.nfc) normalized = nfc_normalize(cps);

  pre_tokenize(vocab_.pre(), cps, pieces);
  for (const auto& [b, e] : pieces) {
    piece_bytes.clear();
    if (offsets && !normalized) byte_cp.clear();
    for (uint32_t k = b; k < e; ++k) {
      append_utf8(piece_bytes, cps[k]);
      if (offsets && !normalized) byte_cp.resize(piece_bytes.size(), k);
    }
    const size_t first = out.size();
    if (vocab_.ignore_merges()) {
      // The piece's byte-level spelling as a whole vocabulary entry, if there is one.
      std::string& spelled = spelled_s.buf;
      spelled.clear();
      for (unsigned char ch : piece_bytes) spelled += byte_token_strings()[ch];
      if (const auto id = vocab_.find(spelled)) out.push_back(*id);
      else vocab_.merges().encode(piece_bytes, out);
    } else {
      vocab_.merges().encode(piece_bytes, out);
    }
    if (offsets) {
      size_t at = 0;  // byte position inside the piece
      for (size_t t = first; t < out.size(); ++t) {
        const uint32_t off = normalized ? 0 : cp_offset[byte_cp[at]];
        offsets->push_back(static_cast<uint32_t>(base + off));
        at += vocab_.token_bytes(out[t]).size();
        if (at >= piece_bytes.size()) at = piece_bytes.size() - 1;
      }
    }
  }
}

void Tokenizer::append_token(std::string& out, int32_t id, bool render_special) const {
  if (!vocab_.valid_id(id)) throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(vocab_.size()) + " tokens)");
  if (!render_special && vocab_.token_type(id) == TokenType::Control) return;
  out.append(vocab_.token_bytes(id));
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  for (int32_t id : ids) append_token(out, id, render_special);
  return out;
}

std::string_view StreamDecoder::push(int32_t id) {
  tok_.append_token(pending_, id, special_);
  const size_t hold = incomplete_utf8_tail(pending_);
  out_.assign(pending_, 0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out_;
}

std::string_view StreamDecoder::flush() {
  out_.swap(pending_);
  pending_.clear();
  return out_;
}

}  // namespace tandem::text
