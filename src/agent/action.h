// The agent's action: what the model answers at each step, as one JSON object.
//
//   {"action": "tap", "index": 7}
//   {"action": "long_press", "index": 3}
//   {"action": "input", "index": 2, "text": "coffee"}        (index optional: the focused field)
//   {"action": "scroll", "direction": "down", "index": 5}     (index optional: the whole screen)
//   {"action": "swipe", "direction": "left"}                  (or "from": [x, y], "to": [x, y])
//   {"action": "back"}   {"action": "home"}
//   {"action": "open_app", "app": "Settings"}
//   {"action": "wait", "seconds": 2}                          (seconds optional, 0 < s <= 60)
//   {"action": "finish", "status": "success", "message": "Alarm set for 7:00"}
//
// "click" is accepted as a synonym of "tap" (and normalized to it). parse_action() is strict:
// exactly one JSON object (surrounding whitespace and one ```json fence allowed), a known
// action, every required field with the right type and range, no unknown or duplicate keys.
// It never throws: malformed model output comes back as an error message saying what is wrong.
// A lone UTF-16 surrogate escape in a string ("\ud800"), which JSON's grammar admits and the JSON
// library rejects, is read as U+FFFD: the schema's strings admit it, so the parser must too.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tandem::agent {

enum class ActionKind : uint8_t { Tap, LongPress, Input, Scroll, Swipe, Back, Home, OpenApp, Wait, Finish };

// "tap", "long_press", ... (the names the prompt lists and the parser accepts).
std::string_view to_string(ActionKind k);

enum class Direction : uint8_t { Up, Down, Left, Right };
std::string_view to_string(Direction d);

enum class FinishStatus : uint8_t { Success, Failure, Infeasible };
std::string_view to_string(FinishStatus s);

struct Action {
  ActionKind kind = ActionKind::Back;
  int64_t index = -1;                  // tap, long_press (required); input, scroll (optional, -1: none)
  std::string text;                    // input: the text; open_app: the app; finish: the message
  Direction direction = Direction::Down;  // scroll, swipe
  bool has_points = false;             // swipe given as from/to instead of a direction
  std::array<int64_t, 2> from{}, to{};
  double seconds = 0;                  // wait (0: unspecified)
  FinishStatus status = FinishStatus::Success;

  bool operator==(const Action&) const = default;
};

// The canonical JSON object (keys in the order above; the form the prompt shows the model).
nlohmann::ordered_json to_json(const Action& a);
// Compact one-line text of to_json(a): {"action":"tap","index":7}.
std::string to_text(const Action& a);
// A short human-readable line for the action history in prompts: tap [7] "Search".
// `label` (optional) names the control the action touched.
std::string describe(const Action& a, std::string_view label = {});

struct ParseOptions {
  // Number of indexed controls on the screen; an index >= n_controls is an error. -1: unchecked.
  int64_t n_controls = -1;
  // Accept one Markdown code fence (```json ... ```) around the object.
  bool allow_fence = true;
  size_t max_bytes = 16384;  // longer outputs are rejected before parsing
};

struct ParseResult {
  std::optional<Action> action;
  std::string error;  // empty when action is set
  bool ok() const { return action.has_value(); }
};

ParseResult parse_action(std::string_view output, const ParseOptions& opt = {}) noexcept;

// JSON Schema (draft 2020-12) of the action object, for constrained decoding ("response_format")
// and documentation; shipped as schemas/agent-action.schema.json (its dump(2), written by
// `tandem-agent-prompt --schema`). Stricter than parse_action: every answer it admits parses.
const nlohmann::ordered_json& action_schema();

// The schema's bounds (action.cpp says why each): the largest index, the longest "text" /
// "message" and "app" in characters, the largest swipe coordinate.
inline constexpr int64_t kMaxSchemaIndex = 999;
inline constexpr int kMaxSchemaText = 48;
inline constexpr int kMaxSchemaApp = 32;
inline constexpr int64_t kMaxSchemaPixel = 9999;

}  // namespace tandem::agent
