// tandem-replay: replays an agent trace against running servers and compares configurations.
//
//   tandem-replay --trace trace.jsonl --server-bin build/tandem-server --model model.gguf \
//       --config "stock: --checkpoint-policy stock --consolidate-batches off" \
//       --config "tandem: --checkpoint-policy divergence --consolidate-batches on" \
//       [--config "llama.cpp: http://127.0.0.1:8080"] [--runs 2] [--out DIR]
//
// A configuration is either tandem-server flags (the replay starts a fresh server on 127.0.0.1 for
// every run of it, with --port 0 and --log-requests DIR/<name>-run<k>.jsonl, and stops it with
// SIGTERM) or the URL of a running llama.cpp-compatible server. Runs alternate configurations.
// Requests go to POST /v1/chat/completions, one at a time, in trace order; only the documented
// `timings` fields are read (llama.cpp's cache_n, prompt_n, prompt_ms, predicted_n, predicted_ms;
// Tandem's n_prompt, kv_bound, passes, checkpoints_created/restored and the speculation and
// grammar counts when present).
//
// Constrained configurations: `--action-schema FILE` inside a configuration's flags (stripped
// before the server's command line; after the URL for a running server) sends every request of
// it with "response_format" {"type": "json_schema", "json_schema": {"name": "action", "schema":
// <FILE>, "strict": true}}, Tandem's "tandem": {"json_whitespace": "compact"} and max_tokens
// --action-max-tokens. Every answer of every configuration is checked with agent::parse_action,
// and where the trace record carries an expected_action, compared with it in every field
// (agent::check_answer): the "exact" column of steps.csv and answers.jsonl, and the "exact match"
// column of the summary's Answers table (a trained policy's accuracy; issue 50).
// Screenshot steps (issue 26): a record with an "image" (a PNG beside the trace) is sent with the
// file as an image_url part (a base64 data: URL) after its text; the encoder's ms, the image rows
// and the encoder cache's hits are recorded per step, and the summary and the plots show text and
// screenshot steps apart (DIR/screenshots.png: encoder ms and image rows per screenshot step).
// Energy figures (issue 27): each step's cpu_ms (CPU time of the server's compute threads) and
// energy_j (RAPL package energy, machine-wide; null where the server cannot read RAPL) go into
// steps.csv and, as CPU-seconds and joules per step, next to the step time in the summary.
// `--idle S` (the paper's standby comparison) keeps each started server idle for S seconds after
// its last step and reads its /metrics before and after: process and compute-thread CPU ms
// per minute, package joules per minute and the seconds its resources were released (give one
// configuration --idle-release-ms 0 and another a short release to compare them side by side).
// Answers are validated under the action schema (--answer-schema, default the first constrained
// configuration's), and the summary shows task success (episodes every step of which is exact),
// whether each configuration's answers are the first configuration's, and the MTP head's
// first-draft acceptance (timings.mtp_first_drafts / mtp_first_accepted).
// Writes DIR/steps.csv, DIR/answers.jsonl, DIR/summary.md and, with gnuplot, DIR/steps.png (step
// time per configuration: quartiles, 5th-95th percentile, mean +- sd), DIR/latency.png (per request)
// and DIR/tokens.png. Exits 3 (after writing them) when an answer of a constrained configuration
// does not parse.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/action.h"
#include "agent/policy_eval.h"
#include "agent/request_tokens.h"
#include "agent/sim.h"
#include "agent/trace.h"
#include "gguf/gguf_file.h"

using namespace tandem;
using namespace tandem::agent;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

// The longest answer schemas/agent-action.schema.json admits, in bytes, rounded up: "finish" with
// "infeasible" and a 48-character message of \uXXXX escapes, {"action":"finish","status":
// "infeasible","message":"<288 bytes>"} = 342 bytes, plus the end-of-generation token. A token is
// at least one byte, so no constrained answer is cut; a model with random weights fills strings to
// their bound, mostly with longer tokens (the main job measures it).
constexpr int kDefaultActionMaxTokens = 352;

void usage() {
  std::fprintf(stderr,
               "usage: tandem-replay --trace T.jsonl --config \"name: FLAGS|URL\" [--config ...] [options]\n"
               "  --config \"name: flags\"   tandem-server flags (needs --server-bin and --model); started per run\n"
               "  --config \"name: URL\"     a running llama.cpp-compatible server, e.g. http://127.0.0.1:8080\n"
               "  --server-bin PATH        tandem-server (default: tandem-server next to this binary)\n"
               "  --model MODEL.gguf       the model the started servers load\n"
               "  --tokenizer MODEL.gguf   tokenize locally for the KV bound when a server does not report it\n"
               "                           (default: --model)\n"
               "  --runs N                 runs per configuration, alternating (default 1)\n"
               "  --out DIR                results (default replay-out)\n"
               "  --timeout S              per request (default 600)\n"
               "  --limit N                only the first N requests\n"
               "  --idle S                 after the last step, keep each Tandem server idle S seconds and report\n"
               "                           its CPU time and package joules per minute from /metrics (0: off)\n"
               "  --action-max-tokens N    max_tokens of a constrained configuration's requests (default %d: the\n"
               "                           longest answer agent-action.schema.json admits, one byte per token)\n"
               "  --answer-schema FILE     validate every answer under this JSON schema (the summary's \"schema valid\";\n"
               "                           default: the first constrained configuration's --action-schema)\n"
               "A configuration's flags may include --action-schema FILE (a replay option, not passed to the\n"
               "server; for a URL, after it): its requests are constrained to that JSON schema\n"
               "(response_format json_schema \"action\", strict; compact JSON whitespace).\n"
               "Exit status: 0, 1 on an error, 2 on a usage error, 3 when a constrained answer does not parse.\n",
               kDefaultActionMaxTokens);
}

struct Config {
  std::string name;
  std::string url;                 // non-empty: a running server
  std::vector<std::string> flags;  // else: tandem-server flags
  std::string schema_path;         // --action-schema: constrained requests
  ojson schema;                    // its contents (declaration order kept)
  bool constrained() const { return !schema_path.empty(); }
};

