// Vision encoder costs (issue 25): a screenshot-sized image (720x1560 -> 736x1568, 1,127 tokens)
// and the 256-token budget (320x736, 230 tokens) through the 0.8B and 4B tower shapes in F16 and
// Q8_0 on each kernel tier the machine has; GFLOP/s against the machine's measured product rate
// (kernels::matmul on the tower's widest matrix at T = 512, same type and tier); a profile by
// stage; and, with --text MODEL, the image rows' prefill in the text model (forward_image).
//
//   ninja -C build tandem_bench_vision && ./build/tandem_bench_vision [options]
//   --tower 0.8b,4b   --type F16,Q8_0   --tier best|all|avx2,avx512,...   --sizes 736x1568,320x736
//   --reps N (default 1)   --threads N (default 2)   --text qwen35.gguf   --models DIR
// Mmproj files are generated into DIR (default <build>/models) on first use.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gguf/ggml_type.h"
#include "gguf/quants.h"
#include "model/qwen35/qwen35_model.h"
#include "runtime/cpu_features.h"
#include "vision/vision_generator.h"
#include "vision/vision_model.h"

namespace {

using namespace tandem;
using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// GFLOP/s of kernels::matmul on a rows x cols matrix of `type` at T tokens (median of reps).
double product_rate(GgmlType type, int64_t cols, int64_t rows, int64_t T, CpuTier tier, int threads) {
  std::vector<float> w(static_cast<size_t>(rows * cols));
  uint32_t s = 1;
  for (float& v : w) v = static_cast<float>((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  const size_t rb = row_bytes(type, cols);
  std::vector<uint8_t> data(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    if (type == GgmlType::F16) {
      auto* d = reinterpret_cast<uint16_t*>(data.data() + r * rb);
      for (int64_t c = 0; c < cols; ++c) d[c] = fp32_to_fp16(w[static_cast<size_t>(r * cols + c)]);
    } else {
      quantize_row(type, w.data() + r * cols, data.data() + r * rb, cols);
    }
  }
  kernels::WeightMatrix W;
  W.type = type;
  W.cols = cols;
  W.rows = rows;
  W.data = data.data();
  W.row_stride = rb;
  kernels::PackedWeights packed;
  if (kernels::plan_matrix(type, tier).layout == kernels::WeightLayout::Packed) packed.pack(W);
  ThreadPool pool(threads);
  kernels::KernelContext ctx(tier);
  ctx.pool = &pool;
  std::vector<float> X(static_cast<size_t>(T * cols), 0.25f), Y(static_cast<size_t>(T * rows));
  std::vector<double> ms;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = Clock::now();
    kernels::matmul(W, X.data(), cols, T, Y.data(), rows, ctx);
    if (i) ms.push_back(bench::ms_since(t0));
  }
  return 2.0 * static_cast<double>(rows * cols * T) / (bench::median(ms) * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> towers = {"0.8b", "4b"}, types = {"F16", "Q8_0"}, sizes = {"736x1568", "320x736"};
  std::string tier_arg = "best", text_model, models = std::string(TANDEM_BINARY_DIR) + "/models";
  int reps = 1, threads = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--tower") towers = split(val());
    else if (a == "--type") types = split(val());
    else if (a == "--tier") tier_arg = val();
    else if (a == "--sizes") sizes = split(val());
    else if (a == "--reps") reps = std::atoi(val().c_str());
    else if (a == "--threads") threads = std::atoi(val().c_str());
    else if (a == "--text") text_model = val();
    else if (a == "--models") models = val();
    else {
      std::fprintf(stderr, "unknown option %s (see the header of bench/vision_bench.cpp)\n", a.c_str());
      return 2;
    }
  }
  std::vector<CpuTier> tiers;
  if (tier_arg == "best") tiers = {clamp_to_machine(CpuTier::Amx)};
  else if (tier_arg == "all") {
    for (CpuTier t : {CpuTier::Avx2, CpuTier::Avx512Vnni, CpuTier::Amx})
      if (clamp_to_machine(t) == t) tiers.push_back(t);
  } else {
    for (const std::string& n : split(tier_arg)) {
      auto t = cpu_tier_from_name(n);
      if (!t || clamp_to_machine(*t) != *t) {
        std::fprintf(stderr, "tier %s: unknown or not on this machine\n", n.c_str());
        return 2;
      }
      tiers.push_back(*t);
    }
  }
  std::filesystem::create_directories(models);
  std::printf("# vision encoder, %s, %d threads, %d rep(s), median\n\n", cpu_model().c_str(), threads, reps);
  std::printf("| tower | type | tier | image | tokens | patches | encode ms | GFLOP | GFLOP/s | product peak GFLOP/s | of peak | attention %% | workspace MiB |\n");
  std::printf("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::vector<std::string> profiles;
  for (const std::string& tower : towers)
    for (const std::string& tname : types) {
      const auto type = ggml_type_from_name(tname);
      if (!type) {
        std::fprintf(stderr, "unknown type %s\n", tname.c_str());
        return 2;
      }
      const std::string path = models + "/mmproj-" + tower + "-" + tname + ".gguf";
      if (!std::filesystem::exists(path)) {
        vision::MmprojGenOptions g;
        g.shape = vision::VisionTowerShape::preset_shape(tower);
        g.type = *type;
        g.n_threads = threads;
        vision::write_mmproj(path, g);
      }
      for (CpuTier tier : tiers) {
        vision::VisionLoadOptions lo;
        lo.tier = tier;
        lo.n_threads = threads;
        auto m = vision::VisionModel::load(path, lo);
        const auto& hp = m->hparams();
        const double peak = product_rate(*type, hp.n_embd, hp.n_ff, 512, tier, threads);
        for (const std::string& sz : sizes) {
          int W = 0, H = 0;
          if (std::sscanf(sz.c_str(), "%dx%d", &W, &H) != 2) {
            std::fprintf(stderr, "bad size %s (WxH, multiples of 32)\n", sz.c_str());
            return 2;
          }
          std::vector<float> pix(static_cast<size_t>(W) * H * 3);
          uint32_t s = 3;
          for (float& v : pix) v = static_cast<float>((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
          std::vector<float> out;
          std::vector<double> ms;
          vision::EncodeStats st;
          for (int r = 0; r < reps; ++r) {
            st = m->encode(pix.data(), W, H, out);
            ms.push_back(st.ms);
          }
          const double med = bench::median(ms);
          std::printf("| %s | %s | %s | %dx%d | %d | %lld | %.0f | %.1f | %.1f | %.1f | %.0f%% | %.0f%% | %.1f |\n", tower.c_str(),
                      tname.c_str(), cpu_tier_name(m->cpu_tier()), W, H, st.nx * st.ny, static_cast<long long>(st.n_patches),
                      med, st.gflop, st.gflop / (med * 1e-3), peak, 100.0 * st.gflop / (med * 1e-3) / peak,
                      100.0 * st.attention_ms / st.ms, static_cast<double>(st.workspace_bytes) / (1 << 20));
          char buf[512];
          std::snprintf(buf, sizeof buf,
                        "| %s %s %s %dx%d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |", tower.c_str(), tname.c_str(),
                        cpu_tier_name(m->cpu_tier()), W, H, st.embed_ms, st.norm_ms, st.qkv_ms, st.rope_ms, st.attention_ms,
                        st.out_ms, st.mlp_ms, st.merger_ms);
          profiles.push_back(buf);
        }
      }
    }
  std::printf("\nProfile of the last repetition (ms):\n\n| run | embed | norms+residual | qkv | rope | attention | out proj | mlp | merger |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& p : profiles) std::printf("%s\n", p.c_str());

  if (!text_model.empty()) {
    // The image rows' prefill: nx*ny rows of the text model's width through forward_image.
    auto tm = Qwen35Model::load(text_model, LoadOptions{threads});
    std::printf("\nImage rows' prefill in %s (%s, %d threads):\n\n| image | rows | prefill ms | rows/s |\n|---|---:|---:|---:|\n",
                text_model.c_str(), cpu_tier_name(tm->cpu_tier()), threads);
    for (const std::string& sz : sizes) {
      int W = 0, H = 0;
      std::sscanf(sz.c_str(), "%dx%d", &W, &H);
      const int nx = W / 32, ny = H / 32;
      std::vector<float> rows(static_cast<size_t>(nx) * ny * static_cast<size_t>(tm->hparams().n_embd));
      uint32_t s = 9;
      for (float& v : rows) v = static_cast<float>((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
      std::vector<double> ms;
      for (int r = 0; r < std::max(1, reps); ++r) {
        auto seq = tm->new_sequence(nx * ny + 64);
        ForwardOutput out;
        ForwardOptions fo;
        fo.logits = LogitsMode::None;
        EmbeddingRows er;
        er.rows = rows.data();
        er.n_rows = static_cast<int64_t>(nx) * ny;
        er.nx = nx;
        er.ny = ny;
        const auto t0 = Clock::now();
        tm->forward_image(*seq, er, fo, out);
        ms.push_back(bench::ms_since(t0));
      }
      const double med = bench::median(ms);
      std::printf("| %dx%d | %d | %.0f | %.0f |\n", W, H, nx * ny, med, nx * ny / (med * 1e-3));
    }
  }
  return 0;
}
