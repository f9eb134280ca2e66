#include "model/draft_vocab.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "gguf/gguf_writer.h"
#include "model/qwen35/qwen35_hparams.h"
#include "model/qwen35/qwen35_weights.h"

namespace tandem {
namespace {

void collect_ids(const nlohmann::json& j, const std::string& path, std::vector<int32_t>& out) {
  if (j.is_number_integer() || j.is_number_unsigned()) {
    const int64_t v = j.get<int64_t>();
    if (v < 0 || v > INT32_MAX) throw std::runtime_error(path + ": token id " + std::to_string(v) + " out of range");
    out.push_back(static_cast<int32_t>(v));
  } else if (j.is_array()) {
    for (const auto& e : j) collect_ids(e, path, out);
  } else if (j.is_object()) {
    if (j.contains("output")) collect_ids(j.at("output"), path, out);
    else if (j.contains("tokens")) collect_ids(j.at("tokens"), path, out);
    else for (const auto& [k, v] : j.items()) collect_ids(v, path, out);
  } else if (j.is_number_float()) {
    throw std::runtime_error(path + ": expected integer token ids, found " + j.dump());
  }
  // strings, booleans, null: not token ids (e.g. a "policy" field of a trace record)
}

// One code point from a UTF-8 string that holds exactly one, else -1.
int64_t single_code_point(const std::string& s) {
  if (s.empty()) return -1;
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  size_t n;
  uint32_t cp;
  if (b(0) < 0x80) n = 1, cp = b(0);
  else if ((b(0) & 0xE0) == 0xC0) n = 2, cp = b(0) & 0x1F;
  else if ((b(0) & 0xF0) == 0xE0) n = 3, cp = b(0) & 0x0F;
  else if ((b(0) & 0xF8) == 0xF0) n = 4, cp = b(0) & 0x07;
  else return -1;
  if (s.size() != n) return -1;
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b(i) & 0x3F);
  }
  return cp;
}

// GPT-2's bytes_to_unicode alphabet: the printable Latin-1 bytes stand for themselves, the other
// 68 bytes for U+0100 .. U+0143.
bool is_byte_level_char(int64_t cp) {
  return (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF) ||
         (cp >= 0x100 && cp < 0x100 + 68);
}

}  // namespace

std::vector<int32_t> read_token_corpus(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the token corpus");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<int32_t> ids;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '[' || text[first] == '{')) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(path + ": invalid JSON: " + e.what());
    }
    collect_ids(j, path, ids);
    return ids;
  }
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (std::isspace(static_cast<unsigned char>(text[i])) || text[i] == ',')) ++i;
    if (i == text.size()) break;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j])) && text[j] != ',') ++j;
    const std::string word = text.substr(i, j - i);
    if (word.find_first_not_of("0123456789") != std::string::npos || word.size() > 10)
      throw std::runtime_error(path + ": '" + word + "' is not a token id");
    const int64_t v = std::stoll(word);
    if (v > INT32_MAX) throw std::runtime_error(path + ": token id " + word + " out of range");
    ids.push_back(static_cast<int32_t>(v));
    i = j;
  }
  return ids;
}

