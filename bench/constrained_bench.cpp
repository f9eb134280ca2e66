// Constrained actions under speculation (issue 24, spec/constrained.md §6.5 and §6.7): decode-side
// passes and decode ms per agent action, side by side in one run, for
//
//   plain          no grammar, no speculation (one decode pass per token)
//   mtp            no grammar, MTP speculation (k drafts per verify pass)
//   grammar        the action schema (compact JSON), no speculation
//   forced         the action schema, grammar-forced drafts only (no MTP call)
//   forced+mtp     the action schema, forced drafts + MTP drafts filtered by the grammar
//
// The target's picks are scripted: each row "picks" the next token of the canonical tokenization
// of the trace's expected action (then the end-of-turn token), i.e. a model that answers like the
// trace. Random-weight models answer garbage, so this is how the passes a real agent needs can be
// counted at all; every pass (prefill, decode, verify, roll-back) still runs on the model for real,
// so the costs are real. What scripting cannot show is the MTP head's acceptance (the random head
// predicts nothing): MTP drafts are counted and almost all rejected here. The grammar's own CPU
// time per emitted token is reported too (masks cached: the scripted picks are legal, so a pick
// costs one allows() check; the first request of a run compiles the schema and visits its states).
//
//   ninja -C build tandem_bench_constrained
//   ./build/tandem_bench_constrained -m build/models/qwen35-0.8b-Q4_0-qwen3tok.gguf
//         --trace build/demo/trace.jsonl --schema schemas/agent-action.schema.json [--requests 20] [--k 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/request_tokens.h"
#include "agent/trace.h"
#include "bench_util.h"
#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"
#include "model/qwen35/qwen35_model.h"
#include "runtime/cpu_features.h"
#include "serve/backend/model_backend.h"
#include "serve/policy/policy_factory.h"
#include "serve/slot/slot.h"
#include "serve/spec/grammar_drafts.h"
#include "serve/spec/speculator.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace {

using namespace tandem;
using namespace tandem::serve;
using Clock = std::chrono::steady_clock;

using tandem::bench::median;
using tandem::bench::ms_since;

// Picks the scripted answer's next token whatever the logits say; moves the grammar (if any)
// past every emitted token, as the engine's GrammarPicker does.
class ScriptedPicker final : public TokenPicker {
 public:
  ScriptedPicker(const std::vector<int32_t>& script, grammar::Matcher* m) : script_(script), m_(m) {}
  // Past the script: the end-of-turn token (what a complete grammar allows).
  int32_t pick(std::span<const float>) override { return next_ < script_.size() ? script_[next_] : eog_; }
  void set_eog(int32_t e) { eog_ = e; }
  void accept(int32_t t) override {
    ++next_;
    if (m_) {
      const auto t0 = Clock::now();
      // The script is a sentence of the grammar: the engine's picker would check the pick first.
      if (!m_->allows(t) || !m_->accept(t)) {
        std::fprintf(stderr, "the expected action's token %d is not allowed by the schema's grammar\n", t);
        std::exit(1);
      }
      grammar_ms += ms_since(t0);
    }
  }
  size_t emitted() const { return next_; }
  double grammar_ms = 0;

 private:
  const std::vector<int32_t>& script_;
  grammar::Matcher* m_;
  size_t next_ = 0;
  int32_t eog_ = 0;
};

struct Mode {
  const char* name;
  bool grammar, spec, mtp, forced;
};

