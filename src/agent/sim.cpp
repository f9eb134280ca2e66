#include "agent/sim.h"

#include <algorithm>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "serve/backend/dry_run.h"
#include "serve/backend/null_backend.h"
#include "serve/engine/encoder_cache.h"
#include "serve/meter/flop_model.h"
#include "serve/settings/server_options.h"
#include "serve/settings/serving_settings.h"
#include "serve/slot/prompt_cache.h"

namespace tandem::agent {

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
  const auto& serving = serve::serving_settings();
  const auto& front = serve::front_end_settings();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (const auto* r = serve::find_setting<serve::EngineConfig>(serving, a)) {
      // (--encoder-cache is one: it changes the encoder's work, which predict_encoder counts.)
      if (r->changes_counts) {
        serve::apply_setting(*r, static_cast<serve::EngineConfig&>(s), args, i);
        continue;
      }
      if (!r->value.empty() && ++i >= args.size()) throw std::invalid_argument(a + " needs a value");
    } else if (const auto* f = serve::find_setting<serve::ServerOptions>(front, a)) {
      if (!f->value.empty() && ++i >= args.size()) throw std::invalid_argument(a + " needs a value");
    } else if (a != "--verbose" && a != "-v") {
      throw std::invalid_argument("unknown server flag \"" + a + "\" for the replay model");
    }
  }
  serve::validate_serving(s);
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
  const ServeSettings d;
  std::ostringstream o;
  o << serve::to_string(s.policy.kind);
  if (s.policy.kind == serve::PolicyKind::Divergence) o << " min_gap=" << s.policy.divergence.min_gap;
  if (s.policy.kind == serve::PolicyKind::Divergence && !s.policy.divergence.forecast) o << " no-forecast";
  if (s.cache_select != d.cache_select)
    o << " cache-select=" << (s.cache_select == serve::CacheSelect::Fractions ? "fractions" : "restorable");
  if (s.slot.batch.consolidate) o << " consolidate";
  o << " ckpt=" << s.slot.ctx_checkpoints << " cache=" << s.cache_ram_mib << "MiB";
  if (s.n_parallel > 1) o << " np=" << s.n_parallel;
  if (s.slot.batch.n_batch != d.slot.batch.n_batch || s.slot.batch.n_ubatch != d.slot.batch.n_ubatch)
    o << " b=" << s.slot.batch.n_batch << " ub=" << s.slot.batch.n_ubatch;
  if (s.speculation.enabled) {
    o << " spec k=" << s.speculation.draft_max;
    if (s.speculation.draft_min != d.speculation.draft_min) o << " draft_min=" << s.speculation.draft_min;
    if (s.speculation.p_min != d.speculation.p_min) o << " p_min=" << s.speculation.p_min;
    // The speculation ablations switched away from their defaults ("spec-rollback=copy").
    for (const serve::ServingSetting* r : serve::ablation_settings())
      if (r->long_name().rfind("--spec-", 0) == 0 && r->get(s) != r->get(d)) o << " " << r->key() << "=" << r->get(s);
  }
  return o.str();
}

std::vector<serve::RequestStats> simulate(std::span<const serve::RecordedRequest> requests, const ServeSettings& st,
                                          const ModelShape& shape) {
  serve::PolicyConfig pc = st.policy;
  pc.marconi.flops = serve::FlopModel::for_model(shape);
  serve::PromptCache cache(serve::prompt_cache_options(st));
  // One dry-run slot per server slot, sharing the prompt cache as the engine's slots do.
  std::vector<std::unique_ptr<serve::Slot>> slots;
  for (int k = 0; k < std::max(1, st.n_parallel); ++k) {
    slots.push_back(serve::make_dry_run_slot(serve::make_policy(pc), st.slot, serve::NullBackend::for_model(shape, st.n_ctx)));
    if (st.cache_ram_mib > 0) slots.back()->set_prompt_cache(&cache);
    // A speculating server: the same Speculator over the dry-run backend, driven by the logged
    // per-step draft counts (serve/backend/dry_run.h).
    if (st.speculation.enabled) slots.back()->enable_speculation(st.speculation);
  }
  std::vector<serve::RequestStats> stats;
  if (slots.size() == 1) {
    stats = serve::replay(*slots[0], requests);
  } else {
    // Requests one at a time (as tandem-replay sends them), each to the slot the engine picks
    // (serve/engine/engine.cpp:Engine::pick_slot_locked): the longest common prefix with the slot's
    // tokens; ties to the least recently finished, then the lowest id.
    std::vector<uint64_t> used(slots.size(), 0);
    uint64_t clock = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      size_t best = 0;
      int64_t best_lcp = -1;
      uint64_t best_use = 0;
      for (size_t k = 0; k < slots.size(); ++k) {
        const int64_t lcp = serve::common_prefix(slots[k]->cached_tokens(), requests[i].prompt);
        if (lcp > best_lcp || (lcp == best_lcp && used[k] < best_use)) {
          best = k;
          best_lcp = lcp;
          best_use = used[k];
        }
      }
      stats.push_back(serve::replay(*slots[best], requests.subspan(i, 1)).front());
      used[best] = ++clock;
    }
  }
  predict_encoder(requests, stats, st, shape);
  return stats;
}