DraftRowSelection select_draft_rows(const GgufFile& f, int64_t n_vocab, std::span<const int32_t> corpus, int64_t rows) {
  if (rows < 1) throw std::invalid_argument("draft rows must be >= 1, got " + std::to_string(rows));
  if (n_vocab < 1) throw std::invalid_argument("empty vocabulary");
  const int64_t R = std::min(rows, n_vocab);
  std::vector<char> chosen(static_cast<size_t>(n_vocab), 0);
  DraftRowSelection sel;
  std::vector<int32_t> ids;
  auto take = [&](int64_t id) {
    if (static_cast<int64_t>(ids.size()) >= R || chosen[static_cast<size_t>(id)]) return false;
    chosen[static_cast<size_t>(id)] = 1;
    ids.push_back(static_cast<int32_t>(id));
    return true;
  };

  // 1. Special and byte tokens.
  const std::vector<std::string>* toks = f.get_string_array("tokenizer.ggml.tokens");
  const std::vector<int64_t>* types = f.get_int_array("tokenizer.ggml.token_type");
  const int64_t n_known = toks ? std::min<int64_t>(n_vocab, static_cast<int64_t>(toks->size())) : 0;
  for (int64_t id = 0; id < n_known; ++id) {
    const int64_t type = types && id < static_cast<int64_t>(types->size()) ? (*types)[id] : 1;
    const bool special = type == 3 || type == 4;  // control, user-defined
    const bool byte = type == 6 || (type == 1 && is_byte_level_char(single_code_point((*toks)[id])));
    if ((special || byte) && take(id)) ++sel.special_and_byte;
  }

  // 2. Corpus tokens by falling frequency (ties: lower id first).
  std::vector<int64_t> count(static_cast<size_t>(n_vocab), 0);
  for (int32_t id : corpus) {
    if (id < 0 || id >= n_vocab)
      throw std::invalid_argument("corpus token id " + std::to_string(id) + " outside the vocabulary [0, " +
                                  std::to_string(n_vocab) + ")");
    ++count[static_cast<size_t>(id)];
  }
  std::vector<int32_t> order;
  for (int64_t id = 0; id < n_vocab; ++id)
    if (count[static_cast<size_t>(id)] > 0) order.push_back(static_cast<int32_t>(id));
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return count[static_cast<size_t>(a)] > count[static_cast<size_t>(b)]; });
  for (int32_t id : order)
    if (take(id)) ++sel.from_corpus;

  // 3. Fill with the lowest remaining ids.
  for (int64_t id = 0; id < n_vocab && static_cast<int64_t>(ids.size()) < R; ++id)
    if (take(id)) ++sel.filled;

  std::sort(ids.begin(), ids.end());
  sel.ids = std::move(ids);
  return sel;
}

TrimReport write_trimmed_draft_file(const std::string& src, const std::string& dst, std::span<const int32_t> corpus,
                                    int64_t rows, DraftForm form) {
  if (src == dst) throw std::invalid_argument("tandem-trim-draft: the output must be a new file, not the input");
  const std::unique_ptr<GgufFile> f = GgufFile::open(src);
  Qwen35HParams hp = Qwen35HParams::from_gguf(*f);
  const Qwen35Weights w = Qwen35Weights::load(*f, hp);
  if (!w.mtp) f->fail("no MTP block (nextn_predict_layers = 0): nothing drafts, so there is no draft head to trim");
  const WeightMatrix& head = w.mtp->shared_head_head ? *w.mtp->shared_head_head : w.output;

  TrimReport rep;
  rep.selection = select_draft_rows(*f, hp.n_vocab, corpus, rows);
  const std::string head_name = draft_head_tensor_name(hp.n_layer);
  if (form == DraftForm::Tensor) rep.tensor_name = head_name;
  const int64_t R = static_cast<int64_t>(rep.selection.ids.size());
  rep.head_bytes = static_cast<uint64_t>(head.rows) * head.row_stride;
  rep.draft_bytes = static_cast<uint64_t>(R) * head.row_stride;

  GgufWriter wr(f->alignment());
  for (const auto& [key, value] : f->metadata())
    if (key != kDraftTokenIdsKey) wr.set_value(key, value);
  wr.set_array_i32(kDraftTokenIdsKey, rep.selection.ids);
  for (const GgufTensorInfo& t : f->tensors()) {
    if (t.name == head_name) continue;  // an earlier draft head: replaced
    wr.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                  std::vector<uint8_t>(t.data, t.data + t.nbytes));
  }
  if (form == DraftForm::Ids) {
    wr.write_file(dst);
    return rep;
  }
  std::vector<uint8_t> data(static_cast<size_t>(rep.draft_bytes));
  for (int64_t r = 0; r < R; ++r)
    std::copy_n(head.row(rep.selection.ids[static_cast<size_t>(r)]), head.row_stride, data.data() + r * head.row_stride);
  wr.add_tensor(rep.tensor_name, head.type, {head.cols, R}, std::move(data));
  wr.write_file(dst);
  return rep;
}

}  // namespace tandem
