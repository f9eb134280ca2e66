// tandem-trim-draft: adds a trimmed draft head to a qwen35 GGUF (paper §4.3, docs/speculation.md).
//
//   tandem-trim-draft -m model.gguf -o model-draft.gguf [--rows 32768] [--corpus tokens.json] [--form ids|tensor]
//
// The output is the input with every key and tensor copied, plus tandem.draft.token_ids (the
// original id of each row of the draft matrix: R rows of the MTP head's output matrix). Default
// (--form ids): the ids alone, and Tandem gathers the rows when it loads the file, which llama.cpp
// still loads unchanged; --form tensor also stores the rows as blk.{n}.nextn.draft_head.weight
// (in the head's storage type), a tensor llama.cpp refuses. Rows: special and byte tokens, then the corpus tokens by frequency,
// then the lowest remaining ids. Corpus: a JSON array of ids (nested arrays and recorded
// requests' "output" fields are read too) or whitespace/comma-separated ids.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "model/draft_vocab.h"

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: tandem-trim-draft -m MODEL.gguf -o OUT.gguf [--rows R] [--corpus FILE] [--form ids|tensor]\n"
               "  --rows R        rows of the draft matrix (default %lld, capped by n_vocab)\n"
               "  --form F        ids: the token-id table only, rows gathered at load (default; the file\n"
               "                  still loads in llama.cpp); tensor: the rows stored as a tensor too\n"
               "  --corpus FILE   token ids ranked by frequency (JSON array / recorded requests, or\n"
               "                  whitespace-separated ids), e.g. a replayed trace's outputs\n",
               static_cast<long long>(tandem::kDefaultDraftRows));
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, out_path, corpus_path;
  long long rows = tandem::kDefaultDraftRows;
  tandem::DraftForm form = tandem::DraftForm::Ids;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tandem-trim-draft: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-m" || a == "--model") model_path = next();
    else if (a == "-o" || a == "--out") out_path = next();
    else if (a == "--corpus") corpus_path = next();
    else if (a == "--form") {
      const std::string v = next();
      if (v == "ids") form = tandem::DraftForm::Ids;
      else if (v == "tensor") form = tandem::DraftForm::Tensor;
      else {
        std::fprintf(stderr, "tandem-trim-draft: --form expects ids or tensor, got '%s'\n", v.c_str());
        return 2;
      }
    }
    else if (a == "--rows") {
      const std::string v = next();
      char* end = nullptr;
      rows = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || rows < 1) {
        std::fprintf(stderr, "tandem-trim-draft: --rows expects a positive integer, got '%s'\n", v.c_str());
        return 2;
      }
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "tandem-trim-draft: unknown argument '%s'\n", a.c_str());
      usage();
      return 2;
    }
  }
  if (model_path.empty() || out_path.empty()) {
    usage();
    return 2;
  }
  try {
    std::vector<int32_t> corpus;
    if (!corpus_path.empty()) corpus = tandem::read_token_corpus(corpus_path);
    const tandem::TrimReport r = tandem::write_trimmed_draft_file(model_path, out_path, corpus, rows, form);
    const auto& s = r.selection;
    std::printf("%s: %zu draft rows (%lld special/byte, %lld from %zu corpus tokens, %lld filled by id)\n",
                out_path.c_str(), s.ids.size(), static_cast<long long>(s.special_and_byte),
                static_cast<long long>(s.from_corpus), corpus.size(), static_cast<long long>(s.filled));
    std::printf("draft matrix %s: %.1f MiB (full head %.1f MiB)\n",
                r.tensor_name.empty() ? "(gathered at load)" : r.tensor_name.c_str(), r.draft_bytes / 1048576.0,
                r.head_bytes / 1048576.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-trim-draft: %s\n", e.what());
    return 1;
  }
  return 0;
}
