// Tokenizer speed on a typical GUI-agent prompt (~2,500 characters: instructions, a JSON-ish
// accessibility tree, a bit of Chinese and numbers).
//
//   ninja -C build tandem_bench_tokenizer && ./build/tandem_bench_tokenizer [--benchmark_...]
//
// Vocabulary: $TANDEM_BENCH_MODEL if set, else the Qwen3 tokenizer GGUF the npm reference test
// leaves in the build tree (build/text-npm/qwen3-tokenizer.gguf, 151k tokens), else the tiny
// model's built-in vocabulary (much smaller; numbers are then not representative).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "model/test_models.h"
#include "text/tokenizer.h"

namespace {

std::string agent_prompt() {
  std::string p =
      "<|im_start|>system\nYou are a GUI agent operating an Android phone. You see the screen as an "
      "accessibility tree and must answer with exactly one action in JSON: {\"action\": \"tap\", "
      "\"element\": <id>} or {\"action\": \"type\", \"text\": \"...\"} or {\"action\": \"scroll\", "
      "\"direction\": \"up|down\"}. Think step by step, but keep it short.<|im_end|>\n<|im_start|>user\n"
      "Task: book a table for 2 people at 19:30 tomorrow at 'Trattoria Roma' and share it with Alice.\n"
      "Screen:\n";
  int id = 0;
  const char* rows[] = {"FrameLayout", "TextView \"Reservations\"", "Button \"Book now\"",
                        "EditText hint=\"Search restaurants\"", "ImageView desc=\"map\"",
                        "TextView \"评分 4.7 · 1,024 条评论\"", "RecyclerView scrollable=true",
                        "CheckBox \"Outdoor seating\" checked=false"};
  while (p.size() < 2560) {  // ~2,500 characters with the suffix (a few CJK characters are 3 bytes)
    p += "  [" + std::to_string(id) + "] " + rows[id % 8] + " bounds=[" + std::to_string(12 * id % 1080) + "," +
         std::to_string(37 * id % 2400) + "][" + std::to_string(12 * id % 1080 + 240) + "," +
         std::to_string(37 * id % 2400 + 96) + "]\n";
    ++id;
  }
  p += "Previous actions: tap(3), type(\"Trattoria Roma\"), tap(17)<|im_end|>\n<|im_start|>assistant\n";
  return p;
}

std::string vocab_path() {
  if (const char* env = std::getenv("TANDEM_BENCH_MODEL")) return env;
  const std::string npm = std::string(TANDEM_BINARY_DIR) + "/text-npm/qwen3-tokenizer.gguf";
  if (std::filesystem::exists(npm)) return npm;
  return tandem::ensure_tiny_model_in(std::string(TANDEM_BINARY_DIR) + "/test-models", "F32");
}

const tandem::text::Tokenizer& tokenizer() {
  static const std::unique_ptr<tandem::text::Tokenizer> tok = tandem::text::Tokenizer::from_file(vocab_path());
  return *tok;
}

void BM_TokenizeAgentPrompt(benchmark::State& state) {
  const auto& tok = tokenizer();
  const std::string prompt = agent_prompt();
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    tok.encode(prompt, ids);
    benchmark::DoNotOptimize(ids.data());
  }
  size_t chars = 0;
  for (unsigned char c : prompt) chars += (c & 0xC0) != 0x80;
  state.counters["chars"] = static_cast<double>(chars);
  state.counters["tokens"] = static_cast<double>(ids.size());
  state.counters["vocab"] = tok.n_vocab();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * prompt.size()));
}
BENCHMARK(BM_TokenizeAgentPrompt)->Unit(benchmark::kMicrosecond);

void BM_DetokenizeAgentPrompt(benchmark::State& state) {
  const auto& tok = tokenizer();
  const auto ids = tok.encode(agent_prompt());
  for (auto _ : state) {
    std::string s = tok.decode(ids);
    benchmark::DoNotOptimize(s.data());
  }
}
BENCHMARK(BM_DetokenizeAgentPrompt)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
