// tandem-policy-eval: a policy model's greedy answers on agent traces, scored against the traces'
// expected actions (issue 50) — by Tandem itself, as tandem-server would answer (the model's chat
// template, temperature 0, no schema).
//
//   tandem-policy-eval -m models/tandem-policy.gguf TRACE.jsonl... [--seen-tasks FILE]
//                      [--schema schemas/agent-action.schema.json] [-o answers.jsonl]
//                      [--json summary.json] [-t THREADS] [--limit N] [--max-tokens N]
//
// Every record with an expected action is answered (records that need their screenshot are left
// out: the policy reads text). Per answer: parse_action accepts it ("parsed"), it is a document
// of the action schema ("schema valid": the grammar of the schema, flexible whitespace, over its
// bytes), and the parsed action equals expected_action in every field ("exact"). Printed: exact
// match over all steps, per action kind, on single screens and on episode steps; task success
// (every step of an episode exact, open loop: each step sees the trace's prompt, not the model's
// earlier actions); parsed and schema-valid shares; with --seen-tasks (one "app<TAB>task" line per
// task the training data held, as tools/train/train.py writes seen_tasks.tsv), exact match on
// the steps whose task is not in that list.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/action.h"
#include "agent/policy_eval.h"
#include "agent/request_tokens.h"
#include "agent/trace.h"
#include "model/architectures.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

using namespace tandem;
using ojson = nlohmann::ordered_json;

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: tandem-policy-eval -m MODEL.gguf TRACE.jsonl... [--seen-tasks FILE] [--schema FILE]\n"
               "                          [-o ANSWERS.jsonl] [--json SUMMARY.json] [-t THREADS] [--limit N]\n"
               "                          [--max-tokens N]\n");
}

