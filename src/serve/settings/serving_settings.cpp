#include "serve/settings/serving_settings.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace tandem::serve {

int64_t setting_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  size_t used = 0;
  int64_t x = 0;
  bool too_large = false;
  try {
    x = std::stoll(v, &used);
  } catch (const std::out_of_range&) {
    too_large = true;  // digits past int64: out of every range, said as such below
  } catch (const std::exception&) {
    used = 0;
  }
  const auto range = [&] { return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]"; };
  if (too_large) throw std::invalid_argument(flag + ": expected a value in " + range() + ", got " + v);
  if (used != v.size() || v.empty()) throw std::invalid_argument(flag + ": expected an integer, got '" + v + "'");
  if (x < lo || x > hi)
    throw std::invalid_argument(flag + ": expected a value in " + range() + ", got " + v);
  return x;
}

bool setting_on_off(const std::string& flag, const std::string& v) {
  if (v == "on" || v == "1" || v == "true") return true;
  if (v == "off" || v == "0" || v == "false") return false;
  throw std::invalid_argument(flag + ": expected on or off, got '" + v + "'");
}

float setting_probability(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno != 0 || !(x >= 0.0 && x <= 1.0))
    throw std::invalid_argument(flag + ": expected a probability in [0, 1], got '" + v + "'");
  return static_cast<float>(x);
}

std::string on_off(bool on) { return on ? "on" : "off"; }

std::string setting_help_line(const std::vector<std::string>& names, const std::string& value, const std::string& help,
                              const std::string& default_text) {
  constexpr size_t kIndent = 2, kColumn = 31;  // names from column 2, help from column 31
  std::string left;
  for (const std::string& n : names) left += (left.empty() ? "" : ", ") + n;
  if (!value.empty()) left += " " + value;
  std::string text = help;
  if (const size_t at = text.find("{}"); at != std::string::npos) text.replace(at, 2, default_text);
  std::string out(kIndent, ' ');
  out += left;
  out += std::string(out.size() + 1 < kColumn ? kColumn - out.size() : 1, ' ');
  for (const char c : text) {
    out += c;
    if (c == '\n') out += std::string(kColumn, ' ');
  }
  out += '\n';
  return out;
}

