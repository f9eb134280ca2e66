// tandem-gen-model: writes a seeded random-weight Qwen3.5 (qwen35) GGUF model, or with --mmproj
// a Qwen3.5 vision tower (mmproj, projector qwen3vl_merger).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/ggml_type.h"
#include "model/hybrid_generator.h"
#include "model/qwen35/qwen35_generator.h"
#include "vision/vision_generator.h"

namespace {

void usage(FILE* f) {
  std::fprintf(f,
      "usage: tandem-gen-model --preset tiny|0.8b|2b|4b|policy -o OUT.gguf [options]\n"
      "       tandem-gen-model --preset lfm2-tiny|lfm2-350m|lfm2-1.2b|lfm2-2.6b|granite-tiny|granite-h-micro -o OUT.gguf\n"
      "                        [--type T] [--seed N] [--untied] [--vocab N] [--threads N]\n"
      "       tandem-gen-model --mmproj --preset tiny|0.8b|2b|4b|9b -o MMPROJ.gguf [--type T] [--seed N]\n"
      "\n"
      "Writes a Qwen3.5 (llama.cpp arch qwen35) GGUF with seeded random weights; with --mmproj the\n"
      "vision tower of that model size instead (llama.cpp's mmproj layout, projector qwen3vl_merger;\n"
      "tiny = the golden tower, out width 256; --type F32, F16 (default), BF16, Q8_0, Q4_0, Q4_K, Q5_K,\n"
      "Q6_K for its matrices).\n"
      "\n"
      "options:\n"
      "  --preset NAME          model shape: tiny (fast tests), 0.8b, 2b, 4b (real shapes), policy (the\n"
      "                         trained agent policy's e256-l4 shape: tools/train/shapes.py); the other\n"
      "                         hybrids (spec hybrids.md): lfm2-tiny, granite-tiny (tests), lfm2-350m,\n"
      "                         lfm2-1.2b, lfm2-2.6b, granite-h-micro (real shapes, dense FFN)\n"
      "  -o, --output FILE      output path (required)\n"
      "  --type FTYPE           F32 (default), F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,\n"
      "                         Q4_K, Q5_K, Q6_K, Q4_K_M, Q5_K_M (llama-quantize type rules)\n"
      "  --output-type TYPE     ggml type of the LM head (token_embd when tied), e.g. Q6_K\n"
      "  --embd-type TYPE       ggml type of token_embd when untied\n"
      "  --seed N               random seed (default 42)\n"
      "  --no-mtp               no MTP (NextN) block\n"
      "  --untied               separate output.weight\n"
      "  --layers N             override the number of trunk layers\n"
      "  --vocab N              embedding rows (pads the vocabulary with [PAD{id}] tokens)\n"
      "  --tokenizer-json FILE  embed a HF tokenizer.json vocabulary (default: built-in ~340 tokens)\n"
      "  --chat-template FILE   embed this Jinja chat template\n"
      "  --threads N            worker threads (default 2; output does not depend on it)\n"
      "  --mmproj               write the vision tower (mmproj) of the preset instead\n"
      "  -h, --help             this text\n");
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "tandem-gen-model: %s\n(run with --help for usage)\n", msg.c_str());
  std::exit(2);
}

long long parse_int(const std::string& opt, const std::string& v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > hi)
    die(opt + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
  return x;
}

unsigned long long parse_u64(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 0);
  if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0) die(opt + ": expected a non-negative integer, got '" + v + "'");
  return x;
}

