// The shipped policy (models/tandem-policy.gguf, issue 50): Tandem loads it and its greedy answers
// to five recorded test prompts (tests/agent/policy_prompts.jsonl: requests of test seeds, never
// trained on, with the answers the file gave when it was shipped) are the recorded ones, and each
// equals its step's expected action. A change to the loader, the kernels, the tokenizer, the chat
// template or the file that moves an answer fails here. Skipped when the file is absent (a
// checkout without the model, e.g. a shallow CI clone that filters large files).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/policy_eval.h"
#include "agent/trace.h"
#include "model/architectures.h"
#include "model/test_paths.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace tandem::agent {
namespace {

namespace fs = std::filesystem;

TEST(ShippedPolicy, GreedyAnswersOnRecordedTestPromptsAreTheRecordedOnes) {
  const fs::path model_path = fs::path(TANDEM_SOURCE_DIR) / "models" / "tandem-policy.gguf";
  const fs::path prompts_path = fs::path(TANDEM_SOURCE_DIR) / "tests" / "agent" / "policy_prompts.jsonl";
  if (!fs::exists(model_path)) GTEST_SKIP() << model_path << " is absent";
  std::ifstream in(prompts_path);
  ASSERT_TRUE(in) << "cannot open " << prompts_path;

  LoadOptions lo;
  lo.n_threads = 2;
  auto model = load_model(model_path.string(), lo);
  ASSERT_TRUE(model->has_mtp()) << "the policy drafts with its MTP block";
  const auto tok = text::Tokenizer::from_gguf(model->file());
  const auto tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template());
  const SchemaValidator schema(*tok, action_schema());

  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);
    const TraceRecord rec = parse_trace_line(j.at("request").dump(), ++n);
    const std::string recorded = j.at("answer").get<std::string>();
    ASSERT_TRUE(rec.expected_action.has_value());
    const GreedyAnswer a = greedy_answer(*model, *tok, tmpl, rec);
    SCOPED_TRACE("prompt " + std::to_string(n) + " (" + j.value("note", std::string()) + "): task \"" + rec.task + "\"");
    EXPECT_EQ(a.text, recorded) << "the greedy answer changed";
    EXPECT_EQ(a.finish_reason, "stop") << "the answer must end with the end-of-turn token";
    EXPECT_TRUE(check_answer(a.text, *rec.expected_action).exact) << "expected " << rec.expected_action->dump();
    EXPECT_TRUE(schema.valid(a.text)) << a.text << " is not a document of the action schema";
  }
  EXPECT_EQ(n, 5);
}

}  // namespace
}  // namespace tandem::agent
