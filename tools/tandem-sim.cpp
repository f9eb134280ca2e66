// tandem-sim: the replay model of serving spec §6. Predicts N - R, passes and every count of §5 per
// request for server configurations, by running serve/'s Slot, policies and planner through the
// NullBackend dry run over the trace's token streams (tokenized exactly as tandem-server does).
//
//   tandem-sim -m MODEL.gguf --trace trace.jsonl [--config "name: server flags"]... [--cost FILE|a,b,c,d]
//   tandem-sim -m MODEL.gguf --trace trace.jsonl --check server-log.jsonl --config "flags the server ran"
//   tandem-sim calibrate -m MODEL.gguf [-t THREADS] [-o cost.json]
//   tandem-sim sweep -m MODEL.gguf --trace trace.jsonl --cost cost.json [--config "base flags"]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "agent/request_tokens.h"
#include "agent/sim.h"
#include "agent/trace.h"
#include "gguf/gguf_file.h"
#include "model/architectures.h"
#include "serve/backend/model_backend.h"
#include "serve/spec/spec_config.h"

using namespace tandem;
using namespace tandem::agent;
using ojson = nlohmann::ordered_json;

namespace {

void usage() {
  std::fprintf(stderr,
               "usage:\n"
               "  tandem-sim -m MODEL.gguf --trace T.jsonl [options]      predict counts per request and configuration\n"
               "  tandem-sim calibrate -m MODEL.gguf [-t N] [-o cost.json] measure a (ms/token), b (ms/pass), c (ms/copy), d (ms/output token)\n"
               "  tandem-sim sweep -m MODEL.gguf --trace T.jsonl --cost C  predicted mean step latency over min-gap, checkpoints, cache\n"
               "  tandem-sim speculation --cost C --acceptance P [--tokens N] [--draft-max K]\n"
               "                          predicted decode ms of an answer with speculation on (1..K drafts a step, each\n"
               "                          accepted with probability P) vs off, from calibrate's draft and verify costs\n"
               "options:\n"
               "  --config \"name: flags\"  a server configuration (tandem-server's flags and defaults, speculation\n"
               "                          included; flags that change no count are skipped; repeatable). Default:\n"
               "                          stock, marconi, divergence (no consolidation) and divergence+consolidation\n"
               "  --outputs LOG.jsonl     generated tokens per request from a server's --log-requests file\n"
               "                          (default: the trace's expected_action + end of turn)\n"
               "  --check LOG.jsonl       compare with a server's --log-requests file (one --config: the server's\n"
               "                          flags); exit 1 on any difference in N-R, passes or another count\n"
               "  --mmproj FILE           the server's mmproj, for screenshot requests (its patch size and merge;\n"
               "                          default 16 and 2, every Qwen3.5 tower's); the image budget is each\n"
               "                          configuration's --image-min-tokens / --image-max-tokens\n"
               "  --per-request           print every request\n"
               "  --json FILE             write {config, request, stats} lines\n"
               "  --cost FILE|a,b,c[,d]   cost model (tandem-sim calibrate): adds predicted latencies\n"
               "  -t N                    threads (calibrate)\n"
               "  --acceptance P          speculation: the drafts' acceptance rate, 0..1 (e.g. the policy's, measured)\n"
               "  --tokens N              speculation: tokens per answer (default 14, the paper's)\n"
               "  --draft-max K           speculation: the most drafts a step (default: every k calibrated)\n");
}

double parse_unit_interval(const std::string& flag, const std::string& v) {
  size_t used = 0;
  double x = -1;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
  }
  if (used != v.size() || !(x >= 0 && x <= 1)) throw std::invalid_argument(flag + " expects a number in 0..1, got \"" + v + "\"");
  return x;
}

double parse_positive(const std::string& flag, const std::string& v) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
  }
  if (used != v.size() || !(x > 0 && x < 1e9)) throw std::invalid_argument(flag + " expects a positive number, got \"" + v + "\"");
  return x;
}

struct Loaded {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<text::Tokenizer> tok;
  std::unique_ptr<text::ChatTemplate> tmpl;
  ModelShape shape;
};

