#include "http/server_options.h"

#include <gtest/gtest.h>

namespace tandem::http {
namespace {

TEST(ServerOptions, DefaultsAreTheDocumentedOnes) {
  const ServerOptions o = parse_server_args({"-m", "m.gguf"});
  EXPECT_EQ(o.model_path, "m.gguf");
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 8080);
  EXPECT_EQ(o.engine.n_parallel, 1);
  EXPECT_EQ(o.engine.n_ctx, 4096);
  EXPECT_EQ(o.engine.slot.ctx_checkpoints, 8);
  EXPECT_EQ(o.engine.cache_ram_mib, 512u);
  EXPECT_EQ(o.engine.policy.kind, serve::PolicyKind::Divergence);
  EXPECT_EQ(o.engine.policy.divergence.min_gap, 8);
  EXPECT_TRUE(o.engine.slot.batch.consolidate);
  EXPECT_EQ(o.engine.slot.batch.n_batch, 2048);
  EXPECT_EQ(o.engine.slot.batch.n_ubatch, 512);
  EXPECT_EQ(o.idle_release_ms, 3000);
}

TEST(ServerOptions, EveryFlag) {
  const ServerOptions o = parse_server_args(
      {"-m", "m.gguf", "--host", "0.0.0.0", "--port", "0", "--api-key", "k", "--ctx-size", "2048", "--parallel", "4",
       "--queue", "3", "--timeout-ms", "500", "--ctx-checkpoints", "16", "--cache-ram", "0", "--checkpoint-policy", "marconi",
       "--min-gap", "64", "--consolidate-batches", "off", "--n-batch", "1024", "--n-ubatch", "256", "--threads", "2",
       "--idle-release-ms", "0", "--log-requests", "log.jsonl", "--cpu-path", "scalar", "--alias", "qwen"});
  EXPECT_EQ(o.host, "0.0.0.0");
  EXPECT_EQ(o.port, 0);
  EXPECT_EQ(o.api_key, "k");
  EXPECT_EQ(o.engine.n_ctx, 2048);
  EXPECT_EQ(o.engine.n_parallel, 4);
  EXPECT_EQ(o.engine.queue_max, 3);
  EXPECT_EQ(o.engine.timeout_ms, 500);
  EXPECT_EQ(o.engine.slot.ctx_checkpoints, 16);
  EXPECT_EQ(o.engine.cache_ram_mib, 0u);
  EXPECT_EQ(o.engine.policy.kind, serve::PolicyKind::Marconi);
  EXPECT_EQ(o.engine.policy.divergence.min_gap, 64);
  EXPECT_FALSE(o.engine.slot.batch.consolidate);
  EXPECT_EQ(o.engine.slot.batch.n_batch, 1024);
  EXPECT_EQ(o.engine.slot.batch.n_ubatch, 256);
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.idle_release_ms, 0);
  EXPECT_EQ(o.log_requests, "log.jsonl");
  EXPECT_EQ(o.cpu_path, "scalar");
  ASSERT_EQ(o.aliases.size(), 1u);
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
  EXPECT_TRUE(parse_server_args({"--help"}).help);
  EXPECT_NE(server_usage().find("--checkpoint-policy"), std::string::npos);
}

}  // namespace
}  // namespace tandem::http
