// The non-generating endpoints: /health, /slots, /metrics, /props (GET: configuration; POST:
// switch the serving policy at run time), /v1/models, /tokenize, /detokenize.
#include <httplib.h>

#include <cmath>
#include <cstdio>

#include "http/api/api_error.h"
#include "http/api/request_parse.h"
#include "http/routes/metrics_text.h"
#include "http/routes/server.h"
#include "http/transport/memory_policy.h"
#include "serve/request/json_fields.h"

#include "model/hybrid_model.h"
#include "serve/engine/engine.h"
#include "serve/policy/policy_factory.h"
#include "serve/settings/serving_settings.h"
#include "text/chat_template.h"
#include "text/scratch.h"

namespace tandem::http {

using serve::parse_json_object;
using serve::opt_bool;

namespace {

void send_json(httplib::Response& res, const Json& j) {
  res.status = 200;
  res.set_content(to_text(j), "application/json; charset=utf-8");
}

Json serving_json(const serve::EngineSnapshot& s, const serve::EngineConfig& c) {
  return Json{{"checkpoint_policy", serve::to_string(s.policy)},
              {"min_gap", s.min_gap},
              {"consolidate_batches", s.consolidate},
              {"ctx_checkpoints", s.ctx_checkpoints},
              {"timeout_ms", s.timeout_ms},
              {"cache_ram_mib", c.cache_ram_mib},
              {"n_batch", c.slot.batch.n_batch},
              {"n_ubatch", c.slot.batch.n_ubatch},
              {"n_ctx", c.n_ctx},
              {"parallel", c.n_parallel},
              {"queue", c.queue_max},
              {"speculation", Json{{"enabled", c.speculation.enabled},
                                   {"draft_max", c.speculation.draft_max},
                                   {"draft_min", c.speculation.draft_min},
                                   {"draft_p_min", c.speculation.p_min},
                                   {"rollback_aware_prefill", c.speculation.rollback_aware_prefill},
                                   {"column_shared_verify", c.speculation.column_shared_verify},
                                   {"trimmed_head", c.speculation.trimmed_head},
                                   {"rollback", c.speculation.replay_rollback ? "replay" : "copy"}}}};
}

// Every serving setting of the table (serve/settings/serving_settings.h), keyed by its long flag without the
// dashes: the value the engine runs now (the run-time switches of POST /props included) and the
// default, as the flag takes them, whether the replay model's counts depend on it and whether it is
// one of the paper's ablation switches.
Json settings_json(const serve::EngineSnapshot& s, const serve::EngineConfig& c) {
  serve::EngineConfig now = c;
  now.policy.kind = s.policy;
  now.policy.divergence.min_gap = s.min_gap;
  now.slot.batch.consolidate = s.consolidate;
  now.slot.ctx_checkpoints = s.ctx_checkpoints;
  now.timeout_ms = s.timeout_ms;
  const serve::EngineConfig defaults;
  Json j = Json::object();
  for (const serve::ServingSetting& r : serve::serving_settings())
    j[r.key()] = Json{{"value", r.get(now)},
                      {"default", r.get(defaults)},
                      {"changes_counts", r.changes_counts},
                      {"ablation", r.ablation}};
  return j;
}

// ids[begin, end) as JSON array elements (a comma before each but the first of the whole list):
// ids, or {"id", "piece"} objects.
void append_token_list(std::string& out, const text::Tokenizer& tok, const std::vector<int32_t>& ids, size_t begin,
                       size_t end, bool with_pieces) {
  std::string piece;
  for (size_t i = begin; i < end; ++i) {
    if (i > 0) out += ',';
    if (!with_pieces) {
      out += std::to_string(ids[i]);
      continue;
    }
    piece.clear();
    tok.append_token(piece, ids[i]);
    out += "{\"id\":";
    out += std::to_string(ids[i]);
    out += ",\"piece\":";
    out += to_text(Json(piece));
    out += '}';
  }
}

}  // namespace

static Json watchdog_json(const serve::WatchdogStatus& w) {
  Json j{{"enabled", w.enabled},
         {"deadline_s", static_cast<double>(w.config.deadline_ms) / 1000.0},
         {"ms_per_token", w.config.per_token_ms},
         {"grace_ms", w.config.grace_ms},
         {"exit_on_trip", w.config.exit_on_trip},
         {"exit_status", w.exit_status},
         {"trips", w.trips},
         {"requests_failed", w.requests_failed},
         {"tripped", w.tripped}};
  if (w.tripped) {
    // Which defined state the server is in: exiting (a supervisor restarts it) or waiting for the
    // stuck work to return (then it serves again).
    j["action"] = w.exiting ? "exit" : "wait";
    j["stuck"] = w.stuck;
    if (w.exiting) j["exit_in_ms"] = w.exit_in_ms;
  }
  if (w.last) {
    const serve::WorkUnit& u = w.last->unit;
    j["last_trip"] = Json{{"message", w.last->message},
                          {"work", serve::to_string(u.kind)},
                          {"phase", u.prefill ? "prefill" : "decode"},
                          {"slot", u.slot},
                          {"id_task", u.request},
                          {"tokens", u.tokens},
                          {"deadline_ms", u.allowance_ms},
                          {"stuck_ms", w.last->stuck_ms},
                          {"requests_failed", w.last->requests_failed}};
  }
  return j;
}

// llama.cpp's answers: 200 {"status":"ok"}; 503 with an error body while it cannot serve. After a
// watchdog trip the 503 also says what got stuck and whether the process exits (status 75) or
// waits for the stuck work. Reads the watchdog alone: never waits for a stuck scheduler.
void HttpServer::health(const httplib::Request&, httplib::Response& res) {
  const serve::WatchdogStatus w = engine_.watchdog_status();
  if (!w.tripped) return send_json(res, Json{{"status", "ok"}});
  const std::string message = w.last ? w.last->message : std::string("watchdog: the engine is stuck");
  Json body = error_body(503, "unavailable_error", message);
  body["status"] = "error";
  body["watchdog"] = watchdog_json(w);
  res.status = 503;
  res.set_content(to_text(body), "application/json; charset=utf-8");
}

void HttpServer::slots(const httplib::Request&, httplib::Response& res) {
  const serve::EngineSnapshot s = engine_.snapshot();
  Json arr = Json::array();
  for (const auto& sl : s.slots) {
    arr.push_back(Json{{"id", sl.id},
                       {"n_ctx", sl.n_ctx},
                       {"is_processing", sl.phase != serve::SlotPhase::Idle},
                       {"state", serve::to_string(sl.phase)},
                       {"id_task", sl.generation_id},
                       {"n_requests", sl.requests},
                       {"n_cached", sl.n_cached},
                       {"n_generated", sl.n_generated},
                       {"checkpoints", sl.checkpoint_positions},
                       {"checkpoint_bytes", sl.checkpoint_bytes},
                       {"kv_bytes", sl.kv_bytes},
                       {"recurrent_bytes", sl.recurrent_bytes},
                       {"checkpoint_policy", sl.policy},
                       {"consolidate_batches", sl.consolidate},
                       {"ctx_checkpoints", sl.ctx_checkpoints}});
  }
  send_json(res, arr);
}

void HttpServer::metrics(const httplib::Request&, httplib::Response& res) {
  res.status = 200;
  res.set_content(prometheus_text(engine_.snapshot()) +
                      process_metrics_text(transport_stats(), process_rss_bytes(), text::scratch_bytes()),
                  "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::props_get(const httplib::Request&, httplib::Response& res) {
  const serve::EngineConfig& c = engine_.config();
  const serve::EngineSnapshot s = engine_.snapshot();
  send_json(res, Json{{"default_generation_settings", Json{{"n_ctx", c.n_ctx}}},
                      {"total_slots", c.n_parallel},
                      {"model_path", cfg_.model_path},
                      {"model", cfg_.model_names.front()},
                      {"architecture", engine_.model().architecture()},  // qwen35, lfm2, granitehybrid
                      {"chat_template", tmpl_.name()},
                      // llama.cpp's keys: which inputs the model takes, and the marker that stands
                      // for an image in a /completion prompt_string.
                      {"modalities", Json{{"vision", s.vision}, {"audio", false}}},
                      {"media_marker", s.vision ? Json(cfg_.media_marker) : Json()},
                      {"mmproj_path", s.vision ? Json(cfg_.mmproj_path) : Json()},
                      {"serving", serving_json(s, c)},
                      {"watchdog", watchdog_json(s.watchdog)},
                      {"lifecycle", Json{{"weights_loaded", s.lifecycle.weights_loaded},
                                         {"unload_idle_s", c.unload_idle_ms / 1000},
                                         {"unloads", s.lifecycle.unloads},
                                         {"reloads", s.lifecycle.reloads},
                                         {"cold_start_ms", s.lifecycle.cold_start_ms},
                                         {"cold_start_parts_ms", Json{{"map", s.lifecycle.cold_map_ms},
                                                                      {"pack", s.lifecycle.cold_pack_ms},
                                                                      {"states", s.lifecycle.cold_states_ms}}},
                                         {"state_dir", s.lifecycle.state_dir.empty() ? Json() : Json(s.lifecycle.state_dir)},
                                         {"state_files_written", s.lifecycle.state_files_written},
                                         {"state_files_loaded", s.lifecycle.state_files_loaded},
                                         {"state_files_refused", s.lifecycle.refused}}},
                      // Energy figures (issue 27): whether package energy is readable, and why not.
                      {"energy", Json{{"cpu_time", "compute threads (scheduler + pool workers)"},
                                      {"compute_threads", s.energy.compute_threads},
                                      {"package_energy", s.energy.package_joules.has_value()},
                                      {"package_zones", s.energy.energy_zones},
                                      {"unavailable_reason", s.energy.package_joules ? Json() : Json(s.energy.energy_unavailable)}}},
                      {"settings", settings_json(s, c)}});
}

// The run-time switches, each set through its command-line row (serve/settings/serving_settings.h): the
// same parser, range and message as the flag, so that a value the command line refuses (a
// deadline that cannot be represented, an integer past 2^63) is refused here too.
void HttpServer::props_post(const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_json_object(req.body);
  static const std::pair<const char*, const char*> kKeys[] = {{"checkpoint_policy", "--checkpoint-policy"},
                                                              {"min_gap", "--min-gap"},
                                                              {"consolidate_batches", "--consolidate-batches"},
                                                              {"ctx_checkpoints", "--ctx-checkpoints"},
                                                              {"timeout_ms", "--timeout-ms"}};
  const serve::EngineSnapshot snap = engine_.snapshot();
  serve::EngineConfig now = engine_.config();
  now.policy.kind = snap.policy;
  now.policy.divergence.min_gap = snap.min_gap;
  now.slot.batch.consolidate = snap.consolidate;
  now.slot.ctx_checkpoints = snap.ctx_checkpoints;
  now.timeout_ms = snap.timeout_ms;
  std::vector<std::string> given;
  for (const auto& [k, v] : body.items()) {
    const char* flag = nullptr;
    for (const auto& [key, f] : kKeys)
      if (k == key) flag = f;
    if (!flag)
      throw bad_request("unknown setting '" + k +
                            "' (settable at run time: checkpoint_policy, min_gap, consolidate_batches, ctx_checkpoints, timeout_ms)",
                        k);
    if (v.is_null()) continue;
    std::string text;
    if (v.is_string()) text = v.get<std::string>();
    else if (v.is_boolean()) text = v.get<bool>() ? "on" : "off";
    else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>() &&
             std::fabs(v.get<double>()) >= 9e15) {
      // An integer literal past 2^64 arrives as a double: its digits, so that the row names its range.
      char buf[400];
      std::snprintf(buf, sizeof buf, "%.0f", v.get<double>());
      text = buf;
    } else if (v.is_number()) {
      text = to_text(v);  // 1.5 reaches the row as the flag would see it
    }
    else throw bad_request("'" + k + "' must be a number, a string or a boolean, got " + v.type_name(), k);
    const serve::ServingSetting* row = serve::find_setting<serve::EngineConfig>(serve::serving_settings(), flag);
    try {
      row->set(now, "'" + k + "' (" + flag + ")", text);
    } catch (const std::invalid_argument& e) {
      throw bad_request(e.what(), k);
    }
    given.push_back(k);
  }
  serve::ServingChange c;
  for (const std::string& k : given) {
    if (k == "checkpoint_policy") c.policy = now.policy.kind;
    if (k == "min_gap") c.min_gap = now.policy.divergence.min_gap;
    if (k == "consolidate_batches") c.consolidate = now.slot.batch.consolidate;
    if (k == "ctx_checkpoints") c.ctx_checkpoints = now.slot.ctx_checkpoints;
    if (k == "timeout_ms") c.timeout_ms = now.timeout_ms;
  }
  engine_.reconfigure(c);
  props_get(req, res);
}

void HttpServer::models(const httplib::Request&, httplib::Response& res) {
  Json data = Json::array();
  Json caps = Json::array({"completion"});
  if (engine_.has_vision()) caps.push_back("multimodal");
  for (const auto& n : cfg_.model_names)
    data.push_back(Json{{"id", n}, {"object", "model"}, {"created", 0}, {"owned_by", "tandem"}, {"capabilities", caps}});
  send_json(res, Json{{"object", "list"}, {"data", data}});
}

// The answer is written as it is produced (chunked), never built as a JSON tree: a 10 MB text is
// millions of tokens, and a tree of them (an object per token with pieces) took ~200 MiB per call
// (issue 51). What stays is the ids (4 bytes a token) and one chunk of text.
void HttpServer::tokenize(const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_json_object(req.body);
  const auto it = body.find("content");
  if (it == body.end() || it->is_null()) throw bad_request("missing 'content' (the text to tokenize)", "content");
  if (!it->is_string()) throw bad_request(std::string("'content' must be a string, got ") + it->type_name(), "content");
  opt_bool(body, "add_special");  // Qwen vocabularies add no BOS: nothing to add
  const bool parse_special = opt_bool(body, "parse_special").value_or(true);
  const bool with_pieces = opt_bool(body, "with_pieces").value_or(false);
  const text::Tokenizer& tok = engine_.tokenizer();
  auto ids = std::make_shared<std::vector<int32_t>>(tok.encode(it->get_ref<const std::string&>(), text::EncodeOptions{parse_special}));
  res.status = 200;
  if (ids->size() < 4096) {  // small answers whole, with a Content-Length
    std::string out = "{\"tokens\":[";
    append_token_list(out, tok, *ids, 0, ids->size(), with_pieces);
    out += "]}";
    res.set_content(out, "application/json; charset=utf-8");
    return;
  }
  auto next = std::make_shared<size_t>(0);
  res.set_chunked_content_provider(
      "application/json; charset=utf-8", [&tok, ids, next, with_pieces](size_t, httplib::DataSink& sink) {
        constexpr size_t kPerChunk = 8192;
        std::string out;
        if (*next == 0) out = "{\"tokens\":[";
        const size_t end = std::min(ids->size(), *next + kPerChunk);
        append_token_list(out, tok, *ids, *next, end, with_pieces);
        *next = end;
        if (end == ids->size()) out += "]}";
        if (!sink.write(out.data(), out.size())) return false;
        if (end == ids->size()) sink.done();
        return true;
      });
}

void HttpServer::detokenize(const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_json_object(req.body);
  const auto it = body.find("tokens");
  if (it == body.end() || it->is_null()) throw bad_request("missing 'tokens' (an array of token ids)", "tokens");
  if (!it->is_array()) throw bad_request(std::string("'tokens' must be an array of token ids, got ") + it->type_name(), "tokens");
  const std::vector<int32_t> ids = tokens_of(*it, engine_.tokenizer(), "tokens");
  for (const Json& e : *it)
    if (e.is_string()) throw bad_request("'tokens' must hold token ids only", "tokens");
  send_json(res, Json{{"content", engine_.tokenizer().decode(ids)}});
}

}  // namespace tandem::http
