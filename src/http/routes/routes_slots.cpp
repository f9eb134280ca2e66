// POST /slots/{id}?action=save|restore|erase: llama.cpp's slot actions (its --slot-save-path is
// our --state-dir). The engine runs them on its scheduler thread once the slot is idle
// (serve/engine/engine_lifecycle.cpp); the files are serve/lifecycle/state_file.h's, confined to the state directory.
#include <httplib.h>

#include <charconv>
#include <string>
#include <system_error>

#include "http/api/api_error.h"
#include "http/routes/server.h"
#include "serve/engine/engine.h"
#include "serve/lifecycle/state_file.h"
#include "serve/request/json_fields.h"

namespace tandem::http {

using serve::parse_json_object;

void HttpServer::slot_action(const httplib::Request& req, httplib::Response& res) {
  const std::string id_text = req.matches.size() > 1 ? std::string(req.matches[1]) : std::string();
  int id = -1;
  const char* end = id_text.data() + id_text.size();
  const auto [ptr, ec] = std::from_chars(id_text.data(), end, id);
  if (ec != std::errc() || ptr != end || id_text.empty())  // the whole segment a number: "0abc" is no slot
    throw bad_request("expected a slot id (a number) in /slots/{id}, got '" + id_text + "'", "id_slot");
  const std::string action = req.has_param("action") ? req.get_param_value("action") : std::string();
  serve::SlotAction a;
  if (action == "save") a = serve::SlotAction::Save;
  else if (action == "restore") a = serve::SlotAction::Restore;
  else if (action == "erase") a = serve::SlotAction::Erase;
  else throw bad_request("expected ?action=save, restore or erase, got '" + action + "'", "action");

  std::string filename;
  if (a != serve::SlotAction::Erase) {
    const Json body = parse_json_object(req.body);
    const auto it = body.find("filename");
    if (it == body.end() || !it->is_string() || it->get<std::string>().empty())
      throw bad_request("expected \"filename\": a file name in the state directory", "filename");
    filename = it->get<std::string>();
  }
  serve::SlotActionResult r;
  try {
    r = engine_.slot_action(id, a, filename);
  } catch (const serve::StateFileError& e) {
    // A file that cannot be restored is the client's; one that cannot be written is the server's.
    if (a == serve::SlotAction::Restore) throw bad_request(e.what(), "filename");
    throw server_error(e.what());
  }
  Json out;
  switch (a) {
    case serve::SlotAction::Save:
      out = Json{{"id_slot", r.id_slot}, {"filename", r.filename}, {"n_saved", r.n_tokens}, {"n_written", r.n_bytes},
                 {"timings", Json{{"save_ms", r.ms}}}};
      break;
    case serve::SlotAction::Restore:
      out = Json{{"id_slot", r.id_slot}, {"filename", r.filename}, {"n_restored", r.n_tokens}, {"n_read", r.n_bytes},
                 {"timings", Json{{"restore_ms", r.ms}}}};
      break;
    case serve::SlotAction::Erase: out = Json{{"id_slot", r.id_slot}, {"n_erased", r.n_tokens}}; break;
  }
  res.status = 200;
  res.set_content(to_text(out), "application/json; charset=utf-8");
}

}  // namespace tandem::http