// Removes the replay's own options (--action-schema FILE, or =FILE) from a configuration's words.
void take_replay_options(std::vector<std::string>& words, Config& c) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--action-schema") {
      if (i + 1 >= words.size()) throw std::invalid_argument("configuration '" + c.name + "': --action-schema needs a file");
      c.schema_path = words[++i];
    } else if (w.rfind("--action-schema=", 0) == 0) {
      c.schema_path = w.substr(16);
    } else {
      kept.push_back(w);
    }
  }
  words = std::move(kept);
  if (c.schema_path.empty()) return;
  std::ifstream in(c.schema_path);
  if (!in) throw std::invalid_argument("configuration '" + c.name + "': cannot open --action-schema " + c.schema_path);
  try {
    c.schema = ojson::parse(in);
  } catch (const ojson::parse_error& e) {
    throw std::invalid_argument("configuration '" + c.name + "': " + c.schema_path + " is not JSON: " + e.what());
  }
  if (!c.schema.is_object()) throw std::invalid_argument("configuration '" + c.name + "': " + c.schema_path + " is not a JSON object");
}

Config parse_replay_config(const std::string& spec) {
  Config c;
  std::string rest = spec;
  const size_t colon = spec.find(':');
  // "name: ..." unless the text before ':' is a URL scheme or a flag.
  if (colon != std::string::npos && spec.compare(colon, 3, "://") != 0 && spec.substr(0, colon).find('-') == std::string::npos) {
    c.name = spec.substr(0, colon);
    rest = spec.substr(colon + 1);
  }
  while (!rest.empty() && rest.front() == ' ') rest.erase(rest.begin());
  while (!c.name.empty() && c.name.back() == ' ') c.name.pop_back();
  if (c.name.empty()) c.name = rest.empty() ? "default" : rest;
  std::vector<std::string> words = split_args(rest);
  take_replay_options(words, c);
  if (!words.empty() && (words[0].rfind("http://", 0) == 0 || words[0].rfind("https://", 0) == 0)) {
    c.url = words[0];
    while (!c.url.empty() && c.url.back() == '/') c.url.pop_back();
    if (words.size() > 1) throw std::invalid_argument("configuration '" + c.name + "': a URL takes no server flags (" + words[1] + ")");
  } else {
    c.flags = std::move(words);
  }
  return c;
}

// A tandem-server child process on 127.0.0.1.
class ServerProcess {
 public:
  ServerProcess(const std::string& bin, const std::string& model, const std::vector<std::string>& flags,
                const std::string& log_path, const std::string& stderr_path) {
    std::vector<std::string> args = {bin, "-m", model};
    args.insert(args.end(), flags.begin(), flags.end());
    // Last, so that they win over anything in the configuration: loopback only, any free port.
    for (const char* a : {"--host", "127.0.0.1", "--port", "0"}) args.emplace_back(a);
    args.emplace_back("--log-requests");
    args.push_back(log_path);
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      dup2(out[1], 1);
      const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err >= 0) dup2(err, 2);
      close(out[0]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(bin.c_str(), argv.data());
      std::fprintf(stderr, "tandem-replay: cannot run %s: %s\n", bin.c_str(), std::strerror(errno));
      _exit(127);
    }
    close(out[1]);
    // Wait for "listening on http://127.0.0.1:PORT".
    std::string line;
    char c;
    while (true) {
      const ssize_t n = read(out[0], &c, 1);
      if (n <= 0) break;
      if (c != '\n') {
        line += c;
        continue;
      }
      const size_t at = line.find("listening on http://");
      if (at != std::string::npos) {
        const size_t colon = line.find(':', at + 20);
        port_ = std::atoi(line.c_str() + colon + 1);
        break;
      }
      line.clear();
    }
    close(out[0]);
    if (port_ <= 0) {
      stop();
      std::ifstream err(stderr_path);
      std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
      throw std::runtime_error("tandem-server did not start: " + text);
    }
  }
  ~ServerProcess() { stop(); }
  int port() const { return port_; }
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

struct Row {
  std::string config;
  int run = 0;
  size_t request = 0;
  std::string episode;
  int64_t step = -1;
  double latency_ms = 0, prompt_ms = 0, predicted_ms = 0;
  int64_t n_prompt = -1, cache_n = -1, new_tokens = -1, kv_bound = -1, passes = -1, created = -1, restored = -1,
          predicted_n = -1;
  // The answer: finish_reason, whether agent::parse_action accepts it (no screen check: a model
  // with random weights picks any index the schema allows), and the speculation / grammar counts
  // (-1: not reported, e.g. by llama.cpp or a server without speculation).
  std::string finish_reason, content, parse_error;
  bool parsed = false;
  // The answer against the record's expected_action, every field (agent::check_answer): 1 equal,
  // 0 not, -1 the record carries no expected action.
  int exact = -1;
  // The answer under the action schema (agent::SchemaValidator, flexible whitespace): 1 valid, 0
  // not, -1 no schema to validate with (no --answer-schema and no constrained configuration).
  int schema_valid = -1;
  // The same text as the first configuration's answer to this request in this run: 1, 0; -1 for
  // the first configuration itself.
  int same_as_first = -1;
  int64_t drafts_proposed = -1, drafts_accepted = -1, drafts_forced = -1, drafts_forced_accepted = -1, drafts_mtp = -1,
          verify_passes = -1;
  // The MTP head's first draft: steps whose drafts began with one, and those the target
  // accepted (timings.mtp_first_drafts / mtp_first_accepted; -1: not reported).
  int64_t mtp_first_drafts = -1, mtp_first_accepted = -1;
  double grammar_ms = -1;
  // Screenshot steps: the image rows, those prefilled, encoder runs and cache hits, the encoder's ms.
  bool screenshot = false;
  int64_t images = -1, image_rows = -1, image_rows_prefilled = -1, images_encoded = -1, encoder_cache_hits = -1;
  double encoder_ms = 0;
  // Energy figures: the compute threads' CPU ms (-1: not reported) and package joules (nullopt:
  // not reported, or null: no readable RAPL on the server).
  double cpu_ms = -1;
  std::optional<double> energy_j;
  // Trunk passes on the decode side: one per emitted token, less the drafts accepted with it
  // (a verify pass emits its accepted drafts plus one token).
  int64_t decode_passes() const {
    if (predicted_n < 0) return -1;
    return predicted_n - std::max<int64_t>(drafts_accepted, 0);
  }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int64_t geti(const ojson& t, const char* key) {
  const auto it = t.find(key);
  return it != t.end() && it->is_number() ? it->get<int64_t>() : -1;
}
double getd(const ojson& t, const char* key) {
  const auto it = t.find(key);
  return it != t.end() && it->is_number() ? it->get<double>() : 0;
}

// The unlabelled samples of a Prometheus text (name -> value).
std::map<std::string, double> prometheus_samples(const std::string& text) {
  std::map<std::string, double> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#' || line.find('{') != std::string::npos) continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    try {
      out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
    } catch (const std::exception&) {
    }
  }
  return out;
}