Loaded load_model_meta(const std::string& path) {
  Loaded m;
  m.file = GgufFile::open(path);
  m.shape = read_model_shape(*m.file);
  m.tok = text::Tokenizer::from_gguf(*m.file);
  // As tandem-server: a missing template falls back to ChatML (one the interpreter cannot run is
  // the same fatal error as the server's).
  try {
    m.tmpl = std::make_unique<text::ChatTemplate>(
        text::ChatTemplate::from_gguf_template(m.tok->vocab().chat_template(), text::chat_template_tokens(*m.tok)));
  } catch (const text::ChatTemplateLoadError&) {
    throw;
  } catch (const text::ChatTemplateError& e) {
    std::fprintf(stderr, "tandem-sim: warning: %s; using ChatML\n", e.what());
    m.tmpl = std::make_unique<text::ChatTemplate>(text::ChatTemplateFamily::ChatML);
  }
  return m;
}

std::vector<ojson> read_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<ojson> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(ojson::parse(line));
  return out;
}

double mean_from(const std::vector<serve::RequestStats>& st, size_t first, auto field) {
  double s = 0;
  size_t n = 0;
  for (size_t i = first; i < st.size(); ++i, ++n) s += static_cast<double>(field(st[i]));
  return n ? s / static_cast<double>(n) : 0;
}

struct Summary {
  double new_tokens, kv_bound, passes, created, restored, prefill_ms, step_ms, image_rows;
};
Summary summarize(const std::vector<serve::RequestStats>& st, const CostModel* cost) {
  // Requests 2..n, as the paper reports (the first request prefills everything under any policy).
  const size_t f = st.size() > 1 ? 1 : 0;
  Summary s{};
  s.new_tokens = mean_from(st, f, [](const auto& r) { return r.new_tokens; });
  s.kv_bound = mean_from(st, f, [](const auto& r) { return r.kv_bound; });
  s.passes = mean_from(st, f, [](const auto& r) { return r.passes; });
  s.image_rows = mean_from(st, f, [](const auto& r) { return r.image_rows_prefilled; });
  s.created = mean_from(st, 0, [](const auto& r) { return r.checkpoints_created; }) * static_cast<double>(st.size());
  s.restored = mean_from(st, 0, [](const auto& r) { return r.checkpoints_restored; }) * static_cast<double>(st.size());
  if (cost) {
    s.prefill_ms = mean_from(st, f, [&](const auto& r) { return cost->prefill_ms(r); });
    s.step_ms = mean_from(st, f, [&](const auto& r) { return cost->step_ms(r); });
  }
  return s;
}

std::vector<ServeSettings> default_configs() {
  return {parse_config("stock: --checkpoint-policy stock --consolidate-batches off"),
          parse_config("marconi: --checkpoint-policy marconi --consolidate-batches off"),
          parse_config("divergence: --checkpoint-policy divergence --consolidate-batches off"),
          parse_config("divergence+consolidation: --checkpoint-policy divergence --consolidate-batches on")};
}

// ----- calibrate -----

