#include "serve/settings/server_options.h"

#include <gtest/gtest.h>

#include <set>

namespace tandem::serve {
namespace {

// The engine settings that both the defaults and the flags set.
struct EngineExpect {
  int n_parallel;
  int64_t n_ctx;
  int ctx_checkpoints;
  size_t cache_ram_mib;
  PolicyKind policy;
  int64_t min_gap;
  bool consolidate;
  int64_t n_batch, n_ubatch;
};

void expect_engine(const EngineConfig& e, const EngineExpect& x) {
  EXPECT_EQ(e.n_parallel, x.n_parallel);
  EXPECT_EQ(e.n_ctx, x.n_ctx);
  EXPECT_EQ(e.slot.ctx_checkpoints, x.ctx_checkpoints);
  EXPECT_EQ(e.cache_ram_mib, x.cache_ram_mib);
  EXPECT_EQ(e.policy.kind, x.policy);
  EXPECT_EQ(e.policy.divergence.min_gap, x.min_gap);
  EXPECT_EQ(e.slot.batch.consolidate, x.consolidate);
  EXPECT_EQ(e.slot.batch.n_batch, x.n_batch);
  EXPECT_EQ(e.slot.batch.n_ubatch, x.n_ubatch);
}

TEST(ServerOptions, DefaultsAreTheDocumentedOnes) {
  const ServerOptions o = parse_server_args({"-m", "m.gguf"});
  EXPECT_EQ(o.model_path, "m.gguf");
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 8080);
  expect_engine(o.engine, {.n_parallel = 1, .n_ctx = 4096, .ctx_checkpoints = 8, .cache_ram_mib = 512,
                           .policy = PolicyKind::Divergence, .min_gap = 8,
                           .consolidate = true, .n_batch = 2048, .n_ubatch = 512});
  EXPECT_EQ(o.idle_release_ms, 3000);
  EXPECT_EQ(o.reasoning_format, text::ReasoningFormat::Auto);  // llama.cpp's default
}

TEST(ServerOptions, EveryFlag) {
  const ServerOptions o = parse_server_args(
      {"-m", "m.gguf", "--host", "0.0.0.0", "--port", "0", "--api-key", "k", "--ctx-size", "2048", "--parallel", "4",
       "--queue", "3", "--timeout-ms", "500", "--ctx-checkpoints", "16", "--cache-ram", "0", "--checkpoint-policy", "marconi",
       "--min-gap", "64", "--consolidate-batches", "off", "--n-batch", "1024", "--n-ubatch", "256", "--threads", "2",
       "--idle-release-ms", "0", "--log-requests", "log.jsonl", "--cpu-path", "scalar", "--alias", "qwen",
       "--reasoning-format", "none"});
  EXPECT_EQ(o.host, "0.0.0.0");
  EXPECT_EQ(o.port, 0);
  EXPECT_EQ(o.api_key, "k");
  expect_engine(o.engine, {.n_parallel = 4, .n_ctx = 2048, .ctx_checkpoints = 16, .cache_ram_mib = 0,
                           .policy = PolicyKind::Marconi, .min_gap = 64,
                           .consolidate = false, .n_batch = 1024, .n_ubatch = 256});
  EXPECT_EQ(o.engine.queue_max, 3);
  EXPECT_EQ(o.engine.timeout_ms, 500);
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.idle_release_ms, 0);
  EXPECT_EQ(o.log_requests, "log.jsonl");
  EXPECT_EQ(o.cpu_path, "scalar");
  ASSERT_EQ(o.aliases.size(), 1u);
  EXPECT_EQ(o.reasoning_format, text::ReasoningFormat::None);
}