namespace {


std::string probability_text(float p) {
  std::ostringstream o;
  o << p;
  return o.str();
}

// This table's rows (the builders of serving_settings.h over EngineConfig).
template <class Field>
ServingSetting int_row(std::vector<std::string> names, std::vector<std::string> aliases, std::string value,
                       std::string help, bool counts, int64_t lo, int64_t hi, Field field) {
  return int_setting<EngineConfig>(std::move(names), std::move(aliases), std::move(value), std::move(help), counts, lo,
                                   hi, field);
}
template <class Field>
ServingSetting on_off_row(std::vector<std::string> names, std::string help, bool counts, bool ablation, Field field) {
  return on_off_setting<EngineConfig>(std::move(names), std::move(help), counts, ablation, field);
}

std::vector<ServingSetting> make_table() {
  std::vector<ServingSetting> t;
  // Slots and context.
  t.push_back(int_row({"-c", "--ctx-size"}, {}, "N", "context per slot in tokens (default {})", true, 2, kSettingUnbounded,
                      [](auto& c) -> auto& { return c.n_ctx; }));
  t.push_back(int_row({"-np", "--parallel"}, {}, "N", "slots (default {})", true, 1, 1024,
                      [](auto& c) -> auto& { return c.n_parallel; }));
  t.push_back(int_row({"--queue"}, {}, "N", "requests that may wait for a slot; beyond: 503 (default {})", false, 0, 1 << 20,
                      [](auto& c) -> auto& { return c.queue_max; }));
  t.push_back(int_row({"--timeout-ms"}, {}, "N",
                      "per-request deadline from arrival, 0 = none (default {});\n"
                      "a request's \"timeout_ms\" overrides it",
                      false, 0, kMaxTimeoutMs, [](auto& c) -> auto& { return c.timeout_ms; }));
  // The watchdog (serve/lifecycle/watchdog.h; docs/http.md "Watchdog"). None changes a count.
  {
    ServingSetting r;
    r.names = {"--watchdog-s"};
    r.value = "S";
    r.help =
        "watchdog: a forward pass, image encode or step that runs longer than\n"
        "S seconds + --watchdog-ms-per-token per token fails the requests in\n"
        "flight, and the server exits with status 75 for a supervisor to\n"
        "restart it (--watchdog-exit); 0 = off (default {})";
    r.set = [](EngineConfig& c, const std::string& flag, const std::string& v) {
      char* end = nullptr;
      errno = 0;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || errno != 0 || !(x >= 0.0 && x <= 604800.0))
        throw std::invalid_argument(flag + ": expected seconds in [0, 604800], got '" + v + "'");
      c.watchdog.deadline_ms = static_cast<int64_t>(x * 1000.0 + 0.5);
    };
    r.get = [](const EngineConfig& c) {
      std::ostringstream o;
      o << static_cast<double>(c.watchdog.deadline_ms) / 1000.0;
      return o.str();
    };
    t.push_back(std::move(r));
  }
  t.push_back(int_row({"--watchdog-ms-per-token"}, {}, "N",
                      "watchdog: allowance per token (image row) of a pass or encode\n"
                      "(default {}: 10 tokens/s, a slow phone CPU's prefill)",
                      false, 0, 1 << 20, [](auto& c) -> auto& { return c.watchdog.per_token_ms; }));
  t.push_back(int_row({"--watchdog-grace-ms"}, {}, "N",
                      "watchdog: from a trip to the exit, for the failed requests'\n"
                      "answers to be written (default {})",
                      false, 0, 600000, [](auto& c) -> auto& { return c.watchdog.grace_ms; }));
  t.push_back(on_off_row({"--watchdog-exit"},
                         "watchdog: exit after a trip (default {}); off: stay up refusing\n"
                         "requests (503) until the stuck work returns",
                         false, false, [](auto& c) -> auto& { return c.watchdog.exit_on_trip; }));
  // Checkpoints, prompt cache, policy, batching.
  t.push_back(int_row({"--ctx-checkpoints"}, {}, "N", "checkpoints per slot (default {})", true, 0, 1 << 20,
                      [](auto& c) -> auto& { return c.slot.ctx_checkpoints; }));
  t.push_back(int_row({"--cache-ram"}, {}, "MIB", "host prompt cache budget, 0 = off (default {})", true, 0, kSettingUnbounded,
                      [](auto& c) -> auto& { return c.cache_ram_mib; }));
  {
    ServingSetting r;
    r.names = {"--cache-select"};
    r.value = "S";
    r.help = "prompt-cache entry a prompt loads: auto | fractions (llama.cpp's kept/covered\n"
             "shares) | restorable (the furthest restore, checkpoints included); auto:\n"
             "restorable under divergence, else fractions (default {})";
    r.changes_counts = true;
    r.set = [](EngineConfig& c, const std::string& flag, const std::string& v) {
      if (v == "auto") c.cache_select = CacheSelect::Auto;
      else if (v == "fractions") c.cache_select = CacheSelect::Fractions;
      else if (v == "restorable") c.cache_select = CacheSelect::Restorable;
      else throw std::invalid_argument(flag + ": auto, fractions or restorable, got \"" + v + "\"");
    };
    r.get = [](const EngineConfig& c) {
      return std::string(c.cache_select == CacheSelect::Auto ? "auto"
                         : c.cache_select == CacheSelect::Fractions ? "fractions" : "restorable");
    };
    t.push_back(std::move(r));
  }
  t.push_back(int_row({"--grammar-cache"}, {}, "MIB",
                      "compiled grammars and their token masks kept by text (default {})", false, 1, 1 << 20,
                      [](auto& c) -> auto& { return c.grammar_cache_mib; }));
  // Lifecycle: states on disk, unloading (serve/engine/engine_lifecycle.cpp).
  {
    ServingSetting r;
    r.names = {"--state-dir"};
    r.aliases = {"--slot-save-path"};  // llama.cpp's name for the slot files' folder
    r.value = "DIR";
    r.help =
        "keep the prompt cache's entries (and the slots, saved into it) in DIR when\n"
        "the server unloads or stops, load them at start; the folder of POST\n"
        "/slots/{id}?action=save|restore files (default: none)";
    r.set = [](EngineConfig& c, const std::string&, const std::string& v) { c.state_dir = v; };  // "": none
    r.get = [](const EngineConfig& c) { return c.state_dir; };
    t.push_back(std::move(r));
  }
  {
    ServingSetting r;
    r.names = {"--unload-idle-s"};
    r.value = "N";
    r.help = "unload the weights after N s without requests, 0 = never (default {});\n"
             "the next request reloads them (timings.cold_start_ms)";
    r.set = [](EngineConfig& c, const std::string& flag, const std::string& v) {
      c.unload_idle_ms = setting_int(flag, v, 0, int64_t(1) << 31) * 1000;
    };
    r.get = [](const EngineConfig& c) { return std::to_string(c.unload_idle_ms / 1000); };
    t.push_back(std::move(r));
  }
  {
    ServingSetting r;
    r.names = {"--checkpoint-policy"};
    r.value = "P";
    r.help = "stock | marconi | divergence (default {})";
    r.changes_counts = true;
    r.set = [](EngineConfig& c, const std::string&, const std::string& v) { c.policy.kind = parse_policy_kind(v); };
    r.get = [](const EngineConfig& c) { return std::string(to_string(c.policy.kind)); };
    t.push_back(std::move(r));
  }
  t.push_back(int_row({"--min-gap"}, {}, "N", "divergence: least L - R for a divergence checkpoint (default {})", true, 0,
                      kSettingUnbounded, [](auto& c) -> auto& { return c.policy.divergence.min_gap; }));
  t.push_back(on_off_row({"--checkpoint-before-image"},
                         "divergence: also keep the state at each image's first row\n"
                         "(default {}, as in the paper)",
                         true, false, [](auto& c) -> auto& { return c.policy.divergence.before_image; }));
  t.push_back(on_off_row({"--checkpoint-forecast"},
                         "divergence: also keep the state where the next request is predicted to\n"
                         "diverge (the end of the span this prompt inserted at L; default {})",
                         true, /*ablation=*/true, [](auto& c) -> auto& { return c.policy.divergence.forecast; }));
  t.push_back(on_off_row({"--consolidate-batches"}, "one tail cut at N - n_ubatch instead of two (default {})", true,
                         /*ablation=*/true, [](auto& c) -> auto& { return c.slot.batch.consolidate; }));
  t.push_back(int_row({"-b", "--n-batch"}, {"--batch-size"}, "N", "logical batch (default {})", true, 1, kSettingUnbounded,
                      [](auto& c) -> auto& { return c.slot.batch.n_batch; }));
  t.push_back(int_row({"-ub", "--n-ubatch"}, {"--ubatch-size"}, "N", "micro-batch = one pass (default {})", true, 1, kSettingUnbounded,
                      [](auto& c) -> auto& { return c.slot.batch.n_ubatch; }));
  // Images (docs/vision.md): llama.cpp's budget flags, the encoder cache, a per-request limit.
  t.push_back(int_row({"--image-min-tokens"}, {}, "N",
                      "least image tokens per image, -1 = the model's default (default {});\n"
                      "a request's \"image_min_tokens\" overrides it",
                      true, -1, 1 << 16, [](auto& c) -> auto& { return c.images.budget.min_tokens; }));
  t.push_back(int_row({"--image-max-tokens"}, {}, "N",
                      "most image tokens per image, -1 = the model's default (default {});\n"
                      "a request's \"image_max_tokens\" overrides it",
                      true, -1, 1 << 16, [](auto& c) -> auto& { return c.images.budget.max_tokens; }));
  t.push_back(int_row({"--encoder-cache"}, {}, "MIB",
                      "encoded images kept by content and budget, 0 = none (default {})", true, 0, kSettingUnbounded,
                      [](auto& c) -> auto& { return c.images.encoder_cache_mib; }));
  t.push_back(int_row({"--max-images"}, {}, "N", "images one request may carry (default {})", false, 0, 1024,
                      [](auto& c) -> auto& { return c.images.max_per_request; }));
  // Speculative decoding (docs/speculation.md).
  t.push_back(on_off_row({"--spec"},
                         "speculative decoding with the model's MTP head (default {}; output\n"
                         "unchanged, docs/speculation.md)",
                         true, false, [](auto& c) -> auto& { return c.speculation.enabled; }));
  t.push_back(int_row({"--draft-max"}, {}, "N",
                      "drafts per step, k (default {}); also the tokens every prompt\n"
                      "pass runs per token at its end, speculation on or off",
                      true, 1, 16, [](auto& c) -> auto& { return c.speculation.draft_max; }));
  t.push_back(int_row({"--draft-min"}, {}, "N", "fewer drafts than this: a plain step (default {})", true, 0, 16,
                      [](auto& c) -> auto& { return c.speculation.draft_min; }));
  {
    ServingSetting r;
    r.names = {"--draft-p-min"};
    r.value = "P";
    r.help = "stop drafting below this draft probability (default {})";
    r.changes_counts = true;
    r.set = [](EngineConfig& c, const std::string& flag, const std::string& v) {
      c.speculation.p_min = setting_probability(flag, v);
    };
    r.get = [](const EngineConfig& c) { return probability_text(c.speculation.p_min); };
    t.push_back(std::move(r));
  }
  t.push_back(on_off_row({"--spec-mtp"},
                         "draft with the MTP head (default {}; off, or a file without one:\n"
                         "only a request's grammar drafts, the tokens it forces)",
                         true, false, [](auto& c) -> auto& { return c.speculation.mtp_drafts; }));
  t.push_back(on_off_row({"--spec-forced"},
                         "a request's grammar drafts the tokens it forces, no MTP call\n"
                         "(default {}; off: the MTP head drafts them too)",
                         true, true, [](auto& c) -> auto& { return c.speculation.forced_drafts; }));
  t.push_back(int_row({"--draft-forced-max"}, {}, "N",
                      "drafts per step when a request's grammar forces them (default {};\n"
                      "at least --draft-max; MTP drafts stay at --draft-max)",
                      true, 0, 32, [](auto& c) -> auto& { return c.speculation.forced_max; }));
  t.push_back(on_off_row({"--spec-rollback-aware"},
                         "prompt passes keep k+1 states with a per-token tail only (default {};\n"
                         "off: the stock way, the whole pass per token)",
                         true, true, [](auto& c) -> auto& { return c.speculation.rollback_aware_prefill; }));
  t.push_back(on_off_row({"--spec-column-shared"}, "verify all drafts in one column-shared pass (default {})", true, true,
                         [](auto& c) -> auto& { return c.speculation.column_shared_verify; }));
  t.push_back(on_off_row({"--spec-trimmed-head"}, "draft over the file's trimmed draft head when present (default {})",
                         true, true, [](auto& c) -> auto& { return c.speculation.trimmed_head; }));
  {
    ServingSetting r;
    r.names = {"--spec-rollback"};
    r.value = "replay|copy";
    r.help =
        "rejected drafts: recompute the state from the verify pass's replay\n"
        "log (default {}) or copy one of k states it saved";
    r.changes_counts = true;
    r.ablation = true;
    r.set = [](EngineConfig& c, const std::string& flag, const std::string& v) {
      if (v == "replay") c.speculation.replay_rollback = true;
      else if (v == "copy") c.speculation.replay_rollback = false;
      else throw std::invalid_argument(flag + ": expected replay or copy, got '" + v + "'");
    };
    r.get = [](const EngineConfig& c) { return std::string(c.speculation.replay_rollback ? "replay" : "copy"); };
    t.push_back(std::move(r));
  }
  return t;
}

}  // namespace

