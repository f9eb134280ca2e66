// tandem-logits: the logits Tandem computes for a list of token ids, so that anyone
// can compare Tandem with another engine on the same GGUF file.
//
//   tandem-logits -m model.gguf --tokens 1,2,3 [--split 2,3] [--out logits.f32]
//                 [--activations converted|exact]
//
// Output file: raw little-endian float32, [positions][n_vocab] (every position).
// --split P1,P2,... processes the tokens as separate forward calls cut at those
// positions (the state carries over), e.g. to compare batch and incremental paths.
// --activations exact multiplies dequantized weights with float activations instead of
// converting activations as ggml-cpu does (the default, llama.cpp's numbers).
// --mtp-out FILE also writes the MTP (NextN) head's logits, [positions][n_vocab]: row t combines
// token t with the trunk's final normed hidden state of position t-1 (zeros for t = 0), as
// tests/reference/qwen35_ref.py --mtp-out and tools/train compute them; row t predicts token t+1.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "model/architectures.h"
#include "model/qwen35/qwen35_model.h"  // the MTP head (--mtp-out)

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: tandem-logits -m MODEL.gguf (--tokens 1,2,3 | --tokens-file FILE.json)\n"
               "                     [--split P1,P2,...] [--gdn auto|chunked|recurrent] [--out FILE.f32]\n"
               "                     [--top N] [--activations converted|exact] [--mtp-out FILE.f32]\n"
               "Writes raw float32 logits [n_tokens][n_vocab]; prints the top-N ids of the last row.\n");
}

