// tandem-import-weights: trained weights (a directory from tools/train: manifest.json + raw F32
// tensors, model/qwen35/trained_weights.h) into a qwen35 GGUF written by the generator's writer,
// with every llama.cpp key, the tokenizer and its chat template.
//
//   tandem-import-weights -w DIR -o OUT.gguf [--type F16] [--tokenizer-json tokenizer.json]
//                         [--chat-template FILE] [--threads N]
//
// --type defaults to F16 (then tandem-quantize OUT.gguf Q.gguf Q4_0); F32 keeps the trained
// values exactly (the trainer's tests compare Tandem's logits with torch's on it). Without
// --tokenizer-json the built-in ~340-token vocabulary is embedded (tests).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "model/qwen35/trained_weights.h"

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: tandem-import-weights -w DIR -o OUT.gguf [--type F16|F32|BF16|...] [--tokenizer-json FILE]\n"
               "                             [--chat-template FILE] [--threads N]\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tandem;
  std::string dir, out, type = "F16", tokenizer_json, chat_template;
  int threads = 2;
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
      } else if (a == "-w" || a == "--weights") dir = value();
      else if (a == "-o" || a == "--output") out = value();
      else if (a == "--type") type = value();
      else if (a == "--tokenizer-json") tokenizer_json = value();
      else if (a == "--chat-template") chat_template = value();
      else if (a == "--threads") threads = std::atoi(value().c_str());
      else throw std::invalid_argument("unknown argument '" + a + "'");
    }
    if (dir.empty() || out.empty()) throw std::invalid_argument("-w DIR and -o OUT.gguf are required");
    if (!qwen35_ftype_from_name(type)) throw std::invalid_argument("--type: unknown file type '" + type + "'");
    if (threads < 1) throw std::invalid_argument("--threads: a positive integer");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-import-weights: %s\n", e.what());
    usage(stderr);
    return 2;
  }
  try {
    const TrainedWeights tw = TrainedWeights::read(dir);
    GenOptions opt = tw.gen_options();  // refers to tw: used while tw lives
    opt.ftype = type;
    opt.tokenizer_json = tokenizer_json;
    opt.chat_template_file = chat_template;
    opt.n_threads = threads;
    tw.check_matches(plan_qwen35(opt));
    const GenStats st = generate_qwen35_model(opt, out);
    const Qwen35Shape& s = tw.shape();
    std::printf("wrote %s: qwen35 %lld+%d layers, n_embd %lld, n_vocab %lld, %lld params, %zu bytes, %s [%s]\n",
                out.c_str(), static_cast<long long>(s.n_layer), s.n_mtp, static_cast<long long>(s.n_embd),
                static_cast<long long>(s.n_vocab), static_cast<long long>(st.n_params), st.n_bytes, type.c_str(),
                st.type_summary.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-import-weights: %s\n", e.what());
    return 1;
  }
  return 0;
}
