// The agent trace: JSONL, one request per line. Each line is an OpenAI chat-completions request
// body plus optional trace fields that are not sent to the server:
//
//   {"messages": [{"role": "user", "content": "..."}], "max_tokens": 32, "temperature": 0,
//    "episode": "e1", "step": 3, "app": "Clock", "task": "Set an alarm for 7:00",
//    "expected_action": {"action": "tap", "index": 4}, "image": "screens/e1-3.png", "needs_image": true}
//
// "needs_image": the expected action depends on what only the screenshot shows (a sparse screen's
// unlabelled rows), so a text-only check leaves the step out.
//
// Lines of one episode are replayed in order on one slot; the replay keeps the file order
// (the paper's trace: 21 single screens, then 5 episodes of 8 steps, 61 requests).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::agent {

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TraceRecord {
  nlohmann::ordered_json body;  // the request body (trace fields removed)
  std::string episode;          // empty: a single screen
  int64_t step = -1;            // -1: none
  std::string app, task;
  std::optional<nlohmann::ordered_json> expected_action;
  std::string image;
  bool needs_image = false;
  int64_t line = 0;             // 1-based line in the file (0: not read from a file)

  // The line as written: body + trace fields.
  nlohmann::ordered_json to_line() const;
};

// The fields read_trace() moves out of the body.
const std::vector<std::string>& trace_fields();

// Parses one line (throws TraceError saying what is wrong). The body must hold a non-empty
// "messages" array.
TraceRecord parse_trace_line(const std::string& line, int64_t line_no = 0);
// Empty lines and lines starting with '#' are skipped. Errors name the file and line.
std::vector<TraceRecord> read_trace(const std::string& path);
std::vector<TraceRecord> read_trace(std::istream& in, const std::string& name = "trace");
void write_trace(std::ostream& out, const std::vector<TraceRecord>& records);
void write_trace(const std::string& path, const std::vector<TraceRecord>& records);

}  // namespace tandem::agent