TEST(ServerOptions, BadFlagsSayWhatIsWrong) {
  const auto msg = [](std::vector<std::string> a) {
    try {
      parse_server_args(a);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({}).find("-m MODEL.gguf is required"), std::string::npos);
  EXPECT_NE(msg({"-m", "x", "--port", "70000"}).find("--port"), std::string::npos);
  EXPECT_NE(msg({"-m", "x", "--parallel", "two"}).find("expected an integer"), std::string::npos);
  EXPECT_NE(msg({"-m", "x", "--checkpoint-policy", "lru"}).find("divergence"), std::string::npos);
  EXPECT_NE(msg({"-m", "x", "--consolidate-batches", "maybe"}).find("on or off"), std::string::npos);
  EXPECT_NE(msg({"-m", "x", "--n-batch", "8", "--n-ubatch", "16"}).find("must not exceed"), std::string::npos);
  EXPECT_NE(msg({"-m", "x", "--frobnicate"}).find("unknown argument"), std::string::npos);
  EXPECT_NE(msg({"-m"}).find("needs a value"), std::string::npos);
  EXPECT_EQ(msg({"-m", "x", "--reasoning-format", "r1"}),
            "--reasoning-format: expected none, auto, deepseek or deepseek-legacy, got 'r1'");
  EXPECT_TRUE(parse_server_args({"--help"}).help);
  EXPECT_NE(server_usage().find("--checkpoint-policy"), std::string::npos);
}

// One table: --help is generated from the serving settings and the front end's rows, every row's
// default is its struct's initializer (giving it back as a flag changes nothing), and the rows the
// replay model applies are the ones whose settings change its counts.
TEST(ServerOptions, OneTableOfSettings) {
  const std::string usage = server_usage();
  std::vector<std::string> args = {"-m", "m.gguf"};
  for (const auto& r : serve::serving_settings()) {
    for (const std::string& n : r.names) EXPECT_NE(usage.find(n), std::string::npos) << n;
    ASSERT_TRUE(r.get) << r.long_name();
    args.push_back(r.long_name());
    if (!r.value.empty()) args.push_back(r.get(serve::EngineConfig{}));
  }
  for (const auto& r : front_end_settings()) {
    for (const std::string& n : r.names) EXPECT_NE(usage.find(n), std::string::npos) << n;
    EXPECT_FALSE(r.changes_counts) << r.long_name();
    EXPECT_FALSE(r.ablation) << r.long_name();
    if (r.get && !r.value.empty()) {
      args.push_back(r.long_name());
      args.push_back(r.get(ServerOptions{}));
    }
  }
  EXPECT_NE(usage.find("--consolidate-batches on|off one tail cut at N - n_ubatch instead of two (default on)"),
            std::string::npos);
  EXPECT_NE(usage.find("Endpoints:"), std::string::npos);
  const ServerOptions o = parse_server_args(args);
  for (const auto& r : serve::serving_settings()) EXPECT_EQ(r.get(o.engine), r.get(serve::EngineConfig{})) << r.long_name();
  for (const auto& r : front_end_settings())
    if (r.get) {
      EXPECT_EQ(r.get(o), r.get(ServerOptions{})) << r.long_name();
    }

  std::set<std::string> counts, ablations;
  for (const auto& r : serve::serving_settings()) {
    if (r.changes_counts) counts.insert(r.long_name());
    if (r.ablation) ablations.insert(r.long_name());
  }
  EXPECT_EQ(counts, (std::set<std::string>{"--ctx-size", "--parallel", "--ctx-checkpoints", "--cache-ram",
                                           "--cache-select", "--checkpoint-forecast",
                                           "--checkpoint-policy", "--min-gap", "--checkpoint-before-image",
                                           "--consolidate-batches", "--n-batch", "--image-min-tokens", "--image-max-tokens",
                                           "--encoder-cache",
                                           "--n-ubatch", "--spec", "--draft-max", "--draft-min", "--draft-p-min",
                                           "--spec-mtp", "--spec-forced", "--draft-forced-max", "--spec-rollback-aware",
                                           "--spec-column-shared", "--spec-trimmed-head", "--spec-rollback"}));
  EXPECT_EQ(ablations, (std::set<std::string>{"--consolidate-batches", "--checkpoint-forecast", "--spec-forced", "--spec-rollback-aware",
                                              "--spec-column-shared", "--spec-trimmed-head", "--spec-rollback"}));
  EXPECT_EQ(serve::ablation_settings().size(), ablations.size());
  // llama.cpp's other spellings are accepted without being listed.
  const ServerOptions l = parse_server_args({"-m", "m.gguf", "--batch-size", "1024", "--ubatch-size", "128", "-a", "x"});
  EXPECT_EQ(l.engine.slot.batch.n_batch, 1024);
  EXPECT_EQ(l.engine.slot.batch.n_ubatch, 128);
  EXPECT_EQ(l.aliases, std::vector<std::string>{"x"});
}

}  // namespace
}  // namespace tandem::serve
