// tandem-gen-trace: a seeded synthetic agent trace (JSONL) with the paper's structure, and, with a
// model's tokenizer, the token counts of its parts. See docs/agent.md.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "agent/episode_gen.h"
#include "agent/request_tokens.h"
#include "gguf/gguf_file.h"

using namespace tandem;
using namespace tandem::agent;

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: tandem-gen-trace [-o trace.jsonl] [options]\n"
               "  -o FILE               output (default: stdout)\n"
               "  --seed N              (default 1)\n"
               "  --singles N           single screens, one per app (default 21, at most 21)\n"
               "  --episodes N          (default 5)\n"
               "  --steps N             steps per episode (default 8)\n"
               "  --history N           action-history window (default 3)\n"
               "  --memory              a growing memory of every action instead of the window\n"
               "  --memory-before-task  the growing memory before the task (implies --memory)\n"
               "  --guidelines-after    the guidelines after the screen\n"
               "  --date-first          a date line first\n"
               "  --controls-scale X    scales the list items per screen (default 1)\n"
               "  --max-tokens N        per request (default 16)\n"
               "  -m MODEL.gguf         measure token counts with this model's tokenizer + chat template\n");
}

}  // namespace

int main(int argc, char** argv) {
  GenOptions opt;
  std::string out_path, model;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "-o") out_path = value();
      else if (a == "--seed") opt.seed = std::stoull(value());
      else if (a == "--singles") opt.single_screens = std::stoi(value());
      else if (a == "--episodes") opt.episodes = std::stoi(value());
      else if (a == "--steps") opt.steps = std::stoi(value());
      else if (a == "--history") opt.layout.history_window = std::stoi(value());
      else if (a == "--memory") opt.layout.growing_memory = true;
      else if (a == "--memory-before-task") opt.layout.growing_memory = opt.layout.memory_before_task = true;
      else if (a == "--guidelines-after") opt.layout.guidelines_after_screen = true;
      else if (a == "--date-first") opt.layout.date_first = true;
      else if (a == "--controls-scale") opt.controls_scale = std::stod(value());
      else if (a == "--max-tokens") opt.request.max_tokens = std::stoll(value());
      else if (a == "-m" || a == "--model") model = value();
      else if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else throw std::invalid_argument("unknown option " + a);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-gen-trace: %s\n", e.what());
    usage();
    return 2;
  }
  try {
    const std::vector<GeneratedRequest> gen = generate_trace(opt);
    std::vector<TraceRecord> records;
    for (const auto& g : gen) records.push_back(g.record);
    if (out_path.empty()) write_trace(std::cout, records);
    else write_trace(out_path, records);
    std::fprintf(stderr, "%zu requests (%d single screens, %d episodes x %d steps)%s%s\n", records.size(),
                 opt.single_screens, opt.episodes, opt.steps, out_path.empty() ? "" : " -> ", out_path.c_str());
    if (model.empty()) return 0;

    const auto file = GgufFile::open(model);
    const auto tok = text::Tokenizer::from_gguf(*file);
    const auto tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template());
    std::map<std::string, double> sum;
    double total = 0;
    std::vector<std::vector<int32_t>> streams;
    for (const auto& g : gen) {
      const std::string& text = g.record.body["messages"][0]["content"].get_ref<const std::string&>();
      const SectionTokenCounts c = count_section_tokens(*tok, tmpl, g.record.body, text, g.sections);
      for (const auto& [k, v] : c.by_section) sum[k] += static_cast<double>(v);
      total += static_cast<double>(c.total);
      streams.push_back(tokenize_request(*tok, tmpl, g.record.body).ids);
    }
    const double n = static_cast<double>(gen.size());
    std::fprintf(stderr, "tokens per request (mean, %s, chat template %s):\n", model.c_str(),
                 text::chat_template_family_name(tmpl.family()));
    for (const auto& [k, v] : sum) std::fprintf(stderr, "  %-13s %7.1f\n", k.c_str(), v / n);
    std::fprintf(stderr, "  %-13s %7.1f\n", "total", total / n);
    // Shared prefix of all prompts, and where consecutive prompts diverge.
    auto lcp = [](const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
      size_t i = 0;
      while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
      return i;
    };
    size_t common = streams[0].size();
    for (const auto& s : streams) common = std::min(common, lcp(streams[0], s));
    double in_ep = 0, new_task = 0;
    int n_in = 0, n_new = 0;
    for (size_t i = 1; i < gen.size(); ++i) {
      const size_t l = lcp(streams[i - 1], streams[i]);
      const bool same = !gen[i].record.episode.empty() && gen[i].record.episode == gen[i - 1].record.episode;
      (same ? in_ep : new_task) += static_cast<double>(l);
      ++(same ? n_in : n_new);
    }
    std::fprintf(stderr, "  shared by all prompts: %zu tokens\n", common);
    if (n_in) std::fprintf(stderr, "  consecutive steps of an episode diverge at token %.1f (mean)\n", in_ep / n_in);
    if (n_new) std::fprintf(stderr, "  a new screen/task diverges at token %.1f (mean)\n", new_task / n_new);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-gen-trace: %s\n", e.what());
    return 1;
  }
  return 0;
}