int calibrate(const std::string& model_path, int threads, const std::string& out_path) {
  LoadOptions lo;
  lo.n_threads = threads;
  auto model = load_model(model_path, lo);
  const int64_t n_vocab = model->shape().n_vocab;
  serve::ModelBackend backend(*model, 2048);
  std::vector<int32_t> toks(1024);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(n_vocab));
  std::vector<CostSample> samples;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); };
  // A prefill of T tokens in k passes with c checkpoint copies (c cuts handed back by the passes).
  auto run = [&](int64_t T, int k, int copies) {
    backend.reset();
    std::vector<RecurrentCheckpoint> states(static_cast<size_t>(copies));
    const auto t0 = Clock::now();
    int64_t pos = 0;
    for (int p = 0; p < k; ++p) {
      const int64_t n = (T - pos) / (k - p);
      std::vector<int64_t> cuts;
      std::span<RecurrentCheckpoint> cs;
      if (p == 0 && copies > 0) {
        for (int c = 0; c < copies; ++c) cuts.push_back(pos + 1 + (n - 2) * (c + 1) / (copies + 1));
        cs = std::span(states);
      }
      backend.run(std::span(toks).subspan(static_cast<size_t>(pos), static_cast<size_t>(n)), cuts, p == k - 1, cs);
      pos += n;
    }
    return ms(t0);
  };
  run(64, 1, 0);  // warm-up
  const int64_t sizes[] = {64, 128, 256, 512};
  for (int rep = 0; rep < 2; ++rep)
    for (int64_t T : sizes)
      for (int k : {1, 2, 4})
        for (int c : {0, 2}) {
          const double t = run(T, k, c);
          samples.push_back({static_cast<double>(T), static_cast<double>(k), static_cast<double>(c), t});
          std::fprintf(stderr, "\r  prefill %4lld tokens, %d passes, %d copies: %8.2f ms   ", static_cast<long long>(T), k, c, t);
        }
  std::fprintf(stderr, "\n");
  CostModel m = fit_cost_model(samples);
  // Decode: one token at a time after a 256-token prefill.
  backend.reset();
  backend.run(std::span(toks).subspan(0, 256), {}, true, {});
  const auto t0 = Clock::now();
  const int n_dec = 32;
  for (int i = 0; i < n_dec; ++i) backend.run(std::span(toks).subspan(256 + static_cast<size_t>(i), 1), {}, true, {});
  m.ms_per_output_token = ms(t0) / n_dec;
  if (model->has_mtp()) {
    // Speculation's two costs, as a speculating step pays them (serve/spec/speculator.h): k drafts
    // from the MTP head (through the file's trimmed draft head when it has one, as the server
    // drafts by default), then one pass over the last token and its k drafts and, when a draft
    // is rejected, the roll-back to the accepted position (timed here with every draft rejected).
    constexpr int kMaxDrafts = 3;
    serve::SpecConfig sc;
    sc.draft_max = kMaxDrafts;
    backend.reset();
    backend.start_speculation(sc);
    backend.run(std::span(toks).subspan(0, 256), {}, true, {});
    auto argmax = [](std::span<const float> v) {
      return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
    };
    int32_t last = argmax(backend.logits());
    std::vector<int32_t> drafts;
    constexpr int kReps = 12;
    double draft_ms = 0;
    int64_t drafted = 0;
    m.ms_per_verify.assign(kMaxDrafts, 0.0);
    for (int rep = 0; rep < kReps; ++rep)
      for (int k = 1; k <= kMaxDrafts; ++k) {
        auto t = Clock::now();
        backend.draft(last, k, {}, drafts);
        if (rep > 0) draft_ms += ms(t), drafted += static_cast<int64_t>(drafts.size());
        drafts.resize(static_cast<size_t>(k), last);  // fewer drafts than asked: pad, the pass has 1 + k rows
        std::vector<int32_t> batch = {last};
        batch.insert(batch.end(), drafts.begin(), drafts.end());
        const int64_t pos0 = backend.n_past();
        t = Clock::now();
        const serve::VerifiedRows rows = backend.verify(batch);
        const int32_t next = argmax(rows.row(0));
        backend.roll_back(pos0 + 1);
        if (rep > 0) m.ms_per_verify[static_cast<size_t>(k - 1)] += ms(t) / (kReps - 1);
        last = next;
      }
    m.ms_per_draft = drafted > 0 ? draft_ms / static_cast<double>(drafted) : 0;
    backend.stop_speculation();
  }
  m.note = "tandem-sim calibrate -m " + model_path + " (threads " + std::to_string(threads) + ")";
  const nlohmann::json j = m;
  std::printf("a = %.4f ms/token, b = %.3f ms/pass, c = %.3f ms/copy, d = %.3f ms/output token\n", m.ms_per_token,
              m.ms_per_pass, m.ms_per_copy, m.ms_per_output_token);
  if (m.ms_per_token < 0 || m.ms_per_pass < 0 || m.ms_per_copy < 0)
    std::printf("warning: a negative coefficient: the timings are noisy (a busy machine, or a model so small that\n"
                "         fixed overheads dominate); rerun on an idle machine with the model you serve\n");
  if (m.ms_per_token > 0)
    std::printf("one pass costs as much as %.0f tokens; a copy as much as %.0f tokens\n", m.ms_per_pass / m.ms_per_token,
                m.ms_per_copy / m.ms_per_token);
  if (m.has_spec()) {
    std::printf("speculation: %.3f ms per draft; verify 1+k (with a roll-back):", m.ms_per_draft);
    for (size_t k = 0; k < m.ms_per_verify.size(); ++k)
      std::printf(" k=%zu %.3f ms (%.2fx d)", k + 1, m.ms_per_verify[k], m.ms_per_verify[k] / m.ms_per_output_token);
    std::printf("\n");
  }
  if (!out_path.empty()) {
    std::ofstream(out_path) << j.dump(2) << "\n";
    std::fprintf(stderr, "wrote %s\n", out_path.c_str());
  }
  return 0;
}

