#include "agent/trace.h"

#include <fstream>
#include <istream>
#include <ostream>

namespace tandem::agent {

using ojson = nlohmann::ordered_json;

const std::vector<std::string>& trace_fields() {
  static const std::vector<std::string> f = {"episode", "step", "app", "task", "expected_action", "image", "needs_image"};
  return f;
}

ojson TraceRecord::to_line() const {
  ojson j = body;
  if (!episode.empty()) j["episode"] = episode;
  if (step >= 0) j["step"] = step;
  if (!app.empty()) j["app"] = app;
  if (!task.empty()) j["task"] = task;
  if (expected_action) j["expected_action"] = *expected_action;
  if (!image.empty()) j["image"] = image;
  if (needs_image) j["needs_image"] = true;
  return j;
}

TraceRecord parse_trace_line(const std::string& line, int64_t line_no) {
  ojson j;
  try {
    j = ojson::parse(line);
  } catch (const std::exception& e) {
    throw TraceError(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw TraceError("a trace line must be a JSON object (a chat-completions request body)");
  TraceRecord r;
  r.line = line_no;
  auto take_string = [&](const char* key, std::string& out) {
    if (!j.contains(key)) return;
    const ojson& v = j[key];
    if (v.is_string()) out = v.get<std::string>();
    else if (v.is_number_integer()) out = std::to_string(v.get<int64_t>());
    else if (!v.is_null()) throw TraceError(std::string("\"") + key + "\" must be a string");
    j.erase(key);
  };
  take_string("episode", r.episode);
  take_string("app", r.app);
  take_string("task", r.task);
  take_string("image", r.image);
  if (j.contains("step")) {
    if (!j["step"].is_number_integer() || j["step"].get<int64_t>() < 0)
      throw TraceError("\"step\" must be a non-negative integer");
    r.step = j["step"].get<int64_t>();
    j.erase("step");
  }
  if (j.contains("expected_action")) {
    if (!j["expected_action"].is_null()) r.expected_action = j["expected_action"];
    j.erase("expected_action");
  }
  if (j.contains("needs_image")) {
    if (!j["needs_image"].is_boolean()) throw TraceError("\"needs_image\" must be a boolean");
    r.needs_image = j["needs_image"].get<bool>();
    j.erase("needs_image");
  }
  if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty())
    throw TraceError("the request body needs a non-empty \"messages\" array");
  r.body = std::move(j);
  return r;
}

std::vector<TraceRecord> read_trace(std::istream& in, const std::string& name) {
  std::vector<TraceRecord> out;
  std::string line;
  int64_t no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t p = line.find_first_not_of(" \t");
    if (p == std::string::npos || line[p] == '#') continue;
    try {
      out.push_back(parse_trace_line(line, no));
    } catch (const TraceError& e) {
      throw TraceError(name + ":" + std::to_string(no) + ": " + e.what());
    }
  }
  if (out.empty()) throw TraceError(name + ": no requests");
  return out;
}

std::vector<TraceRecord> read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TraceError("cannot open trace " + path);
  return read_trace(in, path);
}

void write_trace(std::ostream& out, const std::vector<TraceRecord>& records) {
  for (const TraceRecord& r : records) out << r.to_line().dump(-1, ' ', false, ojson::error_handler_t::replace) << '\n';
}

void write_trace(const std::string& path, const std::vector<TraceRecord>& records) {
  std::ofstream out(path);
  if (!out) throw TraceError("cannot write " + path);
  write_trace(out, records);
  if (!out) throw TraceError("write failed: " + path);
}

}  // namespace tandem::agent