// An idle window after a configuration's last step: what its /metrics counted meanwhile.
struct IdleRow {
  std::string config;
  int run = 0;
  double seconds = 0;
  double process_cpu_s = -1, compute_cpu_s = -1, released_s = -1;
  std::optional<double> package_j;
};

IdleRow measure_idle(httplib::Client& cli, const std::string& config, int run, int idle_s) {
  IdleRow row;
  row.config = config;
  row.run = run;
  auto scrape = [&]() -> std::map<std::string, double> {
    const auto r = cli.Get("/metrics");
    if (!r || r->status != 200) return {};
    return prometheus_samples(r->body);
  };
  const auto m0 = scrape();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(idle_s));
  const auto m1 = scrape();
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto delta = [&](const char* name) -> std::optional<double> {
    const auto a = m0.find(name), b = m1.find(name);
    if (a == m0.end() || b == m1.end()) return std::nullopt;
    return b->second - a->second;
  };
  row.process_cpu_s = delta("tandem_process_cpu_seconds_total").value_or(-1);
  row.compute_cpu_s = delta("tandem_compute_cpu_seconds_total").value_or(-1);
  row.released_s = delta("tandem_governor_released_seconds_total").value_or(-1);
  row.package_j = delta("tandem_package_energy_joules_total");
  return row;
}