void predict_encoder(std::span<const serve::RecordedRequest> requests, std::vector<serve::RequestStats>& stats,
                     const ServeSettings& st, const ModelShape& shape) {
  const size_t mib = st.images.encoder_cache_mib;
  serve::EncoderCache cache(mib << 20);
  for (size_t i = 0; i < requests.size() && i < stats.size(); ++i) {
    serve::RequestStats& s = stats[i];
    s.images_encoded = s.encoder_cache_hits = 0;
    for (const serve::ImageChunk& c : requests[i].images) {
      if (c.end() <= s.restore_pos) continue;  // inside the reused prefix: never fetched
      if (mib > 0 && cache.find(c.id)) {
        ++s.encoder_cache_hits;
        continue;
      }
      ++s.images_encoded;
      // The same bytes as the engine's entry (the rows are not needed: zeros).
      if (mib > 0) cache.insert(c.id, std::make_shared<const std::vector<float>>(static_cast<size_t>(c.rows() * shape.n_embd)));
    }
  }
}

double CostModel::prefill_ms(const serve::RequestStats& s) const {
  const double copies = static_cast<double>(s.checkpoints_created + s.checkpoints_restored);
  return ms_per_token * static_cast<double>(s.new_tokens) + ms_per_pass * static_cast<double>(s.passes) +
         ms_per_copy * copies;
}

double CostModel::decode_ms(const serve::RequestStats& s) const {
  if (!has_spec() || s.step_drafted.empty())
    return ms_per_output_token * static_cast<double>(std::max<int64_t>(s.tokens_generated - 1, 0));
  double ms = 0;
  for (int32_t n : s.step_drafted) {
    if (n <= 0) {
      ms += ms_per_output_token;
      continue;
    }
    const size_t k = std::min(static_cast<size_t>(n), ms_per_verify.size());
    ms += ms_per_draft * n + ms_per_verify[k - 1];
  }
  return ms;
}

double CostModel::step_ms(const serve::RequestStats& s) const { return prefill_ms(s) + decode_ms(s); }

double CostModel::expected_decode_ms(double tokens, int k, double p) const {
  const double rest = std::max(tokens - 1, 0.0);  // the first token comes from the prompt pass
  if (k <= 0 || !has_spec()) return ms_per_output_token * rest;
  k = std::min<int>(k, static_cast<int>(ms_per_verify.size()));
  double per_step = 1, pi = 1;
  for (int i = 1; i <= k; ++i) per_step += (pi *= p);
  const double step = ms_per_draft * k + ms_per_verify[static_cast<size_t>(k - 1)];
  return rest / per_step * step;
}

void to_json(nlohmann::json& j, const CostModel& c) {
  j = nlohmann::json{{"ms_per_token", c.ms_per_token},
                     {"ms_per_pass", c.ms_per_pass},
                     {"ms_per_copy", c.ms_per_copy},
                     {"ms_per_output_token", c.ms_per_output_token}};
  if (c.has_spec()) {
    j["ms_per_draft"] = c.ms_per_draft;
    j["ms_per_verify"] = c.ms_per_verify;
  }
  if (!c.note.empty()) j["note"] = c.note;
}

void from_json(const nlohmann::json& j, CostModel& c) {
  c.ms_per_token = j.at("ms_per_token").get<double>();
  c.ms_per_pass = j.at("ms_per_pass").get<double>();
  c.ms_per_copy = j.value("ms_per_copy", 0.0);
  c.ms_per_output_token = j.value("ms_per_output_token", 0.0);
  c.ms_per_draft = j.value("ms_per_draft", 0.0);
  c.ms_per_verify = j.value("ms_per_verify", std::vector<double>{});
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