tandem::GgmlType parse_type(const std::string& opt, const std::string& v) {
  auto t = tandem::ggml_type_from_name(v);
  if (!t) die(opt + ": unknown ggml type '" + v + "' (e.g. F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
  return *t;
}

std::string with_commas(long long v) {
  std::string s = std::to_string(v), r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) r += ',';
    r += s[i];
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tandem;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    usage(stderr);
    return 2;
  }
  std::string preset, out;
  GenOptions opt;
  bool untied = false;
  long long layers = -1;
  bool mmproj = false;
  bool seed_set = false, type_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) die(a + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--mmproj") {
      mmproj = true;
    } else if (a == "--preset") {
      preset = value();
    } else if (a == "-o" || a == "--output") {
      out = value();
    } else if (a == "--type") {
      opt.ftype = value();
      type_set = true;
      if (!qwen35_ftype_from_name(opt.ftype)) {
        std::string names;
        for (const auto& n : qwen35_ftype_names()) names += (names.empty() ? "" : ", ") + n;
        die("--type: unknown file type '" + opt.ftype + "' (expected one of " + names + ")");
      }
    } else if (a == "--output-type") {
      opt.output_type = parse_type(a, value());
    } else if (a == "--embd-type") {
      opt.embd_type = parse_type(a, value());
    } else if (a == "--seed") {
      opt.seed = parse_u64(a, value());
      seed_set = true;
    } else if (a == "--no-mtp") {
      opt.mtp = false;
    } else if (a == "--untied") {
      untied = true;
    } else if (a == "--layers") {
      layers = parse_int(a, value(), 1, 1024);
    } else if (a == "--vocab") {
      opt.n_vocab = parse_int(a, value(), 1, 0x7FFFFFFF);
    } else if (a == "--tokenizer-json") {
      opt.tokenizer_json = value();
    } else if (a == "--chat-template") {
      opt.chat_template_file = value();
    } else if (a == "--threads") {
      opt.n_threads = static_cast<int>(parse_int(a, value(), 1, 256));
    } else {
      die("unknown argument '" + a + "'");
    }
  }
  if (preset.empty()) die("--preset is required (tiny, 0.8b, 2b, 4b, policy; lfm2-tiny, lfm2-350m, lfm2-1.2b, lfm2-2.6b, granite-tiny, granite-h-micro)");
  if (out.empty()) die("-o OUT.gguf is required");
  if (mmproj) {
    try {
      vision::MmprojGenOptions g;
      g.shape = vision::VisionTowerShape::preset_shape(preset);
      if (type_set) {  // else the mmproj default, F16 (a text model's is F32)
        auto t = ggml_type_from_name(opt.ftype);
        if (!t) die("--type: unknown ggml type '" + opt.ftype + "' for an mmproj");
        g.type = *t;
      }
      if (seed_set) g.seed = opt.seed;
      g.n_threads = opt.n_threads;
      const size_t bytes = vision::write_mmproj(out, g);
      const auto& s = g.shape;
      std::printf("wrote %s: mmproj (qwen3vl_merger) %s, %lld blocks, C %lld, %lld heads, MLP %lld, out %lld, %s, %s bytes, seed %llu\n",
                  out.c_str(), preset.c_str(), static_cast<long long>(s.n_layer), static_cast<long long>(s.n_embd),
                  static_cast<long long>(s.n_head), static_cast<long long>(s.n_ff), static_cast<long long>(s.out_dim),
                  ggml_type_name(g.type), with_commas(static_cast<long long>(bytes)).c_str(),
                  static_cast<unsigned long long>(g.seed));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tandem-gen-model: %s\n", e.what());
      return 1;
    }
    return 0;
  }

  const auto hybrids = HybridShape::preset_names();
  if (std::find(hybrids.begin(), hybrids.end(), preset) != hybrids.end()) {
    try {
      HybridGenOptions h;
      h.shape = HybridShape::preset_shape(preset);
      if (untied) h.shape.tied = false;
      if (opt.n_vocab) h.shape.n_vocab = *opt.n_vocab;
      h.seed = opt.seed;
      h.ftype = opt.ftype;
      h.n_threads = opt.n_threads;
      const GenStats st = generate_hybrid_model(h, out);
      std::printf("wrote %s: %s %s, %lld layers, n_embd %lld, %s params, %s bytes, [%s], seed %llu, %.1f s\n", out.c_str(),
                  h.shape.arch.c_str(), preset.c_str(), static_cast<long long>(h.shape.n_layer()),
                  static_cast<long long>(h.shape.n_embd), with_commas(st.n_params).c_str(),
                  with_commas(static_cast<long long>(st.n_bytes)).c_str(), st.type_summary.c_str(),
                  static_cast<unsigned long long>(h.seed), st.seconds);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tandem-gen-model: %s\n", e.what());
      return 1;
    }
    return 0;
  }

  try {
    opt.shape = Qwen35Shape::preset_shape(preset);
    if (untied) opt.shape.tied = false;
    if (layers > 0) opt.shape.n_layer = layers;
    const GenStats st = generate_qwen35_model(opt, out);
    const Qwen35Shape& s = opt.shape;
    std::printf("wrote %s: qwen35 %s, %lld+%d layers, n_embd %lld, %s params, %s bytes, %s [%s], seed %llu, %.1f s\n",
                out.c_str(), preset.c_str(), static_cast<long long>(s.n_layer), opt.mtp ? s.n_mtp : 0,
                static_cast<long long>(s.n_embd), with_commas(st.n_params).c_str(),
                with_commas(static_cast<long long>(st.n_bytes)).c_str(), qwen35_ftype_from_name(opt.ftype)->name.c_str(),
                st.type_summary.c_str(), static_cast<unsigned long long>(opt.seed), st.seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-gen-model: %s\n", e.what());
    return 1;
  }
  return 0;
}