// ----- speculation -----

// The decode side of one answer with and without speculation, from a calibrated cost model.
int speculation(const CostModel& c, double p, double tokens, int draft_max) {
  if (!c.has_spec())
    throw std::invalid_argument("the cost model has no speculation costs (calibrate a model with an MTP head)");
  const int K = draft_max > 0 ? std::min<int>(draft_max, static_cast<int>(c.ms_per_verify.size()))
                              : static_cast<int>(c.ms_per_verify.size());
  const double off = c.expected_decode_ms(tokens, 0, p);
  std::printf("answer of %.0f tokens, drafts accepted with p = %.3f (%s)\n", tokens, p,
              c.note.empty() ? "cost model" : c.note.c_str());
  std::printf("| drafts a step | decode ms per answer | vs off | verify 1+k / decode step |\n|---|---:|---:|---:|\n");
  std::printf("| off | %.1f | 1.000 | |\n", off);
  for (int k = 1; k <= K; ++k) {
    const double on = c.expected_decode_ms(tokens, k, p);
    std::printf("| %d | %.1f | %.3f | %.2f |\n", k, on, on / off, c.ms_per_verify[static_cast<size_t>(k - 1)] / c.ms_per_output_token);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "predict";
  int first = 1;
  if (argc > 1 && (std::string(argv[1]) == "calibrate" || std::string(argv[1]) == "sweep" ||
                   std::string(argv[1]) == "speculation")) {
    mode = argv[1];
    first = 2;
  }
  std::string model_path, trace_path, outputs_path, check_path, json_path, cost_spec, out_path, mmproj_path;
  std::vector<std::string> config_specs;
  bool per_request = false;
  int threads = 0;
  double acceptance = -1, answer_tokens = 14;
  int draft_max = 0;
  try {
    for (int i = first; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "-m" || a == "--model") model_path = value();
      else if (a == "--trace") trace_path = value();
      else if (a == "--config") config_specs.push_back(value());
      else if (a == "--outputs") outputs_path = value();
      else if (a == "--check") check_path = value();
      else if (a == "--json") json_path = value();
      else if (a == "--cost") cost_spec = value();
      else if (a == "--mmproj") mmproj_path = value();
      else if (a == "--per-request") per_request = true;
      else if (a == "-t" || a == "--threads") threads = std::stoi(value());
      else if (a == "-o") out_path = value();
      else if (a == "--acceptance") acceptance = parse_unit_interval(a, value());
      else if (a == "--tokens") answer_tokens = parse_positive(a, value());
      else if (a == "--draft-max") draft_max = static_cast<int>(parse_positive(a, value()));
      else if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else throw std::invalid_argument("unknown option " + a);
    }
    if (mode == "speculation") {
      if (cost_spec.empty()) throw std::invalid_argument("speculation needs --cost (tandem-sim calibrate -o cost.json)");
      if (acceptance < 0) throw std::invalid_argument("speculation needs --acceptance P (0..1)");
    } else {
      if (model_path.empty()) throw std::invalid_argument("-m MODEL.gguf is required");
      if (mode != "calibrate" && trace_path.empty()) throw std::invalid_argument("--trace is required");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-sim: %s\n", e.what());
    usage();
    return 2;
  }

  try {
    if (mode == "calibrate") return calibrate(model_path, threads, out_path);
    if (mode == "speculation") return speculation(parse_cost_model(cost_spec), acceptance, answer_tokens, draft_max);

    const Loaded m = load_model_meta(model_path);
    const std::vector<TraceRecord> trace = read_trace(trace_path);
    // The bodies as tandem-replay sends them: a record's screenshot attached as an image_url part.
    const std::string trace_dir = std::filesystem::path(trace_path).parent_path().string();
    std::vector<ojson> bodies;
    bool any_image = false;
    for (const TraceRecord& r : trace) {
      bodies.push_back(request_body(r, trace_dir));
      any_image = any_image || has_images(bodies.back());
    }
    const ImageLayout base_layout = mmproj_path.empty() ? ImageLayout{} : image_layout_from_mmproj(mmproj_path);

    // Generated tokens: from a server log, or the expected actions.
    std::vector<ojson> log;
    const std::string log_path = !check_path.empty() ? check_path : outputs_path;
    if (!log_path.empty()) {
      log = read_log(log_path);
      if (log.size() != trace.size())
        throw std::runtime_error(log_path + " has " + std::to_string(log.size()) + " requests, the trace " +
                                 std::to_string(trace.size()));
    }
    // Token streams per image budget (a screenshot's rows depend on the server's budget flags).
    std::map<std::pair<int, int>, std::vector<RequestTokens>> tokens_by_budget;
    auto tokens_for = [&](const ServeSettings& s) -> const std::vector<RequestTokens>& {
      const auto key = any_image ? std::pair(s.images.budget.min_tokens, s.images.budget.max_tokens) : std::pair(-1, -1);
      auto it = tokens_by_budget.find(key);
      if (it != tokens_by_budget.end()) return it->second;
      ImageLayout layout = base_layout;
      layout.budget = s.images.budget;
      std::vector<RequestTokens> t;
      for (size_t i = 0; i < bodies.size(); ++i) {
        try {
          t.push_back(tokenize_request(*m.tok, *m.tmpl, bodies[i], layout));
        } catch (const std::exception& e) {
          throw std::runtime_error("request " + std::to_string(i + 1) + ": " + e.what());
        }
      }
      return tokens_by_budget.emplace(key, std::move(t)).first->second;
    };
    auto recorded_for = [&](const ServeSettings& s) {
      const std::vector<RequestTokens>& tokens = tokens_for(s);
      std::vector<serve::RecordedRequest> recorded;
      for (size_t i = 0; i < trace.size(); ++i)  // a speculating server's log also carries its per-step draft counts
        recorded.push_back(log.empty() ? recorded_request(tokens[i], expected_output(*m.tok, trace[i]))
                                       : recorded_request_from_log(tokens[i], log[i]));
      return recorded;
    };

    std::unique_ptr<CostModel> cost;
    if (!cost_spec.empty()) cost = std::make_unique<CostModel>(parse_cost_model(cost_spec));

    if (mode == "sweep") {
      if (!cost) throw std::invalid_argument("sweep needs --cost (tandem-sim calibrate -o cost.json)");
      ServeSettings base = config_specs.empty() ? ServeSettings() : parse_config(config_specs[0]);
      const std::vector<serve::RecordedRequest> recorded = recorded_for(base);
      std::printf("predicted mean step latency (requests 2..%zu), cost a=%.3f b=%.2f c=%.2f d=%.2f ms\n", trace.size(),
                  cost->ms_per_token, cost->ms_per_pass, cost->ms_per_copy, cost->ms_per_output_token);
      std::printf("| setting | policy | N-R | passes | prefill ms | step ms |\n|---|---|---:|---:|---:|---:|\n");
      auto row = [&](const std::string& label, ServeSettings s) {
        const Summary x = summarize(simulate(recorded, s, m.shape), cost.get());
        std::printf("| %s | %s | %.1f | %.2f | %.1f | %.1f |\n", label.c_str(), describe(s).c_str(), x.new_tokens,
                    x.passes, x.prefill_ms, x.step_ms);
      };
      for (const char* pol : {"stock", "marconi"}) {
        ServeSettings s = base;
        s.policy.kind = serve::parse_policy_kind(pol);
        row(std::string("policy ") + pol, s);
      }
      for (int64_t g : {0, 8, 16, 32, 64, 128}) {
        ServeSettings s = base;
        s.policy.kind = serve::PolicyKind::Divergence;
        s.policy.divergence.min_gap = g;
        row("min-gap " + std::to_string(g), s);
      }
      for (int c : {1, 2, 4, 8, 16, 32}) {
        ServeSettings s = base;
        s.slot.ctx_checkpoints = c;
        row("ctx-checkpoints " + std::to_string(c), s);
      }
      for (size_t mib : {size_t(0), size_t(64), size_t(512), size_t(4096)}) {
        ServeSettings s = base;
        s.cache_ram_mib = mib;
        row("cache-ram " + std::to_string(mib), s);
      }
      for (bool c : {false, true}) {
        ServeSettings s = base;
        s.slot.batch.consolidate = c;
        row(std::string("consolidate ") + (c ? "on" : "off"), s);
      }
      return 0;
    }

    std::vector<ServeSettings> configs;
    for (const auto& c : config_specs) configs.push_back(parse_config(c));
    if (configs.empty()) {
      if (!check_path.empty()) configs.push_back(ServeSettings());  // the server's defaults
      else configs = default_configs();
    }
    if (!check_path.empty() && configs.size() != 1)
      throw std::invalid_argument("--check compares one configuration (the server's flags)");

    // The bounds of issue 30, from the token streams alone: what a KV cache of the previous
    // request would prefill, and what a cache of every earlier request would (the best common
    // prefix with any of them). Printed per request and, after the table, as means.
    std::vector<int64_t> bound_prev, bound_any;
    {
      const std::vector<RequestTokens>& tokens = tokens_for(configs[0]);
      for (size_t i = 0; i < tokens.size(); ++i) {
        const int64_t n = static_cast<int64_t>(tokens[i].ids.size());
        int64_t top = 0;
        for (size_t j = 0; j < i; ++j) top = std::max(top, serve::common_prefix(tokens[j].ids, tokens[i].ids));
        bound_prev.push_back(i ? n - serve::common_prefix(tokens[i - 1].ids, tokens[i].ids) : n);
        bound_any.push_back(n - top);
      }
    }
    std::ofstream json_out;
    if (!json_path.empty()) json_out.open(json_path);
    std::printf("| configuration | N-R | N-L (KV bound) | passes | ckpt created | ckpt restored |%s%s\n",
                any_image ? " image rows |" : "", cost ? " prefill ms | step ms |" : "");
    std::printf("|---|---:|---:|---:|---:|---:|%s%s\n", any_image ? "---:|" : "", cost ? "---:|---:|" : "");
    int mismatches = 0;
    for (const ServeSettings& s : configs) {
      const std::vector<RequestTokens>& tokens = tokens_for(s);
      if (!check_path.empty()) {
        // The token streams and image chunks first: counts compare only over the same prompts.
        for (size_t i = 0; i < tokens.size(); ++i) {
          const ojson& rec = log[i];
          if (!rec.contains("prompt") || rec["prompt"].get<std::vector<int32_t>>() != tokens[i].ids) {
            std::printf("request %zu: the server's prompt tokens differ from the trace's tokenization%s\n", i + 1,
                        tokens[i].images.empty() ? "" : " (with images: is the server's --mmproj's patch/merge given "
                                                        "with --mmproj, and its image budget in --config?)");
            ++mismatches;
            continue;
          }
          std::vector<serve::ImageChunk> logged;
          if (rec.contains("images"))
            for (const auto& im : rec["images"])
              logged.push_back({im["begin"].get<int64_t>(), im["nx"].get<int>(), im["ny"].get<int>(), im["id"].get<uint64_t>()});
          bool same_images = logged.size() == tokens[i].images.size();
          for (size_t k = 0; same_images && k < logged.size(); ++k) same_images = logged[k].same_image(tokens[i].images[k]);
          if (!same_images) {
            std::printf("request %zu: the server's image chunks differ from the trace's layout (%zu logged, %zu here)\n",
                        i + 1, logged.size(), tokens[i].images.size());
            ++mismatches;
          }
        }
        if (mismatches) {
          std::printf("MISMATCH: %d of %zu requests have other prompts than the server's\n", mismatches, tokens.size());
          return 1;
        }
      }
      const std::vector<serve::RequestStats> st = simulate(recorded_for(s), s, m.shape);
      const Summary x = summarize(st, cost.get());
      std::printf("| %s | %.1f | %.1f | %.2f | %.0f | %.0f |", s.name.c_str(), x.new_tokens, x.kv_bound, x.passes, x.created,
                  x.restored);
      if (any_image) std::printf(" %.1f |", x.image_rows);
      if (cost) std::printf(" %.1f | %.1f |", x.prefill_ms, x.step_ms);
      std::printf("\n");
      for (size_t i = 0; i < st.size(); ++i) {
        if (json_out.is_open()) {
          nlohmann::json j = {{"config", s.name}, {"request", i + 1}, {"stats", st[i]}};
          json_out << j.dump() << "\n";
        }
        if (per_request)
          std::printf("  %3zu %-4s %2lld  N %5lld  L %5lld  R %5lld  N-R %5lld  N-L %5lld  bound(any) %5lld  passes %lld  created %lld%s\n", i + 1,
                      trace[i].episode.c_str(), static_cast<long long>(trace[i].step), (long long)st[i].n_prompt,
                      (long long)st[i].lcp, (long long)st[i].restore_pos, (long long)st[i].new_tokens,
                      (long long)st[i].kv_bound, (long long)bound_any[i], (long long)st[i].passes, (long long)st[i].checkpoints_created,
                      st[i].images ? ("  image rows " + std::to_string(st[i].image_rows_prefilled) + "/" +
                                      std::to_string(st[i].image_rows)).c_str()
                                   : "");
      }
      if (!check_path.empty()) {
        for (size_t i = 0; i < st.size(); ++i) {
          const ojson& rec = log[i];
          serve::RequestStats server = nlohmann::json::parse(rec["timings"].dump()).get<serve::RequestStats>();
          if (server.images_encoded != st[i].images_encoded || server.encoder_cache_hits != st[i].encoder_cache_hits) {
            std::printf("request %zu: server encoded %lld images, %lld encoder-cache hits | sim %lld, %lld (is --encoder-cache "
                        "in --config?)\n",
                        i + 1, (long long)server.images_encoded, (long long)server.encoder_cache_hits,
                        (long long)st[i].images_encoded, (long long)st[i].encoder_cache_hits);
            ++mismatches;
            continue;
          }
          if (!st[i].same_counts(server)) {
            std::printf("request %zu: server N-R %lld passes %lld | sim N-R %lld passes %lld (and other counts)\n", i + 1,
                        (long long)server.new_tokens, (long long)server.passes, (long long)st[i].new_tokens,
                        (long long)st[i].passes);
            ++mismatches;
          }
        }
        std::printf("%s: %zu/%zu requests identical (N-R, passes, every count and the encoder's images)\n", mismatches ? "MISMATCH" : "OK",
                    st.size() - static_cast<size_t>(mismatches), st.size());
      }
    }
    if (bound_prev.size() > 1) {  // requests 2..n, as the table
      double prev = 0, any = 0;
      for (size_t i = 1; i < bound_prev.size(); ++i) {
        prev += static_cast<double>(bound_prev[i]);
        any += static_cast<double>(bound_any[i]);
      }
      const double k = static_cast<double>(bound_prev.size() - 1);
      std::printf("bounds (requests 2..%zu): N - LCP(previous request) %.1f; N - max LCP(any earlier request) %.1f\n",
                  bound_prev.size(), prev / k, any / k);
    }
    return mismatches ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-sim: %s\n", e.what());
    return 1;
  }
}