struct Tally {
  std::vector<double> passes, ms, tokens;
  int64_t forced = 0, forced_accepted = 0, mtp = 0, mtp_accepted = 0;
  double grammar_ms = 0;
  int64_t emitted = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, trace_path, schema_path;
  int n_requests = 1 << 20, k = 3, threads = 2, reps = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-m") model_path = val();
    else if (a == "--trace") trace_path = val();
    else if (a == "--schema") schema_path = val();
    else if (a == "--requests") n_requests = std::atoi(val().c_str());
    else if (a == "--k") k = std::atoi(val().c_str());
    else if (a == "--threads") threads = std::atoi(val().c_str());
    else if (a == "--reps") reps = std::atoi(val().c_str());
    else {
      std::fprintf(stderr, "usage: %s -m MODEL --trace TRACE --schema SCHEMA [--requests N] [--k K] [--threads T] [--reps R]\n",
                   argv[0]);
      return 2;
    }
  }
  if (model_path.empty() || trace_path.empty() || schema_path.empty()) {
    std::fprintf(stderr, "-m, --trace and --schema are required\n");
    return 2;
  }
  auto model = Qwen35Model::load(model_path, threads);
  auto tok = text::Tokenizer::from_gguf(model->file());
  const text::ChatTemplate tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template());
  std::ifstream sf(schema_path);
  if (!sf) {
    std::fprintf(stderr, "cannot read %s\n", schema_path.c_str());
    return 1;
  }
  const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(sf);
  const auto t_compile = Clock::now();
  const grammar::SchemaGrammar sg =
      grammar::json_schema_to_gbnf(schema, grammar::SchemaOptions{.whitespace = grammar::JsonWhitespace::Compact});
  auto vocab = std::make_shared<grammar::VocabIndex>(*tok);
  const double vocab_ms = ms_since(t_compile);
  const auto t_g = Clock::now();
  auto g = grammar::CompiledGrammar::compile(sg.gbnf, vocab);
  const double compile_ms = ms_since(t_g);

  struct Step {
    std::vector<int32_t> prompt, answer;
    std::vector<int64_t> users;
  };
  std::vector<Step> steps;
  int outside_schema = 0;  // expected actions the schema does not admit (skipped)
  for (const agent::TraceRecord& rec : agent::read_trace(trace_path)) {
    if (!rec.expected_action || static_cast<int>(steps.size()) >= n_requests) continue;
    Step s;
    const agent::RequestTokens rt = agent::tokenize_request(*tok, tmpl, rec.body);
    s.prompt = rt.ids;
    s.users = rt.user_starts;
    agent::TraceRecord uncapped = rec;
    uncapped.body["max_tokens"] = 1 << 20;
    s.answer = agent::expected_output(*tok, uncapped);
    // Only answers the schema admits (the script must be a sentence of the grammar).
    grammar::Matcher check(g);
    bool ok = !s.answer.empty();
    for (size_t i = 0; ok && i < s.answer.size(); ++i)
      ok = tok->vocab().is_eog(s.answer[i]) ? check.accepting() : check.accept(s.answer[i]);
    if (!ok) {
      ++outside_schema;
      continue;
    }
    steps.push_back(std::move(s));
  }
  if (steps.empty()) {
    std::fprintf(stderr, "no request of %s has an expected_action\n", trace_path.c_str());
    return 1;
  }

  const Mode modes[] = {{"plain", false, false, false, false},
                        {"mtp", false, true, true, false},
                        {"grammar", true, false, false, false},
                        {"forced", true, true, false, true},
                        {"forced+mtp", true, true, true, true}};
  std::vector<Tally> tally(std::size(modes));
  const std::vector<int32_t>& eog = tok->vocab().eog_ids();
  // One slot per mode, reused across the trace (as a server slot is); modes interleave per step.
  std::vector<std::unique_ptr<Slot>> slots;
  for (const Mode& m : modes) {
    auto backend = std::make_unique<ModelBackend>(*model, 4096);
    backend->set_prompt_tail(k);
    auto slot = std::make_unique<Slot>(std::move(backend), make_policy(PolicyConfig{}), SlotConfig{});
    if (m.spec) {
      SpecConfig sc;
      sc.draft_max = k;
      sc.mtp_drafts = m.mtp && model->has_mtp();
      sc.forced_drafts = m.forced;
      slot->enable_speculation(sc);
    }
    slots.push_back(std::move(slot));
  }
  for (int rep = 0; rep < reps; ++rep)
    for (const Step& st : steps)
      for (size_t mi = 0; mi < std::size(modes); ++mi) {
        const Mode& m = modes[mi];
        Slot& slot = *slots[mi];
        std::optional<grammar::Matcher> matcher;
        if (m.grammar) matcher.emplace(g);
        std::optional<GrammarDrafts> drafts;
        if (matcher) drafts.emplace(*matcher);
        // Under the grammar the answer ends where the grammar is complete: no end-of-turn token.
        std::vector<int32_t> script = st.answer;
        if (m.grammar && !script.empty() && tok->vocab().is_eog(script.back())) script.pop_back();
        ScriptedPicker picker(script, matcher ? &*matcher : nullptr);
        picker.set_eog(eog.empty() ? 0 : eog.front());
        slot.prefill(Prompt{st.prompt, st.users});
        int32_t last = picker.pick({});
        picker.accept(last);
        const auto t0 = Clock::now();
        int64_t passes = 0;
        const auto done = [&] {
          return picker.emitted() >= script.size() || tok->vocab().is_eog(last) || (matcher && matcher->complete());
        };
        while (!done()) {
          ++passes;
          if (m.spec) {
            const auto toks = slot.decode_speculative(last, picker, static_cast<int64_t>(script.size() - picker.emitted()),
                                                      eog, drafts ? &*drafts : nullptr);
            last = toks.back();
          } else {
            slot.decode(last);
            last = picker.pick({});
            picker.accept(last);
          }
        }
        const RequestStats& rs = slot.end_request();
        if (rep == 0) continue;  // the first round warms caches (and visits the grammar's states)
        Tally& t = tally[mi];
        t.passes.push_back(static_cast<double>(passes));
        t.ms.push_back(ms_since(t0));
        t.tokens.push_back(static_cast<double>(picker.emitted()));
        t.forced += rs.drafts_forced;
        t.forced_accepted += rs.drafts_forced_accepted;
        t.mtp += rs.drafts_mtp;
        t.mtp_accepted += rs.drafts_accepted - rs.drafts_forced_accepted;
        t.grammar_ms += picker.grammar_ms;
        t.emitted += static_cast<int64_t>(picker.emitted());
      }

  std::string cpu = "unknown CPU";
  if (std::ifstream ci("/proc/cpuinfo"); ci)
    for (std::string line; std::getline(ci, line);)
      if (line.rfind("model name", 0) == 0) {
        cpu = line.substr(line.find(':') + 2);
        break;
      }
  std::printf("# constrained actions: %zu steps x %d measured rounds, k = %d, %d threads, %s, tier %s\n", steps.size(),
              reps - 1, k, threads, cpu.c_str(), cpu_tier_name(model->cpu_tier()));
  std::printf("# schema: %zu bytes of GBNF, %zu warnings; vocabulary index %.1f ms, compile %.2f ms; %d expected actions "
              "outside the schema skipped\n",
              sg.gbnf.size(), sg.warnings.size(), vocab_ms, compile_ms, outside_schema);
  std::printf("| mode | tokens/action | decode passes/action (median) | decode ms/action (median) | vs plain | forced drafts (accepted) | MTP drafts (accepted) | grammar µs/token |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  const double plain_ms = median(tally[0].ms);
  for (size_t mi = 0; mi < std::size(modes); ++mi) {
    const Tally& t = tally[mi];
    std::printf("| %s | %.0f | %.0f | %.1f | %.3fx | %lld (%lld) | %lld (%lld) | %.1f |\n", modes[mi].name, median(t.tokens),
                median(t.passes), median(t.ms), plain_ms > 0 ? median(t.ms) / plain_ms : 0.0,
                static_cast<long long>(t.forced), static_cast<long long>(t.forced_accepted), static_cast<long long>(t.mtp),
                static_cast<long long>(t.mtp_accepted), t.emitted > 0 ? 1000.0 * t.grammar_ms / static_cast<double>(t.emitted) : 0.0);
  }
  const grammar::GrammarStats gs = g->stats();
  std::printf("# grammar after the run: %zu states, %zu masks, %zu forced runs, %.2f MiB\n", gs.states, gs.masks,
              gs.forced_runs, static_cast<double>(gs.bytes) / (1 << 20));
  return 0;
}