void progress(const std::string& label, size_t done, size_t total) {
  const int width = 30;
  const int fill = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\r%-40.40s [%s%s] %zu/%zu", label.c_str(), std::string(static_cast<size_t>(fill), '#').c_str(),
               std::string(static_cast<size_t>(width - fill), '-').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

std::string fmt(double v, int prec = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string safe_name(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return o;
}

std::string ratio(int64_t num, int64_t den) {
  if (den < 0 || num < 0) return "-";
  return std::to_string(num) + " / " + std::to_string(den) + (den > 0 ? " (" + fmt(100.0 * num / den, 1) + "%)" : "");
}

// The answers per configuration, over every request of every run: how many parse (and validate
// under the action schema), how many equal the expected action, the episodes all of whose steps
// do (task success), how many max_tokens cut, whether they are the first configuration's answers,
// and what an action costs on the decode side (medians: a model with random weights makes some
// answers run to their bounds), with the drafts by source.
std::string actions_table(const std::vector<Config>& configs, const std::vector<Row>& rows) {
  std::string md =
      "Answers (every request of every run; medians per action):\n\n"
      "| configuration | constrained | parsed | schema valid | exact match | task success | cut (length) | same answers as " +
      configs.front().name +
      " | step ms | decode passes | decode ms | tokens | forced drafts accepted | MTP drafts accepted | MTP first drafts "
      "accepted | verify passes | grammar ms |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Config& cfg : configs) {
    std::vector<double> step, passes, dms, toks, verify, gms;
    int64_t n = 0, ok = 0, cut = 0, with_expected = 0, exact = 0, validated = 0, valid = 0, compared = 0, same = 0;
    int64_t forced = -1, forced_acc = -1, mtp = -1, mtp_acc = -1, first = -1, first_acc = -1;
    std::map<std::pair<int, std::string>, bool> episodes;  // (run, episode) -> every step exact
    auto add = [](int64_t& sum, int64_t v) {
      if (v < 0) return;
      sum = std::max<int64_t>(sum, 0) + v;
    };
    for (const Row& r : rows) {
      if (r.config != cfg.name) continue;
      ++n;
      ok += r.parsed;
      if (r.exact >= 0) {
        ++with_expected;
        exact += r.exact;
      }
      if (r.schema_valid >= 0) {
        ++validated;
        valid += r.schema_valid;
      }
      if (!r.episode.empty() && r.exact >= 0) {
        auto [it, fresh] = episodes.try_emplace({r.run, r.episode}, true);
        it->second = it->second && r.exact == 1;
      }
      if (r.same_as_first >= 0) {
        ++compared;
        same += r.same_as_first;
      }
      cut += r.finish_reason == "length";
      step.push_back(r.latency_ms);
      if (r.decode_passes() >= 0) passes.push_back(static_cast<double>(r.decode_passes()));
      dms.push_back(r.predicted_ms);
      if (r.predicted_n >= 0) toks.push_back(static_cast<double>(r.predicted_n));
      if (r.verify_passes >= 0) verify.push_back(static_cast<double>(r.verify_passes));
      if (r.grammar_ms >= 0) gms.push_back(r.grammar_ms);
      add(forced, r.drafts_forced);
      add(forced_acc, r.drafts_forced_accepted);
      add(mtp, r.drafts_mtp);
      if (r.drafts_accepted >= 0) add(mtp_acc, r.drafts_accepted - std::max<int64_t>(r.drafts_forced_accepted, 0));
      add(first, r.mtp_first_drafts);
      add(first_acc, r.mtp_first_accepted);
    }
    int64_t succeeded = 0;
    for (const auto& [key, all_exact] : episodes) succeeded += all_exact;
    // A server without the by-source counts (no grammar support) reports only the totals: all MTP.
    if (mtp < 0 && forced < 0) {
      for (const Row& r : rows)
        if (r.config == cfg.name) add(mtp, r.drafts_proposed);
    }
    auto med = [](const std::vector<double>& v, int prec) { return v.empty() ? std::string("-") : fmt(median(v), prec); };
    md += "| " + cfg.name + " | " + (cfg.constrained() ? "yes" : "no") + " | " + ratio(ok, n) + " | " +
          (validated ? ratio(valid, validated) : std::string("-")) + " | " +
          (with_expected ? ratio(exact, with_expected) : std::string("-")) + " | " +
          (episodes.empty() ? std::string("-") : ratio(succeeded, static_cast<int64_t>(episodes.size()))) + " | " +
          std::to_string(cut) + " | " +
          (cfg.name == configs.front().name ? std::string("(reference)") : ratio(same, compared)) + " | " + med(step, 1) +
          " | " + med(passes, 1) + " | " + med(dms, 1) + " | " + med(toks, 1) + " | " + ratio(forced_acc, forced) + " | " +
          ratio(mtp_acc, mtp) + " | " + ratio(first_acc, first) + " | " + med(verify, 1) + " | " + med(gms, 2) + " |\n";
  }
  return md;
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace_path, server_bin, model, tokenizer_model, answer_schema_path, out_dir = "replay-out";
  std::vector<Config> configs;
  int runs = 1;
  int timeout_s = 600;
  size_t limit = 0;
  int action_max_tokens = kDefaultActionMaxTokens;
  int idle_s = 0;
  size_t constrained_unparsed = 0;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--trace") trace_path = value();
      else if (a == "--config") configs.push_back(parse_replay_config(value()));
      else if (a == "--server-bin") server_bin = value();
      else if (a == "--model" || a == "-m") model = value();
      else if (a == "--tokenizer") tokenizer_model = value();
      else if (a == "--runs") runs = std::stoi(value());
      else if (a == "--out") out_dir = value();
      else if (a == "--timeout") timeout_s = std::stoi(value());
      else if (a == "--limit") limit = std::stoul(value());
      else if (a == "--action-max-tokens") action_max_tokens = std::stoi(value());
      else if (a == "--idle") idle_s = std::stoi(value());
      else if (a == "--answer-schema") answer_schema_path = value();
      else if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else throw std::invalid_argument("unknown option " + a);
    }
    if (trace_path.empty()) throw std::invalid_argument("--trace is required");
    if (configs.empty()) throw std::invalid_argument("at least one --config is required");
    if (runs < 1) throw std::invalid_argument("--runs must be >= 1");
    if (action_max_tokens < 1) throw std::invalid_argument("--action-max-tokens must be >= 1");
    if (idle_s < 0) throw std::invalid_argument("--idle must be >= 0");
    for (const Config& c : configs)
      if (c.url.empty() && model.empty()) throw std::invalid_argument("configuration '" + c.name + "' starts a server: --model is required");
    if (server_bin.empty()) server_bin = (fs::path(argv[0]).parent_path() / "tandem-server").string();
    if (tokenizer_model.empty()) tokenizer_model = model;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-replay: %s\n", e.what());
    usage();
    return 2;
  }

  try {
    std::vector<TraceRecord> trace = read_trace(trace_path);
    if (limit && trace.size() > limit) trace.resize(limit);
    fs::create_directories(out_dir);
    // The bodies as sent: screenshots read from beside the trace, as base64 image_url parts.
    std::vector<ojson> bodies;
    bool any_screenshot = false;
    for (const TraceRecord& r : trace) {
      bodies.push_back(request_body(r, fs::path(trace_path).parent_path().string()));
      any_screenshot = any_screenshot || !r.image.empty();
    }

    // Local token streams, for the KV bound of servers that do not report it (llama.cpp):
    // N - LCP(previous prompt, this prompt).
    std::vector<int64_t> local_kv_bound(trace.size(), -1);
    // The schema the answers are validated under: --answer-schema, else the first constrained
    // configuration's (compiled against the tokenizer's vocabulary, below).
    ojson answer_schema;
    if (!answer_schema_path.empty()) {
      std::ifstream in(answer_schema_path);
      if (!in) throw std::invalid_argument("cannot open --answer-schema " + answer_schema_path);
      answer_schema = ojson::parse(in);
    } else {
      for (const Config& c : configs)
        if (c.constrained()) {
          answer_schema = c.schema;
          break;
        }
    }
    std::unique_ptr<GgufFile> tok_file;
    std::unique_ptr<text::Tokenizer> tok_owner;
    std::unique_ptr<SchemaValidator> validator;
    if (!tokenizer_model.empty()) {
      tok_file = GgufFile::open(tokenizer_model);
      tok_owner = text::Tokenizer::from_gguf(*tok_file);
      const text::Tokenizer* tok = tok_owner.get();
      if (!answer_schema.is_null()) validator = std::make_unique<SchemaValidator>(*tok, answer_schema);
      text::ChatTemplate tmpl(text::ChatTemplateFamily::ChatML);
      try {
        tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template(), text::chat_template_tokens(*tok));
      } catch (const text::ChatTemplateLoadError&) {
        throw;  // the server would not have started on it either
      } catch (const text::ChatTemplateError&) {
      }
      std::vector<int32_t> prev;
      for (size_t i = 0; i < trace.size(); ++i) {
        std::vector<int32_t> ids;
        try {  // a screenshot's rows at the default budget (the servers that report it are not asked)
          ids = tokenize_request(*tok, tmpl, bodies[i]).ids;
        } catch (const std::exception&) {
          ids = tokenize_request(*tok, tmpl, trace[i].body).ids;
        }
        size_t l = 0;
        while (l < ids.size() && l < prev.size() && ids[l] == prev[l]) ++l;
        local_kv_bound[i] = static_cast<int64_t>(ids.size() - l);
        prev = ids;
      }
    }

    std::vector<Row> rows;
    std::vector<IdleRow> idle_rows;
    for (int run = 1; run <= runs; ++run) {
      for (const Config& cfg : configs) {
        const std::string label = "run " + std::to_string(run) + "/" + std::to_string(runs) + " " + cfg.name;
        std::unique_ptr<ServerProcess> server;
        std::string host = "127.0.0.1";
        int port = 0;
        std::string scheme_host_port;
        if (cfg.url.empty()) {
          const std::string base = out_dir + "/" + safe_name(cfg.name) + "-run" + std::to_string(run);
          std::remove((base + ".jsonl").c_str());
          progress(label + " (starting)", 0, trace.size());
          server = std::make_unique<ServerProcess>(server_bin, model, cfg.flags, base + ".jsonl", base + ".stderr");
          scheme_host_port = "http://127.0.0.1:" + std::to_string(server->port());
        } else {
          scheme_host_port = cfg.url;
        }
        (void)host;
        (void)port;
        httplib::Client cli(scheme_host_port);
        cli.set_read_timeout(timeout_s, 0);
        cli.set_write_timeout(timeout_s, 0);
        for (size_t i = 0; i < trace.size(); ++i) {
          progress(label, i, trace.size());
          ojson body = bodies[i];
          body["stream"] = false;
          if (cfg.constrained()) {
            body["response_format"] = ojson{{"type", "json_schema"},
                                            {"json_schema", ojson{{"name", "action"}, {"schema", cfg.schema}, {"strict", true}}}};
            body["tandem"] = ojson{{"json_whitespace", "compact"}};
            body["max_tokens"] = action_max_tokens;
          }
          const auto t0 = std::chrono::steady_clock::now();
          const auto res = cli.Post("/v1/chat/completions", body.dump(-1, ' ', false, ojson::error_handler_t::replace),
                                    "application/json");
          const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          if (!res) throw std::runtime_error(cfg.name + ": request " + std::to_string(i + 1) + ": " + httplib::to_string(res.error()));
          if (res->status != 200)
            throw std::runtime_error(cfg.name + ": request " + std::to_string(i + 1) + ": HTTP " + std::to_string(res->status) +
                                     ": " + res->body.substr(0, 300));
          const ojson j = ojson::parse(res->body);
          const ojson t = j.contains("timings") ? j["timings"] : ojson::object();
          Row r;
          r.config = cfg.name;
          r.run = run;
          r.request = i + 1;
          r.episode = trace[i].episode;
          r.step = trace[i].step;
          r.latency_ms = ms;
          r.prompt_ms = getd(t, "prompt_ms");
          r.predicted_ms = getd(t, "predicted_ms");
          r.cache_n = geti(t, "cache_n");
          r.new_tokens = geti(t, "prompt_n");
          r.n_prompt = geti(t, "n_prompt");
          if (r.n_prompt < 0 && r.cache_n >= 0 && r.new_tokens >= 0) r.n_prompt = r.cache_n + r.new_tokens;
          r.kv_bound = geti(t, "kv_bound");
          if (r.kv_bound < 0) r.kv_bound = local_kv_bound[i];
          r.passes = geti(t, "passes");
          r.created = geti(t, "checkpoints_created");
          r.restored = geti(t, "checkpoints_restored");
          r.predicted_n = geti(t, "predicted_n");
          r.drafts_proposed = geti(t, "drafts_proposed");
          r.drafts_accepted = geti(t, "drafts_accepted");
          r.drafts_forced = geti(t, "drafts_forced");
          r.drafts_forced_accepted = geti(t, "drafts_forced_accepted");
          r.drafts_mtp = geti(t, "drafts_mtp");
          r.verify_passes = geti(t, "verify_passes");
          r.mtp_first_drafts = geti(t, "mtp_first_drafts");
          r.mtp_first_accepted = geti(t, "mtp_first_accepted");
          r.grammar_ms = t.contains("grammar_ms") && t["grammar_ms"].is_number() ? t["grammar_ms"].get<double>() : -1;
          r.screenshot = !trace[i].image.empty();
          r.images = geti(t, "images");
          r.image_rows = geti(t, "image_rows");
          r.image_rows_prefilled = geti(t, "image_rows_prefilled");
          r.images_encoded = geti(t, "images_encoded");
          r.encoder_cache_hits = geti(t, "encoder_cache_hits");
          r.encoder_ms = getd(t, "encoder_ms");
          if (t.contains("cpu_ms") && t["cpu_ms"].is_number()) r.cpu_ms = t["cpu_ms"].get<double>();
          if (t.contains("energy_j") && t["energy_j"].is_number()) r.energy_j = t["energy_j"].get<double>();
          if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
            const ojson& ch = j["choices"][0];
            if (ch.contains("finish_reason") && ch["finish_reason"].is_string()) r.finish_reason = ch["finish_reason"].get<std::string>();
            if (ch.contains("message") && ch["message"].contains("content") && ch["message"]["content"].is_string())
              r.content = ch["message"]["content"].get<std::string>();
          }
          const ParseResult parsed = parse_action(r.content);
          r.parsed = parsed.ok();
          r.parse_error = parsed.error;
          if (trace[i].expected_action) {
            try {
              r.exact = check_answer(r.content, *trace[i].expected_action).exact ? 1 : 0;
            } catch (const std::invalid_argument&) {
              r.exact = -1;  // an expected action that does not parse compares with nothing
            }
          }
          if (validator) r.schema_valid = validator->valid(r.content) ? 1 : 0;
          if (cfg.constrained() && !r.parsed) ++constrained_unparsed;
          rows.push_back(r);
        }
        progress(label, trace.size(), trace.size());
        if (idle_s > 0) {
          std::fprintf(stderr, "%s: idle for %d s\n", label.c_str(), idle_s);
          idle_rows.push_back(measure_idle(cli, cfg.name, run, idle_s));
        }
        if (server) server->stop();
      }
    }

    // Each answer against the first configuration's to the same request in the same run: 1 the
    // same text, 0 not, -1 the first configuration itself (or no counterpart).
    {
      std::map<std::pair<int, size_t>, const std::string*> first;
      for (const Row& r : rows)
        if (r.config == configs.front().name) first[{r.run, r.request}] = &r.content;
      for (Row& r : rows) {
        if (r.config == configs.front().name) continue;
        const auto f = first.find({r.run, r.request});
        if (f != first.end()) r.same_as_first = *f->second == r.content ? 1 : 0;
      }
    }
    // steps.csv
    {
      std::ofstream csv(out_dir + "/steps.csv");
      csv << "config,run,request,episode,step,latency_ms,prompt_ms,predicted_ms,n_prompt,cache_n,new_tokens,kv_bound,"
             "passes,checkpoints_created,checkpoints_restored,predicted_n,finish_reason,parsed,decode_passes,"
             "drafts_proposed,drafts_accepted,drafts_forced,drafts_forced_accepted,drafts_mtp,verify_passes,grammar_ms,"
             "screenshot,images,image_rows,image_rows_prefilled,images_encoded,encoder_cache_hits,encoder_ms,cpu_ms,energy_j,exact,"
             "schema_valid,mtp_first_drafts,mtp_first_accepted,same_as_first\n";
      for (const Row& r : rows)
        csv << '"' << r.config << "\"," << r.run << ',' << r.request << ',' << r.episode << ',' << r.step << ','
            << fmt(r.latency_ms, 2) << ',' << fmt(r.prompt_ms, 2) << ',' << fmt(r.predicted_ms, 2) << ',' << r.n_prompt
            << ',' << r.cache_n << ',' << r.new_tokens << ',' << r.kv_bound << ',' << r.passes << ',' << r.created << ','
            << r.restored << ',' << r.predicted_n << ',' << r.finish_reason << ',' << (r.parsed ? 1 : 0) << ','
            << r.decode_passes() << ',' << r.drafts_proposed << ',' << r.drafts_accepted << ',' << r.drafts_forced << ','
            << r.drafts_forced_accepted << ',' << r.drafts_mtp << ',' << r.verify_passes << ','
            << (r.grammar_ms < 0 ? std::string("-1") : fmt(r.grammar_ms, 3)) << ',' << (r.screenshot ? 1 : 0) << ','
            << r.images << ',' << r.image_rows << ',' << r.image_rows_prefilled << ',' << r.images_encoded << ','
            << r.encoder_cache_hits << ',' << fmt(r.encoder_ms, 2) << ',' << fmt(r.cpu_ms, 2) << ','
            << (r.energy_j ? fmt(*r.energy_j, 4) : std::string()) << ',' << r.exact << ',' << r.schema_valid << ','
            << r.mtp_first_drafts << ',' << r.mtp_first_accepted << ',' << r.same_as_first << '\n';
    }
    // answers.jsonl: every answer, and why it does not parse.
    {
      std::ofstream out(out_dir + "/answers.jsonl");
      for (const Row& r : rows) {
        ojson a{{"config", r.config}, {"run", r.run}, {"request", r.request}, {"finish_reason", r.finish_reason},
                {"predicted_n", r.predicted_n}, {"content", r.content}, {"parsed", r.parsed}};
        if (!r.parsed) a["parse_error"] = r.parse_error;
        if (r.exact >= 0) {
          a["expected"] = to_text(*parse_action(trace[r.request - 1].expected_action->dump()).action);
          a["exact"] = r.exact == 1;
        }
        if (r.schema_valid >= 0) a["schema_valid"] = r.schema_valid == 1;
        out << a.dump(-1, ' ', false, ojson::error_handler_t::replace) << '\n';
      }
    }

    // Means per configuration over requests 2..n of every run (the first request prefills everything).
    std::string md = "| configuration | runs | step ms | CPU s / step | package J / step | prompt ms | decode ms | new prompt tokens (N-R) | KV bound (N-L) | passes | checkpoints created / run |\n"
                     "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    auto mean_or_dash = [](double s, size_t n, int prec) { return n ? fmt(s / static_cast<double>(n), prec) : std::string("-"); };
    // With screenshot steps: a row for all steps, then text steps and screenshot steps apart.
    std::vector<std::pair<std::string, int>> kinds = {{"", -1}};
    if (any_screenshot) kinds = {{"", -1}, {" (text steps)", 0}, {" (screenshot steps)", 1}};
    for (const Config& cfg : configs)
      for (const auto& [kind_label, kind] : kinds) {
      double lat = 0, pms = 0, dms = 0, nt = 0, kv = 0, ps = 0, cr = 0, cpu = 0, joules = 0;
      size_t n = 0, n_kv = 0, n_ps = 0, n_cr = 0, n_cpu = 0, n_j = 0;
      for (const Row& r : rows) {
        if (r.config != cfg.name) continue;
        if (kind >= 0 && r.screenshot != (kind == 1)) continue;
        if (r.created >= 0) cr += static_cast<double>(r.created), ++n_cr;
        if (r.request < 2) continue;
        lat += r.latency_ms, pms += r.prompt_ms, dms += r.predicted_ms, nt += static_cast<double>(r.new_tokens), ++n;
        if (r.kv_bound >= 0) kv += static_cast<double>(r.kv_bound), ++n_kv;
        if (r.passes >= 0) ps += static_cast<double>(r.passes), ++n_ps;
        if (r.cpu_ms >= 0) cpu += r.cpu_ms / 1000.0, ++n_cpu;
        if (r.energy_j) joules += *r.energy_j, ++n_j;
      }
      if (kind >= 0 && n_cr == 0 && n == 0) continue;  // no steps of this kind
      md += "| " + cfg.name + kind_label + " | " + std::to_string(runs) + " | " + mean_or_dash(lat, n, 1) + " | " +
            mean_or_dash(cpu, n_cpu, 3) + " | " + mean_or_dash(joules, n_j, 2) + " | " + mean_or_dash(pms, n, 1) +
            " | " + mean_or_dash(dms, n, 1) + " | " + mean_or_dash(nt, n, 1) + " | " + mean_or_dash(kv, n_kv, 1) + " | " +
            mean_or_dash(ps, n_ps, 2) + " | " + (n_cr ? fmt(cr / runs, 1) : std::string("-")) + " |\n";
    }
    md = "Means over requests 2.." + std::to_string(trace.size()) + " of " + trace_path + " (" + std::to_string(runs) +
         " run(s) per configuration, alternating).\n\n" + md;
    if (any_screenshot) {
      md += "\nScreenshot steps (means over the screenshot steps among requests 2..n, every run):\n\n"
            "| configuration | steps | step ms | prompt ms | encoder ms | image rows | image rows prefilled | images encoded | "
            "encoder cache hits | new prompt rows (N-R) | passes |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
      for (const Config& cfg : configs) {
        double lat = 0, pms = 0, enc = 0, rws = 0, pre = 0, encd = 0, hits = 0, nt = 0, ps = 0;
        size_t n = 0;
        for (const Row& r : rows) {
          if (r.config != cfg.name || !r.screenshot || r.request < 2) continue;
          ++n;
          lat += r.latency_ms, pms += r.prompt_ms, enc += r.encoder_ms, nt += static_cast<double>(r.new_tokens);
          rws += static_cast<double>(std::max<int64_t>(r.image_rows, 0));
          pre += static_cast<double>(std::max<int64_t>(r.image_rows_prefilled, 0));
          encd += static_cast<double>(std::max<int64_t>(r.images_encoded, 0));
          hits += static_cast<double>(std::max<int64_t>(r.encoder_cache_hits, 0));
          ps += static_cast<double>(std::max<int64_t>(r.passes, 0));
        }
        md += "| " + cfg.name + " | " + std::to_string(n / static_cast<size_t>(runs)) + " | " + mean_or_dash(lat, n, 1) + " | " +
              mean_or_dash(pms, n, 1) + " | " + mean_or_dash(enc, n, 1) + " | " + mean_or_dash(rws, n, 1) + " | " +
              mean_or_dash(pre, n, 1) + " | " + mean_or_dash(encd, n, 2) + " | " + mean_or_dash(hits, n, 2) + " | " +
              mean_or_dash(nt, n, 1) + " | " + mean_or_dash(ps, n, 2) + " |\n";
      }
    }
    md += "\nCPU s / step: the server's compute threads (scheduler and pool workers, `timings.cpu_ms`); package J / "
          "step: RAPL package energy while the step ran, machine-wide (`timings.energy_j`; - where the server cannot "
          "read RAPL).\n";
    if (!idle_rows.empty()) {
      // CPU in ms per minute: an idle server's figures are small, and a rounded 0.0000 s would read as "none".
      auto per_min = [](double v, double s, int prec) { return v < 0 || s <= 0 ? std::string("-") : fmt(v * 60.0 / s, prec); };
      md += "\nIdle after the last step (from the server's /metrics; per minute of the window; the window starts at the "
            "last answer, so a release after --idle-release-ms falls inside it):\n\n"
            "| configuration | run | window s | released s | process CPU ms / min | compute-thread CPU ms / min | package J / min |\n"
            "|---|---:|---:|---:|---:|---:|---:|\n";
      for (const IdleRow& r : idle_rows)
        md += "| " + r.config + " | " + std::to_string(r.run) + " | " + fmt(r.seconds, 1) + " | " +
              (r.released_s < 0 ? std::string("-") : fmt(r.released_s, 1)) + " | " +
              per_min(r.process_cpu_s < 0 ? -1 : r.process_cpu_s * 1e3, r.seconds, 3) + " | " +
              per_min(r.compute_cpu_s < 0 ? -1 : r.compute_cpu_s * 1e3, r.seconds, 3) + " | " +
              (r.package_j ? per_min(*r.package_j, r.seconds, 1) : std::string("- (no RAPL)")) + " |\n";
    }
    md += "\n" + actions_table(configs, rows);
    std::ofstream(out_dir + "/summary.md") << md;
    std::printf("%s", md.c_str());

    // Plots: per-step latency by configuration; new prompt tokens vs the KV bound.
    const std::string dat = out_dir + "/plot.dat";
    {
      std::ofstream d(dat);
      for (const Config& cfg : configs) {
        d << "# " << cfg.name << "\n";
        for (size_t i = 1; i <= trace.size(); ++i) {
          double lat = 0, nt = 0, kv = -1, enc = 0, pre = 0;
          int n = 0;
          for (const Row& r : rows)
            if (r.config == cfg.name && r.request == i) {
              lat += r.latency_ms, nt += static_cast<double>(r.new_tokens), kv = static_cast<double>(r.kv_bound), ++n;
              enc += r.encoder_ms, pre += static_cast<double>(std::max<int64_t>(r.image_rows_prefilled, 0));
            }
          // columns: request, step ms, N-R, KV bound, screenshot step (0/1), encoder ms, image rows prefilled
          if (n) d << i << ' ' << lat / n << ' ' << nt / n << ' ' << kv << ' ' << (trace[i - 1].image.empty() ? 0 : 1) << ' '
                   << enc / n << ' ' << pre / n << '\n';
        }
        d << "\n\n";
      }
    }
    // The step time of each configuration at a glance: over requests 2..n of every run, a box
    // from the first to the third quartile with the median across it, whiskers from the 5th to
    // the 95th percentile, the mean with its standard deviation, and the mean written beside it.
    const std::string spread_dat = out_dir + "/steps.dat";
    {
      std::ofstream d(spread_dat);
      d << "# x configuration mean p5 p25 median p75 p95 sd steps\n";
      for (size_t c = 0; c < configs.size(); ++c) {
        std::vector<double> v;
        for (const Row& r : rows)
          if (r.config == configs[c].name && r.request >= 2) v.push_back(r.latency_ms);
        if (v.empty()) continue;
        std::sort(v.begin(), v.end());
        auto pct = [&](double q) {  // linear interpolation between closest ranks
          const double at = q * static_cast<double>(v.size() - 1);
          const size_t lo = static_cast<size_t>(at);
          const size_t hi = std::min(lo + 1, v.size() - 1);
          return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
        };
        double mean = 0, var = 0;
        for (double x : v) mean += x;
        mean /= static_cast<double>(v.size());
        for (double x : v) var += (x - mean) * (x - mean);
        const double sd = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0;
        d << c + 1 << " \"" << configs[c].name << "\" " << mean << ' ' << pct(0.05) << ' ' << pct(0.25) << ' ' << pct(0.5)
          << ' ' << pct(0.75) << ' ' << pct(0.95) << ' ' << sd << ' ' << v.size() << '\n';
      }
    }
    std::string gp = "set terminal pngcairo size 1100,500 noenhanced\nset key outside right\nset grid\n";
    gp += "set output '" + out_dir + "/steps.png'\nset title 'Step time per configuration (requests 2.." +
          std::to_string(trace.size()) + ", " + std::to_string(runs) +
          " run(s)): box quartiles, line median, whiskers 5th-95th percentile, dot mean +- sd'\n"
          "set ylabel 'ms per step'\nset xrange [0.4:" + std::to_string(configs.size()) + ".6]\nset yrange [0:*]\n"
          "set boxwidth 0.35\nset style fill solid 0.25 border -1\nset grid noxtics ytics\nset key outside bottom center horizontal\n"
          "plot '" + spread_dat + "' using 1:5:4:8:7:xtic(2) with candlesticks whiskerbars 0.5 lc rgb '#4477aa' title 'quartiles, 5-95%', "
          "'' using 1:6:6:6:6 with candlesticks lw 2 lc rgb '#4477aa' notitle, "
          "'' using ($1+0.3):3:9 with yerrorbars pt 7 ps 1.2 lc rgb '#cc3311' title 'mean +- sd', "
          "'' using ($1+0.3):3:(sprintf('%.0f ms', $3)) with labels offset 0,1.2 left notitle\n"
          "set xrange [*:*]\nset yrange [*:*]\nset xtics auto\nset grid\nset key default\nset key outside right\n";
    gp += "set output '" + out_dir + "/latency.png'\nset title 'Step latency by configuration'\nset xlabel 'request'\nset ylabel 'ms'\nplot ";
    for (size_t c = 0; c < configs.size(); ++c) {
      if (!any_screenshot) {
        gp += std::string(c ? ", " : "") + "'" + dat + "' index " + std::to_string(c) + " using 1:2 with linespoints title '" + configs[c].name + "'";
        continue;
      }
      // Text steps as lines, screenshot steps as filled points of the same colour.
      const std::string lc = " lc " + std::to_string(c + 1);
      gp += std::string(c ? ", " : "") + "'" + dat + "' index " + std::to_string(c) + " using 1:($5 == 0 ? $2 : 1/0) with linespoints" + lc +
            " pt 6 title '" + configs[c].name + " text'";
      gp += ", '" + dat + "' index " + std::to_string(c) + " using 1:($5 == 1 ? $2 : 1/0) with points" + lc + " pt 7 ps 1.5 title '" +
            configs[c].name + " screenshot'";
    }
    gp += "\nset output '" + out_dir + "/tokens.png'\nset title 'New prompt tokens (N-R) vs KV bound (N-L)'\nset ylabel 'tokens'\nplot ";
    for (size_t c = 0; c < configs.size(); ++c)
      gp += std::string(c ? ", " : "") + "'" + dat + "' index " + std::to_string(c) + " using 1:3 with linespoints title '" + configs[c].name + " N-R'";
    gp += ", '" + dat + "' index 0 using 1:($4 >= 0 ? $4 : 1/0) with lines dt 2 lw 2 title 'KV bound N-L'\n";
    if (any_screenshot) {
      gp += "set output '" + out_dir + "/screenshots.png'\nset multiplot layout 2,1 title 'Screenshot steps'\n"
            "set title 'Encoder ms (0: the encoder cache had the screen, or the image was reused)'\nset ylabel 'ms'\nplot ";
      for (size_t c = 0; c < configs.size(); ++c)
        gp += std::string(c ? ", " : "") + "'" + dat + "' index " + std::to_string(c) + " using 1:($5 == 1 ? $6 : 1/0) with points pt 7 title '" +
              configs[c].name + "'";
      gp += "\nset title 'Image rows prefilled'\nset ylabel 'rows'\nplot ";
      for (size_t c = 0; c < configs.size(); ++c)
        gp += std::string(c ? ", " : "") + "'" + dat + "' index " + std::to_string(c) + " using 1:($5 == 1 ? $7 : 1/0) with points pt 7 title '" +
              configs[c].name + "'";
      gp += "\nunset multiplot\n";
    }
    const std::string gp_path = out_dir + "/plots.gp";
    std::ofstream(gp_path) << gp;
    if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
      // pngcairo may be missing in minimal builds: fall back to the png terminal.
      std::string cmd = "gnuplot '" + gp_path + "' 2>/dev/null || (sed -i 's/pngcairo/png/' '" + gp_path + "' && gnuplot '" + gp_path + "')";
      if (std::system(cmd.c_str()) == 0)
        std::fprintf(stderr, "plots: %s/steps.png %s/latency.png %s/tokens.png%s\n", out_dir.c_str(), out_dir.c_str(), out_dir.c_str(),
                     any_screenshot ? (" " + out_dir + "/screenshots.png").c_str() : "");
      else std::fprintf(stderr, "tandem-replay: gnuplot failed (script: %s)\n", gp_path.c_str());
    } else {
      std::fprintf(stderr, "tandem-replay: gnuplot not found; plot script left in %s (Debian: gnuplot-nox)\n", gp_path.c_str());
    }
    std::fprintf(stderr, "wrote %s/steps.csv, %s/answers.jsonl, %s/summary.md\n", out_dir.c_str(), out_dir.c_str(),
                 out_dir.c_str());
    if (constrained_unparsed) {
      std::fprintf(stderr, "tandem-replay: %zu constrained answer(s) do not parse (see %s/answers.jsonl)\n", constrained_unparsed,
                   out_dir.c_str());
      return 3;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\ntandem-replay: %s\n", e.what());
    return 1;
  }
  return 0;
}