struct Tally {
  size_t n = 0, exact = 0;
  void add(bool e) {
    ++n;
    exact += e;
  }
  double pct() const { return n ? 100.0 * static_cast<double>(exact) / static_cast<double>(n) : 0.0; }
  ojson json() const { return {{"n", n}, {"exact", exact}, {"percent", pct()}}; }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, seen_path, schema_path, answers_path, json_path;
  std::vector<std::string> traces;
  int threads = 0, max_tokens = 0;
  size_t limit = 0;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      auto number = [&](const std::string& v, long lo) {
        size_t end = 0;
        long x = 0;
        try {
          x = std::stol(v, &end);
        } catch (const std::exception&) {
          end = 0;
        }
        if (end != v.size() || x < lo) throw std::invalid_argument(a + ": expected an integer >= " + std::to_string(lo) + ", got '" + v + "'");
        return x;
      };
      if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else if (a == "-m" || a == "--model") model_path = value();
      else if (a == "--seen-tasks") seen_path = value();
      else if (a == "--schema") schema_path = value();
      else if (a == "-o") answers_path = value();
      else if (a == "--json") json_path = value();
      else if (a == "-t" || a == "--threads") threads = static_cast<int>(number(value(), 0));
      else if (a == "--limit") limit = static_cast<size_t>(number(value(), 1));
      else if (a == "--max-tokens") max_tokens = static_cast<int>(number(value(), 1));
      else if (!a.empty() && a[0] == '-') throw std::invalid_argument("unknown option " + a);
      else traces.push_back(a);
    }
    if (model_path.empty()) throw std::invalid_argument("-m MODEL.gguf is required");
    if (traces.empty()) throw std::invalid_argument("no trace given");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-policy-eval: %s\n", e.what());
    usage(stderr);
    return 2;
  }

  try {
    LoadOptions lo;
    lo.n_threads = threads;
    auto model = load_model(model_path, lo);
    const auto tok = text::Tokenizer::from_gguf(model->file());
    const auto tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template(), text::chat_template_tokens(*tok));
    const ojson schema = schema_path.empty() ? agent::action_schema() : ojson::parse(read_file(schema_path));
    const agent::SchemaValidator validator(*tok, schema);

    std::set<std::pair<std::string, std::string>> seen;
    if (!seen_path.empty()) {
      std::ifstream in(seen_path);
      if (!in) throw std::runtime_error("cannot open '" + seen_path + "'");
      for (std::string line; std::getline(in, line);) {
        const size_t tab = line.find('\t');
        if (line.empty() || tab == std::string::npos) continue;
        seen.emplace(line.substr(0, tab), line.substr(tab + 1));
      }
      if (seen.empty()) throw std::runtime_error("'" + seen_path + "' holds no \"app<TAB>task\" line");
    }

    std::ofstream answers;
    if (!answers_path.empty()) {
      answers.open(answers_path);
      if (!answers) throw std::runtime_error("cannot write '" + answers_path + "'");
    }
    Tally all, singles, steps, unseen, seen_t;
    std::map<std::string, Tally> kinds;
    std::map<std::string, std::pair<size_t, bool>> episodes;  // trace + episode -> (steps, all exact)
    size_t parsed = 0, schema_ok = 0, skipped_image = 0, cut = 0;
    double prompt_ms = 0, decode_ms = 0;
    size_t gen_tokens = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (const std::string& path : traces) {
      for (const agent::TraceRecord& rec : agent::read_trace(path)) {
        if (!rec.expected_action) continue;
        if (rec.needs_image || !rec.image.empty() || agent::has_images(rec.body)) {
          ++skipped_image;
          continue;
        }
        if (limit && all.n >= limit) break;
        const agent::GreedyAnswer a = agent::greedy_answer(*model, *tok, tmpl, rec, max_tokens);
        const agent::AnswerCheck c = agent::check_answer(a.text, *rec.expected_action);
        const bool valid = validator.valid(a.text);
        all.add(c.exact);
        parsed += c.parsed;
        schema_ok += valid;
        cut += a.finish_reason == "length";
        prompt_ms += a.prompt_ms;
        decode_ms += a.decode_ms;
        gen_tokens += a.tokens.size();
        kinds[(*rec.expected_action).value("action", std::string("?"))].add(c.exact);
        (rec.episode.empty() ? singles : steps).add(c.exact);
        if (!rec.episode.empty()) {
          auto& e = episodes[path + "\t" + rec.episode];
          if (e.first == 0) e.second = true;
          ++e.first;
          e.second = e.second && c.exact;
        }
        const bool is_unseen = !seen.empty() && !seen.count({rec.app, rec.task});
        if (!seen.empty()) (is_unseen ? unseen : seen_t).add(c.exact);
        if (answers) {
          ojson j = {{"trace", path}, {"line", rec.line}};
          if (!rec.episode.empty()) j["episode"] = rec.episode;
          if (rec.step >= 0) j["step"] = rec.step;
          j["app"] = rec.app;
          j["task"] = rec.task;
          j["expected"] = agent::to_text(*agent::parse_action(rec.expected_action->dump()).action);
          j["answer"] = a.text;
          j["exact"] = c.exact;
          j["parsed"] = c.parsed;
          j["schema_valid"] = valid;
          if (!c.parsed) j["parse_error"] = c.error;
          if (!seen.empty()) j["unseen_task"] = is_unseen;
          j["tokens"] = a.tokens.size();
          j["finish_reason"] = a.finish_reason;
          answers << j.dump() << "\n";
        }
        if (all.n % 50 == 0)
          std::fprintf(stderr, "  %zu answers, exact %.1f%%, %.0f s\n", all.n, all.pct(),
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    }
    if (all.n == 0) throw std::runtime_error("no record with an expected action (and no screenshot) in the traces");
    size_t ep_ok = 0;
    for (const auto& [k, e] : episodes) ep_ok += e.second;
    auto pct = [](size_t a, size_t n) { return n ? 100.0 * static_cast<double>(a) / static_cast<double>(n) : 0.0; };

    std::printf("model %s: %zu steps of %zu trace(s)%s\n", model_path.c_str(), all.n, traces.size(),
                skipped_image ? (" (" + std::to_string(skipped_image) + " needing a screenshot left out)").c_str() : "");
    std::printf("exact match        %6.1f%%  (%zu of %zu)\n", all.pct(), all.exact, all.n);
    std::printf("  single screens   %6.1f%%  (%zu of %zu)\n", singles.pct(), singles.exact, singles.n);
    std::printf("  episode steps    %6.1f%%  (%zu of %zu)\n", steps.pct(), steps.exact, steps.n);
    for (const auto& [k, t] : kinds) std::printf("  %-16s %6.1f%%  (%zu of %zu)\n", k.c_str(), t.pct(), t.exact, t.n);
    std::printf("task success       %6.1f%%  (%zu of %zu episodes: every step exact, open loop)\n",
                pct(ep_ok, episodes.size()), ep_ok, episodes.size());
    std::printf("parsed             %6.1f%%  (%zu of %zu; parse_action)\n", pct(parsed, all.n), parsed, all.n);
    std::printf("schema valid       %6.1f%%  (%zu of %zu; the action schema's grammar)\n", pct(schema_ok, all.n),
                schema_ok, all.n);
    std::printf("cut at max_tokens  %zu\n", cut);
    if (!seen.empty()) {
      std::printf("unseen tasks       %6.1f%%  (%zu of %zu steps whose task the training data did not hold)\n",
                  unseen.pct(), unseen.exact, unseen.n);
      std::printf("seen tasks         %6.1f%%  (%zu of %zu)\n", seen_t.pct(), seen_t.exact, seen_t.n);
    }
    std::printf("time: prompt %.1f ms, decode %.1f ms per step (%.1f tokens)\n", prompt_ms / static_cast<double>(all.n),
                decode_ms / static_cast<double>(all.n), static_cast<double>(gen_tokens) / static_cast<double>(all.n));
    if (!json_path.empty()) {
      ojson s = {{"model", model_path}, {"traces", traces}, {"steps", all.json()}, {"single_screens", singles.json()},
                 {"episode_steps", steps.json()},
                 {"task_success", {{"episodes", episodes.size()}, {"success", ep_ok}, {"percent", pct(ep_ok, episodes.size())}}},
                 {"parsed", {{"n", parsed}, {"percent", pct(parsed, all.n)}}},
                 {"schema_valid", {{"n", schema_ok}, {"percent", pct(schema_ok, all.n)}}},
                 {"cut", cut}, {"skipped_needs_image", skipped_image}};
      ojson k = ojson::object();
      for (const auto& [name, t] : kinds) k[name] = t.json();
      s["by_kind"] = k;
      if (!seen.empty()) {
        s["unseen_tasks"] = unseen.json();
        s["seen_tasks"] = seen_t.json();
      }
      std::ofstream out(json_path);
      if (!out) throw std::runtime_error("cannot write '" + json_path + "'");
      out << s.dump(1) << "\n";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-policy-eval: %s\n", e.what());
    return 1;
  }
  return 0;
}