const std::vector<ServingSetting>& serving_settings() {
  static const std::vector<ServingSetting> table = make_table();
  return table;
}

std::vector<const ServingSetting*> ablation_settings() {
  std::vector<const ServingSetting*> out;
  for (const ServingSetting& r : serving_settings())
    if (r.ablation) out.push_back(&r);
  return out;
}

void validate_serving(const EngineConfig& c) {
  if (c.speculation.draft_min > c.speculation.draft_max)
    throw std::invalid_argument("--draft-min (" + std::to_string(c.speculation.draft_min) + ") must not exceed --draft-max (" +
                                std::to_string(c.speculation.draft_max) + ")");
  if (c.images.budget.min_tokens > 0 && c.images.budget.max_tokens > 0 &&
      c.images.budget.min_tokens > c.images.budget.max_tokens)
    throw std::invalid_argument("--image-min-tokens (" + std::to_string(c.images.budget.min_tokens) +
                                ") must not exceed --image-max-tokens (" + std::to_string(c.images.budget.max_tokens) + ")");
  if (c.slot.batch.n_ubatch > c.slot.batch.n_batch)
    throw std::invalid_argument("--n-ubatch (" + std::to_string(c.slot.batch.n_ubatch) + ") must not exceed --n-batch (" +
                                std::to_string(c.slot.batch.n_batch) + ")");
}

}  // namespace tandem::serve
