// The trimmed draft head (paper §4.3, docs/speculation.md): R rows of the LM head chosen for
// drafting, stored in the GGUF beside the full head together with each row's token id.
//
// Row choice: every special token (tokenizer token type control / user-defined) and every byte
// token (type BYTE, or a one-character token of the byte-level BPE alphabet) first, then the
// tokens of a corpus by falling frequency, then — if rows remain — the lowest ids not chosen yet
// (byte-level BPE ids follow merge order, a proxy for frequency in the tokenizer's own corpus).
// The table is stored in ascending id order, so greedy ties resolve as over the full head.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace tandem {

inline constexpr int64_t kDefaultDraftRows = 32768;

// Token ids of a corpus file: a JSON document (numbers anywhere inside arrays; objects
// contribute their "output" member, else "tokens", else all their values — so a list of
// recorded requests counts only what the model generated) or whitespace/comma-separated ids.
// Throws std::runtime_error naming the file on unreadable input or a non-integer id.
std::vector<int32_t> read_token_corpus(const std::string& path);

struct DraftRowSelection {
  std::vector<int32_t> ids;  // ascending
  int64_t special_and_byte = 0;  // how many rows the special and byte tokens took
  int64_t from_corpus = 0;       // rows chosen by corpus frequency
  int64_t filled = 0;            // rows filled with the lowest remaining ids
};

// Chooses min(rows, n_vocab) rows for a vocabulary of n_vocab embedding rows. The file's
// tokenizer keys (tokenizer.ggml.tokens / token_type) name the special and byte tokens; a file
// without them gets none. Corpus ids outside [0, n_vocab) throw std::invalid_argument.
DraftRowSelection select_draft_rows(const GgufFile& f, int64_t n_vocab, std::span<const int32_t> corpus, int64_t rows);

struct TrimReport {
  DraftRowSelection selection;
  std::string tensor_name;    // the Tensor form's tensor; empty in the Ids form
  uint64_t head_bytes = 0;   // the full LM head the drafter would otherwise read
  uint64_t draft_bytes = 0;  // the trimmed matrix (on disk in the Tensor form, gathered at load in the Ids form)
};

// How a file carries the draft head (qwen35_weights.h):
//  Ids: the token-id table alone; Tandem gathers the rows when it loads the file, and llama.cpp
//    loads the file unchanged (it ignores unknown keys, but refuses tensors its model does not
//    create: "wrong number of tensors"). The shipped policy's form.
//  Tensor: the table and the rows as a tensor of their own (R rows on disk, nothing gathered).
enum class DraftForm { Ids, Tensor };

// Rewrites src as dst with every key and tensor copied (an existing draft head is replaced)
// plus kDraftTokenIdsKey and, in the Tensor form, the draft matrix (rows of the MTP head's
// output matrix: nextn.shared_head_head, else output.weight, else the tied token_embd, in their
// storage type). Throws GgufError / std::invalid_argument (no MTP block, bad corpus ids, rows < 1).
TrimReport write_trimmed_draft_file(const std::string& src, const std::string& dst, std::span<const int32_t> corpus,
                                    int64_t rows = kDefaultDraftRows, DraftForm form = DraftForm::Ids);

}  // namespace tandem
