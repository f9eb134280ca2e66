// tandem-bench: whole-model speed on a GGUF file, the numbers of bench/RESULTS.md.
//
//   tandem-bench -m model.gguf [--prompt 512] [--decode 32] [--threads 2] [--reps 3]
//                [--cpu-path scalar|avx2|avx512|amx] [--bandwidth-gbs X]
//
// Prefill: one pass over a fresh sequence of --prompt random tokens (logits of the last
// position only), best of --reps. Decode: --decode greedy single-token steps after the
// prompt, mean ms/token, best of --reps. Also prints the bytes of weights one decode
// step reads, and, given --bandwidth-gbs, the bandwidth floor and the ratio to it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "model/qwen35_model.h"
#include "runtime/cpu_features.h"

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Bytes of weight data one decode token reads: every trunk matrix and the output head,
// plus one embedding row (norms and other 1-D tensors are negligible and left out).
size_t decode_weight_bytes(const tandem::Qwen35Model& m) {
  auto bytes = [](const tandem::WeightMatrix& w) { return w.row_stride * static_cast<size_t>(w.rows); };
  size_t total = bytes(m.weights().output) + m.weights().token_embd.row_stride;
  for (const auto& L : m.weights().layers) {
    total += bytes(L.ffn_gate) + bytes(L.ffn_up) + bytes(L.ffn_down);
    if (L.recurrent)
      total += bytes(L.attn_qkv) + bytes(L.attn_gate) + bytes(L.ssm_beta) + bytes(L.ssm_alpha) + bytes(L.ssm_out);
    else
      total += bytes(L.attn_q) + bytes(L.attn_k) + bytes(L.attn_v) + bytes(L.attn_output);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, cpu_path;
  int prompt = 512, decode = 32, threads = 0, reps = 3;
  double bandwidth = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "tandem-bench: %s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "-m") model_path = next();
    else if (a == "--prompt") prompt = std::atoi(next().c_str());
    else if (a == "--decode") decode = std::atoi(next().c_str());
    else if (a == "--threads" || a == "-t") threads = std::atoi(next().c_str());
    else if (a == "--reps") reps = std::atoi(next().c_str());
    else if (a == "--cpu-path") cpu_path = next();
    else if (a == "--bandwidth-gbs") bandwidth = std::atof(next().c_str());
    else { std::fprintf(stderr, "usage: tandem-bench -m MODEL [--prompt N] [--decode N] [--threads N] [--reps N] [--cpu-path T] [--bandwidth-gbs X]\n"); return 2; }
  }
  if (model_path.empty() || prompt < 1 || decode < 1 || reps < 1) {
    std::fprintf(stderr, "tandem-bench: -m MODEL required; --prompt/--decode/--reps must be >= 1\n");
    return 2;
  }
  try {
    if (!cpu_path.empty()) {
      auto t = tandem::cpu_tier_from_name(cpu_path);
      if (!t) throw std::runtime_error("--cpu-path: expected scalar, avx2, avx512 or amx");
      tandem::set_cpu_tier(*t);
    }
    auto model = tandem::Qwen35Model::load(model_path, threads);
    const auto& hp = model->hparams();
    std::mt19937 rng(1);
    std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(std::min<int64_t>(hp.n_vocab, 100000) - 1));
    std::vector<int32_t> toks(static_cast<size_t>(prompt));
    for (auto& t : toks) t = dist(rng);

    tandem::ForwardOptions opt;
    tandem::ForwardOutput out;
    double best_prefill = 1e30, best_decode = 1e30;
    for (int r = 0; r < reps; ++r) {
      auto seq = model->new_sequence(prompt + decode + 1);
      const double t0 = now_ms();
      model->forward(*seq, toks, opt, out);
      best_prefill = std::min(best_prefill, now_ms() - t0);
      int32_t next = static_cast<int32_t>(std::max_element(out.logits.begin(), out.logits.end()) - out.logits.begin());
      const double t1 = now_ms();
      for (int i = 0; i < decode; ++i) {
        model->forward(*seq, std::span<const int32_t>(&next, 1), opt, out);
        next = static_cast<int32_t>(std::max_element(out.logits.begin(), out.logits.end()) - out.logits.begin());
      }
      best_decode = std::min(best_decode, (now_ms() - t1) / decode);
    }
    const double wbytes = static_cast<double>(decode_weight_bytes(*model));
    std::printf("model %s\n%s\n", model_path.c_str(), hp.summary().c_str());
    std::printf("tier %s, threads %d\n", tandem::cpu_tier_name(tandem::active_cpu_tier()), model->pool().size());
    std::printf("| prefill %d tok | %.1f ms | %.1f tok/s |\n", prompt, best_prefill, prompt * 1000.0 / best_prefill);
    std::printf("| decode | %.2f ms/token | %.1f tok/s |\n", best_decode, 1000.0 / best_decode);
    std::printf("| weights read per decode token | %.1f MB |\n", wbytes / 1e6);
    if (bandwidth > 0) {
      const double floor_ms = wbytes / (bandwidth * 1e9) * 1e3;
      std::printf("| bandwidth floor at %.1f GB/s | %.2f ms/token | decode / floor = %.2f |\n", bandwidth, floor_ms,
                  best_decode / floor_ms);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
