#include "agent/sim.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "serve/dry_run.h"
#include "serve/flop_model.h"
#include "serve/null_backend.h"
#include "serve/prompt_cache.h"

namespace tandem::agent {

namespace {

int64_t to_int(const std::string& flag, const std::string& v) {
  size_t used = 0;
  int64_t x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty()) throw std::invalid_argument(flag + ": expected an integer, got \"" + v + "\"");
  return x;
}

}  // namespace

std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      have = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (have || !cur.empty()) out.push_back(cur);
      cur.clear();
      have = false;
    } else {
      cur += c;
    }
  }
  if (quote) throw std::invalid_argument("unterminated quote in \"" + s + "\"");
  if (have || !cur.empty()) out.push_back(cur);
  return out;
}

ServeSettings parse_serve_flags(const std::vector<std::string>& args, ServeSettings s) {
  static const char* kSkipWithValue[] = {"-m", "--model", "--host", "--port", "-t", "--threads", "--log-requests",
                                         "--alias", "-a", "--timeout-ms", "--queue", "--api-key", "--http-threads",
                                         "--idle-release-ms", "--cpu-path"};
  static const char* kSkipFlag[] = {"--verbose", "-v"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "--checkpoint-policy") {
      s.policy.kind = serve::parse_policy_kind(value());
    } else if (a == "--consolidate-batches") {
      const std::string& v = value();
      if (v == "on" || v == "1" || v == "true") s.slot.batch.consolidate = true;
      else if (v == "off" || v == "0" || v == "false") s.slot.batch.consolidate = false;
      else throw std::invalid_argument("--consolidate-batches: expected on or off, got '" + v + "'");
    } else if (a == "-np" || a == "--parallel") {
      if (to_int(a, value()) != 1) throw std::invalid_argument("the replay model simulates one slot (--parallel 1)");
    } else if (a == "--min-gap") {
      s.policy.divergence.min_gap = to_int(a, value());
      if (s.policy.divergence.min_gap < 0) throw std::invalid_argument("--min-gap must be >= 0");
    } else if (a == "--ctx-checkpoints") {
      const int64_t n = to_int(a, value());
      if (n < 0 || n > 1 << 20) throw std::invalid_argument("--ctx-checkpoints must be >= 0");
      s.slot.ctx_checkpoints = static_cast<int>(n);
    } else if (a == "--cache-ram") {
      const int64_t n = to_int(a, value());
      s.cache_ram_mib = n < 0 ? 0 : static_cast<size_t>(n);
    } else if (a == "-c" || a == "--ctx-size") {
      s.n_ctx = to_int(a, value());
    } else if (a == "-b" || a == "--n-batch" || a == "--batch-size") {
      s.slot.batch.n_batch = to_int(a, value());
    } else if (a == "-ub" || a == "--n-ubatch" || a == "--ubatch-size") {
      s.slot.batch.n_ubatch = to_int(a, value());
    } else {
      bool skipped = false;
      for (const char* f : kSkipWithValue)
        if (a == f) {
          value();
          skipped = true;
        }
      for (const char* f : kSkipFlag) skipped = skipped || a == f;
      if (!skipped) throw std::invalid_argument("unknown server flag \"" + a + "\" for the replay model");
    }
  }
  s.slot.batch.validate();
  return s;
}

ServeSettings parse_config(const std::string& spec, ServeSettings base) {
  std::string name, flags = spec;
  const size_t colon = spec.find(':');
  if (colon != std::string::npos && spec.substr(0, colon).find('-') == std::string::npos) {
    name = spec.substr(0, colon);
    flags = spec.substr(colon + 1);
  }
  auto trim = [](std::string x) {
    while (!x.empty() && (x.front() == ' ' || x.front() == '\t')) x.erase(x.begin());
    while (!x.empty() && (x.back() == ' ' || x.back() == '\t')) x.pop_back();
    return x;
  };
  ServeSettings s = parse_serve_flags(split_args(flags), std::move(base));
  s.name = trim(name).empty() ? trim(flags) : trim(name);
  return s;
}

std::string describe(const ServeSettings& s) {
  std::ostringstream o;
  o << serve::to_string(s.policy.kind);
  if (s.policy.kind == serve::PolicyKind::Divergence) o << " min_gap=" << s.policy.divergence.min_gap;
  if (s.slot.batch.consolidate) o << " consolidate";
  o << " ckpt=" << s.slot.ctx_checkpoints << " cache=" << s.cache_ram_mib << "MiB";
  if (s.slot.batch.n_batch != 2048 || s.slot.batch.n_ubatch != 512)
    o << " b=" << s.slot.batch.n_batch << " ub=" << s.slot.batch.n_ubatch;
  return o.str();
}

