// tandem-bench: whole-model speed on a GGUF file, the numbers of bench/RESULTS.md.
//
//   tandem-bench -m model.gguf [--prompt 512] [--decode 32] [--threads 2] [--reps 3]
//                [--cpu-path scalar|avx2|avx512|amx] [--bandwidth-gbs X]
//
// Prefill: one pass over a fresh sequence of --prompt random tokens (logits of the last
// position only), best of --reps. Decode: --decode greedy single-token steps after the
// prompt, mean ms/token, best of --reps. Also prints the bytes of weights one decode
// step reads, and, given --bandwidth-gbs, the bandwidth floor and the ratio to it.
//
//   tandem-bench -m model.gguf --idle-pauses 1,5,30 [--idle-release-ms 500] [--reps 3]
//
// Idle release: the added latency of the first request after a pause long enough for the
// resource governor to release (a 64-token prompt + 4 decode steps, right after a warm
// identical request), for each pause, alternating pauses run by run; also the governor's
// own wake latency.
//
//   tandem-bench -m model.gguf --cold-start [--prompt 1500] [--reps 3]
//
// Cold start (issue 27, --unload-idle-s and --state-dir): the first load, then --reps unload /
// reload cycles (median; mapping + binding, packing), and the rules' state of --prompt tokens
// written to and read back from a state file (median) against recomputing them (a prefill).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <filesystem>

#include "model/architectures.h"
#include "runtime/cpu_features.h"
#include "serve/backend/model_backend.h"
#include "serve/lifecycle/state_file.h"

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Bytes of weight data one decode token reads: every trunk matrix and the output head, plus one
// embedding row (norms, conv kernels and other small tensors are negligible and left out; so is
// an MTP block, which a plain decode step does not run). Read from the file, for any architecture.
size_t decode_weight_bytes(const tandem::HybridModel& m) {
  size_t total = 0;
  const tandem::GgufTensorInfo* emb = nullptr;
  bool untied = false;
  for (const tandem::GgufTensorInfo& t : m.file().tensors()) {
    const std::string& n = t.name;
    if (t.n_dims != 2 || n.find("norm") != std::string::npos || n.find("conv") != std::string::npos ||
        n.size() < 7 || n.compare(n.size() - 7, 7, ".weight") != 0)
      continue;
    if (n.rfind("blk.", 0) == 0 && std::stoi(n.substr(4)) >= m.shape().n_layer) continue;  // the MTP block
    if (n == "token_embd.weight") {
      emb = &t;
      continue;
    }
    untied = untied || n == "output.weight";
    total += t.nbytes;
  }
  if (emb) total += emb->nbytes / static_cast<size_t>(emb->ne[1]) + (untied ? 0 : emb->nbytes);  // tied: the head
  return total;
}

// One short request: a 64-token prompt on a fresh sequence, then 4 greedy decode steps.
double short_request_ms(tandem::HybridModel& model, tandem::SequenceState& seq, const std::vector<int32_t>& prompt) {
  tandem::ForwardOptions opt;
  tandem::ForwardOutput out;
  seq.reset();
  const double t0 = now_ms();
  model.forward(seq, prompt, opt, out);
  for (int i = 0; i < 4; ++i) {
    const int32_t next =
        static_cast<int32_t>(std::max_element(out.logits.begin(), out.logits.end()) - out.logits.begin());
    model.forward(seq, std::span<const int32_t>(&next, 1), opt, out);
  }
  return now_ms() - t0;
}

