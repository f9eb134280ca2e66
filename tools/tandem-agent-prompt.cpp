// tandem-agent-prompt: the agent's prompt from an observation, and the strict action parser.
//
//   tandem-agent-prompt OBS.json [--request] [layout flags]   prompt text (or the request body)
//   tandem-agent-prompt --parse 'MODEL OUTPUT' [--controls N]  canonical action, or the error (exit 1)
//   tandem-agent-prompt --schema                               the action's JSON schema
//
// OBS.json: {"app": "Clock", "task": "Set an alarm for 7:00", "tree": <accessibility tree>,
//            "history": [{"action": {"action": "tap", "index": 3}, "label": "Alarm"}, ...],
//            "date": "2026-08-14 09:30"}   (history oldest first; the builder keeps the window)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "agent/action.h"
#include "agent/prompt_builder.h"

using namespace tandem::agent;
using json = nlohmann::json;

namespace {

void usage() {
  std::fprintf(stderr,
               "usage:\n"
               "  tandem-agent-prompt OBS.json [--request] [--max-tokens N] [--history N] [--memory]\n"
               "                      [--memory-before-task] [--guidelines-after] [--date-first]\n"
               "  tandem-agent-prompt --parse 'OUTPUT' [--controls N]   (OUTPUT '-' reads stdin)\n"
               "  tandem-agent-prompt --schema\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string obs_path, parse_text;
  bool parse = false, schema = false, request = false;
  int64_t controls = -1;
  PromptLayout layout;
  RequestOptions ro;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--parse") {
        parse = true;
        parse_text = value();
      } else if (a == "--controls") controls = std::stoll(value());
      else if (a == "--schema") schema = true;
      else if (a == "--request") request = true;
      else if (a == "--max-tokens") ro.max_tokens = std::stoll(value());
      else if (a == "--history") layout.history_window = std::stoi(value());
      else if (a == "--memory") layout.growing_memory = true;
      else if (a == "--memory-before-task") layout.growing_memory = layout.memory_before_task = true;
      else if (a == "--guidelines-after") layout.guidelines_after_screen = true;
      else if (a == "--date-first") layout.date_first = true;
      else if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else if (!a.empty() && a[0] != '-' && obs_path.empty()) obs_path = a;
      else throw std::invalid_argument("unknown option " + a);
    }
    if (!parse && !schema && obs_path.empty()) throw std::invalid_argument("an observation file, --parse or --schema");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-agent-prompt: %s\n", e.what());
    usage();
    return 2;
  }

  if (schema) {
    std::printf("%s\n", action_schema().dump(2).c_str());
    return 0;
  }
  if (parse) {
    if (parse_text == "-") {
      std::stringstream ss;
      ss << std::cin.rdbuf();
      parse_text = ss.str();
    }
    ParseOptions opt;
    opt.n_controls = controls;
    const ParseResult r = parse_action(parse_text, opt);
    if (!r.ok()) {
      std::printf("error: %s\n", r.error.c_str());
      return 1;
    }
    std::printf("%s\n", to_text(*r.action).c_str());
    return 0;
  }
  try {
    std::ifstream in(obs_path);
    if (!in) throw std::runtime_error("cannot open " + obs_path);
    const json j = json::parse(in);
    Observation obs;
    obs.app = j.value("app", "");
    obs.task = j.value("task", "");
    obs.date = j.value("date", "");
    if (j.contains("tree")) obs.tree = j["tree"];
    std::vector<HistoryEntry> history;
    if (j.contains("history")) {
      for (const json& h : j["history"]) {
        const json& a = h.contains("action") && h["action"].is_object() ? h["action"] : h;
        const ParseResult p = parse_action(a.dump());
        if (!p.ok()) throw std::runtime_error("history: " + p.error);
        history.push_back({*p.action, h.value("label", "")});
      }
    }
    const BuiltPrompt p = build_prompt(obs, history, layout);
    if (request) std::printf("%s\n", chat_request(p, ro).dump(2).c_str());
    else std::printf("%s", p.text.c_str());
    std::fprintf(stderr, "%zu controls\n", p.controls.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-agent-prompt: %s\n", e.what());
    return 1;
  }
  return 0;
}
