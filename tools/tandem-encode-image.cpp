// tandem-encode-image: one image through the vision tower, as llama.cpp's mtmd would feed it to
// the text model — prints the decoded and preprocessed sizes, the chunk layout (positions and
// M-RoPE ids of the image rows), the timing, and writes the embeddings as raw float32
// [n_tokens][n_embd] (the golden files' layout), so any engine can be compared with it.
//
//   tandem-encode-image -m TEXT.gguf --mmproj MMPROJ.gguf --image IMG [--out FILE]
//       [--image-min-tokens N] [--image-max-tokens N] [--threads N] [--cpu-path TIER]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "model/qwen35/qwen35_model.h"
#include "runtime/cpu_features.h"
#include "text/tokenizer.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"
#include "vision/multimodal_prompt.h"
#include "vision/vision_model.h"

namespace {

using namespace tandem;

void usage(FILE* f) {
  std::fprintf(f,
               "usage: tandem-encode-image -m TEXT.gguf --mmproj MMPROJ.gguf --image IMG [options]\n"
               "  --out FILE              write the embeddings, float32 [n_tokens][n_embd]\n"
               "  --image-min-tokens N    llama.cpp's token budget (default 8)\n"
               "  --image-max-tokens N    (default 4096)\n"
               "  --threads N             compute threads (default: one per physical core)\n"
               "  --cpu-path TIER         scalar, avx2, avx512, amx, neon, dotprod, i8mm (default: the best this CPU has)\n");
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string text_path, mmproj_path, image_path, out_path;
  vision::ImageBudget budget;
  int threads = 0;
  CpuTier tier = default_cpu_tier();
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else if (a == "-m" || a == "--model") text_path = next();
      else if (a == "--mmproj") mmproj_path = next();
      else if (a == "--image") image_path = next();
      else if (a == "--out") out_path = next();
      else if (a == "--image-min-tokens") budget.min_tokens = std::stoi(next());
      else if (a == "--image-max-tokens") budget.max_tokens = std::stoi(next());
      else if (a == "--threads") threads = std::stoi(next());
      else if (a == "--cpu-path") {
        const std::string n = next();
        auto t = cpu_tier_from_name(n);
        if (!t) throw std::invalid_argument("--cpu-path: unknown tier '" + n + "' (" + cpu_tier_names() + ")");
        tier = *t;
      } else throw std::invalid_argument("unknown argument '" + a + "'");
    }
    if (text_path.empty() || mmproj_path.empty() || image_path.empty()) {
      usage(stderr);
      return 2;
    }
    const auto t_load = std::chrono::steady_clock::now();
    LoadOptions lo;
    lo.n_threads = threads;
    lo.tier = tier;
    lo.pack_matrices = false;  // the text model is only asked for its width and vocabulary here
    auto text_model = Qwen35Model::load(text_path, lo);
    auto tok = text::Tokenizer::from_gguf(text_model->file());
    vision::VisionLoadOptions vo;
    vo.n_threads = threads;
    vo.tier = tier;
    auto vm = vision::VisionModel::load(mmproj_path, vo);
    vm->check_text_model(text_model->hparams().n_embd, text_path);
    std::printf("%s\nloaded in %.0f ms, tier %s\n", vm->hparams().summary().c_str(), ms_since(t_load),
                cpu_tier_name(vm->cpu_tier()));

    std::ifstream f(image_path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open image '" + image_path + "'");
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto t_dec = std::chrono::steady_clock::now();
    const vision::RgbImage rgb = vision::decode_image(bytes);
    const double dec_ms = ms_since(t_dec);
    const auto t_pre = std::chrono::steady_clock::now();
    const vision::PreprocessedImage img = vision::preprocess(rgb, vm->preprocess_params(budget));
    const double pre_ms = ms_since(t_pre);
    std::vector<float> emb;
    const vision::EncodeStats st = vm->encode(img, emb);
    std::printf("image %s: %s %dx%d, id %s; preprocessed %dx%d (%d x %d patches), %d x %d = %d tokens\n", image_path.c_str(),
                vision::format_name(vision::sniff_format(bytes)), rgb.width, rgb.height,
                vision::image_id_string(bytes).c_str(), img.width, img.height, img.patches_x(), img.patches_y(), st.nx,
                st.ny, st.nx * st.ny);
    std::printf("decode %.1f ms, preprocess %.1f ms, encode %.1f ms (%.1f GFLOP, %.1f GFLOP/s), working memory %.1f MiB\n",
                dec_ms, pre_ms, st.ms, st.gflop, st.gflop / (st.ms * 1e-3),
                static_cast<double>(st.workspace_bytes) / (1 << 20));

    // The layout a prompt "<image>" takes (mtmd): text chunk ending with <|vision_start|>, the image
    // rows at M-RoPE positions (t, y, x) = (p0, p0 + row, p0 + col), the text after it at p0 + max(nx, ny).
    const auto chunks = vision::tokenize_multimodal(*tok, vision::kDefaultMediaMarker, 1);
    const int64_t p0 = static_cast<int64_t>(chunks.front().tokens.size());
    std::printf("chunks: text [0, %lld) %zu tokens (<|vision_start|>); image rows [%lld, %lld) at t = %lld, y = %lld..%lld, x = %lld..%lld;"
                " text after it from position %lld\n",
                static_cast<long long>(p0), chunks.front().tokens.size(), static_cast<long long>(p0),
                static_cast<long long>(p0 + st.nx * st.ny), static_cast<long long>(p0), static_cast<long long>(p0),
                static_cast<long long>(p0 + st.ny - 1), static_cast<long long>(p0), static_cast<long long>(p0 + st.nx - 1),
                static_cast<long long>(p0 + std::max(st.nx, st.ny)));
    if (!out_path.empty()) {
      std::ofstream o(out_path, std::ios::binary);
      o.write(reinterpret_cast<const char*>(emb.data()), static_cast<std::streamsize>(emb.size() * sizeof(float)));
      if (!o) throw std::runtime_error("cannot write '" + out_path + "'");
      std::printf("wrote %s: %d x %lld float32\n", out_path.c_str(), st.nx * st.ny, static_cast<long long>(vm->hparams().out_dim));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-encode-image: %s\n", e.what());
    return 1;
  }
  return 0;
}