int idle_bench(tandem::HybridModel& model, const std::string& pauses_arg, int release_ms, int reps) {
  std::vector<double> pauses;
  for (size_t p = 0; p < pauses_arg.size();) {
    size_t used = 0;
    pauses.push_back(std::stod(pauses_arg.substr(p), &used));
    p += used + 1;
  }
  model.governor().set_idle_release_ms(release_ms);
  std::vector<int32_t> prompt(64);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919) % model.shape().n_vocab);
  auto seq = model.new_sequence(128);
  short_request_ms(model, *seq, prompt);  // warm caches and pages
  std::vector<std::vector<double>> added(pauses.size()), wake(pauses.size());
  std::vector<std::vector<bool>> released(pauses.size());
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < pauses.size(); ++i) {  // pauses alternate run by run
      const double warm = short_request_ms(model, *seq, prompt);
      std::this_thread::sleep_for(std::chrono::duration<double>(pauses[i]));
      released[i].push_back(model.governor().stats().released);
      const double after = short_request_ms(model, *seq, prompt);
      added[i].push_back(after - warm);
      wake[i].push_back(model.governor().stats().last_wake_latency_ms);
    }
  std::printf("idle release after %d ms; request = 64-token prompt + 4 decode steps; %d runs per pause\n",
              release_ms, reps);
  std::printf("| pause | released before the request | added latency of the first request (median) | governor wake latency (median) |\n|---|---|---|---|\n");
  for (size_t i = 0; i < pauses.size(); ++i) {
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    int n_rel = 0;
    for (bool b : released[i]) n_rel += b ? 1 : 0;
    std::printf("| %.0f s | %d/%d | %+.2f ms | %.3f ms |\n", pauses[i], n_rel, reps, median(added[i]), median(wake[i]));
  }
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int cold_start_bench(tandem::HybridModel& model, double load_ms, int prompt, int reps) {
  namespace serve = tandem::serve;
  std::vector<double> unload, map, pack;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_ms();
    model.unload_weights();
    unload.push_back(now_ms() - t0);
    const tandem::HybridModel::ReloadTimes t = model.reload_weights();
    map.push_back(t.map_ms);
    pack.push_back(t.pack_ms);
  }
  // The rules' state: a prompt of `prompt` tokens, as a slot holds it after its first request.
  std::mt19937 rng(7);
  std::vector<int32_t> toks(static_cast<size_t>(prompt));
  for (auto& x : toks) x = static_cast<int32_t>(rng() % 1000 + 10);
  serve::ModelBackend backend(model, prompt + 1);
  std::vector<double> prefill, write, read;
  serve::PromptCacheEntry e;
  for (int r = 0; r < reps; ++r) {
    backend.reset();
    const double t0 = now_ms();
    backend.run(toks, {}, true, {});
    prefill.push_back(now_ms() - t0);
  }
  e.tokens = toks;
  e.state = backend.save_sequence();
  const serve::StateFileIdentity id{model.fingerprint(), backend.state_layout()};
  const auto path = std::filesystem::temp_directory_path() / ("tandem-bench-state-" + std::to_string(::getpid()));
  uint64_t bytes = 0;
  for (int r = 0; r < reps; ++r) {
    double t0 = now_ms();
    bytes = serve::write_state_file(path, e, id);
    write.push_back(now_ms() - t0);
    t0 = now_ms();
    const serve::PromptCacheEntry back = serve::read_state_file(path, id, backend);
    backend.load_sequence(*back.state);
    read.push_back(now_ms() - t0);
  }
  std::filesystem::remove(path);
  std::printf("tier %s, threads %d, %d reps (medians)\n", tandem::cpu_tier_name(model.cpu_tier()), model.pool().size(), reps);
  std::printf("| part | ms |\n|---|---|\n");
  std::printf("| first load (map, bind, pack; the file in the page cache) | %.1f |\n", load_ms);
  std::printf("| unload (unmap, free the packed copies) | %.1f |\n", median(unload));
  std::printf("| reload: map + check + bind | %.1f |\n", median(map));
  std::printf("| reload: pack for the matrix path (%.1f MiB) | %.1f |\n", model.packed_weight_bytes() / 1048576.0, median(pack));
  std::printf("| state file of %d tokens (%.1f MiB): write (synced) | %.1f |\n", prompt, bytes / 1048576.0, median(write));
  std::printf("| state file of %d tokens: read, check, load into a slot | %.1f |\n", prompt, median(read));
  std::printf("| recompute those %d tokens instead (one prefill) | %.1f |\n", prompt, median(prefill));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, cpu_path;
  int prompt = 512, decode = 32, threads = 0, reps = 3;
  double bandwidth = 0;
  std::string idle_pauses;
  int idle_release_ms = 500;
  bool cold_start = false;
  bool prompt_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "tandem-bench: %s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "-m") model_path = next();
    else if (a == "--prompt") prompt = std::atoi(next().c_str()), prompt_given = true;
    else if (a == "--cold-start") cold_start = true;
    else if (a == "--decode") decode = std::atoi(next().c_str());
    else if (a == "--threads" || a == "-t") threads = std::atoi(next().c_str());
    else if (a == "--reps") reps = std::atoi(next().c_str());
    else if (a == "--cpu-path") cpu_path = next();
    else if (a == "--bandwidth-gbs") bandwidth = std::atof(next().c_str());
    else if (a == "--idle-pauses") idle_pauses = next();
    else if (a == "--idle-release-ms") idle_release_ms = std::atoi(next().c_str());
    else { std::fprintf(stderr, "usage: tandem-bench -m MODEL [--prompt N] [--decode N] [--threads N] [--reps N] [--cpu-path T] [--bandwidth-gbs X] [--idle-pauses LIST] [--cold-start]\n"); return 2; }
  }
  if (model_path.empty() || prompt < 1 || decode < 1 || reps < 1) {
    std::fprintf(stderr, "tandem-bench: -m MODEL required; --prompt/--decode/--reps must be >= 1\n");
    return 2;
  }
  try {
    tandem::LoadOptions load;
    load.n_threads = threads;
    if (!cpu_path.empty()) {
      auto t = tandem::cpu_tier_from_name(cpu_path);
      if (!t) throw std::runtime_error(std::string("--cpu-path: expected one of ") + tandem::cpu_tier_names());
      load.tier = *t;  // lowered to the machine's best by the model
    }
    const double t_load = now_ms();
    auto model = tandem::load_model(model_path, load);
    const double load_ms = now_ms() - t_load;
    const tandem::ModelShape& hp = model->shape();
    if (cold_start) return cold_start_bench(*model, load_ms, prompt_given ? prompt : 1500, reps);
    if (!idle_pauses.empty()) return idle_bench(*model, idle_pauses, idle_release_ms, reps);
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
    std::printf("model %s\n%s\n", model_path.c_str(), hp.summary.c_str());
    std::printf("tier %s, threads %d\n", tandem::cpu_tier_name(model->cpu_tier()), model->pool().size());
    std::printf("| prefill %d tok | %.1f ms | %.1f tok/s |\n", prompt, best_prefill, prompt * 1000.0 / best_prefill);
    std::printf("| decode | %.2f ms/token | %.1f tok/s |\n", best_decode, 1000.0 / best_decode);
    std::printf("| weights read per decode token | %.1f MB |\n", wbytes / 1e6);
    const auto probe = model->new_sequence(1);
    std::printf("| recurrent state per sequence (= one checkpoint) | %.1f KiB |\n", probe->recurrent_bytes() / 1024.0);
    std::printf("| KV cache per token (F32 rows) | %.1f KiB |\n", probe->kv_bytes_per_token() / 1024.0);
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
