// tandem-gen-trace: a seeded synthetic agent trace (JSONL) with the paper's structure, and, with a
// model's tokenizer, the token counts of its parts. See docs/agent.md.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include "agent/episode_gen.h"
#include "agent/request_tokens.h"
#include "agent/screenshot.h"
#include "agent/trace_variety.h"
#include "gguf/gguf_file.h"
#include "serve/request/request_image.h"

using namespace tandem;
using namespace tandem::agent;

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: tandem-gen-trace [-o trace.jsonl] [options]\n"
               "  -o FILE               output (default: stdout)\n"
               "  --seed N              (default 1)\n"
               "  --seeds A-B           print how varied the traces of seeds A..B are (distinct tasks, targets,\n"
               "                        screens, where a task's target sits, the mix of expected actions);\n"
               "                        writes no trace\n"
               "  --layout L            paper (default): the paper's prompt (rules, task, a window of recent\n"
               "                        actions, the screen's controls), 21 single screens + episodes.\n"
               "                        growing: a growing-history agent's action prompts (issue 30; episodes\n"
               "                        only): every earlier step stays as one history line (action, reason,\n"
               "                        summary), then the screen's verbose element list, then instructions.\n"
               "                        alternating: growing plus, after each step but the last, the summary\n"
               "                        prompt (screens before and after, the action) that writes that line.\n"
               "                        --history/--memory/--guidelines-after/--date-first/--singles: paper only\n"
               "  --singles N           single screens, one per app (default 21, at most 21)\n"
               "  --episodes N          (default 5)\n"
               "  --steps N             steps per episode (default 8)\n"
               "  --history N           action-history window (default 3)\n"
               "  --memory              a growing memory of every action instead of the window\n"
               "  --memory-before-task  the growing memory before the task (implies --memory)\n"
               "  --guidelines-after    the guidelines after the screen\n"
               "  --date-first          a date line first\n"
               "  --controls-scale X    scales the list items per screen (default 1)\n"
               "  --max-tokens N        per request (default 64: every expected answer fits, even in bytes)\n"
               "screenshot steps (off by default: the text trace):\n"
               "  --screenshots MODE    off | sparse | all. sparse: a share of screens (--sparse-rate) draw their\n"
               "                        list on a canvas the accessibility tree does not describe (unlabelled\n"
               "                        rows), and a step attaches a screenshot when its accessibility data is\n"
               "                        sparse (at least 3 unlabelled clickable controls); all: every step.\n"
               "                        An unchanged screen is the same PNG. Needs -o\n"
               "  --sparse-rate P       share of sparse screens (default 0.25)\n"
               "  --unchanged-rate P    share of loading screens still loading after the first wait (the second\n"
               "                        wait sees the same screen: the same screenshot) (default 0.15)\n"
               "  --screen-size WxH     screenshot pixels (default 720x1560: 1127 image tokens for a Qwen3.5\n"
               "                        tower at the default budget; 360x780: 264)\n"
               "  --screens-dir DIR     where the PNGs go (default: <trace name>-screens beside the trace);\n"
               "                        the trace's \"image\" field names them relative to the trace\n"
               "  -m MODEL.gguf         measure token counts with this model's tokenizer + chat template\n");
}

