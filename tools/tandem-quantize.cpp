// tandem-quantize: a qwen35 GGUF (F32/F16/BF16) re-encoded with another file type by Tandem's own
// quantizers and llama-quantize's per-tensor type rules (model/qwen35/qwen35_requantize.h).
//
//   tandem-quantize IN.gguf OUT.gguf Q4_0 [--output-type Q6_K] [--threads N]
//
// The tied 151,669-row head of a Q4_0 file becomes Q6_K when n_embd is a multiple of 256 and
// Q8_0 otherwise, as llama-quantize decides; --output-type overrides it (llama-quantize's
// --output-tensor-type).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/qwen35/qwen35_requantize.h"

namespace {

void usage(FILE* f) {
  std::string names;
  for (const auto& n : tandem::qwen35_ftype_names()) names += (names.empty() ? "" : " ") + n;
  std::fprintf(f,
               "usage: tandem-quantize IN.gguf OUT.gguf TYPE [--output-type T] [--threads N]\n"
               "  TYPE: %s\n"
               "  --output-type T   ggml type of the LM head (token_embd when tied), e.g. Q6_K, Q5_0\n"
               "  --threads N       encoder threads (default 2; the output does not depend on it)\n",
               names.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tandem;
  std::vector<std::string> pos;
  RequantizeOptions opt;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else if (a == "--output-type") {
        const std::string v = value();
        const auto t = ggml_type_from_name(v);
        if (!t) throw std::invalid_argument("--output-type: unknown ggml type '" + v + "'");
        opt.output_type = *t;
      } else if (a == "--threads") {
        opt.n_threads = std::atoi(value().c_str());
        if (opt.n_threads < 1) throw std::invalid_argument("--threads: a positive integer");
      } else if (!a.empty() && a[0] == '-') {
        throw std::invalid_argument("unknown option " + a);
      } else {
        pos.push_back(a);
      }
    }
    if (pos.size() != 3) throw std::invalid_argument("expected IN.gguf OUT.gguf TYPE");
    const auto ft = qwen35_ftype_from_name(pos[2]);
    if (!ft) throw std::invalid_argument("unknown file type '" + pos[2] + "'");
    opt.ftype = *ft;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-quantize: %s\n", e.what());
    usage(stderr);
    return 2;
  }
  try {
    const auto in = GgufFile::open(pos[0]);
    RequantizeStats st;
    requantize_qwen35(*in, opt, &st).write_file(pos[1]);
    std::printf("wrote %s: %s [%s], %ju bytes\n", pos[1].c_str(), opt.ftype.name.c_str(), st.type_summary.c_str(),
                static_cast<uintmax_t>(std::filesystem::file_size(pos[1])));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-quantize: %s\n", e.what());
    return 1;
  }
  return 0;
}