std::vector<serve::RequestStats> simulate(std::span<const serve::RecordedRequest> requests, const ServeSettings& st,
                                          const Qwen35HParams& hp) {
  serve::PolicyConfig pc = st.policy;
  pc.marconi.flops = serve::FlopModel::for_model(hp);
  auto slot = serve::make_dry_run_slot(serve::make_policy(pc), st.slot, serve::NullBackend::for_model(hp, st.n_ctx));
  serve::PromptCache cache(serve::PromptCacheOptions{.budget_mib = st.cache_ram_mib});
  if (st.cache_ram_mib > 0) slot->set_prompt_cache(&cache);
  return serve::replay(*slot, requests);
}

double CostModel::prefill_ms(const serve::RequestStats& s) const {
  const double copies = static_cast<double>(s.checkpoints_created + s.checkpoints_restored);
  return ms_per_token * static_cast<double>(s.new_tokens) + ms_per_pass * static_cast<double>(s.passes) +
         ms_per_copy * copies;
}

double CostModel::step_ms(const serve::RequestStats& s) const {
  return prefill_ms(s) + ms_per_output_token * static_cast<double>(s.tokens_generated);
}

void to_json(nlohmann::json& j, const CostModel& c) {
  j = nlohmann::json{{"ms_per_token", c.ms_per_token},
                     {"ms_per_pass", c.ms_per_pass},
                     {"ms_per_copy", c.ms_per_copy},
                     {"ms_per_output_token", c.ms_per_output_token}};
  if (!c.note.empty()) j["note"] = c.note;
}

void from_json(const nlohmann::json& j, CostModel& c) {
  c.ms_per_token = j.at("ms_per_token").get<double>();
  c.ms_per_pass = j.at("ms_per_pass").get<double>();
  c.ms_per_copy = j.value("ms_per_copy", 0.0);
  c.ms_per_output_token = j.value("ms_per_output_token", 0.0);
  c.note = j.value("note", std::string());
}

CostModel parse_cost_model(const std::string& spec) {
  std::ifstream in(spec);
  if (in) {
    try {
      return nlohmann::json::parse(in).get<CostModel>();
    } catch (const std::exception& e) {
      throw std::invalid_argument("cost model " + spec + ": " + e.what());
    }
  }
  std::vector<double> v;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      v.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw std::invalid_argument("cost model: expected a file or a,b,c[,d] in ms, got \"" + spec + "\"");
    }
  }
  if (v.size() < 2 || v.size() > 4) throw std::invalid_argument("cost model: expected a,b,c[,d] in ms, got \"" + spec + "\"");
  CostModel c;
  c.ms_per_token = v[0];
  c.ms_per_pass = v[1];
  if (v.size() > 2) c.ms_per_copy = v[2];
  if (v.size() > 3) c.ms_per_output_token = v[3];
  return c;
}

CostModel fit_cost_model(std::span<const CostSample> samples) {
  // Normal equations of the 3-column least squares, solved by Gaussian elimination with pivoting.
  double A[3][4] = {};
  for (const CostSample& s : samples) {
    const double x[3] = {s.tokens, s.passes, s.copies};
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) A[r][c] += x[r] * x[c];
      A[r][3] += x[r] * s.ms;
    }
  }
  for (int col = 0; col < 3; ++col) {
    int piv = col;
    for (int r = col + 1; r < 3; ++r)
      if (std::fabs(A[r][col]) > std::fabs(A[piv][col])) piv = r;
    if (std::fabs(A[piv][col]) < 1e-12)
      throw std::invalid_argument("cost samples do not determine tokens, passes and copies separately");
    for (int c = 0; c < 4; ++c) std::swap(A[col][c], A[piv][c]);
    for (int r = 0; r < 3; ++r) {
      if (r == col) continue;
      const double f = A[r][col] / A[col][col];
      for (int c = col; c < 4; ++c) A[r][c] -= f * A[col][c];
    }
  }
  CostModel m;
  m.ms_per_token = A[0][3] / A[0][0];
  m.ms_per_pass = A[1][3] / A[1][1];
  m.ms_per_copy = A[2][3] / A[2][2];
  return m;
}

}  // namespace tandem::agent