// Whole values only: "3x", "" or "-1" for a count are refused with what was expected.
int64_t parse_int(const std::string& opt, const std::string& v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi)
    throw std::invalid_argument(opt + ": expected a whole number in " + std::to_string(lo) + ".." + std::to_string(hi) +
                                ", got \"" + v + "\"");
  return x;
}
uint64_t parse_seed(const std::string& opt, const std::string& v) {
  uint64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size())
    throw std::invalid_argument(opt + ": expected a whole number 0.." + std::to_string(UINT64_MAX) + ", got \"" + v + "\"");
  return x;
}
double parse_real(const std::string& opt, const std::string& v, double lo, double hi) {
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !(x >= lo && x <= hi))
    throw std::invalid_argument(opt + ": expected a number in [" + std::to_string(lo).substr(0, 4) + ", " +
                                std::to_string(hi).substr(0, 4) + "], got \"" + v + "\"");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  GenOptions opt;
  std::string out_path, model, screens_dir;
  std::pair<int, int> screen_size{720, 1560};
  std::pair<uint64_t, uint64_t> seeds{0, 0};
  bool seed_range = false;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "-o") out_path = value();
      else if (a == "--seed") opt.seed = parse_seed(a, value());
      else if (a == "--seeds") {
        const std::string v = value();
        const size_t dash = v.find('-');
        if (dash == std::string::npos) throw std::invalid_argument("--seeds: expected A-B (e.g. 1-20), got \"" + v + "\"");
        seeds = {parse_seed(a + " (first)", v.substr(0, dash)), parse_seed(a + " (last)", v.substr(dash + 1))};
        if (seeds.second < seeds.first || seeds.second - seeds.first >= 100000)
          throw std::invalid_argument("--seeds: expected A-B with A <= B and at most 100000 seeds, got \"" + v + "\"");
        seed_range = true;
      }
      else if (a == "--layout") {
        const std::string l = value();
        if (l == "paper") opt.trace_layout = GenOptions::Layout::Paper;
        else if (l == "growing") opt.trace_layout = GenOptions::Layout::Growing;
        else if (l == "alternating") opt.trace_layout = GenOptions::Layout::Alternating;
        else throw std::invalid_argument("--layout: paper, growing or alternating, got \"" + l + "\"");
      } else if (a == "--singles") opt.single_screens = static_cast<int>(parse_int(a, value(), 0, 21));
      else if (a == "--episodes") opt.episodes = static_cast<int>(parse_int(a, value(), 0, 100000));
      else if (a == "--steps") opt.steps = static_cast<int>(parse_int(a, value(), 1, 1000));
      else if (a == "--history") opt.layout.history_window = static_cast<int>(parse_int(a, value(), 0, 1000));
      else if (a == "--memory") opt.layout.growing_memory = true;
      else if (a == "--memory-before-task") opt.layout.growing_memory = opt.layout.memory_before_task = true;
      else if (a == "--guidelines-after") opt.layout.guidelines_after_screen = true;
      else if (a == "--date-first") opt.layout.date_first = true;
      else if (a == "--controls-scale") opt.controls_scale = parse_real(a, value(), 0.01, 16);
      else if (a == "--max-tokens") opt.request.max_tokens = parse_int(a, value(), 1, 1 << 20);
      else if (a == "--screenshots") {
        const std::string m = value();
        if (m == "off") opt.screenshots = GenOptions::Screenshots::Off;
        else if (m == "sparse") opt.screenshots = GenOptions::Screenshots::Sparse;
        else if (m == "all") opt.screenshots = GenOptions::Screenshots::All;
        else throw std::invalid_argument("--screenshots: off, sparse or all, got \"" + m + "\"");
      } else if (a == "--sparse-rate") opt.sparse_rate = parse_real(a, value(), 0, 1);
      else if (a == "--unchanged-rate") opt.unchanged_rate = parse_real(a, value(), 0, 1);
      else if (a == "--screen-size") screen_size = parse_size(value());
      else if (a == "--screens-dir") screens_dir = value();
      else if (a == "-m" || a == "--model") model = value();
      else if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else throw std::invalid_argument("unknown option " + a);
    }
    if (seed_range && (!out_path.empty() || !model.empty() || opt.screenshots != GenOptions::Screenshots::Off))
      throw std::invalid_argument("--seeds prints how varied a range of seeds is and writes no trace: drop -o, -m and "
                                  "--screenshots, or give one --seed");
    if (opt.screenshots != GenOptions::Screenshots::Off && out_path.empty())
      throw std::invalid_argument("--screenshots needs -o (the PNGs are written beside the trace)");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-gen-trace: %s\n", e.what());
    usage();
    return 2;
  }
  try {
    if (seed_range) {
      TraceVariety v;
      for (uint64_t seed = seeds.first; seed <= seeds.second; ++seed) {
        opt.seed = seed;
        std::vector<TraceRecord> trace;
        for (const auto& g : generate_trace(opt)) trace.push_back(g.record);
        v.add(trace);
      }
      std::printf("seeds %llu-%llu: %zu requests, %zu with an expected action\n", static_cast<unsigned long long>(seeds.first),
                  static_cast<unsigned long long>(seeds.second), v.records, v.with_action);
      std::printf("  distinct tasks %zu, targets %zu, screens %zu\n", v.tasks.size(), v.targets.size(), v.screens.size());
      std::printf("  tasks whose target row was tapped in 2+ requests: %zu, at 2+ different indices: %zu\n",
                  v.tasks_with_repeated_target(), v.tasks_with_moving_target());
      std::printf("  expected actions: %s\n", v.mix().c_str());
      return 0;
    }
    std::vector<GeneratedRequest> gen = generate_trace(opt);
    std::vector<TraceRecord> records;
    namespace fs = std::filesystem;
    size_t n_shots = 0, n_files = 0, png_bytes = 0;
    std::pair<int, int> shot_size{0, 0};
    if (opt.screenshots != GenOptions::Screenshots::Off) {
      const fs::path trace_dir = fs::path(out_path).parent_path();
      const fs::path dir = screens_dir.empty() ? trace_dir / (fs::path(out_path).stem().string() + "-screens") : fs::path(screens_dir);
      fs::create_directories(dir);
      vision::RgbImage prev;
      std::string prev_name;
      int single = 0;
      for (auto& g : gen) {
        if (g.record.episode.empty()) ++single;
        if (!g.screenshot) continue;
        ScreenStyle st;
        st.width = screen_size.first;
        st.height = screen_size.second;
        st.app = g.record.app;
        st.clock = g.clock;
        vision::RgbImage img = render_screen(g.screen, st);
        const std::string name = g.record.episode.empty() ? "s" + std::to_string(single) + ".png"
                                                          : g.record.episode + "-" + std::to_string(g.record.step) + ".png";
        fs::path file = dir / name;
        if (!prev_name.empty() && img.rgb == prev.rgb) {
          file = prev_name;  // an unchanged screen: the same file
        } else {
          const std::vector<uint8_t> png = encode_png(img);
          std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
          png_bytes += png.size();
          ++n_files;
          prev = std::move(img);
          prev_name = file.string();
        }
        g.record.image = fs::relative(file, trace_dir.empty() ? fs::path(".") : trace_dir).generic_string();
        ++n_shots;
      }
      shot_size = screen_size;
      std::fprintf(stderr, "%zu screenshot steps, %zu PNGs (%dx%d, %.1f KiB each on average) in %s\n", n_shots, n_files,
                   shot_size.first, shot_size.second, n_files ? png_bytes / 1024.0 / static_cast<double>(n_files) : 0.0,
                   dir.string().c_str());
    }
    for (const auto& g : gen) records.push_back(g.record);
    if (out_path.empty()) write_trace(std::cout, records);
    else write_trace(out_path, records);
    const bool paper = opt.trace_layout == GenOptions::Layout::Paper;
    std::fprintf(stderr, "%zu requests (%d single screens, %d episodes x %d steps%s)%s%s\n", records.size(),
                 paper ? opt.single_screens : 0, opt.episodes, opt.steps,
                 opt.trace_layout == GenOptions::Layout::Alternating ? ", a summary after each step but the last" : "",
                 out_path.empty() ? "" : " -> ", out_path.c_str());
    if (model.empty()) return 0;

    const auto file = GgufFile::open(model);
    const auto tok = text::Tokenizer::from_gguf(*file);
    const auto tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template(), text::chat_template_tokens(*tok));
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
    if (n_shots) {
      vision::RgbImage blank;
      blank.width = shot_size.first;
      blank.height = shot_size.second;
      blank.rgb.assign(static_cast<size_t>(blank.width) * blank.height * 3, 0);
      for (int budget : {-1, 1127, 256}) {
        ImageLayout l;
        l.budget.max_tokens = budget;
        const auto c = serve::image_chunk(blank, l.params());
        std::fprintf(stderr, "  a screenshot at --image-max-tokens %d: %d x %d = %lld image rows (patch 16, merge 2)\n",
                     budget, c.nx, c.ny, static_cast<long long>(c.rows()));
      }
    }
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
    // Each request against the previous one of its kind (the alternating layout's two kinds).
    for (size_t i = 1; i < gen.size(); ++i) {
      size_t prev = i - 1;
      while (prev > 0 && gen[prev].summary != gen[i].summary) --prev;
      if (gen[prev].summary != gen[i].summary) continue;
      const size_t l = lcp(streams[prev], streams[i]);
      const bool same = !gen[i].record.episode.empty() && gen[i].record.episode == gen[prev].record.episode;
      (same ? in_ep : new_task) += static_cast<double>(l);
      ++(same ? n_in : n_new);
    }
    // The longest expected answer as the model would write it (compact JSON) plus its end of turn
    // must fit max_tokens (episode_gen checks the same in bytes, which bound tokens).
    size_t longest = 0;
    std::string longest_text;
    for (const auto& g : gen)
      if (g.record.expected_action) {
        const std::string answer = g.record.expected_action->dump();
        const size_t n = tok->encode(answer).size();
        if (n > longest) longest = n, longest_text = answer;
      }
    if (longest) {
      std::fprintf(stderr, "  longest expected answer: %zu tokens + the end of turn, max_tokens %lld: %s\n", longest,
                   static_cast<long long>(opt.request.max_tokens), longest_text.c_str());
      if (static_cast<int64_t>(longest) + 1 > opt.request.max_tokens) throw std::runtime_error("max_tokens cuts that answer");
    }
    std::fprintf(stderr, "  shared by all prompts: %zu tokens\n", common);
    if (n_in) std::fprintf(stderr, "  consecutive steps of an episode (same kind) diverge at token %.1f (mean)\n", in_ep / n_in);
    if (n_new) std::fprintf(stderr, "  a new screen/task diverges at token %.1f (mean)\n", new_task / n_new);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-gen-trace: %s\n", e.what());
    return 1;
  }
  return 0;
}