// Every integer in the text (accepts "1,2,3", "[1, 2, 3]" and whitespace).
std::vector<int64_t> parse_ints(const std::string& text, const std::string& what) {
  std::vector<int64_t> v;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if ((c >= '0' && c <= '9') || c == '-') {
      size_t used = 0;
      try {
        v.push_back(std::stoll(text.substr(i), &used));
      } catch (const std::exception&) {
        throw std::runtime_error(what + ": bad integer at offset " + std::to_string(i));
      }
      i += used;
    } else if (c == ',' || c == '[' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      ++i;
    } else {
      throw std::runtime_error(what + ": unexpected character '" + std::string(1, c) + "' at offset " +
                               std::to_string(i) + " (expected a list of integers)");
    }
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, tokens_arg, tokens_file, split_arg, out_path, mtp_out, gdn = "auto", activations = "converted";
  int top = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tandem-logits: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-m" || a == "--model") model_path = next();
    else if (a == "--tokens") tokens_arg = next();
    else if (a == "--tokens-file") tokens_file = next();
    else if (a == "--split") split_arg = next();
    else if (a == "--out" || a == "-o") out_path = next();
    else if (a == "--mtp-out") mtp_out = next();
    else if (a == "--gdn") gdn = next();
    else if (a == "--activations") activations = next();
    else if (a == "--top") top = std::atoi(next().c_str());
    else if (a == "-h" || a == "--help") { usage(); return 0; }
    else { std::fprintf(stderr, "tandem-logits: unknown argument '%s'\n", a.c_str()); usage(); return 2; }
  }
  if (model_path.empty() || (tokens_arg.empty() == tokens_file.empty())) {
    usage();
    return 2;
  }
  try {
    if (!tokens_file.empty()) {
      std::ifstream f(tokens_file);
      if (!f) throw std::runtime_error("cannot open tokens file '" + tokens_file + "'");
      std::stringstream ss;
      ss << f.rdbuf();
      tokens_arg = ss.str();
    }
    std::vector<int32_t> tokens;
    for (int64_t t : parse_ints(tokens_arg, "tokens")) tokens.push_back(static_cast<int32_t>(t));
    if (tokens.empty()) throw std::runtime_error("no tokens given");
    std::vector<int64_t> splits = parse_ints(split_arg, "--split");
    splits.push_back(static_cast<int64_t>(tokens.size()));

    if (activations != "converted" && activations != "exact")
      throw std::runtime_error("--activations: expected converted or exact, got '" + activations + "'");
    auto model = tandem::load_model(model_path, tandem::LoadOptions{});
    if (activations == "exact") model->set_activation_mode(tandem::ActivationMode::Exact);
    std::fprintf(stderr, "%s\n", model->shape().summary.c_str());
    auto seq = model->new_sequence(static_cast<int64_t>(tokens.size()));
    tandem::ForwardOptions opt;
    opt.logits = tandem::LogitsMode::All;
    opt.hidden = !mtp_out.empty();
    if (opt.hidden && !model->mtp_model()) throw std::runtime_error("--mtp-out: the model has no MTP head");
    const int64_t n_embd = model->shape().n_embd;
    std::vector<float> hidden;  // every position's trunk hidden state (--mtp-out)
    if (gdn == "chunked") opt.gdn = tandem::GdnAlgorithm::Chunked;
    else if (gdn == "recurrent") opt.gdn = tandem::GdnAlgorithm::Recurrent;
    else if (gdn != "auto") throw std::runtime_error("--gdn: expected auto, chunked or recurrent, got '" + gdn + "'");

    const int64_t n_vocab = model->shape().n_vocab;
    std::vector<float> all;
    all.reserve(tokens.size() * static_cast<size_t>(n_vocab));
    tandem::ForwardOutput out;
    int64_t start = 0;
    for (int64_t end : splits) {
      if (end <= start || end > static_cast<int64_t>(tokens.size()))
        throw std::runtime_error("--split: positions must be increasing and inside (0, n_tokens)");
      model->forward(*seq, std::span<const int32_t>(tokens.data() + start, end - start), opt, out);
      all.insert(all.end(), out.logits.begin(), out.logits.end());
      hidden.insert(hidden.end(), out.hidden.begin(), out.hidden.end());
      start = end;
    }
    if (!out_path.empty()) {
      std::ofstream f(out_path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(all.data()), static_cast<std::streamsize>(all.size() * sizeof(float)));
      if (!f) throw std::runtime_error("cannot write '" + out_path + "'");
    }
    if (!mtp_out.empty()) {
      // The head sees position t's token with the hidden state of t-1, as the drafter feeds it.
      const int64_t T = static_cast<int64_t>(tokens.size());
      std::vector<float> hidden_in(static_cast<size_t>(T * n_embd), 0.0f);
      std::copy(hidden.begin(), hidden.end() - n_embd, hidden_in.begin() + n_embd);
      auto* mtp = model->mtp_model();
      auto st = mtp->new_mtp_state(T);
      tandem::ForwardOutput mo;
      mtp->mtp_forward(*st, tokens, hidden_in.data(), tandem::LogitsMode::All, mo);
      std::ofstream f(mtp_out, std::ios::binary);
      f.write(reinterpret_cast<const char*>(mo.logits.data()), static_cast<std::streamsize>(mo.logits.size() * sizeof(float)));
      if (!f) throw std::runtime_error("cannot write '" + mtp_out + "'");
    }
    // Top-N of the last row, for a human.
    const float* last = all.data() + (tokens.size() - 1) * static_cast<size_t>(n_vocab);
    std::vector<int64_t> idx(static_cast<size_t>(n_vocab));
    for (int64_t i = 0; i < n_vocab; ++i) idx[i] = i;
    const int64_t n = std::min<int64_t>(top, n_vocab);
    std::partial_sort(idx.begin(), idx.begin() + n, idx.end(), [&](int64_t a, int64_t b) { return last[a] > last[b]; });
    std::printf("last position %zu, top %lld:", tokens.size() - 1, static_cast<long long>(n));
    for (int64_t i = 0; i < n; ++i) std::printf(" %lld(%.4f)", static_cast<long long>(idx[i]), last[idx[i]]);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-logits: %s\n", e.what());
    return 1;
  }
  return 0;
}
