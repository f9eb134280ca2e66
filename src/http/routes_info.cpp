// The non-generating endpoints: /health, /slots, /metrics, /props (GET: configuration; POST:
// switch the serving policy at run time), /v1/models, /tokenize, /detokenize.
#include <httplib.h>

#include "http/api_error.h"
#include "http/json_fields.h"
#include "http/metrics_text.h"
#include "http/request_parse.h"
#include "http/server.h"

#include "model/hybrid_model.h"
#include "serve/engine.h"
#include "serve/policy_factory.h"
#include "serve/serving_settings.h"
#include "text/chat_template.h"

namespace tandem::http {

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

// Every serving setting of the table (serve/serving_settings.h), keyed by its long flag without the
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
  res.set_content(prometheus_text(engine_.snapshot()), "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::props_get(const httplib::Request&, httplib::Response& res) {
  const serve::EngineConfig& c = engine_.config();
  const serve::EngineSnapshot s = engine_.snapshot();
  send_json(res, Json{{"default_generation_settings", Json{{"n_ctx", c.n_ctx}}},
                      {"total_slots", c.n_parallel},
                      {"model_path", cfg_.model_path},
                      {"model", cfg_.model_names.front()},
                      {"architecture", engine_.model().architecture()},  // qwen35, lfm2, granitehybrid
                      {"chat_template", text::chat_template_family_name(tmpl_.family())},
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

void HttpServer::props_post(const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_json_object(req.body);
  static const char* kKeys[] = {"checkpoint_policy", "min_gap", "consolidate_batches", "ctx_checkpoints", "timeout_ms"};
  for (const auto& [k, v] : body.items()) {
    bool known = false;
    for (const char* key : kKeys) known = known || k == key;
    if (!known)
      throw bad_request("unknown setting '" + k +
                            "' (settable at run time: checkpoint_policy, min_gap, consolidate_batches, ctx_checkpoints, timeout_ms)",
                        k);
  }
  serve::ServingChange c;
  if (auto p = opt_string(body, "checkpoint_policy")) {
    try {
      c.policy = serve::parse_policy_kind(*p);
    } catch (const std::invalid_argument& e) {
      throw bad_request(std::string("'checkpoint_policy': ") + e.what(), "checkpoint_policy");
    }
  }
  c.min_gap = opt_int(body, "min_gap", 0, INT64_MAX);
  if (auto it = body.find("consolidate_batches"); it != body.end() && it->is_string()) {
    const std::string v = it->get<std::string>();
    if (v != "on" && v != "off") throw bad_request("'consolidate_batches' must be true/false or \"on\"/\"off\"", "consolidate_batches");
    c.consolidate = v == "on";
  } else {
    c.consolidate = opt_bool(body, "consolidate_batches");
  }
  if (auto v = opt_int(body, "ctx_checkpoints", 0, 1 << 20)) c.ctx_checkpoints = static_cast<int>(*v);
  c.timeout_ms = opt_int(body, "timeout_ms", 0, INT64_MAX);
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

void HttpServer::tokenize(const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_json_object(req.body);
  const auto content = opt_string(body, "content");
  if (!content) throw bad_request("missing 'content' (the text to tokenize)", "content");
  opt_bool(body, "add_special");  // Qwen vocabularies add no BOS: nothing to add
  const bool parse_special = opt_bool(body, "parse_special").value_or(true);
  const bool with_pieces = opt_bool(body, "with_pieces").value_or(false);
  const text::Tokenizer& tok = engine_.tokenizer();
  const std::vector<int32_t> ids = tok.encode(*content, text::EncodeOptions{parse_special});
  Json tokens = Json::array();
  for (int32_t id : ids) {
    if (with_pieces) {
      std::string piece;
      tok.append_token(piece, id);
      tokens.push_back(Json{{"id", id}, {"piece", piece}});
    } else {
      tokens.push_back(id);
    }
  }
  send_json(res, Json{{"tokens", tokens}});
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
